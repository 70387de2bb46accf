"""Per-target L3 scheduler state in ``amrita_memory.l3_state`` (penalty, counters, next run).

Every change of a target's row happens under its row lock (:meth:`L3StateStore.locked`),
so a message and the end of a cycle for the same target never interleave, and the
decision taken from the row is stored in the same transaction as the row's update.
The statements are the named queries of ``sql/queries/l3_state.sql``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.domain.planner import HeatState
from amrita_memory_pg.domain.scheduling import TargetState
from amrita_memory_pg.storage.queries import query


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _state(row: asyncpg.Record, tz_name: str) -> TargetState:
    plan = json.loads(row["plan"]) if row["plan"] else None
    return TargetState(
        target_key=row["target_key"],
        penalty=row["penalty"],
        runs=row["runs"],
        failures=row["failures"],
        failures_in_row=row["failures_in_row"],
        running_since=row["running_since"],
        last_run_end=row["last_run_end"],
        last_success_at=row["last_success_at"],
        last_failure_at=row["last_failure_at"],
        last_error=row["last_error"],
        last_summary=row["last_summary"],
        next_run_at=row["next_run_at"],
        plan=plan if isinstance(plan, dict) else None,
        heat=HeatState.from_json(json.loads(row["heat"] or "{}"), tz_name),
    )


class LockedTarget:
    """A target's row inside its transaction: read once, then updated by the caller."""

    def __init__(self, conn: PoolConnectionProxy, state: TargetState, tz_name: str) -> None:
        self._conn = conn
        self.state = state
        self.tz_name = tz_name

    async def record_message(
        self,
        heat: HeatState,
        next_run_at: datetime,
        plan: dict[str, Any] | None,
        now: datetime,
    ) -> None:
        """Penalty + 1, the new heatmap layers and the run planned from them."""
        await self._conn.execute(
            query("l3_state_record_message"),
            self.state.target_key,
            json.dumps(heat.to_json()),
            next_run_at,
            _json(plan),
            now,
        )

    async def start_cycle(self, now: datetime) -> None:
        await self._conn.execute(query("l3_state_start_cycle"), self.state.target_key, now)

    async def finish_cycle(
        self, *, ok: bool, error: str | None, summary: str | None, now: datetime, tz_name: str
    ) -> TargetState:
        """Counters, last run, and the penalty rule (success resets, failure keeps);
        returns the updated row."""
        row = await self._conn.fetchrow(
            query("l3_state_finish_cycle"), self.state.target_key, ok, now, error, summary
        )
        assert row is not None  # locked in this transaction: it cannot have gone
        self.state = _state(row, tz_name)
        return self.state

    async def abort_cycle(self, now: datetime) -> TargetState:
        """The running cycle gave way to a message of the target: no run counted, the
        penalty and the planned run left as the message set them; returns the row."""
        row = await self._conn.fetchrow(query("l3_state_abort_cycle"), self.state.target_key, now)
        assert row is not None  # locked in this transaction: it cannot have gone
        self.state = _state(row, self.tz_name)
        return self.state

    async def set_next(
        self, next_run_at: datetime | None, plan: dict[str, Any] | None, now: datetime
    ) -> None:
        await self._conn.execute(
            query("l3_state_set_next"), self.state.target_key, next_run_at, _json(plan), now
        )


class L3StateStore:
    """Reads and changes ``l3_state`` rows; ``tz_name`` is the planner's zone (a heatmap
    stored under another zone is dropped on read: its cells would be shifted)."""

    def __init__(self, pool: asyncpg.Pool, *, tz_name: str) -> None:
        self._pool = pool
        self.tz_name = tz_name

    @asynccontextmanager
    async def locked(self, target_key: str, now: datetime) -> AsyncIterator[LockedTarget]:
        """The target's row (created with defaults if new), locked for one transaction."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(query("l3_state_ensure"), target_key, now)
            row = await conn.fetchrow(query("l3_state_lock"), target_key)
            assert row is not None  # just ensured, in this transaction
            yield LockedTarget(conn, _state(row, self.tz_name), self.tz_name)

    async def get_many(self, target_keys: Sequence[str]) -> list[TargetState]:
        """The stored rows of these targets (a target never seen has none)."""
        rows = await self._pool.fetch(query("l3_state_get_many"), list(target_keys))
        return [_state(r, self.tz_name) for r in rows]

    async def spoke_during_cycle(self, target_key: str) -> bool:
        """Whether the target spoke (in any process) since its running cycle started."""
        return bool(await self._pool.fetchval(query("l3_state_spoke_during_cycle"), target_key))

    async def get(self, target_key: str) -> TargetState | None:
        rows = await self.get_many([target_key])
        return rows[0] if rows else None
