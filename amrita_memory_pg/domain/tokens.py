"""Search tokens for the keyword side of hybrid retrieval: one pure function.

PostgreSQL's text search does not segment Chinese, and pg_trgm drops CJK characters in a
``C``-locale cluster, so the tokens are made here, in Python, and stored as a
``tsvector`` of the ``simple`` configuration (lexemes taken as they are, no parsing in
the server: the same tokens whatever the cluster's locale). A memory's tokens are made
when it is written; a query's tokens are made by the very same function, so both sides
always agree.

- CJK runs (Han, kana, Hangul): every character and every pair of adjacent characters.
  Pairs stand in for words (most Chinese words have two characters: 考试, 科目, 小宋),
  single characters keep one-character words and names findable; a few function
  characters (的, 了, 是…) are kept inside pairs only. No dictionary (jieba would add
  words of three or more characters, which pairs already cover, at the price of a
  dictionary load and tokens that depend on an optional install).
- Latin words: lower-cased, NFKC-folded, English stop words dropped, Snowball-stemmed
  ("painting", "paints" → "paint") so an inflected query finds the memory.
- Numbers: kept, leading zeros dropped ("05" → "5"), so 2024-05-03, 5月3日 and
  "May 3" share the tokens 5 and 3.

Bump :data:`TOKENIZER_VERSION` when the output changes: stored tokens must then be
recomputed (``amrita-memory tokens backfill --all``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

#: Version of the token rules; stored tokens made by another version must be recomputed.
TOKENIZER_VERSION = 1

#: Longest token kept (a tsvector lexeme may hold 2 KB; a 60-character "word" is noise).
MAX_TOKEN_CHARS = 60
#: Most distinct tokens kept per text (a 4,000-character memory gives about 3,000 CJK tokens).
MAX_TOKENS = 4000

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # Han extension A
    "\u4e00-\u9fff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # Han compatibility
    "\U00020000-\U0003134f"  # Han extensions B-G
)
_PATTERN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<num>\d+)|(?P<word>(?:(?![{_CJK}])[^\W\d_])+)")

#: Characters too common to mean anything on their own (kept inside pairs).
CJK_STOP_CHARS = frozenset(
    "的了是在和与及或也都就还又吗呢吧啊呀哦么着过把被给让向对从而之其这那个有我你他她它们"
)

#: English function words (Snowball's list, shortened); dropped before stemming.
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)


#: Words whose stems are remembered. Snowball's pure-Python stemmer costs ~100 µs a word
#: (85 % of tokenizing an English memory); chat vocabularies are Zipfian, so a bounded
#: cache of the recent words serves most calls, and a walk over a million memories (a
#: re-tokenization, a restore's backfill) keeps constant memory.
STEM_CACHE_WORDS = 20_000


@functools.cache
def _stemmer() -> functools._lru_cache_wrapper[str]:
    import snowballstemmer

    stem: Callable[[str], str] = snowballstemmer.stemmer("english").stemWord
    return functools.lru_cache(maxsize=STEM_CACHE_WORDS)(stem)


def _number(digits: str) -> str:
    stripped = digits.lstrip("0")
    return stripped or "0"


def _cjk_tokens(run: str) -> list[str]:
    out = [ch for ch in run if ch not in CJK_STOP_CHARS]
    out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def search_tokens(text: str) -> list[str]:
    """The distinct search tokens of ``text``, in order of first appearance.

    Pure and deterministic; the empty list when nothing in ``text`` is searchable.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    stem = _stemmer()
    seen: dict[str, None] = {}
    for match in _PATTERN.finditer(folded):
        kind = match.lastgroup
        value = match.group()
        if kind == "cjk":
            tokens = _cjk_tokens(value)
        elif kind == "num":
            tokens = [_number(value)]
        else:
            if value in ENGLISH_STOP_WORDS:
                continue
            tokens = [stem(value)]
        for token in tokens:
            token = token[:MAX_TOKEN_CHARS]
            if token and token not in seen:
                seen[token] = None
                if len(seen) >= MAX_TOKENS:
                    return list(seen)
    return list(seen)


@functools.lru_cache(maxsize=1024)
def query_tokens(text: str) -> tuple[str, ...]:
    """:func:`search_tokens` of a search query, remembered: chat queries repeat, and the
    Snowball stemmer costs tens of µs a call on the read path. The result is
    a tuple, so no caller can change a cached value."""
    return tuple(search_tokens(text))
