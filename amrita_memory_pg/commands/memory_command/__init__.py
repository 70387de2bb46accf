"""The ``/memory`` chat command (reference §12), framework-agnostic.

The NoneBot plugin (and any other adapter) turns its event into a
:class:`~amrita_memory_pg.tools.context.ToolContext`, passes the argument text here and
sends the :data:`Reply` back: plain text, or a memo to send as a merged-forward message
where the platform has one. All texts are the reference's; the differences are fixes:

- group delete is checked *before* the id is resolved (no existence leak), superusers
  may delete, and a speaker without a group role is refused (only owner/admin/superuser
  pass);
- ``search`` shows the decay score beside the raw distance (results are in decay order),
  and takes an optional leading ``mode=vector|keyword|hybrid``;
- ``add`` is new: a manual entry stored with ``source=user`` (never replaced by
  automatic extraction), importance medium, the speaker as author. Any group member may
  add to the group scope, as anyone can through the LLM's ``write_memory``; only
  deleting group memories is restricted.

The second seed's model: ``add`` takes ``-c/--category`` (preference / rule / event / knowledge, or
偏好 / 规则 / 事件 / 知识) and ``-i/--importance`` (1–10) before the content; ``list``
and ``search`` show category, importance and source and filter with ``-c`` (and
``list`` with ``-i``, a minimum); ``clear`` empties a scope after a confirmation and a
backup (``group``: admins); ``global`` is the bot-wide scope (everyone lists and
searches it, superusers add, delete and clear); ``extract`` runs the automatic
extraction of this chat now (group: admins).

Input is checked like the tools' (:mod:`amrita_memory_pg.domain.validation`): ``add``
is capped at the same 4000 characters (F10), a page number is ASCII digits only (F9),
and text the database cannot store (NUL, lone surrogates) is refused with a plain
sentence instead of a driver error. :func:`parse_command` and :func:`refusal` are pure,
so the parser is tested (and fuzzed) without a bot or a database.

The package: :mod:`.dispatcher` (:class:`MemoryCommand`: parse, route, perform, reply),
one module per subcommand group (:mod:`.memories`, :mod:`.clear`, :mod:`.memo`,
:mod:`.profile`, :mod:`.knowledge`, :mod:`.pause`, :mod:`.l3`, :mod:`.extract`), each a
pure parse-and-check step followed by the work; :mod:`.failures` turns any failure into
the operation's sentence; :mod:`.parsing` and :mod:`.texts` hold the parser and the
usage texts.
"""

from __future__ import annotations

from amrita_memory_pg.commands.memory_command.base import (
    LABELS,
    SEARCH_TOP_K,
    CycleRun,
    DmnTrigger,
    MemoReply,
    Reply,
    TextReply,
)
from amrita_memory_pg.commands.memory_command.dispatcher import DMN_ADMIN_ROLES, MemoryCommand
from amrita_memory_pg.commands.memory_command.memories import PAGE_SIZE, format_line
from amrita_memory_pg.commands.memory_command.parsing import (
    DMN_SUBS,
    EXTRACT_SUBS,
    KNOWLEDGE_SUBS,
    LEGACY_ACTIONS,
    MEMO_SUBS,
    PAUSE_SUBS,
    PROFILE_SUBS,
    Options,
    Parsed,
    page_number,
    parse_command,
    parse_options,
    refusal,
    search_mode,
)
from amrita_memory_pg.commands.memory_command.texts import (
    PROFILE_USAGE,
    USAGE_CATEGORIES,
    USAGE_DMN,
    USAGE_EXTRACT,
    USAGE_GLOBAL,
    USAGE_GROUP,
    USAGE_KNOWLEDGE,
    USAGE_MEMO,
    USAGE_MODES,
    USAGE_PAUSE,
    USAGE_PROFILE,
    USAGE_PROFILE_ADMIN,
    USAGE_SHORT,
    USAGE_SHORT_ADMIN,
    USAGE_USER,
    usage,
)

__all__ = [
    "DMN_ADMIN_ROLES",
    "DMN_SUBS",
    "EXTRACT_SUBS",
    "KNOWLEDGE_SUBS",
    "LABELS",
    "LEGACY_ACTIONS",
    "MEMO_SUBS",
    "PAGE_SIZE",
    "PAUSE_SUBS",
    "PROFILE_SUBS",
    "PROFILE_USAGE",
    "SEARCH_TOP_K",
    "USAGE_CATEGORIES",
    "USAGE_DMN",
    "USAGE_EXTRACT",
    "USAGE_GLOBAL",
    "USAGE_GROUP",
    "USAGE_KNOWLEDGE",
    "USAGE_MEMO",
    "USAGE_MODES",
    "USAGE_PAUSE",
    "USAGE_PROFILE",
    "USAGE_PROFILE_ADMIN",
    "USAGE_SHORT",
    "USAGE_SHORT_ADMIN",
    "USAGE_USER",
    "CycleRun",
    "DmnTrigger",
    "MemoReply",
    "MemoryCommand",
    "Options",
    "Parsed",
    "Reply",
    "TextReply",
    "format_line",
    "page_number",
    "parse_command",
    "parse_options",
    "refusal",
    "search_mode",
    "usage",
]
