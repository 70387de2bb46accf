"""The L2 chat tools, compatible with the reference plugin (§4.1–4.5).

Names, arguments and JSON replies follow the reference so prompts written for it keep
working. Deliberate differences (its bugs, §15): the importance filter works (B1);
``created_at`` is aware UTC everywhere, one format (B4, B10); write errors come back
as clean envelopes (B5); ``read_memory`` has ``status`` and a clamped ``top_k`` (B11);
order is deterministic (W6); group memories are edited only by group admins, the
owner, superusers or their author (W2, configurable).

The second seed's model: ``category`` filters on read/list; scope ``global`` (bot-wide, readable by
everyone, written only by superusers — or the system and the CLI); memories a person
added (``source=user``) are refused to update/delete while ``protect_manual_memories``
is on (checked here for a clear reply, and again by the database).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from amrita_memory_pg.domain.errors import (
    MemoryPaused,
    PartitionFull,
    ProtectedMemory,
    ToolError,
)
from amrita_memory_pg.domain.importance import LABELS, ImportanceLabel, label_to_level
from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.domain.records import Category, MemoryRecord, Scope, SearchMode, parse_tags
from amrita_memory_pg.domain.trail import Recall
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAGS_CHARS,
    clamp,
)
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.args import Clamp, Integer, Range, Text, ToolArgs, numbers_as_text
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.registry import ToolRegistry, declare, declared
from amrita_memory_pg.usecases.forgetting import ForgetCases
from amrita_memory_pg.usecases.memories import MemoryCases, required_text
from amrita_memory_pg.usecases.values import MemoryChange, MemoryQuery, NewMemory

PREVIEW_CHARS = 50

#: importance label → the stored 1–10 range of its tier, for the read filter
TIER_RANGE = {"low": (1, 3), "medium": (4, 7), "high": (8, 10)}

# Choices: numbers arrive as text (``5`` → ``"5"``, then refused as not one of them),
# as the reference's string arguments did.
ToolScope = Annotated[Literal["group", "user", "global"], BeforeValidator(numbers_as_text)]
Importance = Annotated[ImportanceLabel, BeforeValidator(numbers_as_text)]
CategoryChoice = Annotated[Category, BeforeValidator(numbers_as_text)]
ModeChoice = Annotated[SearchMode, BeforeValidator(numbers_as_text)]

#: read_memory's top_k range (reference §4.2 recommendation B11); outside it the reply
#: says what was clamped instead of silently returning fewer.
TOP_K_MIN, TOP_K_MAX = 1, 50

ScopeArg = Annotated[
    ToolScope,
    Field(
        description="记忆范围：group=群共享（群内所有人可见），user=个人专属（群聊私聊互通），global=全局（所有对话可见，仅超级用户可写）。私聊中不可用 group。"
    ),
]
IdArg = Annotated[
    Text,
    Field(
        description="记忆 ID（write_memory / list_memory 返回的 memory_id）",
        max_length=MAX_ID_CHARS,
    ),
]


class WriteMemoryArgs(ToolArgs):
    content: Annotated[
        Text, Field(description="要记住的内容，一条记忆一个事实", max_length=MAX_CONTENT_CHARS)
    ]
    tags: Annotated[
        Text,
        Field(
            description="分类标签，多个用逗号分隔，例如 preference、project",
            max_length=MAX_TAGS_CHARS,
        ),
    ]
    importance: Annotated[Importance, Field(description="重要程度，决定遗忘速度")]
    scope: ScopeArg
    category: Annotated[
        CategoryChoice | None, Field(description="可选的类别：偏好/规则/事件/知识")
    ] = None


class ReadMemoryArgs(ToolArgs):
    query: Annotated[Text, Field(description="检索关键词，用空格分隔", max_length=MAX_QUERY_CHARS)]
    top_k: Annotated[
        Integer, Range(TOP_K_MIN, TOP_K_MAX), Field(description="返回条数（1–50）")
    ] = 5
    importance: Annotated[
        Importance | None, Field(description="只返回该重要程度的记忆（可选）")
    ] = None
    scope: ScopeArg
    tags: Annotated[
        Text | None,
        Field(
            description="只返回带有其中任一标签的记忆，逗号分隔（可选）", max_length=MAX_TAGS_CHARS
        ),
    ] = None
    category: Annotated[CategoryChoice | None, Field(description="只返回该类别的记忆（可选）")] = (
        None
    )
    mode: Annotated[
        ModeChoice | None,
        Field(
            description="检索方式（可选）：hybrid=语义+关键词（默认，适合人名、数字、日期），"
            "vector=仅语义相似度，keyword=仅关键词匹配"
        ),
    ] = None


class UpdateMemoryArgs(ToolArgs):
    id: IdArg
    content: Annotated[
        Text | None, Field(description="新的内容（不变则省略）", max_length=MAX_CONTENT_CHARS)
    ] = None
    tags: Annotated[
        Text | None, Field(description="新的标签（不变则省略）", max_length=MAX_TAGS_CHARS)
    ] = None
    importance: Annotated[Importance | None, Field(description="新的重要程度（不变则省略）")] = None
    scope: ScopeArg
    category: Annotated[CategoryChoice | None, Field(description="新的类别（不变则省略）")] = None


class DeleteMemoryArgs(ToolArgs):
    id: IdArg
    scope: ScopeArg


class MemoryWriteArgs(ToolArgs):
    """Monstrum's ``memory_write``: a new memory, or (with ``id``) a change of one."""

    id: Annotated[
        Text | None,
        Field(
            description="要更新的记忆 ID（memory_write / list_memory 返回的 memory_id）；"
            "省略则写入一条新记忆",
            max_length=MAX_ID_CHARS,
        ),
    ] = None
    content: Annotated[
        Text | None,
        Field(
            description="要记住的内容，一条记忆一个事实（写入新记忆时必填；更新时不变则省略）",
            max_length=MAX_CONTENT_CHARS,
        ),
    ] = None
    tags: Annotated[
        Text | None,
        Field(description="分类标签，多个用逗号分隔（可选）", max_length=MAX_TAGS_CHARS),
    ] = None
    importance: Annotated[
        Importance | None,
        Field(description="重要程度，决定遗忘速度（写入新记忆时省略即 medium）"),
    ] = None
    scope: ScopeArg
    category: Annotated[
        CategoryChoice | None, Field(description="可选的类别：偏好/规则/事件/知识")
    ] = None


