"""Reading the reference plugin's Chroma directory (``import-legacy``), never writing it.

The reference kept its L2 memories in a persistent Chroma collection (reference §3.1)
with its model fingerprint in the collection metadata (§7.2). This returns ids,
documents, metadata and vectors as plain lists; what they become is decided by
:mod:`amrita_memory_pg.domain.legacy`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

_PAGE = 1000


@dataclass(slots=True)
class ChromaData:
    ids: list[Any]
    documents: list[Any]
    metadatas: list[Any]
    vectors: list[Any]
    collection_meta: dict[str, Any]
    mtime: datetime


def read_reference_collection(chroma_dir: Path, name: str) -> ChromaData | None:
    """Collection ``name`` from a COPY of the persistent directory; None if it has none.

    Blocking (run it in a thread). The copy is opened, never ``chroma_dir``: a newer
    chromadb migrates the files it opens, and the old installation must stay as it was.
    """
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    mtime = max(
        (p.stat().st_mtime for p in chroma_dir.rglob("*") if p.is_file()),
        default=chroma_dir.stat().st_mtime,
    )
    with tempfile.TemporaryDirectory(prefix="amrita-legacy-chroma-") as tmp:
        copy = Path(tmp) / "chroma"
        shutil.copytree(chroma_dir, copy)
        client = chromadb.PersistentClient(
            path=str(copy), settings=ChromaSettings(anonymized_telemetry=False)
        )
        try:
            names = {getattr(c, "name", c) for c in client.list_collections()}
            if name not in names:
                return None
            collection = client.get_collection(name, embedding_function=None)
            data = ChromaData(
                [],
                [],
                [],
                [],
                dict(collection.metadata or {}),
                mtime=datetime.fromtimestamp(mtime, UTC),
            )
            offset = 0
            while True:
                page: Any = collection.get(
                    include=["documents", "metadatas", "embeddings"],
                    limit=_PAGE,
                    offset=offset,
                )
                ids = list(page["ids"])
                if not ids:
                    break
                data.ids += ids
                documents: list[Any] = list(page.get("documents") or [None] * len(ids))
                metadatas: list[Any] = list(page.get("metadatas") or [None] * len(ids))
                data.documents += documents
                data.metadatas += metadatas
                embeddings = page.get("embeddings")
                if embeddings is None:
                    data.vectors += [None] * len(ids)
                else:
                    # float32 rows as they are (converting to Python floats costs more than
                    # the whole read)
                    data.vectors += list(np.asarray(embeddings, dtype=np.float32))
                offset += len(ids)
            return data
        finally:
            with contextlib.suppress(Exception):
                client.clear_system_cache()
