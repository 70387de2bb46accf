"""Retrieval quality, every search mode side by side. One command, one table.

    .venv/bin/python bench/eval_retrieval.py                       # LoCoMo dev + zh/en set, local + hash
    .venv/bin/python bench/eval_retrieval.py --models local --skip-locomo
    .venv/bin/python bench/eval_retrieval.py --fusion weighted --keyword-weight 0.4

Two sets, each memory written with the product's own insert (``insert_memory_v3``: the
model check, the cap, the search tokens of ``domain/tokens.py``) on a fresh embedded
PostgreSQL, each query asked through the chat tool ``read_memory`` (its arguments, the
query's embedding, ``search_memories_v4``, the reply):

- LoCoMo (``--locomo``, default ``locomo/locomo-dev7.json`` under ``--data``, the shared
  data directory beside the repository; read from there, never copied into it): every turn of a conversation is one memory of that conversation's
  partition ("speaker: text", plus the photo caption when there is one); every question
  of categories 1-4 whose evidence turns exist is a query; hit@k = one of its evidence
  turns among the first k; MRR over the first 10.
- ``tests/fixtures/zh_en_retrieval.json``: our own Chinese/English facts and paraphrased
  queries (names, numbers, dates, cross-lingual pairs), all facts in one partition.

All memories are written at one instant and read moments later, so the time decay is
~1 for all of them and the table measures relevance. Passages are embedded in batches
(the tool would embed one at a time: same vectors, minutes slower).

Also printed: the database time of ``search_memories`` per mode on a partition of 100
memories (``--latency-rows``), the query vector computed beforehand (p50/p95 over
``--latency-queries`` calls).

``--halfvec`` runs every model twice, the second time with each vector the model returns
(passages and queries) rounded to half precision in Python. It measured what a ``halfvec``
column (2 bytes a dimension instead of 4) would store and compare before the store had one;
since migration 0062_halfvec the columns are ``halfvec`` and the server rounds every vector
itself, so on this release both runs give the same table (the plain run is the product). The
model embeds each text once for both runs (an in-process cache).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.records import SEARCH_MODES, MemoryQuery, NewMemory
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import RetrievalSettings, load_settings
from amrita_memory_pg.tools.context import ToolContext

REPO = Path(__file__).resolve().parents[1]
#: The shared data directory beside the repository (``../shared/data``): the LoCoMo file is
#: read from there at run time and never copied into the repository.
DATA_DIR = REPO.parent / "shared" / "data"
LOCOMO_FILE = Path("locomo") / "locomo-dev7.json"
ZH_EN = REPO / "tests" / "fixtures" / "zh_en_retrieval.json"
KS = (1, 5, 10)
BATCH = 32
#: (protocol, kind, text) → the model's vector: the two precisions of --halfvec embed once
EMBEDDED: dict[tuple[str, str, str], Any] = {}


def remember(provider: Any, model: str, half: bool) -> None:
    """Make ``provider`` embed each text once per process (EMBEDDED), and with ``half``
    return its vectors rounded to float16, as a halfvec column stores them."""
    embed = provider.embed

    async def embedded(texts: Sequence[str], kind: str) -> list[Any]:
        missing = [t for t in texts if (model, kind, t) not in EMBEDDED]
        if missing:
            for text, vector in zip(missing, await embed(missing, kind), strict=True):
                EMBEDDED[(model, kind, text)] = np.asarray(vector, dtype=np.float32)
        out = [EMBEDDED[(model, kind, t)] for t in texts]
        return [v.astype(np.float16).astype(np.float32) if half else v for v in out]

    provider.embed = embedded  # this instance only: the run with the other precision has its own


@dataclass
class Score:
    """Hits at 1/5/10 and the reciprocal ranks of one (set, model, mode)."""

    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    rr: float = 0.0
    n: int = 0

    def add(self, ranked: Sequence[str], wanted: set[str]) -> None:
        self.n += 1
        for rank, item in enumerate(ranked[: max(KS)], start=1):
            if item in wanted:
                self.rr += 1.0 / rank
                for k in KS:
                    if rank <= k:
                        self.hits[k] += 1
                return

    def row(self) -> list[str]:
        n = max(self.n, 1)
        return [f"{self.hits[k] / n:.3f}" for k in KS] + [f"{self.rr / n:.3f}", str(self.n)]


@dataclass(frozen=True)
class Query:
    text: str
    wanted: frozenset[str]
    group: str


@dataclass(frozen=True)
class Partition:
    """One partition's memories (label → text) and the queries asked of it."""

    user: str
    memories: dict[str, str]
    queries: list[Query]


