"""The admin app: ``create_admin_app`` builds it, the login/logout pages and the error
pages live here, every other page is a module of :mod:`amrita_memory_pg.web.pages`.

The app serves at its own root; the NoneBot plugin mounts it under ``[web] path`` and
``amrita-memory web`` does the same in a small parent app (:mod:`.server`), so links are
always built from the mount path (``kit.url``). Every request gets a session (anonymous
until login: it carries the CSRF token of the login form); the middleware reads and
re-signs it, and picks the UI language.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jinja2
from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from amrita_memory_pg.domain.errors import ConfigError, NotReady
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.admin import AdminRepository
from amrita_memory_pg.web import kit, texts
from amrita_memory_pg.web.i18n import LANG_COOKIE, LANGS, pick_lang, translator
from amrita_memory_pg.web.pages import PAGES, PLANNED
from amrita_memory_pg.web.security import (
    LoginLimiter,
    Role,
    Session,
    check_hash_format,
    csrf_ok,
    decode_session,
    encode_session,
    hash_fingerprint,
    load_or_create_secret,
    login,
    new_session,
    verify_password,
)

HERE = Path(__file__).resolve().parent
MAX_NAME_CHARS = 40
#: the login rate limit's window: [web] login_attempts_per_minute failures per client
LOGIN_WINDOW = timedelta(minutes=1)


def secret_file(settings: Settings) -> Path:
    return settings.resolved_data_dir() / "web" / "session_secret"


def check_web_settings(settings: Settings) -> None:
    """Refuse a configuration that cannot log anybody in, or a hash that is no hash."""
    web = settings.web
    hashes = {
        "password_hash": web.password_hash.get_secret_value(),
        "superuser_password_hash": web.superuser_password_hash.get_secret_value(),
    }
    if not any(hashes.values()):
        raise ConfigError(
            "[web] needs password_hash (or superuser_password_hash): make one with "
            "`amrita-memory web hash-password`"
        )
    for key, value in hashes.items():
        problem = value and check_hash_format(value)
        if problem:
            raise ConfigError(f"[web] {key} {problem}")


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("amrita_memory_pg.web", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # the audit detail shows Chinese as written, not as \uXXXX escapes
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": False}
    env.globals["profile_operation"] = texts.profile_operation
    env.globals["profile_actor"] = texts.profile_actor
    env.globals["person"] = texts.person
    return env


def create_admin_app(
    memory: Memory | Callable[[], Memory] | None,
    settings: Settings,
    *,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The admin web app on ``memory``.

    ``memory`` is an open :class:`Memory`, or a callable returning it (the NoneBot plugin
    passes ``runtime.require``: its store opens after the app is mounted, and raises
    :class:`NotReady` until then), or None: the app then opens its own memory for its
    lifetime (the standalone server, the browser tests). Raises :class:`ConfigError`
    when no usable password hash is configured.
    """
    check_web_settings(settings)
    holder: dict[str, Memory] = {}

    if memory is None:

        @contextlib.asynccontextmanager
        async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
            from amrita_memory_pg.bootstrap import open_memory
            from amrita_memory_pg.web.pages.status import runner_for

            async with open_memory(settings, startup=False) as opened:
                holder["memory"] = opened
                runner_for(_app)  # at once: a lost re-embed resumes on this start
                try:
                    yield
                finally:
                    # jobs still running end (cancelled) while their store is still open
                    jobs = getattr(_app.state, "webops_jobs", None)
                    if jobs is not None:
                        await jobs.aclose()
                    holder.clear()

        def source() -> Memory:
            if "memory" not in holder:
                raise NotReady("the store is not open")
            return holder["memory"]

    else:
        lifespan = None  # type: ignore[assignment]
        if isinstance(memory, Memory):
            opened_memory = memory

            def source() -> Memory:
                return opened_memory

        else:
            source = memory

    app = FastAPI(
        title="amrita-memory admin",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
        # the one validation at the edge: every route, also the ones added later
        dependencies=[Depends(kit.check_input)],
    )
    admin = kit.AdminState(
        settings=settings,
        memory_source=source,
        secret=load_or_create_secret(
            settings.web.session_secret.get_secret_value(), secret_file(settings)
        ),
        env=_templates(),
        limiter=LoginLimiter(settings.web.login_attempts_per_minute),
        clock=clock,
    )
    for module in PAGES:
        app.include_router(module.router)
        admin.nav.extend(module.NAV)
    admin.planned = list(PLANNED)
    app.state.admin = admin
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    _install_middleware(app, admin)
    _install_errors(app)
    _install_login(app, admin)
    return app


