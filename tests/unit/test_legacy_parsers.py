"""The pure parsers behind ``import-legacy`` (amrita_memory_pg/domain/legacy.py)."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime

import pytest

from amrita_memory_pg.domain.legacy import (
    LegacyMemory,
    Skipped,
    convert_memory,
    convert_memos,
    memory_id,
    naive_local_to_utc,
    parse_knowledge_index,
    parse_state_payload,
    render_toml,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("key", "scope", "expected_key", "expected_scope"),
    [
        ("QQPlatform_Private_1", "user", "QQPlatform_Private_1", "user"),
        ("user_007", "user", "QQPlatform_Private_007", "user"),
        ("group_5", None, "QQPlatform_Group_5", "group"),  # scope from the key's kind
        ("42", "group", "QQPlatform_Group_42", "group"),
        ("Foo_Private_3", "user", "Foo_Private_3", "user"),
    ],
)
def test_memory_keys_go_through_the_key_migration(
    key: str, scope: str | None, expected_key: str, expected_scope: str
) -> None:
    meta = {
        "user_id": key,
        "importance": "high",
        "tags": "a, b，c",
        "created_at": "2026-03-04T05:06:07.123456+00:00",
    }
    if scope:
        meta["scope"] = scope
    result = convert_memory("f" * 32, "text", meta, fallback_time=T0)
    assert isinstance(result, LegacyMemory)
    assert (result.partition_key, result.scope) == (expected_key, expected_scope)
    assert result.id == "f" * 32 and result.importance == 8 and result.tags == ("a", "b", "c")
    assert result.created_at == datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("document", "meta", "reason"),
    [
        ("", {"user_id": "user_1", "scope": "user"}, "空文本"),
        ("x", {"scope": "user"}, "没有分区键"),
        ("x", {"user_id": "QQPlatform_Channel_9", "scope": "group"}, "无法识别"),
        ("x", {"user_id": "12345"}, "无法识别"),  # bare digits need a scope
        (None, {"user_id": "user_1"}, "空文本"),
    ],
)
def test_unimportable_memories_say_why(document: object, meta: dict[str, str], reason: str) -> None:
    result = convert_memory("id", document, meta, fallback_time=T0)
    assert isinstance(result, Skipped) and reason in result.reason


def test_a_non_hex_id_gets_a_stable_derived_one_and_missing_fields_their_defaults() -> None:
    a = convert_memory("old-7", "x", {"user_id": "user_1"}, fallback_time=T0)
    b = convert_memory("old-7", "x", {"user_id": "user_1"}, fallback_time=T0)
    assert isinstance(a, LegacyMemory) and isinstance(b, LegacyMemory)
    assert a.id == b.id == memory_id("old-7", "QQPlatform_Private_1") and len(a.id) == 32
    assert (a.importance, a.tags, a.created_at) == (5, (), T0)


def test_memos_skip_empty_too_long_and_unrecognised_and_keep_the_current_key_on_a_clash() -> None:
    rows: list[tuple[object, object, object, object]] = [
        ("user_1", "旧格式", 2, "2026-01-05 00:00:00"),
        ("QQPlatform_Private_1", "新格式", 1, "2026-01-01 00:00:00"),
        ("QQPlatform_Group_2", "", 1, None),
        ("QQPlatform_Group_3", "x" * 101, 1, None),
        ("123", "数字键", 1, None),
        ("group_4", "群", None, None),
    ]
    memos, skipped = convert_memos(rows, max_chars=100, fallback_time=T0)
    by_key = {m.partition_key: m for m in memos}
    assert by_key["QQPlatform_Private_1"].content == "新格式"
    assert (
        by_key["QQPlatform_Group_4"].version == 1 and by_key["QQPlatform_Group_4"].updated_at == T0
    )
    assert set(by_key) == {"QQPlatform_Private_1", "QQPlatform_Group_4"}
    reasons = {s.item: s.reason for s in skipped}
    assert set(reasons) == {"user_1", "QQPlatform_Group_2", "QQPlatform_Group_3", "123"}
    assert "超过 memo_max_chars 100" in reasons["QQPlatform_Group_3"]


def test_naive_times_are_local() -> None:
    naive = datetime(2026, 1, 1, 12, 0)  # noqa: DTZ001 - naive on purpose
    assert naive_local_to_utc(naive, T0) == naive.astimezone().astimezone(UTC)
    assert naive_local_to_utc("garbage", T0) == T0


def test_knowledge_index() -> None:
    index = parse_knowledge_index('[{"kid": "a1"}, {"no": 1}, 3]')
    assert index == [{"kid": "a1"}]
    with pytest.raises(ValueError):
        parse_knowledge_index('{"kid": "a1"}')


def test_state_payload_is_read_defensively() -> None:
    state = parse_state_payload(
        '{"total_runs": 3, "penalty": "x", "last_run_time": "2026-01-01T00:00:00+00:00",'
        ' "pending_messages": [{"content": "hi"}, 1], "last_abstracts": ["a", 2]}'
    )
    assert (state.total_runs, state.penalty) == (3, 0)
    assert state.last_run_ts == T0.timestamp()
    assert state.pending_messages == ({"content": "hi"},) and state.last_abstracts == ("a",)
    assert parse_state_payload("").total_runs == 0
    with pytest.raises(ValueError):
        parse_state_payload("[1]")


def test_render_toml_round_trips_with_notes() -> None:
    tree = {
        "per_session_memory_limit": 50,
        "decay": {"half_life_days": 45.0, "enabled": False},
        "subconscious": {"target_user_id": "10001", "allowed_tools": ["a", '引号"']},
    }
    text = render_toml(tree, {("subconscious", "allowed_tools"): "not used yet"})
    assert tomllib.loads(text) == tree
    assert "# not used yet\nallowed_tools" in text
