"""Lineage: what a derived row was made from (pure; the SQL is sql/functions/lineage.sql).

A derived row is a memory the L3 loop merged or wrote, a knowledge entry it distilled, a
profile line or summary it wrote, a memo sentence it rewrote, or a memory extraction made
from a session's chat lines. Its sources are memories and chat lines (:class:`Ref`).
Every derived write records its edges in its own transaction; a forget walks them.

Which sources a text the loop writes was made from is not said by the model (asking for
ids would cost every call of a cycle), so it is inferred here, by one rule a person can
check: **a candidate is a source when it shares a distinctive word with the text** (a
pair of CJK characters or a Latin word, not one of the :data:`GENERIC` words every
memory has), among what the cycle could have read (its partition's memories, the chat
lines it was shown). When the text shares a word with none of them, every memory of the
partition is its source: a forget can then withhold it, never miss it. The rule errs
on the side of more sources; a source too many turns a delete into a withhold (the loop
writes the row again), a source too few would let a forgotten fact survive.

A profile line, the profile summary and a memo sentence have no id: they are named by
:func:`text_id`, the md5 of their trimmed text (the same function as ``text_id_v1``); a
memo is split into sentences by :func:`memo_sentences` (``memo_sentences_v1``).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.domain.trail import ActorKind

DerivedKind = Literal["memory", "knowledge", "profile_line", "profile_summary", "memo_sentence"]
SourceKind = Literal["memory", "chat_line"]
DERIVED_KINDS: tuple[DerivedKind, ...] = (
    "memory",
    "knowledge",
    "profile_line",
    "profile_summary",
    "memo_sentence",
)
#: the key of a global row (a knowledge entry)
GLOBAL_ROW_KEY = ""

#: words nearly every memory or profile line has: sharing one says nothing
GENERIC = frozenset(
    {
        "用户",
        "户的",
        "用户的",
        "该用户",
        "他的",
        "她的",
        "自己",
        "喜欢",
        "一个",
        "user",
        "like",
        "likes",
    }
)
#: distinctive words a chat line shares with a fact to say it again, whatever their lengths
RESTATE_WORDS = 3
#: numbers shorter than this are not distinctive (a day, a count)
MIN_NUMBER_DIGITS = 3

_SENTENCE = re.compile(r"[^。！？!?\n]*(?:[。！？!?]+\n*|\n+|\Z)")
_CJK_CHAR = re.compile(r"^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]$")


@dataclass(frozen=True, slots=True, order=True)
class Ref:
    """A row lineage names: its kind, its partition (or chat session) key, its id."""

    kind: str
    key: str
    id: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "key": self.key, "id": self.id}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Ref:
        return cls(str(value["kind"]), str(value["key"]), str(value["id"]))


def memory_ref(key: str, memory_id: str) -> Ref:
    return Ref("memory", key, memory_id)


def knowledge_ref(kid: str) -> Ref:
    return Ref("knowledge", GLOBAL_ROW_KEY, kid)


def line_ref(session_key: str, line_id: int | str) -> Ref:
    return Ref("chat_line", session_key, str(line_id))


def text_id(text: str) -> str:
    """The id of a profile line, summary or memo sentence: md5 of the trimmed text."""
    return hashlib.md5(text.strip(" \t\r\n").encode("utf-8")).hexdigest()


def memo_sentences(text: str) -> list[str]:
    """``text`` split into sentences whose concatenation is ``text``: each runs up to and
    including its end mark (。！？!? and any line breaks after) or its line break(s)."""
    return [s for s in _SENTENCE.findall(text) if s]


def distinctive_tokens(text: str) -> frozenset[str]:
    """The words of ``text`` that can tell one fact from another: its search tokens but
    single CJK characters, short numbers and :data:`GENERIC` words."""
    out: set[str] = set()
    for token in search_tokens(text):
        if _CJK_CHAR.match(token) or token in GENERIC:
            continue
        if token.isdigit() and len(token) < MIN_NUMBER_DIGITS:
            continue
        out.add(token)
    return frozenset(out)


def mentions(source_text: str, derived_text: str) -> bool:
    """Whether ``derived_text`` shares a distinctive word with ``source_text``."""
    return bool(distinctive_tokens(source_text) & distinctive_tokens(derived_text))


def restates(line_text: str, fact: str) -> bool:
    """Whether a chat line says ``fact`` again: the two share three distinctive words, or
    half of the shorter one's (stricter than :func:`mentions`: the request
    "忘掉我对花生过敏这件事" restates "用户对花生过敏", "我想吃花生" does not)."""
    words = distinctive_tokens(fact)
    said = distinctive_tokens(line_text)
    shared = len(words & said)
    return shared >= RESTATE_WORDS or (
        bool(words and said) and 2 * shared >= min(len(words), len(said))
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A row a derived text may have been made from, with its text."""

    ref: Ref
    text: str


