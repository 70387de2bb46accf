"""Application services: embed first, then call the repositories.

The one floor that combines an :class:`~amrita_memory_pg.domain.ports.Embedder` with
storage, so that every surface above (chat tools, ``/memory`` commands, CLI, the L3
loop) gets the same order of work: texts are embedded before any transaction opens.
"""
