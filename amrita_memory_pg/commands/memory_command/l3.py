"""``/memory dmn [dry]``: the hidden L3 trigger (superusers and lp.admin; the dispatcher
checks). With a scheduler trigger it starts a background cycle; without one, it runs a
cycle for the configured target now and reports its numbers."""

from __future__ import annotations

import logging
from functools import partial

from amrita_memory_pg.commands.memory_command.base import (
    CycleRun,
    DmnTrigger,
    LoopModel,
    Services,
    Step,
)
from amrita_memory_pg.domain.keys import personal_key
from amrita_memory_pg.tools.context import ToolContext

log = logging.getLogger(__name__)


def dmn(services: Services, ctx: ToolContext, args: str) -> str | Step:
    sub = services.settings.subconscious
    if not sub.enabled:
        return "潜意识调度未启用：subconscious.enabled 为 false"
    if not sub.target_user_id:
        return "潜意识调度未启用：subconscious.target_user_id 为空"
    if services.dmn_trigger is None and services.cycle_run is not None:
        target = personal_key(ctx.platform, sub.target_user_id)
        dry_run = args.strip().lower() in ("dry", "dry-run")
        return Step(
            "cycle",
            target,
            partial(_run_cycle, services.cycle_run, target, dry_run, services.loop_model),
        )
    if services.dmn_trigger is None:
        return "潜意识调度未启动：本进程没有运行中的 L3 巩固循环（尚未接入或启动失败），检查日志"
    return Step(
        "dmn", "the L3 scheduler", partial(_trigger, services.dmn_trigger, services.loop_model)
    )


async def model_line(loop_model: LoopModel | None) -> list[str]:
    """「模型：…」: which model the loop uses (nothing when not known here)."""
    if loop_model is None:
        return []
    try:
        return [f"模型：{await loop_model()}"]
    except Exception:  # a host's look-up: the command still answers
        log.warning("naming the L3 model failed", exc_info=True)
        return []


async def _trigger(trigger: DmnTrigger, loop_model: LoopModel | None) -> str:
    await trigger()
    return "\n".join(["已触发，潜意识将在后台跑一轮", *await model_line(loop_model)])


async def _run_cycle(
    cycle_run: CycleRun, target: str, dry_run: bool, loop_model: LoopModel | None
) -> str:
    """One cycle now for the configured target, then its numbers (and the model named
    before the cycle: the one it was started on)."""
    model = await model_line(loop_model)
    s = await cycle_run(target, dry_run=dry_run, trigger="manual")
    head = "✅ 潜意识整理完成" if s.ok else f"❌ 潜意识整理失败：{s.error}"
    lines = [
        head + ("（演练：未写入任何内容）" if s.dry_run else ""),
        *model,
        f"轮次 {s.iterations}，工具调用 {s.tool_calls}，改动记忆 {s.memories_changed} 条",
        f"tokens：提示 {s.prompt_tokens} / 生成 {s.completion_tokens}",
    ]
    if s.summary:
        lines.append(f"总结：{s.summary}")
    return "\n".join(lines)
