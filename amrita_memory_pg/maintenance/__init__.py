"""What operators run: backup, restore, re-embed, fingerprint check, key migration, ANN
index upkeep and status. Each function takes explicit parts (a
:class:`~amrita_memory_pg.services.store.Store` or a pool), never the ``Memory`` service,
so the CLI, the start-up checks and a web page share them.
"""
