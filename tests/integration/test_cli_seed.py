"""``amrita-memory memory add|list|search``, ``clear`` and ``extract``, run as
an operator runs them: a subprocess on a real database."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from tests.support.cli import run_cli


def _env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
    }


async def test_memory_add_list_search_and_clear_from_the_cli(db_dsn: str, tmp_path: Path) -> None:
    env = _env(db_dsn, tmp_path)
    added = run_cli(
        "memory", "add", "global", "项目使用 PostgreSQL", "-c", "知识", "-i", "9", env=env
    )
    assert added.returncode == 0, added.stderr
    assert "to global (global, importance 9)" in added.stdout
    run_cli("memory", "add", "global", "周五不发版", "-c", "rule", env=env)
    bad = run_cli("memory", "add", "global", "x", "-c", "mood", env=env)
    assert bad.returncode == 2 and "is not a category" in bad.stderr

    listed = run_cli("memory", "list", "global", "-c", "knowledge", env=env)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "PostgreSQL" in line)
    assert row.split()[1:4] == ["9", "knowledge", "manual"]
    assert "周五不发版" not in listed.stdout and "1 of 1 shown" in listed.stdout
    found = run_cli("memory", "search", "global", "周五不发版", "-c", "rule", env=env)
    assert "周五不发版" in found.stdout and "1 hits" in found.stdout
    # the printed number is decay_score, said by the one-line legend
    assert found.stdout.splitlines()[-1].startswith("decay score = similarity 1/(1+distance)")
    # the mode option; keyword mode finds the row by its tokens alone
    keyword = run_cli("memory", "search", "global", "PostgreSQL", "--mode", "keyword", env=env)
    assert keyword.returncode == 0, keyword.stderr
    assert "项目使用 PostgreSQL" in keyword.stdout and "1 hits" in keyword.stdout

    declined = run_cli("clear", "global", env=env, input="n\n")
    assert declined.returncode == 1
    conn = await asyncpg.connect(db_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 2
        cleared = run_cli("clear", "global", "--yes", env=env)
        assert cleared.returncode == 0, cleared.stderr
        assert "cleared 2 memories of global; backup before clearing: " in cleared.stdout
        backup = Path(cleared.stdout.strip().rsplit(" ", 1)[1])
        assert backup.is_file() and '"partition_key": "global"' in backup.read_text(
            encoding="utf-8"
        )
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
    finally:
        await conn.close()


def test_extract_without_a_model_says_so(db_dsn: str, tmp_path: Path) -> None:
    result = run_cli("extract", "QQPlatform_Private_1", env=_env(db_dsn, tmp_path))
    assert result.returncode == 1 and result.stdout.startswith("disabled: ")
