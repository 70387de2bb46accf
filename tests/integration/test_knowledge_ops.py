"""Operator side of the knowledge base: the CLI (CRUD, grants, Markdown export → import),
re-embedding and backup/restore covering knowledge entries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from amrita_memory_pg.domain.knowledge import from_markdown, to_markdown
from amrita_memory_pg.embedding.hashing import HashingProvider
from amrita_memory_pg.maintenance.backup import create_backup
from amrita_memory_pg.maintenance.reembed import reindex
from amrita_memory_pg.maintenance.restore import restore_backup
from tests.support.cli import run_cli
from tests.support.memory import checksum, memory_on
from tests.support.pg import PgServer
from tests.support.vectors import as_stored


def cli_env(dsn: str, data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        "DATABASE_URL": dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(data_dir),
        **extra,
    }


async def test_cli_knowledge_commands_and_markdown_round_trip(
    db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    env = cli_env(db_dsn, tmp_path)
    body_file = tmp_path / "body.md"
    body_file.write_text("## 用法\n- 第一条\n- 第二条\n", encoding="utf-8")
    added = run_cli(
        "knowledge", "add", "--title", "猫的饮食", "--summary", "猫不能吃巧克力",
        "--body-file", str(body_file), env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    kid = added.stdout.split()[1]
    assert "3 lines" in added.stdout
    second = run_cli(
        "knowledge", "add", "--title", "咖啡", "--summary", "烘焙与萃取", "--body", "", env=env
    )
    assert second.returncode == 0, second.stderr

    listed = run_cli("knowledge", "list", env=env)
    assert kid in listed.stdout and "2 entries" in listed.stdout
    shown = run_cli("knowledge", "show", kid, "--start", "1", env=env)
    assert "   1  - 第一条" in shown.stdout and "## 用法" not in shown.stdout
    edited = run_cli("knowledge", "edit", kid, "--body", "- 改过的第二条", "--start", "2", env=env)
    assert edited.returncode == 0, edited.stderr
    found = run_cli("knowledge", "search", "猫不能吃巧克力", "--top-k", "1", env=env)
    assert found.stdout.splitlines()[1].startswith(kid)  # under the column header

    # bad input: one line on stderr, exit 2, nothing written
    for args, message in [
        (("knowledge", "show", "ffffffff"), "Knowledge not found: ffffffff"),
        (("knowledge", "show", kid, "--start", "9"), "start_line 9 超出范围"),
        (("knowledge", "rm", "ffffffff", "--yes"), "Knowledge not found"),
        (("knowledge", "edit", kid, "--body", "x" * 10001), "Body exceeds max_chars"),
        (("knowledge", "add", "--title", "t", "--summary", "", "--body", "b"), "summary 不能为空"),
        (("grant", "10001", "memory.other"), "未知权限节点"),
    ]:
        refused = run_cli(*args, env=env)
        assert refused.returncode == 2 and message in refused.stderr, (args, refused.stderr)

    assert "granted memory.knowledge to 10001" in run_cli("grant", "10001", env=env).stdout
    assert "10001 already has" in run_cli("grant", "10001", "memory.knowledge", env=env).stdout
    assert "10001  memory.knowledge  by cli" in run_cli("grants", env=env).stdout
    assert "revoked" in run_cli("revoke", "10001", env=env).stdout
    assert "no grants" in run_cli("grants", env=env).stdout

    export_dir = tmp_path / "export"
    exported = run_cli("knowledge", "export", str(export_dir), env=env)
    assert exported.returncode == 0 and "exported 2 entries" in exported.stdout
    md = (export_dir / f"KNOWLEDGE_{kid}.md").read_text(encoding="utf-8")
    assert md == "# 猫的饮食\n猫不能吃巧克力\n---\n## 用法\n- 第一条\n- 改过的第二条\n"
    index = json.loads((export_dir / "knowledge_index.json").read_text(encoding="utf-8"))
    assert {e["kid"]: (e["file_name"], e["total_lines"]) for e in index}[kid] == (
        f"KNOWLEDGE_{kid}.md",
        3,
    )

    async with memory_on(db_dsn, tmp_path) as mem:
        original = await checksum(mem)
    # into a fresh database: the same entries, byte for byte, vectors included
    name = await pg_server.create_database(template=template_db)
    try:
        fresh_env = cli_env(pg_server.dsn(name), tmp_path / "fresh")
        imported = run_cli("knowledge", "import", str(export_dir), env=fresh_env)
        assert imported.returncode == 0, imported.stderr
        assert "2 created, 0 overwritten, 0 unchanged" in imported.stdout
        async with memory_on(pg_server.dsn(name), tmp_path / "fresh") as fresh:
            copy = await checksum(fresh)
        assert (copy["knowledge"], copy["knowledge_md5"]) == (
            original["knowledge"],
            original["knowledge_md5"],
        )
        again = run_cli("knowledge", "import", str(export_dir), env=fresh_env)
        assert "0 created, 0 overwritten, 2 unchanged" in again.stdout
        # a broken file: named, and nothing imported
        (export_dir / "KNOWLEDGE_0000ffff.md").write_text("# t\n\n---\nbody", encoding="utf-8")
        broken = run_cli("knowledge", "import", str(export_dir), env=fresh_env)
        assert broken.returncode == 2 and "KNOWLEDGE_0000ffff.md: summary" in broken.stderr
    finally:
        await pg_server.drop_database(name)

    removed = run_cli("knowledge", "rm", kid, "--yes", env=env)
    assert removed.returncode == 0 and "deleted" in removed.stdout


def test_markdown_layout_is_the_reference_one() -> None:
    from amrita_memory_pg.domain.knowledge import KnowledgeEntry

    entry = KnowledgeEntry(kid="0a1b2c3d", title="标题", summary="摘要", body="a\n\nb")
    text = to_markdown(entry)
    assert text == "# 标题\n摘要\n---\na\n\nb\n"
    assert from_markdown("0a1b2c3d", text) == entry
    # the reference's own files: "# " stripped, split at the first --- line
    parsed = from_markdown("0a1b2c3d", "#  旧标题 \n多行\n摘要\n---  \n正文\n---\n还是正文\n\n")
    assert (parsed.title, parsed.summary, parsed.body) == (
        "旧标题",
        "多行\n摘要",
        "正文\n---\n还是正文",
    )


async def test_reembed_and_backup_restore_cover_knowledge(
    db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(partition_key="QQPlatform_Private_1", scope="user", content="x")
        a = await mem.knowledge.create(title="猫", summary="猫不能吃巧克力", body="正文")
        b = await mem.knowledge.create(title="咖啡", summary="咖啡因对猫有害", body="")
        await mem.knowledge.grant("10001", by="test")
    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=128) as mem:
        report = await reindex(mem.pool, mem.embedder, batch_size=1)
        assert (report.memories, report.knowledge) == (1, 2)
        provider = HashingProvider(128)
        rows = await mem.pool.fetch("SELECT kid, summary, embedding FROM amrita_memory.knowledge")
        for r in rows:  # the summary, as a write embeds it
            assert np.allclose(r["embedding"], as_stored(provider.vector(r["summary"])), atol=1e-6)
        hits = await mem.knowledge.search("咖啡因对猫有害", 1)
        assert hits[0].kid == b.kid
        # and writes with the new model work
        await mem.knowledge.update(a.kid, summary="猫也不能吃洋葱")
        original = await checksum(mem)
        info = await create_backup(mem.store)
        assert info.counts["knowledge"] == 2
    name = await pg_server.create_database(template=template_db)
    try:
        async with memory_on(pg_server.dsn(name), tmp_path / "r", embedding__hash_dim=128) as fresh:
            await fresh.knowledge.grant("20002", by="fresh")
            await restore_backup(fresh.store, info.jsonl_path)
            assert await checksum(fresh) == original
            # grants come back merged: the backup's, and the one made since
            assert [g[:3] for g in await fresh.knowledge.grants()] == [
                ("10001", "memory.knowledge", "test"),
                ("20002", "memory.knowledge", "fresh"),
            ]
            assert (await fresh.knowledge.search("猫也不能吃洋葱", 1))[0].kid == a.kid
    finally:
        await pg_server.drop_database(name)
