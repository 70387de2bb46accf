"""Under AmritaBot: hand our chat tools and memo hook to amrita-core.

This is what makes the NoneBot plugin a drop-in for amrita_plugin_memory: when AmritaBot
runs in the process (:func:`amrita_present`), the plugin's start-up registers the same
tool names in amrita-core's global ``ToolsManager``, the L3 trigger (priority 10: the
target's completions, as the reference counted them) and the memo injection in its
pre-completion hook (``amrita_memory_pg.integrations.amrita``), all backed by the
plugin's one open :class:`Memory`. Failures only log: the bot and ``/memory`` go on.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.integrations.nonebot.context import liteperm_roles
from amrita_memory_pg.integrations.nonebot.runtime import Runtime
from amrita_memory_pg.services.scheduling import ScheduledRun
from amrita_memory_pg.tools.context import ToolContext

if TYPE_CHECKING:
    from amrita_memory_pg.integrations.amrita import Installation

log = logging.getLogger(__name__)


async def _liteperm(chat_object: Any, ctx: ToolContext) -> ToolContext:
    """The speaker's LitePerm nodes (lp.admin, memory.knowledge) added to their roles,
    for the knowledge reads; without LitePerm or an event, the context as it was."""
    from amrita_memory_pg.integrations.amrita.context import chat_event

    event = chat_event(chat_object)
    if event is None:
        return ctx
    extra = await liteperm_roles(event)
    return replace(ctx, roles=ctx.roles | extra) if extra else ctx


def install_into_amrita(runtime: Runtime) -> Installation | None:
    """Register the tools and the memo hook with amrita-core; None when not done."""
    memory = runtime.memory
    if memory is None:
        return None
    try:
        from amrita_memory_pg.integrations.amrita import install
    except ImportError as exc:
        log.warning(
            "AmritaBot found but amrita-core is not importable (%s); "
            "pip install 'amrita-memory-pg[amrita]'",
            exc,
        )
        return None

    def schedule(runs: list[ScheduledRun]) -> None:
        if runtime.l3_jobs is not None:
            runtime.l3_jobs.schedule(runs)

    try:
        installation = install(
            lambda: runtime.memory,
            schemas=memory.tool_schemas(),
            enrich=_liteperm,
            l3_trigger=True,
            schedule=schedule,
            host_model=False,  # below, on the open Memory
        )
    except ConfigError as exc:
        log.warning("memory tools not registered with AmritaBot: %s", exc)
        return None
    # The L3 trigger now counts AmritaBot's completions (reference §8.2), not messages.
    runtime.l3_counts_completions = True
    # The L3 templates' character_prompt: AmritaBot's persona unless one is configured.
    memory.prompts.host_persona = installation.persona
    # The L3 loop on AmritaBot's model preset unless [subconscious] llm_* overrides it.
    from amrita_memory_pg.integrations.amrita.adapter import lend_host_tools, use_host_model

    use_host_model(memory)
    # [subconscious] allowed_tools naming other plugins' tools: lent to the loop.
    lend_host_tools(memory)
    log.info("memory tools and memo hook registered with AmritaBot (amrita-core)")
    return installation
