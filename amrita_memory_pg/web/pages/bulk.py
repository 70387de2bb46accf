"""Bulk actions on selected memories, from the memory list and the
cross-partition search: delete (after a confirm page that says how many rows), add a tag,
set the importance, pause the partitions of the selected rows (superuser, as a single
pause).

Every row goes through the call a single change makes (``MemoryService.delete`` /
``update`` ``by_person``, ``TrailService.pause``), so the change history is written as
for one row, and gets its own audit row; all rows of one action are ONE transaction
(:func:`kit.atomic`): a refusal changes nothing. Input goes through the one validation
(:class:`~amrita_memory_pg.web.forms.BulkInput`); the form is CSRF-checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.datastructures import FormData

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.domain.validation import MAX_TAGS_CHARS, InvalidInput, check_text
from amrita_memory_pg.usecases.values import MemoryChange
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.forms import BULK_MESSAGES, MAX_BULK_ROWS, BulkInput

router = APIRouter()
NAV: list[kit.NavItem] = []

#: where a bulk form may send the browser back to: the list of a partition or the search
BACK = re.compile(r"^/(p/[A-Za-z0-9_.@%-]+/memories|search)(\?[^\s#]*)?$")
#: what the redirect appends (dropped from the page it returns to first)
RESULT_PARAMS = ("done", "n", "id", "backup")


def back_path(text: str) -> str:
    """The page the form came from, when it is one of ours; else the partitions."""
    return text if BACK.fullmatch(text) and "//" not in text else "/partitions"


def back_to(request: Request, back: str, done: str, n: int) -> Response:
    """303 to ``back`` with the result line's parameters."""
    path, _, query = back_path(back).partition("?")
    kept = [(k, v) for k, v in parse_qsl(query) if k not in RESULT_PARAMS]
    target = kit.base(request) + path + "?" + urlencode([*kept, ("done", done), ("n", str(n))])
    return RedirectResponse(target, status_code=303)


def _page(
    request: Request,
    *,
    action: str,
    rows: Sequence[MemoryRecord],
    missing: int,
    errors: Sequence[str],
    back: str,
    tags: str = "",
    status_code: int = 200,
) -> Response:
    return kit.render(
        request,
        "confirm_bulk.html",
        status_code=status_code,
        action=action,
        rows=rows,
        partitions=sorted({r.partition_key for r in rows}),
        missing=missing,
        errors=errors,
        back=back_path(back),
        tags=tags,
        max_bulk=MAX_BULK_ROWS,
    )


async def _rows(request: Request, selected: Sequence[tuple[str, str]]) -> list[MemoryRecord]:
    """The selected memories that still exist, in the order selected."""
    mem = kit.memory(request)
    found = [await mem.cases.memories.get(key, memory_id) for key, memory_id in selected]
    return [r for r in found if r is not None]


def _read(form: FormData) -> dict[str, object]:
    return {
        "action": kit.form_text(form, "action"),
        "selected": [v for v in form.getlist("sel") if isinstance(v, str)],
        "tags": kit.form_text(form, "tag"),
        "importance": kit.form_text(form, "importance"),
    }


@router.post("/bulk")
async def bulk(request: Request, user: kit.AdminWrite) -> Response:
    t = kit.translator_for(request)
    form = await request.form()
    back = kit.form_text(form, "back")
    fields = _read(form)
    values, errors = kit.parse_form(request, BulkInput, fields, BULK_MESSAGES)
    action = str(fields["action"])
    if values is not None and values.action == "tag" and not values.tags:
        values, errors = None, [t("invalid.bulk_no_tag")]
    if values is not None and values.action == "importance" and values.importance is None:
        values, errors = None, [t("invalid.bulk_no_importance")]
    if values is None:
        return _page(
            request,
            action=action,
            rows=[],
            missing=0,
            errors=errors,
            back=back,
            tags=str(fields["tags"]),
            status_code=400,
        )
    if values.action == "pause" and not user.superuser:
        raise kit.SuperuserRequired()
    rows = await _rows(request, values.selected)
    missing = len(values.selected) - len(rows)
    if not rows:
        return _page(
            request,
            action=values.action,
            rows=[],
            missing=missing,
            errors=[t("bulk.none_left")],
            back=back,
            status_code=404,
        )
    if values.action == "delete" and kit.form_text(form, "confirm") != "yes":
        return _page(request, action="delete", rows=rows, missing=missing, errors=[], back=back)
    handlers = {"delete": _delete, "tag": _tag, "pause": _pause}
    audit_action = {
        "delete": "memory.delete",
        "tag": "memory.edit",
        "importance": "memory.edit",
        "pause": "partition.pause",
    }
    try:
        async with kit.atomic(request):
            if values.action == "importance" and values.importance is not None:
                n = await _importance(request, user, rows, values.importance)
            else:
                n = await handlers[values.action](request, user, rows, values.tags)
    except AmritaMemoryError as exc:
        message = t("refused.failed", reason=kit.clean(request, str(exc)))
        return await kit.refused(
            request,
            user,
            audit_action[values.action],
            exc,
            lambda: _page(
                request,
                action=values.action,
                rows=rows,
                missing=missing,
                errors=[message],
                back=back,
                status_code=409,
            ),
            detail={"bulk": len(rows)},
        )
    done = {
        "delete": "bulk_deleted",
        "tag": "bulk_tagged",
        "importance": "bulk_importance",
        "pause": "bulk_paused",
    }
    return back_to(request, back, done[values.action], n)


