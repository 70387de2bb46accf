"""Connecting: the embedded or external server, the pgvector check, the asyncpg pool."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import asyncpg

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import DatabaseUnavailable, PgvectorMissing, SchemaNotReady
from amrita_memory_pg.settings import DatabaseSettings, Settings
from amrita_memory_pg.storage.pg.embedded import DATABASE_NAME, EmbeddedServer, start_embedded
from amrita_memory_pg.storage.pg.session import PinnablePool, PooledConnection
from amrita_memory_pg.storage.pg.timeouts import begin_settings, server_timeouts
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 7, 0)
ServerKind = Literal["embedded", "external"]


def redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", dsn)


def describe_target(dsn: str) -> str:
    """host:port/database of a DSN, for one-line errors and ``status``: every host of a
    multi-host URL (``h1:5432,h2:5432/db``, or ``?host=a,b&port=1,2``: libpq's failover
    list), a socket directory as its path; ``localhost`` only when the URL names none."""
    parts = urlsplit(dsn)
    query = parse_qs(parts.query)
    netloc = parts.netloc.rpartition("@")[2]
    hosts: list[str] = []
    ports: list[str] = []
    for entry in filter(None, netloc.split(",")):
        host, port = _host_port(entry)
        hosts.append(host)
        ports.append(port)
    if query.get("host"):
        hosts = query["host"][0].split(",")
    if query.get("port"):
        ports = query["port"][0].split(",")
    if not hosts:
        hosts = ["localhost"]
    if len(ports) == 1 and len(hosts) > 1:  # libpq: one port for every host
        ports = ports * len(hosts)
    shown = [
        f"{host or 'localhost'}{f':{port}' if port else ''}"
        for host, port in zip(hosts, ports + [""] * (len(hosts) - len(ports)), strict=False)
    ]
    return f"{','.join(shown)}{unquote(parts.path) or '/'}"


def _host_port(entry: str) -> tuple[str, str]:
    """``host[:port]`` of one netloc entry; an IPv6 address keeps its brackets."""
    if entry.startswith("["):
        host, _, rest = entry.partition("]")
        return host + "]", rest.removeprefix(":")
    host, _, port = entry.partition(":")
    return unquote(host), port


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


async def connect_once(dsn: str, connect_timeout: float) -> asyncpg.Connection:
    """One connection, with connection failures mapped to :class:`DatabaseUnavailable`.

    No named prepared statements (``statement_cache_size=0``): a one-off connection
    gains nothing from them, and behind a transaction-mode pooler a named
    statement lands on a server connection another client may be using already."""
    try:
        return await asyncpg.connect(dsn, timeout=connect_timeout, statement_cache_size=0)
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        reason = str(exc).strip() or type(exc).__name__
        raise DatabaseUnavailable(
            f"cannot connect to PostgreSQL at {describe_target(dsn)}: {reason}. "
            "Check DATABASE_URL (or unset it to use the embedded server)."
        ) from exc


async def installed_pgvector(conn: asyncpg.Connection) -> str | None:
    """The pgvector version created in this database (None when it is not)."""
    version = await conn.fetchval(query("pgvector_installed_version"))
    return None if version is None else str(version)


async def check_pgvector(conn: asyncpg.Connection) -> str:
    """Installed (or installable) pgvector version; raises :class:`PgvectorMissing` if unusable."""
    installed = await installed_pgvector(conn)
    where = "this server"
    if installed is not None:
        if _version_tuple(installed) < MIN_PGVECTOR:
            raise PgvectorMissing(
                f"pgvector {installed} is installed on {where} but 0.7 or newer is required: "
                "install a newer pgvector package on the server, then run "
                "ALTER EXTENSION vector UPDATE;"
            )
        return str(installed)
    available = [
        str(v) for v in await conn.fetch(query("pgvector_available_versions")) for v in v.values()
    ]
    if not available:
        raise PgvectorMissing(
            "the PostgreSQL server has no pgvector extension: install pgvector 0.7 or newer on "
            "the server (e.g. apt install postgresql-<major>-pgvector, or use the "
            "pgvector/pgvector Docker image from docker-compose.yml), or unset DATABASE_URL "
            "to use the embedded server"
        )
    best = max(available, key=_version_tuple)
    if _version_tuple(best) < MIN_PGVECTOR:
        raise PgvectorMissing(
            f"the server offers only pgvector {best}, but 0.7 or newer is required: "
            "install a newer pgvector package on the server"
        )
    return best


async def _ensure_database(admin_dsn: str, name: str, connect_timeout: float) -> None:
    conn = await connect_once(admin_dsn, connect_timeout)
    try:
        if not await conn.fetchval(query("database_exists"), name):
            # CREATE DATABASE takes no parameters: the server quotes the name (format %I).
            ddl = await conn.fetchval(query("create_database_ddl"), name)
            # Another process may create it first; that is fine.
            with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                await conn.execute(ddl)
    finally:
        await conn.close()


@dataclass
class ServerTarget:
    """Where the database is: its DSN, and the embedded server handle if we started one."""

    dsn: str
    kind: ServerKind
    embedded: EmbeddedServer | None = None

    def release(self) -> None:
        """Drop this process's hold on the embedded server (no-op for an external one)."""
        if self.embedded is not None:
            self.embedded.stop()


