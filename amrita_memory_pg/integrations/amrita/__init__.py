"""AmritaBot adapter: our tools in amrita-core's tool manager, the memo in its pre-completion hook.

For users of the ChromaDB plugin (amrita-plugin-memory): the tools keep its names,
arguments and JSON replies, and the memo block goes in as a system message at the head
of the conversation on every completion (hook priority 15, non-blocking, as before), so
prompts written for the old plugin keep working. Only this package imports amrita-core.

Who is speaking comes from the chat object: AmritaBot passes its per-turn context
(``{"event": …, "bot": …}``) to amrita-core as ``hook_kwargs["amrita"]``; the NoneBot
event in it gives platform, user, group and roles exactly as our NoneBot plugin reads
them. Another host passes its own ``resolver``.
"""

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from amrita_core.hook.event import PreCompletionEvent
from amrita_core.hook.on import on_precompletion
from amrita_core.tools.manager import MultiToolsManager, ToolsManager
from amrita_core.tools.models import ToolContext as AmritaToolContext
from amrita_core.tools.models import ToolData, ToolFunctionSchema
from amrita_core.types.message import Message

from amrita_memory_pg.domain.memo import BLOCK_PREFIXES
from amrita_memory_pg.service import Memory
from amrita_memory_pg.tools.context import ToolContext

log = logging.getLogger(__name__)

#: the key under which AmritaBot hands its per-turn context to amrita-core hooks and tools
HOST_CONTEXT_KEY = "amrita"
#: after the DMN hook (10), like the old plugin: both insert at the head, memo ends first
MEMO_HOOK_PRIORITY = 15
MEMO_TOOLS = ("read_memo", "append_memo", "update_memo")
MEMORY_TOOLS = ("write_memory", "read_memory", "update_memory", "delete_memory", "list_memory")

#: the open memory, or None while it is not (yet) open; looked up on every call
MemoryProvider = Callable[[], Memory | None]
#: amrita-core chat object → the speaker, or None outside a bot turn
SpeakerResolver = Callable[[Any], Awaitable[ToolContext | None]]


def host_context(chat_object: Any) -> dict[str, Any] | None:
    """AmritaBot's per-turn context (event, bot, …) carried by the chat object, if any."""
    kwargs = getattr(chat_object, "_hook_kwargs", None)
    value = kwargs.get(HOST_CONTEXT_KEY) if isinstance(kwargs, dict) else None
    return value if isinstance(value, dict) else None


async def speaker_from_host(chat_object: Any) -> ToolContext | None:
    """The speaker of an AmritaBot turn, read from its NoneBot event like our plugin does."""
    host = host_context(chat_object)
    if host is None or host.get("event") is None or host.get("bot") is None:
        return None
    # AmritaBot runs on NoneBot, so the NoneBot adapter's reading of an event applies.
    from amrita_memory_pg.integrations.nonebot.context import tool_context

    return await tool_context(host["bot"], host["event"], check_liteperm=True)


