"""Status (schema revision, embedding fingerprint, backups, sweep cursor: the data of
``amrita-memory status``) and the maintenance buttons: backup, decay sweep, re-embed.

Each button starts a background job (:mod:`amrita_memory_pg.web.jobs`) in this process
— superuser only, CSRF-checked, audited — and leads to its progress view, which a
small script refreshes from ``/status/jobs/<id>.json`` (without JavaScript the page
reloads itself every two seconds). One job of each kind at a time across the fleet:
the jobs are rows in the database, so every process's page lists them, shows
which process runs each, and can cancel it; a job whose process died shows as lost.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from amrita_memory_pg.domain.errors import JobRefused
from amrita_memory_pg.domain.fingerprint import IN_PROCESS, describe
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.maintenance.backup import store_counts
from amrita_memory_pg.maintenance.status import SweepCursor
from amrita_memory_pg.storage.admin import AdminRepository
from amrita_memory_pg.web import kit, opsview
from amrita_memory_pg.web.i18n import EN, STRINGS, translator
from amrita_memory_pg.web.jobs import JOB_KINDS, Job, JobRunner, memory_operations, result_text

router = APIRouter()
NAV = [kit.NavItem("status", "/status", "nav.status")]


def runner(request: Request) -> JobRunner:
    """The app's job runner (one per app, made on first use)."""
    return runner_for(request.app)


def runner_for(app: FastAPI) -> JobRunner:
    """The app's job runner, made on first use (a page, or the standalone server's start:
    it watches for a lost re-embed to resume). Needs a running event loop."""
    found: JobRunner | None = getattr(app.state, "webops_jobs", None)
    if found is None:
        admin: kit.AdminState = app.state.admin
        source = admin.memory_source
        secrets = kit.secrets_of(admin.settings)

        def clean(text: str) -> str:
            return redact(text, secrets)

        async def finished(job: Job) -> None:
            # the job's outcome is a write too: one more audit row when it ends
            await AdminRepository(source().pool).audit(
                actor=job.started_by,
                role="superuser",
                client=None,
                action=f"job.{job.kind}.end",
                partition_key=None,
                target_id=job.id,
                detail={
                    "result": clean(result_text(job.result, translator("en"))),
                    "error": clean(job.error or ""),
                },
                ok=job.state == "done",
                at=job.finished_at or job.started_at,
            )

        found = JobRunner(memory_operations(source), on_finish=finished, fleet=source)
        app.state.webops_jobs = found
        # a re-embed whose process died is resumed by a process serving the page
        found.watch()
    return found


def phase_label(phase: str, lang: str) -> str:
    """A job phase in the reader's language (an unknown one as it is)."""
    return STRINGS.get(lang, EN).get(f"job.phase.{phase}", phase)


def describe_sweep(sweep: SweepCursor, t: Callable[..., str]) -> str:
    """The sweep cursor in the reader's language (the CLI keeps its English line)."""
    if not sweep.cursor and sweep.passes == 0:
        return t("status.sweep_never")
    return t(
        "status.sweep_cursor",
        where=t("status.sweep_after", id=sweep.cursor) if sweep.cursor else t("status.sweep_start"),
        passes=sweep.passes,
        at=f"{sweep.updated_at:%Y-%m-%d %H:%M} UTC",
    )


async def _status(request: Request, *, errors: list[str], status_code: int = 200) -> Response:
    report = await opsview.status_report(kit.memory(request))
    return kit.render(
        request,
        "status.html",
        status_code=status_code,
        report=report,
        sweep=describe_sweep(report.sweep, kit.translator_for(request)) if report.sweep else None,
        jobs=await runner(request).fleet_jobs(),
        kinds=JOB_KINDS,
        errors=errors,
    )


@router.get("/status")
async def status(request: Request, _user: kit.Admin) -> Response:
    return await _status(request, errors=[])