async def resolve_target(settings: Settings) -> ServerTarget:
    """The configured server, starting the embedded one when ``DATABASE_URL`` is empty."""
    if settings.database.url:
        return ServerTarget(dsn=settings.database.url, kind="external")
    server = await asyncio.to_thread(start_embedded, settings.resolved_data_dir())
    try:
        await _ensure_database(
            server.dsn("postgres"), DATABASE_NAME, settings.database.connect_timeout
        )
    except BaseException:
        server.stop()
        raise
    return ServerTarget(dsn=server.dsn(), kind="embedded", embedded=server)


async def _vector_schema(conn: asyncpg.Connection) -> str:
    schema = await conn.fetchval(query("vector_schema"))
    if schema is None:
        raise SchemaNotReady(
            "the pgvector extension is not created in this database: run `amrita-memory db upgrade`"
        )
    return str(schema)


async def register_vector_codec(conn: asyncpg.Connection, schema: str = "public") -> None:
    """``vector`` and ``halfvec`` ⇄ numpy float32 arrays in binary format (pgvector's own
    wire layouts). The stored embeddings are ``halfvec`` (half the bytes); a read decodes
    them to float32 as a ``vector`` read did, so every caller (JSONL backup, Chroma rebuild)
    sees the type it always saw. Parameters stay ``vector``: the functions take it and
    the server casts it to ``halfvec`` where the column is written."""
    import numpy as np
    from pgvector import HalfVector, Vector

    def encode(value: Any) -> bytes:
        vector = value if isinstance(value, Vector) else Vector(value)
        return bytes(vector.to_binary())

    def decode(data: bytes) -> Any:
        return Vector.from_binary(data).to_numpy()

    def encode_half(value: Any) -> bytes:
        vector = value if isinstance(value, HalfVector) else HalfVector(value)
        return bytes(vector.to_binary())

    def decode_half(data: bytes) -> Any:
        return HalfVector.from_binary(data).to_numpy().astype(np.float32)

    await conn.set_type_codec(
        "vector", schema=schema, encoder=encode, decoder=decode, format="binary"
    )
    await conn.set_type_codec(
        "halfvec", schema=schema, encoder=encode_half, decoder=decode_half, format="binary"
    )


def refused_startup_parameter(exc: BaseException) -> bool:
    """PgBouncer's answer to a startup parameter it does not pass on (the timeouts)."""
    return "unsupported startup parameter" in str(exc)


async def create_pool(dsn: str, db: DatabaseSettings) -> asyncpg.Pool:
    """An asyncpg pool whose connections decode ``vector`` columns to numpy arrays.

    ``db.pooler``: behind a transaction-mode pooler the pool prepares no
    named statements and sends no startup parameters; the timeouts go with every
    ``BEGIN`` as ``SET LOCAL``. ``auto`` switches to that when the server refuses the
    timeouts as startup parameters, which is how PgBouncer answers them.
    """
    probe = await connect_once(dsn, db.connect_timeout)
    try:
        vector_schema = await _vector_schema(probe)
    finally:
        await probe.close()
    if db.pooler == "transaction":
        return await _open_pool(dsn, db, vector_schema, behind_pooler=True)
    try:
        return await _open_pool(dsn, db, vector_schema, behind_pooler=False)
    except DatabaseUnavailable as exc:
        if db.pooler != "auto" or not refused_startup_parameter(exc.__cause__ or exc):
            raise
    log.warning(
        "%s refused statement_timeout as a startup parameter: a transaction-mode pooler "
        "(PgBouncer). Connecting without session state; set [database] pooler = "
        '"transaction" to say so and skip this probe',
        describe_target(dsn),
    )
    return await _open_pool(dsn, db, vector_schema, behind_pooler=True)


