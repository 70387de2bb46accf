"""The admin web page (issue 17): browse, search and edit the memory in a browser.

An adapter like ``cli/``: it sits on top of the services and maintenance and nothing
below imports it. :func:`create_admin_app` builds the FastAPI app; ``amrita-memory web``
serves it standalone (:mod:`.server`), the NoneBot plugin mounts it under ``[web] path``.
How to add a page: :mod:`amrita_memory_pg.web.kit` and ``web/pages/__init__.py``.
Needs the ``web`` extra (fastapi, uvicorn, python-multipart).
"""

from __future__ import annotations

from amrita_memory_pg.web.app import create_admin_app

__all__ = ["create_admin_app"]
