"""Tool arguments as pydantic models: one declaration gives the schema and the validation.

Each tool declares a :class:`ToolArgs` subclass; :func:`openai_parameters` turns it into
the ``parameters`` object of the OpenAI function-calling format, in the shape the
reference plugin sent (``"type": ["string", "null"]`` for nullable arguments, ``enum``
with a trailing ``null``, properties in declaration order), and :func:`parse_args`
validates a call with it. Pydantic's own error text never reaches the LLM: the first
problem, in argument order, becomes one plain sentence naming the argument and what is
allowed (:func:`explain`), worded like the reference where it had a wording.

Field types carry the shared checks of :mod:`amrita_memory_pg.domain.validation`:
:data:`Text` refuses NUL and lone surrogates, :data:`Integer` takes only whole numbers
within int64, :class:`Clamp` moves an integer into its range as the reference did for
list limits.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, ErrorDetails, core_schema

from amrita_memory_pg.domain.validation import (
    InvalidInput,
    check_text,
    clamp,
    echo,
    parse_int,
    plain,
    text_problem,
    too_long,
)


class ArgumentError(ValueError):
    """A call's arguments were refused; ``message`` is the sentence for the LLM."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def numbers_as_text(value: object) -> object:
    """The reference accepts numbers for string arguments (``5`` → ``"5"``); not booleans."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _storable(text: str) -> str:
    return check_text(text)


def _whole_number(value: object) -> object:
    # None passes through so that a missing required argument is reported as missing.
    return value if value is None else parse_int(value)


#: A string argument: numbers become text, NUL and lone surrogates are refused.
Text = Annotated[str, BeforeValidator(numbers_as_text), AfterValidator(_storable)]

#: An integer argument: int, integral float or ASCII-digit string, within int64.
Integer = Annotated[int, BeforeValidator(_whole_number)]


@dataclass(frozen=True, slots=True)
class Clamp:
    """Move an integer into ``minimum..maximum`` instead of refusing it; the schema shows both."""

    minimum: int | None = None
    maximum: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            lambda number: clamp(number, self.minimum, self.maximum), handler(source)
        )

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: Any) -> JsonSchemaValue:
        out: JsonSchemaValue = handler(schema)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


@dataclass(frozen=True, slots=True)
class Range:
    """Show ``minimum..maximum`` in the schema like :class:`Clamp`, but keep the number as
    sent: the handler clamps it and says so in its reply (read_memory's ``top_k``),
    instead of silently returning fewer than asked."""

    minimum: int | None = None
    maximum: int | None = None

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: Any) -> JsonSchemaValue:
        out: JsonSchemaValue = handler(schema)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown keys refused, no silent type coercion.

    ``strict`` keeps pydantic from turning ``True`` into ``1`` or bytes into text; the
    coercions the reference allowed are the explicit before-validators of the field
    types above.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    #: the order the reference's schema listed the keys of one property in
    SCHEMA_KEY_ORDER: ClassVar[tuple[str, ...]] = (
        "type",
        "description",
        "enum",
        "default",
        "minimum",
        "maximum",
        "maxLength",
    )

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        """``null`` for an argument with a default is that default, as in the reference
        (``"top_k": null`` reads 5); a required argument sent as null stays missing."""
        if not isinstance(data, Mapping):
            return data
        return {
            key: value
            for key, value in data.items()
            if not (
                value is None
                and key in cls.model_fields
                and cls.model_fields[key].default is not None
                and not cls.model_fields[key].is_required()
            )
        }


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


def _property(name: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """One property in the reference's shape: a nullable ``anyOf`` folded into a type list."""
    body = dict(raw)
    body.pop("title", None)
    nullable = False
    if "anyOf" in body:
        members = body.pop("anyOf")
        others = [m for m in members if m != {"type": "null"}]
        if len(members) != 2 or len(others) != 1:
            raise TypeError(f"argument {name}: only X | None unions are supported")
        nullable = True
        body = {**others[0], **body}
    if "type" not in body:
        raise TypeError(f"argument {name}: the schema needs a JSON type, got {sorted(body)}")
    if nullable:
        body["type"] = [body["type"], "null"]
        if "enum" in body:
            body["enum"] = [*body["enum"], None]
        # A null default is the absence of a value, which "not required" already says.
        if "default" in body and body["default"] is None:
            del body["default"]
    ordered = {key: body.pop(key) for key in ToolArgs.SCHEMA_KEY_ORDER if key in body}
    return {**ordered, **body}


def openai_parameters(model: type[ToolArgs]) -> dict[str, Any]:
    """The ``parameters`` object of a tool, generated from its argument model.

    Generated once per model (pydantic takes ~2 ms a model, and the schemas are sent
    every turn); each caller gets its own copy to do with as it likes.
    """
    return copy.deepcopy(_generated_parameters(model))


@functools.cache
def _generated_parameters(model: type[ToolArgs]) -> dict[str, Any]:
    generated = model.model_json_schema()
    if "$defs" in generated:
        raise TypeError(f"{model.__name__}: nested models are not supported in tool arguments")
    properties = generated.get("properties", {})
    return {
        "type": "object",
        "properties": {name: _property(name, prop) for name, prop in properties.items()},
        "required": list(generated.get("required", [])),
        "additionalProperties": False,
    }


def _allowed(model: type[ToolArgs], field: str) -> list[Any]:
    prop = _generated_parameters(model)["properties"].get(field, {})
    return [value for value in prop.get("enum", []) if value is not None]


def unknown_arguments(tool: str, model: type[ToolArgs], names: list[str]) -> str:
    """The refusal of arguments the tool does not have, listing the ones it does."""
    shown = ", ".join(plain(name) for name in sorted(names))
    allowed = ", ".join(model.model_fields) or "（无参数）"
    return f"{tool} 不接受参数 {shown}；可用参数: {allowed}"


def explain(tool: str, model: type[ToolArgs], errors: list[ErrorDetails]) -> str:
    """One sentence for the first problem: unknown arguments, then fields in declaration order."""
    fields = list(model.model_fields)
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and e["loc"]]
    if unknown:
        return unknown_arguments(tool, model, unknown)

    def position(error: ErrorDetails) -> int:
        head = error["loc"][0] if error["loc"] else ""
        return fields.index(head) if head in fields else len(fields)

    first = min(errors, key=position)
    name = str(first["loc"][0]) if first["loc"] else ""
    value = first.get("input")
    kind = first["type"]
    subject = f"{tool} 的参数 {plain(name)}"
    required = name in fields and model.model_fields[name].is_required()
    if kind == "missing" or (value is None and required):
        # The reference's wording, so prompts written for it keep working.
        return f"调用 {tool} 工具必须带有 {name} 参数"
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, InvalidInput):
        return f"{subject} {cause.reason}"
    if kind == "string_type":
        return f"{subject} 应为字符串，收到 {type(value).__name__}"
    if kind == "literal_error":
        allowed = " | ".join(str(v) for v in _allowed(model, name))
        return f"{subject} 只能是 {allowed}，收到 {echo(value)}"
    if kind in ("string_too_long", "too_long") and isinstance(value, str):
        # "too_long" when max_length is checked after the field's own validators
        limit = int(first.get("ctx", {}).get("max_length", 0))
        return f"{subject} {too_long(len(value), limit)}"
    # Anything else: pydantic's one-line summary, never its multi-line dump.
    summary = " ".join(str(first["msg"]).split())
    return f"{subject} 不符合要求：{summary if text_problem(summary) is None else echo(summary)}"


def parse_args(tool: str, model: type[ArgsT], raw: Mapping[str, Any]) -> ArgsT:
    """``raw`` checked against ``model``; :class:`ArgumentError` with one sentence if refused."""
    # Unknown names first, by us: pydantic cannot even read a key that is not Unicode
    # (a lone surrogate), and the reference reported them before anything else.
    unknown = [str(key) for key in raw if key not in model.model_fields]
    if unknown:
        raise ArgumentError(unknown_arguments(tool, model, unknown))
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        raise ArgumentError(explain(tool, model, exc.errors())) from None
