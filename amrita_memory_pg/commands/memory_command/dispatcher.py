"""``/memory``: parse, route to the subcommand's handler, perform its step, reply.

A handler parses and checks its arguments (pure) and answers a sentence or a
:class:`~amrita_memory_pg.commands.memory_command.base.Step`; the step does the work, and
its failure becomes a reply in one place (:mod:`.failures`).
"""

from __future__ import annotations

from amrita_memory_pg.commands.memory_command.base import Answer, Reply, Services, Step, TextReply
from amrita_memory_pg.commands.memory_command.clear import clear_scope
from amrita_memory_pg.commands.memory_command.extract import extract
from amrita_memory_pg.commands.memory_command.failures import perform
from amrita_memory_pg.commands.memory_command.forget import erase_partition, forget_memory
from amrita_memory_pg.commands.memory_command.knowledge import knowledge
from amrita_memory_pg.commands.memory_command.l3 import dmn
from amrita_memory_pg.commands.memory_command.memo import show_memo
from amrita_memory_pg.commands.memory_command.memories import (
    add_memory,
    delete_memory,
    list_memories,
    search_memories,
)
from amrita_memory_pg.commands.memory_command.parsing import Parsed, parse_command, refusal
from amrita_memory_pg.commands.memory_command.pause import pause_or_resume
from amrita_memory_pg.commands.memory_command.profile import profile
from amrita_memory_pg.commands.memory_command.texts import ADMIN_ROLES, usage
from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.tools.context import ToolContext

#: roles that may run the ``dmn`` option (SUPERUSERS, or LitePerm's lp.admin); the
#: usage shows them its line
DMN_ADMIN_ROLES = ADMIN_ROLES


class MemoryCommand(Services):
    """``/memory`` over the memo and memory repositories; :meth:`run` never raises."""

    async def run(self, ctx: ToolContext, text: str) -> Reply:
        """Parse and execute one ``/memory …`` (``text`` is everything after the command).

        Every write it makes is recorded in the change history as this person's."""
        with acting(Actor("person", ctx.user_id)):
            answer = self.route(ctx, parse_command(text, in_group=ctx.in_group))
            if isinstance(answer, Step):
                answer = await perform(answer)
        return TextReply(answer) if isinstance(answer, str) else answer

    def route(self, ctx: ToolContext, parsed: Parsed) -> Answer | Step:
        """The handler's answer for ``parsed``: a reply, or the step to perform."""
        if parsed.kind == "memo":
            return show_memo(self, ctx)
        if parsed.kind == "profile":
            return profile(self, ctx, parsed.args)
        if parsed.kind == "dmn":
            if not ctx.roles & DMN_ADMIN_ROLES:
                return f"未知选项：{parsed.sub}"
            return dmn(self, ctx, parsed.args)
        if parsed.kind == "knowledge":
            return knowledge(self, ctx, parsed.action, parsed.args)
        if parsed.kind == "extract":
            return extract(self, ctx)
        if parsed.kind == "pause":
            if not ctx.is_superuser:
                return f"未知选项：{parsed.sub}"
            return pause_or_resume(self, ctx, parsed.sub, parsed.args)
        if parsed.kind == "erase":
            if not ctx.is_superuser:
                return f"未知选项：{parsed.sub}"
            return erase_partition(self, ctx, parsed.args)
        if parsed.kind == "usage":
            return usage(ctx)
        return self._scope_action(ctx, parsed)

    def _scope_action(self, ctx: ToolContext, parsed: Parsed) -> Answer | Step:
        """``/memory user|group|global <action> …`` (and the legacy ``list|search|delete``)."""
        scope, action, args = parsed.scope, parsed.action, parsed.args
        key = (
            ctx.group_key
            if scope == "group"
            else GLOBAL_KEY
            if scope == "global"
            else ctx.personal_key
        )
        if key is None:  # parse_command offers the group scope only in a group
            return usage(ctx)
        refused = refusal(action, args)
        if refused is not None:
            return refused
        if (
            scope == "global"
            and action in ("add", "delete", "clear", "forget")
            and not ctx.is_superuser
        ):
            return "❌ 🌐全局记忆对所有对话可见，只有超级用户可以添加、删除、忘记或清空"
        if action in ("", "list"):
            return list_memories(self, scope, key, args)
        if action == "search":
            return search_memories(self, ctx, scope, key, args)
        if action == "delete":
            return delete_memory(self, ctx, scope, key, args)
        if action == "forget":
            return forget_memory(self, ctx, scope, key, args)
        if action == "add":
            return add_memory(self, ctx, scope, key, args)
        if action == "clear":
            return clear_scope(self, ctx, scope, key, args)
        return usage(ctx)
