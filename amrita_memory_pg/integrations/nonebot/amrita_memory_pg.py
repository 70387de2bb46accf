"""NoneBot2 plugin ``amrita_memory_pg``: ``/memory`` commands, memo tools, chat hooks and the
decay sweep.

Load it with ``nonebot.load_plugin("amrita_memory_pg.integrations.nonebot.amrita_memory_pg")``
(or list that module in AmritaBot's ``[tool.amrita] plugins``): NoneBot names a plugin after
the last part of its module path, so hosts list it as ``amrita_memory_pg``. Settings
come from NoneBot's config (``.env``) with the ``AMRITA_MEMORY_`` prefix (plus the
reference's ``EMBEDDING_*``, ``DATABASE_URL``, ``LLM_*`` names) on top of the process
environment; an unknown ``AMRITA_MEMORY_*`` key stops the plugin from loading with one
sentence naming it. Under AmritaBot (amrita-core in the process) start-up also
registers the chat tools and the memo hook with amrita-core (:mod:`.amritabot`).
"""

from __future__ import annotations

import logging
from typing import Any

from nonebot import get_driver, get_plugin, on_command, on_message, require
from nonebot.adapters import Bot, Event, Message
from nonebot.log import LoguruHandler
from nonebot.params import CommandArg
from nonebot.plugin import PluginMetadata

require("nonebot_plugin_apscheduler")

from nonebot_plugin_apscheduler import scheduler  # noqa: E402

from amrita_memory_pg.commands.memory_command import (  # noqa: E402
    DMN_SUBS,
    KNOWLEDGE_SUBS,
    TextReply,
)
from amrita_memory_pg.domain.errors import NotReady  # noqa: E402
from amrita_memory_pg.integrations.nonebot.amritabot import install_into_amrita  # noqa: E402
from amrita_memory_pg.integrations.nonebot.config import (  # noqa: E402
    Config,
    settings_from_driver_config,
)
from amrita_memory_pg.integrations.nonebot.context import tool_context  # noqa: E402
from amrita_memory_pg.integrations.nonebot.hooks import (  # noqa: E402
    deliver_pending,
    record_incoming,
    record_outgoing,
)
from amrita_memory_pg.integrations.nonebot.jobs import (  # noqa: E402
    SESSION_JOB_ID,
    L3Jobs,
    register_backup_job,
    register_session_job,
    register_sweep_job,
    run_backup_tick,
    run_session_job,
    run_sweep,
)
from amrita_memory_pg.integrations.nonebot.membership import onebot_membership  # noqa: E402
from amrita_memory_pg.integrations.nonebot.responder import (  # noqa: E402
    amrita_present,
    register_responder,
    responder_enabled,
)
from amrita_memory_pg.integrations.nonebot.runtime import Runtime  # noqa: E402
from amrita_memory_pg.integrations.nonebot.send import send_private, send_reply  # noqa: E402
from amrita_memory_pg.integrations.nonebot.web import (  # noqa: E402
    mount_admin,
    mount_observability,
)
from amrita_memory_pg.logs import use_json_logs  # noqa: E402
from amrita_memory_pg.maintenance.scheduled import run_scheduled_backup  # noqa: E402
from amrita_memory_pg.memory import Memory  # noqa: E402
from amrita_memory_pg.services.scheduling import runner_not_built  # noqa: E402

__plugin_meta__ = PluginMetadata(
    name="Amrita长期记忆（PostgreSQL）",
    description="长期记忆、备忘录与潜意识调度，全部状态存于 PostgreSQL + pgvector",
    usage="/memory (user|group|global) (list|search|delete|add|clear) [参数]；/memory memo|extract|profile|knowledge，别名 /记忆",
    type="application",
    homepage=None,
    config=Config,
    supported_adapters=None,
    extra={"unique_name": "amrita_memory_pg", "menu_name": "记忆管理"},
)

log = logging.getLogger(__name__)
driver = get_driver()
# Fails here, at load time, on an unknown AMRITA_MEMORY_* key (ConfigError names it).
settings = settings_from_driver_config(driver.config.model_dump())
# Our modules log through the stdlib; show those lines in NoneBot's (loguru) output, or
# as JSON lines on stderr with [observability] json_logs.
_core_logger = logging.getLogger("amrita_memory_pg")
_core_logger.setLevel(logging.INFO)
if settings.observability.json_logs:
    use_json_logs(_core_logger)
    _core_logger.propagate = False
elif not any(isinstance(h, LoguruHandler) for h in _core_logger.handlers):
    _core_logger.addHandler(LoguruHandler())
runtime = Runtime(settings)
#: whether the admin web page is mounted on the driver's FastAPI app ([web] enabled)
admin_mounted = mount_admin(settings, runtime)
#: whether /metrics and /health are served on the driver's app ([observability])
observability_mounted = mount_observability(settings, runtime)
runtime.watch_jobs = not admin_mounted
#: the AmritaBot registration (tools + memo hook), when AmritaBot runs in this process
amrita_installation: Any = None


