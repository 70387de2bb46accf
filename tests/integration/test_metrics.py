"""``/metrics`` and ``/health`` as an operator's Prometheus and container orchestrator see
them: scraped over HTTP from the app ``amrita-memory web`` serves, on a real store.

The registry is the process's, shared by every test of the session, so each test reads
the counters before and after what it does and asserts the difference.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.web.security import hash_password
from amrita_memory_pg.web.server import standalone_app
from tests.support.cli import run_cli
from tests.support.l3 import TARGET, USAGE, loop_memory
from tests.support.memory import memory_on, settings_for

ALICE = ToolContext(platform="qq", user_id="10001")
HASH = hash_password("metrics-pass")
WRITE = {"tags": "hobby", "importance": "medium", "scope": "user"}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition: (name, labels) → value."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@asynccontextmanager
async def served(db_dsn: str, tmp_path: Path, **overrides: Any) -> AsyncIterator[Any]:
    """The standalone server's app (lifespan run: its own store), an HTTP client on it
    and that store's Memory."""
    settings = settings_for(db_dsn, tmp_path, web__password_hash=HASH, **overrides)
    app = standalone_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ops") as client:
            yield client, _memory_of(app)


def _memory_of(app: FastAPI) -> Memory:
    from starlette.routing import Mount

    (mount,) = [r for r in app.routes if isinstance(r, Mount)]
    memory = mount.app.state.admin.memory_source()  # type: ignore[attr-defined]
    assert isinstance(memory, Memory)
    return memory


