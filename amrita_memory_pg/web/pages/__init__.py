"""The admin page's page modules, in navigation order.

Each module has ``router`` (a FastAPI ``APIRouter``; paths relative to the app root) and
``NAV`` (a list of :class:`~amrita_memory_pg.web.kit.NavItem`). To add a page: write
``web/pages/<name>.py`` and add it to ``PAGES`` below (one line); when it replaces a
planned page, drop that page's line from ``PLANNED``.
"""

from __future__ import annotations

from types import ModuleType

from amrita_memory_pg.web.pages import (
    audit,
    backups,
    bulk,
    exports,
    forget,
    knowledge,
    l3,
    memories,
    memos,
    overview,
    partitions,
    profile_edit,
    profiles,
    search,
    status,
    trail,
)

PAGES: list[ModuleType] = [
    partitions,
    overview,
    search,
    memories,
    bulk,
    memos,
    knowledge,
    profiles,
    l3,
    status,
    trail,
    audit,
    backups,
    exports,
    profile_edit,
    forget,
]

#: pages announced in the navigation but not built yet: (key, label key); each renders
#: an honest "not built yet" page at /planned/<key>
PLANNED: list[tuple[str, str]] = []
