"""Fusion experiments in seconds: the hybrid score of ``score_memories_v1`` replayed in numpy.

    .venv/bin/python bench/fusion_lab.py                  # embeds once, caches, prints a grid
    .venv/bin/python bench/fusion_lab.py --tune-on locomo # pick on LoCoMo, check on zh/en

``bench/eval_retrieval.py`` is the measurement (the real tool on PostgreSQL); it takes
minutes per variant because every query goes through the database. This script replays
the same scoring (BM25 k1/b over the partition's rows with the tokens of
``domain/tokens.py``, tf = 1; similarity 1/(1 + squared L2); min-max weighted fusion or
RRF; all memories the same age, so no decay) on cached vectors of the offline model, so
that a fusion variant costs a second. Its ``weighted w=0.5`` row must equal
eval_retrieval.py's hybrid row (checked by hand: the replica is only a lab). The vectors
are cached under ``--cache`` (default /tmp/amrita-fusion-lab): delete it after changing
the model.

Variants (``--variants``): ``weighted:W``, ``rrf:K``, ``coverage:W`` — the weighted fusion
with BM25 divided by the best BM25 the QUERY could reach (every query token matched in a
row of average length: Σ idf × (k1+1)/(1+k1)) instead of by the partition's top BM25, so a
row matching one common token of a long query no longer gets the keyword side's full
weight. Pick parameters on one set (``--tune-on``) and report both.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_retrieval import (
    ZH_EN,
    Partition,
    add_data_options,
    locomo_partitions,
    locomo_path,
    zh_en_partitions,
)

from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.embedding.factory import create_provider
from amrita_memory_pg.settings import load_settings

K1 = 1.2
B = 0.75


@dataclass
class Prepared:
    """One partition ready to score: vectors, token sets, the queries' answers."""

    labels: list[str]
    docs: np.ndarray  # (n, dim)
    tokens: list[set[str]]
    queries: list[tuple[np.ndarray, list[str], set[str], str]]  # vector, tokens, wanted, group


