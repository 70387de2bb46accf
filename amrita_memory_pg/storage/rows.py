"""Rows into values, one way for every repository.

A function that always answers one row (a claim, a start) is fetched and turned into
the frozen dataclass whose fields are the row's columns, so a repository spells neither
the ``None`` check nor the column list again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def from_row(cls: type[T], row: Mapping[str, Any] | asyncpg.Record) -> T:
    """``cls`` from the columns named as its fields (extra columns are ignored)."""
    return cls(**{f.name: row[f.name] for f in fields(cls)})


async def one_row(pool: asyncpg.Pool, cls: type[T], statement: str, *args: Any) -> T:
    """``cls`` from the row of ``statement`` (a ``query()``), whose function always
    returns one."""
    row = await pool.fetchrow(statement, *args)
    assert row is not None  # the function always returns one row
    return from_row(cls, row)


class FunctionRepository:
    """A repository whose every method runs one named query (``query("name")``, a
    ``sql/functions`` function) on one pool and shapes its answer: the pool and the
    answer shapes live here once. ``now`` None, where a method takes it, means the
    database's clock (one for the fleet)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def _one(self, cls: type[T], statement: str, *args: Any) -> T:
        """``cls`` from the one row the function always answers."""
        return await one_row(self.pool, cls, statement, *args)

    async def _value(self, statement: str, *args: Any) -> Any:
        return await self.pool.fetchval(statement, *args)

    async def _flag(self, statement: str, *args: Any) -> bool:
        return bool(await self._value(statement, *args))

    async def _dicts(self, statement: str, *args: Any) -> list[dict[str, Any]]:
        return [dict(r.items()) for r in await self.pool.fetch(statement, *args)]
