"""Knowledge distillation in the L3 loop (the reference's 知识沉淀): the
SQL pre-pass finds memories worth a global knowledge entry, the cycle is offered the
knowledge tools because of them (and says why), and a scripted model over real HTTP
creates the entry. Without candidates or suggestions the tools stay away."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.loop_survey import DISTILL_MIN_PARTITIONS
from tests.support.l3 import TARGET, USAGE, add, loop_memory, tool_replies

CREATE = "subconscious_knowledge_create"
#: offered only while users' suggestions are pending (reviewing needs them)
REVIEW_TOOLS = {
    "subconscious_knowledge_list",
    "subconscious_knowledge_read",
    "subconscious_knowledge_update",
    "subconscious_knowledge_delete",
    "subconscious_knowledge_search",
    "subconscious_read_suggestions",
}
KNOWLEDGE_TOOLS = {CREATE, *REVIEW_TOOLS}
FACT = "杭州地铁 1 号线首班车 6:00 发车"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


def _offered(request: dict[str, object]) -> set[str]:
    tools = request["tools"]
    assert isinstance(tools, list)
    return {t["function"]["name"] for t in tools}


async def _entries(mem: Memory) -> list[tuple[str, str]]:
    rows = await mem.pool.fetch("SELECT title, summary FROM amrita_memory.knowledge ORDER BY kid")
    return [(r["title"], r["summary"]) for r in rows]


async def _candidates(mem: Memory, key: str = TARGET) -> list[str]:
    found = await mem.consolidation.knowledge_candidates(key, 0.85, DISTILL_MIN_PARTITIONS)
    return [c.id for c in found]


async def test_a_cycle_that_finds_a_knowledge_candidate_creates_a_knowledge_entry(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await add(mem, FACT, importance=6, category="knowledge")
        await add(mem, "用户喜欢猫", importance=5, category="preference")
        llm.call(
            CREATE,
            {"title": "杭州地铁首班车", "summary": FACT, "body": f"{FACT}（来自用户聊天）"},
        )
        llm.call("subconscious_iter_stop", {"summary": "沉淀了一条知识"})
        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        context = tool_replies(llm.requests[0])[0]
        assert "pending_knowledge_suggestions" not in context  # none pending: left out
        # the context says why: how many, and which (the preference is not one)
        assert context["knowledge_hint"] == "1 条可入知识库（隐私不写）"
        assert context["knowledge_candidates"] == [FACT]
        # distilling needs only create (the pre-pass checked the base holds nothing like
        # it); the review tools and the guide stay away: no suggestion is pending
        offered = _offered(llm.requests[0])
        assert CREATE in offered and offered.isdisjoint(REVIEW_TOOLS)
        assert "## 全局知识库" not in llm.requests[0]["messages"][0]["content"]
        assert tool_replies(llm.requests[1])[-1]["status"] == "success"  # the create
        assert summary.tool_calls == 3  # get_context, create, iter_stop
        assert await _entries(mem) == [("杭州地铁首班车", FACT)]

        # reviewed (and now in the knowledge base): the next cycle has no knowledge work
        llm.reset()
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        again = tool_replies(llm.requests[0])[0]
        assert "knowledge_hint" not in again and "knowledge_candidates" not in again
        assert _offered(llm.requests[0]).isdisjoint(KNOWLEDGE_TOOLS)
        assert "## 全局知识库" not in llm.requests[0]["messages"][0]["content"]


async def test_no_candidate_and_no_suggestion_offers_no_knowledge_tools(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """Memories of other categories are not knowledge; with the base disabled nothing is
    looked for at all."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await add(mem, "用户喜欢猫", importance=5, category="preference")
        await add(mem, "用户周六去爬山", importance=5, category="event")
        await add(mem, "用户住在上海", importance=5)
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        context = tool_replies(llm.requests[0])[0]
        assert "knowledge_hint" not in context and "knowledge_candidates" not in context
        assert _offered(llm.requests[0]).isdisjoint(KNOWLEDGE_TOOLS)
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__enable_knowledge=False) as mem:
        await add(mem, FACT, key="QQPlatform_Private_10009", category="knowledge")
        llm.reset()
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle("QQPlatform_Private_10009")).ok
        context = tool_replies(llm.requests[0])[0]
        assert "knowledge_hint" not in context and "knowledge_candidates" not in context
        assert _offered(llm.requests[0]).isdisjoint(KNOWLEDGE_TOOLS)


async def test_a_fact_several_partitions_hold_as_knowledge_is_a_candidate_everywhere(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """The cross-partition rule: an uncategorised memory becomes a candidate once the same
    fact is knowledge in DISTILL_MIN_PARTITIONS other partitions, and the context says in
    how many."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        plain = await add(mem, FACT, importance=5)
        await add(mem, FACT, key="QQPlatform_Group_1", category="knowledge")
        assert await _candidates(mem) == []  # one other partition is not several
        await add(mem, FACT, key="QQPlatform_Group_2", category="knowledge")
        assert await _candidates(mem) == [plain]
        llm.call("subconscious_iter_stop", {"summary": "看过了"})
        assert (await mem.run_cycle(TARGET)).ok
        context = tool_replies(llm.requests[0])[0]
        assert context["knowledge_hint"].startswith("1 条")
        assert context["knowledge_candidates"] == [f"{FACT}|另见2个分区"]
        assert CREATE in _offered(llm.requests[0])
        # the cycle succeeded: reviewed, not asked again; an edit makes it new again
        assert await _candidates(mem) == []
        await mem.memories.update(TARGET, plain, importance=7)
        assert await _candidates(mem) == [plain]


async def test_what_the_knowledge_base_holds_or_a_dry_run_saw_stays_a_candidate_rule(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """A fact already in the base is no candidate; a dry run or a failed cycle reviews
    nothing (the next real cycle is still shown the candidate)."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        known = await add(mem, "上海地铁 2 号线连接两座机场", category="knowledge")
        fact = await add(mem, FACT, category="knowledge")
        await mem.knowledge.create(
            title="上海地铁", summary="上海地铁 2 号线连接两座机场", body="浦东与虹桥"
        )
        assert await _candidates(mem) == [fact]
        assert known not in await _candidates(mem)
        llm.call("subconscious_iter_stop", {"summary": "演练"})
        assert (await mem.run_cycle(TARGET, dry_run=True)).ok
        llm.reset()
        llm.call("subconscious_no_such_tool", {})  # then the model stops: a failed cycle
        assert not (await mem.run_cycle(TARGET)).ok
        assert await _candidates(mem) == [fact]


async def test_a_pending_suggestion_with_a_candidate_offers_every_knowledge_tool(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """Reviewing a suggestion needs list/read/search/update and the guide; the candidate
    is still listed beside it."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await add(mem, FACT, category="knowledge")
        await mem.knowledge.suggest(
            author_id="10002", action="create", title="猫粮", summary="猫粮品牌", body="皇家"
        )
        llm.call("subconscious_iter_stop", {"summary": "下轮再看"})
        assert (await mem.run_cycle(TARGET)).ok
        context = tool_replies(llm.requests[0])[0]
        assert context["pending_knowledge_suggestions"]["count"] == 1
        assert context["knowledge_candidates"] == [FACT]
        assert _offered(llm.requests[0]) >= KNOWLEDGE_TOOLS
        assert "## 全局知识库" in llm.requests[0]["messages"][0]["content"]
