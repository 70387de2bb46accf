"""amrita_memory_pg: long-term memory for chat bots, with all state in PostgreSQL + pgvector.

Importing this package touches no database, network or NoneBot: ``open_memory`` and
``ToolContext`` are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Memory", "ToolContext", "open_memory"]

if TYPE_CHECKING:
    __version__: str
    from amrita_memory_pg.bootstrap import open_memory
    from amrita_memory_pg.memory import Memory
    from amrita_memory_pg.tools.context import ToolContext


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # the installed distribution's version (pyproject.toml), so it is written once
        from importlib.metadata import version

        return version("amrita-memory-pg")
    if name == "open_memory":
        from amrita_memory_pg.bootstrap import open_memory

        return open_memory
    if name == "Memory":
        from amrita_memory_pg.memory import Memory

        return Memory
    if name == "ToolContext":
        from amrita_memory_pg.tools.context import ToolContext

        return ToolContext
    raise AttributeError(name)