def add_data_options(parser: argparse.ArgumentParser) -> None:
    """``--data`` (the shared data directory) and ``--locomo`` (a file, overriding it)."""
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA_DIR,
        help="shared data directory holding locomo/ (default: %(default)s)",
    )
    parser.add_argument(
        "--locomo", type=Path, default=None, help=f"LoCoMo JSON (default: DATA/{LOCOMO_FILE})"
    )


def locomo_path(args: argparse.Namespace) -> Path:
    """The LoCoMo file: ``--locomo`` when given, else under ``--data``; a clear error when
    it is missing (e.g. in a worktree, whose parent holds no ``shared/data``)."""
    path: Path = args.locomo or args.data / LOCOMO_FILE
    if not path.is_file():
        raise SystemExit(
            f"LoCoMo file {path} not found: give --data DIR (the directory holding "
            f"{LOCOMO_FILE}) or --locomo FILE, or run with --skip-locomo"
        )
    return path


def locomo_partitions(path: Path) -> list[Partition]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for number, sample in enumerate(data):
        conv = sample["conversation"]
        memories: dict[str, str] = {}
        for key, turns in conv.items():
            if not (key.startswith("session_") and isinstance(turns, list)):
                continue
            for turn in turns:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                memories[turn["dia_id"]] = text
        queries = []
        for qa in sample["qa"]:
            wanted = {e.strip() for e in qa.get("evidence", []) if e.strip() in memories}
            if qa.get("category") in (1, 2, 3, 4) and wanted:
                queries.append(Query(qa["question"], frozenset(wanted), "all"))
        out.append(Partition(f"locomo{number}", memories, queries))
    return out


def zh_en_partitions(path: Path) -> list[Partition]:
    data = json.loads(path.read_text(encoding="utf-8"))
    memories = {fact["id"]: fact["text"] for fact in data["facts"]}
    queries = [
        Query(q["q"], frozenset(q["answer"]), q["kind"])
        for q in data["queries"]
        if set(q["answer"]) <= set(memories)
    ]
    return [Partition("zh_en", memories, queries)]


async def load(mem: Memory, part: Partition, now: datetime) -> dict[str, str]:
    """Write the partition's memories; returns memory id → label."""
    ctx = ToolContext(platform="qq", user_id=part.user)
    labels = list(part.memories)
    ids: dict[str, str] = {}
    service = mem.memories
    for start in range(0, len(labels), BATCH):
        chunk = labels[start : start + BATCH]
        texts = [part.memories[label] for label in chunk]
        vectors = await mem.embedder.embed_passages(texts)
        for label, text, vector in zip(chunk, texts, vectors, strict=True):
            record = await service.repo.add(
                NewMemory(
                    partition_key=ctx.personal_key,
                    scope="user",
                    content=text,
                    vector=vector,
                    fingerprint=mem.embedder.fingerprint,
                    now=now,
                    tokens=tuple(search_tokens(text)),
                ),
                mem.embedder.provider,
            )
            ids[record.id] = label
        if start % (BATCH * 20) == 0:
            print(
                f"    {part.user}: {start + len(chunk)}/{len(labels)}", file=sys.stderr, flush=True
            )
    return ids


async def ask(
    mem: Memory, part: Partition, ids: dict[str, str], mode: str, table: dict[str, Score]
) -> None:
    ctx = ToolContext(platform="qq", user_id=part.user)
    for q in part.queries:
        reply = json.loads(
            await mem.call_tool(
                "read_memory", {"query": q.text, "top_k": 10, "scope": "user", "mode": mode}, ctx
            )
        )
        if reply.get("status") != "success":
            raise SystemExit(f"read_memory failed: {reply}")
        ranked = [ids.get(i, "?") for i in reply["ids"][0]]
        for group in {"all", q.group}:
            table.setdefault(group, Score()).add(ranked, set(q.wanted))


