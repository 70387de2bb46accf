"""What ``amrita-memory status`` gathers and how it prints it."""

from __future__ import annotations

from dataclasses import dataclass, field

from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import (
    ServerInfo,
    ServerTarget,
    connect_once,
    server_info,
)
from amrita_memory_pg.storage.pg.schema import SCHEMA


@dataclass
class StatusReport:
    server: ServerInfo
    revision: str | None
    head: str
    counts: dict[str, int] = field(default_factory=dict)
    socket_dir: str | None = None


async def collect_status(settings: Settings, target: ServerTarget) -> StatusReport:
    """Read the server facts and, when the schema exists, the row counts."""
    conn = await connect_once(target.dsn, settings.database.connect_timeout)
    try:
        info = await server_info(conn, target.kind, target.dsn)
        revision = await migrate.current_revision(conn)
        counts: dict[str, int] = {}
        if revision is not None:
            row = await conn.fetchrow(
                f"""
                SELECT (SELECT count(*) FROM {SCHEMA}.memory)                       AS memories,
                       (SELECT count(DISTINCT partition_key) FROM {SCHEMA}.memory)  AS partitions,
                       (SELECT count(*) FROM {SCHEMA}.memo WHERE content <> '')     AS memos
                """
            )
            assert row is not None
            counts = {k: int(v) for k, v in row.items()}
    finally:
        await conn.close()
    socket_dir = str(target.embedded.socket_dir) if target.embedded is not None else None
    return StatusReport(
        server=info,
        revision=revision,
        head=migrate.head_revision(),
        counts=counts,
        socket_dir=socket_dir,
    )


def render_status(report: StatusReport) -> str:
    """Plain aligned text; the first column is stable for scripts that grep it."""
    server = report.server
    where = f"socket {report.socket_dir}" if report.socket_dir else server.target
    lines = [
        f"server:      {server.kind} PostgreSQL {server.server_version} ({where})",
        f"pgvector:    {server.pgvector or 'not installed in this database'}",
    ]
    if report.revision is None:
        lines.append(f"schema:      empty (head is {report.head}: run `amrita-memory db upgrade`)")
    elif report.revision == report.head:
        lines.append(f"schema:      {report.revision} (head)")
    else:
        lines.append(
            f"schema:      {report.revision} (head is {report.head}: run `amrita-memory db upgrade`)"
        )
    if report.counts:
        lines.append(
            f"memories:    {report.counts['memories']} in {report.counts['partitions']} partitions"
        )
        lines.append(f"memos:       {report.counts['memos']}")
    return "\n".join(lines)
