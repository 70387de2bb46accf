"""Embedding fingerprint: which model produced the stored vectors (reference §7.2)."""

from __future__ import annotations

import hashlib

from amrita_memory_pg.domain.redact import redact


def fingerprint(protocol: str, model: str, base_url: str) -> str:
    """sha256 hex of ``protocol|model|base_url``, raw strings, exactly as the reference.

    A trailing slash changes it, and the API key is not part of it, both on purpose: the
    stored value must match what the reference computed for an existing database.
    """
    return hashlib.sha256(f"{protocol}|{model}|{base_url}".encode()).hexdigest()


#: providers that embed inside this process (they have no base URL)
IN_PROCESS = frozenset({"local", "hash"})


def describe(protocol: str | None, model: str | None, base_url: str | None) -> str:
    """``protocol / model @ url`` with ``?`` for missing parts, as the reference prints it.

    The URL is redacted (``http://user:pw@host`` → ``http://***@host``, ``?key=…`` →
    ``?key=***``): this text reaches ``status``, the start-up log and tool replies, while
    :func:`fingerprint` keeps hashing the raw string.
    """
    if not base_url and protocol in IN_PROCESS:
        # no URL to show: the model runs inside this process
        return f"{protocol} / {model or '?'} (in-process)"
    return f"{protocol or '?'} / {model or '?'} @ {redact(base_url) if base_url else '?'}"
