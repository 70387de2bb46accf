"""Knowledge-base tools: the chat side (reference §4.9, §4.10) and the L3 loop's (§8.8 12–18).

Chat: ``knowledge_list``, ``knowledge_read``, ``knowledge_search`` (the README's names;
the reference's wire names ``subconscious_knowledge_list/read/search`` are accepted as
aliases but not shown, §15 D3) — read-only, for superusers, ``lp.admin``, holders of
``memory.knowledge`` (LitePerm or our grants table) and, where configured, a group's
owner/admins; a refusal is the reference's sentence and names nothing. They read the
database directly, so they work whether or not the L3 loop runs (W21). And
``knowledge_suggest``, open to everyone: the suggestion goes into a bounded, rate-limited
table that survives restarts.

Loop: ``subconscious_knowledge_list/read/create/update/delete/search`` and
``subconscious_read_suggestions``, which CLAIMS the pending suggestions for the running
cycle (``ctx.cycle.cycle_id``) instead of draining them: the runner marks them done
(``KnowledgeService.complete_suggestions``) when the cycle succeeds and releases them
when it fails (W15). Replies as in the reference; ``dry_run`` cycles write nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BeforeValidator, Field

from amrita_memory_pg.domain.errors import KnowledgeError, ToolError
from amrita_memory_pg.domain.knowledge import KnowledgeWindow, Suggestion, preview
from amrita_memory_pg.domain.records import SearchMode
from amrita_memory_pg.domain.validation import (
    MAX_ID_CHARS,
    MAX_KNOWLEDGE_SUMMARY_CHARS,
    MAX_KNOWLEDGE_TITLE_CHARS,
    MAX_QUERY_CHARS,
    MAX_SUGGESTION_REASON_CHARS,
)
from amrita_memory_pg.tools.args import Clamp, Integer, Text, ToolArgs, numbers_as_text
from amrita_memory_pg.tools.context import CycleContext, ToolContext
from amrita_memory_pg.tools.registry import Tool, ToolRegistry
from amrita_memory_pg.usecases.knowledge import KnowledgeCases

#: the table's ceiling; the configured knowledge_max_chars is checked by the write
MAX_BODY_CHARS = 100000
#: the reference's wire names of the chat-side reads, accepted as aliases (§15 D3)
CHAT_ALIASES = {
    "subconscious_knowledge_list": "knowledge_list",
    "subconscious_knowledge_read": "knowledge_read",
    "subconscious_knowledge_search": "knowledge_search",
}
#: the chat tools whose permission needs the caller's LitePerm nodes (adapters look)
READ_TOOLS = frozenset({"knowledge_list", "knowledge_read", "knowledge_search", *CHAT_ALIASES})
NO_CYCLE = "该工具只能在离线巩固循环（L3）中调用：缺少 cycle 上下文"
DRY_RUN = "演练模式（dry_run）：未写入"
SUGGESTED = {
    "create": "知识建议已提交，后台记忆管家将在下一轮推理中审查。",
    "update": "更新建议已提交，后台记忆管家将在下一轮推理中审查。",
}

Kid = Annotated[Text, Field(description="知识条目 ID（kid）", max_length=MAX_ID_CHARS)]
Title = Annotated[
    Text, Field(description="标题（一行，≤200 字）", max_length=MAX_KNOWLEDGE_TITLE_CHARS)
]
Summary = Annotated[
    Text,
    Field(description="摘要（≤1000 字，检索即匹配摘要）", max_length=MAX_KNOWLEDGE_SUMMARY_CHARS),
]
Body = Annotated[Text, Field(description="正文（Markdown，按行编号）", max_length=MAX_BODY_CHARS)]
StartLine = Annotated[Integer | None, Field(description="起始行（从 0 开始，含）")]
EndLine = Annotated[Integer | None, Field(description="结束行（不含；省略则到末尾）")]
Action = Annotated[Literal["create", "update"], BeforeValidator(numbers_as_text)]
#: read_memory's mode argument (tools/memory.py): the same values, default and refusal
ModeChoice = Annotated[SearchMode, BeforeValidator(numbers_as_text)]


class NoArgs(ToolArgs):
    pass


class ReadArgs(ToolArgs):
    kid: Kid
    start_line: StartLine = None
    end_line: EndLine = None


class SearchArgs(ToolArgs):
    query: Annotated[Text, Field(description="检索内容", max_length=MAX_QUERY_CHARS)]
    top_k: Annotated[Integer, Clamp(1, 50), Field(description="返回条数（1–50）")] = 5
    mode: Annotated[
        ModeChoice | None,
        Field(
            description="检索方式（可选）：hybrid=语义+关键词（默认，适合名称、数字、日期），"
            "vector=仅摘要语义相似度，keyword=仅关键词匹配（标题、摘要与正文）"
        ),
    ] = None


class SuggestArgs(ToolArgs):
    action: Annotated[Action, Field(description="create 新建条目，update 更新已有条目")]
    title: Title
    summary: Summary
    body: Body
    reason: Annotated[
        Text, Field(description="为什么值得收录", max_length=MAX_SUGGESTION_REASON_CHARS)
    ]
    kid: Annotated[
        Text | None,
        Field(description="要更新的条目 ID（action=update 时必填）", max_length=MAX_ID_CHARS),
    ] = None


class CreateArgs(ToolArgs):
    title: Title
    summary: Summary
    body: Body


class UpdateArgs(ToolArgs):
    kid: Kid
    title: Annotated[
        Text | None, Field(description="新标题（不变则省略）", max_length=MAX_KNOWLEDGE_TITLE_CHARS)
    ] = None
    summary: Annotated[
        Text | None,
        Field(
            description="新摘要（不变则省略；改变时重新嵌入）",
            max_length=MAX_KNOWLEDGE_SUMMARY_CHARS,
        ),
    ] = None
    body: Annotated[
        Text | None,
        Field(
            description="新正文；给出 start_line 时只替换 [start_line, end_line) 这些行（空串=删除这些行）",
            max_length=MAX_BODY_CHARS,
        ),
    ] = None
    start_line: StartLine = None
    end_line: EndLine = None


class DeleteArgs(ToolArgs):
    kid: Kid


ArgsT = TypeVar("ArgsT", bound=ToolArgs)
Handler = Callable[[ArgsT, ToolContext], Awaitable[dict[str, Any]]]


def _iso(value: datetime) -> str:
    return value.isoformat()


def _window(w: KnowledgeWindow) -> dict[str, Any]:
    return {
        "status": "success",
        "kid": w.kid,
        "title": w.title,
        "summary": w.summary,
        "body_lines": list(w.body_lines),
        "total_lines": w.total_lines,
        "range_start": w.range_start,
        "range_end": w.range_end,
    }


def _suggestion(s: Suggestion) -> dict[str, Any]:
    """The reference's queue entry, plus our id."""
    return {
        "id": s.id,
        "action": s.action,
        "title": s.title,
        "summary": s.summary,
        "body": s.body,
        "reason": s.reason,
        "kid": s.kid or "",
        "author": s.author_id,
        "timestamp": _iso(s.created_at),
    }


