"""The L3 loop's survey of its target (reference §8.8 tools 4, 7 and 19): the cycle's
context with the SQL pre-pass (duplicate groups, cleanup candidates, knowledge
candidates), the store's statistics and the paged duplicate helper.

``subconscious_duplicate_helper``'s clusters come from the SQL pre-pass
(``duplicate_pairs_v1``), and ``candidates_only`` lists only their members — the reason
a cycle reads a handful of candidates instead of the whole store. Every tool here reads
only; the registry's gate refuses them all while the target is paused.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from amrita_memory_pg.domain.activity import FALLBACK_TZ, resolve_timezone
from amrita_memory_pg.domain.consolidation import (
    CycleContext,
    clusters,
    is_private_key,
    short_ids,
)
from amrita_memory_pg.domain.keys import is_personal_key
from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.domain.validation import MAX_TAGS_CHARS
from amrita_memory_pg.services.consolidation import LoopDeps
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.args import Integer, Text, ToolArgs, numbers_as_text
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.loop_common import Importance, NoArgs, loop_cycle, preview
from amrita_memory_pg.tools.loop_rederive import TASK_FORMAT
from amrita_memory_pg.tools.memory import iso
from amrita_memory_pg.tools.profile import NO_PROFILE_YET, PROFILE_NEWS
from amrita_memory_pg.tools.registry import declare
from amrita_memory_pg.usecases.memos import MemoCases

SortBy = Annotated[Literal["created_at", "importance", "length"], BeforeValidator(numbers_as_text)]

#: get_context's pre-pass: at most this many duplicate groups / cleanup candidates, and
#: each content cut at this length (the model can read a memory in full if it must)
CONTEXT_GROUPS = 20
CONTEXT_CLEANUP = 10
CONTEXT_CHARS = 80
IMPORTANCE_RANK = {"high": 0, "medium": 1, "low": 2}

#: get_context's knowledge candidates: at most this many listed (the count says the rest),
#: each its content only, cut at this length (what create needs: no id, ~20 tokens on
#: every call), and a fact counts as shared when this many OTHER partitions hold it
CONTEXT_KNOWLEDGE = 5
CONTEXT_KNOWLEDGE_CHARS = 200
DISTILL_MIN_PARTITIONS = 2


def _brief(record: MemoryRecord, short: str, *, importance: bool = True) -> str:
    """A memory as get_context's pre-pass shows it: what a merge or cleanup decision
    needs, named by its short id (``short_ids``: the loop's tools take it back) —
    ``id|importance|content``, ``id|user|…`` for a memory a user added by hand.
    ``importance=False`` for the cleanup list, whose items are all low (the main
    template says how the lists read: said once there, not once per cycle here)."""
    user = "user|" if record.source == "user" else ""
    content = preview(record.content, CONTEXT_CHARS)
    level = f"{record.importance_label or 'medium'}|" if importance else ""
    return f"{short}|{level}{user}{content}"


def said(reply: dict[str, Any]) -> dict[str, Any]:
    """get_context's reply without the keys that say nothing (null, empty, false, no
    pending suggestion): the reply stays in the conversation for every call of the
    cycle, and ~15 such keys are ~100 tokens of it. A missing key reads as its empty
    value (the offers use ``.get``)."""
    pending = reply.get("pending_knowledge_suggestions")
    if isinstance(pending, dict) and not pending.get("count"):
        reply = {k: v for k, v in reply.items() if k != "pending_knowledge_suggestions"}
    return {k: v for k, v in reply.items() if k == "status" or not _silent(v)}


def _silent(value: object) -> bool:
    """None, False, or an empty text, list or object (a zero says something)."""
    return value is None or value is False or (isinstance(value, str | list | dict) and not value)


class DuplicateArgs(ToolArgs):
    tag: Annotated[Text | None, Field(description="标签串完全相等", max_length=MAX_TAGS_CHARS)] = (
        None
    )
    importance: Importance | None = None
    sort_by: SortBy = "created_at"
    limit: Annotated[Integer, Field(description="1–200")] = 40
    cursor: Annotated[Text | None, Field(description="next_cursor", max_length=2000)] = None
    similarity_threshold: Annotated[float | None, Field(description="余弦相似度")] = None
    candidates_only: Annotated[bool, Field(description="只列候选重复组成员")] = False


def cursor_encode(sort_by: str, key: str | int, memory_id: str) -> str:
    raw = json.dumps([sort_by, key, memory_id], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_decode(cursor: str | None, sort_by: str) -> tuple[str | int, str] | None:
    """(key, id) of a cursor, or None (start over) for anything that does not fit."""
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    if not isinstance(value, list) or len(value) != 3 or value[0] != sort_by:
        return None
    key, memory_id = value[1], value[2]
    want_str = sort_by == "created_at"
    if want_str and not isinstance(key, str):
        return None
    if not want_str and (isinstance(key, bool) or not isinstance(key, int)):
        return None
    if not isinstance(memory_id, str) or not memory_id:
        return None
    return key, memory_id


def _sort_key(record: MemoryRecord, sort_by: str) -> str | int:
    if sort_by == "importance":
        return IMPORTANCE_RANK.get(record.importance_label, 1)
    if sort_by == "length":
        return -len(record.content)  # longest first
    return iso(record.created_at)


class LoopSurvey:
    """get_context, get_memory_stats and duplicate_helper for one loop registry."""

    def __init__(
        self, memos: MemoCases, loop: LoopDeps, settings: Settings, sent: set[int]
    ) -> None:
        self.memos = memos
        self.loop = loop
        self.sub = settings.subconscious
        #: cycles that already queued their one proactive message (shared with LoopChat)
        self.sent = sent

    @declare(
        "subconscious_get_context",
        "当前环境（本轮开头已由系统调用）。",
        "获取环境失败",
        offer=lambda c: False,
    )
    async def get_context(self, args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        now = self.loop.clock()
        stale: list[str] = []
        tz = resolve_timezone(self.sub.idle_timezone)
        fallback = tz is FALLBACK_TZ
        if fallback:
            stale.append("timezone")
        local = now.astimezone(tz)
        reply: dict[str, Any] = {
            "status": "success",
            "now": local.strftime("%Y-%m-%d %H:%M:%S"),
            "timezone": "UTC+08:00" if fallback else self.sub.idle_timezone,
            "timezone_fallback": fallback,
            "weekday": local.strftime("%A"),
        }
        last = await self.loop.repo.last_run(cycle.target_key)
        reply["last_run_at"] = last.ended_at.astimezone(tz).isoformat() if last else None
        reply["minutes_since_last_run"] = (
            int((now - last.ended_at).total_seconds() // 60) if last else None
        )
        reply["last_run_summary"] = last.summary if last else None
        pending, suggestions = 0, []
        if self.loop.hooks.pending_suggestions is not None:
            try:
                pending, first = await self.loop.hooks.pending_suggestions()
                suggestions = list(first)
            except Exception:
                stale.append("knowledge_suggestions")
        reply["pending_knowledge_suggestions"] = {
            "count": pending,
            "ids": [
                str(s.get("kid") or s.get("id") or s.get("title") or "?") for s in suggestions[:20]
            ],
        }
        threshold = self.sub.memory_warn_threshold
        records: list[MemoryRecord] = []
        try:
            stats = await self.loop.repo.stats(cycle.target_key)
            records = await self.loop.repo.memories(cycle.target_key)
            groups = clusters(
                [r.id for r in records],
                await self.loop.repo.duplicate_pairs(
                    cycle.target_key, self.sub.duplicate_threshold
                ),
            )
            reply["memory_total"] = stats.total
            over = stats.total > threshold
            reply["memory_low_importance"] = stats.low if over else None
            reply["memory_hint"] = (
                f"记忆库已有 {stats.total} 条（低重要性 {stats.low} 条），"
                "建议本轮优先用 subconscious_duplicate_helper 整理合并。"
                if over
                else ""
            )
            # the threshold only where it says something (the hint names the overrun)
            reply["memory_warn_threshold"] = threshold if over else None
            reply["duplicate_groups"] = len(groups)
            # The pre-pass itself, so the model can merge in its first turn.
            by_id = {r.id: r for r in records}
            short = short_ids(list(by_id))
            shown = groups[:CONTEXT_GROUPS]
            reply["duplicate_candidates"] = [[_brief(by_id[m], short[m]) for m in g] for g in shown]
            more = len(groups) - len(shown)
            reply["duplicate_hint"] = (
                f"另有 {more} 组未列出：用 subconscious_duplicate_helper(candidates_only=true) 查看。"
                if more > 0
                else ""
            )
            grouped = {m for g in groups for m in g}
            low = [r for r in records if r.importance_label == "low" and r.id not in grouped]
            low.sort(key=lambda r: (r.created_at, r.id))
            reply["cleanup_candidates"] = [
                f"{_brief(r, short[r.id], importance=False)}|{max(0, (now - r.created_at).days)}天前"
                for r in low[:CONTEXT_CLEANUP]
            ]
        except Exception:
            reply.update(memory_total=None, memory_warn_threshold=None, duplicate_groups=None)
            stale.append("memory_stats")
        await self._knowledge(cycle.target_key, reply, stale)
        await self._rederive(cycle, reply, stale)
        reply["profile_hint"] = ""
        if self.loop.hooks.profile_changed_at is not None and is_personal_key(cycle.target_key):
            # New memories are what a profile is distilled from: none since its last
            # change (or none at all) means nothing new to add, so no profile tools.
            try:
                since = await self.loop.hooks.profile_changed_at(cycle.target_key)
                new = sum(1 for r in records if since is None or r.created_at > since)
                if new:
                    hint = NO_PROFILE_YET if since is None else PROFILE_NEWS
                    reply["profile_hint"] = hint.format(n=new)
            except Exception:
                stale.append("profile")
        try:
            memo = await self.memos.read(cycle.target_key)
            cap = self.memos.max_chars
            compress = self.sub.enable_memory_compress and memo.chars >= cap * 0.8
            reply["memo_chars"] = memo.chars
            # the cap only when the memo is to be compressed to fit it
            reply["memo_max_chars"] = cap if compress else None
            reply["memo_hint"] = (
                "备忘录已接近上限，用 subconscious_read_memo / subconscious_rewrite_memo 压缩。"
                if compress
                else ""
            )
        except Exception:
            stale.append("memo")
        try:
            runs = await self.loop.repo.recent_runs(cycle.target_key, self.sub.max_abstracts)
            reply["recent_runs"] = [
                {"at": r.ended_at.astimezone(tz).isoformat(), "ok": r.ok, "summary": r.summary}
                for r in runs
            ]
        except Exception:
            stale.append("recent_runs")
        reply["can_send_to_user"] = (
            self.sub.allow_send_to_user
            and is_private_key(cycle.target_key)
            and cycle.cycle_id not in self.sent
        )
        plan = None
        if self.loop.hooks.idle_plan is not None:
            try:
                plan = await self.loop.hooks.idle_plan(cycle.target_key)
            except Exception:
                stale.append("idle_plan")
        reply["idle_plan"] = dict(plan) if plan is not None else None
        reply["stale"] = stale
        cycle.context_fetched = True
        return said(reply)

    async def _knowledge(self, target_key: str, reply: dict[str, Any], stale: list[str]) -> None:
        """The distillation pre-pass (knowledge_candidates_v1): the memories worth a global
        knowledge entry. Any found → the hint says how many and lists the first (the
        create tool is offered for them); none → no key at all (paid on every call)."""
        if not self.sub.enable_knowledge:
            return
        try:
            found = await self.loop.repo.knowledge_candidates(
                target_key, self.sub.duplicate_threshold, DISTILL_MIN_PARTITIONS
            )
        except Exception:
            stale.append("knowledge_candidates")
            return
        if not found:
            return
        reply["knowledge_hint"] = f"{len(found)} 条可入知识库（隐私不写）"
        reply["knowledge_candidates"] = [
            preview(c.content, CONTEXT_KNOWLEDGE_CHARS)
            + (f"|另见{c.partitions}个分区" if c.partitions else "")
            for c in found[:CONTEXT_KNOWLEDGE]
        ]

    async def _rederive(self, cycle: CycleContext, reply: dict[str, Any], stale: list[str]) -> None:
        """Rows withheld because a source was deleted, forgotten or changed: the cycle
        writes them again (``subconscious_rederive``, offered only then); none → no key."""
        if self.loop.hooks.rederive is None:
            return
        try:
            tasks = await self.loop.hooks.rederive(cycle)
        except Exception:
            stale.append("rederive")
            return
        if not tasks:
            return
        reply["rederive_hint"] = (
            f"{len(tasks)} 条内容的来源被删除或改动，已暂停使用：用 subconscious_rederive "
            "按剩余来源重写（去掉或改掉所说的内容），保留不了就传空 content 丢弃。"
        )
        reply["rederive_format"] = TASK_FORMAT
        reply["rederive"] = tasks

    @declare(
        "subconscious_get_memory_stats",
        "记忆库统计。",
        "统计失败",
        offer=lambda c: bool(c.get("memory_hint")),
    )
    async def get_memory_stats(self, args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        records = await self.loop.repo.memories(cycle.target_key)
        by_importance: dict[str, int] = {}
        by_tag: dict[str, int] = {}
        for r in records:
            by_importance[r.importance_label] = by_importance.get(r.importance_label, 0) + 1
            if r.tags_text:
                by_tag[r.tags_text] = by_tag.get(r.tags_text, 0) + 1
        created = [iso(r.created_at) for r in records]
        return {
            "status": "success",
            "total": len(records),
            "by_importance": by_importance,
            "by_tag": by_tag,
            "oldest_created": min(created) if created else None,
            "newest_created": max(created) if created else None,
            "avg_length": sum(len(r.content) for r in records) // len(records) if records else 0,
        }

    @declare(
        "subconscious_duplicate_helper",
        "分页列出记忆和候选重复组；candidates_only=true 只列候选。",
        "查重失败",
        # the pre-pass in get_context shows every group of a store this size
        offer=lambda c: (
            bool(c.get("memory_hint"))
            or int(c.get("duplicate_groups") or 0) > len(c.get("duplicate_candidates") or ())
        ),
    )
    async def duplicate_helper(self, args: DuplicateArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        records = await self.loop.repo.memories(cycle.target_key)
        if not records:
            return {
                "status": "success",
                "total": 0,
                "returned": 0,
                "instruction": "记忆库为空，无需整理。",
                "memories": [],
            }
        if args.tag is not None:
            records = [r for r in records if r.tags_text == args.tag]
        if args.importance is not None:
            records = [r for r in records if r.importance_label == args.importance]
        sort_by = args.sort_by
        keyed = sorted(
            ((_sort_key(r, sort_by), r.id, r) for r in records), key=lambda t: (t[0], t[1])
        )
        ordered = [r for _, _, r in keyed]
        threshold = args.similarity_threshold or self.sub.duplicate_threshold
        threshold = min(max(threshold, 0.01), 1.0)
        pairs = await self.loop.repo.duplicate_pairs(cycle.target_key, threshold)
        groups = clusters([r.id for r in ordered], pairs)
        if args.candidates_only:
            members = {m for g in groups for m in g}
            keyed = [t for t in keyed if t[1] in members]
        total = len(keyed)
        limit = args.limit if args.limit > 0 else 40
        limit = min(max(limit, 1), 200)
        start = _cursor_decode(args.cursor, sort_by)
        passed = 0
        if start is not None:
            passed = sum(1 for key, mid, _ in keyed if (key, mid) <= start)
        shard = keyed[passed : passed + limit]
        if not shard:
            return {
                "status": "success",
                "total": total,
                "returned": 0,
                "has_more": False,
                "instruction": "本范围内没有更多可检查的记忆。",
                "memories": [],
            }
        has_more = passed + len(shard) < total
        in_shard = {mid for _, mid, _ in shard}
        shown = [g for g in groups if in_shard.intersection(g)]
        instruction = (
            f"以下是第 {passed + 1} 到第 {passed + len(shard)} 条（共 {total} 条）。请找出重复的记忆："
            "每组重复只保留一条——用 subconscious_update_memory 更新其中最重要、信息最全的一条，"
            "再用 subconscious_delete_memory 删除其余；只合并真正重复的内容，保留更丰富的细节；"
            "完成后可用 subconscious_get_memory_stats 核对。"
        )
        if shown:
            instruction += (
                f"\n预筛选（余弦相似度 ≥ {threshold}）发现 {len(shown)} 组候选重复，见 "
                "candidate_duplicate_groups；组内可能含本页之外的 ID。"
            )
        if has_more:
            instruction += "\n还有更多记忆：把 next_cursor 原样传回 cursor 参数继续。"
        reply: dict[str, Any] = {
            "status": "success",
            "total": total,
            "returned": len(shard),
            "passed": passed,
            "has_more": has_more,
            "instruction": instruction,
            "memories": [self._item(r, compact=args.candidates_only) for _, _, r in shard],
        }
        if has_more:
            key, mid, _ = shard[-1]
            reply["next_cursor"] = cursor_encode(sort_by, key, mid)
        if shown:
            reply["candidate_duplicate_groups"] = shown
        return reply

    @staticmethod
    def _item(record: MemoryRecord, *, compact: bool) -> dict[str, Any]:
        """One listed memory; candidates carry only what a merge decision needs."""
        if compact:
            item: dict[str, Any] = {
                "id": record.id,
                "content": record.content,
                "importance": record.importance_label or "medium",
            }
            if record.source == "user":
                item["source"] = "user"
            return item
        return {
            "id": record.id,
            "content": record.content,
            "tags": record.tags_text,
            "importance": record.importance_label or "medium",
            "source": record.source,
            "created_at": iso(record.created_at),
            "length": len(record.content),
        }
