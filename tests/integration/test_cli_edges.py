"""Bad input that used to reach the edge of the CLI and the admin page: each is now a
sentence and, where the command failed, a non-zero exit (and nothing half-done)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import asyncpg
import httpx

from amrita_memory_pg.web import create_admin_app
from amrita_memory_pg.web.security import hash_password
from tests.support.cli import REPO, run_cli
from tests.support.memory import memory_on

KEY = "QQPlatform_Private_10001"


def _env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
    }


async def test_a_body_file_that_is_not_utf8_is_refused_with_a_sentence(
    db_dsn: str, tmp_path: Path
) -> None:
    body = tmp_path / "body.md"
    body.write_bytes(b"\xff\xfe\x00\x00 not text")
    result = run_cli(
        "knowledge",
        "add",
        "--title",
        "标题",
        "--summary",
        "摘要",
        "--body-file",
        str(body),
        env=_env(db_dsn, tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "is UTF-16 text: save it as UTF-8" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    latin = tmp_path / "latin1.md"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    result = run_cli(
        "knowledge",
        "add",
        "--title",
        "t",
        "--summary",
        "s",
        "--body-file",
        str(latin),
        env=_env(db_dsn, tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "is not UTF-8 text (0xe9 at byte 3)" in result.stderr
    conn = await asyncpg.connect(db_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge") == 0
    finally:
        await conn.close()


async def test_restoring_a_utf16_file_is_refused_and_the_store_is_untouched(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path / "data") as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="保留我")
    for name, data in (
        ("utf16.jsonl", b"\xff\xfe{\x00}\x00\n\x00"),
        ("latin1.jsonl", b'{"format": "caf\xe9"}\n'),
    ):
        bad = tmp_path / name
        bad.write_bytes(data)
        result = run_cli("backup", "restore", str(bad), "--yes", env=_env(db_dsn, tmp_path))
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"{name} is" in result.stderr and "save it as UTF-8" in result.stderr
        assert "internal error" not in result.stderr
    conn = await asyncpg.connect(db_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 1
    finally:
        await conn.close()


async def test_the_history_and_accesses_of_an_unknown_memory_fail_with_a_sentence(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path / "data") as mem:
        record = await mem.memories.add(partition_key=KEY, scope="user", content="有历史")
    env = _env(db_dsn, tmp_path)
    for command in ("history", "accesses"):
        unknown = run_cli("memory", command, KEY, "notanid", env=env)
        assert unknown.returncode == 1, unknown.stdout
        assert "no memory 'notanid' in QQPlatform_Private_10001" in unknown.stderr
        assert "memory list" in unknown.stderr
    known = run_cli("memory", "history", KEY, record.id, env=env)
    assert known.returncode == 0, known.stderr
    assert "1 changes" in known.stdout
    never_recalled = run_cli("memory", "accesses", KEY, record.id, env=env)
    assert never_recalled.returncode == 0, never_recalled.stderr
    assert "0 recalls" in never_recalled.stdout


async def test_profile_show_of_a_name_that_is_no_user_is_refused(
    db_dsn: str, tmp_path: Path
) -> None:
    env = _env(db_dsn, tmp_path)
    nope = run_cli("profile", "show", "NOPE", env=env)
    assert nope.returncode == 2
    assert "'NOPE' is not a user" in nope.stderr
    assert "QQPlatform_Private_NOPE" not in nope.stdout + nope.stderr
    number = run_cli("profile", "show", "10001", env=env)
    assert number.returncode == 0, number.stderr
    assert number.stdout.startswith(KEY)


async def test_control_characters_in_a_login_name_are_refused_not_audited(
    db_dsn: str, tmp_path: Path
) -> None:
    password = "edge-login-pass"
    async with memory_on(
        db_dsn, tmp_path / "data", web__superuser_password_hash=hash_password(password)
    ) as mem:
        app = create_admin_app(mem, mem.settings)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://admin") as client:
            form = await client.get("/login")
            token = re.search(r'name="csrf" value="([^"]+)"', form.text)
            assert token is not None
            refused = await client.post(
                "/login",
                data={"password": password, "csrf": token.group(1), "name": "ops\x1b[2J\x07"},
            )
            assert refused.status_code == 400
            assert "控制字符" in refused.text
            page = await client.get("/partitions")
            assert page.status_code == 303  # not logged in
    conn = await asyncpg.connect(db_dsn)
    try:
        actors = await conn.fetch("SELECT actor FROM amrita_memory.admin_audit")
    finally:
        await conn.close()
    assert all("\x1b" not in r["actor"] and "\x07" not in r["actor"] for r in actors)


def test_the_readme_gets_a_newcomer_to_a_working_cli(db_dsn: str, tmp_path: Path) -> None:
    """What the README says after `make run`: the command is .venv/bin/amrita-memory, or
    on PATH once the venv is activated. This interpreter is that venv's."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/amrita-memory" in readme and "source .venv/bin/activate" in readme
    import subprocess

    installed = Path(sys.executable).parent / "amrita-memory"
    assert installed.is_file(), "make install puts the console script beside the venv's python"
    result = subprocess.run(
        [str(installed), "status"],
        env={"PATH": f"{installed.parent}:/usr/bin:/bin", "DATABASE_URL": db_dsn},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "数据库结构" in result.stdout  # Chinese: the default a newcomer gets
    activated = subprocess.run(
        ["bash", "-c", f"source {installed.parent}/activate && amrita-memory health"],
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": db_dsn},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert activated.returncode == 0, activated.stdout + activated.stderr
