"""The L3 loop's own tools (reference §8.8, tools 1–11 and 19) and its memo tools (D4).

Same names, arguments and replies as the reference, acting on the cycle's target
partition (``ctx.cycle.target_key``); without a cycle every tool refuses. Differences,
all deliberate:

- the importance filter works (B1), bad arguments are refused instead of silently
  replaced (an invalid importance is an error, not ``medium``), the partition cap holds
  for the loop's writes too (W1), and the loop's memories are ``source=system``;
- memories a user added by hand (``source=user``) are never deleted or rewritten: the
  loop may only add tags to flag them;
- ``subconscious_iter_stop`` checks *this* cycle's flags (B3);
- ``subconscious_send_to_user`` works only for a personal target, at most once per
  cycle; the message is queued in ``pending_message`` and delivered once, in the
  target's private chat (W14); its generation call is accounted (W16);
- ``subconscious_duplicate_helper``'s clusters come from the SQL pre-pass
  (``duplicate_pairs_v1``), and ``candidates_only`` lists only their members — the
  reason a cycle reads a handful of candidates instead of the whole store;
- ``subconscious_read_sessions`` splits the chat log into sessions at 30-minute gaps;
  summaries are LLM calls (accounted, cached per process);
- ``subconscious_read_memo`` / ``subconscious_rewrite_memo`` let the loop compress the
  target's L1 memo near its cap, as the reference's README promised (D4).

In a dry run every writing tool checks its input and answers as if done, writing nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from amrita_memory_pg.domain.activity import FALLBACK_TZ, resolve_timezone
from amrita_memory_pg.domain.consolidation import (
    CycleContext,
    clusters,
    is_private_key,
)
from amrita_memory_pg.domain.errors import (
    EmbeddingError,
    FingerprintMismatch,
    MemoryPaused,
    MemoTooLong,
    PartitionFull,
    ToolError,
)
from amrita_memory_pg.domain.importance import ImportanceLabel, label_to_level
from amrita_memory_pg.domain.keys import is_personal_key
from amrita_memory_pg.domain.records import ChatLine, MemoryRecord, Scope, parse_tags
from amrita_memory_pg.domain.trail import Recall
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAGS_CHARS,
)
from amrita_memory_pg.services.consolidation import ITER_STOP, LoopDeps
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.memos import MemoStore
from amrita_memory_pg.tools.args import Clamp, Integer, Text, ToolArgs, numbers_as_text
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.failures import embedding_failure
from amrita_memory_pg.tools.memo import too_long_error
from amrita_memory_pg.tools.memory import TIER_RANGE, iso
from amrita_memory_pg.tools.registry import Tool, ToolRegistry

Importance = Annotated[ImportanceLabel, BeforeValidator(numbers_as_text)]
SortBy = Annotated[Literal["created_at", "importance", "length"], BeforeValidator(numbers_as_text)]

LIST_PREVIEW_CHARS = 80
#: get_context's pre-pass: at most this many duplicate groups / cleanup candidates, and
#: each content cut at this length (the model can read a memory in full if it must)
CONTEXT_GROUPS = 20
CONTEXT_CLEANUP = 10
CONTEXT_CHARS = 80
MAX_MERGE_IDS = 50
MAX_MERGE_IDS_CHARS = MAX_MERGE_IDS * (MAX_ID_CHARS + 1)
SESSION_GAP = timedelta(minutes=30)
SESSION_LINES = 500
IMPORTANCE_RANK = {"high": 0, "medium": 1, "low": 2}
NO_CONTEXT = "本轮未调用 subconscious_get_context，周期无效。请先取当前环境再决定是否整理记忆"
USER_PROTECTED = (
    "这条记忆是用户手动添加的（source=user），整理循环不能删除它，也不能修改它的内容或重要程度；"
    "如需标记，只能用 subconscious_update_memory 追加标签（保留原有标签）"
)
SEND_USER = "请说一句自然的问候/关心/分享的话。意图：{intent}。"
SUMMARY_SYSTEM = (
    "用一两句话概括下面这段聊天的主要内容（谁、聊了什么、有无值得长期记住的事实），不超过 80 字。"
)


def _storable_ids(text: str) -> str:
    if "\x00" in text:
        raise ValueError("merge_ids 含有 NUL 字符")
    return text


def _cycle(ctx: ToolContext) -> CycleContext:
    if ctx.cycle is None:
        raise ToolError("这个工具只在后台整理循环（L3）中可用")
    return ctx.cycle


def _preview(text: str, limit: int = LIST_PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


#: how get_context's pre-pass items read (one string each: keys would be paid per item)
BRIEF_FORMAT = "id|importance|content（source=user 的以 id|importance|user| 开头）"


def _brief(record: MemoryRecord) -> str:
    """A memory as get_context's pre-pass shows it: what a merge decision needs."""
    user = "user|" if record.source == "user" else ""
    content = _preview(record.content, CONTEXT_CHARS)
    return f"{record.id}|{record.importance_label or 'medium'}|{user}{content}"


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


