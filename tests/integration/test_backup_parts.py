"""A kill -9 during ``backup create`` leaves ``.part`` files; the next backup or listing
removes those of dead writers and never one that a live process is writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from amrita_memory_pg.maintenance.backup import clean_stale_parts, create_backup, list_backups
from tests.support.memory import memory_on

STEM = "amrita_memory_20250101T000000_000000Z_abcdef"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _parts(directory: Path, pid: int, stem: str = STEM) -> list[Path]:
    paths = [directory / f".{stem}.{pid}.{kind}.part" for kind in ("jsonl", "dump")]
    for path in paths:
        path.write_text("half a backup")
    return paths


def test_listing_removes_parts_of_dead_writers_only(tmp_path: Path) -> None:
    dead = _parts(tmp_path, _dead_pid())
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = _parts(tmp_path, writer.pid, STEM.replace("abcdef", "123456"))
        assert list_backups(tmp_path) == []
        assert not any(p.exists() for p in dead)
        assert all(p.exists() for p in live)  # still being written by a live process
        writer.send_signal(signal.SIGKILL)  # the writer is killed mid-backup
        writer.wait(10)
        assert list_backups(tmp_path) == []
        assert not any(p.exists() for p in live)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(10)


def test_parts_named_before_pids_go_once_old(tmp_path: Path) -> None:
    old = tmp_path / f".{STEM}.jsonl.part"
    new = tmp_path / f".{STEM.replace('abcdef', '654321')}.dump.part"
    for path in (old, new):
        path.write_text("x")
    hours_ago = time.time() - 7200
    os.utime(old, (hours_ago, hours_ago))
    assert clean_stale_parts(tmp_path) == [old.name]
    assert new.exists()


async def test_a_new_backup_cleans_the_debris_of_a_killed_one(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        directory = mem.store.backups_dir
        directory.mkdir(parents=True)
        debris = _parts(directory, _dead_pid())
        info = await create_backup(mem.store)
        assert not any(p.exists() for p in debris)
        assert sorted(p.name for p in directory.iterdir()) == sorted(
            [info.jsonl_path.name, info.dump_path.name]
        )
        assert [b.stem for b in list_backups(directory)] == [info.stem]
