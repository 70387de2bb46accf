"""Fuzz every chat tool through ``Memory.call_tool``: any input gets an envelope, nothing raises,
a refusal changes nothing, and nothing is logged as an error.

Generated calls mix plausible arguments (real ids, enum values, small numbers) with
hostile ones: wrong types, missing and unknown arguments, huge strings, NUL, lone
surrogates, emoji, SQL metacharacters, extreme ints and floats, malformed ids, arguments
that are not an object, and JSON text that is truncated. One memory (hashing embedder,
pgvector, a per-partition cap of 15 so the full-partition path is reached) serves every
example, so state builds up as it would in a chat; the bound on examples keeps the run
to a few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import checksum, memory_on
from tests.support.pg import PgServer

T = TypeVar("T")

SNAPSHOT = Path(__file__).parent / "snapshots" / "chat_tools.json"
#: tool name → {argument: its JSON schema}, from the pinned schemas the LLM sees
SCHEMAS = {
    s["function"]["name"]: s["function"]["parameters"]
    for s in json.loads(SNAPSHOT.read_text(encoding="utf-8"))
}
TOOLS: dict[str, dict[str, dict[str, Any]]] = {n: p["properties"] for n, p in SCHEMAS.items()}
REQUIRED: dict[str, list[str]] = {n: p["required"] for n, p in SCHEMAS.items()}
READ_ONLY = {"read_memory", "list_memory", "read_memo", "read_profile"}

CONTEXTS = [
    ToolContext(platform="qq", user_id="10001"),
    ToolContext(platform="qq", user_id="10001", group_id="555"),
    ToolContext(platform="qq", user_id="20002", group_id="555"),
    ToolContext(platform="qq", user_id="30003", group_id="555", roles=frozenset({"admin"})),
]

any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
special_text = st.sampled_from(
    [
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfff",
        "😀👍🏽",
        "'; DROP TABLE amrita_memory.memory; --",
        "' OR '1'='1",
        "%",
        "_",
        "\\",
        "$1",
        "null",
        "",
        "   ",
        "²",
        "①",
        "\u202e",
    ]
)
huge_text = st.sampled_from(["长" * 4001, "x" * 100_000, "9" * 5000, "\x00" * 3000])
extreme_numbers = st.one_of(
    st.integers(),
    st.sampled_from([2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 10**30, -(10**400)]),
    st.floats(),
)
hostile = st.one_of(
    st.text(any_char, max_size=40),
    special_text,
    huge_text,
    extreme_numbers,
    st.booleans(),
    st.none(),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def plausible(name: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values a well-behaved model would send for this argument."""
    if "enum" in schema:
        return st.sampled_from([v for v in schema["enum"] if v is not None])
    if schema["type"] == "integer" or schema["type"] == ["integer", "null"]:
        return st.integers(-5, 60)
    return st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=30)


@dataclass
class Harness:
    """One open memory on a private event loop (hypothesis drives sync tests)."""

    loop: asyncio.AbstractEventLoop
    mem: Memory
    errors: list[logging.LogRecord] = field(default_factory=list)

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.loop.run_until_complete(awaitable)

    def ids(self) -> list[str]:
        rows = self.run(self.mem.pool.fetch("SELECT id FROM amrita_memory.memory ORDER BY id"))
        return [str(r["id"]) for r in rows]


class _Collect(logging.Handler):
    def __init__(self, into: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record)


@pytest.fixture
def harness(pg_server: PgServer, template_db: str, tmp_path: Path) -> Iterator[Harness]:
    loop = asyncio.new_event_loop()
    name = loop.run_until_complete(pg_server.create_database(template=template_db))
    stack = contextlib.AsyncExitStack()
    logger = logging.getLogger("amrita_memory_pg")
    try:
        mem = loop.run_until_complete(
            stack.enter_async_context(
                memory_on(pg_server.dsn(name), tmp_path, per_session_memory_limit=15)
            )
        )
        h = Harness(loop, mem)
        handler = _Collect(h.errors)
        logger.addHandler(handler)
        try:
            yield h
        finally:
            logger.removeHandler(handler)
    finally:
        loop.run_until_complete(stack.aclose())
        loop.run_until_complete(pg_server.drop_database(name))
        loop.close()


def _live(live_ids: list[str], index: int) -> str:
    """The live id at ``index`` (wrapping), or one that matches nothing when there is none."""
    return live_ids[index % len(live_ids)] if live_ids else "0" * 32


