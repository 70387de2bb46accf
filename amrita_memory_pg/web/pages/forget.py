"""Forgetting a memory and erasing a partition on the admin page: the same use cases as
``/memory … forget``, ``/memory erase`` and the CLI (``usecases/forgetting.py``).

Each shows what it would reach first (the cascade, or rows per table) with the code that
confirms exactly that; the write checks the code again, so a memory or partition that
changed meanwhile is not forgotten on an old look. The audit row keeps who and when and
the counts, never the content (a forget must not leave a copy behind).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.validation import MAX_ID_CHARS
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.pages.partitions import bad_key, valid_key

router = APIRouter()
NAV: list[kit.NavItem] = []


def _not_found(request: Request, what: str) -> Response:
    t = kit.translator_for(request)
    return kit.render(
        request, "error.html", status_code=404, message=t("error.not_found", what=what)
    )


@router.get("/p/{key}/memories/{memory_id}/forget")
async def forget_confirm(request: Request, key: str, memory_id: str, _user: kit.Admin) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    cases = kit.cases(request)
    record = await cases.memories.get(key, memory_id[:MAX_ID_CHARS])
    if record is None:
        return _not_found(request, f"{key} / {memory_id[:40]}")
    plan = await cases.forgetting.forget_plan(key, record, now=kit.now(request))
    return kit.render(request, "confirm_forget.html", key=key, record=record, plan=plan, error=None)


@router.post("/p/{key}/memories/{memory_id}/forget")
async def forget(request: Request, key: str, memory_id: str, user: kit.AdminWrite) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    t = kit.translator_for(request)
    cases = kit.cases(request)
    record = await cases.memories.get(key, memory_id[:MAX_ID_CHARS])
    if record is None:
        return _not_found(request, f"{key} / {memory_id[:40]}")
    code = kit.form_text(await request.form(), "code").strip()[:20]
    plan = await cases.forgetting.forget_plan(key, record, now=kit.now(request))
    if not plan.accepts(code, kit.now(request)):
        return kit.render(
            request,
            "confirm_forget.html",
            status_code=409,
            key=key,
            record=record,
            plan=plan,
            error=t("forget.changed"),
        )
    try:
        async with kit.atomic(request):
            done = await cases.forgetting.forget(
                key, [record.id], requested_by=f"web:{user.name}", by_person=True
            )
            await kit.audit(
                request,
                user,
                "memory.forget",
                partition_key=key,
                target_id=record.id,
                detail={
                    "derived_deleted": len(done.deleted),
                    "derived_withheld": len(done.withheld),
                    "rows": done.counts,
                },
            )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "memory.forget",
            exc,
            lambda: kit.render(request, "error.html", status_code=409, message=message),
            partition_key=key,
            target_id=record.id,
        )
    return kit.redirect(
        request,
        f"/p/{kit.quoted(key)}/memories",
        done="forgotten",
        id=record.id,
        n=str(len(done.deleted) + len(done.withheld)),
    )


@router.get("/p/{key}/erase")
async def erase_confirm(request: Request, key: str, _user: kit.Superuser) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    plan = await kit.cases(request).forgetting.erase_plan(key, now=kit.now(request))
    return kit.render(request, "confirm_erase.html", key=key, plan=plan, typed="", error=None)


@router.post("/p/{key}/erase")
async def erase(request: Request, key: str, user: kit.SuperuserWrite) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    t = kit.translator_for(request)
    cases = kit.cases(request)
    typed = kit.form_text(await request.form(), "code").strip()[:20]
    plan = await cases.forgetting.erase_plan(key, now=kit.now(request))
    if not plan.cascade.counts or not plan.accepts(typed, kit.now(request)):
        return kit.render(
            request,
            "confirm_erase.html",
            status_code=400,
            key=key,
            plan=plan,
            typed=typed,
            error=t("confirm.token_wrong") if plan.cascade.counts else None,
        )
    try:
        # Its own transaction (it holds the partition's L3 and extraction leases); the
        # audit row after it names no key: the ledger's subject (a sha256) is the record.
        done = await cases.forgetting.erase(key, requested_by=f"web:{user.name}")
        await kit.audit(request, user, "partition.erase", detail={"rows": done.counts})
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "partition.erase",
            exc,
            lambda: kit.render(request, "error.html", status_code=409, message=message),
        )
    return kit.render(request, "erased.html", key=key, done=done)
