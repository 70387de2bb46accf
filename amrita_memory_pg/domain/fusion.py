"""The ranking of a search in Python: the pure twin of ``score_memories_v1`` (SQL).

The chroma backend scores its candidates here (the pgvector backend does it in SQL);
``tests/integration/test_hybrid_search.py`` checks the two agree. Relevance by mode:

- ``vector``: similarity 1/(1+d) (d = squared L2), reference §5.1;
- ``keyword``: BM25 of the query's search tokens (computed in SQL either way), only the
  candidates that share a token with the query;
- ``hybrid``: ``rrf`` = 1/(k + vector rank) + 1/(k + keyword rank) (no keyword term
  without a match), or ``weighted`` = (1 - w) × min-max-normalised similarity
  + w × bm25 / max bm25 (similarities spread under 1e-3 count as equal);

then × the decay factor when decay is on, ordered by score desc, distance, created_at, id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from amrita_memory_pg.domain.decay import (
    DecayPolicy,
    age_days,
    decay_factor,
    decay_score,
    half_life_days,
    similarity_from_distance,
)
from amrita_memory_pg.domain.records import MemoryRecord, Ranking, SearchHit

#: the weighted fusion's smallest similarity spread worth normalising (as in the SQL)
SPREAD = 1e-3


@dataclass(frozen=True, slots=True)
class Candidate:
    record: MemoryRecord
    #: squared L2 distance to the query vector; None when unknown (keyword mode)
    distance: float | None
    #: BM25 of the query's tokens; None when the memory shares no token with the query
    bm25: float | None = None


def _ranks(keyed: list[tuple[tuple[float, datetime, str], int]]) -> dict[int, int]:
    """1-based position of each candidate index when sorted by its key."""
    ordered = sorted(keyed, key=lambda pair: pair[0])
    return {index: rank for rank, (_key, index) in enumerate(ordered, start=1)}


def relevance(candidates: Sequence[Candidate], ranking: Ranking) -> list[float | None]:
    """The relevance of each candidate under ``ranking`` (None = not a result)."""
    mode = ranking.mode
    if mode == "vector":
        return [similarity_from_distance(c.distance) for c in candidates]
    if mode == "keyword":
        return [c.bm25 for c in candidates]
    if ranking.fusion == "rrf":
        vrank = _ranks(
            [
                ((c.distance, c.record.created_at, c.record.id), i)
                for i, c in enumerate(candidates)
                if c.distance is not None
            ]
        )
        krank = _ranks(
            [
                ((-c.bm25, c.record.created_at, c.record.id), i)
                for i, c in enumerate(candidates)
                if c.bm25 is not None
            ]
        )
        k = ranking.rrf_k
        out: list[float | None] = []
        for i in range(len(candidates)):
            score = 1.0 / (k + vrank[i]) if i in vrank else 0.0
            if i in krank:
                score += 1.0 / (k + krank[i])
            out.append(score)
        return out
    sims = [
        similarity_from_distance(c.distance) if c.distance is not None else None for c in candidates
    ]
    known = [s for s in sims if s is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    top = max((c.bm25 for c in candidates if c.bm25 is not None), default=0.0)
    w = ranking.keyword_weight
    weighted: list[float | None] = []
    for sim, c in zip(sims, candidates, strict=True):
        # a spread under 1e-3 is noise (the stored vectors are halfvec: even their
        # lengths are rounded, ~1e-4 on a similarity), not a ranking
        vec = 0.0 if sim is None else ((sim - lo) / (hi - lo) if hi - lo > SPREAD else 1.0)
        kw = c.bm25 / top if c.bm25 is not None and top > 0 else 0.0
        weighted.append((1 - w) * vec + w * kw)
    return weighted


def rank_candidates(
    candidates: Sequence[Candidate],
    *,
    ranking: Ranking,
    top_k: int,
    now: datetime,
    decay: DecayPolicy,
) -> list[SearchHit]:
    """Score (relevance × decay factor), order like the SQL, keep ``top_k``."""
    hits = []
    for cand, rel in zip(candidates, relevance(candidates, ranking), strict=True):
        if rel is None:
            continue
        record = cand.record
        age = age_days(record.created_at, now)
        score = rel
        if decay.enabled:
            hl = half_life_days(decay.half_life_days, record.importance, decay.importance_boost)
            score = rel * decay_factor(age, hl, decay.score_floor)
        hits.append(
            SearchHit(
                record=record,
                distance=cand.distance,
                decay_score=score,
                age_days=age,
                keyword_score=cand.bm25 or 0.0,
            )
        )
    hits.sort(
        key=lambda h: (
            -h.decay_score,
            math.inf if h.distance is None else h.distance,
            h.record.created_at,
            h.record.id,
        )
    )
    return hits[:top_k]


def reference_scored(hit: SearchHit, policy: DecayPolicy, mode: str) -> SearchHit:
    """``hit`` with ``score`` = the backend's ranking key and ``decay_score`` = the
    reference's similarity × decay factor, whatever the mode ranked by, so that a shown
    score means one thing; in vector mode the two are the backend's one number (left bit
    for bit as ranked)."""
    rank = hit.decay_score if hit.score is None else hit.score
    if mode == "vector":
        return replace(hit, score=rank)
    ref = (
        decay_score(hit.distance, hit.age_days, hit.record.importance, policy)
        if policy.enabled
        else similarity_from_distance(hit.distance)
    )
    return replace(hit, decay_score=ref, score=rank)


#: hybrid mode's cut-off: a row that shares no token with the query is a hit only when
#: its distance is within this factor of the nearest row's (relative, because embedding
#: models differ: e5-small puts unrelated Chinese texts at squared L2 0.36, OpenAI's at
#: 1.5); docs/retrieval.md#scores-shown
HYBRID_DISTANCE_RATIO = 1.5


def relevant_hits(hits: Sequence[SearchHit], mode: str) -> list[SearchHit]:
    """The ranked rows that are hits at all (a hybrid search used to list every row of the
    partition). Keyword rows share a token by construction, vector mode ranks by distance
    alone; a hybrid row must share a token
    (``keyword_score`` > 0) or lie within :data:`HYBRID_DISTANCE_RATIO` × the nearest
    returned row's distance (the nearest row itself always stays)."""
    if mode != "hybrid":
        return list(hits)
    known = [h.distance for h in hits if h.distance is not None]
    if not known:
        return list(hits)
    limit = min(known) * HYBRID_DISTANCE_RATIO
    return [
        h for h in hits if h.keyword_score > 0 or (h.distance is not None and h.distance <= limit)
    ]
