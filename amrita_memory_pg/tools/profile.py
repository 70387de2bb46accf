"""User-profile tools: ``read_profile`` for the chat (§4.11), and the L3 loop's
``subconscious_get_profile`` / ``subconscious_update_profile`` (§8.8 items 20–21).

Arguments and replies follow the reference. Differences (its bugs and weaknesses):

- every user has a profile (their personal partition), not one file for one target;
  ``read_profile`` returns the speaker's own, in any chat kind, and asking for another
  user's (``user_id``) gets the refusal without a look at the database, so it tells
  nothing about whether that profile exists;
- read and update number lines the same way (B2), an update names both bounds or
  neither, a range outside the profile is refused instead of clamped, ``new_lines=""``
  over a range deletes it; every change is recorded with the loop's cycle id;
- the loop tools act on ``ctx.cycle.target_key``; a group target has no profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from amrita_memory_pg.domain.errors import ProfileRefused, ToolError
from amrita_memory_pg.domain.profile import ProfileActor, make_edit
from amrita_memory_pg.tools.args import Integer, Text, ToolArgs
from amrita_memory_pg.tools.context import CycleContext, ToolContext
from amrita_memory_pg.tools.memory import paused_read
from amrita_memory_pg.tools.registry import Tool, ToolRegistry, not_offered
from amrita_memory_pg.usecases.profiles import ProfileCases

#: the reference's refusal (§4.11), with the rule as it is here
READ_REFUSED = "无权限读取该画像（仅可读取当前发言人自己的画像）"
NOT_IN_CYCLE = "该工具只在离线巩固（L3）循环中可用：当前没有运行中的巩固周期"
UPDATED = "画像增量更新成功"

StartLine = Annotated[
    Integer | None, Field(description="起始行号（从 0 开始，包含）；省略则从第 0 行开始")
]
EndLine = Annotated[Integer | None, Field(description="结束行号（不包含）；省略则读到最后一行")]


class ReadProfileArgs(ToolArgs):
    start_line: StartLine = None
    end_line: EndLine = None
    user_id: Annotated[
        Text | None,
        Field(description="要读取谁的画像（可选）；只能是当前发言人自己，省略即为自己"),
    ] = None


# The loop's two tools are re-sent with every call of a cycle: short field texts (the
# tool description and the profile guide say the rest).
Line = Annotated[Integer | None, Field(description="行号，从 0 开始")]


class GetProfileArgs(ToolArgs):
    start_line: Line = None
    end_line: Annotated[Integer | None, Field(description="不含")] = None


class UpdateProfileArgs(ToolArgs):
    summary: Annotated[Text, Field(description="新摘要（不改则原样传回）")]
    new_lines: Annotated[Text, Field(description="正文行，换行分隔；空串为删除该区间")]
    start_line: Line = None
    end_line: Annotated[Integer | None, Field(description="不含；与 start_line 同给或同省")] = None


def _cycle(ctx: ToolContext) -> CycleContext:
    if ctx.cycle is None:
        raise ToolError(NOT_IN_CYCLE)
    return ctx.cycle


def register_profile_tools(registry: ToolRegistry, profiles: ProfileCases) -> None:
    """``read_profile`` (the chat's)."""

    async def read_profile(args: ReadProfileArgs, ctx: ToolContext) -> dict[str, Any]:
        asked = args.user_id.strip() if args.user_id is not None else ""
        if asked and asked != ctx.user_id:
            raise ToolError(READ_REFUSED)
        window = await profiles.read(ctx.personal_key, args.start_line, args.end_line)
        return window.reply()

    registry.register(
        Tool(
            name="read_profile",
            description=(
                "读取当前发言人自己的用户画像（由离线巩固循环整理的摘要与按行编号的正文）。"
                "start_line/end_line 可选，行号从 0 开始，范围不含 end_line。不能读取其他用户的画像。"
            ),
            args=ReadProfileArgs,
            handler=read_profile,
            failure_prefix="读取画像失败",
            on_paused=paused_read,
        )
    )


#: get_context's ``profile_hint`` for a target with memories newer than its profile, and
#: for one with no profile yet (then there is nothing to read: only the edit is offered)
PROFILE_NEWS = "画像上次更新后新增 {n} 条记忆"
NO_PROFILE_YET = "尚无画像；可从 {n} 条记忆提炼"


def profile_news(context: Mapping[str, Any]) -> bool:
    """Offer the profile's edit to a cycle only when get_context's ``profile_hint`` says
    the target (a personal partition) has memories newer than its profile (or none
    yet): otherwise there is nothing to distil, and the schema would be paid on every
    call."""
    return bool(context.get("profile_hint"))


def profile_to_read(context: Mapping[str, Any]) -> bool:
    """Offer ``subconscious_get_profile`` when there is news for a profile that exists: a
    target without one has nothing to read (its first lines are appended)."""
    hint = context.get("profile_hint")
    return bool(hint) and not str(hint).startswith(NO_PROFILE_YET.split("；")[0])


async def edit_profile(
    profiles: ProfileCases, cycle: CycleContext, args: UpdateProfileArgs, *, dry_run: bool
) -> dict[str, Any]:
    """``subconscious_update_profile``'s edit of the cycle's target (``dry_run``: checked
    against the stored profile, nothing written) and its reply; :class:`ToolError` with
    the reason when refused. The loop's batch checks with a dry run first, then writes."""
    try:
        edit = make_edit(args.summary, args.new_lines, args.start_line, args.end_line)
        result = await profiles.edit(
            cycle.target_key, edit, ProfileActor("loop", cycle_id=cycle.cycle_id), dry_run=dry_run
        )
    except ProfileRefused as exc:
        raise ToolError(str(exc)) from exc
    reply: dict[str, Any] = {
        "status": "success",
        "message": UPDATED,
        "operation": result.operation,
        "total_lines": result.profile.total_lines,
        "version": result.profile.version,
    }
    if dry_run:
        reply["message"] = f"{UPDATED}（演练模式：未写入）"
        reply["dry_run"] = True
    return reply


def register_profile_loop_tools(
    registry: ToolRegistry, profiles: ProfileCases, *, batched: bool = False
) -> None:
    """``subconscious_get_profile`` and ``subconscious_update_profile`` (the L3 loop's).
    ``batched``: the cycle edits through ``subconscious_batch_edit`` (its profile op), so
    update_profile is not offered (it still runs when called by name)."""

    async def get_profile(args: GetProfileArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        try:
            window = await profiles.read(cycle.target_key, args.start_line, args.end_line)
        except ProfileRefused as exc:
            raise ToolError(str(exc)) from exc
        return window.reply()

    async def update_profile(args: UpdateProfileArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = _cycle(ctx)
        return await edit_profile(profiles, cycle, args, dry_run=cycle.dry_run)

    registry.register(
        Tool(
            name="subconscious_get_profile",
            description="读画像（摘要与编号正文行）。",
            args=GetProfileArgs,
            handler=get_profile,
            failure_prefix="读取画像失败",
            offer=profile_to_read,
        )
    )
    registry.register(
        Tool(
            name="subconscious_update_profile",
            description="更新画像：无行号时追加 new_lines，有则替换该区间。",
            args=UpdateProfileArgs,
            handler=update_profile,
            failure_prefix="更新画像失败",
            offer=not_offered if batched else profile_news,
        )
    )
