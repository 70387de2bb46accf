"""Per-process Prometheus metrics: every metric the package records, defined in one place.

Each process of a fleet exports its own (``/metrics`` on the NoneBot driver and on
``amrita-memory web``; Prometheus sums them). Labels name tools, search modes, outcomes,
providers and lease kinds — bounded sets known in advance — and never a partition key, a
user id or any text a user wrote: a metric must not say who talks to the bot, and a label
that grew with the users would grow the time series without bound.

The layers below call the small functions here (``record_tool_call``, ``observe_search``…)
rather than touching ``prometheus_client`` themselves, so the names, help texts and label
sets live in this one file, documented in docs/deployment.md (a test compares them). A
recording is a dictionary look-up and an add under a lock — a microsecond or two on paths
that take a millisecond or more (bench/bench_metrics.py measures it).

The pools' in-use and waiting connections are read when scraped (:class:`PoolCollector`),
never counted per statement: an asyncpg pool already knows its size and idle count, and
:class:`~amrita_memory_pg.storage.pg.session.PinnablePool` keeps a plain integer of the
tasks waiting in ``acquire``.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any, Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

__all__ = ["CONTENT_TYPE", "REGISTRY", "exposition"]

#: the registry ``/metrics`` serves: ours alone, so a host's other metrics do not mix in
#: (and a host's own default registry does not get ours twice)
REGISTRY: Final = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
PREFIX: Final = "amrita_memory"

#: seconds; a search or a write is ~1 ms on an idle store, an HTTP embedding 10-500 ms,
#: an LLM turn seconds
LATENCY_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)

TOOL_CALLS: Final = Counter(
    f"{PREFIX}_tool_calls",
    "Tool calls by audience (chat, consolidation), tool name and reply status "
    "(success, error, paused, failed = an unexpected exception, unknown = no such tool).",
    ["audience", "tool", "status"],
    registry=REGISTRY,
)
TOOL_SECONDS: Final = Histogram(
    f"{PREFIX}_tool_call_seconds",
    "Time from a tool call to its JSON reply, by audience and tool.",
    ["audience", "tool"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
SEARCH_SECONDS: Final = Histogram(
    f"{PREFIX}_search_seconds",
    "L2 searches (the query's embedding included) by ranking mode and outcome (ok, error).",
    ["mode", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
WRITE_SECONDS: Final = Histogram(
    f"{PREFIX}_write_seconds",
    "L2 writes (the embedding included) by path (write = the chat tool's idempotent "
    "write, add = a person's or the loop's insert) and outcome (ok, error).",
    ["path", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
MEMORY_BLOCK_SECONDS: Final = Histogram(
    f"{PREFIX}_memory_block_seconds",
    "The per-turn memory block (memos, bot memories, profile summary) by outcome.",
    ["outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
L3_CYCLES: Final = Counter(
    f"{PREFIX}_l3_cycles",
    "L3 cycles by outcome (ok, failed, aborted = gave way to a user message, held = "
    "another process holds the target, busy = one already running here, paused, dry_run).",
    ["outcome"],
    registry=REGISTRY,
)
LLM_TOKENS: Final = Counter(
    f"{PREFIX}_llm_tokens",
    "Tokens the LLM reported, by caller (l3, extraction) and kind (prompt, completion).",
    ["caller", "kind"],
    registry=REGISTRY,
)
EXTRACTION_RUNS: Final = Counter(
    f"{PREFIX}_extraction_runs",
    "Automatic extraction runs by outcome (ok, empty, rejected, failed, held, disabled).",
    ["outcome"],
    registry=REGISTRY,
)
EMBEDDING_REQUESTS: Final = Counter(
    f"{PREFIX}_embedding_requests",
    "Embedding provider calls (one per batch) by provider protocol, text kind (query, "
    "passage) and outcome (ok, error).",
    ["provider", "kind", "outcome"],
    registry=REGISTRY,
)
EMBEDDING_TEXTS: Final = Counter(
    f"{PREFIX}_embedding_texts",
    "Texts sent to the embedding provider, by provider protocol and text kind.",
    ["provider", "kind"],
    registry=REGISTRY,
)
EMBEDDING_SECONDS: Final = Histogram(
    f"{PREFIX}_embedding_seconds",
    "Embedding provider calls (one batch each), by provider protocol and text kind.",
    ["provider", "kind"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
SWEEP_ROWS: Final = Counter(
    f"{PREFIX}_sweep_rows",
    "Rows the decay sweep visited, by action (scanned, demoted, purged, kept); a dry run "
    "counts nothing.",
    ["action"],
    registry=REGISTRY,
)
SWEEP_RUNS: Final = Counter(
    f"{PREFIX}_sweep_runs",
    "Decay sweep runs by outcome (complete = a full pass, partial = stopped by its batch "
    "limit, dry_run, disabled = off in [decay]).",
    ["outcome"],
    registry=REGISTRY,
)
SWEEP_LAST_SUCCESS: Final = Gauge(
    f"{PREFIX}_sweep_last_complete_timestamp_seconds",
    "Unix time this process last finished a full sweep pass (0: not since it started).",
    registry=REGISTRY,
)
REEMBED_ROWS: Final = Counter(
    f"{PREFIX}_reembed_rows",
    "Rows (memories and knowledge entries) a re-embed of this process embedded.",
    registry=REGISTRY,
)
REEMBED_PENDING: Final = Gauge(
    f"{PREFIX}_reembed_pending_rows",
    "Rows a running re-embed of this process has still to embed (0 when none runs).",
    registry=REGISTRY,
)
LEASES_HELD: Final = Gauge(
    f"{PREFIX}_leases_held",
    "Leases this process holds now, by kind (l3, extraction, sweep, reembed, backup, "
    "restore, ann).",
    ["kind"],
    registry=REGISTRY,
)
LEASE_CLAIMS: Final = Counter(
    f"{PREFIX}_lease_claims",
    "Lease claims by kind and outcome (acquired, refused = another process holds it, "
    "expired = taken over from a holder whose lease ran out, dead = taken over from a "
    "killed process of this host, lost = taken over by another while held).",
    ["kind", "outcome"],
    registry=REGISTRY,
)

#: the families the pool collector reports (read at scrape time)
POOL_CONNECTIONS: Final = f"{PREFIX}_pool_connections"
POOL_MAX: Final = f"{PREFIX}_pool_max_connections"
POOL_WAITING: Final = f"{PREFIX}_pool_waiting"


#: (metric, label values) → its child: ``labels()`` validates and locks on every call
#: (~2 µs); the label sets are bounded, so the children are kept here once made
_CHILDREN: dict[tuple[object, tuple[str, ...]], Any] = {}


def child(metric: Counter | Gauge | Histogram, *labels: str) -> Any:
    """``metric.labels(*labels)``, made once per label set."""
    key = (metric, labels)
    found = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*labels)
    return found


def record_tool_call(audience: str, tool: str, status: str, seconds: float) -> None:
    """One tool call and its reply's status; ``tool`` must be a registered name."""
    child(TOOL_CALLS, audience, tool, status).inc()
    child(TOOL_SECONDS, audience, tool).observe(seconds)


