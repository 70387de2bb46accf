"""``import-legacy``: an amrita_plugin_memory installation merged into a live store.

The old installation is built on disk by tests/support/legacy.py with a real chromadb
PersistentClient, a real SQLite file, knowledge files, a profile and a config; the
embedder is the StubEmbeddingServer over HTTP, so every embedding request is counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.maintenance.legacy_import import import_legacy
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing import StubEmbeddingServer
from tests.support.cli import clean_env
from tests.support.legacy import (
    MIGRATED,
    PARTITIONS,
    OldInstall,
    build_old_install,
    memory_id,
    tree_checksum,
)
from tests.support.memory import checksum, memory_on
from tests.support.vectors import as_stored

MODEL = "nomic-embed-text:latest"
CAP = 60


def _overrides(server: StubEmbeddingServer, **extra: Any) -> dict[str, Any]:
    return {
        "embedding__protocol": "ollama-embed",
        "embedding__model_url": server.url,
        "embedding__model_name": MODEL,
        "embedding__max_retries": 0,
        "per_session_memory_limit": CAP,
        **extra,
    }


async def _seed_live(mem: Memory) -> tuple[str, str]:
    """What the store holds before the import: a memory written since, a memo, and one
    old id already imported once with other text (a conflict)."""
    live = await mem.memories.add(
        partition_key="QQPlatform_Private_10001", scope="user", content="迁移之后写的新记忆"
    )
    await mem.memos.replace("QQPlatform_Private_10001", "迁移之后的备忘录")
    conflict = memory_id("QQPlatform_Private_10001", 79)  # the newest of that partition
    (vector,) = await mem.embedder.embed_passages(["我们这边改过的文本"])
    row = await mem.pool.fetchrow(
        "SELECT outcome FROM amrita_memory.import_memory_v1("
        "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        conflict,
        "QQPlatform_Private_10001",
        "user",
        "我们这边改过的文本",
        [],
        5,
        datetime(2026, 2, 1, tzinfo=UTC),
        vector,
        mem.embedder.fingerprint,
        datetime.now(UTC),
        CAP,
        False,
        None,
        None,
        None,
    )
    assert row is not None and row["outcome"] == "inserted"
    return live.id, conflict


def _memory_texts(server: StubEmbeddingServer) -> list[str]:
    """Texts embedded for memories (the knowledge base embeds its summaries, "摘要 …")."""
    return [t for r in server.embedding_requests for t in r.texts if not t.startswith("摘要 ")]


def _expected_inserted(old: OldInstall, conflict: str) -> set[str]:
    """Old ids that fit under the cap: newest first, room = cap − rows already there."""
    chosen: set[str] = set()
    for key, _scope, count in PARTITIONS:
        room = CAP - (2 if key == "QQPlatform_Private_10001" else 0)
        for i in reversed(range(count)):
            mid = memory_id(key, i)
            if mid == conflict:
                continue
            if room > 0:
                chosen.add(mid)
                room -= 1
    return chosen


async def _rows(pool: asyncpg.Pool) -> dict[str, asyncpg.Record]:
    return {
        r["id"]: r
        for r in await pool.fetch(
            "SELECT id, partition_key, scope, content, tags, importance, created_at, tier_since, "
            "source, embedding, embed_fingerprint FROM amrita_memory.memory"
        )
    }


async def test_import_merges_everything_reembeds_on_another_model_and_twice_changes_nothing(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=64) as server:
        old = build_old_install(
            tmp_path / "bot", fingerprint="0" * 64, vector_of=lambda t: [0.5] * 64
        )
        before_files = tree_checksum(old.root)
        async with memory_on(db_dsn, tmp_path / "new", **_overrides(server)) as mem:
            live_id, conflict = await _seed_live(mem)
            store_before = await checksum(mem)
            server.reset()

            dry = await import_legacy(mem.store, old.data_dir, dry_run=True)
            assert await checksum(mem) == store_before
            assert server.embedding_requests == []
            expected = _expected_inserted(old, conflict)
            assert dry.counts["memory"]["inserted"] == len(expected)

            seen: list[tuple[int, int]] = []
            report = await import_legacy(
                mem.store, old.data_dir, progress=lambda d, t: seen.append((d, t))
            )
            assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1]
            text = "\n".join(report.render())
            assert report.counts["memory"] == dry.counts["memory"]
            assert report.counts["memory"]["inserted"] == len(expected)
            assert report.counts["memory"]["present"] == 1
            # over the cap: 80 old + 2 there in 10001 (one of them the conflict), 70 in 20001
            assert report.overflow == {
                "QQPlatform_Private_10001": 80 - 1 - 58,
                "QQPlatform_Group_20001": 10,
            }
            assert "超出每分区上限 60" in text
            # re-embedded (the old fingerprint is another model's): one text per new row
            texts = _memory_texts(server)
            assert len(texts) == len(expected) == report.vectors_embedded
            assert report.vectors_reused == 0
            # every row
            rows = await _rows(mem.pool)
            assert rows[live_id]["content"] == "迁移之后写的新记忆"
            assert rows[conflict]["content"] == "我们这边改过的文本"  # skip keeps ours
            for mid in expected:
                key, scope, doc, meta = old.memories[mid]
                row = rows[mid]
                assert row["partition_key"] == MIGRATED[key]
                assert row["scope"] == scope and row["content"] == doc
                assert row["tags"] == (["preference", "pet"] if meta["tags"] else [])
                assert row["importance"] == {"low": 3, "medium": 5, "high": 8}[meta["importance"]]
                assert row["created_at"] == datetime.fromisoformat(meta["created_at"])
                assert row["source"] == "auto"
                assert row["embed_fingerprint"] == mem.embedder.fingerprint
                assert np.allclose(row["embedding"], as_stored(server.vector(doc)), atol=1e-6)
            assert set(rows) == expected | {live_id, conflict}
            # the three unimportable ones are named with their reason
            skipped = {s.item: s.reason for s in report.skipped if s.kind == "memory"}
            assert set(old.broken_ids) <= set(skipped)
            assert "QQPlatform_Channel_9" in skipped["c" * 32]
            # memos: ours kept, legacy key migrated, the empty one skipped
            memos = {
                r["partition_key"]: (r["content"], r["version"])
                for r in await mem.pool.fetch("SELECT * FROM amrita_memory.memo")
            }
            assert memos == {
                "QQPlatform_Private_10001": ("迁移之后的备忘录", 1),
                "QQPlatform_Private_10002": ("称呼：阿强", 3),
                "QQPlatform_Group_20002": ("这是一个读书群。", 3),
            }
            assert report.counts["memo"] == {"inserted": 2, "present": 1}
            assert any(
                s.kind == "memo" and s.item == "QQPlatform_Private_10004" for s in report.skipped
            )
            # parsed, reported, and honestly not imported
            assert len(report.knowledge) == 3
            assert report.profile is not None and report.profile.lines == ("喜欢猫", "住在上海")
            assert report.state is not None and report.state.total_runs == 12
            # the profile went to the old config's target, with a history row
            profile = await mem.profiles.get("QQPlatform_Private_10001")
            assert (profile.summary, profile.lines) == ("小明，程序员", ("喜欢猫", "住在上海"))
            assert report.counts["profile"] == {"inserted": 1}
            assert "profile: parsed" not in text
            # the L3 state went to the old config's target (10001)
            state = await mem.pool.fetchrow(
                "SELECT * FROM amrita_memory.l3_state WHERE target_key = 'QQPlatform_Private_10001'"
            )
            assert state is not None
            assert (state["penalty"], state["runs"], state["last_summary"]) == (2, 12, "整理了记忆")
            assert state["last_run_end"] == datetime.fromtimestamp(1767398400.0, UTC)
            assert report.counts["state"] == {"inserted": 1}
            assert "2 run abstracts parsed" in text
            pending = await mem.pool.fetch("SELECT * FROM amrita_memory.pending_message")
            assert [(p["target_key"], p["content"], p["delivered_at"]) for p in pending] == [
                ("QQPlatform_Private_10001", "早上好", None)
            ]
            # queued at its own ISO time, not the last run's
            assert pending[0]["created_at"] == datetime(2026, 1, 2, 21, 30, tzinfo=UTC)
            assert report.counts["pending"] == {"inserted": 1}
            # the old knowledge suggestions wait in our queue for review
            queued = await mem.pool.fetch(
                "SELECT action, kid, title, summary, body, reason, status, created_at"
                " FROM amrita_memory.knowledge_suggestion ORDER BY created_at"
            )
            assert [tuple(r) for r in queued] == [
                (
                    "create",
                    None,
                    "猫的品种",
                    "用户家里的猫",
                    "一只橘猫，叫大黄",
                    "聊天里提到了两次",
                    "pending",
                    datetime(2026, 1, 2, 20, 0, tzinfo=UTC),
                ),
                (
                    "update",
                    "a1b2c3d4",
                    "条目 a1b2c3d4",
                    "摘要 a1b2c3d4",
                    "第 0 行\n第 1 行（补充）",
                    "",
                    "pending",
                    datetime(2026, 1, 2, 20, 5, tzinfo=UTC),
                ),
            ]
            assert report.counts["suggestion"] == {"inserted": 2}
            assert "知识建议（待审队列）: 新增 2" in text
            # knowledge through the knowledge service, summaries embedded
            assert report.counts["knowledge"] == {"inserted": 3}
            rows_kb = await mem.pool.fetch(
                "SELECT kid, title, summary, body, embed_fingerprint FROM amrita_memory.knowledge"
            )
            assert {r["kid"]: (r["title"], r["summary"]) for r in rows_kb} == {
                kid: (f"条目 {kid}", f"摘要 {kid}") for kid in ("a1b2c3d4", "0badf00d", "feedbeef")
            }
            assert {r["embed_fingerprint"] for r in rows_kb} == {mem.embedder.fingerprint}
            assert "import not available in this build" not in text.replace(
                "2 run abstracts parsed, import not available in this build", ""
            )
            assert report.config_toml is not None and "half_life_days = 45.0" in report.config_toml

            # a second run changes nothing and embeds nothing
            after_first = await checksum(mem)
            server.reset()
            again = await import_legacy(mem.store, old.data_dir)
            assert await checksum(mem) == after_first
            assert server.embedding_requests == []
            assert again.counts["memory"]["inserted"] == 0
            # one vocabulary in both modes: identical rows are
            # "identical", the one that differs is "differs, kept ours"
            assert again.counts["memory"]["unchanged"] == len(expected)
            assert again.counts["memory"]["present"] == 1
            assert again.counts["memo"] == {"unchanged": 2, "present": 1}
            assert again.counts["state"] == {"unchanged": 1}
            assert again.counts["pending"] == {"unchanged": 1}
            assert again.counts["suggestion"] == {"unchanged": 2}
            assert again.counts["profile"] == {"unchanged": 1}
            assert again.counts["knowledge"] == {"unchanged": 3}
            again_text = "\n".join(again.render())
            assert f"记忆: 已存在且相同 {len(expected)}，已存在且不同，保留本库的 1" in again_text
            assert len(await mem.profiles.history("QQPlatform_Private_10001")) == 1
    # the old installation was read, never written
    assert tree_checksum(old.root) == before_files


async def test_vectors_are_reused_when_the_old_model_is_ours(db_dsn: str, tmp_path: Path) -> None:
    with StubEmbeddingServer(dim=64) as server:
        async with memory_on(db_dsn, tmp_path / "new", **_overrides(server)) as mem:
            await mem.embedder.prepare()
            ours = mem.embedder.fingerprint
            # old vectors deliberately differ from what the server returns for the text
            old = build_old_install(
                tmp_path / "bot",
                fingerprint=ours,
                vector_of=lambda t: server.vector(t + "（旧）"),
            )
            server.reset()
            report = await import_legacy(mem.store, old.data_dir)
            assert _memory_texts(server) == []  # only the knowledge summaries were embedded
            assert report.vectors_embedded == 0
            assert report.vectors_reused == report.counts["memory"]["inserted"] > 0
            rows = await _rows(mem.pool)
            for mid, row in rows.items():
                assert np.allclose(row["embedding"], as_stored(old.vectors[mid]), atol=1e-6)
            assert "沿用旧向量" in "\n".join(report.render())


async def test_on_conflict_replace_takes_the_old_rows_and_is_idempotent(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=64) as server:
        old = build_old_install(tmp_path / "bot", fingerprint=None, vector_of=lambda t: [0.1] * 64)
        async with memory_on(db_dsn, tmp_path / "new", **_overrides(server)) as mem:
            live_id, conflict = await _seed_live(mem)
            first = await import_legacy(mem.store, old.data_dir, on_conflict="replace")
            assert first.counts["memory"]["replaced"] == 1
            assert first.counts["memo"]["replaced"] == 1
            rows = await _rows(mem.pool)
            assert rows[conflict]["content"] == old.memories[conflict][2]
            assert np.allclose(
                rows[conflict]["embedding"], as_stored(server.vector(old.memories[conflict][2]))
            )
            assert rows[live_id]["content"] == "迁移之后写的新记忆"
            # every imported or replaced row has the search tokens of its new
            # text at once (not the old text's, not left to the backfill)
            assert (
                await mem.pool.fetchval(
                    "SELECT count(*) FROM amrita_memory.memory WHERE search_tokens IS NULL"
                )
                == 0
            )
            assert await mem.pool.fetchval(
                "SELECT search_tokens = array_to_tsvector($3::text[]) FROM amrita_memory.memory "
                "WHERE partition_key = $1 AND id = $2",
                "QQPlatform_Private_10001",
                conflict,
                search_tokens(old.memories[conflict][2]),
            )
            memo = await mem.memos.get("QQPlatform_Private_10001")
            assert memo.content == old.memos["QQPlatform_Private_10001"]
            state = await checksum(mem)
            server.reset()
            second = await import_legacy(mem.store, old.data_dir, on_conflict="replace")
            assert await checksum(mem) == state
            assert server.embedding_requests == []
            assert second.counts["memory"]["replaced"] == 0
            assert second.counts["memory"]["unchanged"] == first.counts["memory"]["inserted"] + 1
            assert second.counts["memo"] == {"unchanged": 3}
            assert "记忆: 已存在且相同" in "\n".join(second.render())
            assert first.counts["state"] == {"inserted": 1}
            assert second.counts["state"] == {"unchanged": 1}
            assert second.counts["knowledge"] == {"unchanged": 3}
            assert (first.counts["profile"], second.counts["profile"]) == (
                {"inserted": 1},
                {"unchanged": 1},
            )


async def test_broken_parts_are_reported_and_the_rest_is_imported(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=64) as server:
        old = build_old_install(
            tmp_path / "bot",
            fingerprint=None,
            vector_of=lambda t: [0.1] * 64,
            partitions=[("user_10002", "user", 5)],
        )
        (old.data_dir / "knowledge" / "KNOWLEDGE_0badf00d.md").write_bytes(b"\xff\xfe\x00broken")
        (old.data_dir / "knowledge" / "KNOWLEDGE_00000000.md").write_text("", encoding="utf-8")
        (old.data_dir / "knowledge_index.json").write_text("{not json", encoding="utf-8")
        (old.root / "config" / "amrita_plugin_memory" / "config.toml").write_text(
            "[decay]\nhalf_life_days = -1\n", encoding="utf-8"
        )
        import sqlite3

        conn = sqlite3.connect(old.db_path)
        conn.execute("DROP TABLE amrita_plugin_memory_subconscious_state")
        conn.commit()
        conn.close()
        async with memory_on(db_dsn, tmp_path / "new", **_overrides(server)) as mem:
            report = await import_legacy(mem.store, old.data_dir)
            unreadable = dict(report.unreadable)
            text = "\n".join(report.render())
        assert any(k.endswith("KNOWLEDGE_0badf00d.md") for k in unreadable)
        assert any(k.endswith("KNOWLEDGE_00000000.md") for k in unreadable)
        assert any(k.endswith("knowledge_index.json") for k in unreadable)
        assert any(
            k.endswith("config.toml") and "half_life_days" in v for k, v in unreadable.items()
        )
        assert any("amrita_plugin_memory_subconscious_state" in k for k in unreadable)
        assert "无法读取 5 项（其余照常导入）" in text
        # the rest went in
        assert report.counts["memory"]["inserted"] == 5
        assert report.counts["memo"]["inserted"] == 3
        assert len(report.knowledge) == 2 and report.state is None


async def test_a_killed_import_resumes_and_reembeds_only_the_batch_in_flight(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=64, delay_seconds=0.25) as server:
        old = build_old_install(tmp_path / "bot", fingerprint=None, vector_of=lambda t: [0.1] * 64)
        env = clean_env(
            {
                "AMRITA_MEMORY_DATABASE__URL": db_dsn,
                "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "new"),
                "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "ollama-embed",
                "AMRITA_MEMORY_EMBEDDING__MODEL_URL": server.url,
                "AMRITA_MEMORY_EMBEDDING__MODEL_NAME": MODEL,
                "AMRITA_MEMORY_EMBEDDING__REEMBED_BATCH_SIZE": "10",
                "AMRITA_MEMORY_PER_SESSION_MEMORY_LIMIT": str(CAP),
                "AMRITA_MEMORY_LANGUAGE": "zh",  # the report's words, as a user reads them
            }
        )
        command = [
            sys.executable,
            "-m",
            "amrita_memory_pg.cli.main",
            "import-legacy",
            str(old.data_dir),
        ]
        process = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            conn = await asyncpg.connect(db_dsn)
            try:
                for _ in range(600):
                    await asyncio.sleep(0.05)
                    n = await conn.fetchval("SELECT count(*) FROM amrita_memory.memory")
                    if n >= 40:
                        break
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
                killed_at = await conn.fetchval("SELECT count(*) FROM amrita_memory.memory")
            finally:
                await conn.close()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert 40 <= killed_at < 260
        assert killed_at % 10 == 0  # one transaction per batch: never half a batch
        first_requests = len(server.embedding_requests)
        server.reset()
        resumed = subprocess.run(
            command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        # two partitions are over the cap: not everything came over, and the exit status
        # says so to a script (it used to be 0)
        assert resumed.returncode == 1, resumed.stderr
        over = sum(max(count - CAP, 0) for _k, _s, count in PARTITIONS)
        left = re.search(r"有 (\d+) 项未导入", resumed.stderr)
        assert left is not None and int(left.group(1)) >= over + len(old.broken_ids)
        assert f"已存在且相同 {killed_at}" in resumed.stdout
        # the resumed run embeds only what the killed one had not committed
        resumed_texts = len(_memory_texts(server))
        total = sum(min(count, CAP) for _k, _s, count in PARTITIONS)
        assert resumed_texts == total - killed_at
        assert first_requests * 10 <= killed_at + 10
        conn = await asyncpg.connect(db_dsn)
        try:
            assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == total
        finally:
            await conn.close()


def test_the_cli_dry_run_prints_the_report_and_the_translated_config(
    tmp_path: Path, db_dsn: str
) -> None:
    from tests.support.cli import run_cli

    old = build_old_install(
        tmp_path / "bot",
        fingerprint=None,
        vector_of=lambda t: [0.1] * 8,
        partitions=[("group_20001", "group", 3)],
    )
    # the Chroma directory somewhere else (a copy of a remote server's persist dir)
    moved = tmp_path / "elsewhere"
    (old.data_dir / "vector_db.chroma").rename(moved)
    result = run_cli(
        "import-legacy",
        str(old.data_dir),
        "--dry-run",
        "--chroma-dir",
        str(moved),
        "--write-config",
        str(tmp_path / "out.toml"),
        env={
            "AMRITA_MEMORY_DATABASE__URL": db_dsn,
            "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "new"),
            "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
            "AMRITA_MEMORY_LANGUAGE": "zh",
        },
        cwd=tmp_path,
    )
    # the old install holds unimportable memories (a channel key, no scope, no text):
    # listed as skipped, and the exit status says not everything would come over
    assert result.returncode == 1, result.stderr
    assert "项未导入（见上）；其余都已导入。退出码 1。" in result.stderr
    assert "[dry-run] 将要导入结果" in result.stdout
    assert "记忆: 新增 3" in result.stdout
    assert "知识库: 新增 3" in result.stdout and "用户画像: 新增 1" in result.stdout
    assert 'target_user_id = "10001"' in result.stdout
    # the notes above the translated config say what they are
    assert (
        "# subconscious.target_user_id = 10001：旧插件潜意识（L3）的目标用户，"
        "其画像与 L3 状态归到 QQPlatform_Private_10001 名下"
    ) in result.stdout
    assert (
        "# 旧安装开启了潜意识（L3，subconscious.enabled = true），本插件默认关闭" in result.stdout
    )
    # every key the settings accept but do not use is marked as such above it
    from amrita_memory_pg.settings import accepted_only, iter_fields

    for path, info in iter_fields():
        if path[0] == "subconscious" and path[-1] in (
            "max_iterations",
            "knowledge_collection_name",
        ):
            note = accepted_only(info)
            marked = f"# {note}\n{path[-1]} = " in result.stdout
            assert marked == (note is not None), path
    assert not (tmp_path / "out.toml").exists()  # --dry-run writes nothing, config included
    json.dumps(result.stdout)


async def test_a_reference_json_backup_is_merged_under_the_cap(db_dsn: str, tmp_path: Path) -> None:
    """backup restore of the old plugin's embed_backup_*.json: merged, never replacing,
    and through the same merge as import-legacy, so the cap holds and overflow is named."""
    from amrita_memory_pg.maintenance.restore import restore_backup

    n = 8
    backup = {
        "collection": "amrita_user_memory",
        "created_at": "2026-01-01T00:00:00+00:00",
        "ids": [memory_id("user_7", i) for i in range(n)] + ["x" * 32],
        "documents": [f"备份里的记忆 {i}" for i in range(n)] + ["频道"],
        "metadatas": [
            {
                "scope": "user",
                "user_id": "user_7",
                "tags": "",
                "importance": "medium",
                "created_at": f"2026-01-0{i + 1}T00:00:00+00:00",
            }
            for i in range(n)
        ]
        + [{"scope": "group", "user_id": "QQPlatform_Channel_1"}],
    }
    path = tmp_path / "embed_backup_20260101_000000.json"
    path.write_text(json.dumps(backup, ensure_ascii=False), encoding="utf-8")
    async with memory_on(db_dsn, tmp_path / "new", per_session_memory_limit=5) as mem:
        live = await mem.memories.add(
            partition_key="QQPlatform_Private_7", scope="user", content="迁移之后写的"
        )
        report = await restore_backup(mem.store, path)
        assert (report.merged, report.kept_existing, report.skipped) == (4, 0, 1)
        assert report.overflow == {"QQPlatform_Private_7": 4}
        rows = await _rows(mem.pool)
        assert live.id in rows and len(rows) == 5
        # the newest four fit
        assert {r["content"] for r in rows.values()} == {"迁移之后写的"} | {
            f"备份里的记忆 {i}" for i in range(4, 8)
        }
        before = await checksum(mem)
        again = await restore_backup(mem.store, path)
        assert (again.merged, again.kept_existing) == (0, 4)
        assert await checksum(mem) == before


async def test_memos_and_state_from_an_old_postgresql_database(
    db_dsn: str, empty_db_dsn: str, tmp_path: Path
) -> None:
    """nonebot-plugin-orm on PostgreSQL: --db postgresql+asyncpg://… (SQLAlchemy style)."""
    old_db = await asyncpg.connect(empty_db_dsn)
    try:
        await old_db.execute(
            "CREATE TABLE amrita_plugin_memory_user_memo (user_id varchar(64) PRIMARY KEY,"
            " content text NOT NULL DEFAULT '', version int NOT NULL DEFAULT 1, updated_at timestamp);"
            "CREATE TABLE amrita_plugin_memory_subconscious_state (uid varchar(64) PRIMARY KEY,"
            " payload text NOT NULL DEFAULT '{}', updated_at timestamp);"
            "INSERT INTO amrita_plugin_memory_user_memo VALUES"
            " ('group_30001', '群备忘', 4, '2026-01-01 00:00:00');"
            "INSERT INTO amrita_plugin_memory_subconscious_state VALUES"
            " ('amrita_memory', '{\"total_runs\": 7}', NULL);"
        )
    finally:
        await old_db.close()
    old = build_old_install(
        tmp_path / "bot",
        fingerprint=None,
        vector_of=lambda t: [0.1] * 8,
        partitions=[("user_10002", "user", 2)],
    )
    url = empty_db_dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    async with memory_on(db_dsn, tmp_path / "new") as mem:
        report = await import_legacy(mem.store, old.data_dir, db=url)
        memo = await mem.memos.get("QQPlatform_Group_30001")
    assert memo.content == "群备忘"
    assert report.counts["memo"] == {"inserted": 1}
    assert report.state is not None and report.state.total_runs == 7
    assert report.unreadable == []


