"""``/memory <scope> clear [确认码]``: empty a scope after a confirmation and a backup."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from functools import partial

from amrita_memory_pg.commands.memory_command.base import LABELS, Scope, Services, Step
from amrita_memory_pg.maintenance.clear import clear_partition, plan_clear
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.tools.context import ToolContext


def clear_scope(
    services: Services, ctx: ToolContext, scope: Scope, key: str, token: str
) -> str | Step:
    """Without ``token``: how many would go and the code to confirm with; with the code
    (ten minutes, and only while the scope is unchanged): back up, then delete."""
    if scope == "group" and not ctx.is_group_admin:
        return "❌ 无权清空👥群共享记忆，仅管理员和群主可清空"
    return Step("clear", key, partial(_clear, services.store, scope, key, token))


async def _clear(store: Store, scope: Scope, key: str, token: str) -> str:
    label = LABELS[scope]
    plan = await plan_clear(store, key)
    if plan.count == 0:
        return f"{label} 暂无记忆，无需清空"
    if not token:
        return (
            f"⚠️ 将清空 {label} 的全部 {plan.count} 条记忆（含手动条目；备忘录不受影响）。"
            "清空前会先做一次完整备份。\n"
            f"确认请在 10 分钟内发送: /memory {scope} clear {plan.token}"
        )
    if not plan.accepts(token, datetime.now(UTC)):
        return (
            "确认码不匹配或已过期（记忆在此期间有变化也会失效），没有删除任何内容。"
            f"请重新发送 /memory {scope} clear 获取新的确认码"
        )
    result = await clear_partition(store, key)
    return (
        f"✅ 已清空 {label} 的 {result.deleted} 条记忆。清空前的备份: {result.backup.stem}"
        # the whole path: the bare name failed when copied ("备份文件不存在")
        f"（恢复: amrita-memory backup restore {shlex.quote(str(result.backup.jsonl_path.resolve()))}）"
    )
