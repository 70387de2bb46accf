"""The docs stay true to the repository: every relative link (and ``#anchor``) resolves,
every ``amrita-memory …`` command quoted in code names a real subcommand and real options
(checked against the CLI's own click tree, in-process), and every repository path quoted
in code exists. No database: the docs are read as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from amrita_memory_pg.cli.app import cli
from amrita_memory_pg.cli.main import _register_commands

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "amrita_memory_pg"
#: CHANGELOG.md is history (it names files since removed) and is checked by test_releases.py
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "bench" / "README.md",
    REPO / "bench" / "RESULTS.md",
]

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
COMMAND = re.compile(r"(?<![\w./-])amrita-memory(?![\w-])")
#: tokens after which the rest of a line is no longer the command's arguments
STOP = {"&&", "||", ";", "|", ">", ">>", "<", "/", "2>&1", "then"}
#: a repository path quoted in code: top-level directories and the package's own floors
PATH = re.compile(r"(?:[\w.-]+/)+[\w.-]*")
TOP_DIRS = {"tests", "bench", "sql", "docs", "migrations", "amrita_memory_pg", ".ci"}
PACKAGE_DIRS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")}


@dataclass(frozen=True)
class Doc:
    """One markdown file split into prose (code spans kept) and fenced code lines."""

    path: Path
    prose: str
    code_lines: tuple[str, ...]
    headings: tuple[str, ...]


def read_doc(path: Path, text: str | None = None) -> Doc:
    prose: list[str] = []
    code: list[str] = []
    headings: list[str] = []
    fenced = False
    for line in (path.read_text(encoding="utf-8") if text is None else text).splitlines():
        if FENCE.match(line):
            fenced = not fenced
            prose.append("")  # a fence ends a paragraph: no code span runs across it
            continue
        if fenced:
            code.append(line)
            continue
        prose.append(line)
        if m := HEADING.match(line):
            headings.append(m.group(2))
    return Doc(path, "\n".join(prose), tuple(code), tuple(headings))


def slugs(headings: tuple[str, ...]) -> set[str]:
    """GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, -1/-2 for repeats."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in headings:
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def spans(doc: Doc) -> Iterator[str]:
    """Inline code spans of the prose (within one paragraph), table pipes unescaped."""
    for m in SPAN.finditer(doc.prose):
        body = m.group(2)
        if "\n\n" not in body:
            yield body.replace("\\|", "|")


def code_texts(doc: Doc) -> Iterator[str]:
    """Every piece of code a reader might copy: spans, and fenced lines without comments."""
    yield from spans(doc)
    for line in doc.code_lines:
        yield re.sub(r"(^|\s)#.*$", "", line)


def prose_without_spans(doc: Doc) -> str:
    return SPAN.sub(lambda m: " " * len(m.group(0)), doc.prose)


def link_problems(doc: Doc) -> list[str]:
    problems = []
    for m in LINK.finditer(prose_without_spans(doc)):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.path.parent / file_part).resolve() if file_part else doc.path
        if not dest.exists():
            problems.append(f"{doc.path.name}: link {target!r}: {file_part} does not exist")
            continue
        if anchor and dest.suffix == ".md" and anchor not in slugs(read_doc(dest).headings):
            problems.append(
                f"{doc.path.name}: link {target!r}: no heading #{anchor} in {dest.name}"
            )
    return problems


def _options(chain: list[click.Command]) -> set[str]:
    names = {"--help", "-h"}
    for command in chain:
        for param in command.params:
            if isinstance(param, click.Option):
                names.update(param.opts)
                names.update(param.secondary_opts)
    return names


def command_problems(text: str) -> list[str]:
    """What is wrong with each ``amrita-memory …`` command line in ``text`` (empty: none)."""
    _register_commands()
    problems = []
    for m in COMMAND.finditer(text):
        rest = text[m.end() :]
        chain: list[click.Command] = [cli]
        alternatives: list[click.Command] = []  # `a|b`: an option may belong to any of them
        walking = True
        words = ["amrita-memory"]
        for raw in rest.split():
            if raw in STOP or "…" in raw or "..." in raw or COMMAND.fullmatch(raw):
                break
            token = raw.strip("[](){}<>'\"`,;:")
            if not token:
                continue
            current = chain[-1]
            if token.startswith("-"):
                if current.context_settings.get("ignore_unknown_options"):
                    break  # psql: the rest is psql's own arguments
                known = _options(chain + alternatives)
                for option in token.split("|"):
                    name = option.split("=", 1)[0]
                    if name.startswith("-") and name not in known:
                        problems.append(f"`{' '.join(words)} {name}`: no such option")
                continue
            if not walking:
                continue
            if isinstance(current, click.Group):
                names = token.split("|")
                if all(re.fullmatch(r"[a-z][a-z0-9-]*", a) for a in names):
                    missing = [a for a in names if a not in current.commands]
                    for name in missing:
                        problems.append(f"`{' '.join(words)} {name}`: no such subcommand")
                    if missing:
                        break  # its options cannot be checked either
                    if len(names) > 1:
                        alternatives = [current.commands[a] for a in names]
                        walking = False
                    else:
                        chain.append(current.commands[token])
                        words.append(token)
                    continue
                if not current.invoke_without_command:
                    problems.append(f"`{' '.join(words)} {token}`: a subcommand is needed here")
            walking = False
    return problems


