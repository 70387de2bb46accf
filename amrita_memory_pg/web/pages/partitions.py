"""Partitions with their counts and cap usage (the ``partition_usage`` view)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.keys import MAX_KEY_CHARS, check_partition_key, legacy_key_now
from amrita_memory_pg.domain.validation import InvalidInput
from amrita_memory_pg.web import kit

router = APIRouter()
NAV = [kit.NavItem("partitions", "/partitions", "nav.partitions")]

PAGE_SIZE = 50


def valid_key(key: str) -> bool:
    """Whether ``key`` passes the one key rule (domain/keys.py) unchanged."""
    try:
        return check_partition_key(key) == key
    except InvalidInput:
        return False


def bad_key(request: Request, key: str, status_code: int = 404) -> Response:
    """The error page for a key that fails :func:`valid_key`."""
    t = kit.translator_for(request)
    return kit.render(request, "error.html", status_code, message=t("error.bad_key", key=key))


def page_number(text: str | None) -> int:
    """A page number from the query string (1 for anything that is not a positive int)."""
    return int(text) if text and text.isascii() and text.isdigit() and 0 < int(text) < 10**6 else 1


@router.get("/partitions")
async def partitions(request: Request, _user: kit.Admin) -> Response:
    contains = request.query_params.get("q", "").strip()[:MAX_KEY_CHARS] or None
    page = page_number(request.query_params.get("page"))
    rows, total = await kit.admin_store(request).partition_page(
        limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE, contains=contains
    )
    cap = kit.state(request).settings.per_session_memory_limit
    paused = await kit.memory(request).trail.paused_among([r.partition_key for r in rows])
    return kit.render(
        request,
        "partitions.html",
        rows=rows,
        paused=paused,
        total=total,
        page=page,
        pages=max(1, -(-total // PAGE_SIZE)),
        q=contains or "",
        cap=cap,
        error=None,
    )


@router.get("/open")
async def open_partition(request: Request, _user: kit.Admin) -> Response:
    """The "open partition" box: a valid key goes to its memories, else an inline error."""
    key = request.query_params.get("key", "").strip()
    # an old-style key (user_10004) opens the partition it is now: it used to find nothing
    key = legacy_key_now(key[:MAX_KEY_CHARS]) or key
    if valid_key(key):
        return kit.redirect(request, f"/p/{kit.quoted(key)}/memories")
    return bad_key(request, key, 400)
