"""The admin web page: browse, search and edit the memory in a browser.

An adapter like ``cli/``: it sits on top of the services and maintenance and nothing
below imports it. :func:`create_admin_app` builds the FastAPI app; ``amrita-memory web``
serves it standalone (:mod:`.server`), the NoneBot plugin mounts it under ``[web] path``.
How to add a page: :mod:`amrita_memory_pg.web.kit` and ``web/pages/__init__.py``.
Needs the ``web`` extra (fastapi, uvicorn, python-multipart) — except :mod:`.jobs`, the
framework-free job runner every bot process uses to resume a lost re-embed: so the app
is imported when first asked for, not with the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from amrita_memory_pg.web.app import create_admin_app

__all__ = ["create_admin_app"]


def __getattr__(name: str) -> Any:
    if name == "create_admin_app":
        from amrita_memory_pg.web.app import create_admin_app

        return create_admin_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
