"""Our tools in amrita-core's tool registry and the memo block in its pre-completion hook.

Tools: each of our chat tools is registered in a ``MultiToolsManager`` (by default
amrita-core's global ``ToolsManager``, where the reference plugin put them) under the
reference name, as ``ToolData(custom_run=True)`` so that amrita-core hands the handler
its ``ToolContext`` (arguments + the turn's ``StrategyContext``). The handler finds the
speaker (:mod:`.context`), calls :meth:`Memory.call_tool` and returns its JSON text
unchanged, so replies are byte-for-byte the ones the NoneBot plugin gives.

Memo: a ``BEFORE_COMPLETION`` handler, priority 15 and non-blocking like the reference
(so the reference DMN hook, priority 10, runs first and the memo ends up in front),
inserts a ``system`` message with :meth:`Memory.memory_block` at index 0 of the turn's
history (``event.message.memory``), which is what the model receives right after the
host's own system prompt. amrita-core's ``SendMessageWrap`` pins that prompt (``train``)
at position 0 of the full list, so index 0 of the history is the first place a message
can go. (The reference inserted into ``chat_object.data.messages``, which amrita-core
1.3 has already copied by then: its memo never reached the model.) amrita-core writes
the history back into the session memory after the completion, so a ``COMPLETION``
handler removes the injected message again: the memo is re-read every turn and never
piles up in the stored chat history.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from amrita_core.hook.event import CompletionEvent, EventTypeEnum, PreCompletionEvent
from amrita_core.hook.on import on_completion, on_precompletion
from amrita_core.tools.manager import MultiToolsManager, ToolsManager
from amrita_core.tools.models import (
    FunctionDefinitionSchema,
    FunctionParametersSchema,
    FunctionPropertySchema,
    ToolData,
    ToolFunctionSchema,
)
from amrita_core.tools.models import ToolContext as AmritaToolContext
from amrita_core.types import Message
from amrita_sense.hook.matcher import EventRegistry, Matcher

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.integrations.amrita.context import Identify, chat_context
from amrita_memory_pg.integrations.amrita.model import HostModel
from amrita_memory_pg.integrations.amrita.persona import HostPersona
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.scheduling import ScheduledRun
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.knowledge import READ_TOOLS
from amrita_memory_pg.tools.registry import error_reply

log = logging.getLogger(__name__)

#: the reference plugin's memo hook priority (its DMN hook is 10)
MEMO_HOOK_PRIORITY = 15
#: the reference plugin's DMN trigger hook priority (before the memo)
TRIGGER_HOOK_PRIORITY = 10
NOT_READY = "记忆服务未就绪，请稍后再试"
NO_CONTEXT = "无法确定当前会话的用户（缺少 AmritaBot 聊天上下文）"

#: An open Memory, or a callable returning the current one (None while it is not open),
#: so that tools can be registered before the bot's start-up opens the database.
MemoryProvider = Memory | Callable[[], Memory | None]


def _current(provider: MemoryProvider) -> Memory | None:
    return provider if isinstance(provider, Memory) else provider()


def _property(schema: Mapping[str, Any]) -> FunctionPropertySchema[Any]:
    values = dict(schema)
    if "enum" in values:
        # amrita-core's enum holds scalars only; "may be null" is already in the type list
        values["enum"] = [v for v in values["enum"] if v is not None]
    return FunctionPropertySchema.model_validate(values)


def amrita_schema(schema: Mapping[str, Any]) -> FunctionDefinitionSchema:
    """One of our OpenAI-format tool schemas as amrita-core's ``FunctionDefinitionSchema``.

    Two things do not carry over, neither of which changes what the model may send:
    ``null`` inside an ``enum`` (the property's type already lists ``"null"``), and
    ``additionalProperties: false`` on the parameters (amrita-core's model has no such
    field; our own validation still refuses unknown arguments with an error reply).
    """
    function = schema["function"]
    parameters = function["parameters"]
    return FunctionDefinitionSchema(
        name=function["name"],
        description=function["description"],
        parameters=FunctionParametersSchema(
            type="object",
            properties={k: _property(v) for k, v in parameters["properties"].items()},
            required=list(parameters.get("required", [])),
        ),
    )


ToolHandler = Callable[[AmritaToolContext], Awaitable[str]]
#: Adds what only an async look-up can tell (LitePerm nodes) to the speaker of a turn,
#: for the tools whose permission depends on it (the knowledge reads).
Enrich = Callable[[Any, ToolContext], Awaitable[ToolContext]]


def _tool_handler(
    name: str, provider: MemoryProvider, identify: Identify, enrich: Enrich | None = None
) -> ToolHandler:
    """amrita-core's ``custom_run`` tool function for one of our tools (never raises).

    Every tool is registered (schemas are not filtered by who speaks); permission is
    decided by the call, with the speaker's roles — LitePerm's nodes added by ``enrich``
    for the tools that need them.
    """

    async def handler(call: AmritaToolContext) -> str:
        memory = _current(provider)
        if memory is None:
            return error_reply(NOT_READY)
        chat_object = getattr(call.ctx, "chat_object", None)
        ctx = identify(chat_object)
        if ctx is None:
            return error_reply(NO_CONTEXT)
        if enrich is not None and name in READ_TOOLS:
            try:
                ctx = await enrich(chat_object, ctx)
            except Exception:  # an optional permission plugin: its failure denies, never breaks
                log.warning("permission look-up for %s failed; using the base roles", name)
        return await memory.call_tool(name, call.data, ctx)

    handler.__name__ = handler.__qualname__ = f"amrita_memory_pg_{name}"
    return handler


def register_tools(
    provider: MemoryProvider,
    schemas: Iterable[Mapping[str, Any]],
    *,
    manager: MultiToolsManager | None = None,
    identify: Identify = chat_context,
    enrich: Enrich | None = None,
) -> list[str]:
    """Register one amrita-core tool per schema (all or none); returns the names.

    ``schemas`` is ``Memory.tool_schemas()``. A name that is already registered —
    typically because amrita_plugin_memory is still loaded — raises :class:`ConfigError`
    and leaves the manager as it was.
    """
    target = manager if manager is not None else ToolsManager()
    tools = [
        ToolData(
            # strict=True and custom_run=True: as the reference registered them
            data=ToolFunctionSchema(function=amrita_schema(s), type="function", strict=True),
            func=_tool_handler(s["function"]["name"], provider, identify, enrich),
            custom_run=True,
        )
        for s in schemas
    ]
    names: list[str] = []
    for tool in tools:
        name = tool.data.function.name
        try:
            target.register_tool(tool)
        except ValueError as exc:  # amrita-core: "Tool '…' already exists."
            for done in names:
                target.remove_tool(done)
            raise ConfigError(
                f"amrita-core already has a tool named {name}: unload amrita_plugin_memory "
                "(or whatever registered it) before installing amrita_memory_pg"
            ) from exc
        names.append(name)
    return names


class _Injected:
    """The memo text put into each running turn, by stream id, until its completion.

    Bounded so that turns which fail before their completion cannot grow it forever.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._items: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity

    def put(self, key: str, text: str) -> None:
        self._items[key] = text
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)

    def pop(self, key: str) -> str | None:
        return self._items.pop(key, None)


