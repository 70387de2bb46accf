"""The admin page's access rules as plain functions: password hashes, the signed session
cookie, CSRF tokens and the login rate limit.

No framework here and the time is always passed in, so every rule is unit-tested without
a server (tests/unit/test_web_security.py). Passwords are stored only as salted scrypt
hashes (``scrypt$n$r$p$salt$hash``, base64 parts), compared in constant time; the
session is a cookie whose payload is signed with HMAC-SHA256; a logged-in session's id
is also a row of ``web_session`` (checked on every request by the app), so a logout, a
"log out everywhere" or a password change ends it in every process.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

Role = Literal["admin", "superuser"]

#: scrypt cost: 16 MiB and ~10 ms per check here, the interactive-login recommendation
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
_SCRYPT_MAXMEM = 64 * 1024 * 1024
HASH_PREFIX = "scrypt"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """``scrypt$16384$8$1$<salt>$<hash>``: what ``[web] password_hash`` holds."""
    if not password:
        raise ValueError("the password is empty")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=_SCRYPT_MAXMEM
    )
    return f"{HASH_PREFIX}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def check_hash_format(stored: str) -> str | None:
    """Why ``stored`` is not a usable hash (None = it is): a plain password pasted into the
    config is refused at start-up instead of never matching."""
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != HASH_PREFIX:
        return "is not a hash made by `amrita-memory web hash-password` (scrypt$n$r$p$salt$hash)"
    try:
        n, r, p = (int(x) for x in parts[1:4])
        _unb64(parts[4])
        _unb64(parts[5])
    except (ValueError, binascii.Error):
        return "has a malformed scrypt parameter or base64 part"
    if n < 2 or n & (n - 1) or r < 1 or p < 1 or n * r * 128 > _SCRYPT_MAXMEM:
        return "has scrypt parameters out of range"
    return None


def hash_fingerprint(stored: str) -> str:
    """A short digest of a configured password hash: stored with a session, so that a
    session made with a password that has since changed no longer counts."""
    return hashlib.sha256(stored.encode()).hexdigest()[:24]


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored`` (constant-time compare; False for a bad hash)."""
    if not stored or check_hash_format(stored) is not None:
        return False
    _, n, r, p, salt, digest = stored.split("$")
    computed = hashlib.scrypt(
        password.encode(),
        salt=_unb64(salt),
        n=int(n),
        r=int(r),
        p=int(p),
        maxmem=_SCRYPT_MAXMEM,
    )
    return hmac.compare_digest(computed, _unb64(digest))


@dataclass(frozen=True, slots=True)
class Session:
    """What the cookie carries. An anonymous session (no role) still has a CSRF token, so
    the login form is protected like every other form."""

    sid: str
    csrf: str
    expires: float
    role: Role | None = None
    name: str = ""

    @property
    def logged_in(self) -> bool:
        return self.role is not None

    @property
    def superuser(self) -> bool:
        return self.role == "superuser"


def new_session(now: float, lifetime_seconds: float) -> Session:
    """A fresh anonymous session: new id, new CSRF token."""
    return Session(
        sid=secrets.token_urlsafe(24),
        csrf=secrets.token_urlsafe(24),
        expires=now + lifetime_seconds,
    )


def login(session: Session, role: Role, name: str, now: float, lifetime_seconds: float) -> Session:
    """The session after a successful login: a new id and CSRF token (no fixation)."""
    return replace(new_session(now, lifetime_seconds), role=role, name=name)


def encode_session(session: Session, secret: bytes) -> str:
    """``<payload>.<hmac>``, both base64url."""
    payload = json.dumps(
        {
            "sid": session.sid,
            "csrf": session.csrf,
            "exp": session.expires,
            "role": session.role,
            "name": session.name,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    mac = hmac.new(secret, payload, hashlib.sha256).digest()
    return f"{_b64(payload)}.{_b64(mac)}"


def decode_session(cookie: str | None, secret: bytes, now: float) -> Session | None:
    """The session in a cookie, or None when it is missing, forged, malformed or expired."""
    if not cookie or "." not in cookie or len(cookie) > 4096:
        return None
    payload_text, _, mac_text = cookie.partition(".")
    try:
        payload = _unb64(payload_text)
        mac = _unb64(mac_text)
    except (ValueError, binascii.Error):
        return None
    if not hmac.compare_digest(mac, hmac.new(secret, payload, hashlib.sha256).digest()):
        return None
    try:
        data: dict[str, Any] = json.loads(payload)
        session = Session(
            sid=str(data["sid"]),
            csrf=str(data["csrf"]),
            expires=float(data["exp"]),
            role=data["role"] if data["role"] in ("admin", "superuser") else None,
            name=str(data.get("name") or ""),
        )
    except (ValueError, KeyError, TypeError):
        return None
    return session if session.expires > now else None


def csrf_ok(session: Session, submitted: object) -> bool:
    """Whether a form's ``csrf`` field is this session's token (constant-time)."""
    if not isinstance(submitted, str) or not submitted:
        return False
    return hmac.compare_digest(submitted.encode(), session.csrf.encode())


class LoginLimiter:
    """At most ``limit`` failed logins per client address in any ``window`` seconds.

    In memory, per process: the app counts in the database (``web_login_failure``, shared
    by every process) and uses this only while its store is not open yet.
    """

    def __init__(self, limit: int, window: float = 60.0, *, max_clients: int = 10_000) -> None:
        self.limit = limit
        self.window = window
        self.max_clients = max_clients
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[client]
        return times

    def retry_after(self, client: str, now: float) -> float | None:
        """Seconds until this client may try again, or None when it may now."""
        times = self._recent(client, now)
        if len(times) < self.limit:
            return None
        return max(1.0, times[0] + self.window - now)

    def failed(self, client: str, now: float) -> None:
        if client not in self._failures and len(self._failures) >= self.max_clients:
            # Bounded memory: drop the client whose last failure is oldest.
            oldest = min(self._failures, key=lambda c: self._failures[c][-1])
            del self._failures[oldest]
        self._recent(client, now)
        self._failures.setdefault(client, deque()).append(now)


def load_or_create_secret(configured: str, file: Path) -> bytes:
    """The configured session secret, else the one kept at ``path`` (created once, mode 600)."""
    if configured:
        return configured.encode()
    if file.exists():
        text = file.read_text(encoding="utf-8").strip()
        if text:
            return text.encode()
    file.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    file.touch(mode=0o600, exist_ok=True)
    file.chmod(0o600)
    file.write_text(value + "\n", encoding="utf-8")
    return value.encode()
