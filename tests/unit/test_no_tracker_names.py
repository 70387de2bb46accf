"""The project speaks of itself: what a reader finds in the README, the docs, the package and
the benches names versions and dates and says why in place — never a work session ("stop
36", "this stop", a helper session), a tracker number ("issue 24") or a bare commit hash as
a release's name. A release's commit is written once, in bench/releases.toml, and shown in
CHANGELOG.md. Read as text; no database."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: where the rule holds: what a user, an operator or the next maintainer reads
SOURCES = (
    REPO / "README.md",
    REPO / "docs",
    REPO / "amrita_memory_pg",
    REPO / "bench",
    REPO / "sql",
    REPO / "migrations",
    REPO / "tests",
    REPO / "bot.py",
    REPO / "Makefile",
    REPO / "pyproject.toml",
)
#: text files by suffix (the package ships SQL-free Python, templates, locales, static files)
TEXT = {".py", ".md", ".toml", ".txt", ".sql", ".html", ".j2", ".jinja", ".css", ".js", ".json", ""}
#: the one table of releases may hold their commits
COMMITS_ALLOWED = {REPO / "bench" / "releases.toml"}

SESSION = re.compile(r"\bstops? [0-9]+\b|\bstop-[0-9]+\b|\bthis stop\b|\bhelper sessions?\b", re.I)
TRACKER = re.compile(r"\bissues? #?[0-9]+", re.I)
#: 7 to 40 hex digits with a letter and a digit, standing alone (a short or full commit)
COMMIT = re.compile(r"(?<![\w./#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")


def files() -> Iterator[Path]:
    for source in SOURCES:
        if source.is_file():
            yield source
            continue
        for path in sorted(source.rglob("*")):
            if (
                path.is_file()
                and path.suffix in TEXT
                and "__pycache__" not in path.parts
                and path != Path(__file__)  # this check's own examples
            ):
                yield path


def problems(path: Path, text: str) -> list[str]:
    """Every line of ``text`` that names a work session, a tracker number or, in prose
    (markdown) and the benches, a commit."""
    found = []
    name = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    commits = path not in COMMITS_ALLOWED and (path.suffix == ".md" or "bench" in path.parts)
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in (SESSION, TRACKER, *([COMMIT] if commits else [])):
            if m := pattern.search(line):
                found.append(f"{name}:{number}: {m.group(0)!r} in {line.strip()[:100]!r}")
    return found


def test_nothing_names_a_work_session_a_tracker_number_or_a_commit() -> None:
    found = [p for path in files() for p in problems(path, path.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)


def test_the_check_finds_what_it_should() -> None:
    doc = REPO / "docs" / "page.md"
    code = REPO / "amrita_memory_pg" / "module.py"
    bench = REPO / "bench" / "script.py"
    assert problems(doc, "measured in stop 3, sweep 0.81×") != []
    assert problems(doc, "Stops 37–38 measured variants") != []  # a range, by its start
    assert problems(doc, "stops 37 and 38") != []
    assert problems(doc, "the stop-36 labels") != []
    assert problems(doc, "Latest: this stop") != []
    assert problems(code, "# the trail (issue 17) records who") != []
    assert problems(code, "# issues 22 and 23") != []
    assert problems(code, "# see Issue #24") != []
    assert problems(doc, "against `9f422fc`, five rounds") != []
    assert problems(bench, "--baseline 2548392ab") != []
    assert problems(doc, "against 0.2.0, five rounds; and stop at `p_until`") == []
    assert problems(code, "KID = '0a1b2c3d'  # a knowledge id, not a commit") == []
    assert problems(doc, "a 1000000-row run on 20261203, sha256 of 64 hex") == []
    assert problems(REPO / "bench" / "releases.toml", 'commit = "' + "9f422fc" * 5 + '"') == []
