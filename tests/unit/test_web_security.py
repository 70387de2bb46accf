"""The admin page's access rules without a server: password hashes, the signed session
cookie, CSRF tokens, the login rate limit and the session secret file."""

from __future__ import annotations

import stat
from pathlib import Path

from amrita_memory_pg.web.security import (
    LoginLimiter,
    check_hash_format,
    csrf_ok,
    decode_session,
    encode_session,
    hash_password,
    load_or_create_secret,
    login,
    new_session,
    verify_password,
)

SECRET = b"k" * 32


def test_password_hash_round_trip_and_salting() -> None:
    stored = hash_password("correct horse")
    assert stored.startswith("scrypt$16384$8$1$")
    assert check_hash_format(stored) is None
    assert verify_password("correct horse", stored)
    assert not verify_password("correct hors", stored)
    assert hash_password("correct horse") != stored  # a new salt every time
    # a plain password pasted into the config is refused, never compared
    assert check_hash_format("correct horse") is not None
    assert not verify_password("correct horse", "correct horse")
    assert not verify_password("", "")
    assert check_hash_format("scrypt$3$8$1$AAAA$AAAA") is not None  # n not a power of 2


def test_session_cookie_is_signed_and_expires() -> None:
    anonymous = new_session(1000.0, 60)
    assert not anonymous.logged_in
    session = login(anonymous, "admin", "小王", 1000.0, 60)
    assert session.logged_in and session.name == "小王"
    assert session.csrf != anonymous.csrf and session.sid != anonymous.sid  # no fixation
    cookie = encode_session(session, SECRET)
    assert decode_session(cookie, SECRET, 1059.0) == session
    assert decode_session(cookie, SECRET, 1060.0) is None  # expired
    assert decode_session(cookie, b"other" * 8, 1000.0) is None  # another key
    payload, _, mac = cookie.partition(".")
    forged = encode_session(login(anonymous, "superuser", "x", 1000.0, 60), SECRET)
    assert decode_session(forged.partition(".")[0] + "." + mac, SECRET, 1000.0) is None
    for junk in (None, "", "abc", "a.b", "!!!.???", payload):
        assert decode_session(junk, SECRET, 1000.0) is None


def test_csrf_token_check() -> None:
    session = new_session(0.0, 60)
    assert csrf_ok(session, session.csrf)
    assert not csrf_ok(session, session.csrf[::-1])
    assert not csrf_ok(session, "")
    assert not csrf_ok(session, None)


def test_login_limiter_counts_failures_per_client_per_window() -> None:
    limiter = LoginLimiter(3, 60.0)
    for second in (0.0, 1.0, 2.0):
        assert limiter.retry_after("1.2.3.4", second) is None
        limiter.failed("1.2.3.4", second)
    wait = limiter.retry_after("1.2.3.4", 10.0)
    assert wait is not None and 49.0 <= wait <= 50.0
    assert limiter.retry_after("5.6.7.8", 10.0) is None  # another client
    assert limiter.retry_after("1.2.3.4", 60.5) is None  # the first failure left the window


def test_login_limiter_memory_is_bounded() -> None:
    limiter = LoginLimiter(1, 60.0, max_clients=2)
    limiter.failed("a", 0.0)
    limiter.failed("b", 1.0)
    limiter.failed("c", 2.0)
    assert limiter.retry_after("a", 3.0) is None  # the oldest client was dropped
    assert limiter.retry_after("c", 3.0) is not None


def test_session_secret_is_created_once_with_mode_600(tmp_path: Path) -> None:
    file = tmp_path / "web" / "session_secret"
    first = load_or_create_secret("", file)
    assert len(first) >= 48
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert load_or_create_secret("", file) == first
    assert load_or_create_secret("configured", file) == b"configured"
