"""tools/jsontext.indented is json.dumps(indent=4, ensure_ascii=False), byte for byte."""

from __future__ import annotations

import enum
import json
import random
from typing import Any

import pytest

from amrita_memory_pg.tools.jsontext import indented


class Level(enum.IntEnum):
    HIGH = 8


class Kind(enum.StrEnum):
    USER = "user"


def reference(value: Any) -> str:
    return json.dumps(value, indent=4, ensure_ascii=False)


READ_REPLY = {
    "status": "success",
    "ids": [["a" * 32, "b" * 32]],
    "documents": [['用户喜欢猫 "引号" \\ 反斜杠\n换行\t制表 \x00 \u2028', "tea ☕"]],
    "metadatas": [[{"scope": "user", "importance_level": 5, "age_days": 11.26, "tags": ""}, {}]],
    "distances": [[1.8653470277786255, 0.0]],
    "embeddings": None,
    "included": ["documents", "metadatas", "distances"],
    "mode": "hybrid",
}


@pytest.mark.parametrize(
    "value",
    [
        READ_REPLY,
        {},
        [],
        {"a": [], "b": {}, "c": [[]], "d": [{}]},
        {"n": [0, -1, 10**30, True, False, None]},
        {"f": [0.1, -0.0, 1e300, 1e-300, float("nan"), float("inf"), -float("inf"), 2.5]},
        {"enum": [Level.HIGH, Kind.USER], Kind.USER: "a str-enum key"},
        ("tuple", ("nested",), []),
        "just a string",
        42,
        None,
    ],
)
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert indented(value) == reference(value)


def test_random_nested_payloads() -> None:
    rng = random.Random(3)
    leaves: list[Any] = ["", "猫", 'a"b', "\x1f", 0, -7, 3.25, 1e-7, True, None, False]

    def make(depth: int) -> Any:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(leaves)
        if rng.random() < 0.5:
            return [make(depth - 1) for _ in range(rng.randint(0, 4))]
        return {f"k{i}{rng.choice(leaves)}": make(depth - 1) for i in range(rng.randint(0, 4))}

    for _ in range(300):
        value = make(5)
        assert indented(value) == reference(value)


def test_what_json_encodes_differently_or_refuses_goes_to_json_itself() -> None:
    # non-string keys: json turns them into strings, flat or nested
    keyed: dict[Any, Any] = {1: "a", 2.5: "b", None: "c", False: "d"}
    assert indented(keyed) == reference(keyed)
    assert indented({"outer": keyed, "x": [keyed]}) == reference({"outer": keyed, "x": [keyed]})
    assert indented({3: {"nested": [1]}}) == reference({3: {"nested": [1]}})
    with pytest.raises(TypeError):
        indented({"x": object()})
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular"):
        indented(circular)
