"""Run libpq programs (psql, pg_dump, pg_restore) without a password on their command line.

A command line is public: any local user reads it from ``/proc/<pid>/cmdline`` or ``ps``.
So a password found in a connection string (URL ``user:password@``, the URL parameter
``password=``, or a ``key=value`` conninfo) is cut out of the argument and handed to
the child as ``PGPASSWORD`` in its environment, which only the same user (and root) can
read. libpq takes ``PGPASSWORD`` when the connection string has no password, so the
program connects exactly as before.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
_CONNINFO_VALUE = r"(?:'(?:[^'\\]|\\.)*'|[^\s']+)"
_CONNINFO = re.compile(rf"^\s*(?:\w+\s*=\s*{_CONNINFO_VALUE}\s*)+$")
_CONNINFO_PASSWORD = re.compile(rf"(^|\s)password\s*=\s*({_CONNINFO_VALUE})")


def _unquote_conninfo(value: str) -> str:
    if value.startswith("'") and value.endswith("'"):
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def without_password(dsn: str) -> tuple[str, str | None]:
    """``dsn`` with its password removed, and that password (None if it had none)."""
    if _URL.match(dsn):
        parts = urlsplit(dsn)
        password: str | None = None
        netloc = parts.netloc
        userinfo, at, hosts = netloc.rpartition("@")
        if at and ":" in userinfo:
            user, _, secret = userinfo.partition(":")
            password = unquote(secret)
            netloc = f"{user}@{hosts}"
        query = parts.query
        params = parse_qsl(query, keep_blank_values=True)
        if any(key == "password" for key, _ in params):
            password = next(value for key, value in params if key == "password")
            query = urlencode([(k, v) for k, v in params if k != "password"], quote_via=quote)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), password
    if _CONNINFO.match(dsn):
        match = _CONNINFO_PASSWORD.search(dsn)
        if match is not None:
            stripped = (dsn[: match.start()] + match.group(1) + dsn[match.end() :]).strip()
            return re.sub(r"\s{2,}", " ", stripped), _unquote_conninfo(match.group(2))
    return dsn, None


def child_process_args(
    argv: Sequence[str], base_env: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """``argv`` with every connection string's password removed, and the child's environment.

    The environment is ``base_env`` (default: this process's) plus ``PGPASSWORD`` when a
    password was found. Two different passwords in one command cannot be passed this way.
    """
    env = dict(os.environ if base_env is None else base_env)
    out: list[str] = []
    found: set[str] = set()
    for arg in argv:
        clean, password = without_password(arg)
        out.append(clean)
        if password is not None:
            found.add(password)
    if len(found) > 1:
        raise ValueError("one child process cannot get two different database passwords")
    if found:
        env["PGPASSWORD"] = found.pop()
    return out, env


_CONNINFO_DBNAME = re.compile(rf"(^|\s)dbname\s*=\s*({_CONNINFO_VALUE})")


def with_database(dsn: str, database: str) -> str:
    """The same server and credentials, another database (``backup verify``'s scratch one).

    ``database`` is one of our generated names (ASCII letters, digits, ``_``)."""
    if not re.fullmatch(r"[A-Za-z0-9_]+", database):
        raise ValueError(f"not a plain database name: {database!r}")
    if _URL.match(dsn):
        parts = urlsplit(dsn)
        params = [
            (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "dbname"
        ]
        query = urlencode(params, quote_via=quote)
        return urlunsplit((parts.scheme, parts.netloc, f"/{database}", query, parts.fragment))
    if _CONNINFO.match(dsn):
        if _CONNINFO_DBNAME.search(dsn):
            return _CONNINFO_DBNAME.sub(lambda m: f"{m.group(1)}dbname={database}", dsn)
        return f"{dsn} dbname={database}"
    raise ValueError("the database URL is neither a postgresql:// URL nor key=value pairs")
