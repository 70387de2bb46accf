"""A NoneBot event → :class:`ToolContext` (platform, user, group, roles)."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from nonebot import get_plugin
from nonebot.adapters import Bot, Event
from nonebot.permission import SUPERUSER

from amrita_memory_pg.domain.knowledge import KNOWLEDGE_NODE
from amrita_memory_pg.tools.context import ToolContext

log = logging.getLogger(__name__)

#: NoneBot adapter name → our platform name (which picks the partition-key prefix)
PLATFORMS = {"OneBot V11": "qq", "Console": "console"}
LITEPERM_PLUGINS = ("nonebot_plugin_liteperm", "liteperm")
#: LitePerm nodes that become roles: its admin, and the knowledge base's read node
LITEPERM_NODES = ("lp.admin", KNOWLEDGE_NODE)


def platform_of(bot: Bot) -> str:
    name = bot.adapter.get_name()
    return PLATFORMS.get(name, name.lower().replace(" ", ""))


def group_of(event: Event) -> str | None:
    """The group (or public channel) id of a message event; None in a private chat."""
    group_id = getattr(event, "group_id", None)
    if group_id:
        return str(group_id)
    try:
        from nonebot.adapters.console.event import PublicMessageEvent
    except ImportError:  # the console adapter is optional
        return None
    if isinstance(event, PublicMessageEvent):
        return str(event.channel.id)
    return None


def sender_role(event: Event) -> str | None:
    """OneBot's group role of the sender (owner / admin / member), if the event has one."""
    role = getattr(getattr(event, "sender", None), "role", None)
    return str(role) if role else None


async def has_liteperm_node(event: Event, node: str) -> bool:
    """Whether LitePerm (when loaded) grants ``node``; any failure counts as no."""
    for plugin_id in LITEPERM_PLUGINS:
        plugin = get_plugin(plugin_id)
        if plugin is None:
            continue
        try:
            rules: Any = importlib.import_module(f"{plugin.module_name}.api.rules")
            checker = rules.UserPermissionChecker(permission=node).checker()
            return bool(await checker(event))
        except Exception:  # an optional plugin's API: never let it break the command
            log.warning("LitePerm %s check failed; treating as not granted", node, exc_info=True)
            return False
    return False


async def has_liteperm_admin(event: Event) -> bool:
    """Whether LitePerm (when loaded) grants ``lp.admin``."""
    return await has_liteperm_node(event, "lp.admin")


async def liteperm_roles(event: Event) -> set[str]:
    """The LitePerm nodes our permission checks use that the sender holds, as roles."""
    return {node for node in LITEPERM_NODES if await has_liteperm_node(event, node)}


async def tool_context(bot: Bot, event: Event, *, check_liteperm: bool = False) -> ToolContext:
    """The speaker of ``event`` as the tools and commands see them."""
    roles: set[str] = set()
    if await SUPERUSER(bot, event):
        roles.add("superuser")
    role = sender_role(event)
    if role in ("owner", "admin"):
        roles.add(role)
    if check_liteperm:
        roles |= await liteperm_roles(event)
    return ToolContext(
        platform=platform_of(bot),
        user_id=str(event.get_user_id()),
        group_id=group_of(event),
        roles=frozenset(roles),
    )
