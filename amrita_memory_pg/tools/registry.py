"""Tool registries: the tools one audience is offered, their schemas, and the JSON envelope.

A :class:`Tool` is a name, a description, a pydantic argument model
(:mod:`amrita_memory_pg.tools.args`) and a handler; the model gives both the OpenAI
function-calling schema and the validation, so the two never drift apart. There is one
:class:`ToolRegistry` per audience — the chat LLM, the background consolidation loop —
because they are offered different tools with different rights, and the service
composes the ones it is configured for (:mod:`amrita_memory_pg.tools.audiences`).

:meth:`ToolRegistry.call` is the outermost edge: whatever happens inside, the caller
gets a JSON reply — ``{"status": "error", "message": …}`` telling it what to fix — and
nothing raises into the chat.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, get_type_hints

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import (
    DatabaseError,
    EmbeddingError,
    FingerprintMismatch,
    MemoryPaused,
    ToolError,
)
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.domain.validation import plain
from amrita_memory_pg.storage.pg.outcome import classify
from amrita_memory_pg.tools.args import ArgumentError, ToolArgs, openai_parameters, parse_args
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.failures import failure_cause, failure_message
from amrita_memory_pg.tools.jsontext import indented

log = logging.getLogger(__name__)

__all__ = [
    "Audience",
    "BoundHandler",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "declare",
    "declared",
    "dumps",
    "error_reply",
    "not_offered",
]


#: the reply statuses ``/metrics`` tells apart (any other counts as success)
_STATUSES = frozenset({"success", "error", "paused", "queued"})

#: Who a registry serves: the chat LLM, or the background consolidation (L3) loop.
Audience = Literal["chat", "consolidation"]

ArgsT = TypeVar("ArgsT", bound=ToolArgs)


@dataclass(frozen=True)
class Tool(Generic[ArgsT]):
    """One tool: what the model is told (name, description, argument model) and its handler."""

    name: str
    description: str
    args: type[ArgsT]
    handler: Callable[[ArgsT, ToolContext], Awaitable[dict[str, Any]]]
    #: the prefix of unexpected-failure messages, e.g. «写入记忆失败»
    failure_prefix: str = ""
    #: consolidation loop: whether a cycle is offered this tool, decided on its
    #: ``subconscious_get_context`` reply (None: always). A tool not offered still runs
    #: when called by name — offering fewer schemas only saves the model's prompt tokens.
    offer: Callable[[Mapping[str, Any]], bool] | None = None
    #: changes nothing: a chat tool the consolidation loop may borrow (``allowed_tools``)
    read_only: bool = False
    #: the reply when the partition is paused (:class:`MemoryPaused` from the use case or
    #: the database): a reply, or a :class:`ToolError` raised; None: the generic refusal
    on_paused: Callable[[MemoryPaused], dict[str, Any]] | None = None

    def schema(self) -> dict[str, Any]:
        """OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": openai_parameters(self.args),
            },
        }

    async def run(self, raw: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Validate ``raw`` with the argument model, then run the handler."""
        try:
            args = parse_args(self.name, self.args, raw)
        except ArgumentError as exc:
            raise ToolError(exc.message) from exc
        return await self.handler(args, ctx)


def not_offered(context: Mapping[str, Any]) -> bool:
    """A :attr:`Tool.offer` that offers the tool in no cycle (it still runs when called)."""
    return False


#: a tool handler method (``self``, the parsed arguments, the call's context)
HandlerT = TypeVar("HandlerT", bound=Callable[..., Awaitable[dict[str, Any]]])


#: the attribute :func:`declare` sets on a handler function
_MARK = "_tool_declaration"


@dataclass(frozen=True, slots=True)
class _Declaration:
    """What :func:`declare` puts on a handler method: its :class:`Tool` but for the
    handler and the argument model (both read from the bound method)."""

    name: str
    description: str
    failure_prefix: str
    offer: Callable[[Mapping[str, Any]], bool] | None
    read_only: bool
    on_paused: Callable[[MemoryPaused], dict[str, Any]] | None


def declare(
    name: str,
    description: str,
    failure_prefix: str,
    *,
    offer: Callable[[Mapping[str, Any]], bool] | None = None,
    read_only: bool = False,
    on_paused: Callable[[MemoryPaused], dict[str, Any]] | None = None,
) -> Callable[[HandlerT], HandlerT]:
    """Declare a handler method as the tool ``name`` (the fields of :class:`Tool`), so
    the declaration stands beside its code and names the argument model once (the
    handler's ``args`` annotation); :func:`declared` makes the tool of a bound one."""
    mark = _Declaration(name, description, failure_prefix, offer, read_only, on_paused)

    def decorate(handler: HandlerT) -> HandlerT:
        handler.__dict__[_MARK] = mark
        return handler

    return decorate


#: a bound handler method, whatever its argument model
BoundHandler = Callable[[Any, ToolContext], Awaitable[dict[str, Any]]]


def declared(handler: BoundHandler) -> Tool[Any]:
    """The :class:`Tool` that :func:`declare` made of a bound handler method."""
    mark: _Declaration = getattr(handler, _MARK)
    return Tool(
        mark.name,
        mark.description,
        get_type_hints(handler)["args"],
        handler,
        mark.failure_prefix,
        offer=mark.offer,
        read_only=mark.read_only,
        on_paused=mark.on_paused,
    )


def dumps(payload: Mapping[str, Any], *, compact: bool = False) -> str:
    """The JSON text the LLM sees (4-space indent, non-ASCII kept, like the reference).

    ``compact``: no whitespace at all — the consolidation loop's replies stay in its
    context for every later call of the cycle, so each indent is paid many times.
    Should a value ever hold a lone surrogate (text that is not Unicode, so not UTF-8
    either), the reply is escaped instead: still the same JSON, and sendable.
    """
    layout: dict[str, Any] = {"separators": (",", ":")} if compact else {"indent": 4}
    # the indented text without json's pure-Python indenting encoder (tools/jsontext.py)
    text = json.dumps(payload, ensure_ascii=False, **layout) if compact else indented(payload)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, **layout)
    return text


def error_reply(message: str, *, compact: bool = False, **extra: Any) -> str:
    return dumps({"status": "error", "message": message, **extra}, compact=compact)


#: what a loop schema leaves out of a property: checked or applied on the call all the
#: same (a length refused, a number clamped, an omitted argument defaulted), so the
#: model needs none of it to call right, and every schema is re-sent with every call
_UNOFFERED_KEYS = ("maxLength", "default", "minimum", "maximum")


def offered_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's schema as a consolidation cycle is shown it: the same names, types, enums
    and descriptions, without what the call checks anyway — ``maxLength``, defaults and
    ranges of the properties, ``null`` as an alternative type (an optional argument is
    one the model leaves out; a null is still read as its default), the
    ``additionalProperties: false`` (an unknown key is refused by name) and an empty
    ``required``. About a third of a small schema's tokens (measured in
    consolidation.md)."""
    parameters = schema["function"]["parameters"]
    for prop in (parameters.get("properties") or {}).values():
        if not isinstance(prop, dict):
            continue
        for key in _UNOFFERED_KEYS:
            prop.pop(key, None)
        types = prop.get("type")
        if isinstance(types, list) and "null" in types:
            rest = [t for t in types if t != "null"]
            prop["type"] = rest[0] if len(rest) == 1 else rest
            if "enum" in prop:
                prop["enum"] = [v for v in prop["enum"] if v is not None]
    parameters.pop("additionalProperties", None)
    if not parameters.get("required"):
        parameters.pop("required", None)
    return schema


def _arguments(name: str, arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    """The call's arguments as a mapping; they may arrive as JSON text."""
    raw: Any = arguments or {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(f"{name} 的参数不是合法 JSON: {exc.msg}") from exc
        except RecursionError as exc:
            raise ToolError(f"{name} 的参数 JSON 嵌套过深") from exc
    if not isinstance(raw, Mapping):
        raise ToolError(f"{name} 的参数应为 JSON 对象")
    return raw


class ToolRegistry:
    """The tools one audience is offered, by name, in registration order."""

    def __init__(self, audience: Audience) -> None:
        self.audience = audience
        self._tools: dict[str, Tool[Any]] = {}
        #: the loop's replies are compact JSON (they are re-sent with every later call)
        self.compact = audience == "consolidation"
        #: other names a tool is called by: accepted by :meth:`call`, never in the schemas
        self._aliases: dict[str, str] = {}
        #: tools accepted by :meth:`call` but not offered (left out of :meth:`schemas`):
        #: the naming of the write tools the settings do not offer (``tool_names``)
        self._hidden: set[str] = set()
        #: run first for every call of a cycle with its target (the loop's pause check:
        #: raises :class:`MemoryPaused`); tools in :attr:`ungated` skip it
        self.gate: Callable[[str], Awaitable[None]] | None = None
        self.ungated: frozenset[str] = frozenset()
        #: the paused reply of a tool that names none (None: the generic refusal)
        self.on_paused: Callable[[MemoryPaused], dict[str, Any]] | None = None

    def register(self, tool: Tool[Any], *, offered: bool = True) -> None:
        """Add ``tool``; ``offered=False`` accepts its calls without showing its schema."""
        if tool.name in self._tools or tool.name in self._aliases:
            raise ValueError(f"tool {tool.name} registered twice for {self.audience}")
        self._tools[tool.name] = tool
        if not offered:
            self._hidden.add(tool.name)

    def alias(self, alias: str, name: str) -> None:
        """Accept ``alias`` as another name of tool ``name`` (e.g. the reference's wire
        name); the LLM is shown only ``name``, so it is offered each tool once."""
        if name not in self._tools:
            raise ValueError(f"alias {alias} of unknown tool {name}")
        if alias in self._tools or alias in self._aliases:
            raise ValueError(f"tool {alias} registered twice for {self.audience}")
        self._aliases[alias] = name

    def aliases(self) -> dict[str, str]:
        return dict(self._aliases)

    def names(self) -> list[str]:
        """Every tool :meth:`call` runs, offered or not."""
        return list(self._tools)

    def offered_names(self) -> list[str]:
        """The tools the model is shown (:meth:`schemas`), in registration order."""
        return [name for name in self._tools if name not in self._hidden]

    def get(self, name: str) -> Tool[Any] | None:
        """The tool of ``name``, or of the name ``name`` is an alias of."""
        return self._tools.get(self._aliases.get(name, name))

    def __len__(self) -> int:
        return len(self._tools)

    def schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """The schemas of ``names`` (default: the tools offered)."""
        chosen = self.offered_names() if names is None else names
        return [self._tools[name].schema() for name in chosen]

    def offered(self, context: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The schemas a consolidation cycle is shown, given its get_context reply, as
        :func:`offered_schema` trims them (the loop's prompt pays every schema on every
        model call)."""
        return [
            offered_schema(tool.schema())
            for name, tool in self._tools.items()
            if name not in self._hidden and (tool.offer is None or tool.offer(context))
        ]

    def actor(self, ctx: ToolContext) -> Actor:
        """Who the change history names for this audience's writes: the chat LLM of the
        speaker's chat, or the L3 loop's cycle."""
        if ctx.cycle is not None:
            return Actor("l3", f"cycle {ctx.cycle.cycle_id} · {ctx.cycle.target_key}")
        return Actor("llm", ctx.session_key)

    async def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, ctx: ToolContext
    ) -> str:
        """Run a tool and return its JSON reply; never raises. Counted in ``/metrics`` by
        tool and status (an unknown name as ``unknown``: the label set stays bounded)."""
        started = time.perf_counter()
        reply, tool, status = await self._call(name, arguments, ctx)
        metrics.record_tool_call(
            self.audience, tool or "unknown", status, time.perf_counter() - started
        )
        return reply

    async def _call(
        self, name: str, arguments: Mapping[str, Any] | str | None, ctx: ToolContext
    ) -> tuple[str, str | None, str]:
        """The reply, the tool's registered name (None: no such tool) and the status."""
        tool = self.get(name) if isinstance(name, str) else None
        if tool is None:
            available = ", ".join(self.offered_names()) or "（无）"
            reply = error_reply(
                f"未知工具 {plain(str(name))}；可用工具: {available}", compact=self.compact
            )
            return reply, None, "unknown"
        try:
            with acting(self.actor(ctx)):
                if (
                    self.gate is not None
                    and ctx.cycle is not None
                    and tool.name not in self.ungated
                ):
                    await self.gate(ctx.cycle.target_key)
                result = await tool.run(_arguments(name, arguments), ctx)
        except ToolError as exc:
            return error_reply(exc.message, compact=self.compact, **exc.extra), tool.name, "error"
        except MemoryPaused as exc:  # a paused scope: checked first, and by the database (AMZ01)
            return self._paused(tool, exc), tool.name, "paused"
        except Exception as exc:  # the outermost edge: log it, tell the LLM, keep the chat alive
            prefix = tool.failure_prefix or f"{name} 失败"
            # never an empty message (an empty one made the LLM retry into duplicates): say
            # whether anything changed and what to do.
            message = failure_message(name, prefix, exc)
            if (
                isinstance(exc, DatabaseError | EmbeddingError | FingerprintMismatch)
                or classify(exc, sent=True) is not None
            ):
                # An outage or a model change, not a bug: one line per call, no traceback.
                log.warning("tool %s failed: %s", name, failure_cause(exc))
            else:
                log.exception("tool %s failed", name)
            return error_reply(message, compact=self.compact), tool.name, "failed"
        status = result.get("status")
        return (
            dumps(result, compact=self.compact),
            tool.name,
            status if status in _STATUSES else "success",
        )

    def _paused(self, tool: Tool[Any], exc: MemoryPaused) -> str:
        """The one mapping of a paused partition to the model's reply."""
        on_paused = tool.on_paused or self.on_paused
        if on_paused is not None:
            try:
                return dumps(on_paused(exc), compact=self.compact)
            except ToolError as refused:
                return error_reply(refused.message, compact=self.compact, **refused.extra)
        return error_reply(
            f"该作用域（{exc.partition_key}）的记忆已被管理员暂停：暂停期间自动流程不能修改记忆，"
            "什么都没有改变。请不要重试",
            compact=self.compact,
            paused=True,
        )
