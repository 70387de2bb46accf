"""The re-embed switch and a row-locking edit cannot deadlock (load run, 40P01 seen once).

update_memory_v3 locks its row (SELECT ... FOR UPDATE) and UPDATEs it in a later
statement. A switch that took the tables IN SHARE ROW EXCLUSIVE MODE (what the first one
did) does not wait for that row lock, so its UPDATE waits for the edit's row while the
edit's UPDATE waits for the switch's table lock. The edit is replayed here statement by
statement on its own connection, with the switch started between its two statements:
deterministic, no timing. The control is reembed_switch_v2 with that weaker lock
(:data:`WEAK`, made from its own definition), which deadlocks where v2 does not.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.maintenance.reembed import (
    _begin,
    _stage_kind,
    in_retried_transaction,
    reindex,
)
from tests.support.memory import memory_on

KEY = "QQPlatform_Private_10001"

#: reembed_switch_v2 with the weaker table lock of the first switch, and so its upgrade to
#: ACCESS EXCLUSIVE only when it drops an index: the control that shows the interleavings
#: below deadlock a switch that does not take its strongest lock first.
WEAK = "reembed_switch_weak_probe"


async def install_weak_switch(conn: asyncpg.Connection) -> None:
    definition = await conn.fetchval(
        "SELECT pg_get_functiondef('amrita_memory.reembed_switch_v2(text, text, text, text,"
        " integer, timestamptz)'::regprocedure)"
    )
    for lock in ("IN ACCESS EXCLUSIVE MODE", "IN EXCLUSIVE MODE"):
        assert lock in definition
        definition = definition.replace(lock, "IN SHARE ROW EXCLUSIVE MODE")
    await conn.execute(definition.replace("reembed_switch_v2(", f"{WEAK}("))


async def _wait_until_blocked(pool: asyncpg.Pool, pid: int) -> None:
    """Until backend ``pid`` waits for a lock (the switch is in the edit's way)."""
    for _ in range(500):
        waiting = await pool.fetchval(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
        )
        if waiting:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the switch never waited for the edit's lock")


#: update_memory_v3's first statement: the row lock (ROW SHARE on the table)
ROW_LOCK = "SELECT 1 FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2 FOR UPDATE"
#: update_memory_v3's second statement (ROW EXCLUSIVE on the table)
EDIT = (
    "UPDATE amrita_memory.memory SET content = '改过 狗', updated_at = now()"
    " WHERE partition_key = $1 AND id = $2"
)
#: delete_memory_v1's (the pair the load run's server log showed)
DELETE = "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2"
#: a transaction that reads before it writes (ACCESS SHARE on the table)
READ = "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1 AND id <> $2"


async def _switch_beside_an_edit(
    db_dsn: str,
    tmp_path: Path,
    switch_fn: str,
    first: str = ROW_LOCK,
    ann: bool = False,
    second: str = "",
) -> dict[str, object]:
    """Stage every vector, run ``first`` as the edit, the switch, then the edit's UPDATE.

    ``ann``: the partition has an HNSW index of the old dimension, which the switch drops.
    """
    async with memory_on(db_dsn, tmp_path) as old:
        ids = [
            (await old.memories.add(partition_key=KEY, scope="user", content=f"第{i}条 猫")).id
            for i in range(12)
        ]
        if ann:
            built = await maintain_ann_indexes(old.pool, min_rows=10)
            assert len(built.built) == 1
    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=256) as new:
        await _begin(new.pool, new.embedder, datetime.now(UTC))
        for kind in ("memory", "knowledge"):
            await _stage_kind(new.pool, new.embedder, kind, 100, lambda n: None)
        edit = await asyncpg.connect(db_dsn)
        switcher = await asyncpg.connect(db_dsn)
        if switch_fn == WEAK:
            await install_weak_switch(switcher)
        outcome: dict[str, object] = {}
        try:
            tx = edit.transaction()
            await tx.start()
            await edit.execute(first, KEY, ids[5])
            provider = new.embedder.provider

            async def switch() -> asyncpg.Record | None:
                async with switcher.transaction():
                    return await switcher.fetchrow(
                        f"SELECT * FROM amrita_memory.{switch_fn}($1, $2, $3, $4, $5, $6)",
                        new.embedder.fingerprint,
                        provider.protocol,
                        provider.model,
                        provider.base_url,
                        new.embedder.dim,
                        datetime.now(UTC),
                    )

            switching = asyncio.create_task(switch())
            await _wait_until_blocked(new.pool, switcher.get_server_pid())
            # ... and its second: the UPDATE or DELETE (ROW EXCLUSIVE on the table).
            try:
                await asyncio.wait_for(edit.execute(second or EDIT, KEY, ids[5]), 30)
                await tx.commit()
                outcome["edit"] = "ok"
            except asyncpg.exceptions.DeadlockDetectedError:
                await tx.rollback()
                outcome["edit"] = "deadlock"
            try:
                row = await asyncio.wait_for(switching, 30)
                assert row is not None
                outcome["switch"] = dict(row)
            except asyncpg.exceptions.DeadlockDetectedError:
                outcome["switch"] = "deadlock"
            if outcome["edit"] == "ok":
                # The edited row is pending again; a full run stages it and switches.
                report = await reindex(new.pool, new.embedder, batch_size=100)
                outcome["ann_left"] = await new.pool.fetchval(
                    "SELECT count(*) FROM amrita_memory.ann_index WHERE dim <> 256"
                )
                outcome["reindex_memories"] = report.memories
                outcome["content"] = await new.pool.fetchval(
                    "SELECT content FROM amrita_memory.memory WHERE id = $1", ids[5]
                )
        finally:
            await edit.close()
            await switcher.close()
    return outcome


