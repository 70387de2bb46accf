"""Which model the L3 loop uses, in one phrase, as status shows it from the settings."""

from __future__ import annotations

from typing import Any

import pytest

from amrita_memory_pg.maintenance.status import loop_model_status
from amrita_memory_pg.settings import load_settings, loop_endpoint_label


def settings(**values: Any) -> Any:
    return load_settings(env={}, read_default_files=False, overrides=values)


@pytest.mark.parametrize(
    ("values", "phrase"),
    [
        ({}, "未启用（[subconscious] enabled = false）"),
        (
            {
                "subconscious.enabled": True,
                "subconscious.llm_base_url": "http://m/v1",
                "subconscious.llm_model": "loop-m",
            },
            "loop-m（配置的端点 [subconscious] llm_*）",
        ),
        (
            {"subconscious.enabled": True, "llm.base_url": "http://m/v1", "llm.model": "chat-m"},
            "在 AmritaBot 中为它的模型预设（机器人进程中查找，/memory dmn 显示），"
            "否则 chat-m（配置的端点 LLM_*）",
        ),
        (
            {"subconscious.enabled": True},
            "在 AmritaBot 中为它的模型预设（机器人进程中查找，/memory dmn 显示），否则未配置："
            "设置 [subconscious] llm_base_url 与 llm_model（或 LLM_BASE_URL 与 LLM_MODEL）",
        ),
    ],
)
def test_status_names_the_loops_model_or_says_how_to_set_one(
    values: dict[str, Any], phrase: str
) -> None:
    assert loop_model_status(settings(**values)) == phrase


def test_the_endpoint_label_needs_both_an_address_and_a_model() -> None:
    assert loop_endpoint_label(settings(**{"llm.model": "m"})) is None
    assert loop_endpoint_label(settings(**{"llm.base_url": "http://m/v1"})) is None
    assert (
        loop_endpoint_label(settings(**{"llm.base_url": "http://m/v1", "llm.model": "m"}))
        == "m（配置的端点 LLM_*）"
    )
