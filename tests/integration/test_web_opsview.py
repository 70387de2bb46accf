"""The operations pages' data on a real store: knowledge + suggestion accept/reject,
profiles + history + revert, L3 runs + next window + heatmap, status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from amrita_memory_pg.domain.errors import (
    EmbeddingError,
    KnowledgeError,
    KnowledgeNotFound,
    ProfileRefused,
)
from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit
from amrita_memory_pg.maintenance.backup import create_backup
from amrita_memory_pg.maintenance.health import ENGLISH
from amrita_memory_pg.maintenance.status import describe_sweep, render_status
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.web import opsview
from tests.support.memory import add_knowledge, memory_on

USER = "QQPlatform_Private_10001"


async def _suggest(mem: Memory, **kw: str) -> int:
    values = {"title": "猫的饮食", "summary": "猫不能吃巧克力", "body": "- 巧克力\n- 洋葱"}
    values.update(kw)
    action = "update" if "kid" in kw else "create"
    sid, _pending = await mem.knowledge.suggest(author_id="10001", action=action, **values)  # type: ignore[arg-type]
    return sid


async def test_knowledge_page_and_suggestions_accepted_and_rejected(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await add_knowledge(mem, "0000000a", "咖啡", "烘焙与萃取", "旧正文")
        create = await _suggest(mem)
        update = await _suggest(mem, kid="0000000a", title="咖啡", summary="咖啡因", body="新正文")
        dropped = await _suggest(mem, title="垃圾", summary="不要")
        page = await opsview.knowledge_page(mem)
        assert [e.kid for e in page.entries] == ["0000000a"]
        assert page.pending_total == 3
        assert [(s.id, s.status) for s in page.suggestions] == [
            (create, "pending"),
            (update, "pending"),
            (dropped, "pending"),
        ]
        view = await opsview.suggestion_view(mem, str(update))
        assert view.suggestion.body == "新正文"
        assert view.current is not None and view.current.body == "旧正文"

        written = await mem.knowledge.accept_suggestion(create)
        entry = await opsview.knowledge_entry(mem, written.kid)
        assert (entry.title, entry.body) == ("猫的饮食", "- 巧克力\n- 洋葱")
        await mem.knowledge.accept_suggestion(update)
        assert (await mem.knowledge.get("0000000a")).body == "新正文"
        await mem.knowledge.reject_suggestion(dropped)
        after = await opsview.knowledge_page(mem)
        assert after.pending_total == 0
        assert sorted(e.title for e in after.entries) == ["咖啡", "猫的饮食"]
        assert (await mem.knowledge.suggestion(dropped)).status == "done"
        # handled once: a second accept/reject is refused and writes nothing
        with pytest.raises(KnowledgeError, match="已处理过"):
            await mem.knowledge.accept_suggestion(create)
        with pytest.raises(KnowledgeError, match="不存在"):
            await mem.knowledge.reject_suggestion(999999)
        for bad in ("abc", "-3", "0"):
            with pytest.raises(KnowledgeError, match="suggestion id"):
                await opsview.suggestion_view(mem, bad)
        assert len(await mem.knowledge.entries()) == 2


async def test_a_claimed_suggestion_is_left_to_its_cycle(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        sid = await _suggest(mem)
        await mem.knowledge.claim_suggestions(cycle_id=7)
        for handle in (mem.knowledge.accept_suggestion, mem.knowledge.reject_suggestion):
            with pytest.raises(KnowledgeError, match="L3 周期"):
                await handle(sid)
        assert await mem.knowledge.entries() == []
        assert (await mem.knowledge.suggestion(sid)).status == "claimed"


async def test_accept_whose_write_fails_leaves_the_suggestion_pending(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await add_knowledge(mem, "0000000f", "t", "s")
        sid = await _suggest(mem, kid="0000000f")  # names an entry ...
        await mem.knowledge.delete("0000000f")  # ... deleted before the accept
        with pytest.raises(KnowledgeNotFound):
            await mem.knowledge.accept_suggestion(sid)
        assert (await mem.knowledge.suggestion(sid)).status == "pending"


async def test_accept_while_the_embedder_is_down_writes_nothing(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=16, fail_always=503) as stub:
        async with memory_on(db_dsn, tmp_path) as mem:
            sid = await _suggest(mem)
        async with memory_on(
            db_dsn,
            tmp_path,
            embedding__protocol="ollama-embed",
            embedding__model_url=stub.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=0,
        ) as down:
            with pytest.raises(EmbeddingError):
                await down.knowledge.accept_suggestion(sid)
            assert await down.knowledge.entries() == []
            assert (await down.knowledge.suggestion(sid)).status == "pending"


async def test_profiles_list_detail_and_revert_by_a_web_operator(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        chat = ProfileActor(kind="chat", who="10001")
        await mem.profiles.edit(USER, ProfileEdit("爱猫的人", ("喜欢猫",)), chat)
        await mem.profiles.edit(USER, ProfileEdit("爱猫的人", ("讨厌雨",)), chat)
        await mem.profiles.edit("QQPlatform_Private_20002", ProfileEdit("s", ("x",)), chat)
        page = await opsview.profiles_page(mem)
        assert page.total == 2 and page.pages == 1
        assert {p.partition_key for p in page.profiles} == {USER, "QQPlatform_Private_20002"}
        detail = await opsview.profile_detail(mem, "10001", version="1")
        assert detail.partition_key == USER
        assert detail.profile.lines == ("喜欢猫", "讨厌雨")
        assert [c.version for c in detail.history] == [2, 1]
        assert detail.selected is not None and detail.selected.new_lines == ("喜欢猫",)

        update = await opsview.revert_profile(mem, USER, "1", who="alice")
        assert update.changed and update.profile.lines == ("喜欢猫",)
        newest = (await mem.profiles.history(USER, 1))[0]
        assert (newest.actor_kind, newest.actor, newest.operation) == (
            "cli",
            "web:alice",
            "revert to v1",
        )
        for key, version, message in [
            ("QQPlatform_Group_777", "1", "不是用户"),
            (USER, "x1", "version"),
            (USER, "-1", "负数"),
            (USER, "9", "没有 v9"),
        ]:
            with pytest.raises(ProfileRefused, match=message):
                await opsview.revert_profile(mem, key, version, who="alice")
        assert (await mem.profiles.get(USER)).version == 3


async def test_l3_page_runs_next_window_and_heatmap(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(
        db_dsn,
        tmp_path,
        subconscious__enabled=True,
        subconscious__target_user_id="10001",
        subconscious__idle_timezone="Asia/Shanghai",
    ) as mem:
        start = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)  # a Monday, 20:00 in Shanghai
        for day in range(8):
            for minutes in (0, 30, 60):
                moment = start + timedelta(days=day, minutes=minutes)
                await mem.scheduling.on_user_message(USER, None, moment)
        store = mem.consolidation
        ok = await store.start_cycle(USER, trigger="scheduled", now=start, dry_run=False)
        await store.record_usage(
            USER, ok, purpose="step", model="m", prompt_tokens=120, completion_tokens=30, now=start
        )
        await store.finish_cycle(
            USER, ok, now=start + timedelta(minutes=2), ok=True, error=None,
            iterations=2, tool_calls=3, memories_changed=1, summary="合并了两条",
        )  # fmt: skip
        failed = await store.start_cycle(
            "QQPlatform_Group_777", trigger="manual", now=start + timedelta(hours=1), dry_run=False
        )
        await store.finish_cycle(
            "QQPlatform_Group_777", failed, now=start + timedelta(hours=1, minutes=1), ok=False,
            error="LLM timeout", iterations=1, tool_calls=0, memories_changed=0, summary=None,
        )  # fmt: skip

        now = start + timedelta(days=8, hours=2)
        page = await opsview.l3_page(mem, now)
        assert page.enabled and page.timezone == "Asia/Shanghai"
        assert page.runs_total == 2
        assert [(r.target_key, r.outcome) for r in page.runs] == [
            ("QQPlatform_Group_777", "failed"),
            (USER, "ok"),
        ]
        run = page.runs[1]
        assert (run.tool_calls, run.prompt_tokens, run.completion_tokens) == (3, 120, 30)
        (target,) = page.targets
        assert target.target_key == USER and target.source == "planner"
        assert target.plan is not None and target.next_run_at is not None
        assert len(target.grid) == 7 and all(len(row) == 12 for row in target.grid)
        # the messages fell on 20:00-22:00 Shanghai time (slot 10), every weekday
        busiest = max((c for row in target.grid for c in row), key=lambda c: c.value)
        assert busiest.slot == 10 and busiest.level == opsview.HEAT_LEVELS - 1
        assert sum(c.planned for row in target.grid for c in row) >= 1
        assert not any(c.planned and c.slot == 10 for row in target.grid for c in row)

        only = await opsview.l3_page(mem, now, target="QQPlatform_Group_777")
        assert only.runs_total == 1 and only.runs[0].error == "LLM timeout"


async def test_l3_page_before_any_l3_message_shows_raw_activity(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(
        db_dsn, tmp_path, subconscious__enabled=True, subconscious__target_user_id="10001"
    ) as mem:
        moment = datetime(2026, 11, 3, 1, 0, tzinfo=UTC)
        await mem.activity.record_user_message(
            session_key=USER, user_key=USER, user_id="10001", group_id=None, text="hi", now=moment
        )
        view = await opsview.target_view(mem, USER, moment)
        assert view.source == "activity" and view.state is None and view.plan is None
        assert sum(c.value for row in view.grid for c in row) == 1
    async with memory_on(db_dsn, tmp_path) as off:
        page = await opsview.l3_page(off, moment)
        assert not page.enabled and page.targets == [] and page.runs_total == 0


async def test_status_report_carries_revision_fingerprint_backups_and_sweep_cursor(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(partition_key=USER, scope="user", content="一条记忆")
        report = await opsview.status_report(mem)
        assert report.revision == report.head
        assert report.fingerprint is not None and report.counts["memories"] == 1
        assert report.backups == [] and report.sweep is not None
        assert (report.sweep.cursor, report.sweep.passes) == ("", 0)
        assert "sweep:       not run yet" in render_status(report, ENGLISH)
        await mem.memories.sweep()
        await create_backup(mem.store)
        report = await opsview.status_report(mem)
        assert len(report.backups) == 1
        assert report.sweep is not None and report.sweep.passes >= 1
        assert describe_sweep(report.sweep) in render_status(report, ENGLISH)
