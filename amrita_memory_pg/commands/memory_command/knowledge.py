"""``/memory knowledge list | read | search | suggest | grant | revoke``.

The chat tools' permission rules; grant/revoke for superusers only. A refused reader
gets the tools' sentence, which names nothing — and gets it before any argument of
theirs is judged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from amrita_memory_pg.commands.memory_command.base import SEARCH_TOP_K, Services, Step
from amrita_memory_pg.commands.memory_command.parsing import search_mode
from amrita_memory_pg.commands.memory_command.texts import USAGE_KNOWLEDGE
from amrita_memory_pg.domain.knowledge import preview
from amrita_memory_pg.domain.records import SearchMode
from amrita_memory_pg.domain.validation import parse_count
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.knowledge import KnowledgeCases

#: lines ``/memory knowledge read <kid>`` shows when no range is given
KNOWLEDGE_READ_LINES = 40


@dataclass(frozen=True, slots=True)
class ReadRequest:
    kid: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    mode: SearchMode | None


@dataclass(frozen=True, slots=True)
class Suggestion:
    title: str
    summary: str
    body: str
    reason: str


def parse_read(args: str) -> ReadRequest | str:
    """``<kid> [起始行] [结束行]``, or the sentence refusing it."""
    parts = args.split()
    if not parts:
        return "请提供条目 ID，例如: /memory knowledge read 0a1b2c3d"
    numbers = [parse_count(p, lo=0, hi=10**9) for p in parts[1:3]]
    if any(n is None for n in numbers):
        return "行号应为非负整数，例如: /memory knowledge read 0a1b2c3d 0 20"
    start = numbers[0] if numbers else 0
    end = numbers[1] if len(numbers) > 1 else (start or 0) + KNOWLEDGE_READ_LINES
    return ReadRequest(parts[0], start or 0, end or 0)


def parse_search(args: str) -> SearchRequest | str:
    """``[mode=…] <关键词>``, or the sentence refusing it."""
    mode, query, refused = search_mode(args)
    if refused is not None:
        return refused
    if not query:
        return "请提供搜索关键词，例如: /memory knowledge search 猫的饮食"
    return SearchRequest(query, mode)


def parse_suggestion(args: str) -> Suggestion | str:
    """``<标题> | <摘要> | <正文> [| <理由>]``, or the usage."""
    fields = [f.strip() for f in args.split("|")]
    if len(fields) < 3 or not all(fields[:3]):
        return "用法: /memory knowledge suggest <标题> | <摘要> | <正文> [| <理由>]"
    title, summary, body = fields[:3]
    return Suggestion(title, summary, body, reason=" | ".join(fields[3:]))


def knowledge(services: Services, ctx: ToolContext, action: str, args: str) -> str | Step:
    kb = services.cases.knowledge
    if action in ("grant", "revoke"):
        if not ctx.is_superuser:
            return "❌ 仅超级用户可授予或撤销知识库权限"
        parts = args.split()
        if len(parts) not in (1, 2):
            return f"用法: /memory knowledge {action} <用户ID>"
        node = parts[1] if len(parts) == 2 else "memory.knowledge"
        change = _grant if action == "grant" else _revoke
        return Step("knowledge", parts[0], partial(change, kb, parts[0], node, ctx.user_id))
    if action == "suggest":
        suggestion = parse_suggestion(args)
        if isinstance(suggestion, str):
            return suggestion
        return Step("knowledge", "a suggestion", partial(_suggest, kb, ctx.user_id, suggestion))
    if action == "list":
        return _reading(kb, ctx, action, partial(_list, kb))
    if action == "read":
        return _reading(kb, ctx, action, partial(_read, kb, parse_read(args)))
    if action == "search":
        return _reading(kb, ctx, action, partial(_search, kb, parse_search(args)))
    return "用法:\n" + "\n".join(USAGE_KNOWLEDGE)


def _reading(
    kb: KnowledgeCases, ctx: ToolContext, action: str, read: Callable[[], Awaitable[str]]
) -> Step:
    """A read, after the use case's reader check (a Refusal: its sentence)."""

    async def run() -> str:
        await kb.check_reader(ctx.user_id, ctx.roles, in_group=ctx.in_group)
        return await read()

    return Step("knowledge", action, run)


async def _list(kb: KnowledgeCases) -> str:
    entries = await kb.entries()
    if not entries:
        return "📚 知识库为空"
    lines = [f"📚 知识库（共 {len(entries)} 条）:"]
    lines.extend(
        f"[{e.kid}] {e.title} — {preview(e.summary, 40)}（{e.total_lines} 行）" for e in entries
    )
    return "\n".join(lines)


async def _read(kb: KnowledgeCases, request: ReadRequest | str) -> str:
    if isinstance(request, str):
        return request
    window = await kb.read(request.kid, request.start, request.end)
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


async def _search(kb: KnowledgeCases, request: SearchRequest | str) -> str:
    if isinstance(request, str):
        return request
    hits = await kb.search(request.query, SEARCH_TOP_K, mode=request.mode)
    if not hits:
        return f"📚 知识库中未找到与「{request.query}」相关的条目"
    ranked_by_score = (request.mode or kb.default_mode) != "vector"
    order = "按得分排序，越高越相关" if ranked_by_score else "距离越小越相似"
    lines = [f"🔍 知识库搜索「{request.query}」结果（{order}）:"]
    for h in hits:
        line = f"[{h.kid}] {h.title} — {preview(h.summary, 40)}"
        if h.distance is not None:
            line += f" | 距离: {h.distance:.4f}"
        if ranked_by_score:
            line += f" | 得分: {h.score:.4f}"
        lines.append(line)
    return "\n".join(lines)


async def _suggest(kb: KnowledgeCases, author: str, suggestion: Suggestion) -> str:
    sid, pending = await kb.suggest(
        author_id=author,
        action="create",
        title=suggestion.title,
        summary=suggestion.summary,
        body=suggestion.body,
        reason=suggestion.reason,
    )
    if kb.service.settings.subconscious.enabled:
        return f"✅ 知识建议 #{sid} 已提交，后台记忆管家将在下一轮推理中审查（待处理 {pending} 条）"
    # No loop runs to review it: say who does instead of promising a review.
    return (
        f"✅ 知识建议 #{sid} 已提交，等待管理员审查（待处理 {pending} 条；"
        "后台记忆管家未开启，不会自动处理）"
    )


async def _grant(kb: KnowledgeCases, user: str, node: str, by: str) -> str:
    added = await kb.grant(user, node, by=by)
    return f"✅ 已授予 {user} {node}" if added else f"{user} 已有 {node}"


async def _revoke(kb: KnowledgeCases, user: str, node: str, by: str) -> str:
    removed = await kb.revoke(user, node)
    return f"✅ 已撤销 {user} {node}" if removed else f"{user} 没有 {node}"
