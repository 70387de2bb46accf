"""Released SQL files are immutable: their sha256 is pinned in sql/RELEASED.sha256."""

from __future__ import annotations

import hashlib
import re

from amrita_memory_pg.resources import sql_dir

MANIFEST = sql_dir() / "RELEASED.sha256"
#: what counts as a released file: a versioned function or view file, and its .down
RELEASED = re.compile(r"^(functions|views)/[a-z0-9_]+_v\d+(\.down)?\.sql$")
FIX = "make a new _vN+1 file and a migration that installs it (released files are never edited)"


def _pinned() -> dict[str, str]:
    pinned: dict[str, str] = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, path = line.partition("  ")
        assert RELEASED.match(path), f"RELEASED.sha256 lists {path!r}, which is not a released file"
        assert path not in pinned, f"RELEASED.sha256 lists {path} twice"
        pinned[path] = digest
    return pinned


def _on_disk() -> dict[str, str]:
    root = sql_dir()
    files = {
        p.relative_to(root).as_posix(): p
        for folder in ("functions", "views")
        for p in (root / folder).glob("*.sql")
    }
    unversioned = sorted(name for name in files if not RELEASED.match(name))
    assert unversioned == [], f"files without a _vN version suffix: {unversioned}"
    return {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in files.items()}


def test_no_released_sql_file_was_edited_or_removed() -> None:
    pinned, actual = _pinned(), _on_disk()
    edited = sorted(
        name for name, digest in pinned.items() if actual.get(name) not in (None, digest)
    )
    assert edited == [], f"released SQL files changed: {edited}; {FIX}"
    removed = sorted(set(pinned) - set(actual))
    assert removed == [], f"released SQL files are gone: {removed}; old migrations still run them"


def test_every_sql_file_is_pinned() -> None:
    unpinned = sorted(set(_on_disk()) - set(_pinned()))
    assert unpinned == [], (
        f"not in sql/RELEASED.sha256: {unpinned}; add them in the commit of their migration "
        "(cd sql && sha256sum <file> >> RELEASED.sha256)"
    )


def test_the_pin_detects_a_one_byte_change() -> None:
    """The comparison is over the bytes as shipped: one changed byte is an edit."""
    name, digest = next(iter(_pinned().items()))
    data = (sql_dir() / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest
    assert hashlib.sha256(data + b" ").hexdigest() != digest