async def test_with_the_chroma_backend_the_index_follows_the_import(
    db_dsn: str, tmp_path: Path
) -> None:
    """vector_backend = "chroma": every imported (or replaced) row reaches our collection."""
    from amrita_memory_pg.storage.chroma import ChromaBackend

    old = build_old_install(
        tmp_path / "bot",
        fingerprint=None,
        vector_of=lambda t: [0.1] * 8,
        partitions=[("user_10002", "user", 12), ("group_20001", "group", 9)],
    )
    async with memory_on(db_dsn, tmp_path / "new", vector_backend="chroma") as mem:
        backend = mem.store.backend
        assert isinstance(backend, ChromaBackend)
        report = await import_legacy(mem.store, old.data_dir)
        assert report.counts["memory"]["inserted"] == 21
        assert await backend.check(mem.pool) == (21, 21)
        # found through chroma, at distance 0 (its own vector)
        target = memory_id("user_10002", 3)
        hits = await mem.memories.search(
            "QQPlatform_Private_10002", old.memories[target][2], top_k=12
        )
        by_id = {h.record.id: h for h in hits}
        assert len(by_id) == 12 and by_id[target].distance < 1e-6


def _bot_env_files(bot: Path, server: StubEmbeddingServer, db_dsn: str) -> None:
    """A NoneBot bot's .env (ENVIRONMENT=dev) and .env.dev holding the embedding model
    under the reference's names, as a bot keeps them."""
    (bot / ".env").write_text(
        'ENVIRONMENT=dev\nDRIVER=~fastapi\nSUPERUSERS=["123"]\n', encoding="utf-8"
    )
    (bot / ".env.dev").write_text(
        "EMBEDDING_PROCTOL=ollama-embed\n"
        f"EMBEDDING_MODEL_URL={server.url}\n"
        f'EMBEDDING_MODEL_NAME="{MODEL}"\n'
        f"AMRITA_MEMORY_DATABASE__URL={db_dsn}\n"
        f"AMRITA_MEMORY_DATA_DIR={bot / 'new'}\n"
        "AMRITA_MEMORY_EMBEDDING__MAX_RETRIES=0\n",
        encoding="utf-8",
    )


