"""The browser harness: Debian's chromium driven by Playwright, the admin app under uvicorn.

One browser for the package; one app (a uvicorn thread on a free port) per module, on a
database of its own cloned from the migrated template, embedding through the stub HTTP
server. Nothing is downloaded: Playwright is pointed at ``/usr/bin/chromium`` (``make
test`` installs the Debian package when it is missing). Screenshots go to
``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest

from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.web.security import hash_password
from tests.support.pg import PgServer

T = TypeVar("T")
CHROMIUM = Path(os.environ.get("AMRITA_MEMORY_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
ADMIN_PASSWORD = "admin-pass-123"
SUPER_PASSWORD = "super-pass-456"
#: hashed once per session (scrypt costs 16 MiB and ~10 ms each)
_HASHES: dict[str, str] = {}


def password_hash(password: str) -> str:
    if password not in _HASHES:
        _HASHES[password] = hash_password(password)
    return _HASHES[password]


def run_sync(awaitable: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own: Playwright's sync API keeps an event loop
    running in the test thread, where ``asyncio.run`` refuses to start."""
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(awaitable))
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class AdminServer:
    """A running admin app: its base URL (``…/memory-admin``) and its database."""

    url: str
    dsn: str
    settings: Settings

    def sql(self, statement: str, *args: Any) -> list[asyncpg.Record]:
        """Run one statement on the app's database from a sync test."""

        async def run() -> list[asyncpg.Record]:
            conn = await asyncpg.connect(self.dsn)
            try:
                return list(await conn.fetch(statement, *args))
            finally:
                await conn.close()

        return run_sync(run())


@contextlib.contextmanager
def run_admin_server(settings: Settings, dsn: str) -> Iterator[AdminServer]:
    """uvicorn in a thread (its own event loop; the store opens in the app's lifespan)."""
    import uvicorn

    from amrita_memory_pg.web.server import standalone_app

    port = free_port()
    config = uvicorn.Config(
        standalone_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"admin-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the admin server did not start (see the log above)")
        time.sleep(0.05)
    try:
        yield AdminServer(f"http://127.0.0.1:{port}{settings.web.path}", dsn, settings)
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs Debian's chromium "
            "(apt-get install -y --no-install-recommends chromium); nothing is downloaded"
        )
    return CHROMIUM


@pytest.fixture(scope="package")
def browser(chromium_path: Path, template_db: str) -> Iterator[Any]:
    """One Chromium for all of tests/browser, closed when the package is done: Playwright's
    sync API keeps its event loop running in the test thread, where no async test of the
    other packages could run. Started after the template database, whose migration runs
    an event loop of its own."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="amp-chromium-") as profile, sync_playwright() as pw:
        # a persistent context on a fresh profile directory: the user-data-dir is ours
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=str(chromium_path),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 860},
            locale="zh-CN",
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def stub_embedder() -> Iterator[StubEmbeddingServer]:
    with StubEmbeddingServer(dim=64) as server:
        yield server


@pytest.fixture(scope="module")
def module_db(pg_server: PgServer, template_db: str) -> Iterator[str]:
    name = run_sync(pg_server.create_database(template=template_db))
    try:
        yield pg_server.dsn(name)
    finally:
        run_sync(pg_server.drop_database(name))


def web_settings(dsn: str, data_dir: Path, embed_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database.url": dsn,
        "data_dir": str(data_dir),
        "embedding.protocol": "ollama-embed",
        "embedding.model_url": embed_url,
        "embedding.model_name": "nomic-embed-text",
        "web.password_hash": password_hash(ADMIN_PASSWORD),
        "web.superuser_password_hash": password_hash(SUPER_PASSWORD),
        # small pages, so that a handful of sample memories spans two
        "web.page_size": 5,
    }
    values.update(overrides)
    return load_settings(env={}, read_default_files=False, overrides=values)


@pytest.fixture(scope="module")
def admin_server(
    module_db: str, stub_embedder: StubEmbeddingServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdminServer]:
    settings = web_settings(module_db, tmp_path_factory.mktemp("web-data"), stub_embedder.url)
    with run_admin_server(settings, module_db) as server:
        yield server


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A new tab with no cookies (each test logs in itself)."""
    browser.clear_cookies()
    tab = browser.new_page()
    tab.set_default_timeout(10_000)
    try:
        yield tab
    finally:
        tab.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def log_in(page: Any, base: str, password: str = ADMIN_PASSWORD, name: str = "tester") -> None:
    page.goto(f"{base}/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", password)
    page.click("#login-form button[type=submit]")
    page.wait_for_load_state()
