"""Locate the ``sql/`` and ``migrations/`` directories, installed or in a checkout.

In a wheel they live inside the package (``amrita_memory_pg/sql``); in a source checkout
or an editable install they are top-level directories next to the package. Both are
looked up here so nothing else needs to care.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _locate(name: str) -> Path:
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the {name}/ directory near {_PACKAGE_DIR}")


def sql_dir() -> Path:
    """Directory of the SQL function and view files."""
    return _locate("sql")


def migrations_dir() -> Path:
    """Directory of the alembic environment."""
    return _locate("migrations")