async def _delete(
    request: Request, user: kit.AdminUser, rows: Sequence[MemoryRecord], _tags: Sequence[str]
) -> int:
    """Delete each row as the single delete does (history row by the trail, audit row)."""
    mem = kit.memory(request)
    deleted = 0
    for record in rows:
        done = await mem.cases.forgetting.remove(record.partition_key, record.id, by_person=True)
        ok = done is not None
        deleted += ok
        await kit.audit(
            request,
            user,
            "memory.delete",
            partition_key=record.partition_key,
            target_id=record.id,
            detail={"content": record.content, "importance": record.importance, "bulk": len(rows)},
            ok=ok,
        )
    return deleted


class TagsRefused(AmritaMemoryError):
    """A row's tags would break the edit form's rule: the whole action is refused."""

    def __init__(self, record: MemoryRecord, reason: str) -> None:
        super().__init__(f"{record.partition_key} / {record.id[:8]}：标签{reason}")


#: one row's change as the single edit makes it: (the change, the audit's before, after)
Edit = tuple[MemoryChange, dict[str, object], dict[str, object]]


async def _change_each(
    request: Request,
    user: kit.AdminUser,
    rows: Sequence[MemoryRecord],
    edit: Callable[[MemoryRecord], Edit | None],
) -> int:
    """Change each row as the single edit does (``update`` by a person, its history row,
    its own audit row); ``edit`` returns None for a row it leaves alone."""
    mem = kit.memory(request)
    changed = 0
    for record in rows:
        planned = edit(record)
        if planned is None:
            continue
        change, before, after = planned
        updated = await mem.cases.memories.change(
            record.partition_key, record.id, change, by_person=True, now=kit.now(request)
        )
        if updated is None:
            continue
        changed += 1
        await kit.audit(
            request,
            user,
            "memory.edit",
            partition_key=record.partition_key,
            target_id=record.id,
            detail={"before": before, "after": after, "bulk": len(rows)},
        )
    return changed


async def _tag(
    request: Request, user: kit.AdminUser, rows: Sequence[MemoryRecord], tags: Sequence[str]
) -> int:
    """Add ``tags`` to each row."""

    def edit(record: MemoryRecord) -> Edit | None:
        merged = tuple(dict.fromkeys((*record.tags, *tags)))
        if merged == tuple(record.tags):
            return None
        try:  # the edit form's rule for the tags a memory ends up with
            check_text(", ".join(merged), max_chars=MAX_TAGS_CHARS)
        except InvalidInput as exc:
            raise TagsRefused(record, exc.reason) from exc
        return MemoryChange(tags=merged), {"tags": list(record.tags)}, {"tags": list(merged)}

    return await _change_each(request, user, rows, edit)


async def _importance(
    request: Request, user: kit.AdminUser, rows: Sequence[MemoryRecord], importance: int
) -> int:
    """Set each row's importance (a row already at it is left alone)."""

    def edit(record: MemoryRecord) -> Edit | None:
        if record.importance == importance:
            return None
        change = MemoryChange(importance=importance)
        return change, {"importance": record.importance}, {"importance": importance}

    return await _change_each(request, user, rows, edit)


async def _pause(
    request: Request, user: kit.AdminUser, rows: Sequence[MemoryRecord], _tags: Sequence[str]
) -> int:
    """Pause each partition of the selected rows as the single pause does."""
    mem = kit.memory(request)
    paused = 0
    for key in sorted({r.partition_key for r in rows}):
        done = await mem.cases.pause.pause(key, by=f"person:web:{user.name}", now=kit.now(request))
        paused += done
        await kit.audit(
            request,
            user,
            "partition.pause",
            partition_key=key,
            detail={"reason": "", "already": not done, "bulk": len(rows)},
        )
    return paused
