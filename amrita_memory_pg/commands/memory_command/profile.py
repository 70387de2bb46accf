"""``/memory profile [show|history] [用户]`` and ``revert [用户] <版本>``.

The rules of ``read_profile``: one's own profile, in any chat; another user's only for
superusers, refused before anything is looked up (no existence leak). Only superusers
revert, and a revert is recorded as a change by ``chat`` (their id).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

from amrita_memory_pg.commands.memory_command.base import Answer, MemoReply, Services, Step
from amrita_memory_pg.commands.memory_command.texts import PROFILE_USAGE
from amrita_memory_pg.domain.keys import user_key
from amrita_memory_pg.domain.profile import ProfileActor, render_numbered
from amrita_memory_pg.domain.text import pack_chunks
from amrita_memory_pg.domain.validation import (
    MAX_ID_CHARS,
    InvalidInput,
    check_text,
    parse_count,
    plain,
)
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.profiles import ProfileCases

#: how many changes ``/memory profile history`` lists
PROFILE_HISTORY_LINES = 10


@dataclass(frozen=True, slots=True)
class ProfileRequest:
    """A checked ``/memory profile …``: whose profile (``own``: the speaker's)."""

    action: Literal["show", "history", "revert"]
    key: str
    own: bool
    by: str
    version: int | None = None


def parse_profile(ctx: ToolContext, args: str) -> ProfileRequest | str:
    """The request, or the sentence refusing it (usage, permission, a bad version)."""
    try:
        check_text(args, max_chars=2 * MAX_ID_CHARS)
    except InvalidInput as exc:
        return f"参数{exc.reason}"
    words = args.split()
    action = words[0] if words else "show"
    rest = words[1:]
    version: int | None = None
    if action not in ("show", "history", "revert") or len(rest) > 2:
        return PROFILE_USAGE
    if action == "revert":
        if not ctx.is_superuser:
            return "❌ 仅超级用户可以回滚画像"
        if not rest:
            return PROFILE_USAGE
        # a version lives in an int column and the lookup asks for version + 1
        version = parse_count(rest[-1], lo=0, hi=2**31 - 1)
        if version is None or version >= 2**31 - 1:
            return f"版本号应为非负整数（0 到 {2**31 - 2}），收到 {plain(rest[-1])}"
        target = rest[0] if len(rest) == 2 else None
    else:
        if len(rest) > 1:
            return PROFILE_USAGE
        target = rest[0] if rest else None
    key = ctx.personal_key
    if target is not None:
        named = user_key(target, ctx.platform)
        if named != key and not ctx.is_superuser:
            return "❌ 只能查看自己的画像（超级用户可查看他人的画像）"
        if named is None:
            return f"{target} 不是用户：请给出 QQ 号或个人分区键（群没有画像）"
        key = named
    kind: Literal["show", "history", "revert"] = (
        "revert" if action == "revert" else "history" if action == "history" else "show"
    )
    return ProfileRequest(kind, key, key == ctx.personal_key, ctx.user_id, version)


def profile(services: Services, ctx: ToolContext, args: str) -> str | Step:
    cases = services.cases.profiles
    request = parse_profile(ctx, args)
    if isinstance(request, str):
        return request
    run = {"show": _show, "history": _history, "revert": _revert}[request.action]
    return Step("profile", request.key, partial(run, cases, request))


async def _show(profiles: ProfileCases, request: ProfileRequest) -> Answer:
    current = await profiles.get(request.key)
    whose = "你" if request.own else request.key
    if current.version == 0:
        return f"{whose}还没有用户画像"
    text = f"👤 {whose}的用户画像（v{current.version}，{current.total_lines} 行）\n摘要: {current.summary}"
    if current.lines:
        text += "\n" + render_numbered(current.lines)
    return MemoReply(title="用户画像", chunks=tuple(pack_chunks(text)))


async def _history(profiles: ProfileCases, request: ProfileRequest) -> Answer:
    changes = await profiles.history(request.key, PROFILE_HISTORY_LINES)
    whose = "你" if request.own else request.key
    if not changes:
        return f"{whose}的画像没有修改记录"
    lines = [f"📜 {whose}的画像修改历史（最近 {len(changes)} 次）:"]
    lines.extend(change.line() for change in changes)
    return "\n".join(lines)


async def _revert(profiles: ProfileCases, request: ProfileRequest) -> Answer:
    assert request.version is not None  # parse_profile sets it for a revert
    version = request.version
    result = await profiles.revert(request.key, version, ProfileActor("chat", who=request.by))
    if not result.changed:
        return f"画像已经是 v{version} 的内容，未修改"
    return (
        f"✅ 已把 {request.key} 的画像恢复到 v{version} 的内容（新版本 v{result.profile.version}）"
    )