@driver.on_startup
async def _startup() -> None:
    global amrita_installation
    if get_plugin("amrita_plugin_memory") is not None:
        log.warning("amrita_plugin_memory is loaded too: both answer /memory; unload one of them")
    await runtime.start()
    memory = runtime.memory
    if memory is not None:

        async def _sweep_job() -> None:
            current = runtime.memory
            if current is not None:
                await run_sweep(current.scheduled_sweep)

        register_sweep_job(scheduler, settings, _sweep_job)

        async def _session_job() -> None:
            current = runtime.memory
            if current is not None:
                await run_session_job(current.extractor.run_expired)
                await retry_proactive(current)

        register_session_job(scheduler, settings, _session_job)

        async def _backup_job() -> None:
            current = runtime.memory
            if current is not None:
                await run_backup_tick(lambda: run_scheduled_backup(current.store))

        register_backup_job(scheduler, settings, _backup_job)
        # memory_load_context asks QQ whether the speaker is in the group
        membership = memory.bot_memories.membership
        membership.check = onebot_membership(membership.check)
        membership.source = "onebot"
        # The L3 loop's proactive messages go out at once as QQ private messages.
        memory.private_send = send_private
        await start_l3(memory)
        if amrita_present():
            amrita_installation = install_into_amrita(runtime)
        # after AmritaBot's tools are lent: a name still unknown is a mistake
        memory.check_allowed_tools()
        if memory.consolidator is not None:
            log.info("L3 loop model: %s", await memory.loop_model_label())


async def retry_proactive(memory: Memory) -> None:
    """Retry the proactive messages whose send failed (every session-job interval)."""
    for target in memory.scheduling.targets:
        try:
            await memory.send_pending(target)
        except Exception:  # a job's outer edge
            log.exception("retrying the proactive messages of %s failed", target)


async def start_l3(memory: Memory) -> None:
    """One cycle job per target, restored from the stored state (W17). Without a cycle
    runner set on ``memory.scheduling`` (the L3 loop sets it), cycles fail with «L3
    runner not built yet» but are still planned, counted and rescheduled."""
    if not memory.scheduling.enabled:
        return
    if memory.scheduling.runner is None:
        memory.scheduling.runner = runner_not_built
    jobs = L3Jobs(scheduler, memory.scheduling)
    runtime.l3_jobs = jobs
    try:
        runs = await jobs.restore()
    except Exception:  # start-up's outer edge: the next message plans again
        log.exception("restoring the L3 schedule failed")
        return
    log.info(
        "L3 scheduler: %d target(s), %d run(s) restored", len(memory.scheduling.targets), len(runs)
    )


@driver.on_shutdown
async def _shutdown() -> None:
    global amrita_installation
    if runtime.l3_jobs is not None:
        runtime.l3_jobs.remove_all()
    if amrita_installation is not None:
        amrita_installation.uninstall()
        amrita_installation = None
    runtime.l3_counts_completions = False
    if scheduler.get_job("amrita_memory_decay_sweep") is not None:
        scheduler.remove_job("amrita_memory_decay_sweep")
    if scheduler.get_job(SESSION_JOB_ID) is not None:
        scheduler.remove_job(SESSION_JOB_ID)
    await runtime.stop()


# Priority 1 and non-blocking: it sees every message before a chat plugin can block it,
# and lets every message through; a failed write only logs.
message_hook = on_message(priority=1, block=False)


@message_hook.handle()
async def _record(bot: Bot, event: Event) -> None:
    await record_incoming(runtime, bot, event)
    if event.get_type() == "message":
        await deliver_pending(runtime, bot, event)


@Bot.on_called_api
async def _record_sent(
    bot: Bot, exception: Exception | None, api: str, data: dict[str, object], result: object
) -> None:
    await record_outgoing(runtime, bot, exception, api, dict(data))


memory_command = on_command("memory", aliases={"记忆"}, priority=5, block=True)


@memory_command.handle()
async def _memory(
    bot: Bot,
    event: Event,
    args: Message[Any] = CommandArg(),  # noqa: B008 (NoneBot's dependency injection)
) -> None:
    text = args.extract_plain_text()
    parts = text.split(maxsplit=1)
    sub = parts[0].lower() if parts else ""
    try:
        command = runtime.command()
        ctx = await tool_context(bot, event, check_liteperm=sub in DMN_SUBS | KNOWLEDGE_SUBS)
        reply = await command.run(ctx, text)
    except NotReady as exc:
        reply = TextReply(f"记忆服务未就绪：{exc}")
    except Exception as exc:  # the command's outer edge
        log.exception("/memory %s failed", text)
        reply = TextReply(f"记忆命令失败: {exc}")
    try:
        await send_reply(bot, event, reply)
    except Exception:
        log.exception("sending the /memory reply failed")


chat_responder = register_responder(runtime) if responder_enabled(settings) else None