async def test_in_a_bot_dir_the_import_uses_the_model_of_its_env_files_and_the_bot_starts(
    db_dsn: str, tmp_path: Path
) -> None:
    """Run in the bot's folder (given as `.`), the CLI reads
    .env and .env.<ENVIRONMENT> as NoneBot does, says which model it embeds with, the
    report names both models, and the bot's own settings accept the store."""
    from tests.support.cli import run_cli

    with StubEmbeddingServer(dim=64) as server:
        bot = tmp_path / "bot"
        build_old_install(
            bot,
            fingerprint="0" * 64,
            vector_of=lambda t: [0.1] * 8,
            embed_meta={
                "embed_protocol": "openai",
                "embed_model": "text-embedding-3-small",
                "embed_base_url": "https://api.example.com/v1",
            },
            partitions=[("user_10002", "user", 4)],
        )
        _bot_env_files(bot, server, db_dsn)
        # elsewhere, the bot's .env unread: refused, nothing embedded or written
        away = run_cli(
            "import-legacy",
            str(bot),
            cwd=tmp_path,
            env={"AMRITA_MEMORY_DATABASE__URL": db_dsn, "AMRITA_MEMORY_LANGUAGE": "zh"},
        )
        assert away.returncode != 0
        assert f"{bot / '.env'} 存在" in away.stderr and f"cd {bot}" in away.stderr
        assert not server.embedding_requests

        result = run_cli("import-legacy", ".", cwd=bot, env={"AMRITA_MEMORY_LANGUAGE": "zh"})
        # 1: the fixture's unimportable memories were skipped (the rest came over)
        assert result.returncode == 1, result.stderr
        assert "项未导入" in result.stderr
        target = f"ollama-embed / {MODEL} @ {server.url}"
        assert f"嵌入模型: {target}" in result.stderr
        assert str(bot / ".env.dev") in result.stderr
        assert (
            f"嵌入模型: 旧 openai / text-embedding-3-small @ https://api.example.com/v1 → 新 {target}"
            in result.stdout
        )
        assert "记忆: 新增 4" in result.stdout
        assert len(_memory_texts(server)) == 4
        # the import wrote current keys only: status asks for no migrate-keys (item 9)
        status = run_cli("status", cwd=bot)
        assert status.returncode == 0, status.stderr
        assert "key format:  2 (current)" in status.stdout

        # The bot's model (what tests/nonebot/test_plugin_setup.py shows NoneBot resolves
        # from these files) is the one the store now records: the bot starts.
        from amrita_memory_pg.domain.fingerprint import fingerprint

        conn = await asyncpg.connect(db_dsn)
        try:
            stored = await conn.fetchval("SELECT embed_fingerprint FROM amrita_memory.store_meta")
        finally:
            await conn.close()
        assert stored == fingerprint("ollama-embed", MODEL, server.url)