#: the jobs that cost something (time, deleted rows, embedding calls): asked first
CONFIRMED = ("sweep", "reembed")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_remote(protocol: str | None, url: str | None) -> bool:
    """Whether embedding calls leave this machine (a hosted API may bill each one): a
    URL on another host; an in-process model or a loopback server is local."""
    if protocol in IN_PROCESS or not url:
        return False
    return (urlsplit(url).hostname or "") not in LOOPBACK


async def _confirm(request: Request, kind: str) -> Response:
    """What the job will cost, asked before it starts (it may spend money): the rows it
    reads, the model, and whether each row is a call to a remote (possibly paid) API."""
    mem = kit.memory(request)
    counts = await store_counts(mem.pool)
    embedding = mem.settings.embedding
    url = embedding.model_url or ""
    rows = counts["memory"] + (counts["knowledge"] if kind == "reembed" else 0)
    return kit.render(
        request,
        "confirm_job.html",
        kind=kind,
        rows=rows,
        memories=counts["memory"],
        knowledge=counts["knowledge"],
        model=describe(embedding.protocol, embedding.model_name, url or None),
        remote=is_remote(embedding.protocol, url),
    )


@router.get("/status/jobs/{kind}/confirm")
async def confirm_job(request: Request, kind: str, _user: kit.Superuser) -> Response:
    t = kit.translator_for(request)
    if kind not in CONFIRMED:
        return kit.render(
            request, "error.html", status_code=404, message=t("error.not_found", what=kind)
        )
    return await _confirm(request, kind)


@router.post("/status/jobs/{kind}")
async def start_job(request: Request, kind: str, user: kit.SuperuserWrite) -> Response:
    t = kit.translator_for(request)
    if kind not in JOB_KINDS:
        return kit.render(
            request, "error.html", status_code=404, message=t("error.not_found", what=kind)
        )
    if kind in CONFIRMED and kit.form_text(await request.form(), "confirm") != "yes":
        return await _confirm(request, kind)  # not confirmed: ask, start nothing
    try:
        job = await runner(request).start(kind, by=user.name)
    except JobRefused as exc:
        return await _status(request, errors=[kit.clean(request, str(exc))], status_code=409)
    await kit.audit(request, user, f"job.{kind}", target_id=job.id, detail={"kind": kind})
    return kit.redirect(request, f"/status/jobs/{job.id}")


@router.get("/status/jobs/{job_id}.json")
async def job_json(request: Request, job_id: str, _user: kit.Admin) -> Response:
    job = await runner(request).fetch(job_id)
    if job is None:
        return JSONResponse({"status": "error", "message": f"no job {job_id}"}, status_code=404)
    lang = request.state.lang
    labels = {
        "phase_label": phase_label(job.phase, lang),
        "result_label": result_text(job.result, translator(lang)),
    }
    return JSONResponse(job.as_dict() | labels)


@router.get("/status/jobs/{job_id}")
async def job_page(request: Request, job_id: str, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    job = await runner(request).fetch(job_id)
    if job is None:
        return kit.render(
            request, "error.html", status_code=404, message=t("error.not_found", what=job_id)
        )
    lang = request.state.lang
    return kit.render(
        request,
        "job.html",
        job=job,
        phase=phase_label(job.phase, lang),
        result=result_text(job.result, translator(lang)),
    )


@router.post("/status/jobs/{job_id}/cancel")
async def cancel_job(request: Request, job_id: str, user: kit.SuperuserWrite) -> Response:
    """Ask the job to stop, in whichever process of the fleet runs it (the request is a row)."""
    t = kit.translator_for(request)
    state = await runner(request).cancel(job_id, by=user.name)
    if state is None:
        return kit.render(
            request, "error.html", status_code=404, message=t("error.not_found", what=job_id)
        )
    await kit.audit(request, user, "job.cancel", target_id=job_id, detail={"state": state})
    return kit.redirect(request, f"/status/jobs/{job_id}")