async def ask_variants(
    mem: Memory,
    loaded: list[tuple[Partition, dict[str, str]]],
    variants: list[tuple[str, float]],
    out: dict[str, dict[str, Score]],
) -> None:
    """Hybrid fusion variants on the same query vectors (each query embedded once): the
    repository's search (search_memories_v4), not the tool, so one run compares many."""
    repo = mem.memories.repo
    for part, ids in loaded:
        key = ToolContext(platform="qq", user_id=part.user).personal_key
        for q in part.queries:
            vector = await mem.embedder.embed_query(q.text)
            base = mem.memories.ranking("hybrid", q.text)
            for fusion, value in variants:
                ranking = replace(
                    base,
                    fusion="rrf" if fusion == "rrf" else "weighted",
                    rrf_k=value if fusion == "rrf" else base.rrf_k,
                    keyword_weight=value if fusion == "weighted" else base.keyword_weight,
                )
                hits = await repo.search(
                    MemoryQuery(
                        key,
                        vector,
                        datetime.now(UTC),
                        top_k=10,
                        ranking=ranking,
                        decay=mem.memories.policy,
                    )
                )
                ranked = [ids.get(h.record.id, "?") for h in hits]
                table = out.setdefault(f"hybrid {fusion}={value:g}", {})
                for group in {"all", q.group}:
                    table.setdefault(group, Score()).add(ranked, set(q.wanted))


async def latency(
    mem: Memory, part: Partition, rows: int, n: int
) -> dict[str, tuple[float, float]]:
    """p50/p95 (ms) of the search statement per mode on ``rows`` memories, DB time."""
    labels = list(part.memories)[:rows]
    small = Partition(part.user + "_lat", {k: part.memories[k] for k in labels}, part.queries)
    await load(mem, small, datetime.now(UTC))
    key = ToolContext(platform="qq", user_id=small.user).personal_key
    questions = [q.text for q in part.queries[:n]] or ["hello"]
    vectors = [await mem.embedder.embed_query(text) for text in questions]
    repo = mem.memories.repo
    out: dict[str, tuple[float, float]] = {}
    for mode in SEARCH_MODES:
        times: list[float] = []
        for _ in range(2):  # the first round warms the plan cache
            times = []
            for text, vector in zip(questions, vectors, strict=True):
                ranking = mem.memories.ranking(mode, text)
                started = time.perf_counter()
                await repo.search(
                    MemoryQuery(
                        key,
                        None if mode == "keyword" else vector,
                        datetime.now(UTC),
                        top_k=5,
                        ranking=ranking,
                        decay=mem.memories.policy,
                    )
                )
                times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out[mode] = (statistics.median(times), times[int(len(times) * 0.95) - 1])
    return out


