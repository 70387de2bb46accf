"""What the reference plugin (amrita-plugin-memory 0.8.1) exposes, as adapters must keep it."""

from __future__ import annotations

#: the chat-side tool names, in the reference's registration order
REFERENCE_TOOLS = [
    "write_memory",
    "read_memory",
    "update_memory",
    "delete_memory",
    "list_memory",
    "read_memo",
    "append_memo",
    "update_memo",
]
