"""The L3 consolidation runner: one ReAct cycle over an OpenAI-compatible chat model.

What a cycle does (reference §8.4, with its bugs fixed):

1. a ``consolidation_cycle`` row is opened (trigger, dry run);
2. the system prompt is rendered from the templates (byte-identical within a UTC day);
3. ``subconscious_get_context`` is called by the runner itself, as the cycle's first
   tool call, and its reply put into the conversation — the §8.7 rule holds for every
   model, and a round trip is saved. The reply carries the SQL pre-pass (duplicate groups,
   cleanup candidates), so the model can act in its first turn; the tools offered for
   the cycle are chosen on it (only those with something to do), fixed for the cycle;
4. then up to ``max_iterations`` model calls (D6): each tool call of a turn runs in
   order, each its own transaction, so a failure halfway leaves the store consistent;
   ``loop_detect_threshold`` identical consecutive calls end the cycle as failed; the
   cycle succeeds when the model calls ``subconscious_iter_stop``;
5. every model call's tokens are written to ``token_usage`` as soon as it returns (also
   the send and summary calls of the tools, W16), and the cycle row gets the totals.

A model error, a stall, running out of iterations or the model ending without
``subconscious_iter_stop`` fail the cycle. The success / failure hooks run after the
row is closed (knowledge suggestions are completed on success, released on failure:
W15); a failing hook is logged, never turns a cycle's outcome around.

The runner knows its tools only through :class:`LoopTools` (the service adapts the
consolidation registry), so this floor never imports the tools.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.consolidation import CycleContext, CycleSummary, key_subject
from amrita_memory_pg.domain.errors import AmritaMemoryError, LeaseHeld
from amrita_memory_pg.domain.ports import ChatModel, ChatResult, Message
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.llm.tokens import token_counter
from amrita_memory_pg.services.l3_prompts import Prompts
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.settings import SubconsciousSettings
from amrita_memory_pg.storage.activity import ActivityRepository
from amrita_memory_pg.storage.consolidation import ConsolidationRepository

log = logging.getLogger(__name__)

GET_CONTEXT = "subconscious_get_context"
ITER_STOP = "subconscious_iter_stop"
BATCH_EDIT = "subconscious_batch_edit"
SEND_TO_USER = "subconscious_send_to_user"
#: the profile's tools (with either offered, the profile guide comes too) and the key of
#: get_context's reply that says the profile has something to take in
PROFILE_TOOLS = frozenset({"subconscious_get_profile", "subconscious_update_profile"})
PROFILE_HINT = "profile_hint"
#: get_context is already in the conversation (the runner called it), and the system
#: prompt says how a cycle ends, so the message only names the target
USER_PROMPT = "整理 {target} 的记忆库。"

#: Called with the cycle id after the cycle row is closed.
CycleHook = Callable[[int], Awaitable[None]]
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


class LoopTools(Protocol):
    """The consolidation audience's tools, as the runner needs them."""

    def names(self) -> list[str]: ...

    def schemas(self) -> list[dict[str, Any]]: ...

    def offered(self, context: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The schemas this cycle is shown, given its get_context reply."""
        ...

    async def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, cycle: CycleContext
    ) -> str: ...


@dataclass
class L3Hooks:
    """Where other parts plug into a cycle (the lead wires them; all optional).

    ``on_success`` / ``on_failure``: e.g. the knowledge base's
    ``complete_suggestions`` / ``release_suggestions``. ``idle_plan``: the scheduler's
    last plan for a target (shown by ``subconscious_get_context``; None until wired).
    ``pending_suggestions``: the knowledge suggestions waiting (count and ids; None
    until wired). ``profile_changed_at``: the profile's last change (None until wired:
    then the profile tools are not offered).
    """

    on_success: list[CycleHook] = field(default_factory=list)
    on_failure: list[CycleHook] = field(default_factory=list)
    idle_plan: Callable[[str], Awaitable[Mapping[str, Any] | None]] | None = None
    #: (how many are pending, the first of them)
    pending_suggestions: Callable[[], Awaitable[tuple[int, Sequence[Mapping[str, Any]]]]] | None = (
        None
    )
    #: when a personal partition's profile last changed (None: it has no profile yet);
    #: get_context counts the memories written since, to offer the profile tools
    profile_changed_at: Callable[[str], Awaitable[datetime | None]] | None = None
    #: whether the target spoke since its cycle started (the scheduler's row in
    #: PostgreSQL, so a message handled by any bot process counts); checked at every
    #: tool-call boundary: True aborts the cycle there (reference §8.3 step 3)
    interrupted: Callable[[str], Awaitable[bool]] | None = None
    #: send a personal target's queued proactive messages now: (how many were sent,
    #: why the others failed), None when the host cannot send (then they wait)
    send_now: Callable[[str], Awaitable[tuple[int, list[str]] | None]] | None = None
    #: whether a partition is paused: a paused target gets no cycle, however
    #: started (scheduler, CLI, /memory dmn); None until wired
    paused: Callable[[str], Awaitable[bool]] | None = None
    #: the withheld rows this cycle is to derive again (claimed for it; a dry run only
    #: looks), each as get_context lists it; None until wired
    rederive: Callable[[CycleContext], Awaitable[list[str]]] | None = None


#: the summary of a cycle not run because its target is paused
PAUSED_SUMMARY = "skipped: the partition is paused"


def cycle_outcome(summary: CycleSummary) -> str:
    """The ``/metrics`` outcome of a cycle (a bounded label, never the target)."""
    if summary.held_by is not None:
        return "held"
    if summary.cycle_id == 0:  # nothing started here
        return "paused" if summary.ok else "busy"
    if summary.aborted:
        return "aborted"
    if summary.dry_run:
        return "dry_run"
    return "ok" if summary.ok else "failed"


class CycleLlm:
    """The loop's chat model, with every call's tokens written to ``token_usage`` at once."""

    def __init__(
        self,
        model: ChatModel,
        repo: ConsolidationRepository,
        *,
        model_name: str,
        clock: Clock,
        describe: Callable[[], Awaitable[str]] | None = None,
    ) -> None:
        self.model = model
        self.repo = repo
        #: the model's name, recorded with a call's tokens unless the call names its own
        self.model_name = model_name
        self.clock = clock
        #: the model a call goes to now, in words, when that can change between calls
        #: (a host's preset); None: ``model_name``
        self.describe = describe

    async def complete(
        self,
        cycle: CycleContext,
        purpose: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
    ) -> Message:
        return (await self.call(cycle, purpose, messages, tools)).message

    async def call(
        self,
        cycle: CycleContext,
        purpose: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
    ) -> ChatResult:
        """One completion, its tokens recorded and added to the cycle's count."""
        result = await self.model.complete(messages, tools)
        usage = result.usage
        cycle.tokens += usage.prompt_tokens + usage.completion_tokens
        metrics.record_tokens("l3", usage.prompt_tokens, usage.completion_tokens)
        await self.repo.record_usage(
            cycle.target_key,
            cycle.cycle_id,
            purpose=purpose,
            model=result.model or self.model_name,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            now=self.clock(),
        )
        return result

    async def text(self, cycle: CycleContext, purpose: str, system: str, user: str) -> str:
        """One plain completion (a proactive message, a session summary), stripped."""
        message = await self.complete(
            cycle,
            purpose,
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
        )
        return str(message.get("content") or "").strip()


