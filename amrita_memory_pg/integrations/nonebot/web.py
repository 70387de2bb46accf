"""Mount the admin web page on NoneBot's FastAPI driver under ``[web] path``, and
``/metrics`` and ``/health`` (``[observability]``).

Only when ``[web] enabled``; the page reads the plugin's one open memory
(``runtime.require``), so until the store is open (or when it failed to open) its pages
answer 503 with the reason. Any other driver, a missing ``web`` extra or a missing/invalid
password hash leaves the bot running without the page and logs one line saying why.
"""

from __future__ import annotations

import importlib.util
import logging

from nonebot import get_app, get_driver
from nonebot.drivers import ASGIMixin

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.integrations.nonebot.runtime import Runtime
from amrita_memory_pg.settings import Settings

log = logging.getLogger(__name__)


def mount_admin(settings: Settings, runtime: Runtime) -> bool:
    """Mount the admin app; whether it was mounted."""
    if not settings.web.enabled:
        return False
    driver = get_driver()
    if not isinstance(driver, ASGIMixin) or importlib.util.find_spec("fastapi") is None:
        log.error(
            "[web] enabled, but the admin page needs NoneBot's FastAPI driver "
            "(DRIVER=~fastapi) and the web extra (pip install 'amrita-memory-pg[web]'); "
            "not mounted"
        )
        return False
    from fastapi import FastAPI

    from amrita_memory_pg.web import create_admin_app

    app = get_app()
    if not isinstance(app, FastAPI):
        log.error("[web] enabled, but the driver's app is not FastAPI (%s); not mounted", type(app))
        return False
    try:
        admin = create_admin_app(runtime.require, settings)
    except ConfigError as exc:
        log.error("[web] admin page not mounted: %s", exc)
        return False
    app.mount(settings.web.path, admin)
    from amrita_memory_pg.web.pages.status import runner_for

    @driver.on_startup
    async def _watch_jobs() -> None:
        # from the bot's start, a re-embed whose process died is resumed here;
        # until the store opens the checks wait (the runner retries)
        runner_for(admin)

    @driver.on_shutdown
    async def _stop_jobs() -> None:
        await runner_for(admin).aclose()

    log.info("admin page mounted at %s", settings.web.path)
    return True


def mount_observability(settings: Settings, runtime: Runtime) -> bool:
    """Serve ``/metrics`` and ``/health`` (``[observability]``) on the driver's FastAPI
    app, whether or not the admin page is on; whether they were mounted. Another driver
    (a console bot's ``~none``) has no HTTP server: nothing to mount, one line says so."""
    if not settings.observability.metrics_enabled:
        return False
    driver = get_driver()
    if not isinstance(driver, ASGIMixin) or importlib.util.find_spec("fastapi") is None:
        log.info("no /metrics or /health: the driver serves no HTTP (DRIVER=~fastapi serves them)")
        return False
    from fastapi import FastAPI

    from amrita_memory_pg.web.observe import observability_router

    app = get_app()
    if not isinstance(app, FastAPI):
        log.error("[observability] the driver's app is not FastAPI (%s); not mounted", type(app))
        return False
    app.include_router(observability_router(runtime.require, settings))
    paths = settings.observability
    log.info("metrics at %s, health at %s", paths.metrics_path, paths.health_path)
    return True
