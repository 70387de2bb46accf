"""``amrita-memory web``: the admin page on its own, for operators without a bot running.

The admin app is mounted under ``[web] path`` in a small parent app (so its URLs are the
same as under the bot), ``/`` redirects there, and the parent runs the admin app's
lifespan: the store opens when the server starts and closes when it stops. The parent
also serves ``/metrics`` and ``/health`` (``[observability]``) on the admin app's store.
With ``[observability] json_logs`` uvicorn's own lines are JSON too.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import RedirectResponse

from amrita_memory_pg.settings import Settings
from amrita_memory_pg.web.app import create_admin_app
from amrita_memory_pg.web.observe import observability_router


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

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> RedirectResponse:
        # what a browser asks the site's root for when a page names no icon (a JSON
        # view, a file): the page's own icon, not a 404 in every log
        return RedirectResponse(path + "/static/favicon.svg", status_code=307)

    if settings.observability.metrics_enabled:
        app.include_router(observability_router(admin.state.admin.memory_source, settings))
    app.mount(path, admin)
    return app


def serve(settings: Settings, *, host: str | None = None, port: int | None = None) -> None:
    """Run uvicorn until interrupted (ctrl+c)."""
    import logging

    import uvicorn

    json_logs = settings.observability.json_logs
    if json_logs:
        from amrita_memory_pg.logs import use_json_logs

        root = logging.getLogger()
        use_json_logs(root)
        root.setLevel(logging.INFO)
    uvicorn.run(
        standalone_app(settings),
        host=host or settings.web.host,
        port=port or settings.web.port,
        log_level="info",
        proxy_headers=False,
        # None: uvicorn's loggers keep no handlers of their own and reach the JSON root
        log_config=None if json_logs else uvicorn.config.LOGGING_CONFIG,
    )
