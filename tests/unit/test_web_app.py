"""The admin app's edges without a database: the login flow, the open-redirect guard, the
security headers, and the 503 page while the bot's store is not open yet."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from amrita_memory_pg.domain.errors import NotReady
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.web import create_admin_app
from amrita_memory_pg.web.security import hash_password

PASSWORD = "unit-test-pass"


def _not_ready() -> Memory:
    raise NotReady("数据库连接失败: password=hunter2@db")


def _client(tmp_path: Path) -> httpx.AsyncClient:
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={"data_dir": str(tmp_path), "web.password_hash": hash_password(PASSWORD)},
    )
    app = create_admin_app(_not_ready, settings)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://admin")


async def _log_in(client: httpx.AsyncClient, next_path: str = "") -> httpx.Response:
    form = await client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token is not None
    return await client.post(
        "/login", data={"password": PASSWORD, "csrf": token.group(1), "next": next_path}
    )


async def test_pages_answer_503_with_the_reason_redacted_until_the_store_is_open(
    tmp_path: Path,
) -> None:
    async with _client(tmp_path) as client:
        assert (await _log_in(client)).status_code == 303
        page = await client.get("/partitions")
        assert page.status_code == 503
        assert "记忆服务未就绪" in page.text
        assert "hunter2" not in page.text  # domain/redact.py on the way out


async def test_login_redirects_only_inside_the_app(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        for target in ("//evil.example/x", "http://evil.example/", "/\\evil.example"):
            response = await _log_in(client, target)
            assert response.headers["location"] == "/", target
    async with _client(tmp_path) as client:
        response = await _log_in(client, "/p/global/memories?q=x")
        assert response.headers["location"] == "/p/global/memories?q=x"


async def test_cookie_and_security_headers(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        form = await client.get("/login?lang=en")
        assert "Log in" in form.text
        cookie = form.headers.get_list("set-cookie")
        session = next(c for c in cookie if c.startswith("amp_admin_session="))
        assert "HttpOnly" in session and "SameSite=strict" in session
        assert form.headers["x-frame-options"] == "DENY"
        assert "script-src 'self'" in form.headers["content-security-policy"]
        # the session secret was generated into the data dir, owner-only
        assert (tmp_path / "web" / "session_secret").stat().st_mode & 0o077 == 0
        # a login POST without the form's token is refused before the password is looked at
        refused = await client.post("/login", data={"password": PASSWORD})
        assert refused.status_code == 403