def _cycle(ctx: ToolContext) -> CycleContext:
    if ctx.cycle is None:
        raise ToolError(NO_CYCLE)
    return ctx.cycle


def suggestions_pending(context: Mapping[str, Any]) -> bool:
    """Whether a cycle's get_context reply reports knowledge suggestions waiting."""
    pending = context.get("pending_knowledge_suggestions")
    return isinstance(pending, Mapping) and int(pending.get("count") or 0) > 0


def knowledge_work(context: Mapping[str, Any]) -> bool:
    """Whether a cycle may create knowledge: suggestions waiting, or memories worth a
    knowledge entry (get_context's ``knowledge_candidates``, the distillation pre-pass)."""
    return suggestions_pending(context) or bool(context.get("knowledge_candidates"))


def register_knowledge_tools(
    chat: ToolRegistry | None, loop: ToolRegistry | None, knowledge: KnowledgeCases
) -> None:
    """Declare the chat tools on ``chat`` and the loop tools on ``loop`` (either may be None)."""

    def guarded(handler: Handler[ArgsT], *, reader: bool = False) -> Handler[ArgsT]:
        """Permission (chat reads), enablement, and KnowledgeError → the LLM's message."""

        async def run(args: ArgsT, ctx: ToolContext) -> dict[str, Any]:
            if reader:
                await knowledge.check_reader(ctx.user_id, ctx.roles, in_group=ctx.in_group)
            else:
                knowledge.check_enabled()
            try:
                return await handler(args, ctx)
            except KnowledgeError as exc:
                raise ToolError(str(exc)) from exc

        return run

    async def list_entries(args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        entries = await knowledge.entries()
        items = [
            {
                "kid": e.kid,
                "title": e.title,
                "summary_preview": preview(e.summary),
                "total_lines": e.total_lines,
                "char_count": e.char_count,
                "created_at": _iso(e.created_at),
                "updated_at": _iso(e.updated_at),
            }
            for e in entries
        ]
        return {"status": "success", "items": items, "total": len(items)}

    async def read_entry(args: ReadArgs, ctx: ToolContext) -> dict[str, Any]:
        return _window(await knowledge.read(args.kid, args.start_line, args.end_line))

    async def search_entries(args: SearchArgs, ctx: ToolContext) -> dict[str, Any]:
        mode = args.mode or knowledge.default_mode
        hits = await knowledge.search(args.query, args.top_k, mode=mode)
        items = []
        for h in hits:
            # release 1's keys first; distance is null in keyword mode (no vector)
            item: dict[str, Any] = {
                "kid": h.kid,
                "title": h.title,
                "summary": h.summary,
                "distance": h.distance,
                "score": round(h.score, 4),
            }
            if h.keyword_score:
                item["keyword_score"] = round(h.keyword_score, 4)
            items.append(item)
        return {"status": "success", "items": items, "total": len(items), "mode": mode}

    async def suggest(args: SuggestArgs, ctx: ToolContext) -> dict[str, Any]:
        sid, pending = await knowledge.suggest(
            author_id=ctx.user_id,
            action=args.action,
            title=args.title,
            summary=args.summary,
            body=args.body,
            reason=args.reason,
            kid=args.kid,
            partitions=[ctx.personal_key, *([ctx.group_key] if ctx.group_key else [])],
        )
        return {
            "status": "success",
            "message": SUGGESTED[args.action],
            "action": args.action,
            "id": sid,
            "pending": pending,
        }

    async def create(args: CreateArgs, ctx: ToolContext) -> dict[str, Any]:
        if _cycle(ctx).dry_run:
            return {"status": "success", "dry_run": True, "message": DRY_RUN}
        written = await knowledge.create(title=args.title, summary=args.summary, body=args.body)
        return {"status": "success", "kid": written.kid}

    async def update(args: UpdateArgs, ctx: ToolContext) -> dict[str, Any]:
        if _cycle(ctx).dry_run:
            return {"status": "success", "dry_run": True, "message": DRY_RUN, "kid": args.kid}
        written = await knowledge.update(
            args.kid,
            title=args.title,
            summary=args.summary,
            body=args.body,
            start_line=args.start_line,
            end_line=args.end_line,
        )
        return {
            "status": "success",
            "message": "知识更新成功",
            "kid": written.kid,
            "total_lines": written.total_lines,
            "char_count": written.char_count,
        }

    async def delete(args: DeleteArgs, ctx: ToolContext) -> dict[str, Any]:
        if _cycle(ctx).dry_run:
            return {"status": "success", "dry_run": True, "message": DRY_RUN, "kid": args.kid}
        await knowledge.delete(args.kid)
        return {"status": "success", "message": "知识删除成功", "kid": args.kid}

    async def read_suggestions(args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        if cycle.dry_run:
            # A rehearsal looks without claiming: the next real cycle still gets them.
            total, rows = await knowledge.pending_suggestions(limit=1000)
            shown = [
                {k: _iso(v) if isinstance(v, datetime) else v for k, v in row.items()}
                for row in rows
            ]
            return {"status": "success", "suggestions": shown, "total": total, "dry_run": True}
        claimed = await knowledge.claim_suggestions(cycle.cycle_id)
        return {
            "status": "success",
            "suggestions": [_suggestion(s) for s in claimed],
            "total": len(claimed),
        }

    def loop_only(handler: Handler[ArgsT]) -> Handler[ArgsT]:
        async def run(args: ArgsT, ctx: ToolContext) -> dict[str, Any]:
            _cycle(ctx)
            return await handler(args, ctx)

        return run

    if chat is not None:
        chat.register(
            Tool(
                name="knowledge_list",
                description="列出全局知识库的全部条目（kid、标题、摘要预览、行数）。只读，需要知识库权限。",
                args=NoArgs,
                handler=guarded(list_entries, reader=True),
                failure_prefix="列出知识库失败",
            )
        )
        chat.register(
            Tool(
                name="knowledge_read",
                description=(
                    "读取一个知识条目：标题、摘要与正文行（行号从 0 开始，可用 start_line/"
                    "end_line 读取 [start, end) 区间）。只读，需要知识库权限。"
                ),
                args=ReadArgs,
                handler=guarded(read_entry, reader=True),
                failure_prefix="读取知识失败",
            )
        )
        chat.register(
            Tool(
                name="knowledge_search",
                description="检索全局知识库（默认语义+关键词：摘要的语义相似度与标题、摘要、正文的关键词），"
                "返回 kid、标题、摘要、距离与得分。只读，需要知识库权限。",
                args=SearchArgs,
                handler=guarded(search_entries, reader=True),
                failure_prefix="检索知识库失败",
            )
        )
        chat.register(
            Tool(
                name="knowledge_suggest",
                description=(
                    "向后台记忆管家提交一条知识库建议（新建或更新条目），由离线巩固循环审查后决定是否采纳。"
                    "任何人可提交；队列有上限且每人每小时有次数限制。"
                ),
                args=SuggestArgs,
                handler=guarded(suggest),
                failure_prefix="提交知识建议失败",
            )
        )
        for alias, target in CHAT_ALIASES.items():
            chat.alias(alias, target)

    if loop is not None:
        # Offered to a cycle only when get_context reports knowledge work, since every
        # schema is paid on every call: all of them while users' suggestions are pending
        # (reviewing needs list/read/search to find the entry to update before creating
        # a new one); only create when the SQL pre-pass found knowledge candidates in the
        # partition (distillation: the pre-pass already checked that the base holds no
        # entry like them). A tool not offered still runs when called by name.
        # name, arguments, handler, description, failure prefix
        reviews: list[tuple[str, type[ToolArgs], Handler[Any], str, str]] = [
            (
                "subconscious_knowledge_list",
                NoArgs,
                loop_only(list_entries),
                "列出知识库条目。",
                "列出知识库失败",
            ),
            (
                "subconscious_knowledge_read",
                ReadArgs,
                loop_only(read_entry),
                "读知识条目，正文行 [start_line, end_line)。",
                "读取知识失败",
            ),
            ("subconscious_knowledge_create", CreateArgs, create, "新建知识条目。", "创建知识失败"),
            (
                "subconscious_knowledge_update",
                UpdateArgs,
                update,
                "更新知识条目；给 start_line 时 body 只替换 [start_line, end_line) 行。",
                "更新知识失败",
            ),
            ("subconscious_knowledge_delete", DeleteArgs, delete, "删除知识条目。", "删除知识失败"),
            (
                "subconscious_knowledge_search",
                SearchArgs,
                loop_only(search_entries),
                "检索知识库（语义+关键词，可选 mode）。",
                "检索知识库失败",
            ),
            (
                "subconscious_read_suggestions",
                NoArgs,
                read_suggestions,
                "读取待处理的知识库建议（本轮成功结束才算处理完）。",
                "读取知识建议失败",
            ),
        ]
        for name, args, handler, description, failure in reviews:
            loop.register(
                Tool(
                    name=name,
                    description=description,
                    args=args,
                    handler=guarded(handler),
                    failure_prefix=failure,
                    offer=knowledge_work
                    if name == "subconscious_knowledge_create"
                    else suggestions_pending,
                )
            )
