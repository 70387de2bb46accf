"""Key migration, the start-up fingerprint check and its policies, and status."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.errors import FingerprintRefused
from amrita_memory_pg.maintenance.backup import list_backups
from amrita_memory_pg.maintenance.fingerprint import check_fingerprint
from amrita_memory_pg.maintenance.keys import migrate_keys
from tests.support.cli import run_cli
from tests.support.memory import memory_on, settings_for

LEGACY = [
    ("user_10001", "user"),
    ("group_555", "group"),
    ("10002", "user"),
    ("555", "group"),
    ("QQPlatform_Private_10003", "user"),
    ("Foo_Private_7", "user"),
    ("Channel_9", "group"),
    ("weird key", "user"),
]


async def _seed_legacy(dsn: str, data_dir: Path) -> None:
    async with memory_on(dsn, data_dir) as mem:
        for key, scope in LEGACY:
            await mem.memories.add(partition_key=key, scope=scope, content=f"{key} 的记忆")  # type: ignore[arg-type]
        await mem.pool.execute(
            "INSERT INTO amrita_memory.memo (partition_key, content) VALUES "
            "('user_10001', '旧个人备忘'), ('QQPlatform_Group_555', '新群备忘'), ('group_555', '旧群备忘')"
        )


async def test_migrate_keys_converts_idempotently(db_dsn: str, tmp_path: Path) -> None:
    await _seed_legacy(db_dsn, tmp_path)
    async with memory_on(db_dsn, tmp_path) as mem:
        dry = await migrate_keys(mem.pool, dry_run=True)
        assert dry.changed_rows == 4 and dry.memos_changed == 1
        assert (
            await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = 'user_10001'"
            )
            == 1
        )
        assert (
            await mem.pool.fetchval("SELECT key_format_version FROM amrita_memory.store_meta")
            is None
        )

        report = await migrate_keys(mem.pool)
        assert report.mapping["user_10001"] == "QQPlatform_Private_10001"
        assert report.mapping["group_555"] == "QQPlatform_Group_555"
        assert report.mapping["10002"] == "QQPlatform_Private_10002"
        assert report.mapping["555"] == "QQPlatform_Group_555"
        assert "Foo_Private_7" not in report.mapping  # an explicit platform prefix is kept (W20)
        assert sorted(report.unrecognised) == ["Channel_9", "weird key"]
        assert report.memo_conflicts == ["group_555"]
        keys = {
            r["partition_key"]
            for r in await mem.pool.fetch("SELECT partition_key FROM amrita_memory.memory")
        }
        assert keys == {
            "QQPlatform_Private_10001",
            "QQPlatform_Group_555",
            "QQPlatform_Private_10002",
            "QQPlatform_Private_10003",
            "Foo_Private_7",
            "Channel_9",
            "weird key",
        }
        assert (
            await mem.pool.fetchval("SELECT key_format_version FROM amrita_memory.store_meta") == 2
        )
        again = await migrate_keys(mem.pool)
        assert (again.changed_rows, again.memos_changed) == (0, 0)


async def test_migrate_keys_cli_and_startup(db_dsn: str, tmp_path: Path) -> None:
    await _seed_legacy(db_dsn, tmp_path)
    env = {"DATABASE_URL": db_dsn, "EMBEDDING_PROCTOL": "hash"}
    dry = run_cli("migrate-keys", "--dry-run", env=env)
    assert "[dry run] would rewrite the partition keys of 4 memories and 1 memos" in dry.stdout, (
        dry.stdout + dry.stderr
    )
    assert "user_10001 -> QQPlatform_Private_10001" in dry.stdout
    assert "not recognised (left as it is): Channel_9" in dry.stdout
    status = run_cli("status", env=env)
    assert "→ to migrate" in status.stdout
    async with open_memory(settings_for(db_dsn, tmp_path)) as mem:  # start-up migrates
        assert (
            await mem.pool.fetchval("SELECT key_format_version FROM amrita_memory.store_meta") == 2
        )
    done = run_cli("migrate-keys", env=env)
    assert "done: rewrote the partition keys of 0 memories and 0 memos" in done.stdout


async def _seed(dsn: str, data_dir: Path) -> None:
    async with memory_on(dsn, data_dir) as mem:
        for i in range(5):
            await mem.memories.add(
                partition_key="QQPlatform_Private_1", scope="user", content=f"记忆 {i}"
            )


async def test_ask_without_a_terminal_refuses_to_start_and_names_the_fix(
    db_dsn: str, tmp_path: Path
) -> None:
    await _seed(db_dsn, tmp_path)
    settings = settings_for(db_dsn, tmp_path, embedding__hash_dim=256)
    with pytest.raises(FingerprintRefused) as err:
        async with open_memory(settings):
            pass
    message = str(err.value)
    assert "嵌入模型已变更" in message and "amrita-memory reindex --yes" in message
    # run where the bot runs, where the CLI reads the bot's .env
    assert f"`cd {Path.cwd()} && amrita-memory reindex --yes`" in message
    assert "EMBED_MISMATCH_POLICY=auto" in message and "EMBED_CHECK_ON_STARTUP=false" in message
    # Nothing was changed, and the CLI still works (it never runs the check).
    status = run_cli(
        "status",
        env={
            "DATABASE_URL": db_dsn,
            "EMBEDDING_PROCTOL": "hash",
            "AMRITA_MEMORY_EMBEDDING__HASH_DIM": "256",
        },
    )
    assert status.returncode == 0 and "⚠️  differs" in status.stdout
    fixed = run_cli(
        "reindex",
        "--yes",
        env={
            "DATABASE_URL": db_dsn,
            "EMBEDDING_PROCTOL": "hash",
            "AMRITA_MEMORY_EMBEDDING__HASH_DIM": "256",
            "AMRITA_MEMORY_DATA_DIR": str(tmp_path),
        },
    )
    assert fixed.returncode == 0, fixed.stderr
    async with open_memory(settings) as mem:  # now it starts
        assert await mem.memories.count("QQPlatform_Private_1") == 5


async def test_ask_on_a_terminal_asks_and_re_embeds(db_dsn: str, tmp_path: Path) -> None:
    await _seed(db_dsn, tmp_path)
    questions: list[str] = []
    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=256) as mem:
        status = await check_fingerprint(
            mem.store, is_tty=lambda: True, confirm=lambda q: questions.append(q) or True
        )
        assert status.reason is None and len(questions) == 1 and "5 条" in questions[0]
    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=512) as mem:
        status = await check_fingerprint(mem.store, is_tty=lambda: True, confirm=lambda q: False)
        assert status.reason is not None  # declined: data kept as it is


async def test_auto_backs_up_then_re_embeds(db_dsn: str, tmp_path: Path) -> None:
    await _seed(db_dsn, tmp_path)
    settings = settings_for(
        db_dsn, tmp_path, embedding__hash_dim=256, embedding__mismatch_policy="auto"
    )
    async with open_memory(settings) as mem:
        assert await mem.pool.fetchval("SELECT embed_dim FROM amrita_memory.store_meta") == 256
        hits = await mem.memories.search("QQPlatform_Private_1", "记忆", top_k=5)
        assert len(hits) == 5
    backups = list_backups(tmp_path / "backups")
    assert [b.reason for b in backups] == ["before-reembed"]
    assert backups[0].counts["memory"] == 5


async def test_never_warns_and_serves(
    db_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await _seed(db_dsn, tmp_path)
    settings = settings_for(
        db_dsn, tmp_path, embedding__hash_dim=256, embedding__mismatch_policy="never"
    )
    with caplog.at_level(logging.WARNING):
        async with open_memory(settings) as mem:
            assert await mem.memories.count("QQPlatform_Private_1") == 5
    assert "策略为 never" in caplog.text


async def test_check_can_be_switched_off_and_an_empty_store_records_the_model(
    db_dsn: str, tmp_path: Path
) -> None:
    await _seed(db_dsn, tmp_path)
    async with open_memory(
        settings_for(db_dsn, tmp_path, embedding__hash_dim=256, embedding__check_on_startup=False)
    ):
        pass
    async with open_memory(settings_for(db_dsn, tmp_path)) as mem:
        await mem.pool.execute("DELETE FROM amrita_memory.memory")
        await mem.pool.execute("UPDATE amrita_memory.store_meta SET embed_fingerprint = NULL")
    async with open_memory(settings_for(db_dsn, tmp_path, embedding__hash_dim=64)) as mem:
        row = await mem.pool.fetchrow(
            "SELECT embed_fingerprint, embed_model FROM amrita_memory.store_meta"
        )
        assert (row["embed_fingerprint"], row["embed_model"]) == (
            mem.embedder.fingerprint,
            "hash-64",
        )


async def test_reset_fingerprint_is_the_escape_hatch(db_dsn: str, tmp_path: Path) -> None:
    await _seed(db_dsn, tmp_path)
    env = {
        "DATABASE_URL": db_dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_EMBEDDING__HASH_DIM": "256",
    }
    result = run_cli("reset-fingerprint", env=env)
    assert result.returncode == 0, result.stderr
    assert "fingerprint recorded" in result.stdout and "nothing re-embedded" in result.stdout
    async with open_memory(
        settings_for(db_dsn, tmp_path, embedding__hash_dim=256)
    ) as mem:  # starts now
        assert (
            await mem.pool.fetchval("SELECT embed_model FROM amrita_memory.store_meta")
            == "hash-256"
        )