def _install_middleware(app: FastAPI, admin: kit.AdminState) -> None:
    lifetime = admin.settings.web.session_hours * 3600

    @app.middleware("http")
    async def sessions(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        now = admin.clock()
        current = decode_session(request.cookies.get(kit.SESSION_COOKIE), admin.secret, now)
        if current is not None and current.logged_in and not await _still_counts(admin, current):
            current = None  # logged out, out everywhere, or the password changed
        fresh = current is None
        request.state.session = current or new_session(now, lifetime)
        query_lang = request.query_params.get("lang")
        request.state.lang = pick_lang(
            query_lang, request.cookies.get(LANG_COOKIE), admin.settings.language
        )
        response = await call_next(request)
        path = kit.base(request) or "/"
        if fresh or request.state.session is not current:
            response.set_cookie(
                kit.SESSION_COOKIE,
                encode_session(request.state.session, admin.secret),
                max_age=int(lifetime),
                path=path,
                httponly=True,
                samesite="strict",
                secure=admin.settings.web.secure_cookie,
            )
        if query_lang in LANGS:
            response.set_cookie(
                LANG_COOKIE,
                query_lang,
                max_age=365 * 86400,
                path=path,
                samesite="strict",
                secure=admin.settings.web.secure_cookie,
            )
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "frame-ancestors 'none'; form-action 'self'",
        )
        response.headers.setdefault("Cache-Control", "no-store")
        return response


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _hash_for(settings: Settings, role: str) -> str:
    web = settings.web
    secret = web.superuser_password_hash if role == "superuser" else web.password_hash
    return secret.get_secret_value()


def _sessions(admin: kit.AdminState) -> AdminRepository | None:
    """The session and login-limit rows, or None while the store is not open yet."""
    try:
        return AdminRepository(admin.memory_source().pool)
    except NotReady:
        return None


async def _still_counts(admin: kit.AdminState, session: Session) -> bool:
    """Whether a logged-in cookie's session row still counts: not revoked, not expired,
    same role, made with the password hash configured now. While the store is not open
    yet the cookie alone stands (every page that reads data answers 503 then)."""
    store = _sessions(admin)
    if store is None:
        return True
    row = await store.session_get(session.sid, _at(admin.clock()))
    return (
        row is not None
        and row.role == session.role
        and row.password_fp == hash_fingerprint(_hash_for(admin.settings, row.role))
    )


async def _retry_after(admin: kit.AdminState, client: str, now: float) -> float | None:
    """Seconds until ``client`` may try again (counted in the database: every process of
    a fleet shares the limit), or None."""
    store = _sessions(admin)
    if store is None:
        return admin.limiter.retry_after(client, now)
    limit = admin.settings.web.login_attempts_per_minute
    failures, oldest = await store.login_failures(client, _at(now), LOGIN_WINDOW)
    if failures < limit or oldest is None:
        return None
    return max(1.0, oldest.timestamp() + LOGIN_WINDOW.total_seconds() - now)


async def _login_failed(admin: kit.AdminState, client: str, now: float) -> None:
    store = _sessions(admin)
    if store is None:
        admin.limiter.failed(client, now)
    else:
        await store.login_failed(client, _at(now), LOGIN_WINDOW)


def _error(request: Request, status: int, message: str) -> HTMLResponse:
    return kit.render(request, "error.html", status_code=status, message=message)


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(kit.LoginRequired)
    async def login_required(request: Request, _exc: Exception) -> Response:
        if request.method == "GET":
            target = request.url.path
            if request.url.query:
                target += "?" + request.url.query
            return RedirectResponse(kit.url(request, "/login", next=target), status_code=303)
        t = translator(request.state.lang)
        return _error(request, 401, t("error.login_required"))

    @app.exception_handler(kit.SuperuserRequired)
    async def superuser_required(request: Request, _exc: Exception) -> Response:
        return _error(request, 403, translator(request.state.lang)("error.superuser_required"))

    @app.exception_handler(kit.CsrfRefused)
    async def csrf_refused(request: Request, _exc: Exception) -> Response:
        return _error(request, 403, translator(request.state.lang)("error.csrf"))

    @app.exception_handler(kit.BadInput)
    async def bad_input(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, kit.BadInput)
        t = translator(request.state.lang)
        reason = exc.refused.said(request.state.lang)
        return _error(request, 400, t("error.bad_input", field=exc.field, reason=reason))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: Exception) -> Response:
        """Unknown URLs (and a wrong method) get the app's page, not raw JSON."""
        assert isinstance(exc, StarletteHTTPException)
        t = translator(request.state.lang)
        if exc.status_code == 404:
            message = t("error.not_found", what=kit.clean(request, request.url.path[:200]))
        else:
            message = t("error.http", status=exc.status_code)
        response = _error(request, exc.status_code, message)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(NotReady)
    async def not_ready(request: Request, exc: Exception) -> Response:
        t = translator(request.state.lang)
        return _error(request, 503, t("error.not_ready", reason=kit.clean(request, str(exc))))


