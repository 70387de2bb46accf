"""Tool arguments on pydantic models (tools/args.py): the schema shape, the one-sentence
refusals, and that validation either yields clean arguments or refuses — nothing else.

No database: the models and their validation are pure. The byte-for-byte schema of the
real chat tools is pinned in tests/contract/test_tool_schemas.py.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from amrita_memory_pg.domain.validation import INT64_MAX, MAX_CONTENT_CHARS, MAX_TAGS_CHARS
from amrita_memory_pg.tools.args import (
    ArgumentError,
    Clamp,
    Integer,
    Text,
    ToolArgs,
    openai_parameters,
    parse_args,
)
from amrita_memory_pg.tools.memo import AppendMemoArgs, ReadMemoArgs, UpdateMemoArgs
from amrita_memory_pg.tools.memory import (
    DeleteMemoryArgs,
    ListMemoryArgs,
    ReadMemoryArgs,
    UpdateMemoryArgs,
    WriteMemoryArgs,
)


class Sample(ToolArgs):
    name: Annotated[Text, Field(description="名字", max_length=8)]
    count: Annotated[Integer, Clamp(1, 50), Field(description="条数")] = 5
    mood: Annotated[Literal["up", "down"] | None, Field(description="心情")] = None
    note: Annotated[Text | None, Field(description="备注", max_length=3)] = None


def refusal(model: type[ToolArgs], raw: dict[Any, Any], tool: str = "t") -> str:
    with pytest.raises(ArgumentError) as caught:
        parse_args(tool, model, raw)
    return caught.value.message


def test_schema_is_the_reference_shape_in_declaration_order() -> None:
    assert openai_parameters(Sample) == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "名字", "maxLength": 8},
            "count": {
                "type": "integer",
                "description": "条数",
                "default": 5,
                "minimum": 1,
                "maximum": 50,
            },
            "mood": {
                "type": ["string", "null"],
                "description": "心情",
                "enum": ["up", "down", None],
            },
            "note": {"type": ["string", "null"], "description": "备注", "maxLength": 3},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    assert list(openai_parameters(Sample)["properties"]["count"]) == [
        "type",
        "description",
        "default",
        "minimum",
        "maximum",
    ]


def test_a_tool_without_arguments_still_lists_an_empty_required() -> None:
    assert openai_parameters(ReadMemoArgs) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_unions_other_than_nullable_are_refused_at_declaration() -> None:
    class Odd(ToolArgs):
        value: Annotated[str | int, Field(description="x")]

    with pytest.raises(TypeError, match=r"only X \| None"):
        openai_parameters(Odd)


def test_values_are_coerced_the_way_the_reference_did() -> None:
    args = parse_args("t", Sample, {"name": 12, "count": "70", "mood": None, "note": None})
    assert (args.name, args.count, args.mood, args.note) == ("12", 50, None, None)
    assert parse_args("t", Sample, {"name": "x", "count": None}).count == 5  # null = default
    assert parse_args("t", Sample, {"name": "x", "count": -9}).count == 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "调用 t 工具必须带有 name 参数"),
        ({"name": None}, "调用 t 工具必须带有 name 参数"),
        ({"name": "x", "zz": 1, "aa": 2}, "t 不接受参数 aa, zz；可用参数: name, count, mood, note"),
        ({"name": "x", "a\ud800": 1}, "t 不接受参数 'a\\ud800'；可用参数: name, count, mood, note"),
        ({"name": ["x"]}, "t 的参数 name 应为字符串，收到 list"),
        ({"name": True}, "t 的参数 name 应为字符串，收到 bool"),
        ({"name": "123456789"}, "t 的参数 name 过长（9 字符，上限 8），请精简后重试"),
        ({"name": "x", "note": "长长长长"}, "t 的参数 note 过长（4 字符，上限 3），请精简后重试"),
        ({"name": "x", "mood": 5}, "t 的参数 mood 只能是 up | down，收到 5"),
        ({"name": "x", "count": True}, "t 的参数 count 应为整数，收到布尔值"),
        ({"name": "x", "count": "²"}, "t 的参数 count 应为整数，收到 '²'"),
    ],
)
def test_each_refusal_is_one_sentence_naming_the_argument(
    raw: dict[str, Any], message: str
) -> None:
    assert refusal(Sample, raw) == message


def test_nul_surrogates_and_int64_overflow_are_named_not_dumped() -> None:
    nul = refusal(Sample, {"name": "a\x00"})
    assert nul.startswith("t 的参数 name 含有 NUL 字符")
    surrogate = refusal(Sample, {"name": "\udc80"})
    assert surrogate.startswith("t 的参数 name 含有孤立的代理字符 U+DC80")
    big = refusal(Sample, {"name": "x", "count": INT64_MAX + 1})
    assert big.startswith("t 的参数 count 超出 64 位整数范围")


def test_the_first_problem_in_argument_order_is_reported() -> None:
    # count and name are both wrong: name comes first in the declaration
    assert "name" in refusal(Sample, {"count": "x", "name": ["x"]})


# ---------------------------------------------------------------- every chat model, fuzzed

CHAT_MODELS: list[tuple[str, type[ToolArgs]]] = [
    ("write_memory", WriteMemoryArgs),
    ("read_memory", ReadMemoryArgs),
    ("update_memory", UpdateMemoryArgs),
    ("delete_memory", DeleteMemoryArgs),
    ("list_memory", ListMemoryArgs),
    ("read_memo", ReadMemoArgs),
    ("append_memo", AppendMemoArgs),
    ("update_memo", UpdateMemoArgs),
]

any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
values = st.one_of(
    st.text(any_char, max_size=20),
    st.sampled_from(["user", "group", "low", "medium", "high", "event", "\x00", "\ud800", "😀"]),
    st.text(max_size=5).map(lambda t: t * 1000),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
keys = st.one_of(
    st.sampled_from(["content", "tags", "importance", "scope", "category", "query", "top_k"]),
    st.sampled_from(["id", "limit", "offset"]),
    st.text(any_char, max_size=5),
)


@given(st.sampled_from(CHAT_MODELS), st.dictionaries(keys, values, max_size=6))
def test_validation_yields_clean_arguments_or_one_sentence(
    case: tuple[str, type[ToolArgs]], raw: dict[str, Any]
) -> None:
    tool, model = case
    try:
        args = parse_args(tool, model, raw)
    except ArgumentError as exc:
        message = exc.message
    else:
        message = ""
    if message:
        assert "\n" not in message
        assert "pydantic" not in message and "Input should" not in message
        assert message.startswith((f"{tool} ", f"调用 {tool} "))
        message.encode("utf-8")  # sendable: the refused text is escaped, not echoed
        return
    for name, value in args.model_dump().items():
        if isinstance(value, str):
            value.encode("utf-8")
            assert "\x00" not in value
            cap = {"content": MAX_CONTENT_CHARS, "tags": MAX_TAGS_CHARS}.get(name)
            if cap is not None and model is not AppendMemoArgs and model is not UpdateMemoArgs:
                assert len(value) <= cap
        elif isinstance(value, int):
            assert 0 <= value <= INT64_MAX, (name, value)


def test_each_caller_gets_its_own_copy_of_the_cached_schema() -> None:
    first = openai_parameters(Sample)
    first["properties"]["name"]["description"] = "changed by an adapter"
    first["required"].append("count")
    assert openai_parameters(Sample)["properties"]["name"]["description"] == "名字"
    assert openai_parameters(Sample)["required"] == ["name"]
