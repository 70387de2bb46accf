"""The plugin's one open :class:`Memory`, opened on driver start-up and closed on shutdown.

If opening fails (database down, embedder unavailable…) the bot keeps running: the
error is logged once and ``/memory`` answers «记忆服务未就绪：…» instead of crashing
the chat. ``open_memory`` itself migrates the schema, converts legacy partition keys
(reference §2.5) and applies the embedding fingerprint policy (§7.4): with
``EMBED_MISMATCH_POLICY=ask`` and no terminal the plugin does not start and the log line
names the command that fixes it. ``startup_checks`` are further steps awaited after that
(the L3 loop registers its own).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.commands.memory_command import DmnTrigger, MemoryCommand
from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.domain.errors import NotReady
from amrita_memory_pg.integrations.nonebot.jobs import L3Jobs
from amrita_memory_pg.llm.chat import ChatClient, is_configured
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.web.jobs import JobRunner, memory_operations

log = logging.getLogger(__name__)

StartupCheck = Callable[[Memory], Awaitable[None]]


class Runtime:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory: Memory | None = None
        self.llm: ChatClient | None = None
        self.error: str | None = None
        #: awaited in order after the memory opens (key migration, fingerprint check)
        self.startup_checks: list[StartupCheck] = []
        #: set by the L3 loop when it runs in this process; ``/memory dmn`` calls it
        self.dmn_trigger: DmnTrigger | None = None
        #: the L3 cycle jobs, one per target (set at start-up when L3 is enabled)
        self.l3_jobs: L3Jobs | None = None
        #: True under AmritaBot: the L3 trigger counts the host's completions (its
        #: pre-completion hook), so incoming messages no longer do
        self.l3_counts_completions = False
        #: look for a lost re-embed to resume from the start — set when the
        #: admin page is not mounted here (a mounted page's job runner does it then), so
        #: every bot process of the fleet watches, with or without the page
        self.watch_jobs = False
        #: the job runner watching, while the store is open (None: not watching)
        self.job_watch: JobRunner | None = None
        self._stack: contextlib.AsyncExitStack | None = None

    async def start(self) -> None:
        """Open the store (migrating the schema), run the start-up checks, open the LLM client."""
        stack = contextlib.AsyncExitStack()
        try:
            memory = await stack.enter_async_context(open_memory(self.settings))
            for check in self.startup_checks:
                await check(memory)
        except Exception as exc:  # the plugin's outer edge: log, stay up, answer «未就绪»
            await stack.aclose()
            self.error = str(exc) or type(exc).__name__
            log.error("amrita_memory_pg did not start: %s", self.error, exc_info=True)
            return
        self.memory = memory
        if self.watch_jobs:
            self.job_watch = JobRunner(memory_operations(memory), fleet=memory)
            self.job_watch.watch()
            stack.push_async_callback(self.job_watch.aclose)
        if is_configured(self.settings.llm):
            self.llm = ChatClient(self.settings.llm)
            stack.push_async_callback(self.llm.aclose)
        self._stack = stack
        self.error = None
        log.info("amrita_memory_pg ready (schema migrated, memo + tools registered)")

    async def stop(self) -> None:
        """Close the LLM client and the pool, then release the embedded server."""
        stack, self._stack = self._stack, None
        self.memory = None
        self.llm = None
        self.l3_jobs = None
        self.job_watch = None
        if stack is not None:
            await stack.aclose()

    def require(self) -> Memory:
        if self.memory is None:
            raise NotReady(self.error or "尚未启动")
        return self.memory

    def command(self) -> MemoryCommand:
        memory = self.require()
        looping = memory.consolidator is not None
        return MemoryCommand.over(
            memory,
            dmn_trigger=self.dmn_trigger,
            cycle_run=self._cycle_run if looping else None,
            loop_model=memory.loop_model_label if looping else None,
        )

    async def _cycle_run(
        self, target_key: str, *, dry_run: bool = False, trigger: str = "manual"
    ) -> CycleSummary:
        """``/memory dmn``: one cycle now; the target's job moves to the run it planned."""
        summary, next_run = await self.require().run_cycle_and_plan(
            target_key, dry_run=dry_run, trigger=trigger
        )
        if next_run is not None and self.l3_jobs is not None:
            self.l3_jobs.schedule([next_run])
        return summary
