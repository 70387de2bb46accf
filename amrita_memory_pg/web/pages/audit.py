"""The audit log of the page's writes (superuser only)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.web import kit
from amrita_memory_pg.web.pages.partitions import page_number, valid_key

router = APIRouter()
NAV = [kit.NavItem("audit", "/audit", "nav.audit", superuser=True)]

PAGE_SIZE = 100


@router.get("/audit")
async def audit_log(request: Request, _user: kit.Superuser) -> Response:
    key = request.query_params.get("key", "").strip()
    page = page_number(request.query_params.get("page"))
    entries, total = await kit.admin_store(request).audit_page(
        limit=PAGE_SIZE,
        offset=(page - 1) * PAGE_SIZE,
        partition_key=key if valid_key(key) else None,
    )
    return kit.render(
        request,
        "audit.html",
        entries=entries,
        total=total,
        page=page,
        pages=max(1, -(-total // PAGE_SIZE)),
        key=key,
    )
