"""AmritaBot's chat context → :class:`ToolContext` (platform, user, group, roles).

amrita-core itself knows no users: a tool gets ``ToolContext(data, ctx=StrategyContext)``
and a hook gets the event, and both reach the :class:`amrita_core.ChatObject` of the
turn. The AmritaBot host (``amrita.plugins.chat``) stores its NoneBot context in that
object's hook kwargs under ``"amrita"``: ``{"event", "bot", "matcher", "bot_config"}``,
with a OneBot v11 message event. The reference plugin reads the same place
(``ctx.ctx.chat_object._hook_kwargs["amrita"]["event"]``). Everything here is duck-typed,
so this module imports neither NoneBot nor the AmritaBot host.

Identity follows the reference: the platform is QQ (AmritaBot speaks OneBot v11 only),
so the keys are ``QQPlatform_Private_{qq}`` / ``QQPlatform_Group_{gid}``, the same
strings as the host's ``make_uni_id``; a truthy ``group_id`` makes it a group chat, whose
memo is the group's (§2.3). Roles: the OneBot sender role ``owner`` / ``admin`` (group
chats only), and ``superuser`` when the user id is in the bot's NoneBot ``SUPERUSERS``
(the same two spellings NoneBot's ``SUPERUSER`` permission accepts). LitePerm nodes
(``lp.admin``, ``memory.knowledge``) need an async look-up: the NoneBot plugin adds them
for the knowledge reads through the adapter's ``enrich`` hook (:func:`chat_event`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from amrita_memory_pg.tools.context import ToolContext

#: the key AmritaBot uses in ``ChatObject`` hook kwargs (``amrita.plugins.chat.runtime``)
AMRITA_CTX_KEY = "amrita"
#: AmritaBot runs on OneBot v11 (QQ); this picks the ``QQPlatform_`` key prefix
PLATFORM = "qq"
GROUP_ROLES = frozenset({"owner", "admin"})

#: How the adapter finds the speaker of a turn from its ``ChatObject`` (None = unknown).
Identify = Callable[[Any], ToolContext | None]


def _user_id(event: Any) -> str | None:
    get = getattr(event, "get_user_id", None)
    try:
        value = get() if callable(get) else getattr(event, "user_id", None)
    except ValueError:  # NoneBot: "Event has no context!" for non-user events
        return None
    return str(value) if value not in (None, "") else None


def _is_superuser(bot: Any, user_id: str) -> bool:
    superusers = getattr(getattr(bot, "config", None), "superusers", None) or ()
    return user_id in superusers or f"onebot:{user_id}" in superusers


def event_context(event: Any, bot: Any = None) -> ToolContext | None:
    """The speaker of a OneBot-style message event; None when it names no user."""
    user_id = _user_id(event)
    if user_id is None:
        return None
    group_id = getattr(event, "group_id", None)
    roles: set[str] = set()
    role = getattr(getattr(event, "sender", None), "role", None)
    if group_id and role in GROUP_ROLES:
        roles.add(str(role))
    if _is_superuser(bot, user_id):
        roles.add("superuser")
    return ToolContext(
        platform=PLATFORM,
        user_id=user_id,
        group_id=str(group_id) if group_id else None,
        roles=frozenset(roles),
    )


def chat_event(chat_object: Any) -> Any | None:
    """The NoneBot event of an AmritaBot turn, or None (for LitePerm look-ups)."""
    hook_kwargs = getattr(chat_object, "_hook_kwargs", None)
    if not isinstance(hook_kwargs, Mapping):
        return None
    bot_ctx = hook_kwargs.get(AMRITA_CTX_KEY)
    if not isinstance(bot_ctx, Mapping):
        return None
    return bot_ctx.get("event")


def chat_context(chat_object: Any) -> ToolContext | None:
    """The speaker of an AmritaBot turn; None without a bot context (e.g. a bare amrita-core call)."""
    hook_kwargs = getattr(chat_object, "_hook_kwargs", None)
    if not isinstance(hook_kwargs, Mapping):
        return None
    bot_ctx = hook_kwargs.get(AMRITA_CTX_KEY)
    if not isinstance(bot_ctx, Mapping) or bot_ctx.get("event") is None:
        return None
    return event_context(bot_ctx["event"], bot_ctx.get("bot"))
