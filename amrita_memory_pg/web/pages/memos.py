"""A partition's L1 memo: view and replace (the cap is checked by the database write)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, field_validator

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.validation import check_text
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.pages.partitions import bad_key, valid_key

router = APIRouter()
NAV: list[kit.NavItem] = []


_MEMO = kit.Page("memo.html")


def _page(request: Request, status_code: int = 200, **context: Any) -> Response:
    """The memo page with its cap (the settings' ``memo_max_chars``)."""
    limit = kit.state(request).settings.memo_max_chars
    return _MEMO(request, status_code, max_chars=limit, **context)


@router.get("/p/{key}/memo")
async def memo(request: Request, key: str, _user: kit.Admin) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    current = await kit.cases(request).memos.read(key)
    done = (
        kit.translator_for(request)("done.memo")
        if request.query_params.get("done") == "memo"
        else None
    )
    return _page(
        request, key=key, content=current.content, version=current.version, errors=[], done=done
    )


class MemoInput(BaseModel):
    """The memo form after the one validation (its cap is checked by the database write)."""

    content: str

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: str) -> str:
        return check_text(value.strip())


@router.post("/p/{key}/memo")
async def save_memo(request: Request, key: str, user: kit.AdminWrite) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    memos = kit.cases(request).memos
    typed = kit.form_text(await request.form(), "content")
    current = await memos.read(key)
    values, errors = kit.parse_form(
        request, MemoInput, {"content": typed}, {"content": "invalid.content"}
    )
    if values is None:
        return _page(request, 400, key=key, content=typed, version=current.version, errors=errors)
    try:
        async with kit.atomic(request):
            written = await memos.replace(key, values.content, now=kit.now(request))
            await kit.audit(
                request,
                user,
                "memo.edit",
                partition_key=key,
                detail={
                    "before": current.content,
                    "after": values.content,
                    "version": written.version,
                },
            )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "memo.edit",
            exc,
            lambda: _page(
                request, 400, key=key, content=typed, version=current.version, errors=[message]
            ),
            partition_key=key,
            detail={"chars": len(values.content)},
        )
    return kit.redirect(request, f"/p/{kit.quoted(key)}/memo", done="memo")
