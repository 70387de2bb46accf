"""The writes that remove a memory with what was derived from it: a person's or the chat
model's delete (its cascade), a forget (also every trace, recorded in the erasure ledger),
an erasure of a whole partition, and the cascade of a changed text. Each is one
transaction: the SQL functions of ``sql/functions/lineage.sql`` do the work, the
vector index is told what left the memory table before the commit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.domain.lineage import Cascade, CascadeRow, Ref
from amrita_memory_pg.storage.memory_core import RepositoryCore
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.trail import act, raise_if_paused


def cascade_rows(rows: Sequence[asyncpg.Record]) -> tuple[CascadeRow, ...]:
    return tuple(
        CascadeRow(
            action=r["action"],
            kind=r["kind"],
            key=r.get("row_key"),
            id=r.get("row_id"),
            body=r.get("body"),
            n=r["n"],
        )
        for r in rows
    )


def about_json(was: str | None, now: str | None = None) -> str:
    """What a withheld row's task tells the loop: the text that went or changed."""
    return json.dumps([{"was": was, "now": now}] if was is not None else [], ensure_ascii=False)


class ForgetWrites(RepositoryCore):
    """Cascading deletes, forgets, erasures and change cascades of memories."""

    async def _removed(self, conn: PoolConnectionProxy, cascade: Cascade) -> None:
        """Tell the vector index about the memories a cascade took out, in its transaction."""
        gone = cascade.removed_memory_ids
        if gone and not cascade.dry_run:
            await self._gate(conn)
            await self.backend.removed(gone)

    async def cascade(
        self,
        conn: PoolConnectionProxy,
        sources: Sequence[Ref],
        *,
        mode: str,
        about: str,
        now: datetime,
        dry_run: bool = False,
    ) -> Cascade:
        """The cascade of ``sources`` (mode ``delete`` or ``change``) on ``conn``, in the
        caller's transaction."""
        try:
            rows = await conn.fetch(
                query("forget_cascade"),
                json.dumps([s.as_json() for s in sources]),
                mode,
                about,
                now,
                dry_run,
            )
        except asyncpg.PostgresError as exc:
            for source in sources:
                raise_if_paused(exc, source.key)
            raise
        done = Cascade(cascade_rows(rows), dry_run=dry_run)
        await self._removed(conn, done)
        return done

    async def plan_cascade(self, sources: Sequence[Ref], *, mode: str, now: datetime) -> Cascade:
        """What the cascade of ``sources`` would do, in a transaction that writes nothing."""
        async with self.pool.acquire() as conn, conn.transaction():
            return await self.cascade(conn, sources, mode=mode, about="[]", now=now, dry_run=True)

    async def forget(
        self,
        partition_key: str,
        memory_ids: Sequence[str],
        *,
        lines: Sequence[Ref] = (),
        requested_by: str,
        now: datetime,
        dry_run: bool = False,
    ) -> Cascade:
        """Forget memories of a partition with their cascade and every trace, and record it
        in the erasure ledger (``forget_memories_v1``); ``lines``: chat lines of the request
        itself that say it. ``dry_run``: what it would reach, nothing written."""
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history)
            try:
                rows = await conn.fetch(
                    query("forget_memories"),
                    partition_key,
                    list(memory_ids),
                    [r.key for r in lines],
                    [int(r.id) for r in lines],
                    requested_by,
                    now,
                    dry_run,
                )
            except asyncpg.PostgresError as exc:
                raise_if_paused(exc, partition_key)
                raise
            done = Cascade(cascade_rows(rows), dry_run=dry_run)
            await self._removed(conn, done)
        return done

    async def erase(
        self, partition_key: str, *, requested_by: str, now: datetime, dry_run: bool = False
    ) -> Cascade:
        """Erase a partition in every table (``erase_partition_v1``) and record it in the
        ledger; the rows are the receipt (rows per table, no content) and the memories
        that left the table."""
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history)
            rows = await conn.fetch(
                query("erase_partition"), partition_key, requested_by, now, dry_run
            )
            done = Cascade(
                tuple(
                    CascadeRow(
                        action="forget" if r["action"] == "memory" else r["action"],
                        kind=r["kind"],
                        key=None,
                        id=r["row_id"],
                        body=None,
                        n=r["n"],
                    )
                    for r in rows
                ),
                dry_run=dry_run,
            )
            await self._removed(conn, done)
        return done
