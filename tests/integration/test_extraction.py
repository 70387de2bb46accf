"""Automatic extraction over real HTTP: the model is a ScriptedLLM, the
embedder a StubEmbeddingServer, the store the embedded PostgreSQL.

What must hold: an accepted answer replaces exactly the partition's source=auto
memories, keeps every source=user one byte for byte, embeds the entries in one batch
and records the run with its token usage; any unusable answer, a failing embedding or
a replacement that cannot complete leaves the previous auto set as it was.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_KEY = ALICE.personal_key
MEMBER = ToolContext(platform="qq", user_id="10002", group_id="30003", roles=frozenset())
ADMIN = ToolContext(platform="qq", user_id="10003", group_id="30003", roles=frozenset({"admin"}))
USAGE = {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}


@pytest.fixture
def embedder() -> Iterator[StubEmbeddingServer]:
    with StubEmbeddingServer(dim=64) as server:
        yield server


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.usage = dict(USAGE)
        yield server


def _open(
    db_dsn: str, tmp_path: Path, embedder: StubEmbeddingServer, llm: ScriptedLLM, **extra: Any
) -> Any:
    return memory_on(
        db_dsn,
        tmp_path,
        embedding__protocol="ollama-embed",
        embedding__model_url=embedder.url,
        embedding__model_name="bge-m3",
        embedding__max_retries=0,
        extraction__enabled=True,
        llm__base_url=llm.base_url,
        llm__model="stub-model",
        **extra,
    )


@pytest.fixture
async def mem(
    db_dsn: str, tmp_path: Path, embedder: StubEmbeddingServer, llm: ScriptedLLM
) -> AsyncIterator[Memory]:
    async with _open(db_dsn, tmp_path, embedder, llm, extraction__max_entries=3) as opened:
        yield opened


def answer(*entries: tuple[str, str, int]) -> str:
    return json.dumps(
        {"memories": [{"category": c, "content": t, "importance": i} for c, t, i in entries]},
        ensure_ascii=False,
    )


async def rows(mem: Memory, key: str = ALICE_KEY) -> list[dict[str, Any]]:
    records = await mem.pool.fetch(
        "SELECT id, content, category, importance, source, created_at, updated_at, embedding::text AS e "
        "FROM amrita_memory.memory WHERE partition_key = $1 ORDER BY source, content",
        key,
    )
    return [dict(r.items()) for r in records]


async def seed(mem: Memory) -> None:
    """One manual entry, two an earlier extraction made, and a chat line to extract from
    (only rows extraction made are ever replaced: test_extraction_provenance.py)."""
    await mem.memories.add(
        partition_key=ALICE_KEY,
        scope="user",
        content="用户喜欢简洁的回复",
        importance=7,
        category="preference",
        source="user",
        author="10001",
    )
    with acting(Actor("extraction", ALICE_KEY)):
        for text in ("旧的自动记忆一", "旧的自动记忆二"):
            await mem.memories.add(
                partition_key=ALICE_KEY, scope="user", content=text, source="auto"
            )
    await say(mem, "以后部署前都要先跑测试")


async def say(mem: Memory, text: str, key: str = ALICE_KEY, *, at: datetime | None = None) -> None:
    await mem.activity.record_user_message(
        session_key=key, user_key=key, user_id="10001", group_id=None, text=text, now=at
    )


async def test_extraction_replaces_the_auto_entries_and_keeps_every_manual_one(
    mem: Memory, embedder: StubEmbeddingServer, llm: ScriptedLLM
) -> None:
    await seed(mem)
    manual_before = [r for r in await rows(mem) if r["source"] == "user"]
    embedder.reset()
    llm.say(answer(("rule", "部署前必须先跑测试", 8), ("event", "2026-12-03 讨论了部署流程", 4)))

    outcome = await mem.extractor.extract(ALICE_KEY)

    assert (outcome.status, outcome.entries, outcome.replaced) == ("ok", 2, 2)
    after = await rows(mem)
    assert [r for r in after if r["source"] == "user"] == manual_before
    auto = [(r["category"], r["content"], r["importance"]) for r in after if r["source"] == "auto"]
    assert sorted(auto) == [
        ("event", "2026-12-03 讨论了部署流程", 4),
        ("rule", "部署前必须先跑测试", 8),
    ]
    # the two entries were embedded in ONE request
    assert [sorted(r.texts) for r in embedder.embedding_requests] == [
        sorted(["部署前必须先跑测试", "2026-12-03 讨论了部署流程"])
    ]
    # the extracted entries carry their search tokens (insert_memory_v3): the keyword side
    # finds them at once, without waiting for the token backfill
    untokenized = await mem.pool.fetchval(
        "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1 "
        "AND source = 'auto' AND search_tokens IS NULL",
        ALICE_KEY,
    )
    assert untokenized == 0
    hits = await mem.memories.search(ALICE_KEY, "2026", top_k=5, mode="keyword")
    assert [h.record.content for h in hits] == ["2026-12-03 讨论了部署流程"]
    # the model saw the session's line and the scope's memories (manual and automatic)
    prompt = llm.requests[0]["messages"][0]["content"]
    assert "以后部署前都要先跑测试" in prompt
    assert "[手动][用户偏好][7] 用户喜欢简洁的回复" in prompt and "旧的自动记忆一" in prompt
    (run,) = await mem.bot_memories.repo.runs(ALICE_KEY)
    assert (run.status, run.entries, run.trigger, run.model) == ("ok", 2, "command", "stub-model")
    assert (run.usage.prompt_tokens, run.usage.completion_tokens, run.usage.total_tokens) == (
        321,
        45,
        366,
    )
    # nothing new in the log: nothing to extract, no model call
    assert (await mem.extractor.extract(ALICE_KEY)).status == "empty"
    assert len(llm.requests) == 1


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("好的，我记住了", "not JSON"),
        ('{"memories": [{"category": "mood", "content": "开心", "importance": 5}]}', "category"),
        (
            '{"memories": [{"category": "rule", "content": "x", "importance": 5, "tags": "a"}]}',
            "tags",
        ),
        ('{"memories": [{"category": "rule", "content": "x", "importance": 11}]}', "importance"),
        ('{"memories": [{"category": "rule", "content": "x", "importance": "5"}]}', "importance"),
        ('{"memories": [{"category": "rule", "importance": 5}]}', "content"),
        ('{"entries": []}', "memories"),
        (answer(*[("rule", f"规则{n}", 5) for n in range(4)]), "max_entries"),
        (answer(("rule", "长" * 501, 5)), "max_entry_chars"),
        (answer(("rule", "含\x00字符", 5)), "cannot be stored"),
        ("", "empty"),
    ],
    ids=[
        "prose",
        "unknown-category",
        "extra-field",
        "importance-11",
        "importance-text",
        "missing-content",
        "wrong-key",
        "too-many",
        "oversized",
        "nul",
        "empty",
    ],
)
async def test_an_unusable_answer_is_rejected_whole_and_the_old_auto_set_stays(
    mem: Memory, embedder: StubEmbeddingServer, llm: ScriptedLLM, bad: str, why: str
) -> None:
    await seed(mem)
    before = await rows(mem)
    embedder.reset()
    llm.say(bad)

    outcome = await mem.extractor.extract(ALICE_KEY)

    assert outcome.status == "rejected"
    assert why in (outcome.reason or "")
    assert await rows(mem) == before
    assert embedder.embedding_requests == []  # nothing embedded for a refused answer
    (run,) = await mem.bot_memories.repo.runs(ALICE_KEY)
    assert run.status == "rejected" and why in (run.reason or "")
    assert run.usage.total_tokens == 366  # a rejected answer still cost tokens


async def test_a_fenced_answer_and_an_empty_list_are_accepted(
    mem: Memory, llm: ScriptedLLM
) -> None:
    await seed(mem)
    llm.say("```json\n" + answer(("knowledge", "项目使用 PostgreSQL", 6)) + "\n```")
    assert (await mem.extractor.extract(ALICE_KEY)).status == "ok"
    await say(mem, "没什么要记的")
    llm.say('{"memories": []}')
    outcome = await mem.extractor.extract(ALICE_KEY)
    assert (outcome.status, outcome.replaced) == ("ok", 1)
    assert [r["source"] for r in await rows(mem)] == ["user"]  # the manual one stays


async def test_a_failing_embedding_leaves_the_old_auto_set_and_is_retried(
    mem: Memory, embedder: StubEmbeddingServer, llm: ScriptedLLM
) -> None:
    await seed(mem)
    before = await rows(mem)
    embedder.fail_always = 500
    llm.say(answer(("rule", "部署前必须先跑测试", 8)))

    outcome = await mem.extractor.extract(ALICE_KEY)

    assert outcome.status == "failed" and "HTTP 500" in (outcome.reason or "")
    assert await rows(mem) == before
    (run,) = await mem.bot_memories.repo.runs(ALICE_KEY)
    assert run.status == "failed" and run.chat_until_id is None
    # a failed run does not count as read: the next attempt sees the same lines
    embedder.fail_always = None
    llm.say(answer(("rule", "部署前必须先跑测试", 8)))
    retried = await mem.extractor.extract(ALICE_KEY)
    assert (retried.status, retried.entries) == ("ok", 1)


async def test_a_replacement_that_cannot_finish_rolls_back_whole(
    db_dsn: str, tmp_path: Path, embedder: StubEmbeddingServer, llm: ScriptedLLM
) -> None:
    """Cap 4 with one manual entry: the third new entry does not fit, after the old auto
    rows were already deleted and two new ones inserted inside the transaction."""
    async with _open(db_dsn, tmp_path, embedder, llm, per_session_memory_limit=4) as mem:
        await seed(mem)
        before = await rows(mem)
        llm.say(answer(("rule", "一", 5), ("rule", "二", 5), ("rule", "三", 5), ("rule", "四", 5)))
        outcome = await mem.extractor.extract(ALICE_KEY)
        assert outcome.status == "rejected" and "cap of 4" in (outcome.reason or "")
        assert await rows(mem) == before


async def test_expired_sessions_are_extracted_once_and_active_ones_wait(
    mem: Memory, llm: ScriptedLLM
) -> None:
    now = datetime.now(UTC)
    other = ToolContext(platform="qq", user_id="10009").personal_key
    await say(mem, "一小时前说的话", at=now - timedelta(minutes=60))
    await say(mem, "刚刚说的话", other, at=now - timedelta(minutes=1))
    llm.say(answer(("event", "一小时前聊过天", 3)))

    outcomes = await mem.extractor.run_expired(now=now)

    assert [(o.session_key, o.status) for o in outcomes] == [(ALICE_KEY, "ok")]
    assert (await mem.extractor.run_expired(now=now)) == []  # already read
    later = now + timedelta(minutes=31)
    llm.say(answer(("event", "刚刚聊过天", 3)))
    assert [o.session_key for o in await mem.extractor.run_expired(now=later)] == [other]
    assert len(llm.requests) == 2


async def test_memory_extract_command_runs_it_and_group_members_are_refused(
    mem: Memory, llm: ScriptedLLM
) -> None:
    command = MemoryCommand.over(mem)
    refused = await command.run(MEMBER, "extract")
    assert isinstance(refused, TextReply) and "仅管理员" in refused.text
    await say(mem, "群里定了周五发版", MEMBER.session_key)
    llm.say(answer(("event", "周五发版", 6)))
    done = await command.run(ADMIN, "extract")
    assert isinstance(done, TextReply) and done.text.startswith("✅ 已提取 1 条自动记忆")
    assert [r["content"] for r in await rows(mem, MEMBER.session_key)] == ["周五发版"]


async def test_without_a_model_extraction_says_it_is_off(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, extraction__enabled=True) as mem:  # no [llm]
        assert mem.extraction_model is None
        outcome = await mem.extractor.extract(ALICE_KEY)
        assert outcome.status == "disabled" and "no model configured" in (outcome.reason or "")
