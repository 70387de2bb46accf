"""The health check a container orchestrator calls: ``/health`` and ``amrita-memory health``.

Three checks, each a yes or no with one sentence: the database answers, its schema is at
the head this code needs, and the model that made the stored vectors is the configured
one (an empty store is consistent with any model). A running process checks through its
own pool and its loaded embedder (:func:`store_health`); the CLI opens one connection and
compares with the configured model without loading it (:func:`server_health`), and never
starts the embedded server it is asked about. Each check's sentence is a key and its
values (``locales/``): the CLI says it in its language, ``/health`` in English.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.i18n import Catalog, Translator
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import connect_once, describe_target

#: the checks, in the order they are made and shown
CHECKS = ("database", "schema", "model")
#: the sentences, for /health (English: a machine or an operator's tooling reads it)
ENGLISH: Translator = Catalog("amrita_memory_pg").translator("en")


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    key: str
    values: dict[str, Any] = field(default_factory=dict)

    def detail(self, t: Translator = ENGLISH) -> str:
        return t(self.key, **self.values)


@dataclass(frozen=True, slots=True)
class Health:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def as_dict(self, t: Translator = ENGLISH) -> dict[str, Any]:
        return {
            "status": "ok" if self.ok else "unhealthy",
            "checks": {c.name: {"ok": c.ok, "detail": c.detail(t)} for c in self.checks},
        }

    def as_json(self, t: Translator = ENGLISH) -> str:
        return json.dumps(self.as_dict(t), ensure_ascii=False)


async def _checks(conn: Any, fingerprint: str, describe: str) -> list[Check]:
    """The schema and model checks on an open connection (or pool)."""
    revision = await migrate.current_revision(conn)
    head = migrate.head_revision()
    if revision != head:
        behind: dict[str, Any] = {"revision": revision or "-", "head": head}
        return [
            Check("schema", False, "health.schema_behind", behind),
            Check("model", False, "health.not_checked_schema"),
        ]
    checks = [Check("schema", True, "health.schema_head", {"head": head})]
    meta = await store_meta.read(conn)
    rows = await store_meta.vector_rows(conn)
    if rows == 0:
        checks.append(Check("model", True, "health.model_empty", {"model": describe}))
    elif meta.fingerprint == fingerprint:
        checks.append(Check("model", True, "health.model_ok", {"model": describe, "rows": rows}))
    else:
        stored = meta.describe() if meta.fingerprint else "?"
        values: dict[str, Any] = {"rows": rows, "stored": stored, "model": describe}
        checks.append(Check("model", False, "health.model_differs", values))
    return checks


async def store_health(store: Store) -> Health:
    """The health of a running process's store, through its pool (no new connection)."""
    try:
        async with store.pool.acquire() as conn:
            checks = await _checks(conn, store.embedder.fingerprint, store.embedder.describe())
    except (OSError, TimeoutError, AmritaMemoryError) as exc:
        return unreachable(str(exc) or type(exc).__name__)
    except Exception as exc:  # a driver error: the database did not answer as it should
        return unreachable(f"{type(exc).__name__}: {exc}")
    return Health((Check("database", True, "health.answers"), *checks))


def unreachable(reason: str, key: str = "health.unreachable") -> Health:
    """Every check failed: the database did not answer (``reason`` says why)."""
    return Health(
        (
            Check("database", False, key, {"reason": reason[:300]}),
            Check("schema", False, "health.not_checked"),
            Check("model", False, "health.not_checked"),
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
            return Health(
                (
                    Check("database", False, "health.not_running", {"pgdata": str(pgdata)}),
                    Check("schema", False, "health.not_checked"),
                    Check("model", False, "health.not_checked"),
                )
            )
    provider = create_provider(settings.embedding)
    fingerprint, describe = provider.fingerprint, provider.describe()
    await provider.aclose()
    try:
        target = await resolve_target(settings)
    except (OSError, AmritaMemoryError) as exc:
        return unreachable(str(exc))
    try:
        try:
            conn = await connect_once(target.dsn, settings.database.connect_timeout)
        except AmritaMemoryError as exc:
            return unreachable(str(exc))
        try:
            checks = await _checks(conn, fingerprint, describe)
        except Exception as exc:  # the database answered the connect, then failed
            return unreachable(f"{describe_target(target.dsn)}: {type(exc).__name__}: {exc}")
        finally:
            await conn.close()
    finally:
        target.release()
    answered = Check(
        "database", True, "health.target_answers", {"target": describe_target(target.dsn)}
    )
    return Health((answered, *checks))