class SendArgs(ToolArgs):
    intent: Annotated[Text, Field(description="意图", max_length=500)]
    memory_context: Annotated[Text, Field(description="相关记忆", max_length=2000)] = ""


class ChatContextArgs(ToolArgs):
    limit: Annotated[Integer, Clamp(1, 100)] = 10


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


class NoArgs(ToolArgs):
    pass


class SessionsArgs(ToolArgs):
    n: Annotated[Integer, Clamp(1, 20)] = 5


class RewriteMemoArgs(ToolArgs):
    content: Annotated[Text, Field(description="压缩后的全文")]


# ---------------------------------------------------------------------------- handlers


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


class LoopTools:
    """Handlers bound to the repositories, the L3 store and the settings."""

    def __init__(
        self, memories: MemoryService, memos: MemoStore, loop: LoopDeps, settings: Settings
    ) -> None:
        self.memories = memories
        self.memos = memos
        self.loop = loop
        self.settings = settings
        self.sub = settings.subconscious
        #: cycles that already queued their one proactive message
        self._sent: set[int] = set()

    # -- L2
    async def read_memory(self, args: ReadArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        query = args.query.strip()
        if not query:
            raise ToolError("query 不能为空：请给出检索关键词")
        try:
            hits = await self.memories.search(
                cycle.target_key,
                query,
                top_k=args.top_k,
                importance=TIER_RANGE[args.importance] if args.importance else None,
                now=self.loop.clock(),
                recall=Recall("l3", cycle.target_key, f"cycle {cycle.cycle_id}"),
            )
        except MemoryPaused:
            return {
                "status": "paused",
                "message": f"{cycle.target_key} 的记忆已被管理员暂停：本轮不读取也不修改记忆，请直接结束",
            }
        except EmbeddingError as exc:
            raise embedding_failure("检索记忆失败", exc) from exc
        except FingerprintMismatch as exc:
            raise ToolError(f"检索记忆失败: {exc}") from exc
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

    async def write_memory(self, args: WriteArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        content = args.content.strip()
        if not content:
            raise ToolError("content 不能为空")
        cycle.changed += 1
        if cycle.dry_run:
            return {"status": "success", "id": None, "dry_run": True}
        scope: Scope = "user" if is_private_key(cycle.target_key) else "group"
        try:
            record = await self.memories.add(
                partition_key=cycle.target_key,
                scope=scope,
                content=content,
                tags=parse_tags(args.tags),
                importance=label_to_level(args.importance),
                source="system",
                author="subconscious",
                now=self.loop.clock(),
            )
        except PartitionFull as exc:
            cycle.changed -= 1
            raise ToolError(
                f"记忆数量已达上限（{exc.limit} 条），未写入。请先合并或删除过时的记忆",
                limit=exc.limit,
            ) from exc
        except EmbeddingError as exc:
            cycle.changed -= 1
            raise embedding_failure("写入记忆失败", exc) from exc
        return {"status": "success", "id": record.id}

    async def _existing(self, cycle: CycleContext, memory_id: str) -> MemoryRecord:
        record = await self.memories.get(cycle.target_key, memory_id)
        if record is None:
            if await self.memories.count(cycle.target_key) == 0:
                raise ToolError("未找到任何记忆")
            raise ToolError(f"未找到ID为 {memory_id} 的记忆")
        return record

    async def update_memory(self, args: UpdateArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        if args.content is None and args.tags is None and args.importance is None:
            raise ToolError("至少给出 content、tags、importance 之一；未修改任何内容")
        record = await self._existing(cycle, args.id)
        tags = parse_tags(args.tags) if args.tags is not None else None
        content = args.content.strip() if args.content is not None else None
        if content == "":
            raise ToolError("content 不能为空")
        if record.source == "user":
            rewrites = (content is not None and content != record.content) or (
                args.importance is not None and args.importance != record.importance_label
            )
            drops_tags = tags is not None and not set(record.tags) <= set(tags)
            if rewrites or drops_tags or tags is None:
                raise ToolError(USER_PROTECTED)
            flag_only = True
        else:
            flag_only = False
        cycle.changed += 1
        if cycle.dry_run:
            return {
                "status": "success",
                "message": "记忆更新成功",
                "id": record.id,
                "dry_run": True,
            }
        try:
            if flag_only:
                assert tags is not None
                updated = await self.memories.add_tags(
                    cycle.target_key, record.id, tags, now=self.loop.clock()
                )
            else:
                updated = await self.memories.update(
                    cycle.target_key,
                    record.id,
                    content=content,
                    tags=tags,
                    importance=label_to_level(args.importance) if args.importance else None,
                    now=self.loop.clock(),
                )
        except EmbeddingError as exc:
            cycle.changed -= 1
            raise embedding_failure("更新记忆失败", exc) from exc
        if updated is None:
            cycle.changed -= 1
            raise ToolError(f"未找到ID为 {args.id} 的记忆")
        return {"status": "success", "message": "记忆更新成功", "id": updated.id}

    async def delete_memory(self, args: DeleteArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        record = await self._existing(cycle, args.id)
        if record.source == "user":
            raise ToolError(USER_PROTECTED)
        cycle.changed += 1
        if cycle.dry_run:
            return {
                "status": "success",
                "message": "记忆删除成功",
                "id": record.id,
                "dry_run": True,
            }
        if not await self.memories.delete(cycle.target_key, record.id):
            cycle.changed -= 1
            raise ToolError(f"未找到ID为 {args.id} 的记忆")
        return {"status": "success", "message": "记忆删除成功", "id": record.id}

    async def merge_memories(self, args: MergeArgs, ctx: ToolContext) -> dict[str, Any]:
        """One duplicate group in one call and one transaction: keep one memory
        (optionally rewritten), delete the others. All ids are checked first; any
        problem refuses the whole merge and writes nothing."""
        cycle = _cycle(ctx)
        keep_id = args.keep_id.strip()
        ids: list[str] = []
        for raw in args.merge_ids.replace("，", ",").split(","):
            memory_id = raw.strip()
            if memory_id and memory_id != keep_id and memory_id not in ids:
                ids.append(memory_id)
        if not ids:
            raise ToolError("merge_ids 至少要有一个不同于 keep_id 的记忆 ID；未合并任何内容")
        if len(ids) > MAX_MERGE_IDS:
            raise ToolError(f"merge_ids 最多 {MAX_MERGE_IDS} 个；未合并任何内容")
        keep = await self._existing(cycle, keep_id)
        others: list[MemoryRecord] = []
        for memory_id in ids:
            record = await self.memories.get(cycle.target_key, memory_id)
            if record is None:
                raise ToolError(f"未找到ID为 {memory_id} 的记忆；未合并任何内容")
            if record.source == "user":
                raise ToolError(f"{memory_id}: {USER_PROTECTED}；未合并任何内容")
            others.append(record)
        content = args.content.strip() if args.content is not None else None
        if content == "":
            raise ToolError("content 不能为空；未合并任何内容")
        if content == keep.content:
            content = None
        if keep.source == "user" and (
            content is not None
            or (args.importance is not None and args.importance != keep.importance_label)
        ):
            raise ToolError(f"keep_id {keep.id}: {USER_PROTECTED}；未合并任何内容")
        # The merged memory keeps every tag of the group (no information lost).
        tags = list(keep.tags)
        for record in others:
            tags.extend(t for t in record.tags if t not in tags)
        new_tags = tags if tags != list(keep.tags) else None
        cycle.changed += 1 + len(others)
        reply: dict[str, Any] = {"status": "success", "id": keep.id, "deleted": len(others)}
        if cycle.dry_run:
            reply["dry_run"] = True
            return reply
        try:
            merged = await self.memories.merge(
                cycle.target_key,
                keep.id,
                [r.id for r in others],
                content=content,
                tags=new_tags,
                importance=(
                    label_to_level(args.importance)
                    if args.importance and keep.source != "user"
                    else None
                ),
                now=self.loop.clock(),
            )
        except EmbeddingError as exc:
            cycle.changed -= 1 + len(others)
            raise embedding_failure("合并记忆失败", exc) from exc
        if merged is None:
            cycle.changed -= 1 + len(others)
            raise ToolError(f"未找到ID为 {keep.id} 的记忆；未合并任何内容")
        _, deleted = merged
        cycle.changed -= len(others) - len(deleted)
        reply["deleted"] = len(deleted)
        return reply

    async def list_memory(self, args: ListArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        page, total = await self.memories.list_page(cycle.target_key, limit=args.limit)
        return {
            "status": "success",
            "memories": [
                {
                    "id": r.id,
                    "tags": r.tags_text,
                    "importance": r.importance_label,
                    "source": r.source,
                    "content_preview": _preview(r.content),
                }
                for r in page
            ],
            "total": total,
        }

    # -- the cycle
    async def iter_stop(self, args: StopArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        if not cycle.context_fetched:
            raise ToolError(NO_CONTEXT)
        cycle.summary = args.summary.strip()
        cycle.stopped = True
        return {"status": "acknowledged", "message": "推理循环已确认结束"}

    async def get_context(self, args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
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
            "target": cycle.target_key,
        }
        last = await self.loop.store.last_run(cycle.target_key)
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
            stats = await self.loop.store.stats(cycle.target_key)
            records = await self.loop.store.memories(cycle.target_key)
            groups = clusters(
                [r.id for r in records],
                await self.loop.store.duplicate_pairs(
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
            reply["memory_warn_threshold"] = threshold
            reply["duplicate_groups"] = len(groups)
            # The pre-pass itself, so the model can merge in its first turn.
            by_id = {r.id: r for r in records}
            shown = groups[:CONTEXT_GROUPS]
            reply["duplicate_candidates"] = [[_brief(by_id[m]) for m in g] for g in shown]
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
                f"{_brief(r)}|{max(0, (now - r.created_at).days)}天前"
                for r in low[:CONTEXT_CLEANUP]
            ]
            if groups or low:
                reply["candidate_format"] = BRIEF_FORMAT
        except Exception:
            reply.update(memory_total=None, memory_warn_threshold=None, duplicate_groups=None)
            stale.append("memory_stats")
        reply["profile_hint"] = ""
        if self.loop.hooks.profile_changed_at is not None and is_personal_key(cycle.target_key):
            # New memories are what a profile is distilled from: none since its last
            # change (or none at all) means nothing new to add, so no profile tools.
            try:
                since = await self.loop.hooks.profile_changed_at(cycle.target_key)
                new = sum(1 for r in records if since is None or r.created_at > since)
                if new:
                    reply["profile_hint"] = f"画像上次更新后新增 {new} 条记忆"
            except Exception:
                stale.append("profile")
        try:
            memo = await self.memos.get(cycle.target_key)
            cap = self.memos.max_chars
            reply["memo_chars"] = memo.chars
            reply["memo_max_chars"] = cap
            reply["memo_hint"] = (
                "备忘录已接近上限，用 subconscious_read_memo / subconscious_rewrite_memo 压缩。"
                if self.sub.enable_memory_compress and memo.chars >= cap * 0.8
                else ""
            )
        except Exception:
            stale.append("memo")
        try:
            runs = await self.loop.store.recent_runs(cycle.target_key, self.sub.max_abstracts)
            reply["recent_runs"] = [
                {"at": r.ended_at.astimezone(tz).isoformat(), "ok": r.ok, "summary": r.summary}
                for r in runs
            ]
        except Exception:
            stale.append("recent_runs")
        reply["can_send_to_user"] = (
            self.sub.allow_send_to_user
            and is_private_key(cycle.target_key)
            and cycle.cycle_id not in self._sent
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
        return reply

    async def get_memory_stats(self, args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        records = await self.loop.store.memories(cycle.target_key)
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

    async def duplicate_helper(self, args: DuplicateArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        records = await self.loop.store.memories(cycle.target_key)
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
        pairs = await self.loop.store.duplicate_pairs(cycle.target_key, threshold)
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

    # -- the user
    async def send_to_user(self, args: SendArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        if not self.sub.allow_send_to_user:
            raise ToolError("allow_send_to_user 未启用")
        if not is_private_key(cycle.target_key):
            raise ToolError(
                "主动消息只能发给个人（私聊）目标；群目标不能使用 subconscious_send_to_user"
            )
        intent = args.intent.strip()
        if not intent:
            raise ToolError("intent 不能为空")
        if cycle.cycle_id in self._sent:
            raise ToolError("本轮已经发过一条主动消息了，每轮最多一条")
        llm = self.loop.llm
        if llm is None:
            raise ToolError("没有配置模型，无法生成主动消息")
        now = self.loop.clock()
        user = SEND_USER.format(intent=intent)
        if args.memory_context.strip():
            user += f" 相关记忆：{args.memory_context.strip()}"
        content = await llm.text(
            cycle, "send", self.loop.prompts.send(intent, args.memory_context, now), user
        )
        if not content:
            raise ToolError("模型没有生成任何内容，未发送")
        self._sent.add(cycle.cycle_id)
        reply: dict[str, Any] = {"status": "queued", "content": content, "timestamp": iso(now)}
        if cycle.dry_run:
            reply["dry_run"] = True
            return reply
        await self.loop.store.queue_message(cycle.target_key, cycle.cycle_id, content, now=now)
        reply["message"] = "已放入待发送队列：用户下次在私聊里发消息时送达（只送达一次）"
        return reply

    async def _lines(self, cycle: CycleContext, limit: int) -> list[ChatLine]:
        return await self.loop.activity.recent(cycle.target_key, limit)

    async def read_chat_context(self, args: ChatContextArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        lines = await self._lines(cycle, args.limit)
        # The reference's shape: no status key.
        return {
            "total_messages": len(lines),
            "recent": [
                {
                    "role": "assistant" if line.role == "bot" else "user",
                    "user_id": line.user_id,
                    "content": line.text,
                    "time": iso(line.created_at),
                }
                for line in lines
            ],
        }

    async def _summary(self, cycle: CycleContext, session: list[ChatLine]) -> str:
        stamp = session[0].created_at.strftime("%Y-%m-%d %H:%M")
        key = (cycle.target_key, session[0].id, session[-1].id)
        cached = self.loop.summaries.get(key)
        if cached is not None:
            return cached
        llm = self.loop.llm
        if llm is None:
            return f"[{stamp}] 无法生成摘要"
        text = "\n".join(
            f"{'机器人' if line.role == 'bot' else '用户'}: {line.text}" for line in session
        )
        try:
            abstract = await llm.text(cycle, "summary", SUMMARY_SYSTEM, text[:8000])
        except Exception:
            return f"[{stamp}] 无法生成摘要"
        summary = f"[{stamp}] {abstract}" if abstract else f"[{stamp}] 无法生成摘要"
        if len(self.loop.summaries) >= 128:
            self.loop.summaries.pop(next(iter(self.loop.summaries)))
        self.loop.summaries[key] = summary
        return summary

    async def read_sessions(self, args: SessionsArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        try:
            lines = await self._lines(cycle, SESSION_LINES)
        except Exception:
            return {"status": "success", "sessions": [], "total": 0}
        sessions: list[list[ChatLine]] = []
        for line in lines:
            if sessions and line.created_at - sessions[-1][-1].created_at <= SESSION_GAP:
                sessions[-1].append(line)
            else:
                sessions.append([line])
        newest = list(reversed(sessions))[: args.n]
        out = [
            {
                "id": session[0].id,
                "created_at": session[0].created_at.timestamp(),
                "summary": await self._summary(cycle, session),
                "message_count": len(session),
            }
            for session in newest
        ]
        return {"status": "success", "sessions": out, "total": len(out)}

    # -- L1 (D4)
    async def read_memo(self, args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        memo = await self.memos.get(cycle.target_key)
        return {
            "status": "success",
            "content": memo.content,
            "chars": memo.chars,
            "max_chars": self.memos.max_chars,
        }

    async def rewrite_memo(self, args: RewriteMemoArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        content = args.content.strip()
        if not content:
            raise ToolError(
                "content 不能为空：压缩后的备忘录不能是空的（清空备忘录不是整理循环的职责）"
            )
        limit = self.memos.max_chars
        if len(content) > limit:
            current = await self.memos.get(cycle.target_key)
            raise too_long_error(MemoTooLong(len(content), limit, current.chars))
        if cycle.dry_run:
            return {"status": "success", "chars": len(content), "max_chars": limit, "dry_run": True}
        try:
            written = await self.memos.replace(cycle.target_key, content, now=self.loop.clock())
        except MemoTooLong as exc:
            raise too_long_error(exc) from exc
        return {"status": "success", "chars": written.chars, "max_chars": limit}


def register_loop_tools(
    registry: ToolRegistry,
    memories: MemoryService,
    memos: MemoStore,
    loop: LoopDeps,
    settings: Settings,
) -> LoopTools:
    """Declare the loop's tools 1–11, 19 and the memo tools on ``registry``."""
    tools = LoopTools(memories, memos, loop, settings)
    # Descriptions are short on purpose: every schema is re-sent with every model call of
    # a cycle; the system prompt says how to work. ``offer``: shown only when the cycle's
    # get_context says the tool has something to do (a tool not shown still runs).
    specs: list[Tool[Any]] = [
        Tool(
            "subconscious_merge_memories",
            "合并一组重复：保留 keep_id（可给合并后的 content/importance），删除 merge_ids；"
            "一次调用一组，全部成功或全部不做。",
            MergeArgs,
            tools.merge_memories,
            "合并记忆失败",
        ),
        Tool(
            "subconscious_update_memory",
            "修改一条记忆，省略的字段不变。",
            UpdateArgs,
            tools.update_memory,
            "更新记忆失败",
        ),
        Tool(
            "subconscious_delete_memory",
            "删除一条记忆。",
            DeleteArgs,
            tools.delete_memory,
            "删除记忆失败",
        ),
        Tool(
            "subconscious_write_memory",
            "新增一条记忆。",
            WriteArgs,
            tools.write_memory,
            "写入记忆失败",
        ),
        Tool(
            "subconscious_read_memory",
            "语义检索记忆。",
            ReadArgs,
            tools.read_memory,
            "检索记忆失败",
        ),
        Tool(
            "subconscious_list_memory",
            "列出前 limit 条记忆的预览。",
            ListArgs,
            tools.list_memory,
            "列出记忆失败",
            # superseded by the pre-pass and duplicate_helper's pages (still accepted)
            offer=lambda c: False,
        ),
        Tool(
            "subconscious_duplicate_helper",
            "分页列出记忆和候选重复组；candidates_only=true 只列候选。",
            DuplicateArgs,
            tools.duplicate_helper,
            "查重失败",
            # the pre-pass in get_context shows every group of a store this size
            offer=lambda c: (
                bool(c.get("memory_hint"))
                or int(c.get("duplicate_groups") or 0) > len(c.get("duplicate_candidates") or ())
            ),
        ),
        Tool(
            ITER_STOP,
            "结束本轮并写总结；可以和最后的修改在同一轮调用。",
            StopArgs,
            tools.iter_stop,
            "结束失败",
        ),
        Tool(
            "subconscious_read_sessions",
            "最近 n 段会话的摘要。",
            SessionsArgs,
            tools.read_sessions,
            "读取会话失败",
        ),
        Tool(
            "subconscious_read_chat_context",
            "最近的聊天消息。",
            ChatContextArgs,
            tools.read_chat_context,
            "读取聊天记录失败",
            # the exact recent lines matter for a proactive message; else read_sessions
            offer=lambda c: bool(c.get("can_send_to_user")),
        ),
        Tool(
            "subconscious_send_to_user",
            "给用户发一条主动消息（每轮最多一次），在其下次私聊时送达。",
            SendArgs,
            tools.send_to_user,
            "生成主动消息失败",
            offer=lambda c: bool(c.get("can_send_to_user")),
        ),
        Tool(
            "subconscious_get_memory_stats",
            "记忆库统计。",
            NoArgs,
            tools.get_memory_stats,
            "统计失败",
            offer=lambda c: bool(c.get("memory_hint")),
        ),
        Tool(
            "subconscious_get_context",
            "当前环境（本轮开头已由系统调用）。",
            NoArgs,
            tools.get_context,
            "获取环境失败",
            offer=lambda c: False,
        ),
    ]
    if settings.subconscious.enable_memory_compress:
        specs += [
            Tool(
                "subconscious_read_memo",
                "读备忘录（L1）全文。",
                NoArgs,
                tools.read_memo,
                "读取备忘录失败",
                offer=lambda c: bool(c.get("memo_hint")),
            ),
            Tool(
                "subconscious_rewrite_memo",
                "用压缩后的全文替换备忘录（L1），保留关键事实，不超过上限。",
                RewriteMemoArgs,
                tools.rewrite_memo,
                "改写备忘录失败",
                offer=lambda c: bool(c.get("memo_hint")),
            ),
        ]
    for tool in specs:
        registry.register(tool)
    return tools


__all__ = ["LoopTools", "cursor_encode", "register_loop_tools"]
