"""The knowledge base: entries (list, view, create, edit, delete after a confirm page)
and the suggestion queue (view, accept, reject).

Every write goes through ``KnowledgeService`` (``mem.knowledge``), which validates with
``domain/validation.py`` and refuses with a :class:`KnowledgeError` sentence before
anything is written; the page shows that sentence inline and keeps what was typed.
Accept = the suggestion's entry is created (or the entry it names updated) and the
suggestion leaves the queue; reject = it leaves the queue unwritten. A suggestion a
running L3 cycle has claimed is the cycle's: both are refused.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError, KnowledgeError, KnowledgeNotFound
from amrita_memory_pg.web import kit, opsview

router = APIRouter()
NAV = [kit.NavItem("knowledge", "/knowledge", "nav.knowledge")]

DONE = ("created", "edited", "deleted", "accepted", "rejected")


def _error(request: Request, message: str, status_code: int = 404) -> Response:
    return kit.render(request, "error.html", status_code=status_code, message=message)


def _done(request: Request) -> str | None:
    t = kit.translator_for(request)
    done = request.query_params.get("done")
    if done not in DONE:
        return None
    return t(
        f"kb.done.{done}",
        kid=request.query_params.get("kid", ""),
        id=request.query_params.get("id", ""),
    )


@router.get("/knowledge")
async def knowledge(request: Request, _user: kit.Admin) -> Response:
    page = await opsview.knowledge_page(kit.memory(request))
    return kit.render(request, "knowledge.html", page=page, done=_done(request))


# ---------------------------------------------------------------------------- entries


def _form(
    request: Request,
    *,
    kid: str | None,
    title: str,
    summary: str,
    body: str,
    errors: list[str],
    status_code: int = 200,
) -> Response:
    return kit.render(
        request,
        "knowledge_form.html",
        status_code=status_code,
        kid=kid,
        title=title,
        summary=summary,
        body=body,
        errors=errors,
        max_chars=kit.cases(request).knowledge.max_chars,
    )


@router.get("/knowledge/new")
async def new_entry(request: Request, _user: kit.Admin) -> Response:
    return _form(request, kid=None, title="", summary="", body="", errors=[])


@router.post("/knowledge/new")
async def create_entry(request: Request, user: kit.AdminWrite) -> Response:
    form = await request.form()
    title, summary, body = (kit.form_text(form, k) for k in ("title", "summary", "body"))

    def again(errors: list[str]) -> Response:
        return _form(
            request,
            kid=None,
            title=title,
            summary=summary,
            body=body,
            errors=errors,
            status_code=400,
        )

    try:
        async with kit.atomic(request):
            written = await kit.cases(request).knowledge.create(
                title=title, summary=summary, body=body, now=kit.now(request)
            )
            await kit.audit(
                request,
                user,
                "knowledge.create",
                target_id=written.kid,
                detail={"title": title, "summary": summary, "lines": written.total_lines},
            )
    except KnowledgeError as exc:  # validation: nothing written, not audited
        return again([kit.refusal_line(request, exc)])
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "knowledge.create",
            exc,
            lambda: again([message]),
            detail={"title": title},
        )
    return kit.redirect(request, f"/knowledge/e/{written.kid}", done="created", kid=written.kid)


@router.get("/knowledge/e/{kid}")
async def entry(request: Request, kid: str, _user: kit.Admin) -> Response:
    try:
        found = await opsview.knowledge_entry(kit.memory(request), kid)
    except KnowledgeError as exc:
        return _error(request, kit.refusal_line(request, exc))
    return kit.render(
        request,
        "knowledge_entry.html",
        entry=found,
        lines=found.body.split("\n") if found.body else [],
        done=_done(request),
    )


@router.get("/knowledge/e/{kid}/edit")
async def edit_entry(request: Request, kid: str, _user: kit.Admin) -> Response:
    try:
        found = await opsview.knowledge_entry(kit.memory(request), kid)
    except KnowledgeError as exc:
        return _error(request, kit.refusal_line(request, exc))
    return _form(
        request, kid=found.kid, title=found.title, summary=found.summary, body=found.body, errors=[]
    )


@router.post("/knowledge/e/{kid}/edit")
async def save_entry(request: Request, kid: str, user: kit.AdminWrite) -> Response:
    form = await request.form()
    title, summary, body = (kit.form_text(form, k) for k in ("title", "summary", "body"))
    service = kit.cases(request).knowledge

    def again(errors: list[str]) -> Response:
        return _form(
            request,
            kid=kid,
            title=title,
            summary=summary,
            body=body,
            errors=errors,
            status_code=400,
        )

    try:
        async with kit.atomic(request):
            before = await service.get(kid)
            written = await service.update(
                kid, title=title, summary=summary, body=body, now=kit.now(request)
            )
            await kit.audit(
                request,
                user,
                "knowledge.edit",
                target_id=kid,
                detail={
                    "before": {"title": before.title, "summary": before.summary},
                    "after": {"title": title, "summary": summary},
                    "lines": written.total_lines,
                },
            )
    except KnowledgeNotFound as exc:
        return _error(request, kit.refusal_line(request, exc))
    except KnowledgeError as exc:
        return again([kit.refusal_line(request, exc)])
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request, user, "knowledge.edit", exc, lambda: again([message]), target_id=kid
        )
    return kit.redirect(request, f"/knowledge/e/{kid}", done="edited", kid=kid)


@router.get("/knowledge/e/{kid}/delete")
async def delete_confirm(request: Request, kid: str, _user: kit.Admin) -> Response:
    try:
        found = await opsview.knowledge_entry(kit.memory(request), kid)
    except KnowledgeError as exc:
        return _error(request, kit.refusal_line(request, exc))
    return kit.render(request, "knowledge_delete.html", entry=found)


@router.post("/knowledge/e/{kid}/delete")
async def delete_entry(request: Request, kid: str, user: kit.AdminWrite) -> Response:
    service = kit.cases(request).knowledge
    try:
        async with kit.atomic(request):
            before = await service.get(kid)
            await service.delete(kid)
            await kit.audit(
                request,
                user,
                "knowledge.delete",
                target_id=kid,
                detail={
                    "title": before.title,
                    "summary": before.summary,
                    "chars": len(before.body),
                },
            )
    except KnowledgeError as exc:
        return _error(request, kit.refusal_line(request, exc))
    return kit.redirect(request, "/knowledge", done="deleted", kid=kid)


# ---------------------------------------------------------------------------- suggestions


@router.get("/knowledge/s/{sid}")
async def suggestion(request: Request, sid: str, _user: kit.Admin) -> Response:
    try:
        view = await opsview.suggestion_view(kit.memory(request), sid)
    except KnowledgeError as exc:
        return _error(request, kit.refusal_line(request, exc))
    return kit.render(request, "knowledge_suggestion.html", view=view, s=view.suggestion, errors=[])


async def _handle(request: Request, sid: str, user: kit.AdminUser, verb: str) -> Response:
    mem = kit.memory(request)
    try:
        number = opsview.suggestion_number(sid)
        view = await opsview.suggestion_view(mem, sid)
    except KnowledgeError as exc:
        return _error(request, kit.refusal_line(request, exc))
    detail = {
        "action": view.suggestion.action,
        "kid": view.suggestion.kid,
        "title": view.suggestion.title,
        "author": view.suggestion.author_id,
    }
    action = f"knowledge.suggestion_{verb}"

    def again(status_code: int, error: str) -> Response:
        return kit.render(
            request,
            "knowledge_suggestion.html",
            status_code=status_code,
            view=view,
            s=view.suggestion,
            errors=[error],
        )

    try:
        async with kit.atomic(request):
            if verb == "accept":
                written = await kit.cases(request).knowledge.accept_suggestion(
                    number, now=kit.now(request)
                )
                detail["kid"] = written.kid
            else:
                await kit.cases(request).knowledge.reject_suggestion(number, now=kit.now(request))
            await kit.audit(request, user, action, target_id=str(number), detail=detail)
    except KnowledgeError as exc:  # already decided, gone: nothing written, not audited
        return again(409, kit.refusal_line(request, exc))
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc, wrapped=False)
        return await kit.refused(
            request,
            user,
            action,
            exc,
            lambda: again(400, message),
            target_id=str(number),
            detail=detail,
        )
    done = "accepted" if verb == "accept" else "rejected"
    return kit.redirect(request, "/knowledge", done=done, id=number, kid=detail["kid"] or "")


@router.post("/knowledge/s/{sid}/accept")
async def accept(request: Request, sid: str, user: kit.AdminWrite) -> Response:
    return await _handle(request, sid, user, "accept")


@router.post("/knowledge/s/{sid}/reject")
async def reject(request: Request, sid: str, user: kit.AdminWrite) -> Response:
    return await _handle(request, sid, user, "reject")
