"""search_memories_v6 (0.6.0): its plans are made once per connection.
The named queries call release 7 since 0037_hybrid_fast (test_search_v7.py); v6 stays
installed for the processes of the release before and for v7's HNSW path.

Parity is test_search_v5.py's: the named query it compares with release 4 (bit for bit in
vector mode, release 3's scores) is v6's, on a pool whose connections reuse their plans
across its calls of every mode, fusion, filter and path. Here: the one setting v6's speed
rests on, and the bodies it dispatches to, so a re-created function cannot lose them
silently (v5 re-planned its vector statement on every call: 0.31 ms of a 0.54 ms search).
"""

from __future__ import annotations

import asyncpg


async def test_the_search_plans_once_per_connection(conn: asyncpg.Connection) -> None:
    config = await conn.fetchval(
        "SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = 'search_memories_v6'"
    )
    assert config == ["plan_cache_mode=force_generic_plan"]


async def test_one_plain_body_per_mode_and_fusion(conn: asyncpg.Connection) -> None:
    body = await conn.fetchval(
        "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = 'search_memories_v6'"
    )
    for callee in (
        "search_vector_exact_v5",
        "search_vector_ann_v5",
        "score_keyword_v6",
        "score_hybrid_rrf_v6",
        "score_hybrid_weighted_v6",
    ):
        assert f"amrita_memory.{callee}(" in body, callee
    assert "score_memories_v" not in body
