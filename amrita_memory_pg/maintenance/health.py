"""The health check a container orchestrator calls: ``/health`` and ``amrita-memory health``.

Three checks, each a yes or no with one sentence: the database answers, its schema is at
the head this code needs, and the model that made the stored vectors is the configured
one (an empty store is consistent with any model). A running process checks through its
own pool and its loaded embedder (:func:`store_health`); the CLI opens one connection and
compares with the configured model without loading it (:func:`server_health`), and never
starts the embedded server it is asked about.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import connect_once, describe_target

#: the checks, in the order they are made and shown
CHECKS = ("database", "schema", "model")


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Health:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": "ok" if self.ok else "unhealthy",
            "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in self.checks},
        }

    def as_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False)


async def _checks(conn: Any, fingerprint: str, describe: str) -> list[Check]:
    """The schema and model checks on an open connection (or pool)."""
    revision = await migrate.current_revision(conn)
    head = migrate.head_revision()
    if revision != head:
        schema = Check(
            "schema",
            False,
            f"at {revision or 'nothing'}, this code needs {head}: run `amrita-memory db upgrade`",
        )
        return [schema, Check("model", False, "not checked: the schema is not at head")]
    checks = [Check("schema", True, f"at head ({head})")]
    meta = await store_meta.read(conn)
    rows = await store_meta.vector_rows(conn)
    if rows == 0 or meta.fingerprint == fingerprint:
        detail = f"{describe}, {rows} vectors" if rows else f"{describe} (no vectors yet)"
        checks.append(Check("model", True, detail))
    else:
        stored = meta.describe() if meta.fingerprint else "an unrecorded model"
        checks.append(
            Check(
                "model",
                False,
                f"the {rows} stored vectors were made by {stored}, the configured model is "
                f"{describe}: run `amrita-memory reindex`",
            )
        )
    return checks


async def store_health(store: Store) -> Health:
    """The health of a running process's store, through its pool (no new connection)."""
    try:
        async with store.pool.acquire() as conn:
            checks = await _checks(conn, store.embedder.fingerprint, store.embedder.describe())
    except (OSError, TimeoutError, AmritaMemoryError) as exc:
        return _unreachable(str(exc) or type(exc).__name__)
    except Exception as exc:  # a driver error: the database did not answer as it should
        return _unreachable(f"{type(exc).__name__}: {exc}")
    return Health((Check("database", True, "answers"), *checks))


def _unreachable(reason: str) -> Health:
    return Health(
        (
            Check("database", False, reason[:300]),
            Check("schema", False, "not checked: the database did not answer"),
            Check("model", False, "not checked: the database did not answer"),
        )
    )


async def server_health(settings: Settings) -> Health:
    """The health of the configured database from outside a bot process: one connection,
    the configured model's fingerprint (not loaded). The embedded server is only joined
    when it runs: a health check never starts what it checks."""
    from amrita_memory_pg.embedding.factory import create_provider
    from amrita_memory_pg.storage.pg.database import resolve_target
    from amrita_memory_pg.storage.pg.embedded import postmaster_pid

    if not settings.database.url:
        pgdata = settings.resolved_data_dir() / "pg"
        if postmaster_pid(pgdata) is None:
            return _unreachable(f"the embedded PostgreSQL in {pgdata} is not running")
    provider = create_provider(settings.embedding)
    fingerprint, describe = provider.fingerprint, provider.describe()
    await provider.aclose()
    try:
        target = await resolve_target(settings)
    except (OSError, AmritaMemoryError) as exc:
        return _unreachable(str(exc))
    try:
        try:
            conn = await connect_once(target.dsn, settings.database.connect_timeout)
        except AmritaMemoryError as exc:
            return _unreachable(str(exc))
        try:
            checks = await _checks(conn, fingerprint, describe)
        except Exception as exc:  # the database answered the connect, then failed
            return _unreachable(f"{describe_target(target.dsn)}: {type(exc).__name__}: {exc}")
        finally:
            await conn.close()
    finally:
        target.release()
    return Health((Check("database", True, f"{describe_target(target.dsn)} answers"), *checks))
