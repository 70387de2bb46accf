"""The knowledge base's pure parts: entries, line windows, the Markdown layout, who may read.

An entry (reference §10.2) is a ``kid`` (8 hex characters), a one-line title, a summary
(what is embedded and searched) and a body whose lines are numbered from 0; the body is
stored whole and split on ``\\n`` (an empty body has no lines) — the same numbering as
``knowledge_lines_v1`` in SQL. The Markdown file of an entry is the reference's
``KNOWLEDGE_{kid}.md``: ``# {title}``, the summary, a ``---`` line, the body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

#: the permission node that lets a chat user read the knowledge base (LitePerm's name)
KNOWLEDGE_NODE = "memory.knowledge"
#: nodes the grants table accepts
GRANTABLE_NODES = frozenset({KNOWLEDGE_NODE})
#: roles that always read the knowledge base: bot superusers and LitePerm admins
KNOWLEDGE_ADMIN_ROLES = frozenset({"superuser", "lp.admin"})
#: OneBot group roles that read it where ``knowledge_read_group_admins`` is on
GROUP_ROLES = frozenset({"owner", "admin"})

SUMMARY_PREVIEW_CHARS = 80
FILE_PREFIX = "KNOWLEDGE_"
_SEPARATOR = re.compile(r"^---\s*$")
_KID = re.compile(r"^[0-9a-f]{8,32}$")


@dataclass(frozen=True, slots=True)
class KnowledgeInfo:
    """One entry as listed: no body, its counts."""

    kid: str
    title: str
    summary: str
    total_lines: int
    char_count: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class KnowledgeWindow:
    """Lines ``[range_start, range_end)`` of an entry."""

    kid: str
    title: str
    summary: str
    body_lines: tuple[str, ...]
    total_lines: int
    range_start: int
    range_end: int


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    """A whole entry (export, ``knowledge show``)."""

    kid: str
    title: str
    summary: str
    body: str
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """One search result: what ``knowledge_search_v2`` ranked it by."""

    kid: str
    title: str
    summary: str
    #: L2 distance of the summary vector to the query; None in keyword mode (no vector)
    distance: float | None
    #: BM25 of the query's tokens over title + summary + body (0 = no shared token)
    keyword_score: float = 0.0
    #: what the mode ranks by (vector: 1/(1+distance²); keyword: BM25; hybrid: fused)
    score: float = 0.0


def knowledge_search_text(title: str, summary: str, body: str) -> str:
    """The text an entry's search tokens are made from: the whole entry, title first (a
    newline between parts, so no token spans two of them). The vector stays the summary's."""
    return f"{title}\n{summary}\n{body}"


@dataclass(frozen=True, slots=True)
class KnowledgeWrite:
    kid: str
    total_lines: int
    char_count: int


@dataclass(frozen=True, slots=True)
class Suggestion:
    id: int
    action: str
    kid: str | None
    title: str
    summary: str
    body: str
    reason: str
    author_id: str
    created_at: datetime
    #: pending | claimed (by a running L3 cycle) | done
    status: str = "pending"


def is_kid(text: str) -> bool:
    return bool(_KID.match(text))


def body_lines(body: str) -> list[str]:
    """The lines of a body: split on ``\\n``; the empty body has none."""
    return body.split("\n") if body else []


def normalize_body(body: str) -> str:
    """Line ends as ``\\n``, no blank lines around the body (the reference stripped it)."""
    return body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def preview(summary: str, limit: int = SUMMARY_PREVIEW_CHARS) -> str:
    """The list's ``summary_preview``: the first 80 characters, ``...`` when longer."""
    return summary[:limit] + ("..." if len(summary) > limit else "")


def file_name(kid: str) -> str:
    return f"{FILE_PREFIX}{kid}.md"


def kid_of_file(name: str) -> str | None:
    """The kid of a ``KNOWLEDGE_{kid}.md`` name, or None for any other file."""
    if not (name.startswith(FILE_PREFIX) and name.endswith(".md")):
        return None
    kid = name[len(FILE_PREFIX) : -len(".md")]
    return kid if is_kid(kid) else None


def to_markdown(entry: KnowledgeEntry) -> str:
    """The reference's file: ``# title``, summary, ``---``, body (newline-terminated)."""
    return f"# {entry.title}\n{entry.summary}\n---\n{entry.body}\n"


def from_markdown(kid: str, text: str) -> KnowledgeEntry:
    """Parse a ``KNOWLEDGE_{kid}.md`` (reference §10.2): line 1 the title (``#`` and
    spaces stripped), then summary and body split at the first ``---`` line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    title = lines[0].lstrip("#").strip() if lines else ""
    rest = lines[1:]
    for index, line in enumerate(rest):
        if _SEPARATOR.match(line):
            summary = "\n".join(rest[:index]).strip()
            body = "\n".join(rest[index + 1 :])
            break
    else:
        summary, body = "\n".join(rest).strip(), ""
    return KnowledgeEntry(kid=kid, title=title, summary=summary, body=normalize_body(body))


def can_read_knowledge(
    roles: frozenset[str], *, in_group: bool, group_admins_read: bool, granted: bool
) -> bool:
    """Who reads the knowledge base from the chat (§10.6, extended).

    Superusers and LitePerm's ``lp.admin``; whoever holds ``memory.knowledge`` (from
    LitePerm, in ``roles``, or from our grants table, ``granted``); and, where
    ``knowledge_read_group_admins`` is on, a group's owner and admins in that group.
    """
    if roles & KNOWLEDGE_ADMIN_ROLES or KNOWLEDGE_NODE in roles or granted:
        return True
    return group_admins_read and in_group and bool(roles & GROUP_ROLES)