class MemoryDeleteArgs(ToolArgs):
    id: Annotated[
        Text,
        Field(
            description="记忆 ID（memory_write / list_memory 返回的 memory_id）",
            max_length=MAX_ID_CHARS,
        ),
    ]
    scope: ScopeArg


class ForgetMemoryArgs(ToolArgs):
    scope: ScopeArg
    query: Annotated[
        Text | None,
        Field(description="用户要忘记的内容，用来找候选（不删除）", max_length=MAX_QUERY_CHARS),
    ] = None
    id: Annotated[
        Text | None, Field(description="确认后要忘记的记忆 ID", max_length=MAX_ID_CHARS)
    ] = None


class ListMemoryArgs(ToolArgs):
    limit: Annotated[Integer, Clamp(1, 50), Field(description="每页条数（1–50）")] = 10
    offset: Annotated[Integer, Clamp(0, None), Field(description="跳过的条数")] = 0
    scope: ScopeArg
    category: Annotated[CategoryChoice | None, Field(description="只列出该类别的记忆（可选）")] = (
        None
    )


@dataclass(frozen=True, slots=True)
class WriteNames:
    """The tool names a family's messages point the model to (each family names its own)."""

    write: str
    update: str
    delete: str


#: amrita_plugin_memory's names
REFERENCE_NAMES = WriteNames("write_memory", "update_memory", "delete_memory")
#: Monstrum's: one tool writes or (with an id) updates
MONSTRUM_NAMES = WriteNames("memory_write", "memory_write", "memory_delete")


