"""Which tools each audience is offered, and how the service builds their registries.

The chat LLM and the background consolidation (L3) loop see different tools with
different rights: the chat may write a memory for the speaker, the loop merges,
calibrates and distils across a partition. Each audience gets its own
:class:`~amrita_memory_pg.tools.registry.ToolRegistry`, filled from the toolsets listed
for it in :data:`TOOLSETS`; :class:`~amrita_memory_pg.memory.Memory` composes the ones
its settings call for (:func:`audiences_for`) instead of hard-wiring a tool list. A new
tool family is one toolset function and one line in the table.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.services.bot_memories import BotMemories
from amrita_memory_pg.services.consolidation import ITER_STOP, LoopDeps
from amrita_memory_pg.services.knowledge import KnowledgeService
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.memos import MemoRepository
from amrita_memory_pg.storage.pg.session import pinned
from amrita_memory_pg.tools.consolidation import LoopTools, register_loop_tools
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.knowledge import register_knowledge_tools
from amrita_memory_pg.tools.loop_batch import LoopBatch
from amrita_memory_pg.tools.loop_common import loop_paused
from amrita_memory_pg.tools.loop_rederive import LoopRederive
from amrita_memory_pg.tools.memo import register_memo_tools
from amrita_memory_pg.tools.memory import register_forget_tool, register_memory_tools
from amrita_memory_pg.tools.profile import register_profile_loop_tools, register_profile_tools
from amrita_memory_pg.tools.registry import Audience, Tool, ToolRegistry, declared, not_offered
from amrita_memory_pg.tools.scopes import register_scope_tools
from amrita_memory_pg.usecases.forgetting import ForgetCases
from amrita_memory_pg.usecases.knowledge import KnowledgeCases
from amrita_memory_pg.usecases.memories import MemoryCases
from amrita_memory_pg.usecases.memos import MemoCases
from amrita_memory_pg.usecases.pause import PauseGate
from amrita_memory_pg.usecases.pause import pause_gate as trail_gate
from amrita_memory_pg.usecases.profiles import ProfileCases

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolDeps:
    """What the toolsets are built on: the repositories and the settings."""

    memories: MemoryService
    memos: MemoRepository
    settings: Settings
    profiles: ProfileService
    knowledge: KnowledgeService
    #: the memory block and the scopes a chat loads
    bot_memories: BotMemories
    #: the L3 loop's store, prompts, model and hooks (None: no consolidation audience)
    loop: LoopDeps | None = None
    #: deletes with their cascade, forgets (None: plain deletes, no forget tool)
    forgetting: ForgetCases | None = None


#: Declares a family of tools on a registry.
Toolset = Callable[[ToolRegistry, ToolDeps], object]


def pause_gate(deps: ToolDeps) -> PauseGate:
    """The pause check of every automatic tool (the trail's; none without a trail)."""
    return trail_gate(deps.memories.trail)


def memory_cases(deps: ToolDeps) -> MemoryCases:
    return MemoryCases(deps.memories, pause_gate(deps))


def memo_cases(deps: ToolDeps) -> MemoCases:
    return MemoCases(deps.memos, pause_gate(deps))


def memory_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """write/read/update/delete/list_memory (L2)."""
    register_memory_tools(registry, memory_cases(deps), deps.settings, deps.forgetting)


def forget_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """forget_memory: a fact and everything derived from it, when asked in the chat."""
    if deps.forgetting is not None:
        register_forget_tool(registry, memory_cases(deps), deps.settings, deps.forgetting)


def scope_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """memory_load_context / memory_unload_context."""
    register_scope_tools(registry, deps.bot_memories, memory_cases(deps))


def memo_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """read/append/update_memo (L1)."""
    register_memo_tools(registry, memo_cases(deps), deps.settings)


def loop_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """The loop's tools 1–11 and 19 of reference §8.8, and its memo tools (D4)."""
    if deps.loop is not None:
        register_loop_tools(
            registry, memory_cases(deps), memo_cases(deps), deps.loop, deps.settings
        )


def loop_batch_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """subconscious_batch_edit: a cycle's edits in one call and one transaction, planned
    by the single tools' own planners (offered when ``batch_edits``)."""
    if deps.loop is None:
        return
    sub = deps.settings.subconscious
    pool = deps.memories.repo.pool
    batch = LoopBatch(
        LoopTools(memory_cases(deps), memo_cases(deps), deps.loop),
        ProfileCases(deps.profiles, pause_gate(deps)),
        lambda: pinned(pool),
        memo_ops=sub.enable_memory_compress,
    )
    tool = declared(batch.batch_edit)
    if not sub.batch_edits:
        tool = dataclasses.replace(tool, offer=not_offered)
    registry.register(tool)


def profile_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """read_profile: the speaker's own profile (§4.11)."""
    register_profile_tools(registry, ProfileCases(deps.profiles, pause_gate(deps)))


def profile_loop_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """subconscious_get_profile / subconscious_update_profile (§8.8 items 20–21)."""
    register_profile_loop_tools(
        registry,
        ProfileCases(deps.profiles, pause_gate(deps)),
        batched=deps.settings.subconscious.batch_edits and deps.loop is not None,
    )


def rederive_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """subconscious_rederive: write again what a delete, forget or change withheld."""
    if deps.loop is not None and deps.forgetting is not None:
        rederive = LoopRederive(
            deps.forgetting.lineage,
            memory_cases(deps),
            memo_cases(deps),
            ProfileCases(deps.profiles, pause_gate(deps)),
            KnowledgeCases(deps.knowledge),
        )
        registry.register(declared(rederive.rederive))


def knowledge_chat_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """knowledge_list/read/search (permission-gated, reference names as aliases) + knowledge_suggest."""
    register_knowledge_tools(registry, None, KnowledgeCases(deps.knowledge, pause_gate(deps)))


def knowledge_loop_toolset(registry: ToolRegistry, deps: ToolDeps) -> None:
    """subconscious_knowledge_list/read/create/update/delete/search + subconscious_read_suggestions."""
    register_knowledge_tools(None, registry, KnowledgeCases(deps.knowledge))


TOOLSETS: Mapping[Audience, tuple[Toolset, ...]] = {
    # In this order: the schemas the chat LLM is shown are pinned (tests/contract/snapshots).
    "chat": (
        memory_toolset,
        memo_toolset,
        knowledge_chat_toolset,
        profile_toolset,
        scope_toolset,
        forget_toolset,
    ),
    # The L3 loop's tools (§8.8): the batch first (the one edit tool a cycle is offered),
    # its own (loop), the knowledge base's (12–18), the profile's, the re-derivation.
    "consolidation": (
        loop_batch_toolset,
        loop_toolset,
        knowledge_loop_toolset,
        profile_loop_toolset,
        rederive_toolset,
    ),
}


def audiences_for(settings: Settings) -> tuple[Audience, ...]:
    """The chat always; the consolidation loop only where it is enabled."""
    return ("chat", "consolidation") if settings.subconscious.enabled else ("chat",)


def build_registry(audience: Audience, deps: ToolDeps) -> ToolRegistry:
    """One audience's registry with every toolset listed for it."""
    registry = ToolRegistry(audience)
    for toolset in TOOLSETS[audience]:
        toolset(registry, deps)
    if audience == "consolidation":
        # A paused target is neither read nor written: every tool checks first, but the
        # stop (it reads and writes nothing of the target, and ends the cycle).
        registry.gate = pause_gate(deps).check
        registry.ungated = frozenset({ITER_STOP})
        registry.on_paused = loop_paused
    return registry


def compose_registries(
    deps: ToolDeps, audiences: Iterable[Audience]
) -> dict[Audience, ToolRegistry]:
    """A registry for each audience asked for; the loop borrows its ``allowed_tools``."""
    registries = {audience: build_registry(audience, deps) for audience in audiences}
    if "consolidation" in registries:
        chat = registries.get("chat") or build_registry("chat", deps)
        borrow_chat_tools(
            registries["consolidation"], chat, deps.settings.subconscious.allowed_tools
        )
    return registries


_TARGET = re.compile(
    r"^(?:(?P<prefix>[A-Za-z0-9]+)_)?(?P<kind>Private|Group|user|group)_(?P<id>.+)$"
)


def target_context(ctx: ToolContext) -> ToolContext:
    """The chat context whose partitions are the cycle's target: a borrowed chat tool
    run by the loop acts as if the target user (or, for a group target, a member of
    that group) had called it."""
    if ctx.cycle is None:
        raise ToolError("这个工具只在后台整理循环（L3）中可用")
    key = ctx.cycle.target_key
    match = _TARGET.match(key)
    if match is None:
        raise ToolError(f"无法从目标 {key} 得出聊天上下文")
    prefix = match.group("prefix") or "QQPlatform"
    platform = "qq" if prefix == "QQPlatform" else prefix.removesuffix("Platform")
    if match.group("kind") in ("Group", "group"):
        return ToolContext(platform=platform, user_id="subconscious", group_id=match.group("id"))
    return ToolContext(platform=platform, user_id=match.group("id"))


def borrow_chat_tools(loop: ToolRegistry, chat: ToolRegistry, names: Iterable[str]) -> list[str]:
    """Add the chat tools named in ``[subconscious] allowed_tools`` to the loop's
    registry, run in the target's context (:func:`target_context`). Only read-only ones:
    the loop writes through its own tools, which protect ``source=user`` memories; a
    writing one is warned about once, here. A name that is not one of our chat tools may
    be a host's tool, lent later (``Memory.lend_loop_tool``): the integrations warn about
    the names still unknown once the host's are lent (``Memory.check_allowed_tools``).
    Returns the names borrowed."""
    borrowed: list[str] = []
    for name in dict.fromkeys(names):
        tool = chat.get(name)
        if tool is None:
            continue
        if not tool.read_only:
            log.warning(
                "[subconscious] allowed_tools: %r changes data; the loop writes only through "
                "its own tools (they protect source=user memories), so it is not added",
                name,
            )
            continue
        if loop.get(name) is not None:
            continue
        loop.register(dataclasses.replace(tool, handler=_in_target(tool)))
        borrowed.append(name)
    return borrowed


def _in_target(tool: Tool[Any]) -> Callable[[Any, ToolContext], Any]:
    async def handler(args: Any, ctx: ToolContext) -> dict[str, Any]:
        return await tool.handler(args, target_context(ctx))

    return handler
