"""The host's chat model for the L3 loop: the preset the host itself would chat with.

The reference ran its loop on the host's chat model. Every call of a cycle (its steps, the
proactive message, session summaries) looks the preset up again — so a ``/choose`` model
switch applies to the next call — and sends it over our own OpenAI-compatible client
(token accounting, retries and redaction as for a configured endpoint).

Where the preset comes from, the way the host finds it:

- **AmritaBot** (its chat plugin ``amrita.plugins.chat`` loaded in this process): the
  preset each chat turn gets, ``await resolve_preset()`` of
  ``amrita.plugins.chat.utils.preset`` — its configured ``preset`` read from its own
  preset files (``config/chat/models/*.json``), falling back as the host does. AmritaBot
  1.13 builds a preset manager per chat session from those files and never fills
  amrita-core's global ``PresetManager``, so that singleton is not where to look. Its
  preset is one for every chat (``/choose`` changes it for all), so the target's chat
  uses the same one.
- **amrita-core alone** (your own agent, no AmritaBot): amrita-core's default preset in its
  global ``PresetManager``.

A preset that cannot carry the loop — none at all, AmritaBot's placeholder (no
``base_url`` and no ``api_key``: the ``default.json`` a fresh install writes), or another
protocol than OpenAI's — leaves the call to the configured endpoint (``LLM_*``) when there
is one, else fails it with a sentence saying how to configure one.
"""

from __future__ import annotations

import importlib
import logging
import sys
from dataclasses import dataclass
from typing import Any

from amrita_core.preset import PresetManager
from amrita_core.types import ModelPreset
from pydantic import SecretStr

from amrita_memory_pg.domain.errors import LlmError
from amrita_memory_pg.domain.ports import ChatModel, ChatResult, Message
from amrita_memory_pg.llm.chat import ChatClient
from amrita_memory_pg.settings import LlmSettings

log = logging.getLogger(__name__)

OPENAI_PROTOCOLS = frozenset({"openai", "__main__"})
#: AmritaBot's chat plugin, and where it resolves the preset of a chat turn
HOST_CHAT_PLUGIN = "amrita.plugins.chat"
HOST_PRESET_MODULE = "amrita.plugins.chat.utils.preset"
HOST_CONFIG_MODULE = "amrita.plugins.chat.config"
#: how to give the loop a model, said wherever none can be used
HOW_TO_CONFIGURE = (
    "在 AmritaBot 的模型预设（config/chat/models/*.json）中填写 base_url、api_key 与 model，"
    "或设置 [subconscious] llm_base_url 与 llm_model"
)


@dataclass(frozen=True, slots=True)
class HostPreset:
    """The host's current chat preset, and why the loop cannot use it (None: it can)."""

    preset: ModelPreset | None
    #: the host in words, e.g. «AmritaBot 的模型预设 default»
    where: str
    problem: str | None = None


def _usable(preset: ModelPreset | None, where: str) -> HostPreset:
    if preset is None:
        return HostPreset(None, where, f"{where}不存在")
    named = f"{where} {preset.name}"
    if preset.protocol not in OPENAI_PROTOCOLS:
        return HostPreset(
            preset, named, f"{named} 使用 {preset.protocol} 协议，潜意识循环只支持 OpenAI 兼容协议"
        )
    if not preset.base_url and not preset.api_key:
        return HostPreset(preset, named, f"{named} 没有填写 base_url 与 api_key")
    return HostPreset(preset, named)


async def _amritabot_preset() -> HostPreset | None:
    """AmritaBot's preset for a chat turn, as its chat handler resolves it; None when its
    chat plugin is not loaded in this process."""
    if HOST_CHAT_PLUGIN not in sys.modules:
        return None
    where = "AmritaBot 的模型预设"
    try:
        module: Any = importlib.import_module(HOST_PRESET_MODULE)
        preset = await module.resolve_preset()
    except ImportError:  # an AmritaBot before resolve_preset: its config manager's look-up
        try:
            manager: Any = importlib.import_module(HOST_CONFIG_MODULE).config_manager
            preset = await manager.get_preset(manager.config.preset)
        except Exception as exc:  # the host's layout changed: say so instead of guessing
            log.debug("AmritaBot's preset look-up failed", exc_info=True)
            return HostPreset(None, where, f"{where}查找失败（{exc}）")
    except Exception as exc:  # resolve_preset: LookupError when the preset is gone
        return HostPreset(None, where, f"{where}查找失败（{exc}）")
    return _usable(preset if isinstance(preset, ModelPreset) else None, where)


def _core_preset(manager: PresetManager | None) -> HostPreset:
    """amrita-core's default preset (amrita-core without AmritaBot)."""
    where = "amrita-core 的默认模型预设"
    try:
        preset = (manager or PresetManager()).get_default_preset()
    except RuntimeError:  # "Default preset not set"
        return HostPreset(None, where, "amrita-core 没有设置默认模型预设")
    return _usable(preset, where)


async def host_preset(manager: PresetManager | None = None) -> HostPreset:
    """The preset the host chats with now (see the module's docstring)."""
    found = await _amritabot_preset()
    return found if found is not None else _core_preset(manager)


class HostModel:
    """A :class:`~amrita_memory_pg.domain.ports.ChatModel` on the host's current preset,
    with the configured endpoint (``LLM_*``) for when the host has none the loop can use."""

    def __init__(
        self,
        *,
        timeout_seconds: float = 60.0,
        manager: PresetManager | None = None,
        fallback: tuple[ChatModel, str] | None = None,
    ) -> None:
        self.timeout_seconds = timeout_seconds
        self.manager = manager
        #: the configured endpoint (model, its name)
        self.fallback = fallback
        self._clients: dict[tuple[str, str, str], ChatClient] = {}

    async def describe(self) -> str:
        """The model the next call goes to, in one phrase (or that there is none, and
        how to configure one)."""
        found = await host_preset(self.manager)
        if found.problem is None and found.preset is not None:
            return f"{found.preset.model}（{found.where}）"
        if self.fallback is not None:
            return f"{self.fallback[1]}（配置的端点 LLM_*；{found.problem}）"
        return f"未配置：{found.problem}。{HOW_TO_CONFIGURE}"

    async def _model(self) -> ChatModel:
        found = await host_preset(self.manager)
        preset = found.preset
        if found.problem is not None or preset is None:
            if self.fallback is not None:
                return self.fallback[0]
            raise LlmError(f"没有可用的模型：{found.problem}。{HOW_TO_CONFIGURE}")
        key = (preset.base_url, preset.model, preset.api_key)
        client = self._clients.get(key)
        if client is None:
            client = ChatClient(
                LlmSettings(
                    base_url=preset.base_url or "https://api.openai.com/v1",
                    model=preset.model,
                    api_key=SecretStr(preset.api_key),
                    timeout_seconds=self.timeout_seconds,
                )
            )
            self._clients[key] = client
        return client

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> ChatResult:
        return await (await self._model()).complete(messages, tools)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
