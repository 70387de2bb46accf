"""Export of one partition as JSONL, from its page.

The file is :func:`~amrita_memory_pg.maintenance.backup.export_partition`: a header,
then the partition's memories, memo, profile and profile history, each line as a backup
writes that row (one serialisation for both). It is streamed from one REPEATABLE READ
snapshot (a partition of any size never sits in the server's memory), and the download
is audited (``partition.export``, with the counts the header carries) before it starts:
the data left the store once the first byte did.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from amrita_memory_pg.maintenance.backup import export_partition, partition_counts
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.pages.partitions import bad_key, valid_key

router = APIRouter()
NAV: list[kit.NavItem] = []

#: the download's media type (one JSON document per line)
JSONL = "application/x-ndjson"


def export_name(key: str, stamp: str) -> str:
    """The file name offered: the key (only ``[A-Za-z0-9_-]``: nothing to quote) and when."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in key)
    return f"{safe}_{stamp}.jsonl"


@router.get("/p/{key}/export.jsonl")
async def export(request: Request, key: str, user: kit.Superuser) -> Response:
    """Superuser only, like the backups: a whole person's memories in one file."""
    if not valid_key(key):
        return bad_key(request, key)
    mem = kit.memory(request)
    now = kit.now(request)
    counts = await partition_counts(mem.pool, key)
    await kit.audit(request, user, "partition.export", partition_key=key, detail=counts)

    async def lines() -> AsyncIterator[bytes]:
        async with (
            mem.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            async for line in export_partition(conn, key, now=now):
                yield line.encode("utf-8")

    name = export_name(key, f"{now:%Y%m%dT%H%M%SZ}")
    return StreamingResponse(
        lines(),
        media_type=JSONL,
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