async def _open_pool(
    dsn: str, db: DatabaseSettings, vector_schema: str, *, behind_pooler: bool
) -> asyncpg.Pool:
    per_transaction = begin_settings(db) if behind_pooler else ""

    async def init(conn: asyncpg.Connection) -> None:
        if per_transaction and isinstance(conn, PooledConnection):
            conn.set_begin_settings(per_transaction)
        await register_vector_codec(conn, vector_schema)

    try:
        # asyncpg.create_pool with our class: a page pins one connection for a write
        # and its audit row (session.pinned); the arguments are create_pool's defaults
        pool = await PinnablePool(
            dsn,
            min_size=db.pool_min_size,
            max_size=db.pool_max_size,
            max_queries=50000,
            max_inactive_connection_lifetime=300.0,
            loop=None,
            record_class=asyncpg.Record,
            timeout=db.connect_timeout,
            command_timeout=db.command_timeout,
            # a named statement would outlive the transaction on a pooler's server connection
            statement_cache_size=0 if behind_pooler else db.statement_cache_size,
            # the server times out first (statement/lock_timeout < command_timeout), so a write
            # the client gave up on is certainly rolled back, never committed later
            server_settings=None if behind_pooler else server_timeouts(db),
            init=init,
            connection_class=PooledConnection,  # no reset round trip per release
        )
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        raise DatabaseUnavailable(
            f"cannot open a connection pool to {describe_target(dsn)}: {exc}"
        ) from exc
    assert pool is not None
    return pool


@dataclass
class ServerInfo:
    """What ``status`` reports about the server."""

    kind: ServerKind
    target: str
    server_version: str
    pgvector: str | None


async def server_info(conn: asyncpg.Connection, kind: ServerKind, dsn: str) -> ServerInfo:
    version = await conn.fetchval(query("server_version"))
    pgv = await installed_pgvector(conn)
    return ServerInfo(
        kind=kind, target=describe_target(dsn), server_version=str(version), pgvector=pgv
    )


def as_dict(record: Any) -> dict[str, Any]:
    """An asyncpg record as a plain dict."""
    return dict(record.items())


class Database:
    """The server target plus an asyncpg pool on a schema at the current head."""

    def __init__(
        self, target: ServerTarget, pool: asyncpg.Pool, read_pool: asyncpg.Pool | None = None
    ) -> None:
        self.target = target
        self.pool = pool
        #: where reads that may lag go (``[database] read_url``, a replica); the primary's
        #: pool when none is configured
        self.read_pool = read_pool if read_pool is not None else pool
        metrics.watch_pool(pool, "primary")
        if read_pool is not None:
            metrics.watch_pool(read_pool, "replica")

    @classmethod
    async def open(cls, settings: Settings, *, upgrade: bool = True) -> Database:
        """Connect (starting the embedded server if needed), check pgvector, migrate, pool.

        With ``upgrade=False`` a schema that is not at head is an error that names the fix.
        """
        from amrita_memory_pg.storage.pg import migrate

        target = await resolve_target(settings)
        try:
            conn = await connect_once(target.dsn, settings.database.connect_timeout)
            try:
                await check_pgvector(conn)
                revision = await migrate.current_revision(conn)
            finally:
                await conn.close()
            head = migrate.head_revision()
            if revision != head:
                if problem := migrate.unsupported_revision(revision):
                    raise SchemaNotReady(problem)
                if not upgrade:
                    raise SchemaNotReady(
                        f"the database schema is at {revision or 'nothing'} but this version needs "
                        f"{head}: run `amrita-memory db upgrade`"
                    )
                await migrate.upgrade(target.dsn)
            pool = await create_pool(target.dsn, settings.database)
            read_pool = None
            if settings.database.read_url:
                try:
                    read_pool = await create_pool(settings.database.read_url, settings.database)
                except BaseException:
                    await pool.close()
                    raise
        except BaseException:
            target.release()
            raise
        return cls(target, pool, read_pool)

    async def close(self) -> None:
        """Close the pool, then release the embedded server (it stops if we were the last)."""
        try:
            if self.read_pool is not self.pool:
                await self.read_pool.close()
            await self.pool.close()
        finally:
            self.target.release()
