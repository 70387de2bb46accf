"""Backups: pg_dump + JSONL from one snapshot, rotation, restore into a fresh database."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.errors import BackupError
from amrita_memory_pg.embedding.hashing import HashingProvider
from amrita_memory_pg.maintenance.backup import (
    BACKED_UP,
    DERIVED_COLUMNS,
    EXPORT_COLUMNS,
    GRANT_COLUMNS,
    KNOWLEDGE_COLUMNS,
    MEMO_COLUMNS,
    MEMORY_COLUMNS,
    PARTITION_KINDS,
    PROFILE_COLUMNS,
    PROFILE_HISTORY_COLUMNS,
    create_backup,
    export_sql,
    list_backups,
    partition_export_sql,
    rotate,
)
from amrita_memory_pg.maintenance.restore import restore_backup
from amrita_memory_pg.storage.pg import migrate
from tests.support.cli import run_cli
from tests.support.memory import add_knowledge, checksum, memory_on
from tests.support.pg import PgServer
from tests.support.vectors import as_stored

KEY = "QQPlatform_Private_10001"
#: a revision of 0.13, before the baseline
OLD = "0055_retire_release11"
GROUP = "QQPlatform_Group_555"


async def _fill(dsn: str, data_dir: Path) -> None:
    async with memory_on(dsn, data_dir) as mem:
        for i in range(25):
            await mem.memories.add(
                partition_key=KEY,
                scope="user",
                content=f"记忆 {i}：喜欢 猫",
                tags=["t", str(i)],
                importance=1 + i % 10,
                category="preference" if i % 2 else None,
                author="10001",
            )
        await mem.memories.add(
            partition_key=GROUP, scope="group", content="群规：不刷屏", source="user"
        )
        await mem.pool.execute(
            "INSERT INTO amrita_memory.memo (partition_key, content, version) VALUES ($1, $2, 3), ($3, $4, 1)",
            KEY,
            "用户叫小明，喜欢猫",
            GROUP,
            "这是一个技术群",
        )
        await add_knowledge(mem, "0a1b2c3d", "猫的饮食", "不能吃巧克力", "正文\n第二行")


async def test_backup_then_restore_into_a_fresh_database_is_identical(
    db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    await _fill(db_dsn, tmp_path)
    async with memory_on(db_dsn, tmp_path) as mem:
        original = await checksum(mem)
        info = await create_backup(mem.store)
    assert info.jsonl_path.exists() and info.dump_path.exists()
    assert {k: info.counts[k] for k in EXPORT_COLUMNS} == {
        "memory": 26, "memo": 2, "knowledge": 1, "profile": 0, "profile_history": 0,
        "permission_grant": 0,
    }  # fmt: skip
    assert set(info.counts) == set(BACKED_UP)  # every table, test_backup_whole_store
    header = json.loads(info.jsonl_path.read_text(encoding="utf-8").splitlines()[0])
    assert header["format"] == "amrita_memory_pg.backup" and header["dim"] == 384
    assert header["fingerprint"] == HashingProvider(384).fingerprint

    for source in (info.jsonl_path, info.dump_path):
        name = await pg_server.create_database(template=template_db)
        try:
            async with memory_on(
                pg_server.dsn(name), tmp_path / f"restore-{source.suffix}"
            ) as fresh:
                report = await restore_backup(fresh.store, source)
                assert report.reembedded == 0
                assert report.safety_backup is None  # the fresh store was empty
                assert await checksum(fresh) == original, source.suffix
                hits = await fresh.memories.search(KEY, "喜欢 猫", top_k=3)
                assert len(hits) == 3
                # search tokens: recomputed after a JSONL restore, carried by a dump
                untokenized = await fresh.pool.fetchval(
                    "SELECT count(*) FROM amrita_memory.memory WHERE search_tokens IS NULL"
                )
                assert untokenized == 0, source.suffix
                keyword = await fresh.memories.search(KEY, "喜欢 猫", top_k=3, mode="keyword")
                assert len(keyword) == 3
        finally:
            await pg_server.drop_database(name)


async def test_jsonl_restore_onto_another_model_re_embeds(
    db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    await _fill(db_dsn, tmp_path)
    async with memory_on(db_dsn, tmp_path) as mem:
        info = await create_backup(mem.store)
    name = await pg_server.create_database(template=template_db)
    try:
        async with memory_on(
            pg_server.dsn(name), tmp_path / "other", embedding__hash_dim=128
        ) as fresh:
            report = await restore_backup(fresh.store, info.jsonl_path)
            assert report.reembedded == 27  # 26 memories + 1 knowledge entry
            rows = await fresh.pool.fetch(
                "SELECT content, embedding, embed_fingerprint FROM amrita_memory.memory"
            )
            assert len(rows) == 26
            provider = HashingProvider(128)
            for r in rows:
                assert r["embed_fingerprint"] == provider.fingerprint
                assert np.allclose(
                    r["embedding"], as_stored(provider.vector(r["content"])), atol=1e-6
                )
            assert (
                await fresh.pool.fetchval("SELECT embed_dim FROM amrita_memory.store_meta") == 128
            )
            assert (
                await fresh.pool.fetchval(
                    "SELECT content FROM amrita_memory.memo WHERE partition_key = $1", KEY
                )
                == "用户叫小明，喜欢猫"
            )
    finally:
        await pg_server.drop_database(name)


async def test_names_never_collide_and_rotation_keeps_n(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, embedding__reembed_backup_keep=2) as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="一条")
        infos = [await create_backup(mem.store) for _ in range(4)]
    assert len({i.stem for i in infos}) == 4
    kept = list_backups(tmp_path / "backups")
    assert [k.stem for k in kept] == [i.stem for i in infos[-2:]]
    assert not any(p.name.endswith(".part") for p in (tmp_path / "backups").iterdir())
    # Rotation never deletes a protected backup (the one being restored).
    assert rotate(tmp_path / "backups", 0, protect={infos[-1].stem}) == [infos[-2].stem]
    assert [k.stem for k in list_backups(tmp_path / "backups")] == [infos[-1].stem]


async def test_an_empty_backup_does_not_wipe_the_store_unless_forced(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        empty = await create_backup(mem.store)
        await mem.memories.add(partition_key=KEY, scope="user", content="重要的记忆")
        for path in (empty.jsonl_path, empty.dump_path):
            with pytest.raises(BackupError, match="would wipe the 1 in the store"):
                await restore_backup(mem.store, path)
            assert await mem.memories.count(KEY) == 1
        report = await restore_backup(mem.store, empty.jsonl_path, force=True)
        assert report.safety_backup is not None
        assert await mem.memories.count(KEY) == 0
        # The safety backup brings it back.
        await restore_backup(mem.store, report.safety_backup.jsonl_path)
        assert await mem.memories.count(KEY) == 1


async def test_restoring_keeps_its_source_even_when_rotation_is_tight(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, embedding__reembed_backup_keep=1) as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="A")
        first = await create_backup(mem.store)
        await mem.memories.add(partition_key=KEY, scope="user", content="B")
        report = await restore_backup(mem.store, first.jsonl_path)
        assert first.jsonl_path.exists()
        assert report.safety_backup is not None and report.safety_backup.jsonl_path.exists()
        assert await mem.memories.count(KEY) == 1


async def test_a_damaged_backup_changes_nothing(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="A")
        info = await create_backup(mem.store)
        lines = info.jsonl_path.read_text(encoding="utf-8").splitlines()
        broken = tmp_path / "broken.jsonl"
        broken.write_text("\n".join([*lines[:-1], lines[-1][:20]]) + "\n", encoding="utf-8")
        with pytest.raises(BackupError, match="line"):
            await restore_backup(mem.store, broken)
        truncated = tmp_path / "truncated.jsonl"
        truncated.write_text(lines[0] + "\n", encoding="utf-8")
        with pytest.raises(BackupError, match="incomplete"):
            await restore_backup(mem.store, truncated)
        assert await mem.memories.count(KEY) == 1


async def test_a_dump_older_than_the_baseline_is_refused_before_it_replaces_anything(
    db_dsn: str, tmp_path: Path
) -> None:
    """A .dump of a schema this version cannot upgrade (older than its baseline) would leave
    the store on that schema: it is refused with the release to upgrade it with first."""
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="A")
        await mem.pool.execute("UPDATE amrita_memory.alembic_version SET version_num = $1", OLD)
        old = await create_backup(mem.store)
        await mem.pool.execute(
            "UPDATE amrita_memory.alembic_version SET version_num = $1", migrate.head_revision()
        )
        await mem.memories.add(partition_key=KEY, scope="user", content="B")
        with pytest.raises(BackupError, match=f"{OLD}.*{migrate.BASELINE_RELEASE} first"):
            await restore_backup(mem.store, old.dump_path, force=True)
        assert await mem.memories.count(KEY) == 2
        assert await migrate.current_revision(mem.pool) == migrate.head_revision()


async def test_reference_plugin_backups_restore_with_current_keys_and_model(
    db_dsn: str, tmp_path: Path
) -> None:
    legacy = {
        "collection": "amrita_user_memory",
        "created_at": "2026-01-01T00:00:00+00:00",
        "ids": ["a" * 32, "b" * 32, "c" * 32, "not-hex"],
        "documents": ["喜欢猫", "群规：不刷屏", "旧格式纯数字", "id 不是 hex"],
        "metadatas": [
            {
                "scope": "user",
                "user_id": "user_10001",
                "tags": "preference,pet",
                "importance": "high",
                "created_at": "2025-12-01T08:00:00+08:00",
            },
            {
                "scope": "group",
                "user_id": "group_555",
                "tags": "rule",
                "importance": "low",
                "created_at": "2025-12-02T00:00:00",
            },
            {
                "scope": "user",
                "user_id": "10001",
                "tags": "",
                "importance": "medium",
                "created_at": "bad",
            },
            {
                "scope": "user",
                "user_id": "QQPlatform_Private_10001",
                "tags": "x",
                "importance": "medium",
            },
        ],
    }
    path = tmp_path / "embed_backup_20260101_000000.json"
    path.write_text(json.dumps(legacy, ensure_ascii=False), encoding="utf-8")
    async with memory_on(db_dsn, tmp_path) as mem:
        report = await restore_backup(mem.store, path)
        assert report.kind == "reference-json" and report.counts["memory"] == 4
        rows = {r["content"]: r for r in await mem.pool.fetch("SELECT * FROM amrita_memory.memory")}
        assert rows["喜欢猫"]["partition_key"] == KEY and rows["喜欢猫"]["importance"] == 8
        assert rows["喜欢猫"]["tags"] == ["preference", "pet"]
        assert rows["喜欢猫"]["id"] == "a" * 32
        assert (
            rows["群规：不刷屏"]["partition_key"] == GROUP
            and rows["群规：不刷屏"]["importance"] == 3
        )
        assert rows["旧格式纯数字"]["partition_key"] == KEY
        assert len(rows["id 不是 hex"]["id"]) == 32
        assert {r["embed_fingerprint"] for r in rows.values()} == {mem.embedder.fingerprint}
        assert (
            await mem.pool.fetchval("SELECT key_format_version FROM amrita_memory.store_meta") == 2
        )

    bad = tmp_path / "embed_backup_bad.json"
    bad.write_text(json.dumps({"ids": ["x"], "documents": [], "metadatas": []}), encoding="utf-8")
    async with memory_on(db_dsn, tmp_path) as mem:
        with pytest.raises(BackupError, match="inconsistent"):
            await restore_backup(mem.store, bad)
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 4


async def test_backup_cli_create_list_restore(db_dsn: str, tmp_path: Path) -> None:
    await _fill(db_dsn, tmp_path)
    env = {
        "DATABASE_URL": db_dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path),
    }
    created = run_cli("backup", "create", env=env)
    assert created.returncode == 0, created.stderr
    assert "backed up to" in created.stdout
    assert "memories 26, memos 2, knowledge entries 1" in created.stdout
    listed = run_cli("backup", "list", env=env)
    assert "backups (1)" in listed.stdout and " 26 memories " in listed.stdout
    jsonl = next((tmp_path / "backups").glob("*.jsonl"))
    declined = run_cli("backup", "restore", str(jsonl), env=env, input="n\n")
    assert declined.returncode == 1
    restored = run_cli("backup", "restore", str(jsonl), "--yes", env=env)
    assert restored.returncode == 0, restored.stderr
    assert "backed up before the restore" in restored.stdout
    assert "memories 26" in restored.stdout
    missing = run_cli("backup", "restore", str(tmp_path / "nope.jsonl"), "--yes", env=env)
    assert missing.returncode == 1 and "no such backup file" in missing.stderr
    # a bare name (as older /memory clear replies printed it) is found in the backups
    # folder from wherever the operator stands
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    by_name = run_cli("backup", "restore", jsonl.name, "--yes", env=env, cwd=elsewhere)
    assert by_name.returncode == 0, by_name.stderr
    assert f"done: restored from {jsonl.name}" in by_name.stdout


async def test_each_export_query_returns_exactly_the_columns_a_restore_copies_back(
    conn: asyncpg.Connection,
) -> None:
    """A backup writes what the export query returns; a restore copies EXPORT_COLUMNS back
    (COPY … (columns)). A column added to one and not the other would be lost or fail to
    restore, so the prepared statement's result columns must be the tuple, in order, and
    the tuple every column of its table (nothing the schema stores is left out)."""
    assert EXPORT_COLUMNS == {
        "memory": MEMORY_COLUMNS,
        "memo": MEMO_COLUMNS,
        "knowledge": KNOWLEDGE_COLUMNS,
        "profile": PROFILE_COLUMNS,
        "profile_history": PROFILE_HISTORY_COLUMNS,
        "permission_grant": GRANT_COLUMNS,
    }
    for kind, columns in EXPORT_COLUMNS.items():  # each kind is its table's name
        statement = await conn.prepare(export_sql(kind))
        assert tuple(a.name for a in statement.get_attributes()) == columns, kind
        in_table = await conn.fetch(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'amrita_memory' AND table_name = $1",
            kind,
        )
        derived = DERIVED_COLUMNS.get(kind, frozenset())  # recomputed by a restore
        assert {r["column_name"] for r in in_table} == set(columns) | derived, kind


async def test_each_partition_export_query_returns_the_columns_of_its_kind(
    conn: asyncpg.Connection,
) -> None:
    """A partition export (the admin page's) writes its rows as a backup does: each of
    its queries returns exactly the backup's columns of that kind, so a restore's reader
    reads its lines."""
    for kind in PARTITION_KINDS:
        statement = await conn.prepare(partition_export_sql(kind))
        assert tuple(a.name for a in statement.get_attributes()) == EXPORT_COLUMNS[kind], kind
        assert len(statement.get_parameters()) == 1, kind


async def test_a_reference_backup_is_merged_into_a_live_store_and_twice_changes_nothing(
    db_dsn: str, tmp_path: Path
) -> None:
    """Restoring the old plugin's JSON used to replace the whole store."""
    legacy = {
        "ids": ["a" * 32, "b" * 32],
        "documents": ["旧插件的记忆一", "旧插件的记忆二"],
        "metadatas": [
            {"scope": "user", "user_id": "user_10001", "tags": "", "importance": "high"},
            {"scope": "group", "user_id": "group_555", "tags": "", "importance": "low"},
        ],
    }
    path = tmp_path / "embed_backup_20260101_000000.json"
    path.write_text(json.dumps(legacy, ensure_ascii=False), encoding="utf-8")
    async with memory_on(db_dsn, tmp_path) as mem:
        live = await mem.memories.add(
            partition_key="QQPlatform_Private_10001", scope="user", content="迁移之后写的新记忆"
        )
        await mem.memos.replace("QQPlatform_Private_10001", "迁移之后的备忘录")
        first = await restore_backup(mem.store, path)
        assert (first.merged, first.kept_existing) == (2, 0)
        assert first.safety_backup is not None
        kept = await mem.memories.get("QQPlatform_Private_10001", live.id)
        assert kept is not None and kept.content == "迁移之后写的新记忆"
        assert (await mem.memos.get("QQPlatform_Private_10001")).content == "迁移之后的备忘录"
        before = await checksum(mem)
        second = await restore_backup(mem.store, path)
        assert (second.merged, second.kept_existing) == (0, 2)
        assert await checksum(mem) == before
        assert before["memories"] == 3
