"""A deterministic hashing embedder: for tests and quick trials, no model, no network.

Each text becomes a bag of features (lower-cased words for Latin script, character
unigrams and bigrams for CJK), each hashed to a signed bucket; the vector is
L2-normalised. Texts that share words or characters land close together, so semantic
tests are meaningful, and the same text always gives the same vector.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

from amrita_memory_pg.embedding.base import EmbeddingProvider, TextKind

_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")


def features(text: str) -> list[str]:
    """The hashed features of a text (exposed for tests)."""
    lowered = text.lower()
    out = _WORD.findall(lowered)
    chars = _CJK.findall(lowered)
    out.extend(chars)
    out.extend(a + b for a, b in itertools.pairwise(chars))
    return out


class HashingProvider(EmbeddingProvider):
    protocol = "hash"
    base_url = ""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model = f"hash-{dim}"

    def vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float64)
        for feat in features(text):
            digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vec[value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0  # empty or symbol-only text: a fixed unit vector
            norm = 1.0
        return (vec / norm).astype(np.float32)

    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[Sequence[float]]:
        return [self.vector(text).tolist() for text in texts]