def user_text(user_input: Any) -> str:
    """The text of a turn's user input (a string, or amrita-core content parts: their
    ``text``), for the relevant-memories part of the block."""
    if isinstance(user_input, str):
        return user_input.strip()
    if not isinstance(user_input, Iterable):
        return ""
    parts = [getattr(part, "text", None) for part in user_input]
    return "\n".join(p for p in parts if isinstance(p, str) and p).strip()


def register_trigger_hook(
    provider: MemoryProvider,
    *,
    identify: Identify = chat_context,
    schedule: Callable[[list[ScheduledRun]], object] | None = None,
    priority: int = TRIGGER_HOOK_PRIORITY,
) -> list[Matcher]:
    """The L3 trigger (reference §8.2): every completion for an L3 target's speaker —
    in any chat — is observed and bumps the penalty; a cycle of that target running in
    any process gives way at its next tool-call boundary. ``schedule`` gets the runs
    to (re)schedule (the NoneBot plugin's job wiring). Never raises into the chat."""
    pre = on_precompletion(priority=priority, block=False)

    async def amrita_memory_pg_l3_trigger(event: PreCompletionEvent) -> None:
        try:
            memory = _current(provider)
            ctx = identify(event.chat_object)
            if memory is None or ctx is None or not memory.scheduling.enabled:
                return
            runs = await memory.scheduling.on_user_message(ctx.personal_key, ctx.group_key)
            if runs and schedule is not None:
                schedule(runs)
        except Exception:  # a hook's outer edge: the chat goes on
            log.exception("the L3 trigger failed")

    pre.append_handler(amrita_memory_pg_l3_trigger)
    return [pre]


def register_memory_hook(
    provider: MemoryProvider,
    *,
    identify: Identify = chat_context,
    priority: int = MEMO_HOOK_PRIORITY,
    persona: HostPersona | None = None,
) -> list[Matcher]:
    """Register the memo injection (and its clean-up); returns the two matchers.
    ``persona`` remembers each private turn's system prompt (the L3 templates' persona)."""
    injected = _Injected()
    pre = on_precompletion(priority=priority, block=False)
    post = on_completion(priority=priority, block=False)

    async def amrita_memory_pg_inject_memo(event: PreCompletionEvent) -> None:
        try:
            memory = _current(provider)
            ctx = identify(event.chat_object)
            if memory is None or ctx is None:
                return
            if persona is not None:
                persona.observe(event.chat_object, ctx.in_group)
            block = await memory.memory_block(ctx, message=user_text(event.user_input) or None)
            if not block:
                return
            event.message.memory.insert(0, Message(role="system", content=block))
            injected.put(event.chat_object.stream_id, block)
        except Exception:  # a hook's outer edge: the chat goes on without the memo
            log.exception("injecting the memo block failed")

    async def amrita_memory_pg_remove_memo(event: CompletionEvent) -> None:
        block = injected.pop(event.chat_object.stream_id)
        if block is None:
            return
        history = event.message.memory
        history[:] = [
            m
            for m in history
            if not (isinstance(m, Message) and m.role == "system" and m.content == block)
        ]

    # amrita-sense injects handler arguments by their annotated type (the event class)
    pre.append_handler(amrita_memory_pg_inject_memo)
    post.append_handler(amrita_memory_pg_remove_memo)
    return [pre, post]