def inferred_sources(
    derived_text: str, candidates: Sequence[Candidate], *, fallback: bool = True
) -> tuple[Ref, ...]:
    """The candidates ``derived_text`` shares a distinctive word with; none shared and
    ``fallback``: every memory candidate (see the module's rule)."""
    words = distinctive_tokens(derived_text)
    found = [c.ref for c in candidates if words & distinctive_tokens(c.text)]
    if not found and fallback:
        found = [c.ref for c in candidates if c.ref.kind == "memory"]
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True, slots=True)
class Derivation:
    """Who derives in the current task and from what: the writes inside :func:`deriving`
    (a memory, a knowledge entry, profile lines or summary, memo sentences) record their
    sources in their own transaction. ``fixed``: sources known exactly (a merge's, a
    re-derivation's); with ``infer`` the storage adds those the written text shares a
    word with, among ``partition_key``'s memories and the chat lines in ``shown``."""

    made_by: ActorKind
    cycle_id: int | None = None
    #: the partition whose memories the writer could read (None: none)
    partition_key: str | None = None
    #: the chat lines it was shown, with their texts (the cycle's list: read at each write)
    shown: Sequence[Candidate] = ()
    fixed: tuple[Ref, ...] = ()
    infer: bool = True

    def sources(
        self, text: str, memories: Sequence[Candidate], *, exclude: Ref | None = None
    ) -> tuple[Ref, ...]:
        """The sources of ``text`` written now: ``fixed``, then (with ``infer``) the
        inferred ones among ``memories`` (the partition's, read in the writing
        transaction) and ``shown``; ``exclude`` (the row being written) is never its own."""
        found: list[Ref] = list(self.fixed)
        if self.infer:
            pool = [c for c in (*memories, *self.shown) if c.ref != exclude]
            found.extend(inferred_sources(text, pool))
        return tuple(r for r in dict.fromkeys(found) if r != exclude)


_DERIVING: contextvars.ContextVar[Derivation | None] = contextvars.ContextVar(
    "amrita_memory_deriving", default=None
)


def current_derivation() -> Derivation | None:
    """The derivation of the innermost :func:`deriving` of this task (None: a plain write)."""
    return _DERIVING.get()


@contextlib.contextmanager
def deriving(derivation: Derivation) -> Iterator[Derivation]:
    """Writes inside this block record their lineage (the repositories of memories,
    knowledge, profiles and memos read it)."""
    token = _DERIVING.set(derivation)
    try:
        yield derivation
    finally:
        _DERIVING.reset(token)


def text_refs(kind: DerivedKind, key: str, texts: Iterable[str]) -> list[tuple[Ref, str]]:
    """(ref, text) of each non-blank text (profile lines, a summary, memo sentences)."""
    out: dict[str, tuple[Ref, str]] = {}
    for text in texts:
        if text.strip():
            ref = Ref(kind, key, text_id(text))
            out.setdefault(ref.id, (ref, text))
    return list(out.values())


# ---------------------------------------------------------------------------- cascades

CascadeAction = Literal[
    "forget", "changed", "ancestor", "chat_line", "delete", "withhold", "rows", "ledger"
]


@dataclass(frozen=True, slots=True)
class CascadeRow:
    """One row a cascade reached (or, for ``rows``, one table it wrote and how many)."""

    action: str
    kind: str
    key: str | None
    id: str | None
    body: str | None
    n: int | None = None


