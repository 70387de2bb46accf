"""Open a :class:`Memory` on a test database with a few settings changed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings, load_settings


def settings_for(dsn: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database.url": dsn,
        "data_dir": str(data_dir),
        "embedding.protocol": "hash",
    }
    values.update({k.replace("__", "."): v for k, v in overrides.items()})
    return load_settings(env={}, read_default_files=False, overrides=values)


@asynccontextmanager
async def memory_on(
    dsn: str, data_dir: Path, *, startup: bool = False, **overrides: Any
) -> AsyncIterator[Memory]:
    async with open_memory(settings_for(dsn, data_dir, **overrides), startup=startup) as mem:
        yield mem


async def checksum(mem: Memory) -> dict[str, Any]:
    """Counts and content checksums of every table a backup covers."""
    row = await mem.pool.fetchrow(
        """
        SELECT (SELECT count(*) FROM amrita_memory.memory) AS memories,
               (SELECT md5(string_agg(concat_ws('|', id, partition_key, scope, content, tags::text, importance,
                        category, source, author, created_at, updated_at, tier_since, embedding::text,
                        embed_fingerprint), E'\\n' ORDER BY id)) FROM amrita_memory.memory) AS memory_md5,
               (SELECT count(*) FROM amrita_memory.memo) AS memos,
               (SELECT md5(string_agg(concat_ws('|', partition_key, content, version), E'\\n' ORDER BY partition_key))
                  FROM amrita_memory.memo) AS memo_md5,
               (SELECT count(*) FROM amrita_memory.knowledge) AS knowledge,
               (SELECT md5(string_agg(concat_ws('|', kid, title, summary, body, embedding::text), E'\\n' ORDER BY kid))
                  FROM amrita_memory.knowledge) AS knowledge_md5
        """
    )
    assert row is not None
    return dict(row.items())


async def add_knowledge(mem: Memory, kid: str, title: str, summary: str, body: str = "") -> None:
    """One knowledge entry under ``kid``, written the way every surface writes it."""
    await mem.knowledge.create(kid=kid, title=title, summary=summary, body=body)
