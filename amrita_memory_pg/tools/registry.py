"""Tool declarations, argument validation and the JSON envelope.

One declaration per tool (:class:`ToolSpec` with its :class:`Param` list) produces both
the OpenAI function-calling schema and the validation, so the two never drift apart.
:meth:`ToolRegistry.call` is the outermost edge: whatever happens inside, the LLM gets
a JSON reply — ``{"status": "error", "message": …}`` telling it what to fix — and
nothing raises into the chat.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from amrita_memory_pg.domain.errors import DatabaseError, ToolError
from amrita_memory_pg.storage.pg.outcome import classify
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.failures import failure_cause, failure_message

log = logging.getLogger(__name__)

ParamType = Literal["string", "integer", "boolean"]
_MISSING: Any = object()


@dataclass(frozen=True)
class Param:
    """One tool argument: its schema and its validation rules."""

    name: str
    type: ParamType
    description: str
    required: bool = False
    enum: tuple[str, ...] | None = None
    nullable: bool = False
    default: Any = _MISSING
    minimum: int | None = None
    maximum: int | None = None
    #: out-of-range integers are clamped (the reference clamps list limits) instead of refused
    clamp: bool = False
    max_length: int | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": [self.type, "null"] if self.nullable else self.type}
        out["description"] = self.description
        if self.enum is not None:
            out["enum"] = [*self.enum, None] if self.nullable else list(self.enum)
        if self.default is not _MISSING:
            out["default"] = self.default
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        return out


Args = dict[str, Any]
Handler = Callable[[Args, ToolContext], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[Param, ...]
    handler: Handler
    #: the prefix of unexpected-failure messages, e.g. «写入记忆失败»
    failure_prefix: str = ""
    extra_schema: Mapping[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        """OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in self.params},
                    "required": [p.name for p in self.params if p.required],
                    "additionalProperties": False,
                },
            },
        }


def _coerce(tool: str, param: Param, value: Any) -> Any:
    """Validate one present, non-null value; raise ToolError saying what to fix."""
    name = param.name
    if param.type == "string":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ToolError(f"{tool} 的参数 {name} 应为字符串，收到 {type(value).__name__}")
        text = value if isinstance(value, str) else str(value)
        if param.enum is not None and text not in param.enum:
            allowed = " | ".join(param.enum)
            raise ToolError(f"{tool} 的参数 {name} 只能是 {allowed}，收到 {text!r}")
        if param.max_length is not None and len(text) > param.max_length:
            raise ToolError(
                f"{tool} 的参数 {name} 过长（{len(text)} 字符，上限 {param.max_length}），请精简后重试"
            )
        return text
    if param.type == "integer":
        number: int
        if isinstance(value, bool):
            raise ToolError(f"{tool} 的参数 {name} 应为整数，收到布尔值")
        if isinstance(value, int):
            number = value
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            number = int(value.strip())
        else:
            raise ToolError(f"{tool} 的参数 {name} 应为整数，收到 {value!r}")
        lo, hi = param.minimum, param.maximum
        if param.clamp:
            if lo is not None:
                number = max(lo, number)
            if hi is not None:
                number = min(hi, number)
        elif (lo is not None and number < lo) or (hi is not None and number > hi):
            raise ToolError(f"{tool} 的参数 {name} 应在 {lo}–{hi} 之间，收到 {number}")
        return number
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ToolError(f"{tool} 的参数 {name} 应为 true 或 false，收到 {value!r}")


def validate(spec: ToolSpec, raw: Mapping[str, Any]) -> Args:
    """Checked arguments: required ones present (in schema order), types and ranges right."""
    known = {p.name for p in spec.params}
    unknown = sorted(set(raw) - known)
    if unknown:
        allowed = ", ".join(p.name for p in spec.params) or "（无参数）"
        raise ToolError(f"{spec.name} 不接受参数 {', '.join(unknown)}；可用参数: {allowed}")
    args: Args = {}
    for param in spec.params:
        value = raw.get(param.name, _MISSING)
        if value is _MISSING or value is None:
            if param.required:
                # The reference's wording, so prompts written for it keep working.
                raise ToolError(f"调用 {spec.name} 工具必须带有 {param.name} 参数")
            if value is None and param.nullable:
                args[param.name] = None
            elif param.default is not _MISSING:
                args[param.name] = param.default
            continue
        args[param.name] = _coerce(spec.name, param, value)
    return args


def dumps(payload: Mapping[str, Any]) -> str:
    """The JSON text the LLM sees (4-space indent, non-ASCII kept, like the reference)."""
    return json.dumps(payload, ensure_ascii=False, indent=4)


def error_reply(message: str, **extra: Any) -> str:
    return dumps({"status": "error", "message": message, **extra})


class ToolRegistry:
    """The tools one memory instance offers, by name."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._tools:
            raise ValueError(f"tool {spec.name} registered twice")
        self._tools[spec.name] = spec

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        chosen = self._tools.values() if names is None else [self._tools[n] for n in names]
        return [spec.schema() for spec in chosen]

    async def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, ctx: ToolContext
    ) -> str:
        """Run a tool and return its JSON reply; never raises."""
        spec = self._tools.get(name)
        if spec is None:
            return error_reply(f"未知工具 {name}；可用工具: {', '.join(self._tools)}")
        try:
            raw: Any = arguments or {}
            if isinstance(raw, str):
                try:
                    raw = json.loads(raw) if raw.strip() else {}
                except json.JSONDecodeError as exc:
                    raise ToolError(f"{name} 的参数不是合法 JSON: {exc.msg}") from exc
            if not isinstance(raw, Mapping):
                raise ToolError(f"{name} 的参数应为 JSON 对象")
            args = validate(spec, raw)
            result = await spec.handler(args, ctx)
        except ToolError as exc:
            return error_reply(exc.message, **exc.extra)
        except Exception as exc:  # the outermost edge: log it, tell the LLM, keep the chat alive
            prefix = spec.failure_prefix or f"{name} 失败"
            # issue 11 F7: never an empty message; say whether anything changed, what to do.
            message = failure_message(name, prefix, exc)
            if isinstance(exc, DatabaseError) or classify(exc, sent=True) is not None:
                # An outage, not a bug: one line per call, no traceback.
                log.warning("tool %s failed: %s", name, failure_cause(exc))
            else:
                log.exception("tool %s failed", name)
            return error_reply(message)
        return dumps(result)
