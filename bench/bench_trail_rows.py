"""The trail triggers, statement-level (trail_v3) vs row-level (trail_v4, issue 24): what
the paths that still fire them pay, and what the writer that records its own history
saves. Not a test.

Starts a throwaway embedded PostgreSQL, migrates one database to the revision before
0043_trail_row_triggers (v3) and one to head (v4), fills each with ``--memories``
memories (384-d) in ``--partitions`` partitions with one history row each, and times, v3 and v4 interleaved round by
round (order flipped every round), each in a rolled-back transaction:

* ``INSERT ... SELECT`` of ``--bulk`` memories, no writer flag (the trigger records them);
* ``DELETE`` of those ``--bulk`` memories, no flag;
* the JSONL restore's memory part: ``DELETE`` of every memory (clear_store) then COPY of
  them back (restore.load_jsonl), no flag (a version-1 backup) and under the writer's
  flag (a backup carrying memory_change and memory_access);
* an UPDATE and a DELETE of the ``--bulk`` memories under the writer's flag (the sweep's
  statements: nothing queued on v4, transition tables filled on v3);
* ``insert_memory_v5`` x 1000 in one server-side loop (no round trips), ms per call;
* ``insert_memory_v5`` of one memory (the hot write, flag on: the trigger queues nothing
  on v4, its transition table is still filled on v3), p50 of ``--singles`` calls.

    flock /tmp/bench.lock .venv/bin/python bench/bench_trail_rows.py
    flock /tmp/bench.lock .venv/bin/python bench/bench_trail_rows.py --rounds 5 --bulk 10000
    flock /tmp/bench.lock .venv/bin/python bench/bench_trail_rows.py --only-singles --rounds 8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
from alembic.script import ScriptDirectory

from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import register_vector_codec
from amrita_memory_pg.storage.pg.embedded import start_embedded

REVISION = "0043_trail_row_triggers"
DIM = 384
COLUMNS = (
    "id", "partition_key", "scope", "content", "tags", "importance", "category", "source",
    "created_at", "updated_at", "tier_since", "embedding", "embed_fingerprint", "origin",
)  # fmt: skip


def revision_before() -> str:
    down = (
        ScriptDirectory.from_config(migrate.alembic_config()).get_revision(REVISION).down_revision
    )
    assert isinstance(down, str)
    return down


async def prepare(dsn: str, revision: str, memories: int, bulk: int, partitions: int) -> None:
    """Migrate, fill ``memories`` (flag on: no history) and a staging table of ``bulk``."""
    await migrate.upgrade(dsn, revision)
    conn = await asyncpg.connect(dsn)
    try:
        source = (
            "SELECT 'P' || (g % {p}) AS partition_key, 'user' AS scope,"
            " repeat('记忆内容 ', 8) || g AS content, ARRAY['t' || (g % 5)] AS tags,"
            " 1 + g % 10 AS importance, 'event' AS category, 'auto' AS source,"
            " (SELECT array_agg(random())::vector FROM generate_series(1, {dim}) WHERE g > 0)"
            " AS embedding, 'fp' AS embed_fingerprint"
            " FROM generate_series(1, {n}) g"
        )
        async with conn.transaction():
            await conn.execute("SELECT set_config('amrita_memory.history_by_writer', 'on', true)")
            await conn.execute(
                "INSERT INTO amrita_memory.memory (partition_key, scope, content, tags, importance,"
                " category, source, embedding, embed_fingerprint) "
                + source.format(p=partitions, dim=DIM, n=memories)
            )
        # every memory has its create row, as in a store that recorded its history
        await conn.execute(
            "INSERT INTO amrita_memory.memory_change (partition_key, memory_id, at, actor_kind,"
            " op, after) SELECT partition_key, id, now(), 'system', 'create',"
            " jsonb_build_object('content', content) FROM amrita_memory.memory"
        )
        await conn.execute(
            "CREATE TABLE public.staging AS "
            + source.format(p=partitions, dim=DIM, n=bulk).replace("SELECT ", "SELECT g AS n, ", 1)
        )
        await conn.execute(
            """CREATE FUNCTION public.amrita_memory_bench_singles(p_n integer, p_vec real[])
            RETURNS double precision LANGUAGE plpgsql AS $f$
            DECLARE t0 timestamptz := clock_timestamp();
            BEGIN
                FOR i IN 1..p_n LOOP
                    PERFORM * FROM amrita_memory.insert_memory_v5(
                        'P' || (i % 100), 'user', '一条新的记忆 ' || i, ARRAY['t'], 5, 'event',
                        'auto', NULL, p_vec::vector, 'fp', now(), 100000, ARRAY['记忆']);
                END LOOP;
                RETURN extract(epoch FROM clock_timestamp() - t0) * 1000 / p_n;
            END $f$"""
        )
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


class Side:
    """One database and the timed operations on it."""

    def __init__(self, name: str, conn: asyncpg.Connection, records: list[Any]) -> None:
        self.name = name
        self.conn = conn
        self.records = records

    async def bulk(self) -> tuple[float, float]:
        """(INSERT ... SELECT, DELETE of the same rows) seconds, no flag, rolled back."""
        tx = self.conn.transaction()
        await tx.start()
        try:
            started = time.perf_counter()
            await self.conn.execute(
                "INSERT INTO amrita_memory.memory (id, partition_key, scope, content, tags,"
                " importance, category, source, embedding, embed_fingerprint)"
                " SELECT 'f' || lpad(to_hex(n), 31, '0'), partition_key, scope, content, tags,"
                " importance, category, source, embedding, embed_fingerprint"
                " FROM public.staging"
            )
            inserted = time.perf_counter() - started
            started = time.perf_counter()
            await self.conn.execute("DELETE FROM amrita_memory.memory WHERE id LIKE 'f%'")
            deleted = time.perf_counter() - started
        finally:
            await tx.rollback()
        return inserted, deleted

    async def writer(self) -> tuple[float, float]:
        """(UPDATE, DELETE) seconds of the ``--bulk`` staged memories under the writer's flag
        (what the sweep does: it records its own history), rolled back."""
        tx = self.conn.transaction()
        await tx.start()
        try:
            await self.conn.execute(
                "INSERT INTO amrita_memory.memory (id, partition_key, scope, content, tags,"
                " importance, category, source, embedding, embed_fingerprint)"
                " SELECT 'f' || lpad(to_hex(n), 31, '0'), partition_key, scope, content, tags,"
                " importance, category, source, embedding, embed_fingerprint"
                " FROM public.staging"
            )
            await self.conn.execute(
                "SELECT set_config('amrita_memory.history_by_writer', 'on', true)"
            )
            started = time.perf_counter()
            await self.conn.execute(
                "UPDATE amrita_memory.memory SET importance = importance % 10 + 1"
                " WHERE id LIKE 'f%'"
            )
            updated = time.perf_counter() - started
            started = time.perf_counter()
            await self.conn.execute("DELETE FROM amrita_memory.memory WHERE id LIKE 'f%'")
            return updated, time.perf_counter() - started
        finally:
            await tx.rollback()

    async def singles_in_server(self, n: int, *, no_trail: bool = False) -> float:
        """Milliseconds per insert_memory_v5 over ``n`` calls in one server-side loop (no
        round trips), rolled back; ``no_trail``: the trail triggers disabled (the floor)."""
        tx = self.conn.transaction()
        await tx.start()
        try:
            if no_trail:
                await self.conn.execute(
                    "ALTER TABLE amrita_memory.memory DISABLE TRIGGER trail_memory_insert"
                )
            value = await self.conn.fetchval(
                "SELECT amrita_memory_bench_singles($1, $2)", n, [0.01] * DIM
            )
            return float(value)
        finally:
            await tx.rollback()

    async def restore(self, flag: bool) -> float:
        """DELETE every memory, then COPY them back, rolled back; ``flag``: under the
        writer's flag, as load_jsonl does for a backup carrying the history."""
        tx = self.conn.transaction()
        await tx.start()
        try:
            started = time.perf_counter()
            if flag:
                await self.conn.execute(
                    "SELECT set_config('amrita_memory.history_by_writer', 'on', true)"
                )
            await self.conn.execute("DELETE FROM amrita_memory.memory")
            await self.conn.copy_records_to_table(
                "memory", schema_name="amrita_memory", columns=list(COLUMNS), records=self.records
            )
            return time.perf_counter() - started
        finally:
            await tx.rollback()

    async def single(self, vector: list[float], i: int) -> float:
        """One insert_memory_v5 (flag on inside), rolled back."""
        tx = self.conn.transaction()
        await tx.start()
        try:
            started = time.perf_counter()
            await self.conn.fetchrow(
                "SELECT * FROM amrita_memory.insert_memory_v5($1, 'user', $2, ARRAY['t'], 5,"
                " 'event', 'auto', NULL, $3, 'fp', now(), 100000, ARRAY['记忆'])",
                f"P{i % 100}",
                f"一条新的记忆 {i}",
                vector,
            )
            return time.perf_counter() - started
        finally:
            await tx.rollback()


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_embedded(Path(tmp))
        try:
            admin = await asyncpg.connect(server.dsn("postgres"))
            for name in ("v3", "v4"):
                await admin.execute(f"CREATE DATABASE {name}")
            await admin.close()
            revisions = {"v3": revision_before(), "v4": "head"}
            sides: list[Side] = []
            for name, revision in revisions.items():
                dsn = server.dsn(name)
                await prepare(dsn, revision, args.memories, args.bulk, args.partitions)
                conn = await asyncpg.connect(dsn)
                await register_vector_codec(conn)
                records = [
                    tuple(r)
                    for r in await conn.fetch(
                        f"SELECT {', '.join(COLUMNS)} FROM amrita_memory.memory"
                    )
                ]
                sides.append(Side(name, conn, records))
            vector = [0.01 * (i % 7) for i in range(DIM)]
            # one call each first: the store's model is recorded, plans are cached
            for side in sides:
                await side.single(vector, 0)
            await report(args, sides, vector)
            for side in sides:
                await side.conn.close()
        finally:
            server.stop()


