"""Pure parts of the L3 loop: clustering the pre-pass pairs, partition-key helpers,
the prompt rendering rule (day granularity, undefined variables empty), the short ids
the loop is shown and the batch's look-up of them."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from amrita_memory_pg.domain.consolidation import clusters, is_private_key, key_subject, short_ids
from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.services.l3_prompts import (
    BATCH,
    KNOWLEDGE,
    MAIN,
    PREVIOUS_DEFAULTS,
    PROFILE,
    README,
    Prompts,
    render,
)
from amrita_memory_pg.settings import SubconsciousSettings
from amrita_memory_pg.tools.loop_edits import Snapshot


def test_clusters_are_connected_components_in_the_given_order() -> None:
    ids = ["a", "b", "c", "d", "e", "f"]
    pairs = [("e", "c", 0.9), ("b", "f", 0.95), ("c", "a", 0.91), ("x", "a", 0.99)]
    assert clusters(ids, pairs) == [["a", "c", "e"], ["b", "f"]]
    assert clusters(ids[:2], pairs) == []  # pairs outside the filtered ids are ignored
    assert clusters([], pairs) == []


def test_partition_key_helpers() -> None:
    assert key_subject("QQPlatform_Private_10001") == "10001"
    assert key_subject("QQPlatform_Group_777") == "777"
    assert key_subject("global") == "global"
    assert is_private_key("QQPlatform_Private_10001") and is_private_key("user_5")
    assert not is_private_key("QQPlatform_Group_777") and not is_private_key("global")


def test_templates_render_missing_variables_as_empty_text() -> None:
    assert render("[{{ current_time }}]{{ target_user_id }}", target_user_id="1") == "[]1"


def test_the_system_prompt_depends_on_the_day_only_and_guides_follow_the_tools(
    tmp_path: Path,
) -> None:
    prompts = Prompts(SubconsciousSettings(prompt_dir=tmp_path))
    one = prompts.system("10001", date(2026, 12, 3))
    assert one == prompts.system("10001", date(2026, 12, 3))
    assert one != prompts.system("10001", date(2026, 12, 4))
    assert "全局知识库" in one
    assert "全局知识库" not in prompts.system("10001", date(2026, 12, 3), knowledge=False)
    assert (tmp_path / "prompt" / "README.md").is_file()


def test_the_batch_guide_comes_only_with_the_batch_tool_and_names_no_target(
    tmp_path: Path,
) -> None:
    prompts = Prompts(SubconsciousSettings(prompt_dir=tmp_path))
    batched = prompts.system("10001", date(2026, 12, 3), batch=True)
    single = prompts.system("10001", date(2026, 12, 3), batch=False)
    assert "## 批量修改" in batched and "subconscious_merge_memories" not in batched
    assert "## 批量修改" not in single and "subconscious_merge_memories" in single
    assert "10001" not in batched  # cycles of other targets share the prefix
    assert batched == prompts.system("10002", date(2026, 12, 3), batch=True)
    assert (tmp_path / "prompt" / "batch_guide.md.jinja2").is_file()


#: the profile guide as 0.3.0–0.14.1 wrote it into prompt_dir on first use
PROFILE_0_14 = """## 用户画像
profile_hint 不为空时先读画像再增量更新；只写稳定特质（性格、偏好、背景、与机器人的关系、重要事件），不写一次性、不确定或敏感的内容；摘要不超过 200 字。
"""


def test_an_earlier_versions_untouched_default_is_replaced_and_an_edited_template_kept(
    tmp_path: Path,
) -> None:
    prompts = Prompts(SubconsciousSettings(prompt_dir=tmp_path))
    guide = tmp_path / "prompt" / "profile_guide.md.jinja2"
    guide.parent.mkdir(parents=True)
    guide.write_text(PROFILE_0_14, encoding="utf-8")

    system = prompts.system("10001", date(2026, 12, 3), profile=True)

    assert "subconscious_read_sessions" in system and "先读画像再增量更新" not in system
    assert guide.read_text(encoding="utf-8") == PROFILE
    edited = PROFILE_0_14.replace("200 字", "300 字")
    guide.write_text(edited, encoding="utf-8")
    assert "摘要不超过 300 字" in prompts.system("10001", date(2026, 12, 3), profile=True)
    assert guide.read_text(encoding="utf-8") == edited
    # today's defaults are not among the earlier ones (else every read would rewrite them)
    today = {"main": MAIN, "knowledge": KNOWLEDGE, "profile": PROFILE, "batch": BATCH}
    today["readme"] = README
    for kind, text in today.items():
        assert hashlib.sha256(text.encode()).hexdigest() not in PREVIOUS_DEFAULTS[kind]


def test_short_ids_are_the_shortest_unique_prefixes_of_at_least_eight() -> None:
    ids = ["0123456789ab", "0123456788ff", "fedcba9876543210", "abc", "abcdefgh12", "abcdefgh34"]
    short = short_ids(ids)
    assert short["fedcba9876543210"] == "fedcba98"
    assert (short["0123456789ab"], short["0123456788ff"]) == ("0123456789", "0123456788")
    assert (short["abcdefgh12"], short["abcdefgh34"]) == ("abcdefgh1", "abcdefgh3")
    assert short["abc"] == "abc"  # shorter than the minimum: whole
    for memory_id, prefix in short.items():
        assert memory_id.startswith(prefix)
        others = [other for other in ids if other != memory_id]
        assert not any(other.startswith(prefix) for other in others) or prefix == memory_id


def _record(memory_id: str) -> MemoryRecord:
    at = datetime(2026, 12, 3, tzinfo=UTC)
    return MemoryRecord(memory_id, "k", "user", "x", (), 5, None, "auto", None, at, at)


async def test_a_batch_snapshot_finds_prefixes_refuses_ambiguous_and_deleted_ones() -> None:
    snapshot = Snapshot([_record("abcdefgh12"), _record("abcdefgh34"), _record("0123456789")])
    found = await snapshot.find("01234567")
    assert found is not None and found.id == "0123456789"
    assert await snapshot.find("abcdefgh3") is not None
    assert await snapshot.find("abcd") is None  # below eight characters only an exact id
    with pytest.raises(ToolError, match="对应多条记忆"):
        await snapshot.find("abcdefgh")
    snapshot.delete(["0123456789"], 2)
    with pytest.raises(ToolError, match="第 2 个操作"):
        await snapshot.find("01234567")
    assert not await snapshot.empty()
