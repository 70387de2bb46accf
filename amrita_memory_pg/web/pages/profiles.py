"""User profiles: the list (most recently changed first), one profile with its history
(who changed what, each change's lines before and after) and revert to a kept version.

A revert is ``ProfileService.revert``: the old content comes back as a new change (so a
revert can itself be reverted), checked against the ``[profile]`` caps; the history
records it as an operator change by ``web:<login name>``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError, ProfileRefused
from amrita_memory_pg.web import kit, opsview

router = APIRouter()
NAV = [kit.NavItem("profiles", "/profiles", "nav.profiles")]


@router.get("/profiles")
async def profiles(request: Request, _user: kit.Admin) -> Response:
    page = await opsview.profiles_page(
        kit.memory(request), opsview.page_number(request.query_params.get("page"))
    )
    return kit.render(request, "profiles.html", page=page, errors=[], typed="")


@router.get("/profiles/open")
async def open_profile(request: Request, _user: kit.Admin) -> Response:
    typed = request.query_params.get("key", "")
    try:
        key = opsview.profile_key(typed)
    except ProfileRefused as exc:
        page = await opsview.profiles_page(kit.memory(request))
        return kit.render(
            request,
            "profiles.html",
            status_code=400,
            page=page,
            errors=[kit.refusal_line(request, exc)],
            typed=typed,
        )
    return kit.redirect(request, f"/profiles/u/{key}")


async def _detail(
    request: Request,
    key: str,
    *,
    version: str | None,
    errors: list[str],
    done: str | None = None,
    status_code: int = 200,
) -> Response:
    try:
        detail = await opsview.profile_detail(kit.memory(request), key, version)
    except ProfileRefused as exc:
        return kit.render(
            request, "error.html", status_code=404, message=kit.refusal_line(request, exc)
        )
    return kit.render(
        request,
        "profile.html",
        status_code=status_code,
        detail=detail,
        errors=errors,
        done=done,
    )


@router.get("/profiles/u/{key}")
async def profile(request: Request, key: str, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    done = None
    if request.query_params.get("done") == "reverted":
        done = t("profile.done.reverted", version=request.query_params.get("to", "")[:12])
    elif request.query_params.get("done") in ("edited", "unchanged"):  # profile_edit.py
        done = t(
            f"profile.done.{request.query_params['done']}",
            version=request.query_params.get("version", "")[:12],
        )
    return await _detail(
        request, key, version=request.query_params.get("version") or None, errors=[], done=done
    )


@router.post("/profiles/u/{key}/revert")
async def revert(request: Request, key: str, user: kit.AdminWrite) -> Response:
    version = kit.form_text(await request.form(), "version").strip()
    try:
        async with kit.atomic(request):
            update = await opsview.revert_profile(kit.memory(request), key, version, who=user.name)
            await kit.audit(
                request,
                user,
                "profile.revert",
                partition_key=opsview.profile_key(key),
                detail={
                    "to_version": version,
                    "new_version": update.profile.version,
                    "changed": update.changed,
                },
            )
    except ProfileRefused as exc:  # bad input or a version no longer kept: nothing written
        return await _detail(
            request, key, version=None, errors=[kit.refusal_line(request, exc)], status_code=400
        )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        await kit.audit(
            request,
            user,
            "profile.revert",
            partition_key=key,
            detail={"version": version, "error": str(exc)},
            ok=False,
        )
        return await _detail(request, key, version=None, errors=[message], status_code=400)
    # the detail box shows the change the revert made (the new version), the line above
    # it which version came back
    return kit.redirect(
        request,
        f"/profiles/u/{opsview.profile_key(key)}",
        done="reverted",
        to=version,
        version=str(update.profile.version),
    )
