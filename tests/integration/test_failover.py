"""Failover to a promoted standby: a primary with synchronous replication
(``synchronous_standby_names = '*'``, ``synchronous_commit = remote_apply``) and its
streaming standby, both built from the embedded binaries. Writers run through
``open_memory`` with a multi-host ``DATABASE_URL`` (``target_session_attrs=read-write``);
the primary is crashed (``pg_ctl stop -m immediate``) mid-load and the standby promoted.
Every write acknowledged before the crash is on the new primary, and the same store keeps
answering — its pool reconnects to the promoted node without a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from amrita_memory_pg import ToolContext
from amrita_memory_pg.domain.errors import AmritaMemoryError
from tests.support.cli import run_cli
from tests.support.memory import memory_on
from tests.support.pg import PgServer
from tests.support.replica import Node, base_backup

SYNC = ("synchronous_standby_names='*'", "synchronous_commit=remote_apply")


def _multi_host(database: str, *nodes: Node) -> str:
    hosts = ",".join(quote(str(n.socket_dir), safe="/") for n in nodes)
    ports = ",".join(str(n.port) for n in nodes)
    return (
        f"postgresql://postgres@/{database}?host={hosts}&port={ports}"
        "&target_session_attrs=read-write"
    )


async def test_acknowledged_writes_survive_a_primary_crash_and_the_store_answers_after_promotion(
    pg_server: PgServer, db_dsn: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    database = urlsplit(db_dsn).path.lstrip("/")
    primary = base_backup(pg_server.admin_dsn, tmp_path_factory.mktemp("primary"), standby=False)
    primary.start(*SYNC)
    standby: Node | None = None
    try:
        standby = base_backup(
            primary.dsn("postgres"), tmp_path_factory.mktemp("standby"), standby=True
        )
        standby.start()
        url = _multi_host(database, primary, standby)
        async with memory_on(
            url,
            tmp_path / "data",
            database__pool_max_size=4,
            database__connect_timeout=3.0,
        ) as mem:
            acked: list[str] = []
            failed = 0
            after_promotion: list[str] = []
            promoted = asyncio.Event()
            stop = asyncio.Event()

            async def writer(n: int) -> None:
                nonlocal failed
                i = 0
                while not stop.is_set():
                    i += 1
                    try:
                        record = await mem.memories.add(
                            partition_key=f"QQPlatform_Private_{30000 + n}",
                            scope="user",
                            content=f"写入者{n}的第{i}条",
                        )
                    except (AmritaMemoryError, OSError):  # refused or unknown: not acked
                        failed += 1
                        await asyncio.sleep(0.05)
                        continue
                    acked.append(record.id)
                    if promoted.is_set():
                        after_promotion.append(record.id)

            writers = [asyncio.create_task(writer(n)) for n in range(4)]
            for _ in range(1000):
                if len(acked) >= 40:
                    break
                await asyncio.sleep(0.02)
            primary.stop("immediate")  # a crash: no shutdown checkpoint, nothing flushed late
            before_crash = list(acked)
            await asyncio.sleep(0.5)
            standby.promote()
            promoted.set()
            for _ in range(400):
                if len(after_promotion) >= 20:
                    break
                await asyncio.sleep(0.05)
            stop.set()
            await asyncio.gather(*writers)
            assert len(after_promotion) >= 20, (len(acked), failed)
            # the same store answers on the promoted node: reads and the per-turn block
            ctx = ToolContext(platform="qq", user_id="30001", roles=frozenset())
            assert "写入者1" in await mem.call_tool(
                "read_memory", {"query": "写入者1", "scope": "user"}, ctx
            )
            await mem.memory_block(ctx)
            found = {
                r["id"]
                for r in await mem.pool.fetch(
                    "SELECT id FROM amrita_memory.memory WHERE id = ANY($1::text[])", acked
                )
            }
            on_new_primary = await mem.pool.fetchval("SELECT NOT pg_is_in_recovery()")
        assert on_new_primary
        print(  # the figures, with -s
            f"failover: {len(before_crash)} acked before the crash, {len(acked)} in all, "
            f"{len(after_promotion)} after promotion, {failed} refused or unknown, "
            f"{len(acked) - len(found)} acknowledged missing"
        )
        missing = [i for i in acked if i not in found]
        assert missing == [], f"{len(missing)} of {len(acked)} acknowledged writes lost"
        assert len(before_crash) >= 40
        # `status` names both nodes of the failover list (it used to say "localhost")
        status = run_cli("status", env={"DATABASE_URL": url}, cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        assert f"{primary.socket_dir}:{primary.port},{standby.socket_dir}:{standby.port}/" in (
            status.stdout
        )
    finally:
        primary.stop("immediate")
        if standby is not None:
            standby.stop("immediate")
