"""``/memory extract``: run the automatic extraction of this chat now (group: admins)."""

from __future__ import annotations

from functools import partial

from amrita_memory_pg.commands.memory_command.base import Services, Step
from amrita_memory_pg.services.extraction import Extractor
from amrita_memory_pg.tools.context import ToolContext


def extract(services: Services, ctx: ToolContext) -> str | Step:
    if ctx.in_group and not ctx.is_group_admin:
        return "❌ 无权在群内触发记忆提取，仅管理员和群主可以"
    extractor = services.extractor
    if extractor.model is None:
        return "自动记忆提取未启用：需要 [extraction] enabled = true 并配置模型（或 LLM_BASE_URL / LLM_MODEL）"
    return Step("extract", ctx.session_key, partial(_extract, extractor, ctx.session_key))


async def _extract(extractor: Extractor, session_key: str) -> str:
    outcome = await extractor.extract(session_key, trigger="command")
    if outcome.status == "ok":
        return (
            f"✅ 已提取 {outcome.entries} 条自动记忆（替换了之前的 {outcome.replaced} 条；"
            f"手动条目不受影响；用量 {outcome.usage.total_tokens} tokens）"
        )
    if outcome.status == "empty":
        return "自上次提取以来本会话没有新消息，无需提取"
    return f"记忆提取未完成（{outcome.status}）: {outcome.reason}。原有自动记忆未改动"