#: delete_memory's and memory_delete's description and failure prefix (one tool, two names)
DELETE_DECLARATION = ("删除一条记忆。用户手动添加的记忆（source=user）不能删除。", "删除记忆失败")


def iso(value: datetime) -> str:
    """Aware UTC ISO-8601 with ``+00:00`` — the one format we store and return (B10)."""
    return value.isoformat()


def preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."


def resolve_scope(scope: str, ctx: ToolContext) -> tuple[Scope, str]:
    """(scope, partition key) for the speaker; the reference's wording for errors."""
    if scope == "user":
        return "user", ctx.personal_key
    if scope == "group":
        key = ctx.group_key
        if key is None:
            raise ToolError("当前不在群聊中，无法使用群共享记忆")
        return "group", key
    if scope == "global":
        return "global", GLOBAL_KEY
    raise ToolError(f"无效的 scope: {scope}")


#: the refusal of a global write by anyone but a superuser
GLOBAL_REFUSAL = (
    "无权写入🌐全局记忆：全局记忆对所有对话可见，只能由超级用户、系统或管理员通过 amrita-memory CLI 写入。"
    "请改用 scope=user（个人）或 scope=group（本群）"
)


def require_global_writer(scope: str, ctx: ToolContext, action: str) -> None:
    """Global memories are written only by superusers (and the system / CLI, not tools)."""
    if scope == "global" and not ctx.is_superuser:
        raise ToolError(GLOBAL_REFUSAL.replace("写入", action, 1))


def protected_refusal(action: str) -> ToolError:
    """The refusal of a change to a memory a person added (source=user)."""
    return ToolError(
        f"不能{action}这条记忆：它是人工手动添加的（source=user），自动流程和模型都不能修改或删除它。"
        "如需更改，请让用户本人或管理员通过 /memory 命令或 amrita-memory CLI 操作",
        source="user",
    )


def can_edit(record: MemoryRecord, ctx: ToolContext, settings: Settings) -> bool:
    """Personal memories: their owner. Group memories: admins, owner, superusers, the author."""
    if record.scope != "group" or settings.group_memory_edit == "anyone":
        return True
    return ctx.is_group_admin or ctx.is_superuser or record.author == ctx.user_id


def paused_refusal(partition: str, action: str) -> ToolError:
    """The refusal of a write to a paused scope (the database refuses it too, AMZ01)."""
    return ToolError(
        f"未能{action}：该作用域（{partition}）的记忆已被管理员暂停，暂停期间不读取也不写入记忆，"
        "什么都没有改变。请不要重试，正常回答用户即可",
        paused=True,
    )


def paused_reply(partition: str) -> dict[str, Any]:
    """read_memory / list_memory of a paused scope: a clear status, no memories."""
    return {
        "status": "paused",
        "message": f"该作用域（{partition}）的记忆已被管理员暂停：暂停期间不提供记忆，请直接回答用户",
    }


def recall_of(ctx: ToolContext) -> Recall:
    """Who recalls, for the access log: the chat tool, or the L3 loop's cycle."""
    if ctx.cycle is not None:
        return Recall("l3", ctx.cycle.target_key, f"cycle {ctx.cycle.cycle_id}")
    return Recall("tool", ctx.session_key, ctx.user_id)


def paused_read(exc: MemoryPaused) -> dict[str, Any]:
    """A read tool's reply for a paused scope (``Tool.on_paused``)."""
    return paused_reply(exc.partition_key)


def paused_write(action: str) -> Callable[[MemoryPaused], dict[str, Any]]:
    """A write tool's refusal for a paused scope (``Tool.on_paused``)."""

    def refuse(exc: MemoryPaused) -> dict[str, Any]:
        raise paused_refusal(exc.partition_key, action)

    return refuse


