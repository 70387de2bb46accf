"""The backups of the store: list, download, restore. Superuser only.

A backup is named by its stem, and only a name that passes the backup module's own
rule (:func:`~amrita_memory_pg.maintenance.backup.is_backup_stem`: letters, digits and
``_``, no separator, no dot) AND is one of the listed backups becomes a path, so no URL
reaches a file outside the backups folder. A download is streamed from the file (never
read whole) and audited. A restore asks first, saying what it replaces (the rows per
table the file's header counts, next to the store's now); confirmed, it runs as a job of
the fleet (:func:`~amrita_memory_pg.web.jobs.restore_operation`, one restore at a time
across the processes) whose progress page is the other jobs' one. The restore brings
back the backup's audit log too, so the start is audited here and the outcome by the
job's end (``job.restore.end``), written after the restore.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse

from amrita_memory_pg.domain.errors import BackupError, JobRefused
from amrita_memory_pg.maintenance.backup import (
    BackupInfo,
    find_backup,
    is_backup_stem,
    list_backups,
    pinned_backup,
    read_header,
    store_counts,
)
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.jobs import restore_operation
from amrita_memory_pg.web.pages.status import runner

router = APIRouter()
NAV = [kit.NavItem("backups", "/backups", "nav.backups", superuser=True)]

#: the two files of a backup: suffix → media type
FILES = {"jsonl": "application/x-ndjson", "dump": "application/octet-stream"}


def _find(request: Request, stem: str) -> BackupInfo | None:
    """The listed backup named ``stem`` (None for any other name, a path included)."""
    if not is_backup_stem(stem):
        return None
    try:
        return find_backup(kit.memory(request).store.backups_dir, stem)
    except BackupError:
        return None


def _missing(request: Request, stem: str) -> Response:
    t = kit.translator_for(request)
    return kit.render(
        request, "error.html", status_code=404, message=t("backups.missing", stem=stem[:80])
    )


@router.get("/backups")
async def backups(request: Request, _user: kit.Superuser) -> Response:
    infos = list_backups(kit.memory(request).store.backups_dir)
    return kit.render(
        request,
        "backups.html",
        backups=list(reversed(infos)),
        pinned=pinned_backup(infos),
    )


async def _download(request: Request, stem: str, suffix: str, user: kit.AdminUser) -> Response:
    info = _find(request, stem)
    path = None if info is None else info.directory / f"{info.stem}.{suffix}"
    if info is None or path is None or not path.is_file():
        return _missing(request, stem)
    await kit.audit(
        request,
        user,
        "backup.download",
        target_id=info.stem,
        detail={"file": path.name, "bytes": path.stat().st_size},
    )
    return FileResponse(path, media_type=FILES[suffix], filename=path.name)


@router.get("/backups/{stem}.jsonl")
async def download_jsonl(request: Request, stem: str, user: kit.Superuser) -> Response:
    return await _download(request, stem, "jsonl", user)


@router.get("/backups/{stem}.dump")
async def download_dump(request: Request, stem: str, user: kit.Superuser) -> Response:
    return await _download(request, stem, "dump", user)


async def _confirm(
    request: Request, info: BackupInfo, *, errors: list[str], status_code: int = 200
) -> Response:
    """What a restore of ``info`` replaces: each table's rows in the file (its header)
    and, for the main kinds, in the store now."""
    try:
        header = read_header(info.jsonl_path)
    except (BackupError, OSError) as exc:
        t = kit.translator_for(request)
        return kit.render(
            request,
            "error.html",
            status_code=400,
            message=t("refused.failed", reason=kit.clean(request, str(exc))),
        )
    mem = kit.memory(request)
    now = await store_counts(mem.pool)
    counts = {str(k): int(v) for k, v in (header.get("counts") or {}).items()}
    return kit.render(
        request,
        "confirm_restore.html",
        status_code=status_code,
        backup=info,
        rows=[(kind, n, now.get(kind)) for kind, n in counts.items()],
        model=header.get("model") or "?",
        same_model=header.get("fingerprint") == mem.store.embedder.fingerprint,
        errors=errors,
    )


@router.get("/backups/{stem}/restore")
async def confirm_restore(request: Request, stem: str, _user: kit.Superuser) -> Response:
    info = _find(request, stem)
    if info is None:
        return _missing(request, stem)
    return await _confirm(request, info, errors=[])


@router.post("/backups/{stem}/restore")
async def restore(request: Request, stem: str, user: kit.SuperuserWrite) -> Response:
    info = _find(request, stem)
    if info is None:
        return _missing(request, stem)
    if kit.form_text(await request.form(), "confirm") != "yes":
        return await _confirm(request, info, errors=[])  # not confirmed: ask, restore nothing
    operation = restore_operation(kit.state(request).memory_source, info.jsonl_path)
    try:
        job = await runner(request).start("restore", by=user.name, operation=operation)
    except JobRefused as exc:
        return await _confirm(request, info, errors=[kit.clean(request, str(exc))], status_code=409)
    await kit.audit(
        request,
        user,
        "backup.restore",
        target_id=info.stem,
        detail={"job": job.id, "counts": info.counts},
    )
    return kit.redirect(request, f"/status/jobs/{job.id}")
