"""What a page module uses: who is asking (and may they), the memory, rendering, redirects
and the audit helper. The seam other pages are built on; keep its names stable.

A page module (``web/pages/<name>.py``) defines ``router = APIRouter()`` and ``NAV`` (a
list of :class:`NavItem`, possibly empty) and is listed once in ``web/pages/__init__.py``.
Its handlers take one of the annotated users:

* :data:`Admin` — any logged-in user (GET pages);
* :data:`AdminWrite` — a logged-in user whose form carries the session's CSRF token
  (every POST; a missing or wrong token is refused with 403 before the handler runs);
* :data:`Superuser` / :data:`SuperuserWrite` — the same for the superuser role.

Writes call :func:`audit` once with the outcome; bad input is answered by re-rendering
the form with an inline error and writes nothing (not audited: nothing happened).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any, TypeVar
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

import jinja2
from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape
from pydantic import BaseModel, ValidationError

from amrita_memory_pg.domain.errors import (
    AmritaMemoryError,
    KnowledgeError,
    MemoTooLong,
    NotReady,
    PartitionFull,
    ProfileRefused,
    ProtectedMemory,
)
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.domain.trail import Actor, set_actor
from amrita_memory_pg.domain.validation import InvalidInput, echo, text_refusal
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.admin import AdminRepository
from amrita_memory_pg.storage.pg.session import pinned
from amrita_memory_pg.usecases.bundle import UseCases
from amrita_memory_pg.usecases.values import Refusal
from amrita_memory_pg.web.i18n import translator
from amrita_memory_pg.web.security import LoginLimiter, Session, csrf_ok

#: name of the signed session cookie
SESSION_COOKIE = "amp_admin_session"


@dataclass(frozen=True, slots=True)
class NavItem:
    """One entry of the navigation bar: ``path`` is relative to the page's base path."""

    key: str
    path: str
    label: str
    superuser: bool = False


@dataclass(frozen=True, slots=True)
class AdminUser:
    """The logged-in person: ``name`` as typed at login (the audit's actor), ``role``,
    and the client address the request came from."""

    name: str
    role: str
    client: str | None

    @property
    def superuser(self) -> bool:
        return self.role == "superuser"


class LoginRequired(Exception):
    """No valid session: a GET is redirected to the login page, anything else gets 401."""


class SuperuserRequired(Exception):
    """A superuser-only page or write asked for by an admin (403)."""


class CsrfRefused(Exception):
    """A POST without this session's CSRF token (403, nothing written)."""


class BadInput(Exception):
    """A query parameter, path segment or form field the database cannot store (400)."""

    def __init__(self, field: str, refused: InvalidInput) -> None:
        super().__init__(f"{field}: {refused.reason}")
        self.field = field
        self.refused = refused


@dataclass
class AdminState:
    """What the app keeps for its pages (``app.state.admin``)."""

    settings: Settings
    #: the open memory; raises :class:`NotReady` while the bot's store is not open
    memory_source: Callable[[], Memory]
    secret: bytes
    env: jinja2.Environment
    limiter: LoginLimiter
    nav: list[NavItem] = field(default_factory=list)
    #: pages announced but not built yet: (key, label key)
    planned: list[tuple[str, str]] = field(default_factory=list)
    clock: Callable[[], float] = time.time


def state(request: Request) -> AdminState:
    value: AdminState = request.app.state.admin
    return value


def session(request: Request) -> Session:
    """This request's session (set by the app's middleware; anonymous when not logged in)."""
    value: Session = request.state.session
    return value


def base(request: Request) -> str:
    """The path the admin app is mounted at ("" when it is the root app)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def url(request: Request, path: str, **query: Any) -> str:
    """``path`` under the base path, with the non-empty ``query`` values."""
    items = {k: v for k, v in query.items() if v not in (None, "")}
    return base(request) + path + (("?" + urlencode(items)) if items else "")


def translator_for(request: Request) -> Callable[..., str]:
    """``t(key, **values)`` in this request's UI language."""
    return translator(request.state.lang)