def test_an_old_data_dir_that_is_none_exits_non_zero_naming_the_folder(
    tmp_path: Path, db_dsn: str
) -> None:
    """A folder with neither the old data nor data/amrita_plugin_memory."""
    from tests.support.cli import run_cli

    (tmp_path / "somewhere").mkdir()
    result = run_cli(
        "import-legacy",
        str(tmp_path / "somewhere"),
        env={"AMRITA_MEMORY_DATABASE__URL": db_dsn, "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash"},
        cwd=tmp_path,
    )
    assert result.returncode != 0
    assert str(tmp_path / "somewhere" / "data" / "amrita_plugin_memory") in result.stderr


async def test_a_bad_old_memory_is_reported_and_skipped_by_the_dry_run_and_the_real_run(
    db_dsn: str, tmp_path: Path
) -> None:
    """One old memory with a NUL aborted the whole import while the dry
    run said all was well; over-long content and tags passed the caps of every writer."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    with StubEmbeddingServer(dim=64) as server:
        async with memory_on(db_dsn, tmp_path / "new", **_overrides(server)) as mem:
            old = build_old_install(tmp_path / "bot", fingerprint=None, vector_of=server.vector)
            client = chromadb.PersistentClient(
                path=str(old.data_dir / "vector_db.chroma"),
                settings=ChromaSettings(anonymized_telemetry=False),
            )
            collection = client.get_collection("amrita_user_memory")
            bad = {
                "1" * 32: ("含有\x00的记忆", ""),
                "2" * 32: ("长" * 5000, ""),
                "3" * 32: ("标签太长", "t" * 5000),
            }
            collection.add(
                ids=list(bad),
                documents=[doc for doc, _ in bad.values()],
                metadatas=[
                    {"scope": "user", "user_id": "QQPlatform_Private_10001", "tags": tags}
                    for _, tags in bad.values()
                ],
                embeddings=[server.vector("x") for _ in bad],
            )
            dry = await import_legacy(mem.store, old.data_dir, dry_run=True)
            report = await import_legacy(mem.store, old.data_dir)
            assert report.counts["memory"] == dry.counts["memory"]
            assert report.counts["memory"]["inserted"] > 0  # the rest was imported
            for result in (dry, report):
                reasons = {s.item: s.reason for s in result.skipped if s.kind == "memory"}
                assert "NUL" in reasons[repr("1" * 32)]
                assert "上限 4000" in reasons[repr("2" * 32)]
                assert "tags" in reasons[repr("3" * 32)] and "上限 200" in reasons[repr("3" * 32)]
            stored = await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE content LIKE '%标签太长%'"
                " OR length(content) > 4000"
            )
            assert stored == 0
