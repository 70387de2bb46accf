"""Isolation property: every speaker in every chat sees exactly what they are entitled to.

Hypothesis draws a small world — speakers on two platforms (ids overlapping with group
ids on purpose), groups, roles, superusers, the group-edit policy — and a sequence of
writes through the public surfaces (the tools, ``/memory … add|delete``, the memo tools),
some of them aimed at other people's memories. Every write carries a marker naming the
partition it belongs to (``<<ns.seq@partition>>``); a model tracks which markers must
exist where. Afterwards every speaker reads, in their private chat and in every group of
their platform, through every *surface* in :data:`SURFACES`, and must see exactly the
markers they are entitled to:

- their own personal memories and personal memo, in any chat;
- a group's shared memories and memo only inside that group;
- never another user's personal data, never another group's.

A fresh partition namespace per example (not a fresh database) keeps it fast; a final
look at the tables checks that nothing landed in a partition no surface shows.

Extension point: knowledge and profile reads join by appending a :class:`Surface` to
:data:`SURFACES` (how to read it for a speaker in a chat, and what they are entitled to).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.commands.memory_command import MemoReply, MemoryCommand, TextReply
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.context import ToolContext

# The property is about partitions, not vectors: the hashing embedder on both backends.
BACKENDS = ["pgvector", "chroma"]


@pytest.fixture(params=BACKENDS)
def variant(request: pytest.FixtureRequest) -> tuple[str, str]:
    return str(request.param), "hash"


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[Memory]:
    """The fewest ANN candidates allowed, so that chroma searches of top_k ≤ 10 in a
    partition of more than 10 memories go through the index's nearest-neighbour query."""
    settings = make_settings(retrieval__ann_candidates=10, decay__overfetch=1)
    async with open_memory(settings) as mem:
        yield mem


#: extra personal memories of the first speaker
BULK = 11


#: weighted draws: most speakers share one platform and are plain members
PLATFORMS = ("qq", "qq", "console")
ROLES = ("member", "member", "admin", "owner")
POLICIES = ("admins_or_author", "admins_or_author", "anyone")
OPS = (
    "write_memory",
    "cmd_add",
    "append_memo",
    "update_memo",
    "update_memory",
    "delete_memory",
    "cmd_delete",
)
EDITS = ("update_memory", "delete_memory", "cmd_delete")  # drawn twice as often
MARKER = re.compile(r"<<(\d+)\.(\d+)@([A-Za-z]+_(?:Private|Group)_\d+)>>")
MEMORY_ID = re.compile(r"\[([0-9a-f]{32})\]")
NO_SUCH_ID = "0" * 32
#: who manages a group's shared memories (README): its owner and admins, and superusers
ADMIN_ROLES = frozenset({"owner", "admin", "superuser"})
_namespaces = itertools.count(1000)


# ---------------------------------------------------------------- the world and its model


@dataclass(frozen=True)
class Speaker:
    platform: str
    user_id: str
    superuser: bool


@dataclass(frozen=True)
class Group:
    platform: str
    group_id: str


@dataclass
class Row:
    """One live memory as the model expects it."""

    partition: str
    scope: str
    author: str
    seq: int
    tagged: bool  # written by a tool (tags "t"); ``/memory … add`` entries have no tags


@dataclass
class Model:
    ns: int
    policy: str
    memories: dict[str, Row] = field(default_factory=dict)  # memory id → row
    memos: dict[str, list[int]] = field(default_factory=dict)  # partition → marker seqs
    seqs: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def marker(self, partition: str) -> tuple[int, str]:
        seq = next(self.seqs)
        return seq, f"<<{self.ns}.{seq}@{partition}>>"

    def memory_seqs(self, partition: str | None, *, tagged_only: bool = False) -> set[int]:
        return {
            r.seq
            for r in self.memories.values()
            if r.partition == partition and (r.tagged or not tagged_only)
        }

    def memo_seqs(self, partition: str | None) -> set[int]:
        return set(self.memos.get(partition, [])) if partition else set()

    def can_edit(self, row: Row, ctx: ToolContext) -> bool:
        """The documented tool rule (README, W2), stated independently of the code."""
        if row.scope != "group" or self.policy == "anyone":
            return True
        return bool(ctx.roles & ADMIN_ROLES) or row.author == ctx.user_id


@dataclass(frozen=True)
class Views:
    """One store seen through the settings that change what a speaker may see or do."""

    plain: Memory  # defaults: memo_inject_personal_in_group = false
    inject: Memory  # memo_inject_personal_in_group = true
    editing: Memory  # the example's group_memory_edit policy

    def command(self, mem: Memory | None = None) -> MemoryCommand:
        mem = mem or self.editing
        return MemoryCommand.over(mem)