def quoted(segment: str) -> str:
    """One URL path segment (a partition key, an id) with every reserved character escaped."""
    return quote(segment, safe="")


def client_of(request: Request) -> str | None:
    return request.client.host if request.client else None


def memory(request: Request) -> Memory:
    """The open memory (raises :class:`NotReady`: the app answers 503 with the reason)."""
    return state(request).memory_source()


def cases(request: Request) -> UseCases:
    """The use cases a page's handler calls (the same as every other surface's)."""
    return memory(request).cases


def admin_store(request: Request, partition_key: str | None = None) -> AdminRepository:
    """The page's reads; with ``partition_key`` its lists read the primary while this
    process wrote the partition lately (an edit, then its list: ``storage/reads.py``)."""
    mem = memory(request)
    if partition_key is None:
        return AdminRepository(mem.pool, mem.store.read_pool)
    return AdminRepository(mem.pool, mem.memories.repo.route.pool_for(partition_key))


def now(request: Request) -> datetime:
    return datetime.fromtimestamp(state(request).clock(), UTC)


def require_admin(request: Request) -> AdminUser:
    current = session(request)
    if not current.logged_in:
        raise LoginRequired()
    return AdminUser(current.name or "admin", current.role or "admin", client_of(request))


def require_superuser(request: Request) -> AdminUser:
    user = require_admin(request)
    if not user.superuser:
        raise SuperuserRequired()
    return user


async def check_csrf(request: Request) -> None:
    form = await request.form()
    if not csrf_ok(session(request), form.get("csrf")):
        raise CsrfRefused()


def _unstorable(pairs: Any, where: str) -> None:
    for name, value in pairs:
        for text in (name, value):
            refused = text_refusal(text) if isinstance(text, str) else None
            if refused is not None:
                raise BadInput(f"{where} {echo(name)}", refused)


async def check_input(request: Request) -> None:
    """The web edge of the one validation (domain/validation.py): every query parameter,
    path parameter and form field of every page, before any handler sees it.

    PostgreSQL refuses NUL (and a lone surrogate is no text): such a value used to reach
    asyncpg and end the request with HTTP 500 and a reset connection. An app-wide
    dependency, so a page added later is covered without doing anything.
    """
    _unstorable(request.query_params.multi_items(), "查询参数")
    _unstorable(request.path_params.items(), "路径参数")
    content_type = request.headers.get("content-type", "")
    if request.method == "POST" and content_type.startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        _unstorable((await request.form()).multi_items(), "表单字段")


def _acting_as(user: AdminUser) -> None:
    """Name the writer for the change history: every write of this request is
    ``person:web:<name>``. Set in the request's own task (this dependency is awaited
    there), so it holds for the handler and ends with the request."""
    set_actor(Actor("person", f"web:{user.name}"))


async def require_write(request: Request) -> AdminUser:
    user = require_admin(request)
    await check_csrf(request)
    _acting_as(user)
    return user


async def require_superuser_write(request: Request) -> AdminUser:
    user = require_superuser(request)
    await check_csrf(request)
    _acting_as(user)
    return user


Admin = Annotated[AdminUser, Depends(require_admin)]
AdminWrite = Annotated[AdminUser, Depends(require_write)]
Superuser = Annotated[AdminUser, Depends(require_superuser)]
SuperuserWrite = Annotated[AdminUser, Depends(require_superuser_write)]


def secrets_of(settings: Settings) -> list[str]:
    """Configured secrets that must never reach a page or the audit log."""
    return [
        settings.embedding.api_key.get_secret_value(),
        settings.llm.api_key.get_secret_value(),
        settings.extraction.api_key.get_secret_value(),
        settings.subconscious.llm_api_key.get_secret_value(),
        settings.web.session_secret.get_secret_value(),
        settings.web.password_hash.get_secret_value(),
        settings.web.superuser_password_hash.get_secret_value(),
    ]


def clean(request: Request, text: str) -> str:
    """``text`` through the one redaction (domain/redact.py), with the configured secrets."""
    return redact(text, secrets_of(state(request).settings))