async def report(args: argparse.Namespace, sides: list[Side], vector: list[float]) -> None:
    times: dict[str, dict[str, list[float]]] = {s.name: {} for s in sides}

    def add(side: Side, what: str, value: float) -> None:
        times[side.name].setdefault(what, []).append(value)

    for round_ in range(args.rounds):
        order = sides if round_ % 2 == 0 else list(reversed(sides))
        for side in order:
            if args.only_singles:
                add(
                    side,
                    "insert_memory_v5 in-server, 1000 (ms/call)",
                    await side.singles_in_server(1000),
                )
                add(
                    side,
                    "  the same, trail triggers disabled (ms/call)",
                    await side.singles_in_server(1000, no_trail=True),
                )
                continue
            inserted, deleted = await side.bulk()
            add(side, f"INSERT ... SELECT {args.bulk} (s)", inserted)
            add(side, f"DELETE {args.bulk} (s)", deleted)
            add(side, f"restore: DELETE + COPY {args.memories} (s)", await side.restore(False))
            add(side, "restore, history carried (flag on) (s)", await side.restore(True))
            updated, deleted = await side.writer()
            add(side, f"writer flag: UPDATE {args.bulk} (s)", updated)
            add(side, f"writer flag: DELETE {args.bulk} (s)", deleted)
            add(
                side,
                "insert_memory_v5 in-server, 1000 (ms/call)",
                await side.singles_in_server(1000),
            )
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    singles: dict[str, list[float]] = {s.name: [] for s in sides}
    for i in range(args.singles):
        order = sides if i % 2 == 0 else list(reversed(sides))
        for side in order:
            singles[side.name].append(await side.single(vector, i + 1))
    for side in sides:
        times[side.name]["insert_memory_v5 p50 (ms)"] = [
            statistics.median(singles[side.name]) * 1000
        ]
    print(f"{'':42} {'v3 (statement)':>16} {'v4 (row)':>12} {'v4/v3':>7}")
    for what in times["v3"]:
        old = statistics.median(times["v3"][what])
        new = statistics.median(times["v4"][what])
        print(f"{what:42} {old:16.4f} {new:12.4f} {new / old:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--bulk", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--singles", type=int, default=300)
    parser.add_argument(
        "--only-singles", action="store_true", help="rounds of the in-server insert loop only"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
