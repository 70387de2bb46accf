"""The ``[backup]`` section: scheduled backups, their retention and
verification. Its own module so that it merges without touching the other sections."""

from __future__ import annotations

from pydantic import Field, field_validator

from amrita_memory_pg.settings.base import Section


class BackupSettings(Section):
    """Scheduled backups: one process of the fleet takes each, then verifies
    it in a throwaway database; retention is per reason (see ``keep_scheduled``)."""

    schedule: str = Field(
        "",
        description="When to take a backup by itself: `daily@HH:MM` (wall clock in "
        "`timezone`, e.g. `daily@03:00`) or `every Nh` (N = 1-168 hours, aligned on UTC "
        "midnight, e.g. `every 6h`); empty = no scheduled backups. One process of the fleet "
        "takes each (a claim in PostgreSQL); a slot missed while all were down runs once at "
        "the next check.",
    )
    timezone: str = Field("Asia/Shanghai", description="Time zone of `daily@HH:MM`.")
    keep_scheduled: int = Field(
        7,
        ge=1,
        le=1000,
        description="Scheduled backups kept (the newest). Every other reason keeps "
        "`[embedding] reembed_backup_keep` of its own, and the newest backup taken before a "
        "destructive step (clear, re-embed, restore) is never rotated out: "
        "`amrita-memory backup delete NAME` removes it.",
    )
    verify: bool = Field(
        True,
        description="After each scheduled backup, restore it into a throwaway database on "
        "the same server (needs CREATEDB) and compare every table's rows and checksum.",
    )
    check_minutes: int = Field(
        5, ge=1, le=1440, description="How often each process checks whether a slot is due."
    )

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        from amrita_memory_pg.domain.backup_schedule import parse_schedule

        parse_schedule(value)
        return value.strip().lower()

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        from amrita_memory_pg.domain.backup_schedule import zone

        zone(value)
        return value