def form_text(form: Mapping[str, Any], name: str) -> str:
    """A form field as text ("" when absent; an uploaded file is not text), with the
    browser's CRLF line ends (HTML forms send them) made the ``\n`` every other surface writes."""
    value = form.get(name)
    return value.replace("\r\n", "\n").replace("\r", "\n") if isinstance(value, str) else ""


def in_zone(moment: datetime, tz: tzinfo, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """``moment`` as the clock in ``tz`` shows it; a naive time is a stored one, so UTC
    (never read as the host's local time)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(tz).strftime(fmt)


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``templates/<template>`` with the layout's context: ``t`` (the strings),
    ``lang``, ``url``, ``user``, ``csrf`` (put it in every form as a hidden ``csrf``
    field: ``{{ csrf_field() }}``), ``nav`` and ``planned``."""
    admin = state(request)
    lang: str = request.state.lang
    current = session(request)
    t = translator(lang)
    user = (
        AdminUser(current.name or "admin", current.role or "admin", client_of(request))
        if current.logged_in
        else None
    )

    def link(path: str, **query: Any) -> str:
        return url(request, path, **query)

    tz = ZoneInfo(admin.settings.web.timezone)

    #: whether the page showed a time, and whether it named the zone itself
    marks = {"shown": False, "named": False}

    def when(moment: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
        """A stored (UTC) time in the configured zone: the layout names the zone below
        the page when the page did not (a time without its zone is ambiguous)."""
        if not moment:
            return ""
        marks["shown"] = True
        return in_zone(moment, tz, fmt)

    def zone_note() -> Markup:
        """The "times are in <zone>" line, where a page wants it (else the layout's)."""
        marks["named"] = True
        text = escape(t("times.zone", zone=admin.settings.web.timezone))
        return Markup(f'<span id="times-zone">{text}</span>')

    def csrf_field() -> Markup:
        return Markup(f'<input type="hidden" name="csrf" value="{escape(current.csrf)}">')

    values = {
        "request": request,
        "t": t,
        "lang": lang,
        "url": link,
        "static": lambda name: link(f"/static/{name}"),
        "user": user,
        "csrf": current.csrf,
        "csrf_field": csrf_field,
        "when": when,
        "zone_note": zone_note,
        "zone_unnamed": lambda: marks["shown"] and not marks["named"],
        "zone": admin.settings.web.timezone,
        "nav": [n for n in admin.nav if user is not None and (user.superuser or not n.superuser)],
        "planned": admin.planned if user is not None else [],
        "current_path": request.url.path,
        "done": None,
    }
    values.update(context)
    html = admin.env.get_template(template).render(values)
    return HTMLResponse(html, status_code=status_code)


@dataclass(frozen=True, slots=True)
class Page:
    """A template with the context every showing of it carries, so a form's first
    showing and its re-showings with errors (400, 409) are one call that names only
    what differs: ``EDIT = Page("x.html", choices=...)``, then ``EDIT(request, key=...)``."""

    template: str
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, request: Request, status_code: int = 200, **context: Any) -> HTMLResponse:
        return render(request, self.template, status_code, **{**self.fixed, **context})


def redirect(request: Request, path: str, **query: Any) -> RedirectResponse:
    """303 to ``path`` under the base path (after a POST: the browser then GETs it)."""
    return RedirectResponse(url(request, path, **query), status_code=303)


@contextlib.asynccontextmanager
async def atomic(request: Request) -> AsyncIterator[None]:
    """A page action's write(s) and its :func:`audit` row in ONE transaction: both are
    committed or neither (a write used to be saved while its audit row failed: an
    unaudited change). Put the write and the success ``audit`` inside the block; a refusal is
    audited after it, by :func:`refused`, once the failed transaction is rolled back."""
    async with pinned(memory(request).pool):
        yield


async def refused(
    request: Request,
    user: AdminUser,
    action: str,
    error: Exception,
    page: Callable[[], Response],
    *,
    partition_key: str | None = None,
    target_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> Response:
    """The one refuse → audit → re-render step: record the refused write (``ok`` false,
    with the error) and answer with ``page()`` (the form again with the reason)."""
    await audit(
        request,
        user,
        action,
        partition_key=partition_key,
        target_id=target_id,
        detail={**(detail or {}), "error": str(error)},
        ok=False,
    )
    return page()


def refusal_line(request: Request, exc: AmritaMemoryError, *, wrapped: bool = True) -> str:
    """The page's one line for a use case's error (the one mapping of the admin page):
    the typed errors' own lines, a refusal's or a knowledge/profile error's text as it is,
    anything else ``refused.failed`` with its text (``wrapped`` False: the text alone)."""
    t = translator_for(request)
    if isinstance(exc, PartitionFull):
        return t("refused.full", cap=memory(request).settings.per_session_memory_limit)
    if isinstance(exc, ProtectedMemory):
        return t("refused.protected")
    if isinstance(exc, MemoTooLong):
        return t("memo.too_long", length=exc.length, limit=exc.limit)
    reason = clean(request, str(exc))
    if not wrapped or isinstance(exc, Refusal | KnowledgeError | ProfileRefused):
        return reason
    return t("refused.failed", reason=reason)


class FieldError(ValueError):
    """A form field refused with a page string of its own (``key`` and its values)
    instead of the field's usual ``invalid.<field>`` line."""

    def __init__(self, key: str, *, refs: Mapping[str, str] | None = None, **values: Any) -> None:
        super().__init__(key)
        self.key = key
        self.values = values
        #: values that are page strings themselves (translated when shown)
        self.refs = dict(refs or {})


M = TypeVar("M", bound=BaseModel)


def parse_form(
    request: Request, model: type[M], fields: Mapping[str, Any], messages: Mapping[str, str]
) -> tuple[M | None, list[str]]:
    """A form through its pydantic model: (the clean values, None on errors; the page's
    error lines). Validators call the one validation (domain/validation.py); an
    :class:`InvalidInput` of field ``f`` becomes ``t(messages[f], reason=…)``, a
    :class:`FieldError` its own string. One line per refused field, in field order."""
    t = translator_for(request)
    try:
        return model.model_validate(dict(fields)), []
    except ValidationError as exc:
        lines: list[str] = []
        for error in exc.errors():
            field_name = str(error["loc"][0]) if error["loc"] else ""
            cause = (error.get("ctx") or {}).get("error")
            if isinstance(cause, FieldError):
                named = {name: t(ref) for name, ref in cause.refs.items()}
                lines.append(t(cause.key, **cause.values, **named))
            elif isinstance(cause, InvalidInput) and field_name in messages:
                lines.append(t(messages[field_name], reason=cause.said(request.state.lang)))
            else:
                lines.append(t("invalid.form", field=field_name, reason=error["msg"]))
        return None, lines


async def audit(
    request: Request,
    user: AdminUser,
    action: str,
    *,
    partition_key: str | None = None,
    target_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
    ok: bool = True,
) -> None:
    """Record one write of the page in ``admin_audit`` (who, what, when, outcome).

    ``action`` is ``<area>.<verb>`` (``memory.add``, ``memo.edit``, ``partition.clear``);
    text values of ``detail`` go through the redaction first.
    """

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return clean(request, value)
        if isinstance(value, Mapping):
            return {str(k): scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(v) for v in value]
        return value

    await admin_store(request).audit(
        actor=user.name,
        role=user.role,
        client=user.client,
        action=action,
        partition_key=partition_key,
        target_id=target_id,
        detail=scrub(dict(detail or {})),
        ok=ok,
        at=now(request),
    )


__all__ = [
    "Admin",
    "AdminState",
    "AdminUser",
    "AdminWrite",
    "BadInput",
    "CsrfRefused",
    "FieldError",
    "LoginRequired",
    "NavItem",
    "NotReady",
    "Superuser",
    "SuperuserRequired",
    "SuperuserWrite",
    "admin_store",
    "atomic",
    "audit",
    "base",
    "cases",
    "check_input",
    "clean",
    "form_text",
    "memory",
    "now",
    "parse_form",
    "quoted",
    "redirect",
    "refusal_line",
    "refused",
    "render",
    "translator_for",
    "url",
]
