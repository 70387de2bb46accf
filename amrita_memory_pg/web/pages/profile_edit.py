"""Editing a user profile in place, on its page.

The form carries the summary, the body (one line per line) and the version it was
opened at. The form's fields go through the one validation (``forms.ProfileInput``),
the save through the use case (``ProfileCases.rewrite``: the ``[profile]`` caps, and a
compare of the version under the profile's lock), so a save never overwrites a change
made after the page was opened. Every save is a new version in the profile's history,
by ``web:<login name>`` (revertible like any change), and audited (``profile.edit``);
a refusal is audited too and shows the form again with what was typed.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError, ProfileRefused
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.usecases.profiles import ProfileCases
from amrita_memory_pg.web import kit, opsview
from amrita_memory_pg.web.forms import PROFILE_MESSAGES, ProfileInput

router = APIRouter()
NAV: list[kit.NavItem] = []


def profile_cases(mem: Memory) -> ProfileCases:
    """The profile use cases on the page's memory (a person's edit: the pause gate lets
    people through, it stops only automatic writers)."""
    return mem.cases.profiles


@router.post("/profiles/u/{key}/edit")
async def edit_profile(request: Request, key: str, user: kit.AdminWrite) -> Response:
    t = kit.translator_for(request)
    form = await request.form()
    typed = {name: kit.form_text(form, name) for name in ("summary", "lines", "version")}
    mem = kit.memory(request)
    try:
        detail = await opsview.profile_detail(mem, key)
    except ProfileRefused as exc:
        return kit.render(
            request, "error.html", status_code=404, message=kit.clean(request, str(exc))
        )

    def again(errors: list[str]) -> Response:
        return kit.render(
            request,
            "profile.html",
            status_code=400,
            detail=detail,
            errors=errors,
            done=None,
            typed=typed,
        )

    values, errors = kit.parse_form(request, ProfileInput, typed, PROFILE_MESSAGES)
    if values is None:
        return again(errors)
    if values.version != detail.profile.version:  # opened before another change: ask again
        current = detail.profile.version
        return again([t("profile.edit_stale", current=current, version=values.version)])
    partition_key = detail.partition_key
    try:
        async with kit.atomic(request):
            update = await profile_cases(mem).rewrite(
                partition_key,
                values.summary,
                values.lines,
                opsview.web_actor(user.name),
                version=values.version,
            )
            if update.changed:
                await kit.audit(
                    request,
                    user,
                    "profile.edit",
                    partition_key=partition_key,
                    detail={
                        "from_version": values.version,
                        "new_version": update.profile.version,
                        "operation": update.operation,
                    },
                )
    except AmritaMemoryError as exc:  # a cap, a race: nothing written
        message = t("refused.failed", reason=kit.clean(request, str(exc)))
        return await kit.refused(
            request,
            user,
            "profile.edit",
            exc,
            lambda: again([message]),
            partition_key=partition_key,
            detail={"from_version": values.version, "lines": len(values.lines)},
        )
    return kit.redirect(
        request,
        f"/profiles/u/{partition_key}",
        done="edited" if update.changed else "unchanged",
        version=update.profile.version,
    )
