"""A partition's memories: browse with filters, sort and pages; search with the tools'
service (``MemoryService.search``, the same SQL as ``read_memory``); add, edit, delete
(after a confirm page) and clear the partition (superuser, after a confirm page with the
code ``maintenance/clear.py`` hands out).

Input goes through ``domain/validation.py`` (the one validation); a refused field
re-renders the form with the reason and writes nothing. What a person writes here is
``source=user`` (protected from automatic processes), written ``by_person``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.keys import MAX_KEY_CHARS, legacy_key_now, scope_of_key
from amrita_memory_pg.domain.records import (
    CATEGORIES,
    CATEGORY_NAMES,
    SEARCH_MODES,
    SOURCE_NAMES,
    MemoryRecord,
    SearchHit,
    SearchMode,
)
from amrita_memory_pg.domain.validation import (
    MAX_ID_CHARS,
)
from amrita_memory_pg.storage.admin import MEMORY_SORTS, MemoryQuery
from amrita_memory_pg.usecases.values import MemoryChange, NewMemory
from amrita_memory_pg.usecases.values import MemoryQuery as SearchQuery
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.forms import (
    BULK_ACTIONS,
    FILTER_MESSAGES,
    MAX_BULK_ROWS,
    MEMORY_MESSAGES,
    FilterInput,
    MemoryForm,
    MemoryInput,
)
from amrita_memory_pg.web.pages.partitions import bad_key, page_number, valid_key

router = APIRouter()
NAV: list[kit.NavItem] = []

SCOPES = ("user", "group", "global")
#: a search shows at most this many hits (the tools' top_k cap)
SEARCH_TOP_K = 50
DONE = (
    "added",
    "edited",
    "deleted",
    "forgotten",
    "cleared",
    "bulk_deleted",
    "bulk_tagged",
    "bulk_importance",
    "bulk_paused",
)


class BadKey(Exception):
    pass


def partition(request: Request, key: str) -> str:
    if not valid_key(key):
        raise BadKey(key)
    return key


@dataclass
class Filters:
    q: str = ""
    mode: str = ""
    scope: str = ""
    category: str = ""
    source: str = ""
    imin: str = ""
    imax: str = ""
    tags: str = ""
    age: str = ""
    sort: str = "created_desc"
    page: int = 1

    def query(self, **changes: Any) -> dict[str, Any]:
        values = {**self.__dict__, **changes}
        return {k: v for k, v in values.items() if v not in ("", None) and (k, v) != ("page", 1)}


def read_filters(
    request: Request, now: datetime
) -> tuple[Filters, MemoryQuery, SearchMode | None, list[str]]:
    """The list's filters from the query string; unknown choices fall back to "any",
    typed values go through :class:`FilterInput` (each error is one line for the page)."""
    params = request.query_params

    def choice(name: str, allowed: tuple[str, ...]) -> str:
        value = params.get(name, "")
        return value if value in allowed else ""

    f = Filters(
        q=params.get("q", "").strip(),
        mode=choice("mode", SEARCH_MODES),
        scope=choice("scope", SCOPES),
        category=params.get("category", "").strip(),
        source=choice("source", tuple(SOURCE_NAMES)),
        imin=params.get("imin", "").strip(),
        imax=params.get("imax", "").strip(),
        tags=params.get("tags", "").strip(),
        age=params.get("age", "").strip(),
        sort=choice("sort", MEMORY_SORTS) or "created_desc",
        page=page_number(params.get("page")),
    )
    typed = {k: getattr(f, k) for k in ("q", "category", "imin", "imax", "tags", "age")}
    values, errors = kit.parse_form(request, FilterInput, typed, FILTER_MESSAGES)
    clean = values or FilterInput(q="", category=None, imin=None, imax=None, tags=(), age=None)
    where = MemoryQuery(
        scope=f.scope or None,
        category=clean.category,
        source=f.source or None,
        importance_min=clean.imin,
        importance_max=clean.imax,
        tags=clean.tags or None,
        created_since=now - timedelta(days=clean.age) if clean.age else None,
        sort=f.sort,
    )
    mode: SearchMode | None = f.mode if f.mode in SEARCH_MODES else None
    return f, where, mode, errors


@router.get("/p/{key}")
async def partition_home(request: Request, key: str, _user: kit.Admin) -> Response:
    return kit.redirect(request, f"/p/{kit.quoted(key)}/memories")


@router.get("/p/{key}/memories")
async def memories(request: Request, key: str, user: kit.Admin) -> Response:
    try:
        key = partition(request, key)
    except BadKey:
        now = legacy_key_now(key[:MAX_KEY_CHARS])
        if now is not None:  # an old-style key in the URL: the partition it is now
            return kit.redirect(request, f"/p/{kit.quoted(now)}/memories", **request.query_params)
        return bad_key(request, key)
    t = kit.translator_for(request)
    settings = kit.state(request).settings
    mem = kit.memory(request)
    cases = kit.cases(request)
    f, where, mode, errors = read_filters(request, kit.now(request))
    size = settings.web.page_size
    records: list[MemoryRecord] = []
    hits: list[SearchHit] = []
    total = 0
    if not errors and f.q:
        try:
            asked = SearchQuery(
                key,
                f.q,
                top_k=SEARCH_TOP_K,
                importance=(where.importance_min or 1, where.importance_max or 10)
                if where.importance_min or where.importance_max
                else None,
                scope=where.scope,  # type: ignore[arg-type]
                tags=where.tags,
                category=where.category,  # type: ignore[arg-type]
                mode=mode,
            )
            hits = [
                h
                for h in (await cases.memories.search(asked)).hits
                if (where.source is None or h.record.source == where.source)
                and (where.created_since is None or h.record.created_at >= where.created_since)
            ]
        except AmritaMemoryError as exc:
            errors.append(kit.refusal_line(request, exc))
    elif not errors:
        records, total = await kit.admin_store(request, key).memory_page(
            key, where, limit=size, offset=(f.page - 1) * size
        )
    used = await cases.memories.count(key)
    done = request.query_params.get("done", "")
    done_text = None
    if done in DONE:
        done_text = t(
            f"done.{done}",
            id=request.query_params.get("id", "")[:MAX_ID_CHARS],
            n=request.query_params.get("n", "")[:10],
            backup=request.query_params.get("backup", "")[:300],
        )
    return kit.render(
        request,
        "memories.html",
        key=key,
        f=f,
        errors=errors,
        records=records,
        hits=hits,
        searched=bool(f.q) and not errors,
        total=total,
        pages=max(1, -(-total // size)),
        used=used,
        cap=settings.per_session_memory_limit,
        default_mode=settings.retrieval.default_mode,
        modes=SEARCH_MODES,
        scopes=SCOPES,
        categories=CATEGORIES,
        category_names=CATEGORY_NAMES,
        sources=SOURCE_NAMES,
        sorts=MEMORY_SORTS,
        top_k=SEARCH_TOP_K,
        done=done_text,
        paused=await mem.trail.is_paused(key),
        actions=[a for a in BULK_ACTIONS if a != "pause" or user.superuser],
        max_bulk=MAX_BULK_ROWS,
        back=list_path(key, f),
    )


def list_path(key: str, f: Filters) -> str:
    """This list with its filters, under the app root: where a bulk action returns to."""
    query = f.query()
    return f"/p/{kit.quoted(key)}/memories" + ("?" + urlencode(query) if query else "")


async def read_memory_form(
    request: Request, stored: str | None = None
) -> tuple[MemoryForm, MemoryInput | None, list[str]]:
    """The add/edit form: (what was typed, the clean values or None, the errors).

    ``stored``: the edited memory's text. Sent back unchanged it is kept as it is, even
    over the cap: an imported 4,500-character memory stays editable (importance, tags,
    category) instead of refusing every save.
    """
    form = await request.form()
    typed = MemoryForm(
        content=kit.form_text(form, "content"),
        category=kit.form_text(form, "category").strip(),
        importance=kit.form_text(form, "importance").strip(),
        tags=kit.form_text(form, "tags"),
    )
    fields = asdict(typed)
    kept = stored is not None and typed.content.replace("\r\n", "\n").strip() == stored.strip()
    if kept:
        fields["content"] = "kept"  # stands in for the stored text, checked when written
    values, errors = kit.parse_form(request, MemoryInput, fields, MEMORY_MESSAGES)
    if kept and values is not None and stored is not None:
        values = values.model_copy(update={"content": stored})
    return typed, values, errors


#: the add/edit form; ``record`` is the memory being edited (None: a new one)
_FORM = kit.Page(
    "memory_form.html",
    {"record": None, "categories": CATEGORIES, "category_names": CATEGORY_NAMES},
)


@router.get("/p/{key}/memories/new")
async def add_form(request: Request, key: str, _user: kit.Admin) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    return _FORM(request, key=key, form=MemoryForm(), errors=[])


@router.post("/p/{key}/memories/new")
async def add(request: Request, key: str, user: kit.AdminWrite) -> Response:
    if not valid_key(key):
        return bad_key(request, key)
    typed, values, errors = await read_memory_form(request)
    if values is None:
        return _FORM(request, 400, key=key, form=typed, errors=errors)
    new = NewMemory(
        partition_key=key,
        scope=scope_of_key(key),
        content=values.content,
        tags=values.tags,
        importance=values.importance,
        category=values.category,
        source="user",
        author=f"web:{user.name}",
        now=kit.now(request),
    )
    try:
        async with kit.atomic(request):
            record = (await kit.cases(request).memories.write(new, idempotent=False)).record
            await kit.audit(
                request,
                user,
                "memory.add",
                partition_key=key,
                target_id=record.id,
                detail={
                    "content": record.content,
                    "importance": record.importance,
                    "category": record.category,
                    "tags": list(record.tags),
                },
            )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "memory.add",
            exc,
            lambda: _FORM(request, 409, key=key, form=typed, errors=[message]),
            partition_key=key,
            detail={"content": values.content},
        )
    return kit.redirect(request, f"/p/{kit.quoted(key)}/memories", done="added", id=record.id)


async def _record(request: Request, key: str, memory_id: str) -> MemoryRecord | None:
    if not valid_key(key) or not memory_id or len(memory_id) > MAX_ID_CHARS:
        return None
    return await kit.cases(request).memories.get(key, memory_id)


def _not_found(request: Request, what: str) -> Response:
    t = kit.translator_for(request)
    return kit.render(
        request, "error.html", status_code=404, message=t("error.not_found", what=what)
    )


@router.get("/p/{key}/memories/{memory_id}/edit")
async def edit_form(request: Request, key: str, memory_id: str, _user: kit.Admin) -> Response:
    record = await _record(request, key, memory_id)
    if record is None:
        return _not_found(request, f"{key} / {memory_id}")
    typed = MemoryForm(
        content=record.content,
        category=record.category or "",
        importance=str(record.importance),
        tags=", ".join(record.tags),
    )
    return _FORM(request, key=key, form=typed, errors=[], record=record)


@router.post("/p/{key}/memories/{memory_id}/edit")
async def edit(request: Request, key: str, memory_id: str, user: kit.AdminWrite) -> Response:
    record = await _record(request, key, memory_id)
    if record is None:
        return _not_found(request, f"{key} / {memory_id}")
    typed, values, errors = await read_memory_form(request, stored=record.content)
    if values is None:
        return _FORM(request, 400, key=key, form=typed, errors=errors, record=record)
    change = MemoryChange(
        content=values.content,
        tags=values.tags,
        importance=values.importance,
        category=values.category,
    )
    try:
        async with kit.atomic(request):
            # a person changed the fact: what was derived from it waits for the loop
            updated = await kit.cases(request).memories.change(
                key, memory_id, change, by_person=True, cascade=True, now=kit.now(request)
            )
            if updated is not None:
                await kit.audit(
                    request,
                    user,
                    "memory.edit",
                    partition_key=key,
                    target_id=memory_id,
                    detail={"before": _shown(record), "after": _shown(updated)},
                )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "memory.edit",
            exc,
            lambda: _FORM(request, 409, key=key, form=typed, errors=[message], record=record),
            partition_key=key,
            target_id=memory_id,
        )
    if updated is None:
        return _not_found(request, f"{key} / {memory_id}")
    return kit.redirect(request, f"/p/{kit.quoted(key)}/memories", done="edited", id=memory_id)


def _shown(record: MemoryRecord) -> dict[str, Any]:
    """What the audit keeps of a memory before and after an edit."""
    return {
        "content": record.content,
        "importance": record.importance,
        "category": record.category,
        "tags": list(record.tags),
    }


@router.get("/p/{key}/memories/{memory_id}/delete")
async def delete_confirm(request: Request, key: str, memory_id: str, _user: kit.Admin) -> Response:
    record = await _record(request, key, memory_id)
    if record is None:
        return _not_found(request, f"{key} / {memory_id}")
    plan = await kit.cases(request).forgetting.delete_plan(key, memory_id)
    return kit.render(request, "confirm_delete.html", key=key, record=record, plan=plan)


@router.post("/p/{key}/memories/{memory_id}/delete")
async def delete(request: Request, key: str, memory_id: str, user: kit.AdminWrite) -> Response:
    record = await _record(request, key, memory_id)
    if record is None:
        return _not_found(request, f"{key} / {memory_id}")
    try:
        async with kit.atomic(request):
            done = await kit.cases(request).forgetting.remove(key, memory_id, by_person=True)
            deleted = done is not None
            await kit.audit(
                request,
                user,
                "memory.delete",
                partition_key=key,
                target_id=memory_id,
                detail={
                    "content": record.content,
                    "importance": record.importance,
                    "derived_deleted": len(done.deleted) if done else 0,
                    "derived_withheld": len(done.withheld) if done else 0,
                },
                ok=deleted,
            )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "memory.delete",
            exc,
            lambda: kit.render(request, "error.html", status_code=409, message=message),
            partition_key=key,
            target_id=memory_id,
        )
    if not deleted:
        return _not_found(request, f"{key} / {memory_id}")
    return kit.redirect(request, f"/p/{kit.quoted(key)}/memories", done="deleted", id=memory_id)


@router.get("/p/{key}/clear")
async def clear_confirm(request: Request, key: str, _user: kit.Superuser) -> Response:
    from amrita_memory_pg.maintenance.clear import plan_clear

    if not valid_key(key):
        return bad_key(request, key)
    plan = await plan_clear(kit.memory(request).store, key, kit.now(request))
    return kit.render(request, "confirm_clear.html", key=key, plan=plan, error=None, typed="")


@router.post("/p/{key}/clear")
async def clear(request: Request, key: str, user: kit.SuperuserWrite) -> Response:
    from amrita_memory_pg.maintenance.clear import backup_before_clear, delete_backed_up, plan_clear

    if not valid_key(key):
        return bad_key(request, key)
    t = kit.translator_for(request)
    mem = kit.memory(request)
    typed = kit.form_text(await request.form(), "token").strip()[:20]
    plan = await plan_clear(mem.store, key, kit.now(request))
    if plan.count == 0 or not plan.accepts(typed, kit.now(request)):
        return kit.render(
            request,
            "confirm_clear.html",
            status_code=400,
            key=key,
            plan=plan,
            typed=typed,
            error=None if plan.count == 0 else t("confirm.token_wrong"),
        )
    try:
        backup_info = await backup_before_clear(mem.store, key)
        async with kit.atomic(request):
            result = await delete_backed_up(mem.store, key, backup_info)
            backup = str(result.backup.jsonl_path)
            await kit.audit(
                request,
                user,
                "partition.clear",
                partition_key=key,
                detail={"deleted": result.deleted, "backup": backup},
            )
    except AmritaMemoryError as exc:
        message = kit.refusal_line(request, exc)
        return await kit.refused(
            request,
            user,
            "partition.clear",
            exc,
            lambda: kit.render(request, "error.html", status_code=500, message=message),
            partition_key=key,
        )
    return kit.redirect(
        request, f"/p/{kit.quoted(key)}/memories", done="cleared", n=result.deleted, backup=backup
    )
