"""``ambot memory …`` through AmritaBot's own command line (ambot-inlinectl's ``ambot``),
which finds the reference's entry point (``ambot.commands: memory``) — ours — in the bot's
project directory, reading the bot's ``.env`` like the bot does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.amritabot.conftest import Host
from tests.amritabot.host import TARGET

AMBOT = Path(sys.executable).parent / "ambot"


def ambot(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``ambot`` console script, run in the bot's project directory."""
    return subprocess.run(
        [str(AMBOT), *args],
        cwd=host.root,
        env={**os.environ, "PATH": f"{AMBOT.parent}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_ambot_memory_status_reports_the_bots_store(host: Host) -> None:
    memory = host.runtime.require()
    await memory.memories.add(partition_key=TARGET, scope="user", content="用户住在上海")
    done = ambot(host, "memory", "status")
    assert done.returncode == 0, done.stdout + done.stderr
    # one language on the screen: Chinese, the default an AmritaBot user gets
    assert "（最新）" in done.stdout
    assert "记忆:        1 条，分布在 1 个分区" in done.stdout
    assert "L3 模型:     在 AmritaBot 中为它的模型预设" in done.stdout
    listed = ambot(host, "cmds")
    assert listed.returncode == 0 and "• memory" in listed.stdout, listed.stdout


def test_the_reference_arguments_are_accepted(host: Host) -> None:
    """The same command group as the console script, in this process (faster)."""
    from ambot_inlinectl import main

    assert Path.cwd() == host.root  # the bot's directory: its .env names the database
    runner = CliRunner()
    keys = runner.invoke(main, ["memory", "migrate-keys", "--dry-run"])
    assert keys.exit_code == 0 and "[试运行] 需要改写 0 条记忆" in keys.output, keys.output
    listed = runner.invoke(main, ["memory", "backup", "list"])
    assert listed.exit_code == 0 and "无备份" in listed.output, listed.output
    missing = runner.invoke(main, ["memory", "backup", "restore", "/nonexistent.json"])
    assert missing.exit_code == 1 and "备份文件不存在" in missing.output
    reindex = runner.invoke(main, ["memory", "reindex", "--yes"])
    assert reindex.exit_code == 0 and "记忆集合为空" in reindex.output, reindex.output
    helped = runner.invoke(main, ["memory", "--help"])
    assert "amrita-memory import-legacy" in helped.output
    for name in ("status", "reindex", "migrate-keys", "reset-fingerprint", "backup"):
        assert name in helped.output
