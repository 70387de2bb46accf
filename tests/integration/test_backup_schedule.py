"""Backups you can count on: retention per reason keeps the backup taken
before a destructive step; ``backup verify`` restores into a throwaway database and finds
a truncated or edited backup; a scheduled slot is taken by one process of the fleet."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from amrita_memory_pg.domain.errors import BackupError
from amrita_memory_pg.maintenance.backup import create_backup, delete_backup, list_backups
from amrita_memory_pg.maintenance.scheduled import run_scheduled_backup
from amrita_memory_pg.maintenance.verify import SCRATCH_PREFIX, verify_backup
from tests.support.cli import run_cli
from tests.support.memory import memory_on

KEY = "QQPlatform_Private_10001"


async def test_routine_backups_never_rotate_out_the_pre_destructive_one(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(
        db_dsn, tmp_path, embedding__reembed_backup_keep=2, backup__keep_scheduled=3
    ) as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="一条")
        first_guard = await create_backup(mem.store, reason="before-restore")
        guard = await create_backup(mem.store, reason="before-reembed")
        clearing = await create_backup(mem.store, reason=f"before clearing {KEY}")
        manual = [await create_backup(mem.store) for _ in range(4)]
        scheduled = [await create_backup(mem.store, reason="scheduled") for _ in range(5)]
        kept = {i.stem for i in list_backups(mem.store.backups_dir)}
        # the newest N of each reason …
        assert {i.stem for i in manual} & kept == {i.stem for i in manual[-2:]}
        assert {i.stem for i in scheduled} & kept == {i.stem for i in scheduled[-3:]}
        # … and the backups taken before destructive steps: none of them was pushed out
        assert {first_guard.stem, guard.stem, clearing.stem} <= kept
        # with keep = 1, older ones of a reason go, but never the newest pre-destructive one
        async with memory_on(db_dsn, tmp_path, embedding__reembed_backup_keep=1) as tight:
            await create_backup(tight.store, reason="before-reembed")
            newest_guard = list_backups(tight.store.backups_dir)[-1]
            for _ in range(2):
                await create_backup(tight.store)
            kept = {i.stem for i in list_backups(tight.store.backups_dir)}
            assert newest_guard.stem in kept and guard.stem not in kept
            # the operator removes it
            delete_backup(tight.store.backups_dir, newest_guard.stem)
            assert newest_guard.stem not in {i.stem for i in list_backups(tight.store.backups_dir)}
            with pytest.raises(BackupError, match="no backup named"):
                delete_backup(tight.store.backups_dir, newest_guard.stem)


async def _scratch_databases(mem: object) -> list[str]:
    rows = await mem.pool.fetch(  # type: ignore[attr-defined]
        "SELECT datname FROM pg_database WHERE datname LIKE $1", SCRATCH_PREFIX + "%"
    )
    return [r["datname"] for r in rows]


async def test_verify_passes_a_good_backup_and_finds_truncated_or_edited_ones(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        for i in range(6):
            await mem.memories.add(partition_key=KEY, scope="user", content=f"记忆 {i}")
        await mem.memos.replace(KEY, "备忘")
        await mem.pool.execute(
            "INSERT INTO amrita_memory.paused_partition VALUES ($1, now(), 'person:1', NULL)", KEY
        )
        info = await create_backup(mem.store)
        good = await verify_backup(mem.store, info.stem)
        assert good.ok, good.problems
        assert set(good.found) == {"jsonl", "dump"}
        assert good.found["jsonl"] == good.expected == good.found["dump"]

        lines = info.jsonl_path.read_text(encoding="utf-8").splitlines()
        # truncated: the last row is gone (a copy cut short)
        info.jsonl_path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
        truncated = await verify_backup(mem.store, info.stem)
        assert not truncated.ok and "incomplete" in truncated.problems[0]

        # edited: same number of rows, one memory's text changed
        edited = []
        for line in lines:
            item = json.loads(line)
            if item.get("type") == "memory" and item["content"] == "记忆 3":
                item["content"] = "被篡改"
            edited.append(json.dumps(item, ensure_ascii=False))
        info.jsonl_path.write_text("\n".join(edited) + "\n", encoding="utf-8")
        changed = await verify_backup(mem.store, info.stem)
        assert changed.problems == ["jsonl: memory differs in content from what was backed up"]

        # a damaged dump (cut in half)
        info.jsonl_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        data = info.dump_path.read_bytes()
        info.dump_path.write_bytes(data[: len(data) // 2])
        broken = await verify_backup(mem.store, info.stem)
        assert len(broken.problems) == 1 and broken.problems[0].startswith("dump:")
        assert await _scratch_databases(mem) == []  # every throwaway database dropped


async def test_a_slot_is_taken_by_one_process_when_two_tick_at_once(
    db_dsn: str, tmp_path: Path
) -> None:
    """Two services of a fleet (own pools, own data directories) tick at the same moment."""
    common = {"backup__schedule": "daily@03:00", "backup__timezone": "UTC", "backup__verify": False}
    async with (
        memory_on(db_dsn, tmp_path / "a", **common) as a,
        memory_on(db_dsn, tmp_path / "b", **common) as b,
    ):
        await a.memories.add(partition_key=KEY, scope="user", content="一条")
        now = datetime(2026, 12, 4, 5, 0, tzinfo=UTC)
        for _ in range(3):  # three rounds of simultaneous ticks in one slot
            outcomes = await asyncio.gather(
                run_scheduled_backup(a.store, now=now), run_scheduled_backup(b.store, now=now)
            )
            now += timedelta(minutes=5)
        backups = list_backups(a.store.backups_dir) + list_backups(b.store.backups_dir)
        assert len(backups) == 1 and backups[0].reason == "scheduled"
        assert not any(o.claimed for o in outcomes)  # the last round: already taken
        state = await a.pool.fetchrow("SELECT * FROM amrita_memory.backup_schedule")
        assert state["last_slot"] == datetime(2026, 12, 4, 3, 0, tzinfo=UTC)
        assert state["ok"] is True and state["stem"] == backups[0].stem
        # the next day's slot: again exactly one, verified this time
        verifying = {**common, "backup__verify": True}
        async with (
            memory_on(db_dsn, tmp_path / "a", **verifying) as c,
            memory_on(db_dsn, tmp_path / "b", **verifying) as d,
        ):
            later = datetime(2026, 12, 5, 3, 1, tzinfo=UTC)
            results = await asyncio.gather(
                run_scheduled_backup(c.store, now=later), run_scheduled_backup(d.store, now=later)
            )
        assert sum(o.claimed for o in results) == 1
        took = next(o for o in results if o.claimed)
        assert took.ok and took.verify is not None and took.verify.ok
        # no schedule: a tick does nothing
        async with memory_on(db_dsn, tmp_path / "c") as off:
            assert (await run_scheduled_backup(off.store)).slot is None


async def test_backup_cli_verify_scheduled_and_delete(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="一条")
    env = {
        "DATABASE_URL": db_dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path),
        "AMRITA_MEMORY_BACKUP__SCHEDULE": "every 6h",
    }
    first = run_cli("backup", "scheduled", env=env)
    assert first.returncode == 0, first.stderr
    assert "backed up to" in first.stdout and "verified" in first.stdout
    again = run_cli("backup", "scheduled", env=env)
    assert again.returncode == 0 and "is backed up by another process" in again.stdout
    status = run_cli("status", env=env)
    assert status.returncode == 0, status.stderr
    assert (
        "scheduled:   every 6h; slot " in status.stdout and ": ok (amrita_memory_" in status.stdout
    )
    stem = list_backups(tmp_path / "backups")[0].stem
    async with memory_on(db_dsn, tmp_path) as mem:
        guard = await create_backup(mem.store, reason="before-reembed")
    listed = run_cli("backup", "list", env=env)
    assert f"{guard.stem}  1 memories" in listed.stdout and "rotation keeps it" in listed.stdout
    delete_backup(tmp_path / "backups", guard.stem)
    checked = run_cli("backup", "verify", stem, env=env)
    assert checked.returncode == 0, checked.stderr
    assert "is whole" in checked.stdout
    jsonl = tmp_path / "backups" / f"{stem}.jsonl"
    jsonl.write_text(jsonl.read_text(encoding="utf-8").replace("一条", "两条"), encoding="utf-8")
    failed = run_cli("backup", "verify", stem, env=env)
    assert failed.returncode == 1 and "failed its check" in failed.stderr
    assert "memory differs in content" in failed.stderr
    removed = run_cli("backup", "delete", stem, "--yes", env=env)
    assert removed.returncode == 0 and list_backups(tmp_path / "backups") == []
    unknown = run_cli("backup", "verify", "nope", env=env)
    assert unknown.returncode == 2 and "no backup named nope" in unknown.stderr