def remove_matchers(matchers: Iterable[Matcher]) -> None:
    """Unregister hook matchers (amrita-sense has no public call for it)."""
    gone = set(matchers)
    registry = EventRegistry()
    for event_type in (EventTypeEnum.BEFORE_COMPLETION, EventTypeEnum.COMPLETION):
        for handlers in registry.get_handlers(event_type).values():
            handlers[:] = [h for h in handlers if h.matcher not in gone]


def use_host_model(memory: Memory) -> bool:
    """The L3 loop on the host's chat preset (see :mod:`.model`); whether it is used."""
    model = HostModel(
        timeout_seconds=memory.settings.llm.timeout_seconds,
        fallback=memory.configured_loop_model(),
    )
    return memory.use_host_model(model, model.describe)


def lend_host_tools(memory: Memory, manager: MultiToolsManager | None = None) -> list[str]:
    """The names in ``[subconscious] allowed_tools`` that are another plugin's tools in
    amrita-core's registry, lent to the L3 loop (the reference copied them into its
    isolated tool set). The operator vouches that they only read: nothing here can tell.
    A ``custom_run`` tool needs a chat turn's context, which a cycle has not: left out,
    with a warning. Returns the names lent."""
    registry = manager if manager is not None else ToolsManager()
    ours = set(memory.tools.names())
    lent: list[str] = []
    for name in dict.fromkeys(memory.settings.subconscious.allowed_tools):
        tool = registry.get_tool(name)
        if name in ours or tool is None:
            continue
        if tool.custom_run:
            log.warning(
                "[subconscious] allowed_tools: %r needs a chat turn (custom_run); not lent", name
            )
            continue
        schema = tool.data.model_dump(exclude_none=True)
        func = tool.func

        async def call(args: dict[str, Any], func: Any = func) -> str:
            reply = await func(args)
            return "(this tool returned no content)" if reply is None else str(reply)

        if memory.lend_loop_tool(schema, call):
            lent.append(name)
            log.info("[subconscious] allowed_tools: %r lent from AmritaBot's tools", name)
    return lent


@dataclass
class Installation:
    """What :func:`install` registered, so that it can be taken back (tests, reloads)."""

    manager: MultiToolsManager
    tools: list[str]
    matchers: list[Matcher] = field(default_factory=list)
    #: AmritaBot's persona, for ``Memory.prompts.host_persona`` (install sets it on a
    #: :class:`Memory` provider itself)
    persona: HostPersona = field(default_factory=HostPersona)

    def uninstall(self) -> None:
        for name in self.tools:
            self.manager.remove_tool(name)
        remove_matchers(self.matchers)
        self.tools, self.matchers = [], []


def install(
    provider: MemoryProvider,
    *,
    schemas: Iterable[Mapping[str, Any]] | None = None,
    manager: MultiToolsManager | None = None,
    identify: Identify = chat_context,
    memo_hook: bool = True,
    enrich: Enrich | None = None,
    l3_trigger: bool = False,
    schedule: Callable[[list[ScheduledRun]], object] | None = None,
    host_model: bool = True,
) -> Installation:
    """Register the chat tools and the memo hook: the drop-in for amrita_plugin_memory.

    ``schemas`` defaults to the provider's ``tool_schemas()`` (then the provider must be
    open, or be a :class:`Memory`); pass them explicitly to install before start-up.
    ``l3_trigger``: count the L3 targets' completions (reference §8.2), ``schedule``
    receiving the runs they plan. ``host_model``: the L3 loop runs on the host's
    current preset unless ``[subconscious] llm_*`` names its own endpoint.
    """
    target = manager if manager is not None else ToolsManager()
    if schemas is None:
        memory = _current(provider)
        if memory is None:
            raise ConfigError("install() needs schemas= while the memory is not open yet")
        schemas = memory.tool_schemas()
    names = register_tools(provider, schemas, manager=target, identify=identify, enrich=enrich)
    persona = HostPersona()
    matchers = (
        register_memory_hook(provider, identify=identify, persona=persona) if memo_hook else []
    )
    if isinstance(provider, Memory):
        provider.prompts.host_persona = persona
        if host_model:
            use_host_model(provider)
        lend_host_tools(provider, target)
        provider.check_allowed_tools()
    if l3_trigger:
        matchers += register_trigger_hook(provider, identify=identify, schedule=schedule)
    return Installation(manager=target, tools=names, matchers=matchers, persona=persona)
