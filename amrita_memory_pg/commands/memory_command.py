"""The ``/memory`` chat command (reference §12), framework-agnostic.

The NoneBot plugin (and any other adapter) turns its event into a
:class:`~amrita_memory_pg.tools.context.ToolContext`, passes the argument text here and
sends the :data:`Reply` back: plain text, or a memo to send as a merged-forward message
where the platform has one. All texts are the reference's; the differences are fixes:

- group delete is checked *before* the id is resolved (no existence leak), superusers
  may delete, and a speaker without a group role is refused (only owner/admin/superuser
  pass);
- ``search`` shows the decay score beside the raw distance (results are in decay order),
  and takes an optional leading ``mode=vector|keyword|hybrid`` (issue 16);
- ``add`` is new: a manual entry stored with ``source=user`` (never replaced by
  automatic extraction), importance medium, the speaker as author. Any group member may
  add to the group scope, as anyone can through the LLM's ``write_memory``; only
  deleting group memories is restricted.

Issue 14: ``add`` takes ``-c/--category`` (preference / rule / event / knowledge, or
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
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.domain.errors import (
    KnowledgeError,
    MemoryPaused,
    PartitionFull,
    ProfileRefused,
)
from amrita_memory_pg.domain.importance import MEDIUM
from amrita_memory_pg.domain.keys import GLOBAL_KEY, check_partition_key, personal_key, user_key
from amrita_memory_pg.domain.knowledge import preview
from amrita_memory_pg.domain.profile import ProfileActor, render_numbered
from amrita_memory_pg.domain.records import (
    CATEGORY_NAMES,
    SEARCH_MODES,
    SOURCE_NAMES,
    MemoryRecord,
    SearchMode,
)
from amrita_memory_pg.domain.text import pack_chunks
from amrita_memory_pg.domain.trail import Actor, Recall, acting
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    InvalidInput,
    check_text,
    parse_category,
    parse_count,
    parse_importance,
    plain,
)
from amrita_memory_pg.maintenance.clear import clear_partition, plan_clear
from amrita_memory_pg.services.extraction import Extractor
from amrita_memory_pg.services.knowledge import DISABLED, NO_PERMISSION, KnowledgeService
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.memos import MemoStore
from amrita_memory_pg.tools.context import ToolContext

log = logging.getLogger(__name__)

PAGE_SIZE = 10
SEARCH_TOP_K = 10
PREVIEW_CHARS = 50
MEMO_SUBS = frozenset({"memo", "备忘录"})
PROFILE_SUBS = frozenset({"profile", "画像"})
DMN_SUBS = frozenset({"dmn", "run", "触发"})
KNOWLEDGE_SUBS = frozenset({"knowledge", "知识库"})
EXTRACT_SUBS = frozenset({"extract", "提取"})
#: issue 17: pause / resume a scope's memory (superusers)
PAUSE_SUBS = frozenset({"pause", "resume", "暂停", "恢复"})
LEGACY_ACTIONS = frozenset({"list", "search", "delete"})
#: lines ``/memory knowledge read <kid>`` shows when no range is given
KNOWLEDGE_READ_LINES = 40
LABELS = {"user": "👤个人", "group": "👥群共享", "global": "🌐全局"}
#: roles that may run the hidden ``dmn`` option (SUPERUSERS, or LitePerm's lp.admin)
DMN_ADMIN_ROLES = frozenset({"superuser", "lp.admin"})

USAGE_USER = (
    "/memory user list [页码] [-c 类别] [-i 最低重要度] — 列出个人记忆",
    "/memory user search [-c 类别] <关键词> — 搜索个人记忆",
    "/memory user delete <ID>    — 删除个人记忆",
    "/memory user add [-c 类别] [-i 1-10] <内容> — 添加个人记忆（手动条目，不会被自动流程改动）",
    "/memory user clear          — 清空个人记忆（先确认，再备份）",
)
USAGE_GROUP = (
    "/memory group list [页码] [-c 类别] — 列出群共享记忆",
    "/memory group search [-c 类别] <关键词> — 搜索群共享记忆",
    "/memory group delete <ID>   — 删除群共享记忆 (仅管理/群主)",
    "/memory group add [-c 类别] [-i 1-10] <内容> — 添加群共享记忆（群成员均可）",
    "/memory group clear         — 清空群共享记忆 (仅管理/群主；先确认，再备份)",
)
USAGE_GLOBAL = "/memory global list|search — 🌐全局记忆（add/delete/clear 仅超级用户）"
USAGE_EXTRACT = "/memory extract             — 立即从本会话自动提取记忆（群内仅管理）"
USAGE_CATEGORIES = "类别: preference(偏好) / rule(规则) / event(事件) / knowledge(知识)"
USAGE_MODES = (
    "检索方式: … search mode=hybrid|vector|keyword <关键词>（默认见 [retrieval] default_mode）"
)
#: a superuser option, not in the usage (like ``dmn``): the README documents it
USAGE_PAUSE = "/memory pause|resume [user|group|global|分区键] — 暂停/恢复某作用域的记忆（仅超级用户；默认本会话）"
USAGE_MEMO = "/memory memo                — 查看当前作用域的备忘录（只读）"
USAGE_PROFILE = "/memory profile [history]   — 查看自己的用户画像 / 修改历史"
PROFILE_USAGE = (
    "用法:\n"
    "/memory profile                    — 查看自己的用户画像\n"
    "/memory profile history            — 查看自己画像的修改历史\n"
    "/memory profile show <用户>         — 查看他人的画像（仅超级用户）\n"
    "/memory profile history <用户>      — 查看他人画像的修改历史（仅超级用户）\n"
    "/memory profile revert [用户] <版本> — 把画像恢复到某个版本（仅超级用户）"
)
#: how many changes ``/memory profile history`` lists
PROFILE_HISTORY_LINES = 10
USAGE_KNOWLEDGE = (
    "/memory knowledge list                 — 列出知识库（需知识库权限）",
    "/memory knowledge read <kid> [起始行] [结束行] — 阅读条目",
    "/memory knowledge search [mode=hybrid|vector|keyword] <关键词> — 检索知识库",
    "/memory knowledge suggest <标题> | <摘要> | <正文> [| <理由>] — 提交知识建议（任何人）",
    "/memory knowledge grant|revoke <用户ID> — 授予/撤销 memory.knowledge（仅超级用户）",
)

#: Starts one L3 cycle now; None while no L3 loop runs in this process.
DmnTrigger = Callable[[], Awaitable[None]]
#: Runs one L3 cycle now for a partition key and returns its summary (``Memory.run_cycle``).
CycleRun = Callable[..., Awaitable[CycleSummary]]


@dataclass(frozen=True, slots=True)
class TextReply:
    text: str


@dataclass(frozen=True, slots=True)
class MemoReply:
    """A memo to show: a merged-forward message titled ``title``, one node per chunk."""

    title: str
    chunks: tuple[str, ...]


Reply = TextReply | MemoReply


def usage(ctx: ToolContext) -> str:
    """The usage hint: the user scope, the group scope in a group chat, then the memo."""
    lines = ["用法:", *USAGE_USER]
    if ctx.in_group:
        lines.extend(USAGE_GROUP)
    lines.extend((USAGE_GLOBAL, USAGE_EXTRACT, USAGE_MEMO, USAGE_CATEGORIES, USAGE_MODES))
    lines.append(USAGE_PROFILE)
    return "\n".join(lines)


def _preview(text: str) -> str:
    flat = text.replace("\r", " ").replace("\n", " ")
    return flat[:PREVIEW_CHARS] + ("..." if len(flat) > PREVIEW_CHARS else "")


def _reason(exc: BaseException) -> str:
    """An exception as one short phrase (some, like NotImplementedError(), have no text)."""
    return str(exc) or type(exc).__name__


def format_line(record: MemoryRecord) -> str:
    """``[{importance}] [{id}] {preview50} | tag: {tags} | {类别} | 重要度 {n} | {来源}``
    (the category only when set)."""
    line = (
        f"[{record.importance_label or '-'}] [{record.id or '-'}] "
        f"{_preview(record.content) or '-'} | tag: {record.tags_text or '-'}"
    )
    if record.category:
        line += f" | {CATEGORY_NAMES.get(record.category, record.category)}"
    line += f" | 重要度 {record.importance}"
    return line + f" | {SOURCE_NAMES.get(record.source, record.source)}"


@dataclass(frozen=True, slots=True)
class Options:
    """``-c/--category`` and ``-i/--importance`` of add / list / search, and the rest."""

    category: str | None = None
    importance: int | None = None
    rest: str = ""


_OPTION_NAMES = {
    "-c": "category",
    "--category": "category",
    "类别": "category",
    "-i": "importance",
    "--importance": "importance",
    "重要度": "importance",
}


def parse_options(text: str, *, anywhere: bool = False) -> Options:
    """Options before the text (``anywhere``: between any words, for ``list``); pure.

    ``-c rule``, ``--category=rule``, ``类别=规则``, ``-i 8``, ``--importance=8``.
    Raises :class:`InvalidInput` for an unknown category or an importance outside 1–10.
    """
    words = text.split()
    values: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name, sep, value = word.partition("=")
        if name in _OPTION_NAMES and (sep or i + 1 < len(words)):
            if not sep:
                value = words[i + 1]
                i += 1
            values[_OPTION_NAMES[name]] = value
            i += 1
            continue
        if not anywhere:
            break
        rest.append(word)
        i += 1
    if not anywhere:
        # the content keeps its own spacing: cut the option words off the front
        remaining = text.strip()
        for _ in range(i):
            remaining = (
                remaining.split(maxsplit=1)[1] if len(remaining.split(maxsplit=1)) > 1 else ""
            )
        rest_text = remaining.strip()
    else:
        rest_text = " ".join(rest)
    category = importance = None
    if "category" in values:
        try:
            category = parse_category(values["category"])
        except InvalidInput as exc:
            raise InvalidInput(f"类别{exc.reason}") from None
    if "importance" in values:
        try:
            importance = parse_importance(values["importance"])
        except InvalidInput as exc:
            raise InvalidInput(f"重要度{exc.reason}") from None
    return Options(category, importance, rest_text)


@dataclass(frozen=True, slots=True)
class Parsed:
    """What one ``/memory …`` asks for, before anything is looked up.

    ``kind``: ``memo``, ``profile`` (``args`` = the rest), ``dmn`` (the hidden L3
    trigger; ``sub`` is the word used),
    ``usage`` (anything unrecognised), or ``action`` on ``scope`` with ``args``.
    """

    kind: Literal["memo", "dmn", "extract", "usage", "action", "profile", "knowledge", "pause"]
    sub: str = ""
    scope: Literal["user", "group", "global"] = "user"
    action: str = ""
    args: str = ""


def parse_command(text: str, *, in_group: bool) -> Parsed:
    """Split ``/memory`` arguments the reference's way (§12.3); pure, never raises.

    ``sub`` is the first word, lower-cased; a scope (``user``, and ``group`` in a group
    chat) is followed by an action and its arguments; ``list``/``search``/``delete`` alone
    are the legacy form for the user scope. Actions are case-sensitive.
    """
    parts = text.strip().split(maxsplit=1)
    sub = parts[0].lower() if parts else ""
    rest = parts[1].strip() if len(parts) > 1 else ""
    if sub in MEMO_SUBS:
        return Parsed("memo", sub=sub)
    if sub in PROFILE_SUBS:
        return Parsed("profile", sub=sub, args=rest)
    if sub in DMN_SUBS:
        return Parsed("dmn", sub=sub, args=rest)
    if sub in KNOWLEDGE_SUBS:
        action_parts = rest.split(maxsplit=1)
        action = action_parts[0].lower() if action_parts else ""
        args = action_parts[1].strip() if len(action_parts) > 1 else ""
        return Parsed("knowledge", sub=sub, action=action, args=args)
    if sub in EXTRACT_SUBS:
        return Parsed("extract", sub=sub)
    if sub in PAUSE_SUBS:
        return Parsed("pause", sub=sub, args=rest)
    if sub in ("user", "global") or (sub == "group" and in_group):
        action_parts = rest.split(maxsplit=1)
        action = action_parts[0] if action_parts else ""
        args = action_parts[1].strip() if len(action_parts) > 1 else ""
        scope: Literal["user", "group", "global"] = (
            "group" if sub == "group" else "global" if sub == "global" else "user"
        )
        return Parsed("action", sub=sub, scope=scope, action=action, args=args)
    if sub in LEGACY_ACTIONS:
        return Parsed("action", sub=sub, scope="user", action=sub, args=rest)
    return Parsed("usage", sub=sub)


#: what each action's argument is called in a refusal, and its cap (the tools' caps)
_ARGUMENTS: dict[str, tuple[str, int]] = {
    "add": ("记忆内容", MAX_CONTENT_CHARS),
    "search": ("搜索关键词", MAX_QUERY_CHARS),
    "delete": ("记忆 ID", MAX_ID_CHARS),
    "clear": ("确认码", 16),
}


def refusal(action: str, args: str) -> str | None:
    """Why ``args`` cannot be used for ``action`` (too long, NUL, lone surrogate), or None.

    The same checks as the tools' arguments, so the command stores nothing a tool would
    refuse — ``/memory user add`` with 100,000 characters (F10) included.
    """
    if action not in _ARGUMENTS or not args:
        return None
    name, cap = _ARGUMENTS[action]
    try:
        check_text(args, max_chars=cap)
    except InvalidInput as exc:
        return f"{name}{exc.reason}"
    return None


def search_mode(args: str) -> tuple[SearchMode | None, str, str | None]:
    """Split ``/memory … search [mode=X] <关键词>``: (mode, query, refusal). Pure.

    No ``mode=`` prefix: (None, args, None), the configured default mode. An unknown
    mode is refused with a sentence listing the three.
    """
    head, _, rest = args.partition(" ")
    if not head.lower().startswith("mode="):
        return None, args, None
    value = head[len("mode=") :].lower()
    for mode in SEARCH_MODES:
        if value == mode:
            return mode, rest.strip(), None
    return (
        None,
        rest.strip(),
        f"未知的检索方式 {value!r}：可用 mode=hybrid、mode=vector、mode=keyword",
    )


def page_number(args: str, pages: int) -> int:
    """``/memory … list <page>``: ASCII digits in 1..pages; anything else is page 1 (F9)."""
    return parse_count(args, lo=1, hi=max(1, pages)) or 1


class MemoryCommand:
    """``/memory`` over the memo and memory repositories; :meth:`run` never raises."""

    def __init__(
        self,
        *,
        memos: MemoStore,
        memories: MemoryService,
        settings: Settings,
        dmn_trigger: DmnTrigger | None = None,
        cycle_run: CycleRun | None = None,
        profiles: ProfileService | None = None,
        knowledge: KnowledgeService | None = None,
        store: Store | None = None,
        extractor: Extractor | None = None,
    ) -> None:
        self.memos = memos
        self.memories = memories
        self.settings = settings
        self.dmn_trigger = dmn_trigger
        #: runs a cycle in the foreground and reports it (used when no scheduler trigger is set)
        self.cycle_run = cycle_run
        self.profiles = profiles
        self.knowledge = knowledge
        #: for ``clear`` (its backup); None: clear answers that it is unavailable
        self.store = store
        #: for ``extract``; None: extract answers that it is unavailable
        self.extractor = extractor

    async def run(self, ctx: ToolContext, text: str) -> Reply:
        """Parse and execute one ``/memory …`` (``text`` is everything after the command).

        Every write it makes is recorded in the change history as this person's."""
        with acting(Actor("person", ctx.user_id)):
            return await self._run(ctx, text)

    async def _run(self, ctx: ToolContext, text: str) -> Reply:
        parsed = parse_command(text, in_group=ctx.in_group)
        if parsed.kind == "memo":
            return await self._memo(ctx)
        if parsed.kind == "profile":
            return await self._profile(ctx, parsed.args)
        if parsed.kind == "dmn":
            if not ctx.roles & DMN_ADMIN_ROLES:
                return TextReply(f"未知选项：{parsed.sub}")
            return TextReply(await self._dmn(ctx, parsed.args))
        if parsed.kind == "knowledge":
            return TextReply(await self._knowledge(ctx, parsed.action, parsed.args))
        if parsed.kind == "extract":
            return TextReply(await self._extract(ctx))
        if parsed.kind == "pause":
            if not ctx.is_superuser:
                return TextReply(f"未知选项：{parsed.sub}")
            return TextReply(await self._pause(ctx, parsed.sub, parsed.args))
        if parsed.kind == "usage":
            return TextReply(usage(ctx))

        scope, action, args = parsed.scope, parsed.action, parsed.args
        key = (
            ctx.group_key
            if scope == "group"
            else GLOBAL_KEY
            if scope == "global"
            else ctx.personal_key
        )
        if key is None:  # parse_command offers the group scope only in a group
            return TextReply(usage(ctx))
        refused = refusal(action, args)
        if refused is not None:
            return TextReply(refused)
        if scope == "global" and action in ("add", "delete", "clear") and not ctx.is_superuser:
            return TextReply("❌ 🌐全局记忆对所有对话可见，只有超级用户可以添加、删除或清空")
        if action in ("", "list"):
            return TextReply(await self._list(scope, key, args))
        if action == "search":
            return TextReply(await self._search(ctx, scope, key, args))
        if action == "delete":
            return TextReply(await self._delete(ctx, scope, key, args))
        if action == "add":
            return TextReply(await self._add(ctx, scope, key, args))
        if action == "clear":
            return TextReply(await self._clear(ctx, scope, key, args))
        return TextReply(usage(ctx))

    async def _memo(self, ctx: ToolContext) -> Reply:
        try:
            memo = await self.memos.get(ctx.session_key)
        except Exception as exc:  # the command's outer edge: reply, never raise into the chat
            log.exception("reading the memo of %s failed", ctx.session_key)
            return TextReply(f"读取备忘录失败: {_reason(exc)}")
        if not memo.content:
            return TextReply("当前作用域还没有备忘录")
        return MemoReply(title="备忘录", chunks=tuple(pack_chunks(memo.content)))

    async def _profile(self, ctx: ToolContext, args: str) -> Reply:
        """``/memory profile [show|history] [user]`` and ``revert [user] <version>``.

        The rules of ``read_profile``: one's own profile, in any chat; another user's only
        for superusers, refused before anything is looked up (no existence leak). Only
        superusers revert, and a revert is recorded as a change by ``chat`` (their id).
        """
        if self.profiles is None:
            return TextReply("用户画像未启用")
        try:
            check_text(args, max_chars=2 * MAX_ID_CHARS)
        except InvalidInput as exc:
            return TextReply(f"参数{exc.reason}")
        words = args.split()
        action = words[0] if words else "show"
        rest = words[1:]
        version: int | None = None
        if action not in ("show", "history", "revert") or len(rest) > 2:
            return TextReply(PROFILE_USAGE)
        if action == "revert":
            if not ctx.is_superuser:
                return TextReply("❌ 仅超级用户可以回滚画像")
            if not rest:
                return TextReply(PROFILE_USAGE)
            # a version lives in an int column and the lookup asks for version + 1
            version = parse_count(rest[-1], lo=0, hi=2**31 - 1)
            if version is None or version >= 2**31 - 1:
                return TextReply(f"版本号应为非负整数（0 到 {2**31 - 2}），收到 {plain(rest[-1])}")
            target = rest[0] if len(rest) == 2 else None
        else:
            if len(rest) > 1:
                return TextReply(PROFILE_USAGE)
            target = rest[0] if rest else None
        key = ctx.personal_key
        if target is not None:
            named = user_key(target, ctx.platform)
            if named != key and not ctx.is_superuser:
                return TextReply("❌ 只能查看自己的画像（超级用户可查看他人的画像）")
            if named is None:
                return TextReply(f"{target} 不是用户：请给出 QQ 号或个人分区键（群没有画像）")
            key = named
        own = key == ctx.personal_key
        try:
            if action == "show":
                return await self._profile_show(key, own)
            if action == "history":
                return TextReply(await self._profile_history(key, own))
            assert version is not None
            result = await self.profiles.revert(key, version, ProfileActor("chat", who=ctx.user_id))
        except ProfileRefused as exc:
            return TextReply(str(exc))
        except Exception as exc:
            log.exception("/memory profile %s on %s failed", action, key)
            return TextReply(f"画像操作失败: {_reason(exc)}")
        if not result.changed:
            return TextReply(f"画像已经是 v{version} 的内容，未修改")
        return TextReply(
            f"✅ 已把 {key} 的画像恢复到 v{version} 的内容（新版本 v{result.profile.version}）"
        )

    async def _profile_show(self, key: str, own: bool) -> Reply:
        assert self.profiles is not None
        current = await self.profiles.get(key)
        whose = "你" if own else key
        if current.version == 0:
            return TextReply(f"{whose}还没有用户画像")
        text = f"👤 {whose}的用户画像（v{current.version}，{current.total_lines} 行）\n摘要: {current.summary}"
        if current.lines:
            text += "\n" + render_numbered(current.lines)
        return MemoReply(title="用户画像", chunks=tuple(pack_chunks(text)))

    async def _profile_history(self, key: str, own: bool) -> str:
        assert self.profiles is not None
        changes = await self.profiles.history(key, PROFILE_HISTORY_LINES)
        whose = "你" if own else key
        if not changes:
            return f"{whose}的画像没有修改记录"
        lines = [f"📜 {whose}的画像修改历史（最近 {len(changes)} 次）:"]
        lines.extend(change.line() for change in changes)
        return "\n".join(lines)

    async def _dmn(self, ctx: ToolContext, args: str = "") -> str:
        sub = self.settings.subconscious
        if not sub.enabled:
            return "潜意识调度未启用：subconscious.enabled 为 false"
        if not sub.target_user_id:
            return "潜意识调度未启用：subconscious.target_user_id 为空"
        if self.dmn_trigger is None and self.cycle_run is not None:
            return await self._run_cycle(ctx, dry_run=args.strip().lower() in ("dry", "dry-run"))
        if self.dmn_trigger is None:
            return (
                "潜意识调度未启动：本进程没有运行中的 L3 巩固循环（尚未接入或启动失败），检查日志"
            )
        try:
            await self.dmn_trigger()
        except Exception as exc:
            log.exception("triggering the L3 cycle failed")
            return f"潜意识调度未启动：触发失败（{_reason(exc)}），检查日志"
        return "已触发，潜意识将在后台跑一轮"

    async def _run_cycle(self, ctx: ToolContext, *, dry_run: bool) -> str:
        """One cycle now for the configured target, then its numbers."""
        assert self.cycle_run is not None
        target = personal_key(ctx.platform, self.settings.subconscious.target_user_id)
        try:
            s = await self.cycle_run(target, dry_run=dry_run, trigger="manual")
        except Exception as exc:
            log.exception("running the L3 cycle failed")
            return f"潜意识整理失败：{_reason(exc)}，检查日志"
        head = "✅ 潜意识整理完成" if s.ok else f"❌ 潜意识整理失败：{s.error}"
        lines = [
            head + ("（演练：未写入任何内容）" if s.dry_run else ""),
            f"轮次 {s.iterations}，工具调用 {s.tool_calls}，改动记忆 {s.memories_changed} 条",
            f"tokens：提示 {s.prompt_tokens} / 生成 {s.completion_tokens}",
        ]
        if s.summary:
            lines.append(f"总结：{s.summary}")
        return "\n".join(lines)

    async def _list(self, scope: str, key: str, args: str) -> str:
        label = LABELS[scope]
        try:
            options = parse_options(args, anywhere=True)
        except InvalidInput as exc:
            return exc.reason
        filtered = options.category is not None or options.importance is not None
        shown = ""
        if options.category:
            shown += f" -c {options.category}"
        if options.importance is not None:
            shown += f" -i {options.importance}"
        try:
            if filtered:
                _first, total = await self.memories.list_filtered(
                    key, limit=1, category=options.category, min_importance=options.importance
                )
            else:
                total = await self.memories.count(key)
            if total == 0:
                return f"{label} 暂无记忆" + (f"（筛选{shown}）" if filtered else "")
            pages = math.ceil(total / PAGE_SIZE)
            page = page_number(options.rest, pages)
            records, total = await self.memories.list_filtered(
                key,
                limit=PAGE_SIZE,
                offset=(page - 1) * PAGE_SIZE,
                category=options.category,
                min_importance=options.importance,
            )
        except Exception as exc:
            log.exception("listing %s failed", key)
            return f"列出记忆失败: {_reason(exc)}"
        if total == 0:
            return f"{label} 暂无记忆"
        pages = math.ceil(total / PAGE_SIZE)
        lines = [
            f"📋 {label} 记忆列表（第 {page}/{pages} 页，共 {total} 条"
            + (f"，筛选{shown}" if filtered else "")
            + "）:"
        ]
        lines.extend(format_line(record) for record in records)
        if page < pages:
            lines.append(f"下一页: /memory {scope} list {page + 1}{shown}")
        return "\n".join(lines)

    async def _search(self, ctx: ToolContext, scope: str, key: str, args: str) -> str:
        label = LABELS[scope]
        mode, rest, refused = search_mode(args)
        if refused is not None:
            return refused
        try:
            options = parse_options(rest)
        except InvalidInput as exc:
            return exc.reason
        query = options.rest
        if mode is None:  # the mode may also follow the category option
            mode, query, refused = search_mode(query)
            if refused is not None:
                return refused
        if not query:
            return "请提供搜索关键词，例如: /memory user search 喜欢什么"
        try:
            hits = await self.memories.search(
                key,
                query,
                top_k=SEARCH_TOP_K,
                category=options.category,
                mode=mode,
                recall=Recall("command", ctx.session_key, ctx.user_id),
            )
        except MemoryPaused:
            return f"⏸ {label} 的记忆已暂停（超级用户可用 /memory resume 恢复），暂停期间不检索"
        except Exception as exc:
            log.exception("searching %s failed", key)
            return f"搜索记忆失败: {_reason(exc)}"
        if not hits:
            return f"{label} 未找到与「{query}」相关的记忆"
        lines = [f"🔍 {label} 搜索「{query}」结果（距离越小越相似）:"]
        lines.extend(
            f"{format_line(hit.record)} | 距离: "
            + ("-" if hit.distance is None else f"{hit.distance:.4f}")
            + f" | 衰减分: {hit.decay_score:.4f}"
            for hit in hits
        )
        return "\n".join(lines)

    async def _delete(self, ctx: ToolContext, scope: str, key: str, arg: str) -> str:
        label = LABELS[scope]
        if not arg:
            return "请提供要删除的记忆 ID"
        # Checked before the id is looked up, so a refused member learns nothing (the
        # reference checked after, and let superusers and role-less speakers through/out).
        if scope == "group" and not ctx.is_group_admin:
            return "❌ 无权删除👥群共享记忆，仅管理员和群主可删除"
        try:
            matches = await self.memories.find_by_prefix(key, arg)
            if not matches:
                return (
                    f"{label} 未找到匹配的记忆: {arg}\n提示: 使用 /memory {scope} list 查看全部 ID"
                )
            if len(matches) > 1:
                ids = "\n".join(f"  - {m.id}" for m in matches)
                return f"{label} 前缀 '{arg}' 匹配多条记忆，请提供更完整的 ID:\n{ids}"
            memory_id = matches[0].id
            if not await self.memories.delete(key, memory_id, by_person=True):
                return (
                    f"{label} 未找到匹配的记忆: {arg}\n提示: 使用 /memory {scope} list 查看全部 ID"
                )
        except Exception as exc:
            log.exception("deleting from %s failed", key)
            return f"删除记忆失败: {_reason(exc)}"
        return f"✅ 已删除 {label} 记忆: [{memory_id}]"

    async def _add(self, ctx: ToolContext, scope: str, key: str, args: str) -> str:
        label = LABELS[scope]
        try:
            options = parse_options(args)
        except InvalidInput as exc:
            return exc.reason
        content = options.rest
        if not content:
            return f"请提供要添加的记忆内容，例如: /memory {scope} add 我喜欢猫（可选 -c 类别 -i 重要度）"
        try:
            record = await self.memories.add(
                partition_key=key,
                scope="group" if scope == "group" else "global" if scope == "global" else "user",
                content=content,
                importance=options.importance or MEDIUM,
                category=options.category,  # type: ignore[arg-type]
                source="user",
                author=ctx.user_id,
            )
        except PartitionFull:
            return "当前会话的记忆数量已超过限制，请清理后再试"
        except Exception as exc:
            log.exception("adding to %s failed", key)
            return f"添加记忆失败: {_reason(exc)}"
        details = f"重要度 {record.importance}"
        if record.category:
            details = f"{CATEGORY_NAMES[record.category]}，" + details
        return f"✅ 已添加 {label} 记忆: [{record.id}]（{details}，手动条目）"

    async def _clear(self, ctx: ToolContext, scope: str, key: str, token: str) -> str:
        label = LABELS[scope]
        if scope == "group" and not ctx.is_group_admin:
            return "❌ 无权清空👥群共享记忆，仅管理员和群主可清空"
        if self.store is None:
            return "清空不可用：本进程没有打开备份所需的存储"
        try:
            plan = await plan_clear(self.store, key)
            if plan.count == 0:
                return f"{label} 暂无记忆，无需清空"
            if not token:
                return (
                    f"⚠️ 将清空 {label} 的全部 {plan.count} 条记忆（含手动条目；备忘录不受影响）。"
                    "清空前会先做一次完整备份。\n"
                    f"确认请在 10 分钟内发送: /memory {scope} clear {plan.token}"
                )
            if not plan.accepts(token, datetime.now(UTC)):
                return (
                    "确认码不匹配或已过期（记忆在此期间有变化也会失效），没有删除任何内容。"
                    f"请重新发送 /memory {scope} clear 获取新的确认码"
                )
            result = await clear_partition(self.store, key)
        except Exception as exc:
            log.exception("clearing %s failed", key)
            return f"清空记忆失败: {_reason(exc)}（没有删除任何内容，或请用 list 确认）"
        return (
            f"✅ 已清空 {label} 的 {result.deleted} 条记忆。清空前的备份: {result.backup.stem}"
            f"（恢复: amrita-memory backup restore {result.backup.jsonl_path.name}）"
        )

    async def _pause(self, ctx: ToolContext, sub: str, args: str) -> str:
        """``/memory pause|resume [user|group|global|<key>]`` (superusers; default: this
        chat's partition). Paused: kept, not injected, not recalled, not written by the
        chat LLM, extraction or L3; people still manage it."""
        trail = self.memories.trail
        if trail is None:
            return "暂停不可用：本进程没有打开记忆轨迹"
        target = args.strip()
        key = {
            "": ctx.session_key,
            "user": ctx.personal_key,
            "group": ctx.group_key,
            "global": GLOBAL_KEY,
        }.get(target, target)
        if not key or any(ch.isspace() for ch in key):
            return "用法: " + USAGE_PAUSE
        try:  # the one key rule of every surface (domain/keys.py)
            key = check_partition_key(key)
        except InvalidInput as exc:
            return f"{exc.reason}\n用法: {USAGE_PAUSE}"
        try:
            if sub in ("pause", "暂停"):
                done = await trail.pause(key, by=f"person:{ctx.user_id}")
                return (
                    f"⏸ 已暂停 {key} 的记忆：保留不删除，但不再注入、不再检索，自动流程不再写入"
                    if done
                    else f"{key} 的记忆本来就已暂停"
                )
            done = await trail.resume(key)
        except Exception as exc:
            log.exception("pausing/resuming %s failed", key)
            return f"操作失败: {_reason(exc)}"
        return f"▶ 已恢复 {key} 的记忆" if done else f"{key} 的记忆没有暂停"

    async def _extract(self, ctx: ToolContext) -> str:
        if ctx.in_group and not ctx.is_group_admin:
            return "❌ 无权在群内触发记忆提取，仅管理员和群主可以"
        extractor = self.extractor
        if extractor is None or extractor.model is None:
            return "自动记忆提取未启用：需要 [extraction] enabled = true 并配置模型（或 LLM_BASE_URL / LLM_MODEL）"
        try:
            outcome = await extractor.extract(ctx.session_key, trigger="command")
        except Exception as exc:
            log.exception("extraction of %s failed", ctx.session_key)
            return f"记忆提取失败: {_reason(exc)}（原有自动记忆未改动）"
        if outcome.status == "ok":
            return (
                f"✅ 已提取 {outcome.entries} 条自动记忆（替换了之前的 {outcome.replaced} 条；"
                f"手动条目不受影响；用量 {outcome.usage.total_tokens} tokens）"
            )
        if outcome.status == "empty":
            return "自上次提取以来本会话没有新消息，无需提取"
        return f"记忆提取未完成（{outcome.status}）: {outcome.reason}。原有自动记忆未改动"

    # ------------------------------------------------------------------ knowledge

    async def _knowledge(self, ctx: ToolContext, action: str, args: str) -> str:
        """``/memory knowledge …``: the chat tools' permission rules; grant/revoke for
        superusers only. A refused reader gets the tools' sentence, which names nothing."""
        kb = self.knowledge
        if kb is None:
            return "知识库不可用：本进程未接入知识库服务"
        try:
            if action in ("grant", "revoke"):
                return await self._grant(ctx, kb, action, args)
            if action == "suggest":
                return await self._suggest(ctx, kb, args)
            if action not in ("list", "read", "search"):
                return "用法:\n" + "\n".join(USAGE_KNOWLEDGE)
            if not await kb.can_read(ctx.user_id, ctx.roles, in_group=ctx.in_group):
                return NO_PERMISSION
            if not kb.enabled:
                return DISABLED
            if action == "list":
                return await self._knowledge_list(kb)
            if action == "read":
                return await self._knowledge_read(kb, args)
            return await self._knowledge_search(kb, args)
        except KnowledgeError as exc:
            return f"❌ {exc}"
        except Exception as exc:  # the command's outer edge
            log.exception("/memory knowledge %s failed", action)
            return f"知识库操作失败: {_reason(exc)}"

    async def _knowledge_list(self, kb: KnowledgeService) -> str:
        entries = await kb.entries()
        if not entries:
            return "📚 知识库为空"
        lines = [f"📚 知识库（共 {len(entries)} 条）:"]
        lines.extend(
            f"[{e.kid}] {e.title} — {preview(e.summary, 40)}（{e.total_lines} 行）" for e in entries
        )
        return "\n".join(lines)

    async def _knowledge_read(self, kb: KnowledgeService, args: str) -> str:
        parts = args.split()
        if not parts:
            return "请提供条目 ID，例如: /memory knowledge read 0a1b2c3d"
        numbers = [parse_count(p, lo=0, hi=10**9) for p in parts[1:3]]
        if any(n is None for n in numbers):
            return "行号应为非负整数，例如: /memory knowledge read 0a1b2c3d 0 20"
        start = numbers[0] if numbers else 0
        end = numbers[1] if len(numbers) > 1 else (start or 0) + KNOWLEDGE_READ_LINES
        window = await kb.read(parts[0], start, end)
        lines = [
            f"📖 {window.title} [{window.kid}]",
            window.summary,
            f"—— 第 {window.range_start}–{window.range_end} 行 / 共 {window.total_lines} 行",
        ]
        lines.extend(
            f"{n}: {line}" for n, line in enumerate(window.body_lines, start=window.range_start)
        )
        if window.range_end < window.total_lines:
            lines.append(
                f"下一段: /memory knowledge read {window.kid} {window.range_end} "
                f"{window.range_end + KNOWLEDGE_READ_LINES}"
            )
        return "\n".join(lines)

    async def _knowledge_search(self, kb: KnowledgeService, args: str) -> str:
        mode, query, refused = search_mode(args)
        if refused is not None:
            return refused
        if not query:
            return "请提供搜索关键词，例如: /memory knowledge search 猫的饮食"
        hits = await kb.search(query, SEARCH_TOP_K, mode=mode)
        if not hits:
            return f"📚 知识库中未找到与「{query}」相关的条目"
        ranked_by_score = (mode or kb.settings.retrieval.default_mode) != "vector"
        order = "按得分排序，越高越相关" if ranked_by_score else "距离越小越相似"
        lines = [f"🔍 知识库搜索「{query}」结果（{order}）:"]
        for h in hits:
            line = f"[{h.kid}] {h.title} — {preview(h.summary, 40)}"
            if h.distance is not None:
                line += f" | 距离: {h.distance:.4f}"
            if ranked_by_score:
                line += f" | 得分: {h.score:.4f}"
            lines.append(line)
        return "\n".join(lines)

    async def _suggest(self, ctx: ToolContext, kb: KnowledgeService, args: str) -> str:
        fields = [f.strip() for f in args.split("|")]
        if len(fields) < 3 or not all(fields[:3]):
            return "用法: /memory knowledge suggest <标题> | <摘要> | <正文> [| <理由>]"
        title, summary, body = fields[:3]
        reason = " | ".join(fields[3:])
        sid, pending = await kb.suggest(
            author_id=ctx.user_id,
            action="create",
            title=title,
            summary=summary,
            body=body,
            reason=reason,
        )
        return f"✅ 知识建议 #{sid} 已提交，后台记忆管家将在下一轮推理中审查（待处理 {pending} 条）"

    async def _grant(self, ctx: ToolContext, kb: KnowledgeService, action: str, args: str) -> str:
        if not ctx.is_superuser:
            return "❌ 仅超级用户可授予或撤销知识库权限"
        parts = args.split()
        if len(parts) not in (1, 2):
            return f"用法: /memory knowledge {action} <用户ID>"
        user = parts[0]
        node = parts[1] if len(parts) == 2 else "memory.knowledge"
        if action == "grant":
            added = await kb.grant(user, node, by=ctx.user_id)
            return f"✅ 已授予 {user} {node}" if added else f"{user} 已有 {node}"
        removed = await kb.revoke(user, node)
        return f"✅ 已撤销 {user} {node}" if removed else f"{user} 没有 {node}"
