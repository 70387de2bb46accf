"""ChromaDB as the similarity index; PostgreSQL stays the record of truth.

PostgreSQL keeps every memory with its vector. One Chroma collection holds the same
vectors (id = the memory id; metadata ``partition_key``, ``scope``, ``importance``,
``created_at`` in epoch seconds) so that similarity search runs in Chroma. The store
calls :meth:`ChromaBackend.added` / ``updated`` / ``removed`` inside its PostgreSQL
transaction: a Chroma failure raises :class:`BackendError` and the write rolls back.
The other way round (Chroma written, then the commit fails) leaves a vector without a
row; search never shows it, because every hit is re-read from PostgreSQL by id, and
:meth:`ChromaBackend.rebuild` clears it.

Search follows ``search_memories_v4``'s vector mode, with ``n = max(ann_candidates, top_k × overfetch)``:

- a partition with at most ``n`` matching rows is scored exhaustively: every row is a
  candidate, its vector read from Chroma by id. Chroma's HNSW query is approximate even
  when ``n_results`` exceeds the partition (measured with chromadb 1.5: 98–99 of a
  100-row partition came back for ``n_results=200``), so it cannot be asked for "all";
- a larger one takes Chroma's ``n`` nearest under the partition filter (the ANN path,
  like the SQL's per-partition HNSW indexes).

Candidates are then filtered exactly in PostgreSQL, scored with ``domain.decay`` (the
pure twin of the SQL: ``1/(1+d) × max(0.5^(age/half_life), floor)``, d = squared L2,
which is Chroma's ``l2``) and ordered like the SQL: score desc, distance, created_at, id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg
import numpy as np
import numpy.typing as npt

from amrita_memory_pg.domain.decay import (
    DecayPolicy,
    age_days,
    decay_score,
    similarity_from_distance,
)
from amrita_memory_pg.domain.errors import BackendError, FingerprintMismatch
from amrita_memory_pg.domain.fusion import Candidate, rank_candidates
from amrita_memory_pg.domain.ports import Vector
from amrita_memory_pg.domain.records import MemoryQuery, MemoryRecord, SearchFilter, SearchHit
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.memories import count_all, record_from_row
from amrita_memory_pg.storage.queries import query

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Metadata

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Collection metadata marking a collection as ours, so that neither search nor
#: ``rebuild`` (which drops the collection) ever touches someone else's data — e.g. the
#: reference plugin's collection, which has the same default name.
OWNER_KEY = "amrita_memory_pg"
OWNER_VALUE = "vector-index-v1"


def vector_metadata(
    partition_key: str, scope: str, importance: int, created_at: datetime
) -> dict[str, str | int | float]:
    """The metadata stored with each vector: what the ANN pre-filter needs, nothing more."""
    return {
        "partition_key": partition_key,
        "scope": scope,
        "importance": int(importance),
        "created_at": created_at.timestamp(),
    }


def chroma_where(partition_key: str, where: SearchFilter) -> dict[str, Any]:
    """Chroma's pre-filter on the ANN path: partition, scope, importance lower bound.

    No upper bound on importance: the sweep demotes in SQL without telling the index,
    so Chroma's copy may be higher than the truth (never lower), and an upper bound
    would hide demoted memories. PostgreSQL applies the exact filters afterwards.
    """
    clauses: list[dict[str, Any]] = [{"partition_key": partition_key}]
    if where.importance_min is not None:
        clauses.append({"importance": {"$gte": where.importance_min}})
    if where.scope is not None:
        clauses.append({"scope": where.scope})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def squared_l2(vectors: npt.ArrayLike, query: Vector) -> npt.NDArray[np.float64]:
    """Squared Euclidean distance of each row to ``query`` (Chroma's and our SQL's ``l2``)."""
    diff = np.asarray(vectors, dtype=np.float64) - np.asarray(query, dtype=np.float64)
    out: npt.NDArray[np.float64] = np.einsum("ij,ij->i", diff, diff)
    return out


def _matrix(vectors: Sequence[Vector]) -> npt.NDArray[np.float32]:
    """Rows of float32, the one embedding shape every chromadb version accepts, each value
    rounded to half precision: what the memory table (halfvec) stores and compares a query
    with, so that both backends rank the same vectors and a rebuild from the table changes
    nothing."""
    return np.asarray(vectors, dtype=np.float32).astype(np.float16).astype(np.float32)


def rank(
    candidates: Sequence[tuple[MemoryRecord, float]],
    *,
    top_k: int,
    now: datetime,
    decay: DecayPolicy,
) -> list[SearchHit]:
    """Score and order candidates like ``search_memories_v4``'s vector mode; keep ``top_k``."""
    policy = decay
    hits = []
    for record, distance in candidates:
        age = age_days(record.created_at, now)
        score = (
            decay_score(distance, age, record.importance, policy)
            if decay.enabled
            else similarity_from_distance(distance)
        )
        hits.append(SearchHit(record=record, distance=distance, decay_score=score, age_days=age))
    hits.sort(key=lambda h: (-h.decay_score, h.distance, h.record.created_at, h.record.id))
    return hits[:top_k]


