"""The admin page's edge on a real store: bytes PostgreSQL refuses
are answered with 400 and a sentence on every route, unknown URLs get the app's page,
a write and its audit row commit together, and sessions are rows that can be revoked."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.routing import APIRoute

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.web import create_admin_app
from amrita_memory_pg.web.pages import PAGES
from amrita_memory_pg.web.security import hash_password
from tests.support.memory import memory_on

ADMIN = "edge-admin-pass"
SUPER = "edge-super-pass"
_HASHES = {p: hash_password(p) for p in (ADMIN, SUPER)}
#: a valid value for each path parameter the pages use (any other name gets "x")
RAISE = False
PATH_VALUES = {"key": "global", "kid": "0a1b2c3d", "sid": "1", "memory_id": "0" * 32}


@dataclass
class Site:
    mem: Memory
    app: FastAPI
    client: httpx.AsyncClient

    async def csrf(self, path: str = "/login") -> str:
        page = await self.client.get(path)
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token is not None, page.text[:500]
        return token.group(1)

    async def log_in(self, password: str = SUPER, name: str = "tester") -> httpx.Response:
        token = await self.csrf()
        return await self.client.post(
            "/login", data={"password": password, "csrf": token, "name": name}
        )


@asynccontextmanager
async def site(dsn: str, data_dir: Path, **overrides: Any) -> AsyncIterator[Site]:
    values = {
        "web__password_hash": _HASHES[ADMIN],
        "web__superuser_password_hash": _HASHES[SUPER],
        **overrides,
    }
    async with memory_on(dsn, data_dir, **values) as mem:
        app = create_admin_app(mem, mem.settings)
        # a handler's failure is answered (500) instead of raised into the test
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=RAISE)
        async with httpx.AsyncClient(transport=transport, base_url="http://admin") as client:
            yield Site(mem, app, client)


def page_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every (method, path template) the app serves: its own routes and every page
    module's (``web/pages/__init__.py`` PAGES), so a page added later is covered too."""
    routes = [r for r in app.routes if isinstance(r, APIRoute)]
    for module in PAGES:
        routes.extend(r for r in module.router.routes if isinstance(r, APIRoute))
    return [(method, r.path) for r in routes for method in sorted(r.methods)]


def fill(path: str, value: str | None = None) -> str:
    """``path`` with its ``{param}`` parts replaced (by ``value`` when given)."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: value or PATH_VALUES.get(m.group(1), "x"), path)


async def test_nul_in_any_parameter_or_field_of_any_route_is_a_400_with_a_sentence(
    db_dsn: str, tmp_path: Path
) -> None:
    async with site(db_dsn, tmp_path) as s:
        assert (await s.log_in()).status_code == 303
        token = await s.csrf("/partitions")
        routes = page_routes(s.app)
        assert len(routes) > 30, routes  # every page module is mounted
        for method, template in routes:
            path = fill(template)
            if method == "GET":
                tries = [s.client.get(path, params={"q": "a\x00b", "target": "\x00"})]
            else:
                data = {"csrf": token, "content": "x\x00y", "name": "\x00", "q": "\x00"}
                tries = [s.client.post(path, data=data)]
            if "{" in template:
                tries.append(s.client.request(method, fill(template, "%00")))
            for attempt in tries:
                response = await attempt
                assert response.status_code == 400, (method, template, response.text[:300])
                assert "NUL" in response.text and "请求被拒绝" in response.text, template
                assert response.headers["content-type"].startswith("text/html")
        # the two that used to fail with a 500, and the connection stays usable afterwards
        for url in ("/partitions?q=%00", "/l3?target=%00", "/p/global/memories?tags=%00"):
            response = await s.client.get(url)
            assert response.status_code == 400, url
            assert "含有 NUL 字符" in response.text
        assert (await s.client.get("/partitions")).status_code == 200


async def test_unknown_urls_answer_the_apps_html_page(db_dsn: str, tmp_path: Path) -> None:
    async with site(db_dsn, tmp_path) as s:
        assert (await s.log_in()).status_code == 303
        missing = await s.client.get("/no/such/page")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("text/html")
        assert "未找到：/no/such/page" in missing.text and '"detail"' not in missing.text
        wrong_method = await s.client.delete("/partitions")
        assert wrong_method.status_code == 405
        assert "HTTP 405" in wrong_method.text and '"detail"' not in wrong_method.text


#: a trigger that refuses the audit row of one login name: the audit write fails after
#: the page's own write succeeded, which is what a NUL in the name used to do
FAILING_AUDIT = """
CREATE FUNCTION amrita_memory.test_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.actor = 'boom' THEN RAISE EXCEPTION 'audit refused by the test'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER test_refuse_audit BEFORE INSERT ON amrita_memory.admin_audit
    FOR EACH ROW EXECUTE FUNCTION amrita_memory.test_refuse_audit();