async def embed_all(texts: list[str], kind: str, cache: Path, name: str) -> np.ndarray:
    path = cache / f"{name}-{kind}.npy"
    if path.exists():
        loaded: np.ndarray = np.load(path)
        return loaded
    settings = load_settings(
        env={}, read_default_files=False, overrides={"embedding.protocol": "local"}
    )
    provider = create_provider(settings.embedding)
    await provider.prepare()
    out: list[Sequence[float]] = []
    for start in range(0, len(texts), 32):
        out.extend(await provider.embed(texts[start : start + 32], kind))  # type: ignore[arg-type]
        print(f"  {name} {kind}: {len(out)}/{len(texts)}", file=sys.stderr, flush=True)
    array = np.asarray(out, dtype=np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return array


async def prepare(parts: list[Partition], cache: Path, name: str) -> list[Prepared]:
    docs_text = [t for p in parts for t in p.memories.values()]
    query_text = [q.text for p in parts for q in p.queries]
    docs = await embed_all(docs_text, "passage", cache, name)
    queries = await embed_all(query_text, "query", cache, name)
    out = []
    d = q = 0
    for p in parts:
        n = len(p.memories)
        labels = list(p.memories)
        prepared = Prepared(
            labels,
            docs[d : d + n],
            [set(search_tokens(p.memories[label])) for label in labels],
            [],
        )
        for query in p.queries:
            prepared.queries.append(
                (queries[q], search_tokens(query.text), set(query.wanted), query.group)
            )
            q += 1
        d += n
        out.append(prepared)
    return out


def bm25_parts(part: Prepared, qtokens: list[str], k1: float, b: float) -> tuple[np.ndarray, float]:
    """BM25 of every row (NaN = no shared token) and the query's reachable maximum."""
    n = len(part.tokens)
    lens = np.array([len(t) for t in part.tokens], dtype=np.float64)
    avglen = max(lens.mean() if n else 1.0, 1.0)
    score = np.zeros(n)
    matched = np.zeros(n, dtype=bool)
    reach = 0.0
    for token in dict.fromkeys(qtokens):
        has = np.array([token in t for t in part.tokens])
        df = int(has.sum())
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        reach += idf * (k1 + 1) / (1 + k1)
        if df:
            score[has] += idf * (k1 + 1) / (1 + k1 * (1 - b + b * lens[has] / avglen))
            matched |= has
    score[~matched] = np.nan
    return score, reach


def fuse(kind: str, value: float, sim: np.ndarray, bm: np.ndarray, reach: float) -> np.ndarray:
    has = ~np.isnan(bm)
    if kind == "rrf":
        vrank = np.empty(len(sim))
        vrank[np.argsort(-sim, kind="stable")] = np.arange(1, len(sim) + 1)
        out = 1.0 / (value + vrank)
        if has.any():
            order = np.argsort(-np.where(has, bm, -np.inf), kind="stable")
            krank = np.empty(len(sim))
            krank[order] = np.arange(1, len(sim) + 1)
            out = out + np.where(has, 1.0 / (value + krank), 0.0)
        return out
    lo, hi = sim.min(), sim.max()
    vec = (sim - lo) / (hi - lo) if hi - lo > 1e-6 else np.ones_like(sim)
    if kind == "weighted":
        top = np.nanmax(bm) if has.any() else 0.0
        kw = np.where(has, bm / top, 0.0) if top > 0 else np.zeros_like(sim)
    elif kind == "coverage":
        kw = np.where(has, np.minimum(bm / reach, 1.0), 0.0) if reach > 0 else np.zeros_like(sim)
    else:
        raise SystemExit(f"unknown variant {kind}")
    return (1 - value) * vec + value * kw


def evaluate(
    sets: list[Prepared], score: Callable[[Prepared, int], np.ndarray]
) -> dict[str, tuple[float, float, float, float, int]]:
    """group → (hit@1, hit@5, hit@10, MRR@10, n)."""
    acc: dict[str, list[float]] = {}
    for part in sets:
        for i, (_v, _t, wanted, group) in enumerate(part.queries):
            s = score(part, i)
            order = np.lexsort((np.arange(len(s)), -s))[:10]
            ranked = [part.labels[j] for j in order]
            rank = next((r for r, label in enumerate(ranked, 1) if label in wanted), None)
            for g in {"all", group}:
                a = acc.setdefault(g, [0, 0, 0, 0.0, 0])
                a[4] += 1
                if rank:
                    a[0] += rank <= 1
                    a[1] += rank <= 5
                    a[2] += 1
                    a[3] += 1 / rank
    return {
        g: (a[0] / a[4], a[1] / a[4], a[2] / a[4], a[3] / a[4], int(a[4])) for g, a in acc.items()
    }


def scorer(kind: str, value: float, k1: float, b: float) -> Callable[[Prepared, int], np.ndarray]:
    cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, float]] = {}

    def score(part: Prepared, i: int) -> np.ndarray:
        key = (id(part), i)
        if key not in cache:
            vector, qtokens, _w, _g = part.queries[i]
            d2 = ((part.docs - vector) ** 2).sum(axis=1)
            sim = 1.0 / (1.0 + d2)
            bm, reach = bm25_parts(part, qtokens, k1, b)
            cache[key] = (sim, bm, reach)
        sim, bm, reach = cache[key]
        if kind == "vector":
            return sim
        if kind == "keyword":
            return np.where(np.isnan(bm), -1.0, bm)
        return fuse(kind, value, sim, bm, reach)

    return score


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_data_options(parser)
    parser.add_argument("--zh-en", type=Path, default=ZH_EN)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/amrita-fusion-lab"))
    parser.add_argument(
        "--variants",
        default="vector:0,keyword:0,weighted:0.5,rrf:60,weighted:0.4,weighted:0.6,"
        "coverage:0.3,coverage:0.4,coverage:0.5,coverage:0.6,coverage:0.7",
    )
    parser.add_argument("--k1", default="1.2")
    parser.add_argument("--b", default="0.75")
    args = parser.parse_args()
    sets = {
        "locomo": await prepare(locomo_partitions(locomo_path(args)), args.cache, "locomo"),
        "zh_en": await prepare(zh_en_partitions(args.zh_en), args.cache, "zh_en"),
    }
    print("| variant | k1 | b | set | hit@1 | hit@5 | hit@10 | MRR | n |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k1 in (float(x) for x in args.k1.split(",")):
        for b in (float(x) for x in args.b.split(",")):
            for variant in args.variants.split(","):
                kind, value = variant.split(":")
                for name, prepared in sets.items():
                    result = evaluate(prepared, scorer(kind, float(value), k1, b))
                    for group in sorted(result, key=lambda g: (g != "all", g)):
                        h1, h5, h10, mrr, n = result[group]
                        label = name if group == "all" else f"{name}/{group}"
                        print(
                            f"| {variant} | {k1:g} | {b:g} | {label} | {h1:.3f} | {h5:.3f} | "
                            f"{h10:.3f} | {mrr:.3f} | {n} |",
                            flush=True,
                        )


if __name__ == "__main__":
    asyncio.run(main())
