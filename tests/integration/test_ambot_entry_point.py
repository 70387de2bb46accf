"""``ambot memory …``: the reference's entry point (``ambot.commands: memory``) runs our commands."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest
from click.testing import CliRunner


def _ambot() -> click.Group:
    """What AmritaBot's ``ambot`` does with the group: load the entry point, attach it."""
    (point,) = [ep for ep in entry_points(group="ambot.commands") if ep.name == "memory"]
    memory = point.load()
    assert isinstance(memory, click.Group) and memory.name == "memory"

    @click.group()
    def ambot() -> None:
        """stand-in for the host's top-level group"""

    ambot.add_command(memory)
    return ambot


@pytest.fixture
def env(db_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    for name in ("AMRITA_MEMORY_CONFIG", "DATABASE_URL", "EMBEDDING_PROCTOL"):
        monkeypatch.delenv(name, raising=False)
    return {
        "AMRITA_MEMORY_DATABASE__URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMBOT_COMMAND_CONTEXT": "1",
    }


def test_ambot_memory_status_runs_our_status(env: dict[str, str]) -> None:
    result = CliRunner().invoke(_ambot(), ["memory", "status"], env=env)
    assert result.exit_code == 0, result.output
    assert "（最新）" in result.output  # AmritaBot users get the default, Chinese
    assert "记忆:        0 条，分布在 0 个分区" in result.output


def test_the_reference_arguments_are_accepted(env: dict[str, str]) -> None:
    ambot = _ambot()
    runner = CliRunner()
    keys = runner.invoke(ambot, ["memory", "migrate-keys", "--dry-run"], env=env)
    assert keys.exit_code == 0 and "[试运行] 需要改写 0 条记忆" in keys.output, keys.output
    listed = runner.invoke(ambot, ["memory", "backup", "list"], env=env)
    assert listed.exit_code == 0 and "无备份" in listed.output
    missing = runner.invoke(ambot, ["memory", "backup", "restore", "/nonexistent.json"], env=env)
    assert missing.exit_code == 1 and "备份文件不存在" in missing.output
    reindex = runner.invoke(ambot, ["memory", "reindex", "--yes"], env=env)
    assert reindex.exit_code == 0 and "记忆集合为空" in reindex.output, reindex.output
    helped = runner.invoke(ambot, ["memory", "--help"], env=env)
    assert "amrita-memory import-legacy" in helped.output
    for name in ("status", "reindex", "migrate-keys", "reset-fingerprint", "backup"):
        assert name in helped.output
