"""One error tree for the whole package.

Driver and HTTP errors are mapped to these at the boundary (``raise … from exc``) so
that callers — the CLI, the tool handlers, the NoneBot plugin — can turn any of them
into one clear sentence instead of a traceback.
"""

from __future__ import annotations


class AmritaMemoryError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(AmritaMemoryError):
    """A configuration key is unknown or its value is not allowed."""


class DatabaseError(AmritaMemoryError):
    """The database cannot be reached or is not usable."""


class DatabaseUnavailable(DatabaseError):
    """No connection could be made to the configured PostgreSQL server."""


class PgvectorMissing(DatabaseError):
    """The server lacks the pgvector extension, or has a version that is too old."""


class EmbeddedServerError(DatabaseError):
    """The embedded PostgreSQL server could not be initialised or started."""


class SchemaNotReady(DatabaseError):
    """The database schema is not at the revision this code expects."""


class EmbeddingError(AmritaMemoryError):
    """An embedding provider failed; nothing was written."""


class BackendError(AmritaMemoryError):
    """A vector backend (pgvector or chroma) failed."""
