"""The L2 bench against a released version: both sides interleaved in one command, new/old.

How every hot-path change is judged: absolute figures move with whatever else the machine
runs; a ratio of runs interleaved in the same minutes does not (much).

    .venv/bin/python bench/ab_l2.py --baseline 0.2.0             # 100k / 1,000 partitions
    .venv/bin/python bench/ab_l2.py --baseline 0.4.0 --quick     # 20k / 200, a first look
    .venv/bin/python bench/ab_l2.py --baseline 0.2.0 --new 0.14.1 --rounds 3

A version (``0.2.0`` or ``v0.2.0``) is resolved to its commit by ``bench/releases.toml``
(a fresh clone may have no tags); any other name is taken as a git revision (a commit or
a branch: for development, the docs name versions). Each revision is checked out in a git worktree under /tmp (kept for the next run) and
runs in this venv with PYTHONPATH at that worktree, so it imports its own package, its
own sql/ and migrations/ (amrita_memory_pg/resources.py finds them next to the package),
and migrates its own fresh embedded PostgreSQL. The working tree of this checkout is the
default new side. A revision with the named search query (sql/queries/memories.sql) is
driven by THIS bench_l2.py, which times every mode; an older one by its own bench_l2.py
(vector reads, writes, sweep: its hybrid/keyword rows print as —). Rows are matched by
label; each side's figure is the median of its rounds, the ratio new/old (< 1 = faster).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from releases import resolve

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
WORKTREES = Path("/tmp/amrita_ab")

QUICK = ["--rows", "20000", "--partitions", "200", "--big-partition", "5000"]
QUICK += ["--queries", "300", "--writes", "300"]
FULL = ["--rows", "100000", "--partitions", "1000", "--big-partition", "10000"]
FULL += ["--queries", "1000", "--writes", "1000"]
ALWAYS = ["--no-reference", "--skip-hnsw-sweep"]

#: a table row of bench_l2.py: | label | ours | reference | ratio |
ROW = re.compile(r"^\| (?P<label>[^|]+?) \| (?P<value>[0-9.]+) (?P<unit>ms|s) \|")


@dataclass
class Side:
    """One revision under test: where its code is and which bench script drives it."""

    name: str
    root: Path
    script: Path
    runs: list[dict[str, float]] = field(default_factory=list)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CHECKOUT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def checkout(rev: str) -> Path:
    """A detached worktree of ``rev`` (a version or a git revision) under /tmp, made once
    and reused."""
    sha = git("rev-parse", "--verify", f"{resolve(rev)[0]}^{{commit}}")
    path = WORKTREES / sha[:12]
    if not (path / "amrita_memory_pg").is_dir():
        WORKTREES.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", "--force", str(path), sha)
    return path


def side(name: str, root: Path) -> Side:
    """This bench script when the revision has the named search query, else its own.
    This one is copied first: editing bench_l2.py during a run changes neither side."""
    named = root / "sql" / "queries" / "memories.sql"
    drives = named.is_file() and "name: search_memories" in named.read_text(encoding="utf-8")
    if not drives:
        return Side(name, root, root / "bench" / "bench_l2.py")
    frozen = WORKTREES / f"bench_l2_{os.getpid()}.py"
    if not frozen.exists():
        WORKTREES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HERE / "bench_l2.py", frozen)
    return Side(name, root, frozen)


def label_key(label: str) -> str:
    """A row's label without what varies between runs (the recall figures)."""
    return re.sub(r" \(HNSW; recall.*\)$", " (HNSW)", label.strip())


def run_side(s: Side, bench_args: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(s.root)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(s.script), *bench_args],
        cwd=s.root,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"{s.name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    values: dict[str, float] = {}
    for line in done.stdout.splitlines():
        if m := ROW.match(line):
            value = float(m["value"]) * (1000.0 if m["unit"] == "s" else 1.0)
            values[label_key(m["label"])] = value  # the last table printed wins
    print(
        f"# {s.name}: {time.perf_counter() - started:.0f} s, "
        + ", ".join(f"{k.split(' (')[0]} {v:.3f}" for k, v in list(values.items())[:4]),
        flush=True,
    )
    return values


def fmt(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.3f} ms"


def render(old: Side, new: Side) -> str:
    labels: list[str] = []
    for s in (new, old):
        for run in s.runs:
            labels += [k for k in run if k not in labels]
    lines = [
        f"| row | {old.name} (each round) | {new.name} (each round) | new/old (medians) |",
        "|---|---:|---:|---:|",
    ]
    for label in labels:
        cells, medians = [], []
        for s in (old, new):
            got = [r[label] for r in s.runs if label in r]
            cells.append(" / ".join(fmt(v) for v in got) or "—")
            medians.append(statistics.median(got) if got else None)
        ratio = f"{medians[1] / medians[0]:.2f}×" if medians[0] and medians[1] else "—"
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--baseline", required=True, help="the old side: a version (0.2.0), or a git revision"
    )
    parser.add_argument(
        "--new", help="the new side: a version or a git revision (default: this working tree)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side, interleaved")
    parser.add_argument("--quick", action="store_true", help="20k memories / 200 partitions")
    parser.add_argument("bench_args", nargs="*", help="more bench_l2.py arguments (after --)")
    args = parser.parse_args()
    bench_args = (QUICK if args.quick else FULL) + ALWAYS + args.bench_args
    old = side(resolve(args.baseline)[1], checkout(args.baseline))
    new = side(resolve(args.new)[1], checkout(args.new)) if args.new else side("new", CHECKOUT)
    print(f"# old {old.name}: {old.root} (script {old.script})")
    print(f"# new {new.name}: {new.root}; bench_l2.py {' '.join(bench_args)}", flush=True)
    for _ in range(args.rounds):
        for s in (old, new):
            s.runs.append(run_side(s, bench_args))
    print(render(old, new))
    for s in (old, new):
        if s.script.parent == WORKTREES:
            s.script.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