async def scrape(client: httpx.AsyncClient) -> tuple[str, Samples]:
    reply = await client.get("/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    return reply.text, parse(reply.text)


async def test_a_chat_turn_shows_in_the_tool_search_write_block_and_embedding_metrics(
    db_dsn: str, tmp_path: Path
) -> None:
    async with served(db_dsn, tmp_path) as (client, mem):
        _, before = await scrape(client)
        written = json.loads(
            await mem.call_tool("write_memory", WRITE | {"content": "用户喜欢爬山"}, ALICE)
        )
        assert written["status"] == "success"
        found = json.loads(
            await mem.call_tool("read_memory", {"query": "爬山", "scope": "user"}, ALICE)
        )
        assert found["status"] == "success"
        bad = json.loads(await mem.call_tool("write_memory", {"scope": "user"}, ALICE))
        assert bad["status"] == "error"
        await mem.call_tool("no_such_tool", {}, ALICE)
        await mem.memory_block(ALICE)
        text, after = await scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    calls = "amrita_memory_tool_calls_total"
    assert delta(calls, audience="chat", tool="write_memory", status="success") == 1
    assert delta(calls, audience="chat", tool="read_memory", status="success") == 1
    assert delta(calls, audience="chat", tool="write_memory", status="error") == 1
    assert delta(calls, audience="chat", tool="unknown", status="unknown") == 1
    assert delta("amrita_memory_tool_call_seconds_count", audience="chat", tool="write_memory") == 2
    mode = mem.settings.retrieval.default_mode
    assert delta("amrita_memory_search_seconds_count", mode=mode, outcome="ok") == 1
    assert delta("amrita_memory_write_seconds_count", path="write", outcome="ok") == 1
    assert delta("amrita_memory_memory_block_seconds_count", outcome="ok") == 1
    embedded = "amrita_memory_embedding_requests_total"
    assert delta(embedded, provider="hash", kind="passage", outcome="ok") == 1
    assert delta(embedded, provider="hash", kind="query", outcome="ok") == 1
    # the pool is reported by role; nothing names a partition, a user or what they said
    assert value(after, "amrita_memory_pool_max_connections", pool="primary") >= 10
    assert value(after, "amrita_memory_pool_connections", pool="primary", state="idle") >= 1
    labels = {v for family in text_string_to_metric_families(text) for s in family.samples
              for v in s.labels.values()}  # fmt: skip
    for private in ("10001", "QQPlatform", "爬山"):
        assert not any(private in value for value in labels)


async def test_an_embedding_outage_counts_as_errors_of_the_provider_and_the_write(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=32, fail_always=500) as embedder:
        async with served(
            db_dsn,
            tmp_path,
            embedding__protocol="ollama-embed",
            embedding__model_url=embedder.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=0,
        ) as (client, mem):
            _, before = await scrape(client)
            reply = json.loads(
                await mem.call_tool("write_memory", WRITE | {"content": "会失败"}, ALICE)
            )
            assert reply["status"] == "error"
            _, after = await scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    labels = {"provider": "ollama-embed", "kind": "passage"}
    assert delta("amrita_memory_embedding_requests_total", outcome="error", **labels) == 1
    assert delta("amrita_memory_embedding_seconds_count", **labels) == 1
    assert delta("amrita_memory_write_seconds_count", path="write", outcome="error") == 1
    calls = "amrita_memory_tool_calls_total"
    assert delta(calls, audience="chat", tool="write_memory", status="failed") == 1


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.usage = dict(USAGE)
        yield server


async def test_l3_cycles_and_extraction_runs_count_their_outcomes_and_tokens(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    from amrita_memory_pg.metrics import exposition

    before = parse(exposition().decode())
    async with loop_memory(db_dsn, tmp_path, llm, extraction__enabled=True) as mem:
        llm.call("subconscious_iter_stop", {"summary": "没什么可整理的"})
        summary = await mem.run_cycle(TARGET)
        assert summary.ok, summary.error
        await mem.activity.record_user_message(
            session_key=TARGET, user_key=TARGET, user_id="10001", group_id=None, text="我住在杭州"
        )
        llm.say('{"memories": [{"category": "event", "content": "住在杭州", "importance": 5}]}')
        outcome = await mem.extractor.extract(TARGET)
        assert outcome.status == "ok", outcome.reason
        empty = await mem.extractor.extract(TARGET)  # nothing new since
        assert empty.status == "empty"
    after = parse(exposition().decode())

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("amrita_memory_l3_cycles_total", outcome="ok") == 1
    tokens = "amrita_memory_llm_tokens_total"
    assert delta(tokens, caller="l3", kind="prompt") == USAGE["prompt_tokens"]
    assert delta(tokens, caller="l3", kind="completion") == USAGE["completion_tokens"]
    assert delta("amrita_memory_extraction_runs_total", outcome="ok") == 1
    assert delta("amrita_memory_extraction_runs_total", outcome="empty") == 1
    assert delta(tokens, caller="extraction", kind="prompt") == USAGE["prompt_tokens"]


async def test_the_sweep_and_the_leases_it_holds_are_counted(db_dsn: str, tmp_path: Path) -> None:
    from amrita_memory_pg.domain.errors import LeaseHeld
    from amrita_memory_pg.metrics import exposition

    async with memory_on(db_dsn, tmp_path) as mem:
        for n in range(3):
            await mem.memories.add(partition_key=ALICE.personal_key, scope="user", content=f"事{n}")
        before = parse(exposition().decode())
        async with mem.leases.hold("sweep"):
            held = parse(exposition().decode())
            other = type(mem.leases)(mem.leases.repo, owner="elsewhere:1:x")
            with pytest.raises(LeaseHeld):
                async with other.hold("sweep"):
                    pass
            report = await mem.memories.sweep(force=True)
        after = parse(exposition().decode())

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert value(held, "amrita_memory_leases_held", kind="sweep") == (
        value(before, "amrita_memory_leases_held", kind="sweep") + 1
    )
    assert value(after, "amrita_memory_leases_held", kind="sweep") == value(
        before, "amrita_memory_leases_held", kind="sweep"
    )
    assert delta("amrita_memory_lease_claims_total", kind="sweep", outcome="acquired") == 1
    assert delta("amrita_memory_lease_claims_total", kind="sweep", outcome="refused") == 1
    assert report.wrapped
    assert delta("amrita_memory_sweep_runs_total", outcome="complete") == 1
    assert delta("amrita_memory_sweep_rows_total", action="scanned") == report.scanned >= 3
    assert value(after, "amrita_memory_sweep_last_complete_timestamp_seconds") > 0


async def test_a_task_waiting_for_a_connection_shows_as_pool_waiting(
    db_dsn: str, tmp_path: Path
) -> None:
    from amrita_memory_pg.metrics import exposition

    async with memory_on(
        db_dsn, tmp_path, database__pool_min_size=1, database__pool_max_size=1
    ) as mem:
        async with mem.pool.acquire():
            waiter = asyncio.create_task(mem.pool.fetchval("SELECT 1"))
            await asyncio.sleep(0.2)
            busy = parse(exposition().decode())
            assert not waiter.done()
        assert await waiter == 1
        idle = parse(exposition().decode())
    # other tests' pools may be open in this process: compare this pool's moment only
    assert value(busy, "amrita_memory_pool_waiting", pool="primary") >= 1
    assert value(idle, "amrita_memory_pool_waiting", pool="primary") == 0
    assert value(busy, "amrita_memory_pool_connections", pool="primary", state="in_use") >= 1


async def test_health_is_200_on_a_healthy_store_and_503_naming_the_check_that_fails(
    db_dsn: str, tmp_path: Path
) -> None:
    async with served(db_dsn, tmp_path) as (client, mem):
        ok = await client.get("/health")
        assert ok.status_code == 200, ok.text
        body = ok.json()
        assert body["status"] == "ok"
        assert sorted(body["checks"]) == ["database", "model", "schema"]
        await mem.memories.add(partition_key=ALICE.personal_key, scope="user", content="一条")
        conn = await asyncpg.connect(db_dsn)
        try:
            await conn.execute(
                "UPDATE amrita_memory.store_meta SET embed_fingerprint = 'another-model'"
            )
            wrong_model = await client.get("/health")
            await conn.execute("UPDATE amrita_memory.alembic_version SET version_num = '0001'")
            old_schema = await client.get("/health")
        finally:
            await conn.close()
    assert wrong_model.status_code == 503
    checks = wrong_model.json()["checks"]
    assert checks["database"]["ok"] and checks["schema"]["ok"]
    assert not checks["model"]["ok"] and "amrita-memory reindex" in checks["model"]["detail"]
    assert old_schema.status_code == 503
    assert "amrita-memory db upgrade" in old_schema.json()["checks"]["schema"]["detail"]


async def test_the_health_command_exits_0_when_healthy_and_1_naming_what_failed(
    db_dsn: str, tmp_path: Path
) -> None:
    healthy = run_cli("health", env={"DATABASE_URL": db_dsn}, cwd=tmp_path)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "database" in healthy.stdout and "FAIL" not in healthy.stdout
    as_json = run_cli("health", "--json", env={"DATABASE_URL": db_dsn}, cwd=tmp_path)
    assert json.loads(as_json.stdout)["status"] == "ok"
    down = run_cli(
        "health",
        "--json",
        env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"},
        cwd=tmp_path,
    )
    assert down.returncode == 1
    report = json.loads(down.stdout)
    assert report["status"] == "unhealthy" and not report["checks"]["database"]["ok"]
    # no DATABASE_URL and no embedded server running in this folder: unhealthy, and the
    # check starts nothing
    embedded = run_cli("health", env={"AMRITA_MEMORY_DATA_DIR": str(tmp_path / "d")}, cwd=tmp_path)
    assert embedded.returncode == 1
    assert "not running" in embedded.stdout
    assert not (tmp_path / "d" / "pg").exists()
    broken = run_cli("health", env={"AMRITA_MEMORY_DECAY__HALF_LIFE_DAYS": "-3"}, cwd=tmp_path)
    assert broken.returncode == 1, broken.stderr


async def test_a_reembed_counts_its_rows_and_ends_with_nothing_pending(
    db_dsn: str, tmp_path: Path
) -> None:
    from amrita_memory_pg.maintenance.reembed import reindex
    from amrita_memory_pg.metrics import exposition

    async with memory_on(db_dsn, tmp_path) as old:
        for n in range(7):
            await old.memories.add(partition_key=ALICE.personal_key, scope="user", content=f"事{n}")
    pending: list[float] = []

    def progress(done: int, total: int) -> None:
        pending.append(value(parse(exposition().decode()), "amrita_memory_reembed_pending_rows"))

    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=64) as new:
        before = parse(exposition().decode())
        report = await reindex(new.pool, new.embedder, batch_size=3, progress=progress)
        after = parse(exposition().decode())
    assert report.embedded == 7
    rows = "amrita_memory_reembed_rows_total"
    assert value(after, rows) - value(before, rows) == 7
    assert pending[:2] == [7.0, 4.0]  # at the start, then 7 - 3 left after a batch
    assert value(after, "amrita_memory_reembed_pending_rows") == 0
