"""Pure parts of the L3 loop: clustering the pre-pass pairs, partition-key helpers,
the prompt rendering rule (day granularity, undefined variables empty)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from amrita_memory_pg.domain.consolidation import clusters, is_private_key, key_subject
from amrita_memory_pg.services.l3_prompts import Prompts, render
from amrita_memory_pg.settings import SubconsciousSettings


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
