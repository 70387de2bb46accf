"""Permission matrix of the chat tools that write or delete, table-driven.

Every tool that changes stored data × every kind of actor × private / group chat, under
both ``group_memory_edit`` policies. The setting of every case: in group G the author
(a plain member) wrote one shared memory and the group memo; in private chat the author
wrote one personal memory and their personal memo. Then one actor makes one call:

- in a **group chat** the actor speaks in G — except the stranger, who is not in G and
  speaks in their own group H; the target is G's shared memory / G's memo (``scope=user``
  rows: the author's personal memory, which follows the author into groups);
- in a **private chat** the actor speaks to the bot alone; the target is the author's
  personal memory / personal memo (the group scope does not exist there).

Outcomes (``TOOL_MATRIX``, one column per actor in ``ACTORS`` order):

- ``A`` allowed: a success reply, the target changed, nothing else did;
- ``R`` refused: an error reply with a non-empty message that shows nobody's content,
  and not one byte of the memory or memo tables changed (``checksum``); where the actor
  cannot address the target at all the reply is the same as for an id that does not
  exist (no existence leak);
- ``O`` own: tools without an id act on the caller's own chat, so the call succeeds in
  the actor's own partition (their personal memory / memo, their group H) and the
  target is untouched;
- ``N`` not offered: the background actor calls through the ``consolidation``
  audience's registry (the stores run with ``subconscious.enabled``), as the author —
  the loop's target user. The loop has its own ``subconscious_*`` tools and none of the
  chat's, so every chat tool is refused as an unknown tool and writes nothing; what the
  loop's own tools may touch is ``test_the_background_audience_reaches_only_its_cycle_target``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import checksum, memory_on
from tests.support.pg import PgServer

ACTORS = ("superuser", "owner", "admin", "author", "member", "stranger", "background")
POLICIES = ("admins_or_author", "anyone")

#: (tool, scope) → {chat: outcomes per actor, in ACTORS order}, policy admins_or_author
TOOL_MATRIX: dict[tuple[str, str | None], dict[str, str]] = {
    ("write_memory", "group"): {"group": "AAAAAON", "private": "RRRRRRN"},
    ("write_memory", "user"): {"group": "OOOAOON", "private": "OOOAOON"},
    ("update_memory", "group"): {"group": "AAAARRN", "private": "RRRRRRN"},
    ("update_memory", "user"): {"group": "RRRARRN", "private": "RRRARRN"},
    ("delete_memory", "group"): {"group": "AAAARRN", "private": "RRRRRRN"},
    ("delete_memory", "user"): {"group": "RRRARRN", "private": "RRRARRN"},
    # a forget is a delete with every trace: the same rights
    ("forget_memory", "group"): {"group": "AAAARRN", "private": "RRRRRRN"},
    ("forget_memory", "user"): {"group": "RRRARRN", "private": "RRRARRN"},
    ("append_memo", None): {"group": "AAAAAON", "private": "OOOAOON"},
    ("update_memo", None): {"group": "AAAAAON", "private": "OOOAOON"},
}
#: what group_memory_edit = "anyone" changes (the reference's rule): members edit group memories
ANYONE_OVERRIDES: dict[tuple[str, str | None, str, str], str] = {
    ("update_memory", "group", "group", "member"): "A",
    ("delete_memory", "group", "group", "member"): "A",
    ("forget_memory", "group", "group", "member"): "A",
}


@dataclass(frozen=True)
class Case:
    tool: str
    scope: str | None
    chat: str
    actor: str
    policy: str
    outcome: str

    @property
    def id(self) -> str:
        scope = f"[{self.scope}]" if self.scope else ""
        return f"{self.tool}{scope}-{self.chat}-{self.actor}-{self.policy}-{self.outcome}"


def cases() -> list[Case]:
    out = []
    for (tool, scope), by_chat in TOOL_MATRIX.items():
        for chat, outcomes in by_chat.items():
            assert len(outcomes) == len(ACTORS)
            for policy in POLICIES:
                for actor, outcome in zip(ACTORS, outcomes, strict=True):
                    if policy == "anyone":
                        outcome = ANYONE_OVERRIDES.get((tool, scope, chat, actor), outcome)
                    out.append(Case(tool, scope, chat, actor, policy, outcome))
    return out


CASES = cases()
_namespaces = itertools.count(1)
#: the consolidation (L3) audience exists only where the loop is enabled
L3 = {"subconscious__enabled": True}
NO_SUCH_ID = "f" * 32


# ---------------------------------------------------------------- one store per policy


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stores(
    pg_server: PgServer, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, Memory]]:
    """One database for the module (each case uses fresh ids), one Memory per policy."""
    name = await pg_server.create_database(template=template_db)
    dsn = pg_server.dsn(name)
    data: Path = tmp_path_factory.mktemp("matrix")
    try:
        async with (
            memory_on(dsn, data / "strict", group_memory_edit="admins_or_author", **L3) as strict,
            memory_on(dsn, data / "anyone", group_memory_edit="anyone", **L3) as anyone,
        ):
            yield {"admins_or_author": strict, "anyone": anyone}
    finally:
        await pg_server.drop_database(name)


# ---------------------------------------------------------------- the world of one case


@dataclass
class World:
    ns: int
    group: str  # G
    other_group: str  # H, the stranger's
    users: dict[str, str]  # actor → user id
    group_memory: str = ""
    personal_memory: str = ""

    @property
    def secrets(self) -> list[str]:
        return [self.secret(k) for k in ("gm", "pm", "gmemo", "pmemo")]

    def secret(self, kind: str) -> str:
        return f"secret-{kind}-{self.ns}"

    def ctx(self, actor: str, chat: str) -> ToolContext:
        if actor == "background":  # the loop works for its target user: here the author
            return self.ctx("author", chat)
        roles = {"superuser"} if actor == "superuser" else set()
        if chat == "group" and actor in ("owner", "admin"):
            roles.add(actor)
        group = None
        if chat == "group":
            group = self.other_group if actor == "stranger" else self.group
        return ToolContext(
            platform="qq", user_id=self.users[actor], group_id=group, roles=frozenset(roles)
        )

    @property
    def author_private(self) -> ToolContext:
        return self.ctx("author", "private")

    @property
    def author_in_group(self) -> ToolContext:
        return self.ctx("author", "group")


async def call(mem: Memory, tool: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    data = json.loads(await mem.call_tool(tool, args, ctx))
    assert isinstance(data, dict)
    return data


async def build_world(mem: Memory) -> World:
    ns = next(_namespaces)
    base = 100000 + ns * 10
    world = World(
        ns=ns,
        group=f"{base}",
        other_group=f"{base + 1}",
        users={actor: f"{base + i}" for i, actor in enumerate(ACTORS)},
    )
    written = await call(
        mem,
        "write_memory",
        {"content": world.secret("gm"), "tags": "t", "importance": "medium", "scope": "group"},
        world.author_in_group,
    )
    world.group_memory = written["memory_id"]
    written = await call(
        mem,
        "write_memory",
        {"content": world.secret("pm"), "tags": "t", "importance": "medium", "scope": "user"},
        world.author_private,
    )
    world.personal_memory = written["memory_id"]
    for ctx, kind in ((world.author_in_group, "gmemo"), (world.author_private, "pmemo")):
        assert (await call(mem, "update_memo", {"content": world.secret(kind)}, ctx))[
            "status"
        ] == "success"
    return world


async def snapshot(mem: Memory) -> dict[tuple[str, str], Any]:
    """Every partition's memories and memo, to see exactly which partitions a call changed."""
    out: dict[tuple[str, str], Any] = {}
    rows = await mem.pool.fetch(
        "SELECT partition_key, id, content, tags::text, importance, updated_at "
        "FROM amrita_memory.memory ORDER BY partition_key, id"
    )
    for row in rows:
        out.setdefault(("memory", row["partition_key"]), []).append(tuple(row.values()))
    for row in await mem.pool.fetch("SELECT partition_key, content FROM amrita_memory.memo"):
        out[("memo", row["partition_key"])] = row["content"]
    return out


