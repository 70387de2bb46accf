"""Group membership for ``memory_load_context``, asked of the platform.

On OneBot v11 (QQ) a connected bot answers ``get_group_member_info``: an answer means the
user is in the group, ``ActionFailed`` means the platform says they are not. Where no
such bot is connected, or the call fails otherwise (network, timeout), the core's
default check answers instead (the chat log: whoever has spoken in the group).
"""

from __future__ import annotations

import logging

from nonebot import get_bots
from nonebot.adapters.onebot.v11.exception import ActionFailed

from amrita_memory_pg.domain.ports import MembershipCheck

log = logging.getLogger(__name__)


def onebot_membership(fallback: MembershipCheck) -> MembershipCheck:
    """A membership check that asks a connected OneBot v11 bot, else ``fallback``."""

    async def check(platform: str, user_id: str, group_id: str) -> bool:
        if platform == "qq" and user_id.isdigit() and group_id.isdigit():
            for bot in get_bots().values():
                if bot.adapter.get_name() != "OneBot V11":
                    continue
                try:
                    info = await bot.call_api(
                        "get_group_member_info",
                        group_id=int(group_id),
                        user_id=int(user_id),
                        no_cache=True,
                    )
                except ActionFailed:
                    return False
                except Exception:  # the platform did not answer: use the chat log
                    log.warning("get_group_member_info failed; using the chat log", exc_info=True)
                    break
                return bool(info)
        return await fallback(platform, user_id, group_id)

    return check
