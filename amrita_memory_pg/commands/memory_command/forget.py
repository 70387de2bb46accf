"""``/memory <scope> forget <内容或ID> [确认码]`` and ``/memory erase <user|group|分区键>
[确认码]`` (superusers): the cascade is shown first, and runs only with the code it gave.

A forget removes the memory, what was derived from it alone, every trace of it (history,
recalls, the chat lines that said it), withholds what was derived from it and other facts
until the L3 loop writes it again, and records the forget (no content) so no backup
brings it back. An erasure does that for every row of a person or chat. The code is
derived from what would be removed and a 10-minute window (no state, any process)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from amrita_memory_pg.commands.memory_command.base import LABELS, Scope, Services, Step
from amrita_memory_pg.commands.memory_command.texts import USAGE_ERASE
from amrita_memory_pg.domain.keys import GLOBAL_KEY, check_partition_key, legacy_key_now
from amrita_memory_pg.domain.lineage import Cascade, describe_cascade
from amrita_memory_pg.domain.validation import InvalidInput
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.forgetting import ForgetCases

PREVIEW_CHARS = 40


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def forget_memory(
    services: Services, ctx: ToolContext, scope: Scope, key: str, args: str
) -> str | Step:
    """``forget <内容或ID> [确认码]``; a group's memories only for its admins (as delete)."""
    if not args:
        return f"请提供要忘记的内容或记忆 ID，例如: /memory {scope} forget 我对花生过敏"
    if scope == "group" and not ctx.is_group_admin:
        return "❌ 无权忘记👥群共享记忆，仅管理员和群主可以"
    by = f"command:{ctx.user_id}"
    cases = services.cases.forgetting
    return Step("forget", key, partial(_forget, cases, scope, key, args.strip(), by, ctx))


async def _forget(
    cases: ForgetCases, scope: Scope, key: str, args: str, by: str, ctx: ToolContext
) -> str:
    label = LABELS[scope]
    words = args.split()
    token = words[-1] if len(words) == 2 and len(words[-1]) == 8 else ""
    wanted = words[0] if token else args
    found = await cases.find(key, wanted)
    if not found:
        return f"{label} 没有找到与「{_cut(wanted)}」相关的记忆，没有忘记任何内容"
    exact = [r for r in found if r.id.startswith(wanted)]
    if len(exact) != 1 and (len(found) > 1 or found[0].id != wanted):
        lines = [f"{label} 找到这些记忆，请用 ID 指定要忘记哪一条（尚未忘记任何内容）:"]
        lines.extend(f"  [{r.id}] {_cut(r.content)}" for r in found)
        lines.append(f"例如: /memory {scope} forget {found[0].id}")
        return "\n".join(lines)
    record = exact[0] if exact else found[0]
    now = datetime.now(UTC)
    plan = await cases.forget_plan(key, record, now=now)
    if not token:
        return "\n".join(
            [
                f"⚠️ 将忘记 {label} 的这条记忆，并按规则处理由它得出的内容（不可恢复，备份也不会带回）:",
                *(f"  - {line}" for line in describe_cascade(plan.cascade)),
                f"确认请在 10 分钟内发送: /memory {scope} forget {record.id} {plan.code}",
            ]
        )
    if not plan.accepts(token, now):
        return (
            "确认码不匹配或已过期（记忆在此期间有变化也会失效），没有忘记任何内容。"
            f"请重新发送 /memory {scope} forget {record.id} 获取新的确认码"
        )
    done = await cases.forget(
        key, [record.id], requested_by=by, by_person=True, request_chat=ctx.session_key
    )
    return f"✅ 已忘记 {label} 的记忆 [{record.id}]\n" + _receipt(done)


def _receipt(done: Cascade) -> str:
    parts = [
        f"删除派生内容 {len(done.deleted)} 条",
        f"暂停并交给整理循环重写 {len(done.withheld)} 条",
        f"删除聊天记录 {len(done.chat_lines)} 条",
    ]
    counts = ", ".join(f"{table} {n}" for table, n in sorted(done.counts.items()))
    return "；".join(parts) + (f"\n各表删除/改动行数: {counts}" if counts else "")


def erase_partition(services: Services, ctx: ToolContext, args: str) -> str | Step:
    """``erase <user|group|分区键> [确认码]``: superusers only (the dispatcher checks)."""
    words = args.split()
    if not words or len(words) > 2:
        return "用法: " + USAGE_ERASE
    target, token = words[0], (words[1] if len(words) == 2 else "")
    key = {"user": ctx.personal_key, "group": ctx.group_key, "global": GLOBAL_KEY}.get(
        target, target
    )
    key = (key and legacy_key_now(key)) or key
    if not key:
        return "用法: " + USAGE_ERASE
    try:
        key = check_partition_key(key)
    except InvalidInput as exc:
        return f"{exc.reason}\n用法: {USAGE_ERASE}"
    by = f"command:{ctx.user_id}"
    return Step("erase", key, partial(_erase, services.cases.forgetting, key, token, by))


async def _erase(cases: ForgetCases, key: str, token: str, by: str) -> str:
    now = datetime.now(UTC)
    plan = await cases.erase_plan(key, now=now)
    counts = plan.cascade.counts
    if not counts:
        return f"{key} 没有任何可擦除的数据"
    if not token:
        listed = ", ".join(f"{table} {n}" for table, n in sorted(counts.items()))
        return (
            f"⚠️ 将彻底擦除 {key} 在每张表里的数据（{listed}），并记入擦除记录，"
            "以后恢复任何旧备份都会再次删除它们。不可恢复。\n"
            f"确认请在 10 分钟内发送: /memory erase {key} {plan.code}"
        )
    if not plan.accepts(token, now):
        return (
            "确认码不匹配或已过期（数据在此期间有变化也会失效），没有擦除任何内容。"
            f"请重新发送 /memory erase {key} 获取新的确认码"
        )
    done = await cases.erase(key, requested_by=by)
    receipt = ", ".join(f"{table} {n}" for table, n in sorted(done.counts.items()))
    return f"✅ 已擦除 {key}（已记入擦除记录）。各表删除行数: {receipt}"
