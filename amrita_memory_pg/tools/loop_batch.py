"""``subconscious_batch_edit``: all of a cycle's edits in one tool call and one transaction.

Why: every model call of a cycle re-sends the whole conversation, so a model that makes
one edit per turn pays for the conversation once per edit. The cycle's decisions are
known after one look at the pre-pass (which groups to merge, which items to drop); one
call that takes them all lets a cycle end in one or two model calls whatever the
model's habit.

How, and why this way (a failed batch rolls back, and one bad operation must not
leave half a batch behind):

1. every operation is parsed with the argument model of its single tool and planned by
   that tool's own planner (:mod:`~amrita_memory_pg.tools.loop_edits`): the same rules
   — ``source=user`` memories only flagged, the memo's cap, the profile's ranges — the
   same messages, nothing written. The partition is read once for the whole batch
   (:class:`Snapshot`), and an operation may not name a memory an earlier one deletes;
2. if any operation is refused, NOTHING is applied: the reply lists every refused
   operation by number with its reason, so the model corrects them and sends the whole
   batch again (the alternative, applying the valid ones, would leave the model to work
   out which half of its plan happened);
3. otherwise the new texts are embedded in one request (before the transaction: no
   lock is held during an HTTP call), and the operations are applied in order through
   the same use cases as the single tools, in ONE database transaction
   (:func:`~amrita_memory_pg.storage.pg.session.pinned`): a failure in any of them
   (a memory deleted meanwhile, the database) rolls all of them back, and the reply
   names the operation.

The pause is checked before the call (the registry's gate) and again by each use case
and the database's own trigger inside the transaction. In a dry run the batch is
planned and answered as if done. The single tools stay, and a cycle is offered them
instead with ``[subconscious] batch_edits = false``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.domain.errors import MemoryPaused, ToolError
from amrita_memory_pg.services.consolidation import BATCH_EDIT
from amrita_memory_pg.tools.args import ArgumentError, ToolArgs, parse_args
from amrita_memory_pg.tools.consolidation import (
    DeleteArgs,
    LoopTools,
    MergeArgs,
    RewriteMemoArgs,
    UpdateArgs,
    WriteArgs,
)
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.failures import failure_cause
from amrita_memory_pg.tools.loop_common import loop_cycle
from amrita_memory_pg.tools.loop_edits import Applied, Planned, Snapshot
from amrita_memory_pg.tools.profile import UpdateProfileArgs, edit_profile
from amrita_memory_pg.tools.registry import declare
from amrita_memory_pg.usecases.profiles import ProfileCases

#: operations per call: a cycle's pre-pass lists at most 20 groups and 10 stale items
MAX_OPS = 100

#: op → (the single tool whose arguments and rules it takes, the keys it accepts
#: besides ``op``: None = all of that tool's). ``importance`` and ``tags`` are shorthands
#: of ``update`` (still accepted; the schema shows ``update`` only).
OPS: dict[str, tuple[str, type[ToolArgs], frozenset[str] | None]] = {
    "merge": ("subconscious_merge_memories", MergeArgs, None),
    "update": ("subconscious_update_memory", UpdateArgs, None),
    "delete": ("subconscious_delete_memory", DeleteArgs, None),
    "write": ("subconscious_write_memory", WriteArgs, None),
    "importance": ("subconscious_update_memory", UpdateArgs, frozenset({"id", "importance"})),
    "tags": ("subconscious_update_memory", UpdateArgs, frozenset({"id", "tags"})),
    "memo": ("subconscious_rewrite_memo", RewriteMemoArgs, None),
    "profile": ("subconscious_update_profile", UpdateProfileArgs, None),
}
#: ops that name existing memories (the partition is read once for them)
MEMORY_OPS = frozenset({"merge", "update", "delete", "importance", "tags"})
#: ops a batch holds at most once (a memo is rewritten whole; a profile's line numbers
#: would refer to a profile the first op already changed)
ONCE = frozenset({"memo", "profile"})

#: the operations as the model is shown them: one line of grammar, not a JSON schema
#: per key — every schema is re-sent with every call of a cycle, and a property list
#: with a second list of which keys each op takes cost twice this (350 cl100k tokens
#: against 170 for the whole tool); each op is checked on the call by its single
#: tool's argument model, which names a wrong or missing key
OPS_GRAMMAR = (
    "每项一个对象，op 为操作名：merge{keep_id,merge_ids[],content?,importance?} "
    "update{id,content?,tags?,importance?} delete{id} write{content,tags,importance} "
    "memo{content} profile{summary,new_lines,start_line?,end_line?}"
    "（?=可省；importance=low|medium|high；tags 逗号分隔；memo 为备忘录全文）"
)


def _json_list(value: object) -> object:
    """``ops`` sent as JSON text (a model that encodes the list twice): the list."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class BatchArgs(ToolArgs):
    ops: Annotated[
        list[dict[str, Any]],
        BeforeValidator(_json_list),
        Field(min_length=1, max_length=MAX_OPS),
        WithJsonSchema({"type": "array", "items": {"type": "object"}, "description": OPS_GRAMMAR}),
    ]


class _OpFailed(Exception):
    """An operation failed while the batch was applied: the transaction rolls back."""

    def __init__(self, number: int, op: str, cause: Exception) -> None:
        super().__init__(f"operation {number} ({op}) failed")
        self.number = number
        self.op = op
        self.cause = cause


def _answer(reply: Mapping[str, Any]) -> dict[str, Any]:
    """One operation's result: its single tool's reply without the envelope."""
    return {k: v for k, v in reply.items() if k not in ("status", "message", "dry_run")}