def amrita_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Our OpenAI schema in amrita-core's model, which refuses ``null`` inside an ``enum``.

    A nullable parameter keeps ``"type": [t, "null"]``, so ``null`` stays allowed.
    """
    function = schema["function"]
    properties = {
        name: {k: ([x for x in v if x is not None] if k == "enum" else v) for k, v in prop.items()}
        for name, prop in function["parameters"]["properties"].items()
    }
    parameters = {**function["parameters"], "properties": properties}
    return {**schema, "function": {**function, "parameters": parameters}}


def is_memo_block(message: Any) -> bool:
    """A system message holding a memo block that we injected."""
    content = getattr(message, "content", None)
    return (
        getattr(message, "role", None) == "system"
        and isinstance(content, str)
        and content.startswith(BLOCK_PREFIXES)
    )


def _error(message: str) -> str:
    return json.dumps({"status": "error", "message": message}, ensure_ascii=False)


class AmritaMemory:
    """Our memory, plugged into amrita-core: tools in a tool manager, memo in the hook."""

    def __init__(
        self,
        memory: Memory | MemoryProvider,
        *,
        resolver: SpeakerResolver = speaker_from_host,
        manager: MultiToolsManager | None = None,
    ) -> None:
        self._memory: MemoryProvider = memory if callable(memory) else (lambda: memory)
        self.resolver = resolver
        #: amrita-core's global manager unless told otherwise (the one its agents call)
        self.manager = manager if manager is not None else ToolsManager()
        self._hooked = False

    def register_tools(
        self, names: Iterable[str] = MEMORY_TOOLS + MEMO_TOOLS, *, replace: bool = True
    ) -> list[str]:
        """Register the tools under the reference names; an existing one is replaced.

        ``replace`` lets a re-start (or a swap from the old plugin in the same process)
        take the names over instead of failing on amrita-core's "already exists".
        """
        memory = self._memory()
        if memory is None:
            raise RuntimeError("the memory is not open: register the tools after open_memory()")
        schemas = {s["function"]["name"]: s for s in memory.tool_schemas(list(names))}
        for name, schema in schemas.items():
            if replace:
                self.manager.remove_tool(name)
            self.manager.register_tool(
                ToolData(
                    data=ToolFunctionSchema.model_validate(amrita_schema(schema)),
                    func=self._tool(name),
                    custom_run=True,
                )
            )
        return list(schemas)

    def unregister_tools(self, names: Iterable[str] = MEMORY_TOOLS + MEMO_TOOLS) -> None:
        for name in names:
            self.manager.remove_tool(name)

    def _tool(self, name: str) -> Callable[[AmritaToolContext], Awaitable[str | None]]:
        async def run(call: AmritaToolContext) -> str:
            return await self.call(name, call)

        run.__name__ = name
        return run

    async def call(self, name: str, call: AmritaToolContext) -> str:
        """One tool call from amrita-core: our JSON reply, or an error envelope; never raises."""
        memory = self._memory()
        if memory is None:
            return _error("记忆服务未就绪，请稍后再试")
        chat_object = getattr(call.ctx, "chat_object", None)
        try:
            speaker = await self.resolver(chat_object)
        except Exception as exc:  # a host's context that we cannot read must not break the chat
            log.warning("cannot read the speaker of this turn: %s", exc, exc_info=True)
            speaker = None
        if speaker is None:
            return _error(f"调用 {name} 需要聊天上下文（发言人），本次调用没有")
        return await memory.call_tool(name, call.data, speaker)

    def register_memo_hook(self, priority: int = MEMO_HOOK_PRIORITY) -> None:
        """Inject the memo block on every completion (once per adapter object)."""
        if self._hooked:
            return
        matcher = on_precompletion(priority=priority, block=False)

        async def inject_memo(event: PreCompletionEvent) -> None:
            await self.inject(event)

        matcher.handle()(inject_memo)
        self._hooked = True

    async def inject(self, event: PreCompletionEvent) -> None:
        """Put the memo block first in the conversation (after the preset's system prompt).

        Nothing outside a bot turn or before the memory opened; an empty memo adds nothing.
        """
        memory = self._memory()
        if memory is None:
            return
        speaker = await self.resolver(event.chat_object)
        if speaker is None:
            return
        block = await memory.memory_block(speaker)
        history = event.message.memory
        # amrita-core keeps the context (system messages included) as the next turn's
        # history: drop an earlier turn's block so that blocks never pile up.
        history[:] = [m for m in history if not is_memo_block(m)]
        if block:
            history.insert(0, Message[str](role="system", content=block))

    def install(self) -> list[str]:
        """Tools and hook together: what a bot does once its memory is open."""
        names = self.register_tools()
        self.register_memo_hook()
        return names


__all__ = [
    "HOST_CONTEXT_KEY",
    "MEMO_HOOK_PRIORITY",
    "AmritaMemory",
    "host_context",
    "speaker_from_host",
]