async def _refuse_another_dimension(pool: asyncpg.Pool, dim: int, exc: BackendError) -> None:
    """After a failed search: raise :class:`FingerprintMismatch` when the query's
    dimension is not the store's (the embedding model changed: re-embed), as
    ``search_memories_v4`` does with SQLSTATE AMF03; return when it is (then the
    collection is what is wrong, and ``exc`` says to rebuild it). Read only on this
    failure path, so a search costs no extra round trip."""
    stored = (await store_meta.read(pool)).dim
    if stored is not None and stored != dim:
        raise FingerprintMismatch(
            f"embedding dimension mismatch: the store holds {stored}-dimensional vectors, "
            f"this query has {dim} dimensions (run `amrita-memory reindex`, or configure the "
            "model the store was built with)"
        ) from exc


def _chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _is_unreachable(exc: BaseException) -> bool:
    """A transport failure anywhere in the chain (chromadb re-raises some as ValueError)."""
    import httpx

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, httpx.TransportError | ConnectionError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class ChromaBackend:
    """A Chroma collection kept in step with ``amrita_memory.memory``; searches run there."""

    name = "chroma"
    write_hooks = True

    #: rows per upsert/delete call (below every Chroma server's batch limit)
    write_batch = 1000

    def __init__(self, settings: Settings) -> None:
        self.config = settings.vector_db
        self.ann_candidates = settings.retrieval.ann_candidates
        self.path = (
            Path(self.config.path).expanduser().resolve()
            if self.config.path
            else settings.resolved_data_dir() / "vector_db.chroma"
        )
        # chromadb is synchronous: its calls run on these threads, apart from the default
        # executor, so that a hung server (its HTTP client has no timeout) cannot starve
        # the rest of the process. The lock guards the lazily opened handles.
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="chroma")
        self._lock = threading.Lock()
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None
        self._opened = False
        self._closed = False

    @property
    def location(self) -> str:
        """Where the collection lives, for messages: the server URL or the directory."""
        if self.config.type == "remote":
            scheme = "https" if self.config.server_ssl else "http"
            return f"{scheme}://{self.config.server}:{self.config.port}"
        return str(self.path)

    # ------------------------------------------------------------------ the store's hooks

    async def search(self, pool: asyncpg.Pool, q: MemoryQuery) -> list[SearchHit]:
        partition_key, vector, top_k, now = q.partition_key, q.vector, q.top_k, q.now
        where, decay, ranking = q.where, q.decay, q.ranking
        n = max(self.ann_candidates, top_k * decay.overfetch)
        filters = (
            where.importance_min,
            where.importance_max,
            where.scope,
            list(where.tags) if where.tags else None,
            where.category,
        )
        keyword: dict[str, tuple[MemoryRecord, float]] = {}
        if ranking.mode != "vector" and ranking.tokens:
            # BM25 is computed in PostgreSQL, which holds the tokens, over the partition.
            for row in await pool.fetch(
                query("chroma_keyword_rows"),
                partition_key,
                list(ranking.tokens),
                n,
                *filters,
                now,
            ):
                keyword[row["id"]] = (record_from_row(row), float(row["keyword_score"]))
        if ranking.mode == "keyword" or vector is None:
            candidates = [Candidate(rec, None, bm25) for rec, bm25 in keyword.values()]
            return rank_candidates(candidates, ranking=ranking, top_k=top_k, now=now, decay=decay)
        rows = await pool.fetch(query("chroma_candidate_rows"), partition_key, *filters, n + 1)
        if not rows:
            return []
        try:
            if len(rows) <= n:
                near = await self._every_row(partition_key, rows, vector)
            else:
                near = await self._nearest(pool, partition_key, vector, n, where, filters)
        except BackendError as exc:
            await _refuse_another_dimension(pool, len(vector), exc)
            raise
        if ranking.mode == "vector":
            return rank(near, top_k=top_k, now=now, decay=decay)
        seen = {record.id for record, _ in near}
        candidates = [
            Candidate(record, distance, keyword[record.id][1] if record.id in keyword else None)
            for record, distance in near
        ]
        # The HNSW path: keyword matches outside Chroma's nearest join with no vector term.
        candidates.extend(
            Candidate(rec, None, bm25) for rid, (rec, bm25) in keyword.items() if rid not in seen
        )
        return rank_candidates(candidates, ranking=ranking, top_k=top_k, now=now, decay=decay)

    async def added(self, record: MemoryRecord, vector: Vector) -> None:
        meta = vector_metadata(
            record.partition_key, record.scope, record.importance, record.created_at
        )
        await self._run(
            f"index memory {record.id}",
            lambda c: c.upsert(ids=[record.id], embeddings=_matrix([vector]), metadatas=[meta]),
        )

    async def updated(self, record: MemoryRecord, vector: Vector | None) -> None:
        meta = vector_metadata(
            record.partition_key, record.scope, record.importance, record.created_at
        )
        if vector is None:
            # Metadata only; an id Chroma lacks is ignored by it (``rebuild`` restores it).
            await self._run(
                f"update memory {record.id}",
                lambda c: c.update(ids=[record.id], metadatas=[meta]),
            )
            return
        await self._run(
            f"update memory {record.id}",
            lambda c: c.upsert(ids=[record.id], embeddings=_matrix([vector]), metadatas=[meta]),
        )

    async def removed(self, ids: Sequence[str]) -> None:
        if not ids:
            return

        def delete(collection: Collection) -> None:
            for chunk in _chunks(ids, self.write_batch):
                collection.delete(ids=chunk)

        await self._run(f"remove {len(ids)} memories", delete)

    async def aclose(self) -> None:
        with self._lock:  # never held across a chroma call, so this cannot hang
            client, self._client, self._collection = self._client, None, None
            self._closed = True
        try:
            await asyncio.to_thread(_close_client, client)
        finally:
            # A call stuck on a hung server keeps its thread until the socket dies.
            self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ maintenance

    async def check(self, pool: asyncpg.Pool) -> tuple[int, int]:
        """(memories in PostgreSQL, vectors in the collection): equal when in step."""
        in_pg = await count_all(pool)
        in_chroma = await self._run("count the vectors", lambda c: c.count())
        return in_pg, int(in_chroma)

    async def rebuild(self, pool: asyncpg.Pool, *, batch_size: int = 500) -> int:
        """Drop the collection and refill it from PostgreSQL; returns the vectors indexed.

        For after a re-embed (new model, maybe a new dimension) and for recovery (a lost
        or wiped collection, a restored database). Writes made meanwhile go to the new
        collection; a last pass, holding the write gate (see :meth:`_reconcile`), compares
        ids on both sides and fixes the ones that were inserted or deleted while their
        batch was being copied. (A content edit racing
        its own row's copy can keep the old vector until the next rebuild: run it when
        the bot is quiet if that matters.)
        """
        await self._run("recreate the collection", self._recreate)
        after = ("", "")  # keyset (partition_key, id): the primary key's order
        while True:
            rows = await pool.fetch(query("chroma_rebuild_page"), *after, batch_size)
            if not rows:
                break
            await self._upsert_rows(rows)
            after = (rows[-1]["partition_key"], rows[-1]["id"])
        await self._reconcile(pool, batch_size)
        return (await self.check(pool))[1]

    async def _upsert_rows(self, rows: Sequence[asyncpg.Record]) -> None:
        if not rows:  # e.g. the missing ids of _reconcile were deleted meanwhile
            return
        ids = [row["id"] for row in rows]
        dims = {len(row["embedding"]) for row in rows}
        if len(dims) > 1:
            raise BackendError(
                f"memories have vectors of {len(dims)} different dimensions {sorted(dims)} "
                "(a re-embed in progress?): finish the re-embed, then rebuild the index"
            )
        embeddings = _matrix([row["embedding"] for row in rows])
        metadatas: list[Metadata] = [
            vector_metadata(r["partition_key"], r["scope"], r["importance"], r["created_at"])
            for r in rows
        ]
        await self._run(
            f"index {len(ids)} memories",
            lambda c: c.upsert(ids=ids, embeddings=embeddings, metadatas=metadatas),
        )

    async def vector_ids(self, ids: Sequence[str] | None = None) -> set[str]:
        """Which of ``ids`` (default: every id) the collection holds."""

        def read(collection: Collection) -> set[str]:
            found: set[str] = set()
            if ids is not None:
                for chunk in _chunks(ids, self.write_batch):
                    found.update(collection.get(ids=chunk, include=[])["ids"])
                return found
            offset = 0
            while True:
                page = collection.get(include=[], limit=self.write_batch, offset=offset)["ids"]
                found.update(page)
                if len(page) < self.write_batch:
                    return found
                offset += len(page)

        return await self._run("list the vectors", read)

    async def _reconcile(self, pool: asyncpg.Pool, batch_size: int) -> None:
        """Make the collection hold exactly the table's ids.

        A write reaches Chroma *before* its transaction commits (the hooks run inside
        it), so two plain reads can disagree about a write in flight: Chroma already
        has the new id while PostgreSQL does not show it yet (and removing it would
        lose it for good once it commits), or a delete already left Chroma while its row
        is still visible (and re-copying it would bring it back). So the pass runs under
        the write gate held exclusively: every write transaction takes it shared before
        its first Chroma call (``chroma_write_gate``), hence none is in flight here and
        new ones wait until this transaction ends. Chroma is read first, then the table.
        """
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(query("chroma_rebuild_gate"))
            in_chroma = await self.vector_ids()
            partition_of = {
                r["id"]: r["partition_key"] for r in await conn.fetch(query("chroma_all_ids"))
            }
            await self.removed(sorted(in_chroma - partition_of.keys()))
            missing = sorted(partition_of.keys() - in_chroma)
            for chunk in _chunks(missing, batch_size):
                keys = [partition_of[i] for i in chunk]
                await self._upsert_rows(await conn.fetch(query("chroma_rows_by_id"), keys, chunk))

    # ------------------------------------------------------------------ search paths

    async def _every_row(
        self, partition_key: str, rows: Sequence[asyncpg.Record], vector: Vector
    ) -> list[tuple[MemoryRecord, float]]:
        """Every matching row is a candidate; distances from the vectors Chroma holds."""
        by_id = {row["id"]: row for row in rows}
        got = await self._run(
            f"read the vectors of {partition_key}",
            lambda c: c.get(ids=list(by_id), include=["embeddings"]),
        )
        ids = list(got["ids"])
        if len(ids) < len(by_id):
            log.warning(
                "%d of %d memories of %s are missing from the chroma collection at %s; "
                "run `amrita-memory index rebuild`",
                len(by_id) - len(ids),
                len(by_id),
                partition_key,
                self.location,
            )
        if not ids:
            return []
        matrix = np.asarray(got["embeddings"], dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != len(vector):
            raise BackendError(
                f"chroma at {self.location} holds vectors of shape {matrix.shape[1:]} but the "
                f"query has {len(vector)} dimensions; run `amrita-memory index rebuild`"
            )
        distances = squared_l2(matrix, _matrix([vector])[0])
        return [(record_from_row(by_id[i]), float(d)) for i, d in zip(ids, distances, strict=True)]

    async def _nearest(
        self,
        pool: asyncpg.Pool,
        partition_key: str,
        vector: Vector,
        n: int,
        where: SearchFilter,
        filters: tuple[Any, ...],
    ) -> list[tuple[MemoryRecord, float]]:
        """Chroma's n nearest, kept only when their row exists and matches in PostgreSQL."""
        found = await self._run(
            f"search {partition_key}",
            lambda c: c.query(
                query_embeddings=_matrix([vector]),
                n_results=n,
                where=chroma_where(partition_key, where),
                include=["distances"],
            ),
        )
        ids = list(found["ids"][0])
        distances = list((found["distances"] or [[]])[0])
        if not ids:
            return []
        rows = await pool.fetch(query("chroma_matching_rows"), partition_key, *filters, ids)
        by_id = {row["id"]: row for row in rows}
        return [
            (record_from_row(by_id[i]), float(d))
            for i, d in zip(ids, distances, strict=True)
            if i in by_id
        ]

    # ------------------------------------------------------------------ the chroma boundary

    async def _run(self, action: str, fn: Callable[[Collection], T]) -> T:
        """Run ``fn`` on the collection in a worker thread (chromadb is synchronous)."""
        timeout = self.config.timeout_seconds
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(self._executor, self._call, action, fn)
        try:
            return await asyncio.wait_for(call, timeout)
        except TimeoutError as exc:
            raise BackendError(
                f"chroma at {self.location} did not answer within {timeout:g} s "
                f"(trying to {action})"
            ) from exc

    def _call(self, action: str, fn: Callable[[Collection], T]) -> T:
        try:
            return fn(self._open())
        except BackendError:
            raise
        except Exception as exc:  # the chroma boundary: every driver error becomes one BackendError
            with self._lock:
                self._collection = (
                    None  # re-open next time (server restarted, collection recreated)
                )
            if _is_unreachable(exc):
                raise BackendError(f"chroma at {self.location} is unreachable: {exc}") from exc
            raise BackendError(
                f"chroma at {self.location} failed to {action}: {type(exc).__name__}: {exc}"
            ) from exc

    def _open(self) -> Collection:
        """The collection, connecting on first use. Network calls run without the lock
        held, so a hung server never blocks ``aclose`` or the other threads' bookkeeping."""
        with self._lock:
            if self._closed:
                raise BackendError(f"the chroma index at {self.location} is closed")
            client, collection = self._client, self._collection
        if collection is not None:
            return collection
        if client is None:
            client = self._connect()
            with self._lock:
                if self._closed or self._client is not None:
                    spare, client = client, self._client
                    _close_client(spare)
                    if client is None:
                        raise BackendError(f"the chroma index at {self.location} is closed")
                else:
                    self._client = client
        collection = self._get_or_create(client)
        with self._lock:
            if self._collection is None:
                self._collection = collection
                self._opened = True
            return self._collection

    def _connect(self) -> ClientAPI:
        import chromadb
        from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT
        from chromadb.config import Settings as ChromaSettings

        # Never phone home; embeddings are always ours (embedding_function=None below).
        options = ChromaSettings(anonymized_telemetry=False)
        config = self.config
        if config.type == "remote":
            # The reference's `default` tenant/database mean Chroma's default ones.
            return chromadb.HttpClient(
                host=config.server,
                port=config.port,
                ssl=config.server_ssl,
                headers=dict(config.remote_headers) or None,
                settings=options,
                tenant=DEFAULT_TENANT if config.tenant == "default" else config.tenant,
                database=DEFAULT_DATABASE if config.database == "default" else config.database,
            )
        self.path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(self.path), settings=options)

    def _get_or_create(self, client: ClientAPI) -> Collection:
        from chromadb.errors import NotFoundError

        name = self.config.collection
        try:
            collection = client.get_collection(name, embedding_function=None)
        except NotFoundError:
            if self._opened:
                log.warning(
                    "chroma collection %r vanished at %s; starting an empty one: "
                    "run `amrita-memory index rebuild` to index the existing memories",
                    name,
                    self.location,
                )
            return self._create(client)
        if (collection.metadata or {}).get(OWNER_KEY) != OWNER_VALUE:
            count = collection.count()
            if count:
                raise BackendError(
                    f"chroma collection {name!r} at {self.location} holds {count} vectors that "
                    "amrita_memory_pg did not write (the reference plugin's memories?); import "
                    "them first, or set [vector_db] collection to another name"
                )
            client.delete_collection(name)  # an empty stranger: recreate it as ours
            return self._create(client)
        return collection

    def _create(self, client: ClientAPI) -> Collection:
        return client.get_or_create_collection(
            self.config.collection,
            configuration={"hnsw": {"space": "l2"}},
            metadata={OWNER_KEY: OWNER_VALUE},
            embedding_function=None,
        )

    def _recreate(self, current: Collection) -> None:
        """Drop our collection (``_open`` refused a stranger's already) and create it anew."""
        from chromadb.errors import NotFoundError

        with self._lock:
            client = self._client
            self._collection = None
        assert client is not None
        with contextlib.suppress(NotFoundError):  # deleted under us already
            client.delete_collection(current.name)
        created = self._create(client)
        with self._lock:
            self._collection = created


def _close_client(client: ClientAPI | None) -> None:
    """Release a client (and the persistent directory's system, on recent chromadb)."""
    close = getattr(client, "close", None)
    if close is not None:
        close()
