"""The L3 loop's re-derivation of withheld rows: ``subconscious_rederive``.

A delete, forget or change (``sql/functions/lineage.sql``) withholds what was derived
from the row that went or changed and from other rows too: a memory or knowledge entry
leaves its table, a profile line or summary leaves the profile, a memo sentence leaves
the memo, and a task waits in ``rederive_task`` for the partition's next cycle. The
cycle's ``subconscious_get_context`` lists the tasks it claimed (``rederive``), with the
withheld text, what to leave out or take in, and the texts of the sources left; this tool
writes the row again from them (its lineage: exactly those sources) or, with an empty
``content``, drops it. A task the cycle does not finish goes back to the queue when the
cycle ends.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.domain.lineage import Derivation, deriving
from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit
from amrita_memory_pg.domain.records import Category, Scope
from amrita_memory_pg.domain.validation import MAX_CONTENT_CHARS
from amrita_memory_pg.storage.lineage import LineageRepository, RederiveTask
from amrita_memory_pg.tools.args import Integer, Text, ToolArgs
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.loop_common import loop_cycle
from amrita_memory_pg.tools.registry import declare
from amrita_memory_pg.usecases.knowledge import KnowledgeCases
from amrita_memory_pg.usecases.memories import MemoryCases
from amrita_memory_pg.usecases.memos import MemoCases
from amrita_memory_pg.usecases.profiles import ProfileCases
from amrita_memory_pg.usecases.values import NewMemory

REDERIVE = "subconscious_rederive"
#: a knowledge summary is its body's first line, cut to the summary's ceiling
SUMMARY_CHARS = 1000
KIND_LABELS = {
    "memory": "记忆",
    "knowledge": "知识",
    "profile_line": "画像行",
    "profile_summary": "画像摘要",
    "memo_sentence": "备忘录",
}
#: how a task reads in get_context (one string each: keys would be paid per item)
TASK_FORMAT = "id|类型|原内容|要去掉或改动的|剩余来源"
TASK_CHARS = 120
RULE_CHARS = 80
SOURCE_CHARS = 80


def _cut(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def brief(task: RederiveTask, sources: list[str]) -> str:
    """One task as get_context lists it."""
    rules: list[str] = []
    for item in task.about:
        was, now = item.get("was"), item.get("now")
        if was and now:
            rules.append(f"「{_cut(str(was), RULE_CHARS)}」已改为「{_cut(str(now), RULE_CHARS)}」")
        elif was:
            rules.append(f"去掉「{_cut(str(was), RULE_CHARS)}」")
    if not rules:
        rules.append("有来源已被彻底删除，只按剩余来源重写")
    held = _cut(task.held_text, TASK_CHARS) or "（原内容已删除）"
    left = "；".join(_cut(s, SOURCE_CHARS) for s in sources) or "无"
    return f"{task.id}|{KIND_LABELS.get(task.kind, task.kind)}|{held}|{'；'.join(rules)}|{left}"


class RederiveArgs(ToolArgs):
    task_id: Annotated[Integer, Field(description="rederive 列表里的 id")]
    content: Annotated[
        Text,
        Field(description="重写后的内容；空字符串=丢弃这条", max_length=MAX_CONTENT_CHARS),
    ]
    title: Annotated[
        Text | None, Field(description="知识条目的新标题（仅知识；省略则不变）", max_length=200)
    ] = None


class LoopRederive:
    """The re-derivation tool of one loop registry."""

    def __init__(
        self,
        lineage: LineageRepository,
        memories: MemoryCases,
        memos: MemoCases,
        profiles: ProfileCases,
        knowledge: KnowledgeCases,
    ) -> None:
        self.lineage = lineage
        self.memories = memories
        self.memos = memos
        self.profiles = profiles
        self.knowledge = knowledge

    @declare(
        REDERIVE,
        "按剩余来源重写一条暂停使用的内容（rederive 列表），content 为空则丢弃。",
        "重写失败",
        offer=lambda c: bool(c.get("rederive")),
    )
    async def rederive(self, args: RederiveArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        task = await self.lineage.task(cycle.target_key, args.task_id)
        if task is None:
            raise ToolError(f"没有 id 为 {args.task_id} 的重写任务（可能已完成）")
        content = args.content.strip()
        reply: dict[str, Any] = {"status": "success", "task_id": task.id}
        if cycle.dry_run:
            reply["dry_run"] = True
            return reply
        if content:
            # The row written again is made from exactly the sources left.
            derivation = Derivation("l3", cycle.cycle_id, fixed=task.sources, infer=False)
            with deriving(derivation):
                reply["written"] = await self._write(task, content, cycle.cycle_id, args.title)
        else:
            reply["dropped"] = True
        await self.lineage.finish(cycle.target_key, task.id)
        return reply

    async def _write(
        self, task: RederiveTask, content: str, cycle_id: int, title: str | None
    ) -> str:
        held = task.held or {}
        if task.kind == "memory":
            scope: Scope = held.get("scope") or ("group" if "_Group_" in task.row_key else "user")
            category: Category | None = held.get("category")
            written = await self.memories.write(
                NewMemory(
                    partition_key=task.row_key,
                    scope=scope,
                    content=content,
                    tags=tuple(held.get("tags") or ()),
                    importance=int(held.get("importance") or 5),
                    category=category,
                    source="system",
                    author="subconscious",
                ),
                idempotent=False,
            )
            return written.record.id
        if task.kind == "knowledge":
            summary = content.splitlines()[0][:SUMMARY_CHARS]
            named = (title or "").strip() or str(held.get("title") or summary[:50])
            created = await self.knowledge.create(title=named, summary=summary, body=content)
            return created.kid
        if task.kind in ("profile_line", "profile_summary"):
            current = await self.profiles.get(task.row_key)
            edit = (
                ProfileEdit(current.summary, tuple(content.splitlines()))
                if task.kind == "profile_line"
                else ProfileEdit(content, ())
            )
            actor = ProfileActor("loop", cycle_id=cycle_id)
            await self.profiles.edit(task.row_key, edit, actor, dry_run=False)
            return task.kind
        if task.kind == "memo_sentence":
            await self.memos.append(task.row_key, content)
            return task.kind
        raise ToolError(f"无法重写类型 {task.kind}")
