"""``/memory <scope> list | search | delete | add``: the memories of one scope."""

from __future__ import annotations

import math
from functools import partial

from amrita_memory_pg.commands.memory_command.base import (
    LABELS,
    SEARCH_TOP_K,
    Scope,
    Services,
    Step,
)
from amrita_memory_pg.commands.memory_command.parsing import (
    Options,
    page_number,
    parse_options,
    search_mode,
)
from amrita_memory_pg.domain.decay import SCORE_LEGEND
from amrita_memory_pg.domain.importance import MEDIUM
from amrita_memory_pg.domain.lineage import describe_cascade
from amrita_memory_pg.domain.records import CATEGORY_NAMES, SOURCE_NAMES, MemoryRecord, SearchMode
from amrita_memory_pg.domain.trail import Recall
from amrita_memory_pg.domain.validation import InvalidInput
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.forgetting import ForgetCases
from amrita_memory_pg.usecases.memories import MemoryCases
from amrita_memory_pg.usecases.values import MemoryQuery, NewMemory

PAGE_SIZE = 10
PREVIEW_CHARS = 50


def _preview(text: str) -> str:
    flat = text.replace("\r", " ").replace("\n", " ")
    return flat[:PREVIEW_CHARS] + ("..." if len(flat) > PREVIEW_CHARS else "")


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


# ---------------------------------------------------------------------------- list


def list_memories(services: Services, scope: Scope, key: str, args: str) -> str | Step:
    """``list [页码] [-c 类别] [-i 最低重要度]`` (the options anywhere)."""
    try:
        options = parse_options(args, anywhere=True)
    except InvalidInput as exc:
        return exc.reason
    return Step("list", key, partial(_list_page, services.cases.memories, scope, key, options))


async def _list_page(memories: MemoryCases, scope: Scope, key: str, options: Options) -> str:
    label = LABELS[scope]
    filtered = options.category is not None or options.importance is not None
    shown = ""
    if options.category:
        shown += f" -c {options.category}"
    if options.importance is not None:
        shown += f" -i {options.importance}"
    if filtered:
        _first, total = await memories.page(
            key, limit=1, category=options.category, min_importance=options.importance
        )
    else:
        total = await memories.count(key)
    if total == 0:
        return f"{label} 暂无记忆" + (f"（筛选{shown}）" if filtered else "")
    pages = math.ceil(total / PAGE_SIZE)
    page = page_number(options.rest, pages)
    records, total = await memories.page(
        key,
        limit=PAGE_SIZE,
        offset=(page - 1) * PAGE_SIZE,
        category=options.category,
        min_importance=options.importance,
    )
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


# ---------------------------------------------------------------------------- search


def search_memories(
    services: Services, ctx: ToolContext, scope: Scope, key: str, args: str
) -> str | Step:
    """``search [mode=…] [-c 类别] <关键词>`` (the mode may also follow the category)."""
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
    recall = Recall("command", ctx.session_key, ctx.user_id)
    run = partial(
        _search, services.cases.memories, scope, key, query, options.category, mode, recall
    )
    return Step("search", key, run, label=LABELS[scope])


async def _search(
    memories: MemoryCases,
    scope: Scope,
    key: str,
    query: str,
    category: str | None,
    mode: SearchMode | None,
    recall: Recall,
) -> str:
    label = LABELS[scope]
    asked = MemoryQuery(
        key,
        query,
        top_k=SEARCH_TOP_K,
        category=category,  # type: ignore[arg-type]
        mode=mode,
        recall=recall,
    )
    hits = (await memories.search(asked)).hits
    if not hits:
        return f"{label} 未找到与「{query}」相关的记忆"
    lines = [f"🔍 {label} 搜索「{query}」结果（距离越小越相似）:"]
    lines.extend(
        f"{format_line(hit.record)} | 距离: "
        + ("-" if hit.distance is None else f"{hit.distance:.4f}")
        + f" | 衰减分: {hit.decay_score:.4f}"
        for hit in hits
    )
    lines.append(SCORE_LEGEND)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- delete


def delete_memory(
    services: Services, ctx: ToolContext, scope: Scope, key: str, arg: str
) -> str | Step:
    """``delete <ID 或前缀>``; in a group only for its admins, checked before the id is
    looked up, so a refused member learns nothing (the reference checked after, and let
    superusers and role-less speakers through/out)."""
    if not arg:
        return "请提供要删除的记忆 ID"
    if scope == "group" and not ctx.is_group_admin:
        return "❌ 无权删除👥群共享记忆，仅管理员和群主可删除"
    cases = services.cases
    return Step("delete", key, partial(_delete, cases.memories, cases.forgetting, scope, key, arg))


async def _delete(
    memories: MemoryCases, forgetting: ForgetCases, scope: Scope, key: str, arg: str
) -> str:
    label = LABELS[scope]
    not_found = f"{label} 未找到匹配的记忆: {arg}\n提示: 使用 /memory {scope} list 查看全部 ID"
    matches = await memories.find_by_prefix(key, arg)
    if not matches:
        return not_found
    if len(matches) > 1:
        ids = "\n".join(f"  - {m.id}" for m in matches)
        return f"{label} 前缀 '{arg}' 匹配多条记忆，请提供更完整的 ID:\n{ids}"
    memory_id = matches[0].id
    done = await forgetting.remove(key, memory_id, by_person=True)
    if done is None:
        return not_found
    reply = f"✅ 已删除 {label} 记忆: [{memory_id}]"
    derived = [line for line in describe_cascade(done) if not line.startswith("忘记")]
    if derived:
        reply += "\n由它得出的内容:\n" + "\n".join(f"  - {line}" for line in derived)
    return reply


# ---------------------------------------------------------------------------- add


def add_memory(
    services: Services, ctx: ToolContext, scope: Scope, key: str, args: str
) -> str | Step:
    """``add [-c 类别] [-i 1-10] <内容>``: a manual entry (``source=user``), importance
    medium unless given, the speaker as author."""
    try:
        options = parse_options(args)
    except InvalidInput as exc:
        return exc.reason
    if not options.rest:
        return (
            f"请提供要添加的记忆内容，例如: /memory {scope} add 我喜欢猫（可选 -c 类别 -i 重要度）"
        )
    return Step(
        "add", key, partial(_add, services.cases.memories, ctx.user_id, scope, key, options)
    )


async def _add(memories: MemoryCases, author: str, scope: Scope, key: str, options: Options) -> str:
    new = NewMemory(
        partition_key=key,
        scope=scope,
        content=options.rest,
        importance=options.importance or MEDIUM,
        category=options.category,  # type: ignore[arg-type]
        source="user",
        author=author,
    )
    record = (await memories.write(new, idempotent=False)).record
    details = f"重要度 {record.importance}"
    if record.category:
        details = f"{CATEGORY_NAMES[record.category]}，" + details
    return f"✅ 已添加 {LABELS[scope]} 记忆: [{record.id}]（{details}，手动条目）"
