"""``/metrics`` and ``/health`` over HTTP: on ``amrita-memory web`` and on the NoneBot
plugin's FastAPI driver (``[observability]``), outside the admin login.

Neither needs a session: the metrics carry no partition key, user id or text
(:mod:`amrita_memory_pg.metrics`), and the health answer says only which check failed and
why. ``/health`` is 200 when every check passes, else 503, so a container orchestrator's
HTTP probe needs no parsing.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import NotReady
from amrita_memory_pg.maintenance.health import Check, Health, store_health
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings


def observability_router(memory: Callable[[], Memory], settings: Settings) -> APIRouter:
    """The two routes at ``[observability] metrics_path`` and ``health_path``; ``memory``
    returns the process's open memory or raises :class:`NotReady`."""
    paths = settings.observability
    router = APIRouter()

    @router.get(paths.metrics_path, include_in_schema=False)
    async def scrape() -> Response:
        return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)

    @router.get(paths.health_path, include_in_schema=False)
    async def health() -> JSONResponse:
        try:
            opened = memory()
        except NotReady as exc:
            report = Health((Check("database", False, "health.not_ready", {"reason": str(exc)}),))
        else:
            report = await store_health(opened.store)
        return JSONResponse(report.as_dict(), status_code=200 if report.ok else 503)

    return router
