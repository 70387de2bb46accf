"""Chat hooks: every incoming message → chat log + activity heatmap (+ the L3 trigger of
its targets); bot replies → chat log.

Both feed the future L3 loop. They never raise into the chat: a failed write is logged
and the message goes on to the other plugins untouched. Characters PostgreSQL cannot
store (NUL, lone surrogates) are replaced by U+FFFD first, so such a line is still
logged and counted instead of failing with a driver error.
"""

from __future__ import annotations

import logging
from typing import Any

from nonebot.adapters import Bot, Event

from amrita_memory_pg.domain.keys import group_key, personal_key
from amrita_memory_pg.domain.validation import scrub
from amrita_memory_pg.integrations.nonebot.context import group_of, platform_of
from amrita_memory_pg.integrations.nonebot.runtime import Runtime
from amrita_memory_pg.tools.context import ToolContext

log = logging.getLogger(__name__)

SEND_APIS = frozenset({"send_msg", "send_group_msg", "send_private_msg"})


async def record_incoming(runtime: Runtime, bot: Bot, event: Event) -> None:
    """Log a user's message in its session and count it in their heatmap cell."""
    memory = runtime.memory
    if memory is None:
        return
    try:
        text = scrub(event.get_plaintext())
        ctx = ToolContext(
            platform=platform_of(bot), user_id=str(event.get_user_id()), group_id=group_of(event)
        )
        await memory.activity.record_user_message(
            session_key=ctx.session_key,
            user_key=ctx.personal_key,
            user_id=ctx.user_id,
            group_id=ctx.group_id,
            text=text,
        )
    except Exception:  # a hook's outer edge
        log.exception("recording an incoming message failed")
        return
    # Under AmritaBot the trigger counts completions (its pre-completion hook) as the
    # reference did; plain NoneBot has no completion event to count, so messages count.
    if not runtime.l3_counts_completions:
        await trigger_l3(runtime, ctx)


async def trigger_l3(runtime: Runtime, ctx: ToolContext) -> None:
    """A message of an L3 target (its speaker's personal partition, or the group it was
    said in): observe it, bump the penalty, and move the target's cycle job to the newly
    planned run (reference §8.2–8.3). Never raises into the chat."""
    memory, jobs = runtime.memory, runtime.l3_jobs
    if memory is None or jobs is None or not memory.scheduling.enabled:
        return
    try:
        jobs.schedule(await memory.scheduling.on_user_message(ctx.personal_key, ctx.group_key))
    except Exception:
        log.exception("rescheduling the L3 cycle failed")


async def record_outgoing(
    runtime: Runtime,
    bot: Bot,
    exception: Exception | None,
    api: str,
    data: dict[str, Any],
) -> None:
    """Log what the bot sent on OneBot v11 (QQ), whichever plugin sent it."""
    memory = runtime.memory
    if memory is None or exception is not None or api not in SEND_APIS:
        return
    if bot.adapter.get_name() != "OneBot V11":
        return
    try:
        message = data.get("message")
        extract = getattr(message, "extract_plain_text", None)
        text = scrub(str(extract() if callable(extract) else message or ""))
        group_id = data.get("group_id")
        is_group = api == "send_group_msg" or (
            api == "send_msg" and (data.get("message_type") == "group" or group_id is not None)
        )
        if is_group and group_id is not None:
            session = group_key("qq", str(group_id))
        elif data.get("user_id") is not None:
            session, group_id = personal_key("qq", str(data["user_id"])), None
        else:
            return
        await memory.activity.record_bot_message(
            session_key=session,
            bot_id=str(bot.self_id),
            group_id=str(group_id) if group_id is not None else None,
            text=text,
        )
    except Exception:
        log.exception("recording an outgoing message failed")


async def deliver_pending(runtime: Runtime, bot: Bot, event: Event) -> None:
    """On an L3 target's private message: send what the loop queued and could not send
    yet (a failed send, or no bot connected then), in this chat; a failed send keeps
    the message for the next attempt. Never in a group (W14)."""
    memory = runtime.memory
    if memory is None:
        return
    try:
        ctx = ToolContext(
            platform=platform_of(bot), user_id=str(event.get_user_id()), group_id=group_of(event)
        )
        if ctx.in_group:
            return

        async def reply(_target: str, text: str) -> None:
            await bot.send(event, text)

        await memory.send_pending(ctx.personal_key, reply)
    except Exception:  # a hook's outer edge
        log.exception("sending the pending proactive messages failed")