class CycleFailed(AmritaMemoryError):
    """Ends a cycle as failed with a reason (a stall, no iterations left).

    Raised and caught inside :meth:`Consolidator._run` only: the cycle's summary carries
    the reason, so it never reaches a caller's ``except AmritaMemoryError``.
    """


class CycleAborted(CycleFailed):
    """The target spoke while its cycle ran: the cycle stops at the boundary it reached."""


class BudgetReached(CycleFailed):
    """The next model call would pass ``[subconscious] cycle_token_budget``: the cycle
    stops before it (what was done stays: each tool call is its own transaction)."""


ABORTED = "aborted: the target sent a message while the cycle ran (the user comes first)"


def _signature(name: str, arguments: Any) -> str:
    """A call's identity for loop detection: the name and its arguments, canonical JSON."""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            value = arguments
    return name + "\x00" + json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _text(value: Any) -> str:
    """Messages or schemas as the request carries them (for counting their tokens)."""
    return json.dumps(value, ensure_ascii=False)


def _context_of(reply: Any) -> dict[str, Any]:
    """get_context's reply as a mapping ({} when it failed: then every tool is offered
    that needs no context)."""
    try:
        value = json.loads(reply) if isinstance(reply, str) else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class _Progress:
    iterations: int = 0
    tool_calls: int = 0
    recent: list[str] = field(default_factory=list)
    #: the last step's prompt tokens as the model counted them, and how many messages
    #: that request had (the budget's estimate of the next one starts from it)
    last_prompt: int = 0
    sent: int = 0
    #: tool calls by name (what a budget stop reports as done)
    calls: dict[str, int] = field(default_factory=dict)
    #: the estimated prompts of steps whose endpoint reported no usage (the budget's)
    unreported: int = 0
    #: the runner's get_context reply ({} when it failed)
    context: dict[str, Any] = field(default_factory=dict)