def assert_edit_then_switch(outcome: dict[str, Any]) -> None:
    """The edit committed first; the switch then found the edited row without a valid
    staged vector (nothing switched), and a full reindex re-embedded all 12 rows."""
    assert outcome["edit"] == "ok", outcome
    assert outcome["switch"] == {
        "switched": False,
        "pending": 1,
        "memories": 0,
        "knowledge": 0,
        "dim": None,
    }, outcome
    assert outcome["reindex_memories"] == 12


async def test_the_switch_waits_for_a_row_locking_edit_instead_of_deadlocking(
    db_dsn: str, tmp_path: Path
) -> None:
    outcome = await _switch_beside_an_edit(db_dsn, tmp_path, "reembed_switch_v2")
    assert_edit_then_switch(outcome)
    assert outcome["content"] == "改过 狗"


async def test_a_switch_with_the_weaker_lock_deadlocks_in_the_same_interleaving(
    db_dsn: str, tmp_path: Path
) -> None:
    """The reproduction is real: v2 with the first switch's lock deadlocks."""
    outcome = await _switch_beside_an_edit(db_dsn, tmp_path, WEAK)
    assert "deadlock" in (outcome["edit"], outcome["switch"]), outcome


@pytest.mark.parametrize(("switch_fn", "deadlocks"), [(WEAK, True), ("reembed_switch_v2", False)])
async def test_the_switch_beside_a_row_locking_delete(
    db_dsn: str, tmp_path: Path, switch_fn: str, deadlocks: bool
) -> None:
    """delete_memory_v1's FOR UPDATE then DELETE: the pair the load run's server log showed."""
    outcome = await _switch_beside_an_edit(db_dsn, tmp_path, switch_fn, second=DELETE)
    if deadlocks:
        assert "deadlock" in (outcome["edit"], outcome["switch"]), outcome
        return
    assert outcome["edit"] == "ok", outcome
    # The switch ran after the delete: nothing pending, the 11 rows left switched.
    assert outcome["switch"] == {
        "switched": True,
        "pending": 0,
        "memories": 11,
        "knowledge": 0,
        "dim": 256,
    }, outcome


@pytest.mark.parametrize(("switch_fn", "deadlocks"), [(WEAK, True), ("reembed_switch_v2", False)])
async def test_a_dimension_change_dropping_an_ann_index_beside_a_read_then_write(
    db_dsn: str, tmp_path: Path, switch_fn: str, deadlocks: bool
) -> None:
    """A switch that upgrades its lock to ACCESS EXCLUSIVE (DROP INDEX) while holding the
    table deadlocks with a transaction that had read the table and then writes it. v2 takes
    ACCESS EXCLUSIVE first, so the reader-writer finishes and the switch follows."""
    outcome = await _switch_beside_an_edit(db_dsn, tmp_path, switch_fn, first=READ, ann=True)
    if deadlocks:
        assert "deadlock" in (outcome["edit"], outcome["switch"]), outcome
        return
    assert_edit_then_switch(outcome)
    assert outcome["ann_left"] == 0


async def test_a_deadlocked_transaction_is_retried_a_bounded_number_of_times(
    db_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        calls = 0

        async def flaky(conn: asyncpg.pool.PoolConnectionProxy) -> int:
            nonlocal calls
            calls += 1
            await conn.execute(
                "INSERT INTO amrita_memory.reembed_job"
                " (id, target_fingerprint, started_at, updated_at) VALUES (1, $1, now(), now())",
                f"attempt-{calls}",
            )
            if calls < 3:
                # A real server error with the deadlock's SQLSTATE, after a write.
                await conn.execute(
                    "DO $$ BEGIN RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01'; END $$"
                )
            return calls

        assert await in_retried_transaction(mem.pool, flaky, "test batch") == 3
        # The failed attempts were rolled back whole: one job row, that of the third.
        jobs = await mem.pool.fetch("SELECT target_fingerprint FROM amrita_memory.reembed_job")
        assert [r["target_fingerprint"] for r in jobs] == ["attempt-3"]
        assert sum("retrying" in r.getMessage() for r in caplog.records) == 2

        calls = -10  # always fails: the error reaches the caller after the bounded attempts
        await mem.pool.execute("DELETE FROM amrita_memory.reembed_job")
        with pytest.raises(asyncpg.exceptions.DeadlockDetectedError):
            await in_retried_transaction(mem.pool, flaky, "test batch", attempts=2)
        assert calls == -8
