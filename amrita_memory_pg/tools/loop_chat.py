"""The L3 loop's view of the chat and its one message to the user (reference §8.8
tools 8–11): recent lines, session summaries, ``subconscious_send_to_user``.

``subconscious_send_to_user`` works only for a personal target, at most once per cycle;
the message is queued in ``pending_message`` and delivered once, in the target's private
chat (W14); its generation call is accounted (W16). ``subconscious_read_sessions`` splits
the chat log into sessions at 30-minute gaps; summaries are LLM calls (accounted, cached
per process). The registry's gate refuses them all while the target is paused.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import Field

from amrita_memory_pg.domain.consolidation import CycleContext, is_private_key
from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.domain.lineage import Candidate, line_ref
from amrita_memory_pg.domain.records import ChatLine
from amrita_memory_pg.services.consolidation import LoopDeps
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.args import Clamp, Integer, Text, ToolArgs
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.loop_common import loop_cycle
from amrita_memory_pg.tools.memory import iso
from amrita_memory_pg.tools.profile import profile_news
from amrita_memory_pg.tools.registry import declare

SESSION_GAP = timedelta(minutes=30)
SESSION_LINES = 500
SEND_USER = "请说一句自然的问候/关心/分享的话。意图：{intent}。"
SUMMARY_SYSTEM = (
    "用一两句话概括下面这段聊天的主要内容（谁、聊了什么、有无值得长期记住的事实），不超过 80 字。"
)


class SendArgs(ToolArgs):
    intent: Annotated[Text, Field(description="意图", max_length=500)]
    memory_context: Annotated[Text, Field(description="相关记忆", max_length=2000)] = ""


class ChatContextArgs(ToolArgs):
    limit: Annotated[Integer, Clamp(1, 100)] = 10


class SessionsArgs(ToolArgs):
    n: Annotated[Integer, Clamp(1, 20)] = 5


class LoopChat:
    """send_to_user, read_chat_context and read_sessions for one loop registry."""

    def __init__(self, loop: LoopDeps, settings: Settings, sent: set[int]) -> None:
        self.loop = loop
        self.sub = settings.subconscious
        #: cycles that already queued their one proactive message (shared with LoopSurvey)
        self.sent = sent

    @declare(
        "subconscious_send_to_user",
        "给用户发一条主动消息（每轮最多一次），在其下次私聊时送达。",
        "生成主动消息失败",
        offer=lambda c: bool(c.get("can_send_to_user")),
    )
    async def send_to_user(self, args: SendArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        if not self.sub.allow_send_to_user:
            raise ToolError("allow_send_to_user 未启用")
        if not is_private_key(cycle.target_key):
            raise ToolError(
                "主动消息只能发给个人（私聊）目标；群目标不能使用 subconscious_send_to_user"
            )
        intent = args.intent.strip()
        if not intent:
            raise ToolError("intent 不能为空")
        if cycle.cycle_id in self.sent:
            raise ToolError("本轮已经发过一条主动消息了，每轮最多一条")
        llm = self.loop.llm
        if llm is None:
            raise ToolError("没有配置模型，无法生成主动消息")
        now = self.loop.clock()
        user = SEND_USER.format(intent=intent)
        if args.memory_context.strip():
            user += f" 相关记忆：{args.memory_context.strip()}"
        content = await llm.text(
            cycle, "send", self.loop.prompts.send(intent, args.memory_context, now), user
        )
        if not content:
            raise ToolError("模型没有生成任何内容，未发送")
        self.sent.add(cycle.cycle_id)
        reply: dict[str, Any] = {"status": "queued", "content": content, "timestamp": iso(now)}
        if cycle.dry_run:
            reply["dry_run"] = True
            return reply
        await self.loop.repo.queue_message(cycle.target_key, cycle.cycle_id, content, now=now)
        reply["message"] = "已放入待发送队列：用户下次在私聊里发消息时送达（只送达一次）"
        return reply

    async def _lines(self, cycle: CycleContext, limit: int) -> list[ChatLine]:
        """The target's recent lines; the cycle remembers them as shown (what it writes
        next may have been made from them, domain/lineage.py)."""
        lines = await self.loop.activity.recent(cycle.target_key, limit)
        known = {c.ref for c in cycle.shown}
        for line in lines:
            ref = line_ref(line.session_key, line.id)
            if ref not in known:
                cycle.shown.append(Candidate(ref, line.text))
        return lines

    @declare(
        "subconscious_read_chat_context",
        "最近的聊天消息。",
        "读取聊天记录失败",
        # the exact recent lines matter for a proactive message; else read_sessions
        offer=lambda c: bool(c.get("can_send_to_user")),
    )
    async def read_chat_context(self, args: ChatContextArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        lines = await self._lines(cycle, args.limit)
        # The reference's shape: no status key.
        return {
            "total_messages": len(lines),
            "recent": [
                {
                    "role": "assistant" if line.role == "bot" else "user",
                    "user_id": line.user_id,
                    "content": line.text,
                    "time": iso(line.created_at),
                }
                for line in lines
            ],
        }

    async def _summary(self, cycle: CycleContext, session: list[ChatLine]) -> str:
        stamp = session[0].created_at.strftime("%Y-%m-%d %H:%M")
        # every line's id: a session that lost a line (a forget) is summarised again
        key: tuple[str | int, ...] = (cycle.target_key, *(line.id for line in session))
        cached = self.loop.summaries.get(key)
        if cached is not None:
            return cached
        llm = self.loop.llm
        if llm is None:
            return f"[{stamp}] 无法生成摘要"
        text = "\n".join(
            f"{'机器人' if line.role == 'bot' else '用户'}: {line.text}" for line in session
        )
        try:
            abstract = await llm.text(cycle, "summary", SUMMARY_SYSTEM, text[:8000])
        except Exception:
            return f"[{stamp}] 无法生成摘要"
        summary = f"[{stamp}] {abstract}" if abstract else f"[{stamp}] 无法生成摘要"
        if len(self.loop.summaries) >= 128:
            self.loop.summaries.pop(next(iter(self.loop.summaries)))
        self.loop.summaries[key] = summary
        return summary

    @declare(
        "subconscious_read_sessions",
        "最近 n 段会话的摘要。",
        "读取会话失败",
        # what a profile is distilled from (the profile guide names it); the merges and
        # deletions of a cycle are decided on the pre-pass (still runs when called)
        offer=profile_news,
    )
    async def read_sessions(self, args: SessionsArgs, ctx: ToolContext) -> dict[str, Any]:
        cycle = loop_cycle(ctx)
        try:
            lines = await self._lines(cycle, SESSION_LINES)
        except Exception:
            return {"status": "success", "sessions": [], "total": 0}
        sessions: list[list[ChatLine]] = []
        for line in lines:
            if sessions and line.created_at - sessions[-1][-1].created_at <= SESSION_GAP:
                sessions[-1].append(line)
            else:
                sessions.append([line])
        newest = list(reversed(sessions))[: args.n]
        out = [
            {
                "id": session[0].id,
                "created_at": session[0].created_at.timestamp(),
                "summary": await self._summary(cycle, session),
                "message_count": len(session),
            }
            for session in newest
        ]
        return {"status": "success", "sessions": out, "total": len(out)}
