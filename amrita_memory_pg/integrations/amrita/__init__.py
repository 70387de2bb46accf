"""AmritaBot adapter: our chat tools in amrita-core's tool registry, the memo in its hook.

A drop-in for amrita_plugin_memory: the same tool names, arguments and JSON replies
(``write_memory`` … ``update_memo``, registered in amrita-core's global ``ToolsManager``)
and the same memo injection (a ``system`` message in front of the history, priority 15,
non-blocking), so prompts written for the old plugin keep working::

    from amrita_memory_pg import open_memory
    from amrita_memory_pg.integrations.amrita import install

    async with open_memory() as mem:
        installation = install(mem)       # tools + memo hook (+ the L3 loop on the host's model)
        ...                               # AmritaBot chats
        installation.uninstall()

Needs the ``[amrita]`` extra (``amrita-core``). Everything under this package may import
amrita-core; nothing else in ``amrita_memory_pg`` does.
"""

from __future__ import annotations

from amrita_memory_pg.integrations.amrita.adapter import (
    MEMO_HOOK_PRIORITY,
    TRIGGER_HOOK_PRIORITY,
    Installation,
    MemoryProvider,
    amrita_schema,
    install,
    lend_host_tools,
    register_memory_hook,
    register_tools,
    register_trigger_hook,
    remove_matchers,
    use_host_model,
)
from amrita_memory_pg.integrations.amrita.context import (
    AMRITA_CTX_KEY,
    Identify,
    chat_context,
    event_context,
)

__all__ = [
    "AMRITA_CTX_KEY",
    "MEMO_HOOK_PRIORITY",
    "TRIGGER_HOOK_PRIORITY",
    "Identify",
    "Installation",
    "MemoryProvider",
    "amrita_schema",
    "chat_context",
    "event_context",
    "install",
    "lend_host_tools",
    "register_memory_hook",
    "register_tools",
    "register_trigger_hook",
    "remove_matchers",
    "use_host_model",
]