def addressed(case: Case, ctx: ToolContext) -> tuple[str, str | None]:
    """The (table, partition) a call by ``ctx`` acts on: the chat's memo, or the scope's memories."""
    if case.scope is None:
        return "memo", ctx.session_key
    return "memory", ctx.group_key if case.scope == "group" else ctx.personal_key


def target(world: World, case: Case) -> tuple[str, str | None]:
    """The (table, partition) of the case's target: G's in a group chat, else the author's."""
    author = world.author_in_group if case.chat == "group" else world.author_private
    return addressed(case, author)


def arguments(world: World, case: Case, memory_id: str | None = None) -> dict[str, Any]:
    new = f"changed-{world.ns}"
    if case.tool == "write_memory":
        return {"content": new, "tags": "t", "importance": "low", "scope": case.scope}
    if case.tool in ("append_memo", "update_memo"):
        return {"content": new}
    target = world.group_memory if case.scope == "group" else world.personal_memory
    args: dict[str, Any] = {"id": memory_id or target, "scope": case.scope}
    if case.tool == "update_memory":
        args["content"] = new
    return args


# ---------------------------------------------------------------- the matrix


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_tool_permission_matrix(stores: dict[str, Memory], case: Case) -> None:
    mem = stores[case.policy]
    world = await build_world(mem)
    ctx = world.ctx(case.actor, case.chat)
    before_sum, before = await checksum(mem), await snapshot(mem)

    registry = mem.registries["consolidation" if case.actor == "background" else "chat"]
    reply = json.loads(await registry.call(case.tool, arguments(world, case), ctx))

    after_sum, after = await checksum(mem), await snapshot(mem)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if case.outcome in ("R", "N"):
        assert reply["status"] == "error", reply
        message = reply["message"]
        assert isinstance(message, str) and message.strip(), reply
        assert not [s for s in world.secrets if s in json.dumps(reply, ensure_ascii=False)]
        assert after_sum == before_sum and not changed, changed
        if case.outcome == "N":
            assert message.startswith(f"未知工具 {case.tool}"), message
        elif case.tool in ("update_memory", "delete_memory", "forget_memory"):
            # Refused because the actor may not edit a memory it can address, or else
            # indistinguishable from an id that does not exist (no existence leak).
            reach = addressed(case, ctx)
            if reach[1] is not None and reach == target(world, case):
                assert message.startswith("无权"), message
            else:
                probe = await call(mem, case.tool, arguments(world, case, NO_SUCH_ID), ctx)
                assert reply == probe
        return

    assert reply["status"] == "success", reply
    table, key = target(world, case) if case.outcome == "A" else addressed(case, ctx)
    assert key is not None
    assert changed == {(table, key)}, (changed, key)
    if case.outcome == "O":
        assert (table, key) != target(world, case)
    new = f"changed-{world.ns}"
    if table == "memo":
        old = before.get((table, key))
        memo = (await mem.memos.get(key)).content
        assert memo == (f"{old}\n{new}" if case.tool == "append_memo" and old else new), memo
    elif case.tool == "write_memory":
        records, _ = await mem.memories.list_page(key, limit=50)
        assert new in [r.content for r in records]
    elif case.tool == "update_memory":
        record = await mem.memories.get(key, arguments(world, case)["id"])
        assert record is not None and record.content == new
    else:
        assert await mem.memories.get(key, arguments(world, case)["id"]) is None