def view(mem: Memory, **changes: Any) -> Memory:
    """A Memory on the same store (pool, embedder, vector backend) with other settings."""
    settings = mem.settings.model_copy(update=changes)
    return Memory(dataclasses.replace(mem.store, settings=settings))


# ---------------------------------------------------------------- surfaces (the extension point)


@dataclass(frozen=True)
class Reading:
    text: str
    refused: bool = False  # the surface answered with a refusal (e.g. group scope in private)


@dataclass(frozen=True)
class Surface:
    """One way a speaker reads stored data.

    ``read`` returns what the speaker gets in that chat; ``entitled`` the marker seqs
    they must see there (empty and ``refused`` where the surface is not available);
    ``top`` caps result counts (searches): then the reading must be ``top`` of the
    entitled markers (or all of them when fewer), and nothing else.
    """

    name: str
    read: Callable[[Views, ToolContext], Awaitable[Reading]]
    entitled: Callable[[Model, ToolContext], set[int]]
    refuses: Callable[[ToolContext], bool] = lambda ctx: False
    top: int | None = None


async def _tool(mem: Memory, name: str, args: dict[str, Any], ctx: ToolContext) -> Reading:
    data = json.loads(await mem.call_tool(name, args, ctx))
    return Reading(json.dumps(data, ensure_ascii=False), refused=data["status"] != "success")


async def _command(views: Views, ctx: ToolContext, text: str) -> Reading:
    reply = await views.command(views.plain).run(ctx, text)
    if isinstance(reply, MemoReply):
        return Reading("\n".join(reply.chunks))
    assert isinstance(reply, TextReply)
    return Reading(reply.text, refused=reply.text.startswith("用法:"))


async def _command_pages(views: Views, ctx: ToolContext, scope: str) -> Reading:
    """Every page of ``/memory {scope} list``."""
    texts = []
    for page in range(1, 20):
        reading = await _command(views, ctx, f"{scope} list {page}")
        texts.append(reading.text)
        if reading.refused or f"下一页: /memory {scope} list {page + 1}" not in reading.text:
            return Reading("\n".join(texts), refused=reading.refused)
    raise AssertionError(f"/memory {scope} list never ended: {texts[-1]}")


def _personal_memories(model: Model, ctx: ToolContext) -> set[int]:
    return model.memory_seqs(ctx.personal_key)


def _group_memories(model: Model, ctx: ToolContext) -> set[int]:
    return model.memory_seqs(ctx.group_key)


def _session_memo(model: Model, ctx: ToolContext) -> set[int]:
    return model.memo_seqs(ctx.session_key)


def _session_and_personal_memo(model: Model, ctx: ToolContext) -> set[int]:
    return model.memo_seqs(ctx.session_key) | model.memo_seqs(ctx.personal_key)


def _private(ctx: ToolContext) -> bool:
    return not ctx.in_group


SURFACES: list[Surface] = [
    Surface(
        "read_memory scope=user",
        lambda v, c: _tool(
            v.plain, "read_memory", {"query": "note", "scope": "user", "top_k": 50}, c
        ),
        _personal_memories,
    ),
    Surface(
        "read_memory scope=group",
        lambda v, c: _tool(
            v.plain, "read_memory", {"query": "note", "scope": "group", "top_k": 50}, c
        ),
        _group_memories,
        refuses=_private,
    ),
    Surface(
        "read_memory scope=user, importance and tags filters",
        lambda v, c: _tool(
            v.plain,
            "read_memory",
            {"query": "note", "scope": "user", "top_k": 50, "importance": "medium", "tags": "t"},
            c,
        ),
        lambda m, c: m.memory_seqs(c.personal_key, tagged_only=True),
    ),
    Surface(
        "read_memory scope=group, importance and tags filters",
        lambda v, c: _tool(
            v.plain,
            "read_memory",
            {"query": "note", "scope": "group", "top_k": 50, "importance": "medium", "tags": "t"},
            c,
        ),
        lambda m, c: m.memory_seqs(c.group_key, tagged_only=True),
        refuses=_private,
    ),
    Surface(
        "read_memory scope=user, top_k=1",
        lambda v, c: _tool(
            v.plain, "read_memory", {"query": "note", "scope": "user", "top_k": 1}, c
        ),
        _personal_memories,
        top=1,
    ),
    Surface(
        "list_memory scope=user",
        lambda v, c: _tool(v.plain, "list_memory", {"scope": "user", "limit": 50}, c),
        _personal_memories,
    ),
    Surface(
        "list_memory scope=group",
        lambda v, c: _tool(v.plain, "list_memory", {"scope": "group", "limit": 50}, c),
        _group_memories,
        refuses=_private,
    ),
    Surface("read_memo", lambda v, c: _tool(v.plain, "read_memo", {}, c), _session_memo),
    Surface(
        "memory_block",
        lambda v, c: _block(v.plain, c),
        _session_memo,
    ),
    Surface(
        "memory_block (memo_inject_personal_in_group)",
        lambda v, c: _block(v.inject, c),
        _session_and_personal_memo,
    ),
    Surface("/memory user list", lambda v, c: _command_pages(v, c, "user"), _personal_memories),
    Surface(
        "/memory list (legacy)", lambda v, c: _command(v, c, "list"), _personal_memories, top=10
    ),
    Surface(
        "/memory user search",
        lambda v, c: _command(v, c, "user search note"),
        _personal_memories,
        top=10,
    ),
    Surface(
        "/memory group list",
        lambda v, c: _command_pages(v, c, "group"),
        _group_memories,
        refuses=_private,
    ),
    Surface(
        "/memory group search",
        lambda v, c: _command(v, c, "group search note"),
        _group_memories,
        refuses=_private,
        top=10,
    ),
    Surface("/memory memo", lambda v, c: _command(v, c, "memo"), _session_memo),
    # knowledge / profile reads: append their Surface here when they land.
]