class timed:
    """``with timed(SEARCH_SECONDS, mode):`` observes the block's seconds in the histogram
    under ``labels`` plus its outcome: ``ok``, or ``error`` when it raised (a refusal such
    as a paused partition included). A class, not a generator: the hot paths use it."""

    __slots__ = ("_histogram", "_labels", "_started")

    def __init__(self, histogram: Histogram, *labels: str) -> None:
        self._histogram = histogram
        self._labels = labels

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        seconds = time.perf_counter() - self._started
        outcome = "ok" if exc_type is None else "error"
        child(self._histogram, *self._labels, outcome).observe(seconds)


def record_cycle(outcome: str) -> None:
    child(L3_CYCLES, outcome).inc()


def record_tokens(caller: str, prompt: int, completion: int) -> None:
    """Tokens of one LLM call (``caller``: l3, extraction)."""
    if prompt > 0:
        child(LLM_TOKENS, caller, "prompt").inc(prompt)
    if completion > 0:
        child(LLM_TOKENS, caller, "completion").inc(completion)


def record_extraction(outcome: str) -> None:
    child(EXTRACTION_RUNS, outcome).inc()


def observe_embedding(provider: str, kind: str, texts: int, ok: bool, seconds: float) -> None:
    """One provider call of ``texts`` texts."""
    child(EMBEDDING_REQUESTS, provider, kind, "ok" if ok else "error").inc()
    child(EMBEDDING_TEXTS, provider, kind).inc(texts)
    child(EMBEDDING_SECONDS, provider, kind).observe(seconds)


