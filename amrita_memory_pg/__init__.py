"""amrita_memory_pg: long-term memory for chat bots, with all state in PostgreSQL + pgvector.

Importing this package touches no database, network or NoneBot; ``open_memory`` is the
entry point for adapters and users' own code.
"""

from __future__ import annotations

__version__ = "0.1.0"
