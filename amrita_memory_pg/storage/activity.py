"""Chat log and activity heatmap: what the L3 loop reads to know what was said and when.

Both are written by the chat hooks on every message, so each write is one round trip:
one statement that appends the line (trimming the session to its newest
``chat_log_keep`` lines) and, for a user's message, bumps their heatmap cell. The
statements are the named queries of ``sql/queries/activity.sql``, one wrapper each.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

import asyncpg

from amrita_memory_pg.domain.activity import DAYS, SLOTS_PER_DAY, heat_cell
from amrita_memory_pg.domain.records import ChatLine
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.rows import from_row


class ActivityRepository:
    """Writes and reads ``chat_log`` and ``activity_heatmap``.

    ``keep`` is the number of lines kept per session (0 turns the chat log off; the
    heatmap is still counted); ``tz`` is the heatmap's zone (``subconscious.idle_timezone``).
    """

    def __init__(self, pool: asyncpg.Pool, *, keep: int, tz: tzinfo) -> None:
        self._pool = pool
        self.keep = keep
        self.tz = tz

    async def record_user_message(
        self,
        *,
        session_key: str,
        user_key: str,
        user_id: str,
        group_id: str | None,
        text: str,
        now: datetime | None = None,
    ) -> None:
        """Log a user's line in its session and count it in the user's heatmap cell."""
        moment = now or datetime.now(UTC)
        weekday, slot = heat_cell(moment, self.tz)
        if self.keep <= 0:
            await self._pool.execute(query("touch_activity"), user_key, weekday, slot, moment)
            return
        await self._pool.execute(
            query("record_user_message"),
            session_key,
            user_id,
            group_id,
            text,
            moment,
            self.keep,
            user_key,
            weekday,
            slot,
        )

    async def record_bot_message(
        self,
        *,
        session_key: str,
        bot_id: str,
        group_id: str | None,
        text: str,
        now: datetime | None = None,
    ) -> None:
        """Log the bot's own line (never counted as user activity: reference W10)."""
        if self.keep <= 0:
            return
        await self._pool.execute(
            query("record_bot_message"),
            session_key,
            bot_id,
            group_id,
            text,
            now or datetime.now(UTC),
            self.keep,
        )

    async def recent(self, session_key: str, limit: int = 50) -> list[ChatLine]:
        """The newest ``limit`` lines of a session, oldest first."""
        rows = await self._pool.fetch(query("get_recent_chat"), session_key, limit)
        return [from_row(ChatLine, r) for r in reversed(rows)]

    async def heatmap(self, user_key: str) -> list[list[int]]:
        """The user's 7 × 12 hit counts, ``grid[weekday][slot]`` (0 = Monday, 00:00–02:00)."""
        grid = [[0] * SLOTS_PER_DAY for _ in range(DAYS)]
        for row in await self._pool.fetch(query("get_heatmap"), user_key):
            grid[row["weekday"]][row["slot"]] = row["hits"]
        return grid
