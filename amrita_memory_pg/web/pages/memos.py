"""A partition's L1 memo: view and replace (the cap is checked by the database write)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError, MemoTooLong
from amrita_memory_pg.domain.validation import InvalidInput, check_text
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.pages.partitions import valid_key

router = APIRouter()
NAV: list[kit.NavItem] = []


def _page(
    request: Request,
    key: str,
    content: str,
    *,
    version: int,
    errors: list[str],
    done: str | None = None,
    status_code: int = 200,
) -> Response:
    return kit.render(
        request,
        "memo.html",
        status_code=status_code,
        key=key,
        content=content,
        version=version,
        max_chars=kit.state(request).settings.memo_max_chars,
        errors=errors,
        done=done,
    )


@router.get("/p/{key}/memo")
async def memo(request: Request, key: str, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    if not valid_key(key):
        return kit.render(
            request, "error.html", status_code=404, message=t("error.bad_key", key=key)
        )
    current = await kit.memory(request).memos.get(key)
    done = t("done.memo") if request.query_params.get("done") == "memo" else None
    return _page(request, key, current.content, version=current.version, errors=[], done=done)


@router.post("/p/{key}/memo")
async def save_memo(request: Request, key: str, user: kit.AdminWrite) -> Response:
    t = kit.translator_for(request)
    if not valid_key(key):
        return kit.render(
            request, "error.html", status_code=404, message=t("error.bad_key", key=key)
        )
    memos = kit.memory(request).memos
    typed = kit.form_text(await request.form(), "content")
    current = await memos.get(key)
    try:
        content = check_text(typed.strip())
    except InvalidInput as exc:
        return _page(
            request,
            key,
            typed,
            version=current.version,
            errors=[t("invalid.content", reason=exc.reason)],
            status_code=400,
        )
    try:
        written = await memos.replace(key, content, now=kit.now(request))
    except AmritaMemoryError as exc:
        message = (
            t("memo.too_long", length=exc.length, limit=exc.limit)
            if isinstance(exc, MemoTooLong)
            else t("refused.failed", reason=kit.clean(request, str(exc)))
        )
        await kit.audit(
            request,
            user,
            "memo.edit",
            partition_key=key,
            detail={"chars": len(content), "error": str(exc)},
            ok=False,
        )
        return _page(
            request, key, typed, version=current.version, errors=[message], status_code=400
        )
    await kit.audit(
        request,
        user,
        "memo.edit",
        partition_key=key,
        detail={"before": current.content, "after": content, "version": written.version},
    )
    return kit.redirect(request, f"/p/{kit.quoted(key)}/memo", done="memo")
