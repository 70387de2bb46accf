"""``/memory pause|resume [user|group|global|<key>]`` (superusers; default: this chat's
partition). Paused: kept, not injected, not recalled, not written by the chat LLM,
extraction or L3; people still manage it."""

from __future__ import annotations

from functools import partial

from amrita_memory_pg.commands.memory_command.base import Services, Step
from amrita_memory_pg.commands.memory_command.texts import USAGE_PAUSE
from amrita_memory_pg.domain.keys import GLOBAL_KEY, check_partition_key, legacy_key_now
from amrita_memory_pg.domain.validation import InvalidInput
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.pause import PauseCases


def pause_or_resume(services: Services, ctx: ToolContext, sub: str, args: str) -> str | Step:
    """``sub`` is the word used (pause/暂停 or resume/恢复); superusers only (the dispatcher
    checks)."""
    target = args.strip()
    key = {
        "": ctx.session_key,
        "user": ctx.personal_key,
        "group": ctx.group_key,
        "global": GLOBAL_KEY,
    }.get(target, target)
    key = (key and legacy_key_now(key)) or key  # user_1 is QQPlatform_Private_1 now
    if not key or any(ch.isspace() for ch in key):
        return "用法: " + USAGE_PAUSE
    try:  # the one key rule of every surface (domain/keys.py)
        key = check_partition_key(key)
    except InvalidInput as exc:
        return f"{exc.reason}\n用法: {USAGE_PAUSE}"
    cases = services.cases.pause
    if sub in ("pause", "暂停"):
        return Step("pause", key, partial(_pause, cases, key, f"person:{ctx.user_id}"))
    return Step("pause", key, partial(_resume, cases, key))


async def _pause(cases: PauseCases, key: str, by: str) -> str:
    if await cases.pause(key, by=by):
        return f"⏸ 已暂停 {key} 的记忆：保留不删除，但不再注入、不再检索，自动流程不再写入"
    return f"{key} 的记忆本来就已暂停"


async def _resume(cases: PauseCases, key: str) -> str:
    return f"▶ 已恢复 {key} 的记忆" if await cases.resume(key) else f"{key} 的记忆没有暂停"
