"""Splitting long text into message-sized chunks (the ``/memory memo`` forward, §12).

Lines are kept whole where they fit; a line longer than the limit is cut at sentence
ends (。！？!?；; …) and, only when one sentence is still too long, hard-cut. The
pieces are then packed greedily into chunks of at most ``max_len`` characters.
"""

from __future__ import annotations

import re

CHUNK_CHARS = 600
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;…])")


def split_sentences(text: str, max_len: int) -> list[str]:
    """``text`` cut at sentence ends into pieces of at most ``max_len`` characters."""
    if max_len < 1:
        raise ValueError("max_len must be at least 1")
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > max_len:
            pieces.append(sentence[:max_len])
            sentence = sentence[max_len:]
        if sentence:
            pieces.append(sentence)
    return _pack(pieces, max_len)


def _pack(units: list[str], max_len: int) -> list[str]:
    chunks: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + len(unit) > max_len:
            chunks.append(current)
            current = ""
        current += unit
    if current:
        chunks.append(current)
    return chunks


def pack_chunks(content: str, max_len: int = CHUNK_CHARS) -> list[str]:
    """Message chunks of ``content``: whole lines packed greedily, each ≤ ``max_len``.

    Trailing newlines are stripped and whitespace-only chunks dropped; if nothing is
    left the content itself is the only chunk.
    """
    units: list[str] = []
    for line in content.splitlines(keepends=True):
        units.extend(split_sentences(line, max_len) if len(line) > max_len else [line])
    chunks = [chunk.rstrip("\r\n") for chunk in _pack(units, max_len)]
    chunks = [chunk for chunk in chunks if chunk.strip()]
    return chunks or [content]