async def _block(mem: Memory, ctx: ToolContext) -> Reading:
    return Reading(await mem.memory_block(ctx))


# ---------------------------------------------------------------- drawing a world


@dataclass(frozen=True)
class Op:
    speaker: int
    chat: int  # a multiple of 3 = private, else one of the groups of the speaker's platform
    kind: str
    scope: str
    target: int  # which existing memory an update/delete aims at (mod)


@dataclass(frozen=True)
class World:
    speakers: tuple[tuple[str, int, bool], ...]
    groups: tuple[tuple[str, int], ...]
    roles: tuple[str, ...]
    policy: str
    ops: tuple[Op, ...]


ops = st.builds(
    Op,
    speaker=st.integers(0, 3),
    chat=st.integers(0, 8),
    kind=st.sampled_from(OPS + EDITS),
    scope=st.sampled_from(("user", "group")),
    target=st.integers(0, 40),
)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    speakers = draw(
        st.lists(
            st.tuples(
                st.sampled_from(PLATFORMS),
                st.integers(0, 3),
                st.sampled_from((False, False, False, True)),
            ),
            min_size=2,
            max_size=4,
            unique_by=lambda s: (s[0], s[1]),
        )
    )
    # Group numbers overlap user numbers on purpose: user 1 and group 1 are different partitions.
    groups = draw(
        st.lists(
            st.tuples(st.sampled_from(sorted({p for p, _, _ in speakers})), st.integers(0, 3)),
            min_size=1,
            max_size=2,
            unique=True,
        )
    )
    n = len(speakers) * len(groups)
    roles = draw(st.lists(st.sampled_from(ROLES), min_size=n, max_size=n))
    return World(
        speakers=tuple(speakers),
        groups=tuple(groups),
        roles=tuple(roles),
        policy=draw(st.sampled_from(POLICIES)),
        ops=tuple(draw(st.lists(ops, min_size=4, max_size=16))),
    )


class Scenario:
    """A drawn world with concrete ids in a fresh namespace, and the chats of each speaker."""

    def __init__(self, world: World, ns: int) -> None:
        self.world = world
        self.ns = ns
        self.speakers = [Speaker(p, f"{ns}{k}", su) for p, k, su in world.speakers]
        self.groups = [Group(p, f"{ns}{k}") for p, k in world.groups]

    def role(self, speaker: int, group: int) -> str:
        return self.world.roles[speaker * len(self.groups) + group]

    def chats(self, speaker: int) -> list[int | None]:
        """None (private) and the index of every group on the speaker's platform."""
        platform = self.speakers[speaker].platform
        return [None, *(i for i, g in enumerate(self.groups) if g.platform == platform)]

    def ctx(self, speaker: int, group: int | None) -> ToolContext:
        who = self.speakers[speaker]
        roles = {"superuser"} if who.superuser else set()
        if group is not None and (role := self.role(speaker, group)) != "member":
            roles.add(role)
        return ToolContext(
            platform=who.platform,
            user_id=who.user_id,
            group_id=self.groups[group].group_id if group is not None else None,
            roles=frozenset(roles),
        )

    def op_ctx(self, op: Op) -> ToolContext:
        speaker = op.speaker % len(self.speakers)
        groups = self.chats(speaker)[1:]
        if op.chat % 3 == 0 or not groups:
            return self.ctx(speaker, None)
        return self.ctx(speaker, groups[op.chat % len(groups)])