BENCH = re.compile(r"(?<![\w-])(bench/[\w-]+\.py)\b")
#: a script that hands the arguments after ``--`` to another one
FORWARDS = {"bench/ab_l2.py": "bench/bench_l2.py"}


def bench_option_problems(text: str) -> list[str]:
    """Options quoted after a ``bench/*.py`` script appear in that script's argument parser
    (as a string literal: the scripts are not imported, some need optional extras); after
    ``--``, in the parser of the script it forwards them to."""
    problems = []
    for m in BENCH.finditer(text):
        script = REPO / m.group(1)
        if not script.is_file():
            problems.append(f"`{m.group(1)}` does not exist")
            continue
        name, source = m.group(1), script.read_text(encoding="utf-8")
        for raw in text[m.end() :].split():
            if raw in STOP or "…" in raw or BENCH.search(raw) or COMMAND.fullmatch(raw):
                break
            if raw == "--":
                if name not in FORWARDS:
                    break
                name = FORWARDS[name]
                source = (REPO / name).read_text(encoding="utf-8")
                continue
            token = raw.strip("[](){}<>'\"`,;:")
            if not token.startswith("--"):
                continue
            option = token.split("=", 1)[0]
            if f'"{option}"' not in source and f"'{option}'" not in source:
                problems.append(f"`{name} {option}`: no such option")
    return problems


def path_problems(doc: Doc) -> list[str]:
    problems = []
    for text in code_texts(doc):
        candidate = text.strip()
        if not PATH.fullmatch(candidate) or candidate.startswith(("/", "../", "./")):
            continue
        top = candidate.split("/", 1)[0]
        if top in TOP_DIRS:
            found = (REPO / candidate).exists()
        elif top in PACKAGE_DIRS:
            found = (PACKAGE / candidate).exists()
        else:
            continue
        if not found:
            problems.append(f"{doc.path.name}: `{candidate}` does not exist")
    return problems


@pytest.fixture(scope="module", params=DOCS, ids=lambda p: str(p.relative_to(REPO)))
def doc(request: pytest.FixtureRequest) -> Doc:
    path: Path = request.param
    return read_doc(path)


def test_docs_exist() -> None:
    """The pages the README sends readers to are there, and it stays an entrance."""
    names = {p.name for p in DOCS}
    for page in ("architecture.md", "configuration.md", "guarantees.md", "performance.md"):
        assert page in names
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_relative_links_resolve(doc: Doc) -> None:
    assert link_problems(doc) == []


def test_quoted_commands_exist(doc: Doc) -> None:
    problems = [p for text in code_texts(doc) for p in command_problems(text)]
    assert problems == [], f"{doc.path.name}: {problems}"


def test_quoted_bench_options_exist(doc: Doc) -> None:
    problems = [p for text in code_texts(doc) for p in bench_option_problems(text)]
    assert problems == [], f"{doc.path.name}: {problems}"


def test_quoted_repository_paths_exist(doc: Doc) -> None:
    assert path_problems(doc) == []


def test_checker_catches_what_it_should(tmp_path: Path) -> None:
    """The checks above can fail: a wrong subcommand, option, link, anchor or path is found."""
    assert command_problems("amrita-memory backup create") == []
    assert command_problems("amrita-memory knowledge list|search [--mode M]") == []
    assert command_problems("amrita-memory knowledge list|show [--mode M]") == [
        "`amrita-memory knowledge --mode`: no such option"
    ]
    assert command_problems("amrita-memory psql -c 'SELECT 1'") == []
    assert command_problems("amrita-memory backup frobnicate") == [
        "`amrita-memory backup frobnicate`: no such subcommand"
    ]
    assert command_problems("amrita-memory frobnicate --yes") == [
        "`amrita-memory frobnicate`: no such subcommand"
    ]
    assert command_problems("amrita-memory reindex --no-such-flag") == [
        "`amrita-memory reindex --no-such-flag`: no such option"
    ]
    assert command_problems("amrita-memory knowledge KID") == [
        "`amrita-memory knowledge KID`: a subcommand is needed here"
    ]
    assert bench_option_problems("python bench/load.py --short --record FILE") == []
    assert bench_option_problems("python bench/load.py --shortest") == [
        "`bench/load.py --shortest`: no such option"
    ]
    assert bench_option_problems("bench/ab_l2.py --baseline 0.2.0 -- --cjk-chars 33") == []
    assert bench_option_problems("bench/ab_l2.py --quick -- --quick") == [
        "`bench/bench_l2.py --quick`: no such option"
    ]
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## A heading\n\n[ok](#a-heading) [bad](#nowhere) [gone](missing.md)\n"
        "`tests/unit/no_such_test.py` `tests/unit/test_docs.py`\n",
        encoding="utf-8",
    )
    assert link_problems(read_doc(page)) == [
        "page.md: link '#nowhere': no heading #nowhere in page.md",
        "page.md: link 'missing.md': missing.md does not exist",
    ]
    assert path_problems(read_doc(page)) == ["page.md: `tests/unit/no_such_test.py` does not exist"]
