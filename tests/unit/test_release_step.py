"""The release step (tests/support/release.py), on copies of sql/ and the migrations: the
marked definitions move from their live files into a new migration that drops them, whose
downgrade creates them from their text; the previous release's list is rewritten."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from amrita_memory_pg.resources import migrations_dir, sql_dir
from amrita_memory_pg.storage.pg.migrate import head_revision
from tests.support.release import release
from tests.support.sql_usage import live_definitions, read_previous_release


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    live = tmp_path / "functions"
    shutil.copytree(sql_dir() / "functions", live)
    versions = tmp_path / "versions"
    shutil.copytree(
        migrations_dir() / "versions", versions, ignore=shutil.ignore_patterns("__pycache__")
    )
    return live, versions, tmp_path / "PREVIOUS_RELEASE.txt"


def test_the_marked_definitions_move_into_a_migration_that_drops_them(
    tree: tuple[Path, Path, Path],
) -> None:
    live, versions, previous = tree
    before = live_definitions(live)
    marked = {name for name, d in before.items() if d.marked}
    assert marked, "sql/functions marks what only the previous release calls"
    texts = {name: before[name].path.read_text("utf-8") for name in marked}

    done = release("9.9.0", live, versions, previous)

    after = live_definitions(live)
    assert set(done.retired) == marked
    assert set(after) == set(before) - marked
    assert not any(d.marked for d in after.values())
    assert done.migration is not None and done.migration.name.endswith("_retire_before_9_9_0.py")
    module = done.migration.read_text("utf-8")
    assert f'down_revision: str | None = "{head_revision()}"' in module
    compile(module, done.migration.name, "exec")
    up = done.migration.with_suffix(".sql").read_text("utf-8")
    assert f"DROP FUNCTION {', '.join(f'amrita_memory.{n}' for n in sorted(marked))};" in up
    down = done.migration.with_suffix(".down.sql").read_text("utf-8")
    for name in marked:
        # the whole definition, its comment lines, CREATE and COMMENT, as the file held it
        for start, end in before[name].spans:
            assert texts[name][start:end].strip("\n") in down
    assert "\n\n\n\n" not in "".join(p.read_text("utf-8") for p in live.glob("*.sql"))
    assert read_previous_release(previous) <= set(after)
    assert previous.read_text("utf-8").startswith("# The SQL functions 9.9.0's Python calls")


def test_nothing_marked_writes_no_migration(tree: tuple[Path, Path, Path]) -> None:
    live, versions, previous = tree
    release("9.9.0", live, versions, previous)
    modules = sorted(versions.glob("*.py"))
    done = release("9.10.0", live, versions, previous)
    assert done.retired == () and done.migration is None
    assert sorted(versions.glob("*.py")) == modules


def test_a_version_is_a_version(tree: tuple[Path, Path, Path]) -> None:
    with pytest.raises(SystemExit, match="not a version"):
        release("next", *tree)
