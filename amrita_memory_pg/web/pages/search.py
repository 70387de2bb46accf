"""Search across partitions: the per-partition search of the memory
list (``MemoryService.search``, the same SQL, scores and hybrid cut-off as
``read_memory``) run on each partition, the hits merged, each row naming and linking its
partition.

Bounded, and the page says so: the :data:`MAX_PARTITIONS` largest partitions are
searched (the query is embedded once: the embedder caches it), each gives at most
:data:`PER_PARTITION` hits, the hybrid cut-off is applied again over the merged rows (as
one search over them all would), and the best :data:`MAX_HITS` are shown. An operator's view:
nothing is logged as a recall, a pause does not hide a partition.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.fusion import relevant_hits
from amrita_memory_pg.domain.records import SEARCH_MODES, SOURCE_NAMES, SearchHit, SearchMode
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.admin import AdminRepository
from amrita_memory_pg.usecases.values import MemoryQuery
from amrita_memory_pg.web import kit
from amrita_memory_pg.web.forms import (
    BULK_ACTIONS,
    CROSS_SEARCH_MESSAGES,
    MAX_BULK_ROWS,
    CrossSearchInput,
)
from amrita_memory_pg.web.pages.memories import SCOPES

router = APIRouter()
NAV = [kit.NavItem("search", "/search", "nav.search")]

#: the largest partitions searched (partition_usage order: most memories first)
MAX_PARTITIONS = 200
#: hits taken from each partition
PER_PARTITION = 10
#: hits shown in all
MAX_HITS = 50
#: partitions searched at the same time (each search is one pooled statement)
CONCURRENCY = 4


def order_key(hit: SearchHit, mode: SearchMode) -> float:
    """How hits of different partitions compare: ``decay_score`` (similarity × decay,
    the same scale in every partition), in keyword mode (similarity 1) the BM25 ``score``."""
    if mode == "keyword":
        return hit.score if hit.score is not None else hit.keyword_score
    return hit.decay_score


async def search_all(
    mem: Memory,
    admin: AdminRepository,
    q: str,
    mode: SearchMode,
    scope: str | None,
    now: datetime,
) -> tuple[list[SearchHit], int, int]:
    """(the best hits, partitions searched, partitions in all)."""
    usage, total = await admin.partition_page(limit=MAX_PARTITIONS, offset=0)
    keys = [u.partition_key for u in usage]
    if keys and mode != "keyword":
        await mem.embedder.embed_query(q)  # once; every partition's search reads the cache
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(key: str) -> list[SearchHit]:
        async with gate:
            asked = MemoryQuery(
                key,
                q,
                top_k=PER_PARTITION,
                scope=scope,  # type: ignore[arg-type]
                mode=mode,
                now=now,
            )
            return (await mem.cases.memories.search(asked)).hits

    found = await asyncio.gather(*(one(k) for k in keys))
    # the hybrid cut-off once more over the merged rows: a partition's nearest row is no
    # hit when another partition holds much nearer ones (as one search over all of them)
    hits = relevant_hits([h for part in found for h in part], mode)
    hits.sort(key=lambda h: (-order_key(h, mode), h.record.partition_key, h.record.id))
    return hits[:MAX_HITS], len(keys), total


@router.get("/search")
async def search(request: Request, user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    settings = kit.state(request).settings
    params = request.query_params
    q = params.get("q", "").strip()
    mode_text = params.get("mode", "")
    mode: SearchMode = settings.retrieval.default_mode
    for known in SEARCH_MODES:
        if mode_text == known:
            mode = known
    scope = params.get("scope", "")
    scope = scope if scope in SCOPES else ""
    values, errors = kit.parse_form(request, CrossSearchInput, {"q": q}, CROSS_SEARCH_MESSAGES)
    hits: list[SearchHit] = []
    searched = total = 0
    if values is not None and values.q:
        try:
            hits, searched, total = await search_all(
                kit.memory(request),
                kit.admin_store(request),
                values.q,
                mode,
                scope or None,
                kit.now(request),
            )
        except AmritaMemoryError as exc:
            errors.append(t("refused.failed", reason=kit.clean(request, str(exc))))
    shown = {k: v for k, v in (("q", q), ("mode", mode_text), ("scope", scope)) if v}
    back = "/search" + ("?" + urlencode(shown) if shown else "")
    return kit.render(
        request,
        "search.html",
        q=q,
        mode=mode_text if mode_text in SEARCH_MODES else "",
        scope=scope,
        errors=errors,
        hits=hits,
        ran=bool(q) and not errors,
        searched=searched,
        total=total,
        default_mode=settings.retrieval.default_mode,
        modes=SEARCH_MODES,
        scopes=SCOPES,
        sources=SOURCE_NAMES,
        limits={"partitions": MAX_PARTITIONS, "per": PER_PARTITION, "hits": MAX_HITS},
        actions=[a for a in BULK_ACTIONS if a != "pause" or user.superuser],
        max_bulk=MAX_BULK_ROWS,
        back=back,
        done=_done(request),
    )


#: the results of a bulk action started from this page (bulk.py sends the browser back)
DONE = ("bulk_deleted", "bulk_tagged", "bulk_importance", "bulk_paused")


def _done(request: Request) -> str | None:
    done = request.query_params.get("done", "")
    if done not in DONE:
        return None
    return kit.translator_for(request)(f"done.{done}", n=request.query_params.get("n", "")[:10])