def print_table(title: str, rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")


async def run_model(
    args: argparse.Namespace, model: str, sets: dict[str, list[Partition]], half: bool = False
) -> tuple[list[list[str]], list[list[str]]]:
    workdir = Path(tempfile.mkdtemp(prefix=f"eval-{model}-"))
    overrides: dict[str, Any] = {
        "data_dir": str(workdir),
        "embedding.protocol": model,
        "per_session_memory_limit": 100_000,
        "retrieval.fusion": args.fusion,
        "retrieval.keyword_weight": args.keyword_weight,
        "retrieval.rrf_k": args.rrf_k,
    }
    if args.local_threads is not None:
        overrides["embedding.local_threads"] = args.local_threads
    settings = load_settings(env={}, read_default_files=False, overrides=overrides)
    rows: list[list[str]] = []
    lat_rows: list[list[str]] = []
    try:
        async with open_memory(settings, startup=False) as mem:
            await mem.embedder.prepare()
            remember(mem.embedder.provider, model, half)
            described = mem.embedder.describe() + (" halfvec" if half else "")
            for set_name, parts in sets.items():
                started = time.perf_counter()
                loaded = [(part, await load(mem, part, datetime.now(UTC))) for part in parts]
                print(
                    f"  {model}: {set_name} loaded in {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                )
                for mode in args.modes:
                    table: dict[str, Score] = {}
                    started = time.perf_counter()
                    for part, ids in loaded:
                        await ask(mem, part, ids, mode, table)
                    print(
                        f"  {model}: {set_name} {mode} in {time.perf_counter() - started:.0f} s",
                        file=sys.stderr,
                    )
                    for group in sorted(table, key=lambda g: (g != "all", g)):
                        rows.append(
                            [
                                set_name if group == "all" else f"{set_name}/{group}",
                                described,
                                mode,
                                *table[group].row(),
                            ]
                        )
                if args.variants:
                    started = time.perf_counter()
                    found: dict[str, dict[str, Score]] = {}
                    await ask_variants(mem, loaded, args.variants, found)
                    print(
                        f"  {model}: {set_name} variants in {time.perf_counter() - started:.0f} s",
                        file=sys.stderr,
                    )
                    for name, by_group in found.items():
                        for group in sorted(by_group, key=lambda g: (g != "all", g)):
                            label = set_name if group == "all" else f"{set_name}/{group}"
                            rows.append(
                                [label, described, f"{name} (repo)", *by_group[group].row()]
                            )
            if args.latency_rows and sets:
                first = next(iter(sets.values()))[0]
                for mode, (p50, p95) in (
                    await latency(mem, first, args.latency_rows, args.latency_queries)
                ).items():
                    lat_rows.append(
                        [described, str(args.latency_rows), mode, f"{p50:.2f}", f"{p95:.2f}"]
                    )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows, lat_rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_data_options(parser)
    parser.add_argument(
        "--zh-en", type=Path, default=ZH_EN, help="our zh/en set (default: %(default)s)"
    )
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-zh-en", action="store_true")
    parser.add_argument(
        "--models", default="local,hash", help="embedding protocols, comma-separated"
    )
    parser.add_argument("--modes", default=",".join(SEARCH_MODES))
    parser.add_argument("--fusion", default="weighted", choices=["rrf", "weighted"])
    parser.add_argument(
        "--keyword-weight",
        type=float,
        default=RetrievalSettings.model_fields["keyword_weight"].default,
    )
    parser.add_argument("--rrf-k", type=float, default=60.0)
    parser.add_argument("--local-threads", type=int, default=None)
    parser.add_argument(
        "--variants",
        default="",
        help="hybrid fusions to compare on the same query vectors, e.g. rrf:60,weighted:0.3",
    )
    parser.add_argument("--latency-rows", type=int, default=100)
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument(
        "--halfvec",
        action="store_true",
        help="each model again with its vectors rounded to half precision (pgvector halfvec)",
    )
    args = parser.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    args.variants = [
        (v.split(":")[0], float(v.split(":")[1])) for v in args.variants.split(",") if v
    ]
    sets: dict[str, list[Partition]] = {}
    if not args.skip_locomo:
        sets["locomo"] = locomo_partitions(locomo_path(args))
    if not args.skip_zh_en:
        sets["zh_en"] = zh_en_partitions(args.zh_en)
    header = ["set", "model", "mode", "hit@1", "hit@5", "hit@10", "MRR", "queries"]
    lat_header = ["model", "rows", "mode", "p50 ms", "p95 ms"]
    all_rows: list[list[str]] = []
    all_lat: list[list[str]] = []
    for model in [m for m in args.models.split(",") if m]:
        for half in (False, True) if args.halfvec else (False,):
            rows, lat = asyncio.run(run_model(args, model, sets, half))
            all_rows += rows
            all_lat += lat
    fusion = f"fusion {args.fusion}" + (
        f", w={args.keyword_weight}" if args.fusion == "weighted" else f", k={args.rrf_k:g}"
    )
    print_table(
        f"Retrieval quality ({fusion}; decay on, every memory the same age)", all_rows, header
    )
    if all_lat:
        print_table(
            "search_memories DB time per mode (query vector precomputed)", all_lat, lat_header
        )


if __name__ == "__main__":
    main()
