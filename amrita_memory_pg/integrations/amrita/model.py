"""The host's chat model for the L3 loop: AmritaBot's current preset through amrita-core.

The reference ran its loop on the host's current chat preset. Here a cycle's every call
(its steps, the proactive message, session summaries) looks the preset up again — so a
``/choose`` model switch applies to the next call — and sends it over our own
OpenAI-compatible client (token accounting, retries and redaction as for a configured
endpoint). The preset is the AmritaBot host's chosen one (``config.preset`` of
``amrita.plugins.chat``, looked up duck-typed) when that host runs, else amrita-core's
default preset; while amrita-core has no preset at all, the configured endpoint
(``LLM_*``) if any. Only OpenAI-protocol presets (``openai`` / ``__main__``) can be used:
another protocol fails the call with a sentence saying so.
"""

from __future__ import annotations

import importlib
import logging
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
HOST_CONFIG_MODULE = "amrita.plugins.chat.config"


def _host_preset_name() -> str | None:
    """The preset AmritaBot chats with (its config's ``preset``), if that host runs."""
    try:
        module = importlib.import_module(HOST_CONFIG_MODULE)
        name = module.config_manager.config.preset
    except Exception:  # no AmritaBot host, or another layout: amrita-core's default
        return None
    return str(name) if name else None


def host_preset(manager: PresetManager | None = None) -> ModelPreset | None:
    """The host's current chat preset, or None when amrita-core has none."""
    presets = manager or PresetManager()
    name = _host_preset_name()
    if name:
        try:
            return presets.get_preset(name)
        except ValueError:
            log.warning("AmritaBot's preset %r is not in amrita-core's PresetManager", name)
    try:
        return presets.get_default_preset()
    except RuntimeError:  # "Default preset not set"
        return None


def preset_label(preset: ModelPreset | None) -> str:
    """The preset's model name (recorded with each call's tokens)."""
    return "（AmritaBot 没有可用的模型预设）" if preset is None else preset.model


class HostModel:
    """A :class:`~amrita_memory_pg.domain.ports.ChatModel` on the host's current preset."""

    def __init__(
        self,
        *,
        timeout_seconds: float = 60.0,
        manager: PresetManager | None = None,
        fallback: tuple[ChatModel, str] | None = None,
    ) -> None:
        self.timeout_seconds = timeout_seconds
        self.manager = manager
        #: the configured endpoint (model, name), used while amrita-core has no preset
        self.fallback = fallback
        self._clients: dict[tuple[str, str, str], ChatClient] = {}

    def from_host(self) -> bool:
        """Whether the next call goes to the host's preset (else the fallback)."""
        return host_preset(self.manager) is not None or self.fallback is None

    def label(self) -> str:
        """The model the next call goes to."""
        preset = host_preset(self.manager)
        if preset is None and self.fallback is not None:
            return self.fallback[1]
        return preset_label(preset)

    def _client(self) -> ChatModel:
        preset = host_preset(self.manager)
        if preset is None and self.fallback is not None:
            return self.fallback[0]
        if preset is None:
            raise LlmError("AmritaBot 没有可用的模型预设（amrita-core 的 PresetManager 为空）")
        if preset.protocol not in OPENAI_PROTOCOLS:
            raise LlmError(
                f"AmritaBot 的模型预设 {preset.name} 使用 {preset.protocol} 协议，"
                "潜意识循环只支持 OpenAI 兼容协议；请配置 [subconscious] llm_* 指定端点"
            )
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
        return await self._client().complete(messages, tools)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