@dataclass(frozen=True, slots=True)
class Cascade:
    """What a delete, forget or erase did (or, dry, would do)."""

    rows: tuple[CascadeRow, ...]
    dry_run: bool = False

    def reached(self, *actions: str) -> list[CascadeRow]:
        return [r for r in self.rows if r.action in actions]

    @property
    def counts(self) -> dict[str, int]:
        """Rows removed or changed per table (the receipt; no content)."""
        return {r.kind: r.n or 0 for r in self.rows if r.action == "rows"}

    @property
    def deleted(self) -> list[CascadeRow]:
        """Derived rows deleted: made from what went alone."""
        return self.reached("delete")

    @property
    def withheld(self) -> list[CascadeRow]:
        """Derived rows withheld for the loop to derive again."""
        return self.reached("withhold")

    @property
    def chat_lines(self) -> list[CascadeRow]:
        """Chat lines removed: those the memory came from and those of the request."""
        return [
            r for r in self.rows if r.kind == "chat_line" and r.action in ("chat_line", "forget")
        ]

    @property
    def removed_memory_ids(self) -> list[str]:
        """Memories that left the memory table (for an external vector index)."""
        return [
            r.id
            for r in self.rows
            if r.kind == "memory" and r.id and r.action in ("forget", "delete", "withhold")
        ]


#: a confirmation code holds for this window (and the one before)
CONFIRM_WINDOW_SECONDS = 600


def confirmation_code(what: str, digest: str, now: datetime, *, back: int = 0) -> str:
    """8 hex characters for (what is confirmed, its state, a 10-minute window - ``back``):
    no state anywhere, any process checks it, a change of what would be removed voids it."""
    window = int(now.timestamp()) // CONFIRM_WINDOW_SECONDS - back
    return hashlib.sha256(f"{what}|{digest}|{window}".encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A destructive step shown first: what it would do and the code that confirms it."""

    what: str
    digest: str
    cascade: Cascade
    code: str

    def accepts(self, code: str, now: datetime) -> bool:
        """The code of this window or the one before."""
        given = code.strip().lower()
        return any(
            given == confirmation_code(self.what, self.digest, now, back=back) for back in (0, 1)
        )


def confirm(what: str, digest: str, cascade: Cascade, now: datetime) -> Confirmation:
    return Confirmation(what, digest, cascade, confirmation_code(what, digest, now))


#: how a derived kind reads in a sentence (the chat and the page speak Chinese)
KIND_NAMES = {
    "memory": "记忆",
    "knowledge": "知识条目",
    "profile_line": "画像行",
    "profile_summary": "画像摘要",
    "memo_sentence": "备忘录句子",
    "chat_line": "聊天记录",
}


def describe_cascade(cascade: Cascade, *, limit: int = 8, chars: int = 40) -> list[str]:
    """The cascade as lines a person reads (Chinese, as the bot speaks): what goes, what
    was derived from it and what happens to each (the rule in words)."""

    def cut(text: str | None) -> str:
        value = " ".join((text or "").split())
        return value if len(value) <= chars else value[: chars - 1] + "…"

    out: list[str] = []
    for row in cascade.reached("forget", "changed")[:limit]:
        verb = "改动" if row.action == "changed" else "忘记"
        out.append(f"{verb}{KIND_NAMES.get(row.kind, row.kind)}「{cut(row.body) or row.id}」")
    lines = cascade.reached("chat_line")
    if lines:
        out.append(f"删除说过它的 {len(lines)} 条聊天记录")
    older = cascade.reached("ancestor")
    if older:
        out.append(f"清除并入它的 {len(older)} 条旧记忆的历史")
    for row in cascade.deleted[:limit]:
        out.append(f"删除（只由它得来）{KIND_NAMES.get(row.kind, row.kind)}「{cut(row.body)}」")
    for row in cascade.withheld[:limit]:
        out.append(
            f"暂停使用并交给整理循环重写（还来自其他记忆）{KIND_NAMES.get(row.kind, row.kind)}"
            f"「{cut(row.body)}」"
        )
    hidden = max(0, len(cascade.deleted) - limit) + max(0, len(cascade.withheld) - limit)
    if hidden:
        out.append(f"……另有 {hidden} 条派生内容")
    return out
