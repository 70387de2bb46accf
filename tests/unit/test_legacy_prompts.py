"""import-legacy names each of the old plugin's L3 prompt templates and says why it is
not carried."""

from __future__ import annotations

from pathlib import Path

from amrita_memory_pg.maintenance.legacy_prompts import REASONS, UNKNOWN, legacy_prompts


def test_every_old_template_is_named_with_its_reason(tmp_path: Path) -> None:
    data = tmp_path / "bot" / "data" / "amrita_plugin_memory"
    data.mkdir(parents=True)
    prompt = tmp_path / "bot" / "config" / "amrita_plugin_memory" / "prompt"
    prompt.mkdir(parents=True)
    for name in [*REASONS, "README.md", "notes.txt"]:
        (prompt / name).write_text("x", encoding="utf-8")
    found = {p.path.name: p.reason for p in legacy_prompts(data)}
    assert set(found) == {*REASONS, "notes.txt"}  # the generated README is not listed
    assert found["subconscious_main.md.jinja2"].startswith("主模板不导入")
    assert "character_prompt" in found["subconscious_main.md.jinja2"]
    assert found["notes.txt"] == UNKNOWN


def test_no_prompt_directory_lists_nothing(tmp_path: Path) -> None:
    assert legacy_prompts(tmp_path / "data" / "amrita_plugin_memory") == []
