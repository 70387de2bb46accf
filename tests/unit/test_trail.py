"""Pure parts of the memory's trail: the actor, the logged query, a change's
fields, the pause filter of the block, the inspector's speaker, the kept lines."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from amrita_memory_pg.commands.memory_command import parse_command
from amrita_memory_pg.domain.injection import Candidate, select
from amrita_memory_pg.domain.trail import (
    Actor,
    ChangeEntry,
    acting,
    current_actor,
    log_query,
    parse_actor,
    redacted_fields,
)
from amrita_memory_pg.services.bot_memories import without_paused
from amrita_memory_pg.services.inspector import speaker_for_chat
from amrita_memory_pg.storage.bot_memories import BlockRows

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def test_an_actor_round_trips_through_its_setting_and_unknown_kinds_are_system() -> None:
    for actor in (Actor("person", "10001"), Actor("llm", "QQPlatform_Group_1"), Actor("system")):
        assert parse_actor(actor.setting()) == actor
    assert parse_actor("l3:cycle 7 · a:b") == Actor("l3", "cycle 7 · a:b")
    assert parse_actor("root:x") == Actor("system", "root:x")


def test_acting_is_scoped_to_the_block_and_inherited_by_tasks() -> None:
    assert current_actor() is None

    async def inner() -> Actor | None:
        return current_actor()

    async def outer() -> Actor | None:
        with acting(Actor("extraction", "k")):
            return await asyncio.create_task(inner())

    assert asyncio.run(outer()) == Actor("extraction", "k")
    assert current_actor() is None


def test_a_logged_query_is_redacted_flattened_and_cut() -> None:
    assert log_query(None) is None and log_query("  \n ") is None
    logged = log_query("猫\n api_key=sk-abcdefghijklmn  狗")
    assert logged is not None and "sk-abc" not in logged and "\n" not in logged
    cut = log_query("x" * 500, limit=10)
    assert cut == "x" * 9 + "…"


def test_changed_fields_and_redaction_of_a_history_side() -> None:
    before = {"content": "a", "tags": ["t"], "importance": 5, "category": None, "scope": "user"}
    after = {**before, "tags": ["t", "u"], "importance": 6}
    entry = ChangeEntry("k", "i", 1, NOW, Actor("llm"), "update", before, after, None)
    assert entry.changed_fields() == ["tags", "importance"]
    created = ChangeEntry("k", "i", 1, NOW, Actor("llm"), "create", None, before, None)
    assert created.changed_fields() == ["content", "tags", "importance", "scope"]
    shown = redacted_fields({"content": "password=hunter22 记住"})
    assert shown is not None and "hunter22" not in shown["content"]
    assert redacted_fields(None) is None


def _c(key: str, cid: str, importance: int = 5) -> Candidate:
    return Candidate(cid, key, f"memory {cid}", importance, None, NOW.timestamp())


def test_the_block_leaves_out_everything_of_a_paused_partition() -> None:
    rows = BlockRows(
        memos={"a": "memo a", "b": "memo b"},
        loaded=["b", "c"],
        memories=[_c("a", "1"), _c("b", "2"), _c("c", "3")],
        relevant=[_c("b", "2")],
        profile="p",
    )
    kept = without_paused(rows, frozenset({"b"}))
    assert kept.memos == {"a": "memo a"} and kept.loaded == ["c"]
    assert [c.id for c in kept.memories] == ["1", "3"] and kept.relevant == []
    assert without_paused(rows, frozenset()) is rows


def test_select_reports_the_kept_memories_with_their_costs_in_display_order() -> None:
    chosen = select(
        [_c("a", "1", 9), _c("a", "2", 3)],
        budget=1000,
        count=len,
        now=NOW,
        half_life_days=30,
        scope_labels={},
        category_names={},
        relevant=[_c("a", "3", 1)],
    )
    assert [(k.candidate.id, k.relevant) for k in chosen.kept] == [
        ("1", False),
        ("2", False),
        ("3", True),
    ]
    assert [k.line for k in chosen.kept] == chosen.lines + chosen.relevant_lines
    assert sum(k.tokens for k in chosen.kept) == chosen.tokens


def test_the_inspector_builds_the_speaker_the_plugin_builds() -> None:
    group = speaker_for_chat("QQPlatform_Group_30003", "10001")
    assert (group.session_key, group.group_key, group.personal_key, group.user_id) == (
        "QQPlatform_Group_30003",
        "QQPlatform_Group_30003",
        "QQPlatform_Private_10001",
        "10001",
    )
    assert speaker_for_chat("QQPlatform_Group_30003").personal_key == ""
    private = speaker_for_chat("QQPlatform_Private_10001")
    assert (private.personal_key, private.group_key, private.user_id) == (
        "QQPlatform_Private_10001",
        None,
        "10001",
    )
    assert speaker_for_chat("global").session_key == "global"


def test_the_command_parser_knows_pause_and_resume() -> None:
    assert parse_command("pause", in_group=False).kind == "pause"
    parsed = parse_command("resume QQPlatform_Group_1", in_group=True)
    assert (parsed.kind, parsed.sub, parsed.args) == ("pause", "resume", "QQPlatform_Group_1")


def test_a_cli_command_writes_as_the_operator_without_leaking_into_the_process() -> None:
    from amrita_memory_pg.cli.app import run_async

    seen: list[Actor | None] = []

    @run_async
    async def command() -> None:
        seen.append(current_actor())

    command()
    (actor,) = seen
    assert actor is not None and actor.kind == "person" and (actor.id or "").startswith("cli:")
    assert current_actor() is None
