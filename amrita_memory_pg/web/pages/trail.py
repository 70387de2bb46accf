"""The memory's trail on the admin page: a memory's access log and
change history, pausing a partition, and "what the bot sees" for a chat.

The data comes from the services every other surface uses (``Memory.trail``,
``Memory.inspect``): the same bounded log, the same history (content through the ONE
redaction), the same block the injection hook builds. Pausing and resuming are
superuser writes (as ``/memory pause``), CSRF-checked and audited.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.records import SearchHit
from amrita_memory_pg.domain.validation import (
    MAX_ID_CHARS,
    MAX_NOTE_CHARS,
    InvalidInput,
    check_text,
)
from amrita_memory_pg.usecases.values import MemoryQuery
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.pages.partitions import valid_key

router = APIRouter()
NAV = [
    kit.NavItem("paused", "/paused", "nav.paused"),
    kit.NavItem("inspector", "/inspector", "nav.inspector"),
]

#: rows of each table on a memory's trail page
TRAIL_ROWS = 50
#: a reason or a message typed on these pages is cut here
DONE = ("paused", "resumed", "was_paused", "not_paused")


def _error(request: Request, status_code: int, message: str) -> Response:
    return kit.render(request, "error.html", status_code=status_code, message=message)


@router.get("/p/{key}/memories/{memory_id}/trail")
async def memory_trail(request: Request, key: str, memory_id: str, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    if not valid_key(key) or not memory_id or len(memory_id) > MAX_ID_CHARS:
        return _error(request, 404, t("error.not_found", what=f"{key} / {memory_id[:40]}"))
    mem = kit.memory(request)
    record = await mem.cases.memories.get(key, memory_id)
    history = await mem.trail.history(key, memory_id, TRAIL_ROWS)
    if record is None and not history:
        return _error(request, 404, t("error.not_found", what=f"{key} / {memory_id}"))
    accesses = await mem.trail.access_log(key, memory_id, TRAIL_ROWS)
    lineage = await mem.cases.forgetting.lineage_of_memory(key, memory_id)
    done = request.query_params.get("done", "")
    return kit.render(
        request,
        "trail.html",
        key=key,
        memory_id=memory_id,
        record=record,
        history=history,
        accesses=accesses,
        lineage=lineage,
        paused=await mem.trail.state(key),
        # the history is redacted by the service; this adds the configured secrets
        clean=lambda text: kit.clean(request, str(text)),
        done=t(f"paused.done.{done}", key=key) if done in DONE else None,
    )


@router.get("/paused")
async def paused_page(request: Request, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    done = request.query_params.get("done", "")
    key = request.query_params.get("key", "")[:200]
    return kit.render(
        request,
        "paused.html",
        states=await kit.memory(request).trail.paused(),
        errors=[],
        form_key="",
        form_reason="",
        done=t(f"paused.done.{done}", key=key) if done in DONE else None,
    )


async def _pause_form(request: Request) -> tuple[str, str]:
    form = await request.form()
    return kit.form_text(form, "reason").strip(), kit.form_text(form, "next")


def _back(request: Request, next_path: str, key: str, done: str) -> Response:
    # only our own trail pages or the list: never an open redirect
    if next_path.startswith("/p/") and next_path.endswith("/trail") and "//" not in next_path:
        return kit.redirect(request, next_path, done=done)
    return kit.redirect(request, "/paused", done=done, key=key)


@router.post("/p/{key}/pause")
async def pause(request: Request, key: str, user: kit.SuperuserWrite) -> Response:
    t = kit.translator_for(request)
    reason, next_path = await _pause_form(request)
    errors: list[str] = []
    if not valid_key(key):
        errors.append(t("error.bad_key", key=key[:200]))
    try:
        reason = check_text(reason, max_chars=MAX_NOTE_CHARS)
    except InvalidInput as exc:
        errors.append(t("paused.bad_reason", reason=exc.said(request.state.lang)))
    if errors:
        return kit.render(
            request,
            "paused.html",
            status_code=400,
            states=await kit.memory(request).trail.paused(),
            errors=errors,
            form_key=key[:200],
            form_reason=reason[:MAX_NOTE_CHARS],
        )
    async with kit.atomic(request):
        done = await kit.cases(request).pause.pause(
            key, by=f"person:web:{user.name}", reason=reason or None, now=kit.now(request)
        )
        await kit.audit(
            request,
            user,
            "partition.pause",
            partition_key=key,
            detail={"reason": reason, "already": not done},
        )
    return _back(request, next_path, key, "paused" if done else "was_paused")


@router.post("/pause")
async def pause_typed(request: Request, user: kit.SuperuserWrite) -> Response:
    """The list page's form: the key is a field (a path can't be typed into a form)."""
    key = kit.form_text(await request.form(), "key").strip()
    return await pause(request, key, user)


@router.post("/p/{key}/resume")
async def resume(request: Request, key: str, user: kit.SuperuserWrite) -> Response:
    t = kit.translator_for(request)
    if not valid_key(key):
        return _error(request, 400, t("error.bad_key", key=key[:200]))
    _reason, next_path = await _pause_form(request)
    async with kit.atomic(request):
        done = await kit.cases(request).pause.resume(key)
        await kit.audit(request, user, "partition.resume", partition_key=key, detail={"was": done})
    return _back(request, next_path, key, "resumed" if done else "not_paused")


#: read_memory's default top_k (tools/memory.py ReadMemoryArgs)
READ_TOP_K = 5


@router.get("/inspector")
async def inspector(request: Request, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    params = request.query_params
    chat = params.get("chat", "").strip()[:200]
    speaker = params.get("user", "").strip()[:64]
    message = params.get("message", "")
    errors: list[str] = []
    seen = None
    found: list[SearchHit] | None = None
    marks: dict[tuple[str, str], tuple[int, int]] = {}
    if chat:
        if not valid_key(chat):
            errors.append(t("error.bad_key", key=chat))
        if speaker and (not speaker.isascii() or not speaker.replace("_", "").isalnum()):
            errors.append(t("inspector.bad_user", user=speaker))
        try:
            message = check_text(message, max_chars=MAX_NOTE_CHARS)
        except InvalidInput as exc:
            errors.append(t("inspector.bad_message", reason=exc.said(request.state.lang)))
        if not errors:
            mem = kit.memory(request)
            seen = await mem.inspect(chat, user_id=speaker or None, message=message or None)
            # each injected memory's lineage: made from how many rows, used by how many
            for key in {m.partition_key for m in seen.injected}:
                ids = [m.id for m in seen.injected if m.partition_key == key]
                for memory_id, counts in (await mem.cases.forgetting.marks(key, ids)).items():
                    marks[(key, memory_id)] = counts
            if message.strip():
                # what the chat model's read_memory tool finds for this message (its
                # default top_k; no recall is logged: looking is not recalling)
                try:
                    asked = MemoryQuery(chat, message, top_k=READ_TOP_K)
                    found = (await mem.cases.memories.search(asked)).hits
                except AmritaMemoryError as exc:
                    errors.append(kit.refusal_line(request, exc))
    return kit.render(
        request,
        "inspector.html",
        status_code=400 if errors else 200,
        chat=chat,
        speaker=speaker,
        message=message[:MAX_NOTE_CHARS],
        errors=errors,
        seen=seen,
        found=found,
        marks=marks,
    )