# ---------------------------------------------------------------- applying writes


def _reply(text: str) -> dict[str, Any]:
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


def pick_target(op: Op, model: Model, key: str | None) -> str:
    """An id to update/delete: mostly one the speaker can address, sometimes anyone's, or none."""
    reachable = sorted(i for i, r in model.memories.items() if r.partition == key)
    anyone = sorted(model.memories)
    choice = op.target % 5
    if choice == 0 or not anyone:
        return NO_SUCH_ID
    pool = reachable if choice <= 2 and reachable else anyone
    return pool[op.target // 5 % len(pool)]


async def apply(op: Op, ctx: ToolContext, model: Model, views: Views) -> None:
    """Run one write by ``ctx`` through its surface and check its outcome against the model."""
    mem = views.editing
    where = f"{op} as {ctx}"
    key = ctx.personal_key if op.scope == "user" else ctx.group_key
    target = pick_target(op, model, key)
    row = model.memories.get(target)

    if op.kind == "write_memory":
        seq, marker = model.marker(key or ctx.personal_key)
        data = _reply(
            await mem.call_tool(
                "write_memory",
                {
                    "content": f"{marker} note",
                    "tags": "t",
                    "importance": "medium",
                    "scope": op.scope,
                },
                ctx,
            )
        )
        if key is None:
            assert data["status"] == "error" and data["message"], where
            return
        assert data["status"] == "success", (where, data)
        model.memories[data["memory_id"]] = Row(
            key, op.scope, ctx.user_id, seq, tagged=op.kind == "write_memory"
        )

    elif op.kind == "cmd_add":
        seq, marker = model.marker(key or ctx.personal_key)
        reply = await views.command().run(ctx, f"{op.scope} add {marker} note")
        assert isinstance(reply, TextReply)
        if key is None:
            assert reply.text.startswith("用法:"), (where, reply)
            return
        match = MEMORY_ID.search(reply.text)
        assert reply.text.startswith("✅ 已添加") and match, (where, reply)
        model.memories[match.group(1)] = Row(
            key, op.scope, ctx.user_id, seq, tagged=op.kind == "write_memory"
        )

    elif op.kind in ("append_memo", "update_memo"):
        session = ctx.session_key
        seq, marker = model.marker(session)
        data = _reply(await mem.call_tool(op.kind, {"content": marker}, ctx))
        assert data["status"] == "success", (where, data)
        if op.kind == "append_memo":
            model.memos.setdefault(session, []).append(seq)
        else:
            model.memos[session] = [seq]

    elif op.kind in ("update_memory", "delete_memory"):
        allowed = (
            key is not None
            and row is not None
            and row.partition == key
            and model.can_edit(row, ctx)
            # a memory added by /memory (source=user, untagged) is refused to
            # the chat tools (protect_manual_memories, on by default)
            and row.tagged
        )
        args: dict[str, Any] = {"id": target, "scope": op.scope}
        seq = 0
        if op.kind == "update_memory":
            seq, marker = model.marker(row.partition if row else ctx.personal_key)
            args["content"] = f"{marker} note"
        data = _reply(await mem.call_tool(op.kind, args, ctx))
        if not allowed:
            assert data["status"] == "error" and data["message"], (where, data)
            return
        assert data["status"] == "success", (where, data)
        assert row is not None
        if op.kind == "update_memory":
            row.seq = seq
        else:
            del model.memories[target]

    elif op.kind == "cmd_delete":
        # The full id, or a unique prefix of it (resolved within the addressed partition only).
        given = target if op.target % 2 else target[:8]
        reply = await views.command().run(ctx, f"{op.scope} delete {given}")
        assert isinstance(reply, TextReply)
        admin = bool(ctx.roles & ADMIN_ROLES)
        allowed = (
            key is not None
            and row is not None
            and row.partition == key
            and (op.scope == "user" or admin)
        )
        if not allowed:
            assert not reply.text.startswith("✅"), (where, reply)
            return
        assert (
            reply.text
            == f"✅ 已删除 {'👤个人' if op.scope == 'user' else '👥群共享'} 记忆: [{target}]"
        ), (
            where,
            reply,
        )
        del model.memories[target]

    else:  # pragma: no cover - the strategy draws only OPS
        raise AssertionError(op.kind)


# ---------------------------------------------------------------- checking every reading


def markers(text: str, ns: int) -> dict[int, str]:
    """seq → the partition the marker names, for this example's namespace."""
    found: dict[int, str] = {}
    for match in MARKER.finditer(text):
        if int(match.group(1)) == ns:
            found[int(match.group(2))] = match.group(3)
    return found


def check_reading(surface: Surface, reading: Reading, model: Model, ctx: ToolContext) -> None:
    where = f"{surface.name} for {ctx}"
    seen = markers(reading.text, model.ns)
    # Any marker from an earlier example is another namespace's data: never visible here.
    foreign = [m.group(0) for m in MARKER.finditer(reading.text) if int(m.group(1)) != model.ns]
    assert not foreign, f"{where} shows another example's data {foreign}:\n{reading.text}"
    entitled = surface.entitled(model, ctx)
    leaked = {seq: part for seq, part in seen.items() if seq not in entitled}
    assert not leaked, f"{where} leaks {leaked} (entitled {sorted(entitled)}):\n{reading.text}"
    assert reading.refused == surface.refuses(ctx), (
        f"{where}: refused={reading.refused}\n{reading.text}"
    )
    if surface.top is None:
        assert set(seen) == entitled, (
            f"{where} misses {sorted(entitled - set(seen))}:\n{reading.text}"
        )
    else:
        assert len(seen) == min(surface.top, len(entitled)), f"{where}:\n{reading.text}"


async def check_tables(mem: Memory, model: Model) -> None:
    """Nothing of this example sits in a partition other than the one its marker names."""
    like = f"%<<{model.ns}.%"
    rows = await mem.pool.fetch(
        "SELECT partition_key, content FROM amrita_memory.memory WHERE content LIKE $1", like
    )
    stored = {}
    for row in rows:
        (seq, partition), *more = markers(row["content"], model.ns).items()
        assert not more and row["partition_key"] == partition, dict(row)
        stored[seq] = partition
    assert stored == {r.seq: r.partition for r in model.memories.values()}
    memos = await mem.pool.fetch(
        "SELECT partition_key, content FROM amrita_memory.memo WHERE content LIKE $1", like
    )
    stored_memos = {row["partition_key"]: markers(row["content"], model.ns) for row in memos}
    for partition, found in stored_memos.items():
        assert set(found.values()) == {partition}, (partition, found)
    expected = {k: v for k, v in model.memos.items() if v}
    assert {k: sorted(v) for k, v in stored_memos.items()} == {
        k: sorted(v) for k, v in expected.items()
    }


# ---------------------------------------------------------------- the property


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(world=worlds())
async def test_every_speaker_sees_exactly_what_they_are_entitled_to(
    memory: Memory, world: World
) -> None:
    ns = next(_namespaces)
    scenario = Scenario(world, ns)
    model = Model(ns=ns, policy=world.policy)
    views = Views(
        plain=memory,
        inject=view(memory, memo_inject_personal_in_group=True),
        editing=view(memory, group_memory_edit=world.policy),
    )
    # Everyone first writes a personal memory and a shared one in each of their groups, so
    # that later edits have targets by several authors; the first speaker has a dozen more
    # (several list pages; on chroma, searches past ann_candidates take the ANN path).
    # Then the drawn operations.
    for _ in range(BULK):
        await apply(Op(0, 0, "write_memory", "user", 0), scenario.ctx(0, None), model, views)
    for speaker in range(len(scenario.speakers)):
        for group in scenario.chats(speaker):
            seed = Op(speaker, 0, "write_memory", "user" if group is None else "group", 0)
            await apply(seed, scenario.ctx(speaker, group), model, views)
    for op in world.ops:
        await apply(op, scenario.op_ctx(op), model, views)
    for speaker in range(len(scenario.speakers)):
        for group in scenario.chats(speaker):
            ctx = scenario.ctx(speaker, group)
            for surface in SURFACES:
                check_reading(surface, await surface.read(views, ctx), model, ctx)
    await check_tables(memory, model)


def test_the_markers_catch_a_leak() -> None:
    """The check itself: a reading with another partition's marker fails."""
    model = Model(ns=1, policy="admins_or_author")
    alice = ToolContext(platform="qq", user_id="11")
    model.memories["x"] = Row("QQPlatform_Private_22", "user", "22", 7, tagged=True)
    leak = Reading("<<1.7@QQPlatform_Private_22>>")
    with pytest.raises(AssertionError, match="leaks"):
        check_reading(SURFACES[0], leak, model, alice)
    with pytest.raises(AssertionError, match="another example"):
        check_reading(SURFACES[0], Reading("<<2.1@QQPlatform_Private_11>>"), model, alice)