class Consolidator:
    """Runs one cycle for a target partition; an instance is a :data:`CycleRunner`."""

    #: the cycle's user message ({target}: the partition key)
    user_prompt = USER_PROMPT

    def __init__(
        self,
        *,
        repo: ConsolidationRepository,
        tools: LoopTools,
        llm: CycleLlm | None,
        prompts: Prompts,
        settings: SubconsciousSettings,
        hooks: L3Hooks | None = None,
        clock: Clock = utcnow,
        leases: Leases | None = None,
    ) -> None:
        self.repo = repo
        self.tools = tools
        self.llm = llm
        self.prompts = prompts
        self.settings = settings
        self.hooks = hooks or L3Hooks()
        self.clock = clock
        #: the fleet's leases (one cycle per target across processes); the in-process lock
        #: below is only a fast path
        self.leases = leases
        self._running: dict[str, asyncio.Lock] = {}

    async def __call__(self, target_key: str) -> CycleSummary:
        """The scheduler's entry point: a real (not dry) cycle."""
        return await self.run(target_key, trigger="scheduled")

    def system_prompt(
        self,
        target_key: str,
        now: datetime,
        offered: Sequence[str] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> str:
        """Main template plus each guide only when its tools are offered (``offered``:
        the cycle's tool names; None: every registered tool). The profile guide also
        comes with the batch when get_context's ``profile_hint`` asks for a profile (a
        target without one is offered no tool to read it: its lines go through the
        batch's profile op)."""
        names = set(self.tools.names() if offered is None else offered)
        batch = BATCH_EDIT in names
        profile = bool(names & PROFILE_TOOLS) or (batch and bool((context or {}).get(PROFILE_HINT)))
        return self.prompts.system(
            key_subject(target_key),
            now.astimezone(UTC).date(),
            knowledge="subconscious_knowledge_list" in names,
            profile=profile,
            batch=batch,
        )

    async def run(
        self, target_key: str, *, dry_run: bool = False, trigger: str = "manual"
    ) -> CycleSummary:
        """One cycle now. Never raises for a model or tool failure: the summary says.

        A paused target is checked first, in the database, and gets no cycle at all: no
        cycle row, no model call, nothing read out (a failing check raises, it is never
        read as "not paused"). Counted in ``/metrics`` by outcome."""
        summary = await self._run_once(target_key, dry_run=dry_run, trigger=trigger)
        metrics.record_cycle(cycle_outcome(summary))
        return summary

    async def _run_once(self, target_key: str, *, dry_run: bool, trigger: str) -> CycleSummary:
        if self.hooks.paused is not None and await self.hooks.paused(target_key):
            return CycleSummary(
                cycle_id=0, target_key=target_key, ok=True, summary=PAUSED_SUMMARY, dry_run=dry_run
            )
        lock = self._running.setdefault(target_key, asyncio.Lock())
        if lock.locked():
            return CycleSummary(
                cycle_id=0,
                target_key=target_key,
                ok=False,
                error="a cycle for this target is already running",
                dry_run=dry_run,
            )
        async with lock:
            if self.leases is None:
                return await self._run(target_key, dry_run=dry_run, trigger=trigger)
            try:
                async with self.leases.hold("l3", target_key):
                    return await self._run(target_key, dry_run=dry_run, trigger=trigger)
            except LeaseHeld as held:
                log.info("L3 cycle of %s not started: held by %s", target_key, held.owner)
                return CycleSummary(
                    cycle_id=0,
                    target_key=target_key,
                    ok=False,
                    error=f"held by {held.owner}",
                    dry_run=dry_run,
                    held_by=held.owner,
                )

    async def _run(self, target_key: str, *, dry_run: bool, trigger: str) -> CycleSummary:
        started = self.clock()
        cycle_id = await self.repo.start_cycle(
            target_key, trigger=trigger, now=started, dry_run=dry_run
        )
        cycle = CycleContext(cycle_id=cycle_id, target_key=target_key, dry_run=dry_run)
        progress = _Progress()
        error: str | None = None
        aborted = False
        try:
            if self.llm is None:
                raise CycleFailed(
                    "no model configured for the loop ([subconscious] llm_* or LLM_BASE_URL/LLM_MODEL)"
                )
            await self._cycle(cycle, self.llm, progress, started)
        except CycleAborted as exc:
            error, aborted = str(exc), True
            log.info(
                "[Subconscious] Cycle %s of %s aborted by a new user message", cycle_id, target_key
            )
        except CycleFailed as exc:
            error = str(exc)
        except asyncio.CancelledError:
            error = "cancelled"
            await self._close(cycle, progress, error)
            raise
        except Exception as exc:  # the cycle's outer edge: record, never raise into a job
            log.warning("L3 cycle %s of %s failed: %s", cycle_id, target_key, exc)
            error = redact(str(exc).strip() or type(exc).__name__)
        return await self._close(cycle, progress, error, aborted=aborted)

    async def _boundary(self, cycle: CycleContext) -> None:
        """A tool-call boundary: give way if the target spoke meanwhile (dry runs never
        do: they write nothing and run outside the scheduler)."""
        check = self.hooks.interrupted
        if check is None or cycle.dry_run:
            return
        if await check(cycle.target_key):
            raise CycleAborted(ABORTED)

    async def _cycle(
        self, cycle: CycleContext, llm: CycleLlm, progress: _Progress, started: datetime
    ) -> None:
        messages: list[Message] = [
            {"role": "system", "content": self.system_prompt(cycle.target_key, started)},
            {"role": "user", "content": self.user_prompt.format(target=cycle.target_key)},
        ]
        schemas = await self._open(cycle, progress, messages)
        # The guides follow the offered tools; the model sees the prompt only now, and it
        # stays fixed for the cycle (the same offer on one day gives the same bytes).
        messages[0]["content"] = self.system_prompt(
            cycle.target_key, started, [s["function"]["name"] for s in schemas], progress.context
        )
        limit = self.settings.max_iterations
        while progress.iterations < limit:
            await self._boundary(cycle)
            estimate = self._within_budget(cycle, progress, messages, schemas)
            progress.iterations += 1
            result = await llm.call(cycle, "step", messages, schemas)
            progress.last_prompt, progress.sent = result.usage.prompt_tokens, len(messages)
            if not result.usage.prompt_tokens:  # an endpoint that reports no usage
                progress.unreported += estimate
            reply = result.message
            calls, batch = _tool_calls(reply, progress.iterations)
            messages.append(
                {"role": "assistant", "content": reply.get("content") or "", "tool_calls": calls}
            )
            await self._call(cycle, progress, messages, batch)
            if cycle.stopped:
                return
        raise CycleFailed(f"max_iterations ({limit}) reached without subconscious_iter_stop")

    def _within_budget(
        self,
        cycle: CycleContext,
        progress: _Progress,
        messages: list[Message],
        schemas: list[dict[str, Any]],
    ) -> int:
        """Raise :class:`BudgetReached` when the next step would pass the cycle's token
        budget: what was spent plus the next request's prompt — the previous one as the
        model counted it plus what was appended since (cl100k: an estimate for other
        tokenizers), or the whole request counted when there is no previous count. The
        step's own completion is not known before it: a cycle may end above the budget
        by one completion. Returns the estimate (0 without a budget); a step the
        endpoint reports no usage for counts as its estimate. The summary it leaves says
        where the cycle stopped, for the next cycle's get_context (``last_run_summary``,
        ``recent_runs``)."""
        budget = self.settings.cycle_token_budget
        if not budget:
            return 0
        count = token_counter()
        if progress.last_prompt:
            added = messages[progress.sent :]
            estimate = progress.last_prompt + count(_text(added))
        else:
            estimate = count(_text(messages)) + count(_text(schemas))
        if cycle.tokens + progress.unreported + estimate <= budget:
            return estimate
        done = "、".join(f"{name}×{n}" for name, n in progress.calls.items() if name != GET_CONTEXT)
        cycle.summary = (
            f"因 token 预算（{budget}）在第 {progress.iterations + 1} 次模型调用前停止："
            f"已用 {cycle.tokens} tokens，已调用 {done or '（无工具）'}，"
            f"修改了 {cycle.changed} 条记忆（都已保存）。未处理完的候选会在下一轮的预筛选中"
            "再次列出；下一轮请把修改合并进尽量少的调用。"
        )
        raise BudgetReached(
            f"token budget: the next model call (~{estimate} prompt tokens) would pass "
            f"cycle_token_budget ({budget}); {cycle.tokens} spent in "
            f"{progress.iterations} calls, stopped before it"
        )

    async def _open(
        self, cycle: CycleContext, progress: _Progress, messages: list[Message]
    ) -> list[dict[str, Any]]:
        """The first call of every cycle (reference §8.7), made by the runner itself;
        returns the tools offered for the cycle: only those with something to do, fixed
        for the whole cycle (a stable prefix) — every schema is re-sent with every call."""
        first = {
            "id": "ctx_0",
            "type": "function",
            "function": {"name": GET_CONTEXT, "arguments": "{}"},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [first]})
        await self._call(cycle, progress, messages, [("ctx_0", GET_CONTEXT, "{}")])
        progress.context = _context_of(messages[-1].get("content"))
        return self.tools.offered(progress.context)

    async def _call(
        self,
        cycle: CycleContext,
        progress: _Progress,
        messages: list[Message],
        batch: list[tuple[str, str, Any]],
    ) -> None:
        """Run one turn's tool calls in order; append their replies."""
        threshold = self.settings.loop_detect_threshold
        for call_id, name, arguments in batch:
            signature = _signature(name, arguments)
            progress.recent = [*progress.recent[-(threshold - 1) :], signature]
            if len(progress.recent) == threshold and len(set(progress.recent)) == 1:
                raise CycleFailed(
                    f"loop detected: {name} called {threshold} times in a row with the same arguments"
                )
            await self._boundary(cycle)
            progress.tool_calls += 1
            progress.calls[name] = progress.calls.get(name, 0) + 1
            result = await self.tools.call(name, arguments, cycle)
            if name == SEND_TO_USER and not cycle.dry_run:
                result = await self._send_now(cycle, result)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})

    async def _send_now(self, cycle: CycleContext, result: str) -> str:
        """After ``subconscious_send_to_user`` queued its message: send it through the
        host now (reference §8.6) and say in the reply what happened ("sent", or
        "queued" with the reason: kept and retried)."""
        hook = self.hooks.send_now
        reply = _context_of(result)
        if hook is None or reply.get("status") != "queued":
            return result
        try:
            outcome = await hook(cycle.target_key)
        except Exception as exc:  # the database under the send: the message stays queued
            log.warning("sending the proactive message of cycle %s failed: %s", cycle.cycle_id, exc)
            outcome = (0, [redact(str(exc) or type(exc).__name__)])
        if outcome is None:
            return result
        sent, failed = outcome
        if sent and not failed:
            reply["status"] = "sent"
            reply["message"] = "已通过私聊发送给用户"
        else:
            reply["message"] = (
                f"发送失败（{failed[0] if failed else '未知原因'}），消息已保留，稍后重试"
            )
        return json.dumps(reply, ensure_ascii=False, separators=(",", ":"))

    async def _close(
        self, cycle: CycleContext, progress: _Progress, error: str | None, *, aborted: bool = False
    ) -> CycleSummary:
        ok = error is None and cycle.stopped
        if ok is False and error is None:
            error = "the cycle ended without subconscious_iter_stop"
        prompt, completion = await self.repo.finish_cycle(
            cycle.target_key,
            cycle.cycle_id,
            now=self.clock(),
            ok=ok,
            error=error,
            iterations=progress.iterations,
            tool_calls=progress.tool_calls,
            memories_changed=cycle.changed,
            summary=cycle.summary,
        )
        # A dry run consumes nothing: its claimed suggestions go back to the queue.
        hooks = self.hooks.on_success if ok and not cycle.dry_run else self.hooks.on_failure
        for hook in hooks:
            try:
                await hook(cycle.cycle_id)
            except Exception:  # a hook's failure never changes the cycle's outcome
                log.exception("L3 cycle hook %r failed for cycle %s", hook, cycle.cycle_id)
        summary = CycleSummary(
            cycle_id=cycle.cycle_id,
            target_key=cycle.target_key,
            ok=ok,
            error=error,
            iterations=progress.iterations,
            tool_calls=progress.tool_calls,
            memories_changed=cycle.changed,
            prompt_tokens=prompt,
            completion_tokens=completion,
            summary=cycle.summary,
            dry_run=cycle.dry_run,
            aborted=aborted,
        )
        log.info("L3 cycle done: %s", describe(summary))
        return summary