class MemoryTools:
    """The chat's L2 handlers: parse, check the speaker's rights, call the use case, reply.

    Embedding and model-mismatch failures and a paused scope are mapped once, at the
    registry's edge (``failure_prefix``, ``on_paused``)."""

    def __init__(
        self, cases: MemoryCases, settings: Settings, forgetting: ForgetCases | None = None
    ) -> None:
        self.cases = cases
        self.settings = settings
        #: deletes with their cascade and forgets (None: a plain delete, no forget tool)
        self.forgetting = forgetting

    def _refuse_protected(self, record: MemoryRecord, action: str) -> None:
        if record.source == "user" and self.settings.protect_manual_memories:
            raise protected_refusal(action)

    async def _editable(
        self, partition: str, memory_id: str, ctx: ToolContext, action: str
    ) -> MemoryRecord:
        """The memory ``ctx``'s speaker may ``action`` (修改 / 删除), else a refusal."""
        record = await self.cases.get(partition, memory_id)
        if record is None:
            raise ToolError("未找到指定ID的记忆")
        if not can_edit(record, ctx, self.settings):
            raise ToolError(
                f"无权{action}👥群共享记忆：仅群主、管理员、超级用户或该记忆的作者可以{action}"
            )
        self._refuse_protected(record, action)
        return record

    @declare(
        "write_memory",
        "写入一条长期记忆（L2 向量记忆库），用于保存之后可能用到的具体事实、事件、项目细节。"
        "身份与稳定偏好等每轮都需要的信息请写进备忘录（update_memo）。"
        "每个会话的记忆条数有上限，满了会被拒绝：先合并或删除旧记忆。",
        "写入记忆失败",
        on_paused=paused_write("写入"),
    )
    async def write_memory(self, args: WriteMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        return await self._write(
            REFERENCE_NAMES,
            ctx,
            scope=args.scope,
            content=args.content,
            tags=args.tags,
            importance=args.importance,
            category=args.category,
        )

    async def _write(
        self,
        names: WriteNames,
        ctx: ToolContext,
        *,
        scope: str,
        content: str,
        tags: str,
        importance: ImportanceLabel,
        category: Category | None,
    ) -> dict[str, Any]:
        """A new memory for the speaker (write_memory, memory_write without an id)."""
        scope_, partition = resolve_scope(scope, ctx)
        require_global_writer(scope_, ctx, "写入")
        text = required_text(content, "content 不能为空：请给出要记住的具体内容")
        new = NewMemory(
            partition_key=partition,
            scope=scope_,
            content=text,
            tags=parse_tags(tags),
            importance=label_to_level(importance),
            category=category,
            source="auto",
            author=ctx.user_id,
        )
        try:
            written = await self.cases.write(new)
        except PartitionFull as exc:
            raise ToolError(
                f"当前会话的记忆数量已达上限（{exc.limit} 条），未写入。"
                f"请先用 list_memory 查看，再用 {names.update} 合并相近的记忆或用 "
                f"{names.delete} 删除过时的记忆后重试",
                limit=exc.limit,
            ) from exc
        record = written.record
        reply: dict[str, Any] = {
            "memory_id": record.id,
            "tags": record.tags_text,
            "importance": record.importance_label if written.duplicate else importance,
            "scope": record.scope,
            "created_at": iso(record.created_at),
        }
        if record.category:
            reply["category"] = record.category
        if written.duplicate:
            # a retried write (its first reply was lost) returns the first one, not a duplicate
            reply["duplicate_of"] = record.id
            reply["message"] = "相同内容刚刚已写入过，返回已有的这条记忆，没有重复写入"
        reply["status"] = "success"
        return reply

    @declare(
        "read_memory",
        "检索长期记忆：默认语义相似度与关键词（人名、数字、日期）混合检索，再乘时间衰减排序"
        "（decay_score 越大越相关；distance 为语义距离，越小越相似）。",
        "检索记忆失败",
        on_paused=paused_read,
        read_only=True,
    )
    async def read_memory(self, args: ReadMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        _scope, partition = resolve_scope(args.scope, ctx)
        query = required_text(args.query, "query 不能为空：请给出检索关键词")
        label = args.importance
        top_k = clamp(args.top_k, TOP_K_MIN, TOP_K_MAX)
        found = await self.cases.search(
            MemoryQuery(
                partition_key=partition,
                text=query,
                top_k=top_k,
                importance=TIER_RANGE[label] if label else None,
                tags=parse_tags(args.tags) or None,
                category=args.category,
                mode=args.mode,
                recall=recall_of(ctx),
            )
        )
        hits = found.hits
        decay_on = self.settings.decay.enabled
        metadatas = []
        for hit in hits:
            record = hit.record
            meta: dict[str, Any] = {
                "scope": record.scope,
                "user_id": record.partition_key,
                "tags": record.tags_text,
                "importance": record.importance_label,
                "created_at": iso(record.created_at),
            }
            if record.category:
                meta["category"] = record.category
            meta["source"] = record.source
            meta["importance_level"] = record.importance
            meta["age_days"] = round(hit.age_days, 2)
            if decay_on:
                meta["decay_score"] = round(hit.decay_score, 4)
            if hit.keyword_score:
                meta["keyword_score"] = round(hit.keyword_score, 4)
            if hit.score is not None:
                # the ranking key; decay_score stays the reference's formula in every mode
                meta["score"] = round(hit.score, 4)
            metadatas.append(meta)
        # The reference's nested-list shape (one query → one inner list per field),
        # plus the status key it lacked (B11). Ordered by decay score when decay is on.
        reply: dict[str, Any] = {
            "status": "success",
            "ids": [[hit.record.id for hit in hits]],
            "documents": [[hit.record.content for hit in hits]],
            "metadatas": [metadatas],
            "distances": [[hit.distance for hit in hits]],
            "embeddings": None,
            "uris": None,
            "data": None,
            "included": ["documents", "metadatas", "distances"],
            "mode": found.mode,
        }
        if top_k != args.top_k:
            reply["top_k"] = top_k
            reply["notice"] = (
                f"top_k={args.top_k} 超出范围 {TOP_K_MIN}–{TOP_K_MAX}，已按 top_k={top_k} 检索"
            )
        return reply

    @declare(
        "update_memory",
        "修改一条已有记忆；未变化的字段请省略。用户手动添加的记忆（source=user）不能修改。",
        "更新记忆失败",
        on_paused=paused_write("修改"),
    )
    async def update_memory(self, args: UpdateMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        return await self._update(
            REFERENCE_NAMES,
            ctx,
            memory_id=args.id,
            scope=args.scope,
            change=(args.content, args.tags, args.importance, args.category),
        )

    async def _update(
        self,
        names: WriteNames,
        ctx: ToolContext,
        *,
        memory_id: str,
        scope: str,
        change: tuple[str | None, str | None, ImportanceLabel | None, Category | None],
    ) -> dict[str, Any]:
        """A change of one memory (update_memory, memory_write with an id); ``change`` is
        (content, tags, importance, category), None keeping a field."""
        scope_, partition = resolve_scope(scope, ctx)
        require_global_writer(scope_, ctx, "修改")
        content, tags, importance, category = change
        if all(value is None for value in change):
            raise ToolError(
                f"{names.update} 至少需要 content、tags、importance、category 之一；未修改任何内容"
            )
        record = await self._editable(partition, memory_id, ctx, "修改")
        memory_change = MemoryChange(
            content=(
                required_text(content, "content 不能为空：请给出要记住的具体内容")
                if content is not None
                else None
            ),
            tags=parse_tags(tags) if tags is not None else None,
            importance=label_to_level(importance) if importance else None,
            category=category,
        )
        try:
            # a fact the user changed: what was derived from it waits for the loop
            updated = await self.cases.change(partition, record.id, memory_change, cascade=True)
        except ProtectedMemory as exc:  # became protected between the read and the write
            raise protected_refusal("修改") from exc
        if updated is None:  # deleted between the read and the write
            raise ToolError("未找到指定ID的记忆")
        return {"status": "success", "message": "记忆更新成功", "id": updated.id}

    @declare("delete_memory", *DELETE_DECLARATION, on_paused=paused_write("删除"))
    async def delete_memory(self, args: DeleteMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        return await self._delete(ctx, memory_id=args.id, scope=args.scope)

    async def _delete(self, ctx: ToolContext, *, memory_id: str, scope: str) -> dict[str, Any]:
        scope_, partition = resolve_scope(scope, ctx)
        require_global_writer(scope_, ctx, "删除")
        record = await self._editable(partition, memory_id, ctx, "删除")
        reply: dict[str, Any] = {"status": "success", "message": "记忆删除成功", "id": record.id}
        try:
            if self.forgetting is None:
                if not await self.cases.delete(partition, record.id):
                    raise ToolError("未找到指定ID的记忆")
                return reply
            cascade = await self.forgetting.remove(partition, record.id)
        except ProtectedMemory as exc:
            raise protected_refusal("删除") from exc
        if cascade is None:
            raise ToolError("未找到指定ID的记忆")
        # additive to the reference's reply: what was derived from it, and what became of it
        if cascade.deleted or cascade.withheld:
            reply["derived"] = {"deleted": len(cascade.deleted), "withheld": len(cascade.withheld)}
        return reply

    @declare(
        "forget_memory",
        "用户要你忘掉某件事时调用：先只给 query（用户的原话）找出候选记忆，确认是哪一条后再只给 id "
        "调用；忘记会删除这条记忆、由它整理出的画像/知识/备忘录内容、说过它的聊天记录和修改历史，"
        "不可恢复。用户手动添加的记忆（source=user）请让用户用 /memory 命令忘记。",
        "忘记记忆失败",
        on_paused=paused_write("忘记"),
    )
    async def forget_memory(self, args: ForgetMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        if self.forgetting is None:
            raise ToolError("忘记功能不可用")
        scope, partition = resolve_scope(args.scope, ctx)
        require_global_writer(scope, ctx, "忘记")
        memory_id = (args.id or "").strip()
        if not memory_id:
            query = required_text(
                args.query or "", "请给出 query（用户要忘记的内容）或 id（要忘记的记忆）"
            )
            found = await self.forgetting.find(partition, query)
            if not found:
                raise ToolError(f"没有找到与「{query}」相关的记忆；没有忘记任何内容")
            return {
                "status": "confirm",
                "message": "找到以下记忆，尚未忘记任何内容；确认是哪一条后，用它的 id 再调用 forget_memory",
                "candidates": [
                    {"id": r.id, "content": preview(r.content), "source": r.source} for r in found
                ],
            }
        record = await self._editable(partition, memory_id, ctx, "忘记")
        try:
            cascade = await self.forgetting.forget(
                partition, [record.id], requested_by="chat", request_chat=ctx.session_key
            )
        except ProtectedMemory as exc:
            raise protected_refusal("忘记") from exc
        return {
            "status": "success",
            "message": "已忘记这条记忆及由它得出的内容",
            "id": record.id,
            "forgotten": {
                "derived_deleted": len(cascade.deleted),
                "derived_withheld": len(cascade.withheld),
                "chat_lines": len(cascade.chat_lines),
            },
            "note": "回复用户时不要复述被忘记的内容",
        }

    @declare(
        "memory_write",
        "写入一条长期记忆，或带上 id 修改一条已有记忆（未变化的字段请省略）。"
        "身份与稳定偏好等每轮都需要的信息请写进备忘录（update_memo）。"
        "用户手动添加的记忆（source=user）不能修改；每个会话的记忆条数有上限。",
        "写入记忆失败",
        on_paused=paused_write("写入"),
    )
    async def memory_write(self, args: MemoryWriteArgs, ctx: ToolContext) -> dict[str, Any]:
        """Monstrum's write: an update when ``id`` names a memory, else a new memory
        (tags optional, importance medium unless given)."""
        if args.id is not None:
            return await self._update(
                MONSTRUM_NAMES,
                ctx,
                memory_id=args.id,
                scope=args.scope,
                change=(args.content, args.tags, args.importance, args.category),
            )
        if args.content is None:
            raise ToolError(
                "调用 memory_write 写入新记忆时必须带有 content 参数；要修改已有记忆请带上它的 id"
            )
        return await self._write(
            MONSTRUM_NAMES,
            ctx,
            scope=args.scope,
            content=args.content,
            tags=args.tags or "",
            importance=args.importance or "medium",
            category=args.category,
        )

    @declare("memory_delete", *DELETE_DECLARATION, on_paused=paused_write("删除"))
    async def memory_delete(self, args: MemoryDeleteArgs, ctx: ToolContext) -> dict[str, Any]:
        return await self._delete(ctx, memory_id=args.id, scope=args.scope)

    @declare(
        "list_memory",
        "分页列出记忆（标签 + ID + 内容预览），每页最多 50 条。",
        "列出记忆失败",
        on_paused=paused_read,
        read_only=True,
    )
    async def list_memory(self, args: ListMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        _scope, partition = resolve_scope(args.scope, ctx)
        limit, offset = args.limit, args.offset
        page, total = await self.cases.page(
            partition, limit=limit, offset=offset, category=args.category
        )
        if total == 0:
            # The reference's exact shape for an empty partition (no has_more/next_offset).
            return {
                "status": "success",
                "memories": [],
                "total": 0,
                "offset": offset,
                "limit": limit,
            }
        items = [
            {
                "id": r.id,
                "scope": r.scope,
                "tags": r.tags_text,
                "importance": r.importance_label,
                "content_preview": preview(r.content),
                # what the reference did not show (additive keys: old prompts keep working)
                "importance_level": r.importance,
                "category": r.category,
                "source": r.source,
            }
            for r in page
        ]
        next_offset = offset + len(page)
        has_more = next_offset < total
        return {
            "status": "success",
            "memories": items,
            "total": total,
            "offset": offset,
            "limit": limit,
            "has_more": has_more,
            "next_offset": next_offset if has_more else None,
        }


def register_memory_tools(
    registry: ToolRegistry,
    cases: MemoryCases,
    settings: Settings,
    forgetting: ForgetCases | None = None,
) -> MemoryTools:
    """Declare the L2 tools on ``registry``: the reference's five and Monstrum's
    ``memory_write`` / ``memory_delete`` (the deletes with the cascade when ``forgetting``
    is given; ``forget_memory`` is :func:`register_forget_tool`'s, after them).
    ``tool_names`` picks which write tools are offered; the others are accepted when
    called, so a prompt written for either keeps working."""
    tools = MemoryTools(cases, settings, forgetting)
    assert LABELS == ("low", "medium", "high")  # the enum order the LLM is shown
    reference = settings.tool_names in ("reference", "both")
    monstrum = settings.tool_names in ("monstrum", "both")
    for handler, offered in (
        (tools.write_memory, reference),
        (tools.read_memory, True),
        (tools.update_memory, reference),
        (tools.delete_memory, reference),
        (tools.list_memory, True),
        (tools.memory_write, monstrum),
        (tools.memory_delete, monstrum),
    ):
        registry.register(declared(handler), offered=offered)
    return tools


def register_forget_tool(
    registry: ToolRegistry, cases: MemoryCases, settings: Settings, forgetting: ForgetCases
) -> None:
    """``forget_memory``: ours, so it follows the reference's tools in the schemas."""
    registry.register(declared(MemoryTools(cases, settings, forgetting).forget_memory))
