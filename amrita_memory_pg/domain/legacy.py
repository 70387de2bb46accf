"""Pure parsers of an amrita_plugin_memory installation (reference §3, §6, §8.10, §10.2, §11.1).

``amrita-memory import-legacy`` reads the old files and rows with plain I/O and hands the
text to these functions, which decide what each item becomes here (or why it is
skipped). No I/O, no clock: the time a missing timestamp falls back to is an argument,
so a second import computes exactly the same rows (idempotence).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from amrita_memory_pg.domain.decay import parse_created_at
from amrita_memory_pg.domain.importance import LABEL_TO_LEVEL, MEDIUM
from amrita_memory_pg.domain.keys import check_partition_key, to_current
from amrita_memory_pg.domain.records import parse_tags
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_TAGS_CHARS,
    InvalidInput,
    check_text,
)

_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_SEPARATOR = re.compile(r"^---\s*$", re.MULTILINE)
_KEY_KIND = re.compile(r"^(?:[A-Za-z0-9]+_)?(?P<kind>Private|Group|user|group)_\d+$")


@dataclass(frozen=True, slots=True)
class LegacyMemory:
    """One old L2 memory as it will be stored here."""

    id: str
    partition_key: str
    scope: str
    content: str
    tags: tuple[str, ...]
    importance: int
    created_at: datetime
    #: the old id and key, for the report
    old_id: str
    old_key: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """An item that is not imported, and why (always reported, never dropped silently)."""

    kind: str
    item: str
    reason: str


def memory_id(raw_id: object, partition_key: str) -> str:
    """The old id when it is 32 lowercase hex digits (uuid4().hex, what the reference
    made), else one derived from partition and old id: the same on every import."""
    if isinstance(raw_id, str) and _HEX32.match(raw_id):
        return raw_id
    return hashlib.md5(f"{partition_key}|{raw_id}".encode()).hexdigest()


def _scope_of(meta: dict[str, Any], raw_key: str) -> str | None:
    scope = meta.get("scope")
    if scope in ("user", "group"):
        return str(scope)
    kind = _KEY_KIND.match(raw_key)
    if kind is None:
        return None
    return "group" if kind.group("kind") in ("Group", "group") else "user"


def convert_memory(
    raw_id: object,
    document: object,
    metadata: object,
    *,
    fallback_time: datetime,
    default_platform: str = "qq",
) -> LegacyMemory | Skipped:
    """One record of the old ``amrita_user_memory`` collection → a memory here, or why not.

    The key goes through the key migration (``user_1`` → ``QQPlatform_Private_1``; bare
    digits need the ``scope`` metadata); ``importance`` labels map to 1–10 (unknown →
    medium); ``tags`` is split like everywhere else; a missing or unreadable
    ``created_at`` becomes ``fallback_time`` (the old files' time, not now).
    """
    meta = metadata if isinstance(metadata, dict) else {}
    label = str(raw_id)
    if not isinstance(document, str) or not document.strip():
        return Skipped("memory", label, "空文本（无内容）")
    raw_key = meta.get("user_id")
    if not isinstance(raw_key, str) or not raw_key:
        return Skipped("memory", label, "没有分区键（metadata.user_id 缺失）")
    scope = _scope_of(meta, raw_key)
    key = to_current(raw_key, scope, default_platform)
    if key is None or scope is None:
        return Skipped("memory", label, f"无法识别的分区键 {raw_key!r}")
    created = parse_created_at(meta.get("created_at")) or fallback_time
    tags_value = meta.get("tags")
    return LegacyMemory(
        id=memory_id(raw_id, key),
        partition_key=key,
        scope=scope,
        content=document,
        tags=parse_tags(tags_value if isinstance(tags_value, str) else None),
        importance=LABEL_TO_LEVEL.get(str(meta.get("importance")), MEDIUM),
        created_at=created,
        old_id=label,
        old_key=raw_key,
    )


@dataclass(frozen=True, slots=True)
class LegacyMemo:
    partition_key: str
    content: str
    version: int
    updated_at: datetime
    old_key: str


def naive_local_to_utc(value: object, fallback: datetime) -> datetime:
    """The reference stored ``updated_at`` as a naive LOCAL time (§6.1)."""
    if isinstance(value, str) and value:
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return fallback
    if not isinstance(value, datetime):
        return fallback
    return (value.astimezone() if value.tzinfo is None else value).astimezone(UTC)


def convert_memos(
    rows: list[tuple[object, object, object, object]],
    *,
    max_chars: int,
    fallback_time: datetime,
    default_platform: str = "qq",
) -> tuple[list[LegacyMemo], list[Skipped]]:
    """Rows ``(user_id, content, version, updated_at)`` of the old memo table → memos.

    Empty memos mean "no memo" there: skipped. A memo longer than ``max_chars`` is
    skipped, not cut. Two old keys that migrate to the same key (``user_1`` and
    ``QQPlatform_Private_1``) keep the current-format one, then the newer one.
    """
    skipped: list[Skipped] = []
    chosen: dict[str, tuple[bool, LegacyMemo]] = {}
    for raw_key, content, version, updated in rows:
        label = str(raw_key)
        if not isinstance(content, str) or not content.strip():
            skipped.append(Skipped("memo", label, "空备忘录"))
            continue
        key = to_current(label, None, default_platform)
        if key is None:
            skipped.append(Skipped("memo", label, f"无法识别的分区键 {label!r}"))
            continue
        if len(content) > max_chars:
            skipped.append(
                Skipped("memo", label, f"长度 {len(content)} 超过 memo_max_chars {max_chars}")
            )
            continue
        memo = LegacyMemo(
            partition_key=key,
            content=content,
            version=version if isinstance(version, int) and version > 0 else 1,
            updated_at=naive_local_to_utc(updated, fallback_time),
            old_key=label,
        )
        current = label == key
        previous = chosen.get(key)
        if previous is None:
            chosen[key] = (current, memo)
            continue
        prev_current, prev = previous
        if (current, memo.updated_at) > (prev_current, prev.updated_at):
            chosen[key] = (current, memo)
            prev, memo = memo, prev
        skipped.append(
            Skipped("memo", memo.old_key, f"与 {prev.old_key} 迁移后是同一分区 {key}，保留后者")
        )
    return [memo for _, memo in chosen.values()], skipped


def parse_knowledge_index(text: str) -> list[dict[str, Any]]:
    """``knowledge_index.json``: a JSON array of entries with a ``kid`` (§10.2)."""
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("not a JSON array")
    return [item for item in data if isinstance(item, dict) and isinstance(item.get("kid"), str)]


@dataclass(frozen=True, slots=True)
class LegacyState:
    """What the old ``SubconsciousState`` payload (§8.10) carried that matters here."""

    total_runs: int
    penalty: int
    last_run_ts: float
    last_iter_summary: str
    last_abstracts: tuple[str, ...]
    pending_messages: tuple[dict[str, Any], ...]
    knowledge_suggestions: tuple[dict[str, Any], ...]
    idle_planner: dict[str, Any] | None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_state_payload(text: str) -> LegacyState:
    """The JSON payload of the ``amrita_memory`` state row, read defensively like the
    reference (wrong types fall back to defaults; ``last_run_ts`` from the legacy
    ``last_run_time`` when missing). Raises ``ValueError`` when it is not a JSON object."""
    data = json.loads(text or "{}")
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    last_ts = data.get("last_run_ts")
    if not isinstance(last_ts, int | float) or isinstance(last_ts, bool):
        parsed = parse_created_at(data.get("last_run_time"))
        last_ts = parsed.timestamp() if parsed else 0.0
    abstracts = data.get("last_abstracts")
    pending = data.get("pending_messages")
    suggestions = data.get("knowledge_suggestions")
    planner = data.get("idle_planner")
    summary = data.get("last_iter_summary")
    return LegacyState(
        total_runs=_int(data.get("total_runs")),
        penalty=_int(data.get("penalty")),
        last_run_ts=float(last_ts),
        last_iter_summary=summary if isinstance(summary, str) else "",
        last_abstracts=tuple(a for a in abstracts if isinstance(a, str))
        if isinstance(abstracts, list)
        else (),
        pending_messages=tuple(m for m in pending if isinstance(m, dict))
        if isinstance(pending, list)
        else (),
        knowledge_suggestions=tuple(s for s in suggestions if isinstance(s, dict))
        if isinstance(suggestions, list)
        else (),
        idle_planner=planner if isinstance(planner, dict) else None,
    )


def render_toml(tree: dict[str, Any], notes: dict[tuple[str, ...], str] | None = None) -> str:
    """A small TOML writer for a settings tree (scalars, lists of scalars, one level of
    tables), with an optional comment line above a key."""
    notes = notes or {}

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, list | tuple):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v), ensure_ascii=False)

    lines: list[str] = []
    for key, item in tree.items():
        if not isinstance(item, dict):
            if (key,) in notes:
                lines.append(f"# {notes[(key,)]}")
            lines.append(f"{key} = {value(item)}")
    for key, item in tree.items():
        if isinstance(item, dict):
            lines += ["", f"[{key}]"]
            for sub, v in item.items():
                if (key, sub) in notes:
                    lines.append(f"# {notes[(key, sub)]}")
                lines.append(f"{sub} = {value(v)}")
    return "\n".join(lines).lstrip("\n") + "\n"


def memory_problem(memory: LegacyMemory) -> str | None:
    """Why an old memory cannot be imported (None: it can), by the same rules and caps as
    every other writer (domain/validation.py): content 1..4,000 characters, tags at most
    200 characters joined, no NUL or lone surrogate anywhere, a key of the one key rule.

    Checked on the converted rows before the plan, so the dry run and the real run skip
    the same rows and report them, and one bad row no longer aborts the import.
    """
    fields = (
        ("content", memory.content.strip(), MAX_CONTENT_CHARS),
        ("tags", ", ".join(memory.tags), MAX_TAGS_CHARS),
        ("id", memory.id, MAX_ID_CHARS),
    )
    for name, text, cap in fields:
        try:
            check_text(text, max_chars=cap)
        except InvalidInput as exc:
            return f"{name} {exc.reason}"
    if not memory.content.strip():
        return "content 为空"
    try:
        check_partition_key(memory.partition_key)
    except InvalidInput as exc:
        return exc.reason
    return None


def memo_problem(memo: LegacyMemo) -> str | None:
    """Why an old memo cannot be imported (None: it can): text the database cannot store."""
    try:
        check_text(memo.content)
        check_partition_key(memo.partition_key)
    except InvalidInput as exc:
        return exc.reason
    return None
