"""AmritaBot's persona for the L3 templates' ``character_prompt`` (reference §8.5).

The reference read the host's private persona file: ``private_prompt_character``.txt
in the AmritaBot chat config's private prompt directory, else ``default.txt`` (stripped,
"" on any failure). That host (``amrita.plugins.chat``) is looked up duck-typed, so this
module needs only amrita-core. Without it — amrita-core embedded in someone else's bot —
the persona is the system prompt (``ChatObject.train``) of the last private turn our memo
hook saw in this process: amrita-core's own place for a persona.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

HOST_CONFIG_MODULE = "amrita.plugins.chat.config"


def host_config_persona() -> str:
    """The AmritaBot host's private persona file, as the reference read it; "" if none."""
    try:
        module = importlib.import_module(HOST_CONFIG_MODULE)
    except ImportError:
        return ""
    try:
        manager: Any = module.config_manager
        prompts_dir = Path(manager.prompt_store.private_dir)
        character = str(manager.config.private_prompt_character)
        for name in (f"{character}.txt", "default.txt"):
            path = prompts_dir / name
            if path.exists():
                return path.read_text(encoding="utf-8").strip()
    except Exception:  # the host's layout changed: no persona rather than no cycle
        log.debug("reading AmritaBot's persona failed", exc_info=True)
    return ""


class HostPersona:
    """``Prompts.host_persona`` under AmritaBot: the host's persona file, else the last
    private turn's system prompt seen by the memo hook."""

    def __init__(self) -> None:
        self.seen = ""

    def observe(self, chat_object: Any, in_group: bool) -> None:
        """Remember a private turn's system prompt (a group's may be another persona)."""
        if in_group:
            return
        content = getattr(getattr(chat_object, "train", None), "content", None)
        if isinstance(content, str) and content.strip():
            self.seen = content.strip()

    def __call__(self) -> str:
        return host_config_persona() or self.seen
