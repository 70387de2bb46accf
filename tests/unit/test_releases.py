"""Versions: the package says its version, and the release table (bench/releases.toml),
CHANGELOG.md and the git tags tell one story. No database; git reads this checkout."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def _bench_releases() -> Any:
    """bench/releases.py, loaded from its file (bench/ is not a package, and its directory
    on sys.path would let its script names shadow other modules for the whole session)."""
    spec = importlib.util.spec_from_file_location("bench_releases", REPO / "bench" / "releases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


_releases = _bench_releases()
Release, release, releases, resolve = (
    _releases.Release,
    _releases.release,
    _releases.releases,
    _releases.resolve,
)

#: a version heading of the changelog: ## [0.2.0] - 2026-12-03
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$", re.M)


def pyproject_version() -> str:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def test_the_cli_prints_the_installed_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "amrita_memory_pg.cli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"amrita-memory {pyproject_version()}"
    # the metadata the CLI reads is the pyproject's (a stale install would differ)
    assert version("amrita-memory-pg") == pyproject_version()


def test_the_package_version_is_newer_than_every_release() -> None:
    import amrita_memory_pg

    assert amrita_memory_pg.__version__ == pyproject_version()
    newest = max(Version(r.version) for r in releases())
    assert Version(pyproject_version()) > newest


def test_the_table_is_in_order_and_names_full_commits() -> None:
    table = releases()
    assert [Version(r.version) for r in table] == sorted(Version(r.version) for r in table)
    assert len({r.version for r in table}) == len(table)
    assert [r.date for r in table] == sorted(r.date for r in table)
    for r in table:
        assert re.fullmatch(r"[0-9a-f]{40}", r.commit), r
    assert len({r.commit for r in table}) == len(table)


def test_every_release_is_a_commit_of_this_history() -> None:
    """Each table commit is an ancestor of HEAD, and a tag vX.Y.Z, where this clone has one,
    points at the same commit (a fresh clone may lack tags: the table is what counts)."""
    for r in releases():
        ancestor = git("merge-base", "--is-ancestor", r.commit, "HEAD")
        assert ancestor.returncode == 0, f"{r.version}: {r.commit} is not in this history"
        tagged = git("rev-parse", "--verify", "--quiet", f"refs/tags/{r.tag}^{{commit}}")
        if tagged.returncode == 0:
            assert tagged.stdout.strip() == r.commit, f"tag {r.tag} points elsewhere"


def test_the_changelog_has_each_release_with_its_date_and_commit() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = [(m["version"], m["date"]) for m in HEADING.finditer(text)]
    assert headings[0] == ("Unreleased", None)
    table = list(reversed(releases()))
    assert headings[1:] == [(r.version, r.date.isoformat()) for r in table]
    sections = HEADING.split(text)
    # split gives [before, v, date, body, v, date, body, ...]: each body names its commit
    bodies = {sections[i]: sections[i + 2] for i in range(1, len(sections), 3)}
    for r in table:
        assert f"Commit `{r.commit[:7]}`" in bodies[r.version], r.version
    assert "retroactively on 2026-12-06" in text


def test_a_version_resolves_to_its_commit_and_anything_else_is_a_revision(
    tmp_path: Path,
) -> None:
    table = tmp_path / "releases.toml"
    table.write_text(
        '[[release]]\nversion = "0.2.0"\ncommit = "' + "a" * 40 + '"\ndate = 2026-12-03\n'
        '[[release]]\nversion = "0.3.0-rc.1"\ncommit = "' + "b" * 40 + '"\ndate = 2026-12-03\n',
        encoding="utf-8",
    )
    assert resolve("0.2.0", table) == ("a" * 40, "0.2.0")
    assert resolve("v0.2.0", table) == ("a" * 40, "0.2.0")
    assert resolve("v0.3.0-rc.1", table) == ("b" * 40, "0.3.0-rc.1")
    assert resolve("main", table) == ("main", "main")
    assert resolve("9f422fc", table) == ("9f422fc", "9f422fc")
    assert release("HEAD~1", table) is None
    with pytest.raises(SystemExit, match=r"no release 0\.9\.9 .*released: 0\.2\.0, 0\.3\.0-rc\.1"):
        resolve("0.9.9", table)


def test_the_repository_table_resolves_the_baseline_the_docs_use() -> None:
    baseline = release("0.2.0")
    assert isinstance(baseline, Release)
    assert baseline.commit.startswith("9f422fc")