class LoopBatch:
    """The batched edit tool on the single tools' planners."""

    def __init__(
        self,
        tools: LoopTools,
        profiles: ProfileCases,
        transaction: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
        *,
        memo_ops: bool,
    ) -> None:
        self.tools = tools
        self.profiles = profiles
        #: one database transaction around every statement of the block (``pinned``)
        self.transaction = transaction
        #: whether the memo may be rewritten (``[subconscious] enable_memory_compress``)
        self.memo_ops = memo_ops

    @declare(
        BATCH_EDIT,
        "本轮全部修改一次提交：一个事务内按序执行，任何一项无效则整批不执行。",
        "批量修改失败",
    )
    async def batch_edit(self, args: BatchArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        plans = await self._plan(cycle, args.ops)
        if cycle.dry_run:
            cycle.changed += sum(plan.changes for _, plan in plans)
            return {
                "status": "success",
                "dry_run": True,
                "applied": 0,
                "results": [_answer(plan.reply) for _, plan in plans],
            }
        return await self._apply(cycle, plans)

    async def _plan(
        self, cycle: CycleContext, ops: list[dict[str, Any]]
    ) -> list[tuple[str, Planned]]:
        """Every operation checked, in order, nothing written; any refused → ToolError
        listing all the refused ones."""
        kinds = [op.get("op") if isinstance(op, dict) else None for op in ops]
        snapshot = Snapshot(
            await self.tools.loop.repo.memories(cycle.target_key)
            if MEMORY_OPS.intersection(k for k in kinds if isinstance(k, str))
            else ()
        )
        plans: list[tuple[str, Planned]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, raw in enumerate(ops, start=1):
            kind = str(raw.get("op", ""))
            try:
                if kind in ONCE and kind in seen:
                    raise ToolError(f"一批最多一个 {kind} 操作")
                seen.add(kind)
                plan = await self._plan_one(cycle, kind, raw, snapshot)
            except ToolError as exc:
                errors.append({"op": number, "message": exc.message})
                continue
            snapshot.delete(plan.gone, number)
            plans.append((kind, plan))
        if errors:
            raise ToolError(
                f"{len(errors)} 个操作无效，整批没有执行（什么都没有改变）："
                "按 errors 修正后重新提交整批",
                errors=errors,
            )
        return plans

    async def _plan_one(
        self, cycle: CycleContext, kind: str, raw: Mapping[str, Any], snapshot: Snapshot
    ) -> Planned:
        if kind not in OPS:
            raise ToolError(f"op 只能是 {' | '.join(OPS)}，收到 {kind or '（空）'}")
        tool, model, keys = OPS[kind]
        fields = {k: v for k, v in raw.items() if k != "op"}
        if keys is not None:
            extra = sorted(set(fields) - keys)
            if extra:
                raise ToolError(
                    f"{kind} 操作只接受 {', '.join(sorted(keys))}，不接受 {', '.join(extra)}"
                )
            missing = sorted(k for k in keys if fields.get(k) is None)
            if missing:
                raise ToolError(f"{kind} 操作必须带有 {', '.join(missing)}")
        try:
            args = parse_args(tool, model, fields)
        except ArgumentError as exc:
            raise ToolError(exc.message) from exc
        if isinstance(args, MergeArgs):
            return await self.tools.plan_merge(cycle, args, snapshot)
        if isinstance(args, UpdateArgs):
            return await self.tools.plan_update(cycle, args, snapshot)
        if isinstance(args, DeleteArgs):
            return await self.tools.plan_delete(cycle, args, snapshot)
        if isinstance(args, WriteArgs):
            return await self.tools.plan_write(cycle, args)
        if isinstance(args, RewriteMemoArgs):
            if not self.memo_ops:
                raise ToolError(
                    "备忘录压缩已关闭（enable_memory_compress = false），不能改写备忘录"
                )
            return await self.tools.plan_memo(cycle, args)
        assert isinstance(args, UpdateProfileArgs)
        return await self._plan_profile(cycle, args)

    async def _plan_profile(self, cycle: CycleContext, args: UpdateProfileArgs) -> Planned:
        """Checked against the stored profile by a dry run of the same edit."""
        checked = await edit_profile(self.profiles, cycle, args, dry_run=True)

        async def apply() -> Applied:
            return await edit_profile(self.profiles, cycle, args, dry_run=False), 0

        return Planned(checked, 0, apply)

    async def _apply(self, cycle: CycleContext, plans: list[tuple[str, Planned]]) -> dict[str, Any]:
        texts = [text for _, plan in plans for text in plan.texts]
        before = cycle.changed
        results: list[dict[str, Any]] = []
        try:
            async with self.tools.memories.service.embedded(texts), self.transaction():
                for number, (kind, plan) in enumerate(plans, start=1):
                    try:
                        reply, changed = await plan.apply()
                    except MemoryPaused:
                        raise
                    except Exception as exc:
                        raise _OpFailed(number, kind, exc) from exc
                    cycle.changed += changed
                    results.append(_answer(reply))
        except _OpFailed as failed:
            cycle.changed = before
            cause = failed.cause
            # inside the transaction whatever failed rolled everything back (a broken
            # connection too: the server aborts an uncommitted transaction)
            why = cause.message if isinstance(cause, ToolError) else failure_cause(cause)
            raise ToolError(
                f"第 {failed.number} 个操作（{failed.op}）失败：{why}。整批已回滚，什么都没有改变",
                failed_op=failed.number,
            ) from cause
        except BaseException:
            cycle.changed = before
            raise
        return {"status": "success", "applied": len(results), "results": results}
