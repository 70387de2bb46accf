"""The one HTTP floor under embedding/ and llm/: timeouts, retries, redacted errors.

Import :mod:`amrita_memory_pg.net.http` where it is used; this package module stays
empty so that importing it loads no httpx.
"""