@st.composite
def calls(draw: st.DrawFn, live_ids: list[str]) -> tuple[str, Any, ToolContext]:
    """(tool name, arguments in some shape, speaker).

    Modes: ``clean`` (what a well-behaved model sends), ``one-bad`` (clean, then one
    argument made hostile, dropped, or an unknown one added), ``chaos`` (every argument
    may be anything, the arguments may not be an object or not valid JSON).
    """
    unknown_names = st.sampled_from(["", "nope", "write_memory\x00", "\ud800", "READ_MEMO"])
    name = draw(st.sampled_from(sorted(TOOLS))) if draw(st.integers(0, 9)) else draw(unknown_names)
    mode = draw(st.sampled_from(["clean", "clean", "one-bad", "one-bad", "chaos"]))
    params = TOOLS.get(name, {})
    args: dict[str, Any] = {}
    for param, schema in params.items():
        good = plausible(param, schema)
        if param == "id":
            # What hypothesis records must not depend on the database's state: it checks a
            # recorded prefix against a new run of it and reports FlakyStrategyDefinition
            # when the range of a choice changed (sampled_from(live_ids) grew between
            # examples: ~3 runs in 10 failed in generation). So: fixed-range choices, and
            # the live id looked up from them (a live id, its 6-char prefix, or
            # a plausible one).
            good = st.one_of(
                st.integers(0, 1023).map(lambda i: _live(live_ids, i)),
                st.integers(0, 1023).map(lambda i: _live(live_ids, i)[:6]),
                good,
            )
        if mode == "chaos":
            if draw(st.integers(0, 5)):  # leave out about one in six
                args[param] = draw(st.one_of(good, hostile))
        elif param in REQUIRED.get(name, []) or draw(st.booleans()):
            args[param] = draw(good)
    if mode == "one-bad":
        how = draw(st.sampled_from(["hostile", "hostile", "drop", "unknown"]))
        if how == "unknown" or not params:
            args[draw(st.text(any_char, max_size=8))] = draw(hostile)
        elif how == "drop" and args:
            del args[draw(st.sampled_from(sorted(args)))]
        else:
            args[draw(st.sampled_from(sorted(params)))] = draw(hostile)
    shape = draw(st.integers(0, 9)) if mode == "chaos" else draw(st.integers(0, 7))
    payload: Any
    if shape <= 5:
        payload = args
    elif shape <= 7:
        payload = json.dumps(args, ensure_ascii=draw(st.booleans()))
    elif shape == 8:  # truncated JSON text, or JSON that is not an object
        text = json.dumps(args)
        payload = draw(
            st.one_of(
                st.just(text[: draw(st.integers(0, max(0, len(text) - 1)))]),
                st.lists(st.integers(), max_size=2).map(json.dumps),
                st.integers().map(json.dumps),
            )
        )
    else:  # not a mapping at all
        payload = draw(st.one_of(st.lists(st.integers(), min_size=1, max_size=2), st.integers(1)))
    return name, payload, draw(st.sampled_from(CONTEXTS))


@settings(
    max_examples=150,
    deadline=None,
    # The ids offered are the live ones, so generation depends on the database's state,
    # which a replay or a shrink cannot reproduce (hypothesis then reports
    # FlakyStrategyDefinition instead of the failure): generate only, and report the
    # first failing call as drawn.
    phases=(Phase.explicit, Phase.generate),
    database=None,
    suppress_health_check=[
        # one memory on purpose: state builds up across examples, as in a chat
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(data=st.data())
def test_every_call_gets_an_envelope_and_a_refusal_changes_nothing(
    harness: Harness, data: st.DataObject
) -> None:
    name, payload, ctx = data.draw(calls(harness.ids()))
    before = harness.run(checksum(harness.mem))
    reply = harness.run(harness.mem.call_tool(name, payload, ctx))
    assert isinstance(reply, str)
    reply.encode("utf-8")  # sendable to any chat platform and LLM API
    envelope = json.loads(reply)
    assert isinstance(envelope, dict)
    # forget_memory asked by query answers "confirm" with its candidates and forgets nothing
    # until it is called again with an id
    assert envelope["status"] in ("success", "error") or (
        name == "forget_memory" and envelope["status"] == "confirm"
    ), envelope
    if envelope["status"] == "confirm":
        assert isinstance(envelope["candidates"], list) and envelope["candidates"], envelope
    event(f"{name if name in TOOLS else 'unknown tool'}: {envelope['status']}")
    if envelope["status"] == "error":
        assert isinstance(envelope["message"], str) and envelope["message"].strip()
        assert "\n" not in envelope["message"] or name == "", envelope["message"]
    if envelope["status"] in ("error", "confirm") or name in READ_ONLY:
        assert harness.run(checksum(harness.mem)) == before, (name, payload, envelope)
    assert harness.errors == [], [r.getMessage() for r in harness.errors]
    caps = harness.run(
        harness.mem.pool.fetchval(
            "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM amrita_memory.memory "
            "GROUP BY partition_key) AS per_partition"
        )
    )
    assert caps <= 15
