"""The L3 loop's memory and memo tools (reference §8.8 tools 1–6, 11; D4) and the
registration of all its own tools (the survey: :mod:`~amrita_memory_pg.tools.loop_survey`,
the chat and the user: :mod:`~amrita_memory_pg.tools.loop_chat`).

Same names, arguments and replies as the reference, acting on the cycle's target
partition (``ctx.cycle.target_key``); without a cycle every tool refuses. They call the
same use cases as the chat tools (:mod:`amrita_memory_pg.usecases`): the loop's tools
differ only in the rules the loop works under and in their replies —

- the importance filter works (B1), bad arguments are refused instead of silently
  replaced (an invalid importance is an error, not ``medium``), the partition cap holds
  for the loop's writes too (W1), and the loop's memories are ``source=system``;
- memories a user added by hand (``source=user``) are never deleted or rewritten: the
  loop may only add tags to flag them;
- ``subconscious_iter_stop`` checks *this* cycle's flags (B3);
- ``subconscious_read_memo`` / ``subconscious_rewrite_memo`` let the loop compress the
  target's L1 memo near its cap, as the reference's README promised (D4);
- every tool but ``subconscious_iter_stop`` checks first that the target is not paused
  (the registry's gate): a paused target is neither read nor written;
- a memory is named by its id or by a unique prefix of at least 8 characters (the
  pre-pass shows those: ~4 tokens instead of ~17 for each id the cycle re-sends), and a
  reply names it as the call did.

Each edit is planned first (checked, nothing written) and then applied
(:mod:`~amrita_memory_pg.tools.loop_edits`): ``subconscious_batch_edit``
(:mod:`~amrita_memory_pg.tools.loop_batch`) plans a whole cycle's edits with the same
planners and applies them in one transaction. With ``[subconscious] batch_edits`` (the
default) the cycle is offered the batch instead of the single edit tools, which still
run when called by name.

In a dry run every writing tool checks its input and answers as if done, writing nothing.
Embedding and model-mismatch failures are mapped once, at the registry's edge.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from amrita_memory_pg.domain.consolidation import CycleContext, is_private_key
from amrita_memory_pg.domain.errors import MemoTooLong, PartitionFull, ToolError
from amrita_memory_pg.domain.importance import label_to_level
from amrita_memory_pg.domain.records import MemoryRecord, Scope, parse_tags
from amrita_memory_pg.domain.trail import Recall
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAGS_CHARS,
)
from amrita_memory_pg.services.consolidation import ITER_STOP, LoopDeps
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.args import Clamp, Integer, Text, ToolArgs, numbers_as_text
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.loop_chat import LoopChat
from amrita_memory_pg.tools.loop_common import Importance, NoArgs, loop_cycle, preview
from amrita_memory_pg.tools.loop_edits import (
    Applied,
    Lookup,
    Planned,
    StoreLookup,
    existing,
)
from amrita_memory_pg.tools.loop_survey import LoopSurvey, cursor_encode
from amrita_memory_pg.tools.memo import too_long_error
from amrita_memory_pg.tools.memory import TIER_RANGE, iso
from amrita_memory_pg.tools.registry import (
    BoundHandler,
    ToolRegistry,
    declare,
    declared,
    not_offered,
)
from amrita_memory_pg.usecases.memories import MemoryCases, required_text
from amrita_memory_pg.usecases.memos import MemoCases
from amrita_memory_pg.usecases.values import MemoryChange, MemoryQuery, NewMemory

MAX_MERGE_IDS = 50
MAX_MERGE_IDS_CHARS = MAX_MERGE_IDS * (MAX_ID_CHARS + 1)
NO_CONTEXT = "本轮未调用 subconscious_get_context，周期无效。请先取当前环境再决定是否整理记忆"
USER_PROTECTED = (
    "这条记忆是用户手动添加的（source=user），整理循环不能删除它，也不能修改它的内容或重要程度；"
    "如需标记，只能用 subconscious_update_memory 追加标签（保留原有标签）"
)


def _storable_ids(text: str) -> str:
    if "\x00" in text:
        raise ValueError("merge_ids 含有 NUL 字符")
    return text


# ---------------------------------------------------------------------------- arguments


class ReadArgs(ToolArgs):
    query: Annotated[Text, Field(description="关键词", max_length=MAX_QUERY_CHARS)]
    top_k: Annotated[Integer, Clamp(1, 50)] = 5
    importance: Importance | None = None


class WriteArgs(ToolArgs):
    content: Annotated[Text, Field(description="一条一个事实", max_length=MAX_CONTENT_CHARS)]
    tags: Annotated[Text, Field(description="逗号分隔", max_length=MAX_TAGS_CHARS)]
    importance: Importance


class UpdateArgs(ToolArgs):
    id: Annotated[Text, Field(max_length=MAX_ID_CHARS)]
    content: Annotated[Text | None, Field(max_length=MAX_CONTENT_CHARS)] = None
    tags: Annotated[Text | None, Field(max_length=MAX_TAGS_CHARS)] = None
    importance: Importance | None = None


class DeleteArgs(ToolArgs):
    id: Annotated[Text, Field(max_length=MAX_ID_CHARS)]


def _id_list(value: object) -> object:
    """merge_ids as one string: a JSON array of ids is joined with commas."""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return numbers_as_text(value)


class MergeArgs(ToolArgs):
    keep_id: Annotated[Text, Field(description="保留的记忆", max_length=MAX_ID_CHARS)]
    merge_ids: Annotated[
        str,
        BeforeValidator(_id_list),
        AfterValidator(_storable_ids),
        Field(description="并入后删除的记忆 ID，逗号分隔", max_length=MAX_MERGE_IDS_CHARS),
    ]
    content: Annotated[
        Text | None, Field(description="合并后的内容（省略则不变）", max_length=MAX_CONTENT_CHARS)
    ] = None
    importance: Importance | None = None


class ListArgs(ToolArgs):
    limit: Annotated[Integer, Clamp(1, 200)] = 10


class StopArgs(ToolArgs):
    summary: Annotated[Text, Field(description="一两句话", max_length=2000)]


class RewriteMemoArgs(ToolArgs):
    content: Annotated[Text, Field(description="压缩后的全文")]


# ---------------------------------------------------------------------------- handlers


class LoopTools:
    """The loop's memory, memo and stop handlers on the shared use cases."""

    def __init__(self, memories: MemoryCases, memos: MemoCases, loop: LoopDeps) -> None:
        self.memories = memories
        self.memos = memos
        self.loop = loop

    # -- L2
    @declare(
        "subconscious_read_memory",
        "语义检索记忆。",
        "检索记忆失败",
    )
    async def read_memory(self, args: ReadArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        query = required_text(args.query, "query 不能为空：请给出检索关键词")
        found = await self.memories.search(
            MemoryQuery(
                partition_key=cycle.target_key,
                text=query,
                top_k=args.top_k,
                importance=TIER_RANGE[args.importance] if args.importance else None,
                now=self.loop.clock(),
                recall=Recall("l3", cycle.target_key, f"cycle {cycle.cycle_id}"),
            )
        )
        hits = found.hits
        return {
            "status": "success",
            "ids": [[h.record.id for h in hits]],
            "documents": [[h.record.content for h in hits]],
            "metadatas": [
                [
                    {
                        "tags": h.record.tags_text,
                        "importance": h.record.importance_label,
                        "source": h.record.source,
                        "created_at": iso(h.record.created_at),
                        "decay_score": round(h.decay_score, 4),
                    }
                    for h in hits
                ]
            ],
            "distances": [[h.distance for h in hits]],
        }

    @declare(
        "subconscious_write_memory",
        "新增一条记忆。",
        "写入记忆失败",
    )
    async def write_memory(self, args: WriteArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        return await self.run(cycle, await self.plan_write(cycle, args))

    async def plan_write(self, cycle: CycleContext, args: WriteArgs) -> Planned:
        """A new memory of the target (``source=system``), under the partition cap."""
        content = required_text(args.content, "content 不能为空")
        scope: Scope = "user" if is_private_key(cycle.target_key) else "group"
        tags = parse_tags(args.tags)
        importance = label_to_level(args.importance)

        async def apply() -> Applied:
            new = NewMemory(
                partition_key=cycle.target_key,
                scope=scope,
                content=content,
                tags=tags,
                importance=importance,
                source="system",
                author="subconscious",
                now=self.loop.clock(),
            )
            try:
                written = await self.memories.write(new, idempotent=False)
            except PartitionFull as exc:
                raise ToolError(
                    f"记忆数量已达上限（{exc.limit} 条），未写入。请先合并或删除过时的记忆",
                    limit=exc.limit,
                ) from exc
            return {"status": "success", "id": written.record.id}, 1

        return Planned({"status": "success", "id": None}, 1, apply, texts=(content,))

    # -- edits: each one planned (checked, nothing written), then applied (loop_edits)
    def lookup(self, cycle: CycleContext) -> StoreLookup:
        return StoreLookup(self.memories, cycle.target_key)

    async def run(self, cycle: CycleContext, plan: Planned) -> dict[str, Any]:
        """A single tool's planned edit: answered as if done in a dry run, else made."""
        if cycle.dry_run:
            cycle.changed += plan.changes
            return {**plan.reply, "dry_run": True}
        reply, changed = await plan.apply()
        cycle.changed += changed
        return reply

    async def plan_update(self, cycle: CycleContext, args: UpdateArgs, lookup: Lookup) -> Planned:
        if args.content is None and args.tags is None and args.importance is None:
            raise ToolError("至少给出 content、tags、importance 之一；未修改任何内容")
        record = await existing(lookup, args.id)
        tags = parse_tags(args.tags) if args.tags is not None else None
        content = args.content.strip() if args.content is not None else None
        if content == "":
            raise ToolError("content 不能为空")
        flag_only = record.source == "user"
        if flag_only:
            rewrites = (content is not None and content != record.content) or (
                args.importance is not None and args.importance != record.importance_label
            )
            drops_tags = tags is not None and not set(record.tags) <= set(tags)
            if rewrites or drops_tags or tags is None:
                raise ToolError(USER_PROTECTED)
        reply = {"status": "success", "message": "记忆更新成功", "id": args.id}
        change = MemoryChange(
            content=content,
            tags=tags,
            importance=label_to_level(args.importance) if args.importance else None,
        )

        async def apply() -> Applied:
            updated = await self.memories.change(
                cycle.target_key, record.id, change, flag_only=flag_only, now=self.loop.clock()
            )
            if updated is None:
                raise ToolError(f"未找到ID为 {args.id} 的记忆")
            return reply, 1

        fresh = content is not None and content != record.content and not flag_only
        return Planned(reply, 1, apply, texts=(content,) if fresh and content else ())

    async def plan_delete(self, cycle: CycleContext, args: DeleteArgs, lookup: Lookup) -> Planned:
        record = await existing(lookup, args.id)
        if record.source == "user":
            raise ToolError(USER_PROTECTED)
        reply = {"status": "success", "message": "记忆删除成功", "id": args.id}

        async def apply() -> Applied:
            if not await self.memories.delete(cycle.target_key, record.id):
                raise ToolError(f"未找到ID为 {args.id} 的记忆")
            return reply, 1

        return Planned(reply, 1, apply, gone=(record.id,))

    async def plan_merge(self, cycle: CycleContext, args: MergeArgs, lookup: Lookup) -> Planned:
        """One duplicate group: keep one memory (optionally rewritten), delete the others.
        Every id is checked first; any problem refuses the whole merge."""
        keep_ref = args.keep_id.strip()
        refs: list[str] = []
        for raw in args.merge_ids.replace("，", ",").split(","):
            ref = raw.strip()
            if ref and ref != keep_ref and ref not in refs:
                refs.append(ref)
        if not refs:
            raise ToolError("merge_ids 至少要有一个不同于 keep_id 的记忆 ID；未合并任何内容")
        if len(refs) > MAX_MERGE_IDS:
            raise ToolError(f"merge_ids 最多 {MAX_MERGE_IDS} 个；未合并任何内容")
        keep = await existing(lookup, keep_ref)
        others: list[MemoryRecord] = []
        for ref in refs:
            record = await lookup.find(ref)
            if record is None:
                raise ToolError(f"未找到ID为 {ref} 的记忆；未合并任何内容")
            if record.source == "user":
                raise ToolError(f"{ref}: {USER_PROTECTED}；未合并任何内容")
            if record.id != keep.id and record not in others:
                others.append(record)
        if not others:
            raise ToolError("merge_ids 至少要有一个不同于 keep_id 的记忆 ID；未合并任何内容")
        content = args.content.strip() if args.content is not None else None
        if content == "":
            raise ToolError("content 不能为空；未合并任何内容")
        if content == keep.content:
            content = None
        if keep.source == "user" and (
            content is not None
            or (args.importance is not None and args.importance != keep.importance_label)
        ):
            raise ToolError(f"keep_id {keep_ref}: {USER_PROTECTED}；未合并任何内容")
        # The merged memory keeps every tag of the group (no information lost).
        tags = list(keep.tags)
        for record in others:
            tags.extend(t for t in record.tags if t not in tags)
        change = MemoryChange(
            content=content,
            tags=tags if tags != list(keep.tags) else None,
            importance=(
                label_to_level(args.importance)
                if args.importance and keep.source != "user"
                else None
            ),
        )
        reply: dict[str, Any] = {"status": "success", "id": keep_ref, "deleted": len(others)}

        async def apply() -> Applied:
            merged = await self.memories.merge(
                cycle.target_key, keep.id, [r.id for r in others], change, now=self.loop.clock()
            )
            if merged is None:
                raise ToolError(f"未找到ID为 {keep_ref} 的记忆；未合并任何内容")
            _, deleted = merged
            return {**reply, "deleted": len(deleted)}, 1 + len(deleted)

        return Planned(
            reply,
            1 + len(others),
            apply,
            gone=tuple(r.id for r in others),
            texts=(content,) if content else (),
        )

    @declare(
        "subconscious_update_memory",
        "修改一条记忆，省略的字段不变。",
        "更新记忆失败",
    )
    async def update_memory(self, args: UpdateArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        return await self.run(cycle, await self.plan_update(cycle, args, self.lookup(cycle)))

    @declare(
        "subconscious_delete_memory",
        "删除一条记忆。",
        "删除记忆失败",
    )
    async def delete_memory(self, args: DeleteArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        return await self.run(cycle, await self.plan_delete(cycle, args, self.lookup(cycle)))

    @declare(
        "subconscious_merge_memories",
        "合并一组重复：保留 keep_id（可给合并后的 content/importance），删除 merge_ids；"
        "一次调用一组，全部成功或全部不做。",
        "合并记忆失败",
    )
    async def merge_memories(self, args: MergeArgs, ctx: ToolContext) -> dict[str, Any]:
        """One duplicate group in one call and one transaction."""
        cycle = loop_cycle(ctx)
        return await self.run(cycle, await self.plan_merge(cycle, args, self.lookup(cycle)))

    @declare(
        "subconscious_list_memory",
        "列出前 limit 条记忆的预览。",
        "列出记忆失败",
        # superseded by the pre-pass and duplicate_helper's pages (still accepted)
        offer=lambda c: False,
    )
    async def list_memory(self, args: ListArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        page, total = await self.memories.page(cycle.target_key, limit=args.limit)
        return {
            "status": "success",
            "memories": [
                {
                    "id": r.id,
                    "tags": r.tags_text,
                    "importance": r.importance_label,
                    "source": r.source,
                    "content_preview": preview(r.content),
                }
                for r in page
            ],
            "total": total,
        }

    # -- the cycle
    @declare(
        ITER_STOP,
        "结束本轮（可与修改同一轮调用）。",
        "结束失败",
    )
    async def iter_stop(self, args: StopArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        if not cycle.context_fetched:
            raise ToolError(NO_CONTEXT)
        cycle.summary = args.summary.strip()
        cycle.stopped = True
        return {"status": "acknowledged", "message": "推理循环已确认结束"}

    # -- L1 (D4)
    @declare(
        "subconscious_read_memo",
        "读备忘录（L1）全文。",
        "读取备忘录失败",
        offer=lambda c: bool(c.get("memo_hint")),
    )
    async def read_memo(self, args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        memo = await self.memos.read(cycle.target_key)
        return {
            "status": "success",
            "content": memo.content,
            "chars": memo.chars,
            "max_chars": self.memos.max_chars,
        }

    async def plan_memo(self, cycle: CycleContext, args: RewriteMemoArgs) -> Planned:
        content = args.content.strip()
        if not content:
            raise ToolError(
                "content 不能为空：压缩后的备忘录不能是空的（清空备忘录不是整理循环的职责）"
            )
        limit = self.memos.max_chars
        try:
            await self.memos.check_fits(cycle.target_key, content, appending=False)
        except MemoTooLong as exc:
            raise too_long_error(exc) from exc
        reply = {"status": "success", "chars": len(content), "max_chars": limit}

        async def apply() -> Applied:
            try:
                written = await self.memos.replace(cycle.target_key, content, now=self.loop.clock())
            except MemoTooLong as exc:
                raise too_long_error(exc) from exc
            return {**reply, "chars": written.chars}, 0

        return Planned(reply, 0, apply)

    @declare(
        "subconscious_rewrite_memo",
        "用压缩后的全文替换备忘录（L1），保留关键事实，不超过上限。",
        "改写备忘录失败",
        offer=lambda c: bool(c.get("memo_hint")),
    )
    async def rewrite_memo(self, args: RewriteMemoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        return await self.run(cycle, await self.plan_memo(cycle, args))


def register_loop_tools(
    registry: ToolRegistry,
    memories: MemoryCases,
    memos: MemoCases,
    loop: LoopDeps,
    settings: Settings,
) -> LoopTools:
    """Declare the loop's tools 1–11, 19 and the memo tools on ``registry``."""
    tools = LoopTools(memories, memos, loop)
    sent: set[int] = set()
    survey = LoopSurvey(memos, loop, settings, sent)
    chat = LoopChat(loop, settings, sent)
    # The schemas' order; each tool is declared on its handler (``@declare``), with a
    # description short on purpose: every schema is re-sent with every model call of a
    # cycle, the system prompt says how to work. ``offer``: shown only when the cycle's
    # get_context says the tool has something to do (a tool not shown still runs).
    handlers: list[BoundHandler] = [
        tools.merge_memories,
        tools.update_memory,
        tools.delete_memory,
        tools.write_memory,
        tools.read_memory,
        tools.list_memory,
        survey.duplicate_helper,
        tools.iter_stop,
        chat.read_sessions,
        chat.read_chat_context,
        chat.send_to_user,
        survey.get_memory_stats,
        survey.get_context,
    ]
    if settings.subconscious.enable_memory_compress:
        handlers += [tools.read_memo, tools.rewrite_memo]
    # With the batch tool offered (tools/loop_batch.py) the single edit tools are not:
    # each schema is paid on every call; they still run when called by name.
    batched = settings.subconscious.batch_edits
    singles = {
        tools.merge_memories,
        tools.update_memory,
        tools.delete_memory,
        tools.write_memory,
        tools.rewrite_memo,
    }
    for handler in handlers:
        tool = declared(handler)
        if batched and handler in singles:
            tool = dataclasses.replace(tool, offer=not_offered)
        registry.register(tool)
    return tools


__all__ = ["LoopTools", "cursor_encode", "register_loop_tools"]
