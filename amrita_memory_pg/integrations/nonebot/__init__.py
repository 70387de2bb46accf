"""NoneBot2 integration: the plugin module and the parts it is made of.

The plugin is :mod:`amrita_memory_pg.integrations.nonebot.amrita_memory_pg` (:data:`PLUGIN`):
NoneBot names a plugin after the last part of its module path, so that path is what makes
NoneBot and AmritaBot list it as ``amrita_memory_pg`` (loaded as this package it was listed
as ``nonebot``). Importing this package does not need a running NoneBot; the plugin
module does. Everything under this package may import NoneBot; nothing else in
``amrita_memory_pg`` does.

Loading this package itself as a plugin — the path the documentation gave before the
plugin module had its own name — still works: it logs a warning naming the new path and
loads the plugin module as its sub-plugin (listed as ``nonebot:amrita_memory_pg``).
"""

from __future__ import annotations

#: the module to put in a bot's plugin list (``[tool.amrita] plugins``, ``load_plugin``)
PLUGIN = "amrita_memory_pg.integrations.nonebot.amrita_memory_pg"

# NoneBot's plugin loader sets __plugin__ on a module before running it.
if "__plugin__" in globals():
    from nonebot import logger, require

    logger.warning(
        f"amrita_memory_pg: load the plugin as {PLUGIN} (it is then listed as "
        f"amrita_memory_pg); {__name__} still loads it, as a sub-plugin"
    )
    require(PLUGIN)
