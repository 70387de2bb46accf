"""``Memory``: the composed product — repositories, services and the chat tools on one store.

Adapters (the NoneBot plugin, the AmritaBot adapter, users' own code) use exactly this,
opened by :func:`amrita_memory_pg.open_memory` (the composition module ``bootstrap``):

    async with open_memory() as mem:
        ctx = ToolContext(platform="qq", user_id="10001", group_id=None, roles=frozenset())
        reply = await mem.call_tool("write_memory", {...}, ctx)   # the JSON text the LLM sees
        schemas = mem.tool_schemas()                               # OpenAI function-calling format
        block = await mem.memory_block(ctx)                        # per-turn system-prompt block
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.activity import resolve_timezone
from amrita_memory_pg.domain.consolidation import CycleContext, CycleSummary, key_subject
from amrita_memory_pg.domain.errors import LeaseHeld
from amrita_memory_pg.domain.lineage import Derivation, deriving
from amrita_memory_pg.domain.ports import ChatModel
from amrita_memory_pg.domain.records import SweepReport
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.llm.chat import ChatClient, is_configured
from amrita_memory_pg.services.bot_memories import BotMemories, Speaker
from amrita_memory_pg.services.consolidation import (
    Consolidator,
    CycleLlm,
    L3Hooks,
    LoopDeps,
    utcnow,
)
from amrita_memory_pg.services.extraction import Extractor, endpoint
from amrita_memory_pg.services.inspector import Inspection, inspect_chat
from amrita_memory_pg.services.knowledge import KnowledgeService
from amrita_memory_pg.services.l3_prompts import Prompts
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.proactive import Delivery, PrivateSend, deliver
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.services.scheduling import ScheduledRun, SchedulingService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.services.trail import TrailService, history_bounds
from amrita_memory_pg.settings import LOOP_MODEL_HOWTO, loop_endpoint_label, loop_llm
from amrita_memory_pg.storage.activity import ActivityRepository
from amrita_memory_pg.storage.bot_memories import BotMemoryRepository
from amrita_memory_pg.storage.consolidation import ConsolidationRepository, PendingMessage
from amrita_memory_pg.storage.knowledge import KnowledgeRepository
from amrita_memory_pg.storage.l3_state import L3StateStore
from amrita_memory_pg.storage.leases import LeaseRepository
from amrita_memory_pg.storage.lineage import LineageRepository
from amrita_memory_pg.storage.memories import MemoryRepository
from amrita_memory_pg.storage.memos import MemoRepository
from amrita_memory_pg.storage.profiles import ProfileRepository
from amrita_memory_pg.storage.reads import ReadRoute
from amrita_memory_pg.storage.trail import TrailRepository
from amrita_memory_pg.tools.audiences import ToolDeps, audiences_for, compose_registries
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.loop_rederive import brief as rederive_brief
from amrita_memory_pg.tools.registry import Audience, ToolRegistry
from amrita_memory_pg.usecases.bundle import UseCases

log = logging.getLogger(__name__)
#: withheld rows one cycle is given to derive again (the rest wait for the next)
REDERIVE_PER_CYCLE = 10
#: a claim older than this, by a cycle that died, is taken over
REDERIVE_STALE_CLAIM = timedelta(hours=1)
#: A host's tool lent to the loop (``allowed_tools``): its arguments → its text reply.
HostTool = Callable[[dict[str, Any]], Awaitable[str]]


class RegistryLoopTools:
    """The consolidation registry as the runner sees it: each call in its cycle's context,
    plus the host's tools lent to the loop (``allowed_tools`` of other plugins: offered
    in every cycle, called with the arguments as given)."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        #: name → (OpenAI schema, call), see :meth:`Memory.lend_loop_tool`
        self.host: dict[str, tuple[dict[str, Any], HostTool]] = {}

    def names(self) -> list[str]:
        return [*self.registry.names(), *self.host]

    def schemas(self) -> list[dict[str, Any]]:
        return [*self.registry.schemas(), *(schema for schema, _ in self.host.values())]

    def offered(self, context: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [*self.registry.offered(context), *(schema for schema, _ in self.host.values())]

    async def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, cycle: CycleContext
    ) -> str:
        lent = self.host.get(name)
        if lent is not None:
            return await _call_host_tool(name, lent[1], arguments)
        ctx = ToolContext(platform="l3", user_id=key_subject(cycle.target_key), cycle=cycle)
        # Whatever a loop tool writes is derived: its lineage is recorded with it, from the
        # target's memories and the chat lines the cycle was shown (domain/lineage.py).
        with deriving(
            Derivation("l3", cycle.cycle_id, partition_key=cycle.target_key, shown=cycle.shown)
        ):
            return await self.registry.call(name, arguments, ctx)