"""


def plan_token(page: str) -> str:
    """The confirmation code the clear page asks to type."""
    found = re.search(r"输入 ([^）]+)）", page)
    assert found is not None, page[:2000]
    return found.group(1)


async def _state(mem: Memory) -> dict[str, Any]:
    pool = mem.pool
    return {
        "memo": await pool.fetchval("SELECT content FROM amrita_memory.memo"),
        "memories": await pool.fetchval(
            "SELECT string_agg(content, '|' ORDER BY content) FROM amrita_memory.memory"
        ),
        "knowledge": await pool.fetchval(
            "SELECT string_agg(kid || title, '|' ORDER BY kid) FROM amrita_memory.knowledge"
        ),
        "suggestions": await pool.fetchval(
            "SELECT string_agg(status, '|' ORDER BY id) FROM amrita_memory.knowledge_suggestion"
        ),
        "audit": await pool.fetchval("SELECT count(*) FROM amrita_memory.admin_audit"),
    }


async def test_a_write_whose_audit_row_fails_is_not_saved_on_any_audited_action(
    db_dsn: str, tmp_path: Path
) -> None:
    async with site(db_dsn, tmp_path) as s:
        mem = s.mem
        await mem.memos.replace("global", "before")
        record = await mem.memories.add(
            partition_key="global", scope="global", content="old fact", source="user"
        )
        await mem.knowledge.create(kid="0a1b2c3d", title="咖啡", summary="烘焙", body="浅烘")
        sid, _ = await mem.knowledge.suggest(
            author_id="10001", action="create", title="猫", summary="猫粮", body="x"
        )
        await mem.pool.execute(FAILING_AUDIT)
        assert (await s.log_in(name="boom")).status_code == 303
        token = await s.csrf("/partitions")
        before = await _state(mem)
        posts = {
            "/p/global/memo": {"content": "after"},
            "/p/global/memories/new": {"content": "new fact", "importance": "5"},
            f"/p/global/memories/{record.id}/edit": {"content": "changed", "importance": "5"},
            f"/p/global/memories/{record.id}/delete": {},
            "/knowledge/new": {"title": "茶", "summary": "绿茶", "body": ""},
            "/knowledge/e/0a1b2c3d/edit": {"title": "咖啡豆", "summary": "烘焙", "body": ""},
            "/knowledge/e/0a1b2c3d/delete": {},
            f"/knowledge/s/{sid}/reject": {},
            f"/knowledge/s/{sid}/accept": {},
            "/p/global/pause": {"reason": "x"},
        }
        for path, data in posts.items():
            response = await s.client.post(path, data={"csrf": token, **data})
            assert response.status_code == 500, (path, response.status_code)
            assert await _state(mem) == before, path  # the write went with its audit row
        # clearing the partition: its backup is taken, the delete goes with the audit row
        confirm = await s.client.get("/p/global/clear")
        code = plan_token(confirm.text)
        response = await s.client.post("/p/global/clear", data={"csrf": token, "token": code})
        assert response.status_code == 500
        assert await _state(mem) == before
        # the same writes by another name are saved, each with its row
        assert (await s.log_in(name="alice")).status_code == 303
        token = await s.csrf("/partitions")
        response = await s.client.post("/p/global/memo", data={"csrf": token, "content": "after"})
        assert response.status_code == 303
        after = await _state(mem)
        assert after["memo"] == "after" and after["audit"] == before["audit"] + 1


async def test_a_login_name_with_nul_is_refused_before_anything_else(
    db_dsn: str, tmp_path: Path
) -> None:
    async with site(db_dsn, tmp_path) as s:
        response = await s.log_in(name="evil\x00name")
        assert response.status_code == 400 and "NUL" in response.text
        assert (await s.client.get("/partitions")).status_code == 303  # not logged in


# ---------------------------------------------------------------- sessions as rows

COOKIE = "amp_admin_session"


async def _with_cookie(s: Site, cookie: str, path: str = "/partitions") -> httpx.Response:
    s.client.cookies.clear()
    s.client.cookies.set(COOKIE, cookie)
    return await s.client.get(path)


async def test_a_logged_out_cookie_is_refused_and_log_out_everywhere_ends_every_session(
    db_dsn: str, tmp_path: Path
) -> None:
    async with site(db_dsn, tmp_path) as s:
        assert (await s.log_in(name="alice")).status_code == 303
        alice = s.client.cookies[COOKIE]
        assert (await s.client.get("/partitions")).status_code == 200
        token = await s.csrf("/partitions")
        assert (await s.client.post("/logout", data={"csrf": token})).status_code == 303
        # the old cookie, replayed (signed, not expired), no longer logs anybody in
        replayed = await _with_cookie(s, alice)
        assert replayed.status_code == 303 and "/login" in replayed.headers["location"]

        s.client.cookies.clear()
        assert (await s.log_in(name="bob")).status_code == 303
        bob = s.client.cookies[COOKIE]
        s.client.cookies.clear()
        assert (await s.log_in(ADMIN, name="carol")).status_code == 303
        carol = s.client.cookies[COOKIE]
        assert (await _with_cookie(s, bob)).status_code == 200
        token = await s.csrf("/partitions")
        ended = await s.client.post("/logout/everywhere", data={"csrf": token})
        assert ended.status_code == 303
        for cookie in (bob, carol):
            assert (await _with_cookie(s, cookie)).status_code == 303
        row = await s.mem.pool.fetchrow(
            "SELECT actor, detail->>'sessions' AS n FROM amrita_memory.admin_audit "
            "WHERE action = 'session.revoke_all'"
        )
        assert row is not None and (row["actor"], row["n"]) == ("bob", "2")


async def test_a_session_from_before_a_password_change_is_refused(
    db_dsn: str, tmp_path: Path
) -> None:
    async with site(db_dsn, tmp_path) as s:
        assert (await s.log_in(ADMIN)).status_code == 303
        admin = s.client.cookies[COOKIE]
        s.client.cookies.clear()
        assert (await s.log_in(SUPER)).status_code == 303
        superuser = s.client.cookies[COOKIE]
    # the admin password changes (new hash in the config; same secret, same database)
    changed = hash_password("a-new-admin-pass")
    async with site(db_dsn, tmp_path, web__password_hash=changed) as s:
        assert (await _with_cookie(s, admin)).status_code == 303
        assert (await _with_cookie(s, superuser)).status_code == 200  # unchanged password
        s.client.cookies.clear()
        assert (await s.log_in(ADMIN)).status_code == 401
        assert (await s.log_in("a-new-admin-pass")).status_code == 303


async def test_the_login_limit_is_shared_by_every_process(db_dsn: str, tmp_path: Path) -> None:
    async with (
        site(db_dsn, tmp_path, web__login_attempts_per_minute=2) as one,
        site(db_dsn, tmp_path, web__login_attempts_per_minute=2) as two,
    ):
        assert one.app is not two.app
        for _ in range(2):
            assert (await one.log_in("wrong")).status_code == 401
        refused = await two.log_in(SUPER)  # the other process counts the same failures
        assert refused.status_code == 429 and "秒后再试" in refused.text
        rows = await one.mem.pool.fetchval("SELECT count(*) FROM amrita_memory.web_login_failure")
        assert rows == 2


async def test_the_page_speaks_the_configured_language_not_the_browsers(
    db_dsn: str, tmp_path: Path
) -> None:
    """The docs say Chinese by default: an English browser gets Chinese unless the
    ``language`` setting (or the person's own language link) says otherwise."""
    english = {"accept-language": "en-US,en;q=0.9"}
    async with site(db_dsn, tmp_path) as default:
        page = await default.client.get("/login", headers=english)
        assert 'lang="zh-CN"' in page.text and "登录" in page.text
        switched = await default.client.get("/login?lang=en", headers=english)
        assert 'lang="en"' in switched.text
    async with site(db_dsn, tmp_path / "en", language="en") as configured:
        page = await configured.client.get("/login", headers={"accept-language": "zh-CN"})
        assert 'lang="en"' in page.text and "Log in" in page.text
