"""The SQL side of a release, one command, with the version just released, in the commit
that opens the next one (docs/development.md, "Versions and releases"):

    .venv/bin/python -m tests.support.release X.Y.Z

1. Regenerate ``sql/PREVIOUS_RELEASE.txt``: what X.Y.Z's Python calls. The next version's
   processes run beside X.Y.Z's during its rolling upgrade, so those functions stay.
2. Retire: every definition marked ``-- previous release`` in ``sql/functions`` (kept only
   for the release before X.Y.Z) is cut out of its live file into a new migration of the
   next version that drops it; the migration's downgrade runs the cut text, so it
   creates them again as they were.

Nothing needs a database: the marks say what goes (``tests/migration/test_orphan_sql.py``
checks that they are exactly what only the previous release keeps). Afterwards run
``pytest tests/migration``: the fresh install (files without the cut definitions) must
equal the chain (with the new migration). ``release()`` takes its folders as arguments so
that a test runs it on copies.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from amrita_memory_pg.resources import sql_dir
from amrita_memory_pg.storage.pg import migrate
from tests.support.sql_migration import write_migration
from tests.support.sql_usage import (
    PACKAGE_SOURCES,
    LiveDefinition,
    live_definitions,
    python_calls,
    render_previous_release,
)

VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(?:[-+.][0-9A-Za-z.]+)?")


@dataclass(frozen=True)
class Released:
    """What :func:`release` did."""

    retired: tuple[str, ...]
    migration: Path | None
    previous_release: Path


def cut(definitions: list[LiveDefinition]) -> str:
    """Remove ``definitions`` from their live files; their text, file by file."""
    taken: list[str] = []
    for path in sorted({d.path for d in definitions}):
        text = path.read_text(encoding="utf-8")
        spans = sorted(span for d in definitions if d.path == path for span in d.spans)
        taken.extend(text[start:end].strip("\n") for start, end in spans)
        for start, end in reversed(spans):
            text = text[:start] + text[end:]
        path.write_text(re.sub(r"\n{4,}", "\n\n\n", text).rstrip("\n") + "\n", encoding="utf-8")
    return "\n\n\n".join(taken) + "\n"


def release(version: str, live: Path, versions: Path, previous_release: Path) -> Released:
    """Retire the marked definitions of ``live`` into a migration under ``versions`` and
    write ``previous_release`` for ``version``."""
    if not VERSION.fullmatch(version):
        raise SystemExit(f"not a version: {version!r} (e.g. 0.15.0)")
    definitions = live_definitions(live)
    marked = [d for d in definitions.values() if d.marked]
    migration = None
    if marked:
        retired = tuple(sorted(d.name for d in marked))
        migration = write_migration(
            versions,
            "retire_before_" + re.sub(r"\W", "_", version),
            title=f"Retire what only the release before {version} called: {', '.join(retired)}",
            why="They were marked `-- previous release` in "
            "their live files, kept while the previous release's processes could run beside "
            f"this one's during a rolling upgrade; {version}'s predecessor calls none of them.",
            upgrade_sql=["DROP FUNCTION " + ", ".join(f"amrita_memory.{n}" for n in retired)],
            downgrade_sql=[cut(marked)],
            forward="drops them",
            backward="creates them again, their definitions as the live files held them",
            tool="the release step, tests/support/release.py",
        )
    kept = set(live_definitions(live))
    previous_release.write_text(
        render_previous_release(python_calls(PACKAGE_SOURCES) & kept, version), encoding="utf-8"
    )
    return Released(tuple(d.name for d in marked), migration, previous_release)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.support.release VERSION")
    done = release(
        sys.argv[1],
        sql_dir() / "functions",
        migrate.versions_dir(),
        sql_dir() / "PREVIOUS_RELEASE.txt",
    )
    if done.migration is not None:
        print(f"retired {', '.join(done.retired)}: {done.migration.name} and its .down.sql")
    else:
        print("nothing marked `-- previous release`: no migration")
    print(f"wrote {done.previous_release}; now run .venv/bin/python -m pytest -q tests/migration")
