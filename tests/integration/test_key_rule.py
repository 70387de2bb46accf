"""One key rule for every surface: the CLI, the admin page and
``/memory`` accept and refuse the same partition keys (domain/keys.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.domain.keys import check_partition_key
from amrita_memory_pg.domain.validation import InvalidInput
from amrita_memory_pg.tools.context import ToolContext
from tests.integration.test_cli_fuzz import invoke
from tests.integration.test_web_edge import site

ROOT = ToolContext(platform="qq", user_id="99999", roles=frozenset({"superuser"}))
BAD = (
    "qq:private:1",
    "not a key",
    "<script>",
    "../../etc",
    "k" * 100_000,
    "QQPlatform_Private_../etc",
    "QQPlatform_Private_<b>",
)
#: old-style keys: the rule refuses them, every surface resolves them first
OLD = ("user_1",)
#: the console bot's own key is a key the product writes: every surface must take it
GOOD = ("global", "QQPlatform_Private_10001", "QQPlatform_Group_1", "ConsolePlatform_Private_user")


def test_the_rule() -> None:
    for key in GOOD:
        assert check_partition_key(key) == key
    for key in (*BAD, *OLD):
        with pytest.raises(InvalidInput, match="分区键"):
            check_partition_key(key)
    with pytest.raises(InvalidInput, match="是不是指 QQPlatform_Private_1"):
        check_partition_key("user_1")  # the legacy form names its current key


async def test_every_surface_refuses_the_same_keys(db_dsn: str, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[database]\nurl = "{db_dsn}"\n'
        '[embedding]\nprotocol = "hash"\n',
        encoding="utf-8",
    )
    async with site(db_dsn, tmp_path) as s:
        assert (await s.log_in()).status_code == 303
        command = MemoryCommand.over(s.mem)
        for key in BAD:
            for argv in (
                ["memory", "add", key, "x"],
                ["pause", key],
                ["consolidate", "--target", key],
            ):
                outcome = await asyncio.to_thread(invoke, ["--config", str(config), *argv])
                assert outcome.code == 2 and "分区键" in outcome.output, (argv[:2], outcome)
            page = await s.client.get("/open", params={"key": key[:1000]})
            assert page.status_code == 400 and "不是有效的分区键" in page.text
            if " " not in key:
                reply = await command.run(ROOT, f"pause {key}")
                assert isinstance(reply, TextReply) and "分区键" in reply.text, reply
        assert await s.mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
        assert await s.mem.pool.fetchval("SELECT count(*) FROM amrita_memory.paused_partition") == 0
        # an old-style key is the partition it is now, on every surface
        for key in OLD:
            outcome = await asyncio.to_thread(
                invoke, ["--config", str(config), "memory", "add", key, "旧键"]
            )
            assert outcome.code == 0, outcome
            assert f"{key} 是旧格式的分区键，现为 QQPlatform_Private_1" in outcome.output
            page = await s.client.get("/open", params={"key": key})
            assert page.status_code == 303
            assert page.headers["location"].endswith("/p/QQPlatform_Private_1/memories")
            reply = await command.run(ROOT, f"pause {key}")
            assert isinstance(reply, TextReply) and "已暂停 QQPlatform_Private_1" in reply.text
        assert (
            await s.mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = 'QQPlatform_Private_1'"
            )
            == 1
        )
        # and a good key works everywhere
        outcome = await asyncio.to_thread(
            invoke, ["--config", str(config), "memory", "add", "QQPlatform_Group_1", "x"]
        )
        assert outcome.code == 0, outcome
        reply = await command.run(ROOT, "pause QQPlatform_Group_1")
        assert isinstance(reply, TextReply) and "已暂停" in reply.text
        page = await s.client.get("/p/QQPlatform_Group_1/memories")
        assert page.status_code == 200