def _safe_next(request: Request, target: str) -> str:
    """Only a path under this app (no scheme, no host, no //) may be a redirect target."""
    root = kit.base(request) + "/"
    if target.startswith(root) and not target.startswith("//") and "\\" not in target:
        return target
    return kit.url(request, "/")


def _install_login(app: FastAPI, admin: kit.AdminState) -> None:
    web = admin.settings.web
    lifetime = web.session_hours * 3600

    @app.get("/")
    async def home(request: Request, _user: kit.Admin) -> Response:
        return kit.redirect(request, "/partitions")

    @app.get("/login")
    async def login_form(request: Request, next: str = "") -> Response:
        return kit.render(request, "login.html", next=next, error=None, name="")

    @app.post("/login")
    async def login_submit(request: Request) -> Response:
        t = translator(request.state.lang)
        client = kit.client_of(request) or "?"
        now = admin.clock()
        form = await request.form()
        next_path = kit.form_text(form, "next")
        name = " ".join(kit.form_text(form, "name").split())[:MAX_NAME_CHARS] or "admin"
        wait = await _retry_after(admin, client, now)
        if wait is not None:
            return kit.render(
                request,
                "login.html",
                status_code=429,
                next=next_path,
                name=name,
                error=t("login.rate_limited", seconds=int(wait + 0.999)),
            )
        if not csrf_ok(request.state.session, form.get("csrf")):
            raise kit.CsrfRefused()
        if not name.isprintable():  # ESC, BEL…: the audit log names people, not terminals
            return kit.render(
                request,
                "login.html",
                status_code=400,
                next=next_path,
                name="".join(ch for ch in name if ch.isprintable()),
                error=t("login.bad_name"),
            )
        password = kit.form_text(form, "password")
        role: Role | None = None
        if verify_password(password, web.superuser_password_hash.get_secret_value()):
            role = "superuser"
        elif verify_password(password, web.password_hash.get_secret_value()):
            role = "admin"
        if role is None:
            await _login_failed(admin, client, now)
            return kit.render(
                request,
                "login.html",
                status_code=401,
                next=next_path,
                name=name,
                error=t("login.wrong"),
            )
        session = login(request.state.session, role, name, now, lifetime)
        store = _sessions(admin)
        if store is not None:  # else the cookie stands alone until the store opens
            await store.session_create(
                session.sid,
                role=role,
                name=name,
                password_fp=hash_fingerprint(_hash_for(admin.settings, role)),
                client=kit.client_of(request),
                now=_at(now),
                expires=_at(session.expires),
            )
        request.state.session = session
        return RedirectResponse(_safe_next(request, next_path), status_code=303)

    @app.post("/logout")
    async def logout(request: Request, _user: kit.AdminWrite) -> Response:
        """Ends this session in every process (its row is revoked), not only this cookie."""
        store = _sessions(admin)
        if store is not None:
            await store.session_revoke(request.state.session.sid, _at(admin.clock()))
        request.state.session = new_session(admin.clock(), lifetime)
        return kit.redirect(request, "/login")

    @app.post("/logout/everywhere")
    async def logout_everywhere(request: Request, user: kit.AdminWrite) -> Response:
        """Log out everywhere: every session of the page, in every browser and process."""
        async with kit.atomic(request):
            ended = await kit.admin_store(request).session_revoke_all(_at(admin.clock()))
            await kit.audit(request, user, "session.revoke_all", detail={"sessions": ended})
        request.state.session = new_session(admin.clock(), lifetime)
        return kit.redirect(request, "/login")

    @app.get("/planned/{page}")
    async def planned(request: Request, page: str, _user: kit.Admin) -> Response:
        labels = dict(PLANNED)
        if page not in labels:
            t = translator(request.state.lang)
            return _error(request, 404, t("error.not_found", what=page))
        return kit.render(request, "planned.html", page_label=labels[page])
