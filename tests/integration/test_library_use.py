"""What the README promises a script or another plugin: three lines on a throwaway store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amrita_memory_pg import ToolContext, open_memory
from amrita_memory_pg.domain.errors import ConfigError
from tests.support.cli import clean_env


@pytest.mark.slow
async def test_open_memory_on_a_throwaway_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in clean_env().items():
        monkeypatch.setenv(name, value)
    for name in ("DATABASE_URL", "AMRITA_MEMORY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    ctx = ToolContext(platform="qq", user_id="10001", group_id=None, roles=frozenset())
    async with open_memory(data_dir=tmp_path / "mem", embedding__protocol="hash") as mem:
        reply = json.loads(
            await mem.call_tool(
                "write_memory",
                {"content": "我喜欢猫", "tags": "偏好", "importance": "medium", "scope": "user"},
                ctx,
            )
        )
        assert reply["status"] == "success", reply
        found = json.loads(
            await mem.call_tool("read_memory", {"query": "猫", "scope": "user"}, ctx)
        )
        assert found["documents"] == [["我喜欢猫"]]
    assert (tmp_path / "mem" / "pg" / "PG_VERSION").is_file()


async def test_settings_and_overrides_together_are_refused(tmp_path: Path) -> None:
    from amrita_memory_pg.settings import load_settings

    settings = load_settings(env={}, read_default_files=False)
    with pytest.raises(ConfigError, match="not both"):
        async with open_memory(settings, data_dir=tmp_path):
            pass
