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