async def _call_host_tool(
    name: str, call: HostTool, arguments: Mapping[str, Any] | str | None
) -> str:
    """One lent host tool; its failure is the loop's error envelope, never a crash."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
        if isinstance(arguments, Mapping):
            args = dict(arguments)
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        return str(await call(args))
    except Exception as exc:  # another plugin's tool: report, never break the cycle
        reason = redact(str(exc).strip() or type(exc).__name__)
        return json.dumps({"status": "error", "message": f"{name}: {reason}"}, ensure_ascii=False)


class Memory:
    """One open memory store: the store's parts, the repositories and the chat tools."""

    def __init__(self, store: Store) -> None:
        settings = store.settings
        self.store = store
        self.settings = settings
        self.database = store.database
        self.embedder = store.embedder
        self.backend = store.backend
        #: where reads that may lag go (a replica); one per process, so that every write of
        #: this process (memories, memos) sends the partition's next reads to the primary
        self.route = ReadRoute(
            store.pool,
            store.read_pool,
            fresh_seconds=settings.database.read_own_writes_seconds,
        )
        #: the trail: access log, change history and paused partitions
        self.trail = TrailService(TrailRepository(store.pool, store.read_pool), settings.trail)
        #: L2 memories: the service embeds, the repository writes and searches
        self.memories = MemoryService(
            MemoryRepository(
                store.pool,
                store.backend,
                cap=settings.per_session_memory_limit,
                acquire_timeout=settings.database.connect_timeout,
                history=history_bounds(settings.trail),
                route=self.route,
            ),
            store.embedder,
            settings,
            trail=self.trail,
        )
        #: L1 memos; the cap is enforced by the database write
        self.memos = MemoRepository(
            store.pool,
            settings.memo_max_chars,
            acquire_timeout=settings.database.connect_timeout,
            route=self.route,
        )
        #: who in the fleet runs an L3 cycle, the sweep, the session job
        self.leases = Leases(
            LeaseRepository(store.pool), ttl_seconds=settings.database.lease_seconds
        )
        #: user profiles (summary + numbered lines, history), one per personal partition
        self.profiles = ProfileService(
            ProfileRepository(store.pool, acquire_timeout=settings.database.connect_timeout),
            settings.profile,
        )
        #: chat log + activity heatmap, written by the chat hooks, read by L3
        tz = resolve_timezone(settings.subconscious.idle_timezone)
        self.activity = ActivityRepository(store.pool, keep=settings.chat_log_keep, tz=tz)
        #: L3 scheduling per target (penalty, planner, next run); set ``scheduling.runner``
        #: to the loop's cycle runner
        self.scheduling = SchedulingService(
            L3StateStore(store.pool, tz_name=str(tz)),
            self.activity,
            settings,
            leases=self.leases,
        )
        #: L3 runs: cycles, token usage, pending proactive messages, the pre-pass
        self.consolidation = ConsolidationRepository(store.pool)
        #: where the scheduler and the knowledge base plug into a cycle
        self.l3_hooks = L3Hooks()
        self._loop_model: ChatClient | None = None
        self._host_model: ChatModel | None = None
        llm_settings = loop_llm(settings)
        if settings.subconscious.enabled and is_configured(llm_settings):
            self._loop_model = ChatClient(llm_settings)
        cycle_llm = (
            CycleLlm(
                self._loop_model,
                self.consolidation,
                model_name=llm_settings.model,
                clock=utcnow,
            )
            if self._loop_model is not None
            else None
        )
        self.prompts = Prompts(settings.subconscious)
        #: where the loop's model comes from: "configured" (``[subconscious] llm_*`` or
        #: ``LLM_*``), "host" (:meth:`use_host_model`) or "none"
        self.loop_model_source = "configured" if cycle_llm is not None else "none"
        self.loop = loop = LoopDeps(
            repo=self.consolidation,
            activity=self.activity,
            prompts=self.prompts,
            hooks=self.l3_hooks,
            llm=cycle_llm,
        )
        #: the global knowledge base, its suggestion queue and permission grants
        self.knowledge = KnowledgeService(
            KnowledgeRepository(
                store.pool,
                max_chars=settings.subconscious.knowledge_max_chars,
                acquire_timeout=settings.database.connect_timeout,
            ),
            store.embedder,
            settings,
        )
        #: what each derived row was made from, the withheld rows' tasks, the ledger
        self.lineage = LineageRepository(
            store.pool, acquire_timeout=settings.database.connect_timeout
        )
        #: the use cases a person's surface calls (the admin page, the CLI)
        self.cases = UseCases.over(
            memories=self.memories,
            memos=self.memos,
            profiles=self.profiles,
            knowledge=self.knowledge,
            trail=self.trail,
            lineage=self.lineage,
            activity=self.activity,
            leases=self.leases,
        )
        #: the per-turn block (memos + "## Bot Memories") and loaded scopes
        self.bot_memories = BotMemories(
            BotMemoryRepository(store.pool, self.route),
            store.embedder,
            settings,
            trail=self.trail,
        )
        #: automatic extraction; its model only when extraction is enabled
        self.extraction_model: ChatModel | None = None
        if settings.extraction.enabled and is_configured(endpoint(settings)):
            self.extraction_model = ChatClient(endpoint(settings))
        self.extractor = Extractor(
            self.memories,
            self.bot_memories.repo,
            self.extraction_model,
            settings,
            leases=self.leases,
        )
        #: one tool registry per audience the settings call for (chat; L3 when enabled)
        self.registries: dict[Audience, ToolRegistry] = compose_registries(
            ToolDeps(
                memories=self.memories,
                memos=self.memos,
                settings=settings,
                profiles=self.profiles,
                loop=loop,
                knowledge=self.knowledge,
                bot_memories=self.bot_memories,
                forgetting=self.cases.forgetting,
            ),
            audiences_for(settings),
        )
        #: the chat LLM's tools, served by :meth:`call_tool` and :meth:`tool_schemas`
        self.tools = self.registries["chat"]
        #: sends a private message to a personal partition's user (the integration sets
        #: it: NoneBot's send_private_msg); None: proactive messages wait for the
        #: target's next private message
        self.private_send: PrivateSend | None = None
        #: the L3 runner (a ``CycleRunner``), None when the loop is not enabled
        self.consolidator: Consolidator | None = None
        if "consolidation" in self.registries:
            self.consolidator = Consolidator(
                repo=self.consolidation,
                tools=RegistryLoopTools(self.registries["consolidation"]),
                llm=cycle_llm,
                prompts=self.prompts,
                settings=settings.subconscious,
                hooks=self.l3_hooks,
                leases=self.leases,
            )
            # The scheduler's windows start the loop's cycles; the loop shows the plan. A
            # paused partition is left alone however a cycle is started: the
            # runner checks first; its next window is planned as after a quiet cycle.
            self.scheduling.runner = self.consolidator
            self.l3_hooks.paused = self.trail.is_paused
            self.l3_hooks.idle_plan = self._idle_plan
            # W15: suggestions a cycle claimed are handled only if it succeeds.
            self.l3_hooks.on_success.append(self._complete_suggestions)
            self.l3_hooks.on_failure.append(self._release_suggestions)
            self.l3_hooks.pending_suggestions = self.knowledge.pending_suggestions
            self.l3_hooks.profile_changed_at = self._profile_changed_at
            # The user comes first: a message of the target aborts its running cycle.
            self.l3_hooks.interrupted = self.scheduling.interrupted
            # Proactive messages go out when the loop decides (through private_send).
            self.l3_hooks.send_now = self._send_now
            # Rows withheld by a delete, forget or change: claimed by a cycle, given back
            # when it ends unfinished (it succeeded or not).
            self.l3_hooks.rederive = self._rederive_tasks
            self.l3_hooks.on_success.append(self.lineage.release_tasks)
            self.l3_hooks.on_failure.append(self.lineage.release_tasks)

    def lend_loop_tool(self, schema: Mapping[str, Any], call: HostTool) -> bool:
        """Offer a host's tool (AmritaBot: another plugin's, named in ``[subconscious]
        allowed_tools``) to the loop in every cycle. False when the loop is off or the
        name is taken (our own tools win)."""
        if self.consolidator is None or not isinstance(self.consolidator.tools, RegistryLoopTools):
            return False
        tools = self.consolidator.tools
        name = str(schema["function"]["name"])
        if name in tools.names():
            return False
        tools.host[name] = (dict(schema), call)
        return True

    def check_allowed_tools(self) -> list[str]:
        """Warn once about each ``[subconscious] allowed_tools`` name the loop cannot call
        (the reference: «Tool 'X' not found») — neither one of our read-only chat tools
        nor a host's tool lent to the loop — and return them. Run by the integrations at
        start-up, after the host's tools are lent."""
        if self.consolidator is None:
            return []
        known = set(self.consolidator.tools.names())
        unknown = [
            name
            for name in dict.fromkeys(self.settings.subconscious.allowed_tools)
            if name not in known and self.tools.get(name) is None
        ]
        for name in unknown:
            log.warning(
                "[subconscious] allowed_tools: Tool %r not found (neither a read-only tool of "
                "this plugin nor a tool of the host); it is not offered to the loop",
                name,
            )
        return unknown

    def configured_loop_model(self) -> tuple[ChatModel, str] | None:
        """The loop's configured endpoint (model, name), if any: a host model's fallback."""
        llm = self.consolidator.llm if self.consolidator is not None else None
        if self._loop_model is None or llm is None:
            return None
        return self._loop_model, llm.model_name

    def use_host_model(self, model: ChatModel, describe: Callable[[], Awaitable[str]]) -> bool:
        """Run the L3 loop (cycles, proactive messages, session summaries) on the host's
        chat model — AmritaBot's preset, as the reference did — unless ``[subconscious]
        llm_base_url`` / ``llm_model`` name an endpoint of the loop's own (the override).
        ``describe`` names the model a call goes to now. Returns whether the host's is used."""
        sub = self.settings.subconscious
        if self.consolidator is None or sub.llm_base_url or sub.llm_model:
            return False
        cycle_llm = CycleLlm(
            model, self.consolidation, model_name="host", clock=utcnow, describe=describe
        )
        self.consolidator.llm = cycle_llm
        self.loop.llm = cycle_llm
        self.loop_model_source = "host"
        self._host_model = model
        return True

    async def loop_model_label(self) -> str:
        """Which model a cycle will use, in one phrase, for ``/memory dmn`` and the logs
        (or that none is configured, and how to configure one)."""
        llm = self.consolidator.llm if self.consolidator is not None else None
        if llm is not None and llm.describe is not None:
            return await llm.describe()
        label = loop_endpoint_label(self.settings) if llm is not None else None
        return label or f"未配置：{LOOP_MODEL_HOWTO}；在 AmritaBot 中则用它的模型预设"

    async def _profile_changed_at(self, target_key: str) -> datetime | None:
        """When the target's profile last changed (None: it has none yet)."""
        last = await self.profiles.history(target_key, 1)
        return last[0].changed_at if last else None

    async def _complete_suggestions(self, cycle_id: int) -> None:
        await self.knowledge.complete_suggestions(cycle_id)

    async def _release_suggestions(self, cycle_id: int) -> None:
        await self.knowledge.release_suggestions(cycle_id)

    async def _rederive_tasks(self, cycle: CycleContext) -> list[str]:
        """The withheld rows of the cycle's target, claimed for it (a dry run only looks),
        each with the texts of the sources left, as get_context lists them."""
        now = utcnow()
        if cycle.dry_run:
            tasks = await self.lineage.pending(cycle.target_key, REDERIVE_PER_CYCLE)
        else:
            tasks = await self.lineage.claim_tasks(
                cycle.target_key,
                cycle.cycle_id,
                now,
                stale=now - REDERIVE_STALE_CLAIM,
                limit=REDERIVE_PER_CYCLE,
            )
        out: list[str] = []
        for task in tasks:
            texts = [body for _ref, body in await self.lineage.source_texts(task.sources)]
            out.append(rederive_brief(task, texts))
        return out

    async def _idle_plan(self, target_key: str) -> Mapping[str, Any] | None:
        """The scheduler's planned window for a target (§9.8 ``idle_plan``)."""
        plan = (await self.scheduling.context(target_key))["idle_plan"]
        return plan if isinstance(plan, Mapping) else None

    @property
    def pool(self) -> Any:
        return self.database.pool

    def tool_schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """The tools' schemas in OpenAI function-calling format."""
        return self.tools.schemas(names)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None, ctx: ToolContext
    ) -> str:
        """Run one tool for the speaker in ``ctx``; returns the JSON reply, never raises."""
        return await self.tools.call(name, arguments, ctx)

    async def memory_block(self, ctx: ToolContext, message: str | None = None) -> str:
        """The per-turn system-message text for the speaker in ``ctx`` ("" = inject nothing).

        Private chat: the personal memo. Group chat: the group memo, plus the speaker's
        personal memo in its own block when ``memo_inject_personal_in_group`` is on.
        Then "## Bot Memories": global + current-scope memories when
        ``[injection] enabled``, and the scopes this chat loaded, within the token
        budget; ``message`` (the current one) adds the relevant top-k when configured.
        With ``[profile] inject_summary`` the speaker's profile summary follows the memos.
        One SQL query.
        """
        speaker = Speaker(
            session_key=ctx.session_key,
            personal_key=ctx.personal_key,
            group_key=ctx.group_key,
            user_id=ctx.user_id,
        )
        with metrics.timed(metrics.MEMORY_BLOCK_SECONDS):
            return await self.bot_memories.block(speaker, message=message)

    async def inspect(
        self, chat_key: str, *, user_id: str | None = None, message: str | None = None
    ) -> Inspection:
        """ "What the bot sees": the exact block the next turn of ``chat_key`` injects and
        its memories with token counts; logs nothing."""
        return await inspect_chat(self.bot_memories, chat_key, user_id=user_id, message=message)

    async def run_cycle(
        self, target_key: str, *, dry_run: bool = False, trigger: str = "manual"
    ) -> CycleSummary:
        """One L3 cycle now for a partition key (``/memory dmn``, ``amrita-memory consolidate``)."""
        if self.consolidator is None:
            return CycleSummary(
                cycle_id=0,
                target_key=target_key,
                ok=False,
                error="the L3 loop is not enabled ([subconscious] enabled = false)",
                dry_run=dry_run,
            )
        summary, _next = await self.run_cycle_and_plan(target_key, dry_run=dry_run, trigger=trigger)
        return summary

    async def run_cycle_and_plan(
        self, target_key: str, *, dry_run: bool = False, trigger: str = "manual"
    ) -> tuple[CycleSummary, ScheduledRun | None]:
        """One cycle now and, unless a dry run, through the scheduler: the target's penalty,
        counters and next run are updated as for a scheduled cycle (the caller reschedules
        its job with the returned run)."""
        consolidator = self.consolidator
        if consolidator is None:
            return await self.run_cycle(target_key, dry_run=dry_run, trigger=trigger), None
        if dry_run:
            return await consolidator.run(target_key, dry_run=True, trigger=trigger), None

        async def manual(key: str) -> CycleSummary:
            return await consolidator.run(key, trigger=trigger)

        return await self.scheduling.run_cycle(target_key, runner=manual)

    async def scheduled_sweep(self) -> SweepReport | None:
        """The sweep job's run: only the fleet's lease holder sweeps; None when
        another process holds the lease (it is sweeping; this one waits for its next
        interval)."""
        try:
            async with self.leases.hold("sweep"):
                return await self.memories.sweep()
        except LeaseHeld as held:
            log.info("decay sweep held by %s; skipped until the next interval", held.owner)
            return None

    async def send_pending(
        self, target_key: str, send: PrivateSend | None = None
    ) -> Delivery | None:
        """Send the loop's pending proactive messages for a personal target now, through
        ``send`` or the integration's :attr:`private_send`; a failed send keeps its
        message for the next attempt. None when there is no sender, sending is off or the
        target is paused."""
        sub = self.settings.subconscious
        sender = send or self.private_send
        if sender is None or not (sub.enabled and sub.allow_send_to_user):
            return None
        if await self.trail.is_paused(target_key):
            return None  # kept until the partition is resumed: paused on every path
        return await deliver(self.consolidation, target_key, sender, utcnow())

    async def _send_now(self, target_key: str) -> tuple[int, list[str]] | None:
        """The runner's hook after ``subconscious_send_to_user`` queued a message."""
        delivery = await self.send_pending(target_key)
        if delivery is None:
            return None
        return len(delivery.sent), [reason for _m, reason in delivery.failed]

    async def take_pending_messages(self, target_key: str) -> list[PendingMessage]:
        """The loop's proactive messages for a personal partition, each returned only once.

        Call it when the target writes in private (the integration sends them there);
        a group chat never gets them (W14).
        """
        return await self.consolidation.take_messages(target_key, now=utcnow())

    async def pending_for(self, ctx: ToolContext) -> list[PendingMessage]:
        """What the loop queued for the speaker, to deliver now: only in their private chat
        (never in a group: reference W14), only while ``allow_send_to_user`` is on. Each
        message is returned once, ever (marked delivered in the same statement)."""
        sub = self.settings.subconscious
        if ctx.in_group or not (sub.enabled and sub.allow_send_to_user):
            return []
        if await self.trail.is_paused(ctx.personal_key):
            return []  # kept until the partition is resumed: paused on every path
        return await self.take_pending_messages(ctx.personal_key)

    async def close(self) -> None:
        await self.trail.flush()  # never raises: a failed log write is a warning
        if self._loop_model is not None:
            await self._loop_model.aclose()
        if self._host_model is not None:
            await self._host_model.aclose()
        try:
            if isinstance(self.extraction_model, ChatClient):
                await self.extraction_model.aclose()
            await self.backend.aclose()
            await self.embedder.aclose()
        finally:
            await self.database.close()
