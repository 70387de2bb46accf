"""``amrita-memory web``: the admin page on its own, for operators without a bot running.

The admin app is mounted under ``[web] path`` in a small parent app (so its URLs are the
same as under the bot), ``/`` redirects there, and the parent runs the admin app's
lifespan: the store opens when the server starts and closes when it stops.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import RedirectResponse

from amrita_memory_pg.settings import Settings
from amrita_memory_pg.web.app import create_admin_app


def standalone_app(settings: Settings) -> FastAPI:
    """The parent app: the admin app (with its own store) under ``[web] path``."""
    admin = create_admin_app(None, settings)
    path = settings.web.path

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with admin.router.lifespan_context(admin):
            yield

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse(path + "/", status_code=307)

    app.mount(path, admin)
    return app


def serve(settings: Settings, *, host: str | None = None, port: int | None = None) -> None:
    """Run uvicorn until interrupted (ctrl+c)."""
    import uvicorn

    uvicorn.run(
        standalone_app(settings),
        host=host or settings.web.host,
        port=port or settings.web.port,
        log_level="info",
        proxy_headers=False,
    )