def record_sweep_batch(scanned: int, demoted: int, purged: int, kept: int) -> None:
    """One batch of a (real, not dry) sweep."""
    for action, n in (("scanned", scanned), ("demoted", demoted), ("purged", purged)):
        if n:
            child(SWEEP_ROWS, action).inc(n)
    if kept:
        child(SWEEP_ROWS, "kept").inc(kept)


def record_sweep_run(outcome: str, at: float | None = None) -> None:
    """A sweep run ended; ``at`` (Unix time) marks a complete pass."""
    child(SWEEP_RUNS, outcome).inc()
    if at is not None:
        SWEEP_LAST_SUCCESS.set(at)


def reembed_progress(embedded: int, pending: int) -> None:
    """``embedded`` more rows done; ``pending`` left (0 when the re-embed ends)."""
    if embedded:
        REEMBED_ROWS.inc(embedded)
    REEMBED_PENDING.set(max(pending, 0))


def lease_claimed(kind: str, outcome: str) -> None:
    child(LEASE_CLAIMS, kind, outcome).inc()


def lease_held(kind: str, delta: int) -> None:
    """+1 when a lease is taken, -1 when it is dropped."""
    child(LEASES_HELD, kind).inc(delta)


class PoolCollector:
    """The open asyncpg pools of this process by role (primary, replica): connections in
    use and idle, the configured maximum, and tasks waiting in ``acquire``. Pools are
    held weakly: a closed, dropped pool leaves the report by itself."""

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def watch(self, pool: Any, role: str) -> None:
        with self._lock:
            self._pools[pool] = role

    def collect(self) -> Iterator[Metric]:
        connections = GaugeMetricFamily(
            POOL_CONNECTIONS,
            "Connections of this process's pools by role (primary, replica) and state "
            "(in_use, idle).",
            labels=["pool", "state"],
        )
        maximum = GaugeMetricFamily(
            POOL_MAX, "The pools' configured maximum size, by role.", labels=["pool"]
        )
        waiting = GaugeMetricFamily(
            POOL_WAITING,
            "Tasks waiting for a connection of the pools, by role (saturation when > 0 for long).",
            labels=["pool"],
        )
        totals: dict[str, list[int]] = {}
        with self._lock:
            pools = list(self._pools.items())
        for pool, role in pools:
            if pool.is_closing():
                continue
            size, idle = pool.get_size(), pool.get_idle_size()
            row = totals.setdefault(role, [0, 0, 0, 0])
            row[0] += size - idle
            row[1] += idle
            row[2] += pool.get_max_size()
            row[3] += int(getattr(pool, "waiting", 0))
        for role in ("primary", "replica"):
            in_use, idle, most, queued = totals.get(role, [0, 0, 0, 0])
            connections.add_metric([role, "in_use"], in_use)
            connections.add_metric([role, "idle"], idle)
            maximum.add_metric([role], most)
            waiting.add_metric([role], queued)
        yield connections
        yield maximum
        yield waiting


POOLS: Final = PoolCollector()
REGISTRY.register(POOLS)


def watch_pool(pool: Any, role: str) -> None:
    """Report ``pool`` (an asyncpg pool) under ``role`` (primary, replica) when scraped."""
    POOLS.watch(pool, role)


def exposition() -> bytes:
    """The text format Prometheus scrapes (``/metrics``)."""
    return generate_latest(REGISTRY)


def metric_names() -> list[str]:
    """Every family name ``/metrics`` shows (counters with their ``_total``), for the docs
    test: the deployment page names each one."""
    names: list[str] = []
    for family in REGISTRY.collect():
        if not family.name.startswith(PREFIX):
            continue
        names.append(f"{family.name}_total" if family.type == "counter" else family.name)
    return sorted(names)
