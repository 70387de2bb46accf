"""Released versions and their commits (``bench/releases.toml``), for the baseline benches.

A bench's ``--baseline`` names a release by its version (``0.2.0`` or ``v0.2.0``); this
module turns it into the commit from the committed table, so a fresh clone without tags
resolves it too. Anything that is not a version (a commit, a branch) is passed through
as a git revision, for development; the docs name versions.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from datetime import date
from pathlib import Path

TABLE = Path(__file__).resolve().with_name("releases.toml")
#: a semantic version, optionally written with git's tag prefix: 0.2.0, v0.14.1, 0.3.0-rc.1
VERSION = re.compile(r"v?(?P<version>\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)")


@dataclass(frozen=True)
class Release:
    """One row of the table: a version, the commit it is, the day it was made."""

    version: str
    commit: str
    date: date

    @property
    def tag(self) -> str:
        return f"v{self.version}"


def releases(table: Path = TABLE) -> list[Release]:
    """Every release in the table, oldest first (the table's order)."""
    rows = tomllib.loads(table.read_text(encoding="utf-8"))["release"]
    return [Release(str(r["version"]), str(r["commit"]), r["date"]) for r in rows]


def release(name: str, table: Path = TABLE) -> Release | None:
    """The release ``name`` names (``0.2.0``, ``v0.2.0``), or None when it is no version.
    A version the table does not list is an error that lists the known ones."""
    m = VERSION.fullmatch(name.strip())
    if m is None:
        return None
    known = releases(table)
    for r in known:
        if r.version == m["version"]:
            return r
    listed = ", ".join(r.version for r in known)
    raise SystemExit(f"no release {name} in {table.name} (released: {listed})")


def resolve(name: str, table: Path = TABLE) -> tuple[str, str]:
    """(git revision, label for the printed tables) of a version or a raw revision."""
    r = release(name, table)
    return (r.commit, r.version) if r else (name, name)