def _tool_calls(
    reply: Any, iteration: int
) -> tuple[list[dict[str, Any]], list[tuple[str, str, Any]]]:
    """The reply's tool calls as (the calls to echo back, (id, name, arguments) to run).

    A model or a proxy may send anything: a malformed ``tool_calls`` ends the cycle with
    a sentence in the run record, not with Python's own words for a
    str that has no ``.get``.
    """
    raw = reply.get("tool_calls") if isinstance(reply, dict) else None
    if not raw:
        raise CycleFailed("the model stopped without calling subconscious_iter_stop")
    if not isinstance(raw, list):
        raise CycleFailed(
            f"the model's reply is malformed: tool_calls should be a list, got {type(raw).__name__}"
        )
    batch: list[tuple[str, str, Any]] = []
    for index, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise CycleFailed(
                f"the model's reply is malformed: tool call {index} is not "
                '{"id": …, "function": {"name": …, "arguments": …}}'
            )
        # a missing or unknown name is the tools' to answer (the model gets a reply)
        name = str(function.get("name", ""))
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str | dict):
            arguments = json.dumps(arguments)
        call_id = str(call.get("id") or f"call_{iteration}_{index}")
        batch.append((call_id, name, arguments))
    return raw, batch


def describe(summary: CycleSummary) -> str:
    """One line for logs, ``/memory dmn`` and the CLI."""
    head = "ok" if summary.ok else f"failed ({summary.error})"
    dry = " [dry run: nothing written]" if summary.dry_run else ""
    text = (
        f"cycle {summary.cycle_id} of {summary.target_key}: {head}{dry}; "
        f"iterations {summary.iterations}, tool calls {summary.tool_calls}, "
        f"memories changed {summary.memories_changed}, "
        f"tokens {summary.prompt_tokens} prompt / {summary.completion_tokens} completion"
    )
    if summary.summary:
        text += f"\nsummary: {summary.summary}"
    return text


@dataclass
class LoopDeps:
    """What the loop's tools use besides the memory and memo repositories."""

    repo: ConsolidationRepository
    activity: ActivityRepository
    prompts: Prompts
    hooks: L3Hooks
    #: None when no model is configured: send/summary degrade, cycles fail at once
    llm: CycleLlm | None
    clock: Clock = utcnow
    #: in-process session summaries, keyed by (target, every line id): a session that
    #: lost a line to a forget is summarised again, never served from here
    summaries: dict[tuple[str | int, ...], str] = field(default_factory=dict)
