"""The plugin loads under NoneBot, reads its config from NoneBot's, and wires its jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from nonebug import App

from amrita_memory_pg.domain.errors import ConfigError
from tests.support.reference import REFERENCE_TOOLS


async def test_plugin_is_loaded_with_metadata_and_config_class(app: App) -> None:
    import nonebot

    from amrita_memory_pg.integrations.nonebot import PLUGIN
    from amrita_memory_pg.integrations.nonebot.config import Config

    plugin = nonebot.get_plugin_by_module_name(PLUGIN)
    assert plugin is not None
    # hosts list plugins by this id (NoneBot's load log, get_loaded_plugins, AmritaBot)
    assert plugin.id_ == "amrita_memory_pg"
    assert nonebot.get_plugin("amrita_memory_pg") is plugin
    assert plugin.metadata is not None
    assert plugin.metadata.config is Config
    assert plugin.metadata.extra["unique_name"] == "amrita_memory_pg"
    assert nonebot.get_plugin("nonebot_plugin_apscheduler") is not None


async def test_settings_come_from_nonebot_config(app: App, nb_db_dsn: str) -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    assert runtime.settings.database.url == nb_db_dsn
    assert runtime.settings.embedding.protocol == "hash"
    assert runtime.settings.decay.sweep_interval_hours == 12
    assert runtime.settings.llm.model == "stub-model"
    assert runtime.memory is not None
    assert {"read_memo", "append_memo", "update_memo"} <= set(runtime.memory.tools.names())


async def test_sweep_job_is_registered_with_the_configured_interval(app: App) -> None:
    from apscheduler.triggers.interval import IntervalTrigger
    from nonebot_plugin_apscheduler import scheduler

    job = scheduler.get_job("amrita_memory_decay_sweep")
    assert job is not None
    assert isinstance(job.trigger, IntervalTrigger)
    assert job.trigger.interval == timedelta(hours=12)
    assert job.misfire_grace_time == 300


async def test_sweep_job_is_not_registered_when_disabled(app: App) -> None:
    from nonebot_plugin_apscheduler import scheduler

    from amrita_memory_pg.integrations.nonebot.jobs import SWEEP_JOB_ID, register_sweep_job
    from amrita_memory_pg.integrations.nonebot.runtime import Runtime
    from amrita_memory_pg.settings import load_settings

    async def job() -> None:
        return None

    original = scheduler.get_job(SWEEP_JOB_ID)
    assert original is not None
    try:
        for key in ("decay.enabled", "decay.sweep_enabled"):
            off = load_settings(env={}, read_default_files=False, overrides={key: False})
            assert register_sweep_job(scheduler, off, job) is False
            assert scheduler.get_job(SWEEP_JOB_ID) is None
    finally:
        from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

        assert isinstance(runtime, Runtime)
        register_sweep_job(scheduler, runtime.settings, original.func)
    assert scheduler.get_job(SWEEP_JOB_ID) is not None


async def test_a_failing_sweep_is_logged_not_raised(app: App) -> None:
    from amrita_memory_pg.integrations.nonebot.jobs import run_sweep
    from amrita_memory_pg.storage.memories import SweepReport

    async def broken() -> SweepReport:
        raise RuntimeError("database went away")

    assert await run_sweep(broken) is None


def test_driver_config_maps_to_settings_names() -> None:
    from amrita_memory_pg.integrations.nonebot.config import (
        settings_from_driver_config,
        values_from_driver_config,
    )

    values = {
        "superusers": {"1"},
        "amrita_memory_decay": {"enabled": False, "half_life_days": 10.5},
        "amrita_memory_memo_max_chars": 2000,
        "amrita_memory_subconscious": {"target_user_id": 10001, "allowed_tools": ["a"]},
        "embedding_model_url": "http://127.0.0.1:9/x",
        "database_url": "postgresql://u@h/db",
        "unrelated": "x",
    }
    # the decoded values go to Settings as they are (no detour through environment strings)
    assert values_from_driver_config(values) == {
        "decay": {"enabled": False, "half_life_days": 10.5},
        "memo_max_chars": 2000,
        "subconscious": {"target_user_id": 10001, "allowed_tools": ["a"]},
        "embedding": {"model_url": "http://127.0.0.1:9/x"},
        "database": {"url": "postgresql://u@h/db"},
    }
    s = settings_from_driver_config(values, environ={})
    assert s.decay.enabled is False
    assert s.memo_max_chars == 2000
    assert s.subconscious.target_user_id == "10001"
    assert s.database.url == "postgresql://u@h/db"


def test_driver_config_wins_over_the_environment_and_the_toml_file(tmp_path: Path) -> None:
    from amrita_memory_pg.integrations.nonebot.config import settings_from_driver_config

    toml = tmp_path / "config.toml"
    toml.write_text("[decay]\noverfetch = 2\nhalf_life_days = 12.0\n", encoding="utf-8")
    values = {
        "amrita_memory_config": str(toml),
        "embedding_proctol": "hash",
        "amrita_memory_embedding": {"hash_dim": 64},
        "amrita_memory_decay": {"overfetch": 5},
        "llm_api_key": 123456,  # NoneBot decoded a numeric key as a number
    }
    environ = {"EMBEDDING_PROCTOL": "openai", "AMRITA_MEMORY_DECAY__OVERFETCH": "4"}
    s = settings_from_driver_config(values, environ=environ)
    assert s.embedding.protocol == "hash"
    assert s.embedding.hash_dim == 64
    assert s.decay.overfetch == 5
    assert s.decay.half_life_days == 12.0  # from the file named in the driver config
    assert s.llm.api_key.get_secret_value() == "123456"


def test_a_bad_driver_config_value_names_the_env_key_and_the_bound() -> None:
    from amrita_memory_pg.integrations.nonebot.config import settings_from_driver_config

    with pytest.raises(ConfigError) as err:
        settings_from_driver_config({"amrita_memory_decay": {"half_life_days": 0.5}}, environ={})
    message = str(err.value)
    assert "`decay.half_life_days` = 0.5" in message
    assert "environment AMRITA_MEMORY_DECAY__HALF_LIFE_DAYS" in message
    assert "greater than or equal to 1" in message


def test_an_unknown_amrita_memory_key_fails_with_the_settings_message() -> None:
    from amrita_memory_pg.integrations.nonebot.config import settings_from_driver_config

    with pytest.raises(ConfigError, match="AMRITA_MEMORY_DECAY__HALFLIFE"):
        settings_from_driver_config({"amrita_memory_decay": {"halflife": 3}}, environ={})
    with pytest.raises(ConfigError, match="AMRITA_MEMORY_MEMO_MAX"):
        settings_from_driver_config({"amrita_memory_memo_max": 3}, environ={})


def load_in_a_child(module: str, then: str, **config: str) -> subprocess.CompletedProcess[str]:
    """Load ``module`` as a plugin in a fresh NoneBot process (with ``config``), then run
    ``then`` (``p`` is the plugin or None): this session's NoneBot stays as it is."""
    code = (
        "import nonebot;"
        f"nonebot.init(driver='~none', **{config!r});"
        f"p = nonebot.load_plugin({module!r});"
        f"{then}"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_loading_the_plugin_with_an_unknown_key_does_not_load_it(tmp_path: object) -> None:
    out = load_in_a_child(
        "amrita_memory_pg.integrations.nonebot.amrita_memory_pg",
        "print('LOADED' if p else 'REFUSED')",
        amrita_memory_bogus_key="1",
    )
    assert "REFUSED" in out.stdout
    assert "unknown environment variable AMRITA_MEMORY_BOGUS_KEY" in out.stderr + out.stdout


def test_the_former_plugin_path_still_loads_the_plugin_and_says_which_path_to_use() -> None:
    out = load_in_a_child(
        "amrita_memory_pg.integrations.nonebot",
        "print('IDS', sorted(q.id_ for q in nonebot.get_loaded_plugins()))",
    )
    assert "'nonebot:amrita_memory_pg'" in out.stdout, out.stdout + out.stderr
    assert (
        "load the plugin as amrita_memory_pg.integrations.nonebot.amrita_memory_pg"
        in out.stdout + out.stderr
    )


def test_under_amritabot_the_plugin_registers_the_tools_and_memo_hook_with_amrita_core(
    db_dsn: str, tmp_path: Path
) -> None:
    """With amrita-core loaded (as AmritaBot does), start-up hands the tools to amrita-core
    and shutdown takes them back; run in a child process so this session stays Amrita-free."""
    code = f"""
import asyncio, json
import amrita_core  # AmritaBot has loaded it before our plugin starts
import nonebot
nonebot.init(driver="~none", database_url={db_dsn!r}, embedding_proctol="hash",
             amrita_memory_data_dir={str(tmp_path)!r})
nonebot.load_plugin("amrita_memory_pg.integrations.nonebot.amrita_memory_pg")
from amrita_core.tools.manager import ToolsManager
from amrita_sense.hook.matcher import EventRegistry

def state():
    handlers = EventRegistry().get_handlers("BEFORE_COMPLETION")
    return {{"tools": sorted(n for n in {REFERENCE_TOOLS!r} if ToolsManager().has_tool(n)),
            "priorities": sorted(p for p, fs in handlers.items()
                                 if any(f.function.__name__ == "amrita_memory_pg_inject_memo"
                                        for f in fs))}}

async def main():
    lifespan = nonebot.get_driver()._lifespan
    await lifespan.startup()
    up = state()
    await lifespan.shutdown()
    print("STATE", json.dumps({{"up": up, "down": state()}}))

asyncio.run(main())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, check=False
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("STATE ")), None)
    assert line is not None, out.stdout[-2000:] + out.stderr[-4000:]
    result = json.loads(line.removeprefix("STATE "))
    assert result["up"] == {"tools": sorted(REFERENCE_TOOLS), "priorities": [15]}
    assert result["down"] == {"tools": [], "priorities": []}


def test_the_cli_reads_a_bots_env_files_as_nonebot_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NoneBot's own Env/Config over .env + .env.<ENVIRONMENT> and the
    process environment give the plugin the same settings the CLI builds in that folder."""
    from nonebot.config import Config as NoneBotConfig
    from nonebot.config import Env

    from amrita_memory_pg.integrations.nonebot.config import settings_from_driver_config
    from amrita_memory_pg.settings.bot import read_bot_env

    (tmp_path / ".env").write_text(
        "ENVIRONMENT=dev\nEMBEDDING_PROCTOL=openai\nEMBEDDING_MODEL_NAME=from-base-env\n",
        encoding="utf-8",
    )
    (tmp_path / ".env.dev").write_text(
        "EMBEDDING_MODEL_NAME=text-embedding-3-small\n"
        "EMBEDDING_MODEL_URL=http://127.0.0.1:9/v1\n"
        "amrita_memory_embedding__hash_dim=256\n"
        "AMRITA_MEMORY_DECAY__HALF_LIFE_DAYS=12.5\n"
        "AMRITA_MEMORY_PER_SESSION_MEMORY_LIMIT=77\n",
        encoding="utf-8",
    )
    for name in list(os.environ):
        if name.upper().startswith(("AMRITA_MEMORY_", "EMBEDDING_", "ENVIRONMENT")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EMBEDDING_MODEL_URL", "http://127.0.0.1:10/v1")  # process wins
    monkeypatch.chdir(tmp_path)
    env = Env()
    nonebot_config = NoneBotConfig(_env_file=(".env", f".env.{env.environment}"))  # type: ignore[call-arg]
    plugin = settings_from_driver_config(nonebot_config.model_dump(), environ=dict(os.environ))
    cli = settings_from_driver_config(
        read_bot_env(tmp_path, os.environ).values, environ=dict(os.environ)
    )
    assert plugin.embedding.model_name == "text-embedding-3-small"
    assert plugin.embedding.model_url == "http://127.0.0.1:10/v1"
    assert cli.embedding == plugin.embedding
    assert cli.decay == plugin.decay and cli.decay.half_life_days == 12.5
    assert cli.per_session_memory_limit == plugin.per_session_memory_limit == 77


async def test_the_scheduled_backup_tick_is_registered_only_with_a_schedule(app: App) -> None:
    """`[backup] schedule` adds an interval tick every `check_minutes`; a failing
    tick is logged, never raised (the job's outer edge)."""
    from nonebot_plugin_apscheduler import scheduler

    from amrita_memory_pg.integrations.nonebot.jobs import (
        BACKUP_JOB_ID,
        register_backup_job,
        run_backup_tick,
    )
    from amrita_memory_pg.settings import load_settings

    async def job() -> None:
        return None

    try:
        on = load_settings(
            env={},
            read_default_files=False,
            overrides={"backup.schedule": "daily@03:00", "backup.check_minutes": 7},
        )
        assert register_backup_job(scheduler, on, job) is True
        registered = scheduler.get_job(BACKUP_JOB_ID)
        assert registered is not None and registered.trigger.interval.total_seconds() == 7 * 60
        off = load_settings(env={}, read_default_files=False, overrides={})
        assert register_backup_job(scheduler, off, job) is False
        assert scheduler.get_job(BACKUP_JOB_ID) is None
    finally:
        if scheduler.get_job(BACKUP_JOB_ID) is not None:
            scheduler.remove_job(BACKUP_JOB_ID)

    async def failing() -> None:
        raise RuntimeError("disk full")

    assert await run_backup_tick(failing) is None
