"""The sweep's history: one sweep_change row per batch, read per memory with the rest of
its history (memory_history_v1), and the trail's bounds kept once per run with the
CONFIGURED [trail] numbers (a sweep that kept them per batch used the defaults 20 / 30,
whatever was configured)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from amrita_memory_pg.memory import Memory
from tests.support.memory import memory_on

KEY = "QQPlatform_Private_10001"


async def _history(mem: Memory, memory_id: str) -> list[tuple[str, object, object]]:
    """(op, before importance, after importance) of a memory's changes, oldest first."""
    rows = await mem.pool.fetch(
        "SELECT op, before, after FROM amrita_memory.memory_history_v1($1, $2, 100) ORDER BY seq",
        KEY,
        memory_id,
    )

    def importance(fields: str | None) -> object:
        return None if fields is None else json.loads(fields)["importance"]

    return [(r["op"], importance(r["before"]), importance(r["after"])) for r in rows]


async def test_a_sweep_run_records_each_change_and_keeps_the_configured_bounds(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(
        db_dsn,
        tmp_path,
        trail__history_per_memory=3,
        trail__history_keep_deleted_days=10,
        decay__sweep_enabled=False,
    ) as mem:
        now = datetime.now(UTC)
        # high importance, 100 days old: due for demotion; three edits before (the trigger
        # keeps 3: the create row is cut by the third edit)
        edited = await mem.memories.add(
            partition_key=KEY, scope="user", content="爱爬山", importance=9,
            now=now - timedelta(days=100),
        )  # fmt: skip
        for text in ("爱爬山和游泳", "爱爬山、游泳", "周末爬山"):
            await mem.memories.update(KEY, edited.id, content=text, now=now - timedelta(days=99))
        assert [op for op, _, _ in await _history(mem, edited.id)] == ["update"] * 3
        # low importance, 8 days old: purged
        purged = await mem.memories.add(
            partition_key=KEY, scope="user", content="今天吃了面", importance=2,
            now=now - timedelta(days=8),
        )  # fmt: skip
        fresh = await mem.memories.add(
            partition_key=KEY, scope="user", content="刚说的话", importance=5, now=now
        )
        # two memories deleted earlier: one 11 days ago (past the 10 kept), one today
        old_gone = await mem.memories.add(partition_key=KEY, scope="user", content="旧事")
        new_gone = await mem.memories.add(partition_key=KEY, scope="user", content="新事")
        assert await mem.memories.delete(KEY, old_gone.id, by_person=True)
        assert await mem.memories.delete(KEY, new_gone.id, by_person=True)
        await mem.pool.execute(
            "UPDATE amrita_memory.memory_change SET at = at - interval '11 days'"
            " WHERE partition_key = $1 AND memory_id = $2",
            KEY,
            old_gone.id,
        )

        report = await mem.memories.sweep(now=now, force=True)
        assert (report.demoted, report.purged) == (1, 1)

        # the demotion is the newest change; the bound of 3 counts the memory's own rows
        # (its three edits), the sweep's entry is in the batch row (v6), kept 10 days
        assert await _history(mem, edited.id) == [
            ("update", 9, 9),
            ("update", 9, 9),
            ("update", 9, 9),
            ("update", 9, 5),
        ]
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.sweep_change") == 1
        assert await _history(mem, purged.id) == [("create", None, 2), ("delete", 2, None)]
        assert await _history(mem, fresh.id) == [("create", None, 5)]
        # the history of a memory deleted 11 days ago went; today's stays
        assert await _history(mem, old_gone.id) == []
        assert [op for op, _, _ in await _history(mem, new_gone.id)] == ["create", "delete"]


async def test_trim_history_counts_what_it_cuts_and_expires(db_dsn: str, tmp_path: Path) -> None:
    """The operator's call (psql> SELECT * FROM amrita_memory.trim_history_v1(20, 30))."""
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        rec = await mem.memories.add(partition_key=KEY, scope="user", content="猫", importance=5)
        await mem.memories.update(KEY, rec.id, content="橘猫")
        await mem.memories.update(KEY, rec.id, content="胖橘猫")
        gone = await mem.memories.add(partition_key=KEY, scope="user", content="狗")
        assert await mem.memories.delete(KEY, gone.id, by_person=True)
        await mem.pool.execute(
            "UPDATE amrita_memory.memory_change SET at = at - interval '40 days'"
            " WHERE memory_id = $1",
            gone.id,
        )
        trim = "SELECT trimmed, expired FROM amrita_memory.trim_history_v1($1, 30)"
        assert tuple(await mem.pool.fetchrow(trim, 20)) == (0, 2)  # the dog's create + delete
        assert tuple(await mem.pool.fetchrow(trim, 1)) == (2, 0)  # the cat's two oldest
        assert [op for op, _, _ in await _history(mem, rec.id)] == ["update"]
        assert tuple(await mem.pool.fetchrow(trim, 1)) == (0, 0)