@pytest.mark.asyncio(loop_scope="module")
async def test_the_matrix_covers_every_writing_tool(stores: dict[str, Memory]) -> None:
    """Every registered tool is in the matrix or known to be read-only, so a new writing
    tool (knowledge, profile…) cannot land without its rows."""
    # memory_load_context / memory_unload_context change neither the memory nor the
    # memo table (only loaded_scope); their refusals are in tests/integration/test_seed_model.py.
    read_only = {
        "read_memory",
        "list_memory",
        "read_memo",
        "memory_load_context",
        "memory_unload_context",
        "read_profile",
    }
    # The knowledge tools touch no memory or memo: their own matrix (who reads, anyone
    # suggests) is tests/integration/test_knowledge.py.
    knowledge = {"knowledge_list", "knowledge_read", "knowledge_search", "knowledge_suggest"}
    tools = {schema["function"]["name"] for schema in stores["anyone"].tool_schemas()}
    assert tools - read_only - knowledge == {tool for tool, _ in TOOL_MATRIX}
    assert len(CASES) == len(TOOL_MATRIX) * 2 * len(ACTORS) * len(POLICIES)
    assert {c.outcome for c in CASES} == {"A", "R", "O", "N"}


@pytest.mark.asyncio(loop_scope="module")
async def test_the_background_audience_reaches_only_its_cycle_target(
    stores: dict[str, Memory],
) -> None:
    """The loop offers none of the chat tools; its own tools refuse outside a cycle and,
    in a cycle, find nothing outside the cycle's target partition."""
    from amrita_memory_pg.domain.consolidation import CycleContext

    mem = stores["anyone"]
    chat_tools = set(mem.registries["chat"].names())
    loop = mem.registries["consolidation"]
    assert loop.names() and not chat_tools & set(loop.names())
    assert all(name.startswith("subconscious_") for name in loop.names())
    world = await build_world(mem)
    before = await checksum(mem)
    outside = world.ctx("author", "private")  # no cycle
    refused = json.loads(
        await loop.call("subconscious_delete_memory", {"id": world.personal_memory}, outside)
    )
    assert refused["status"] == "error" and "后台整理循环" in refused["message"]
    # a cycle for the author's personal partition cannot reach the group's memory
    cycle = CycleContext(cycle_id=1, target_key=world.author_private.personal_key)
    inside = ToolContext(platform="l3", user_id=world.users["author"], cycle=cycle)
    for tool, args in (
        ("subconscious_delete_memory", {"id": world.group_memory}),
        ("subconscious_update_memory", {"id": world.group_memory, "content": "x"}),
    ):
        reply = json.loads(await loop.call(tool, args, inside))
        assert reply["status"] == "error" and world.group_memory in reply["message"]
        assert not [s for s in world.secrets if s in json.dumps(reply, ensure_ascii=False)]
    assert await checksum(mem) == before
