"""The usage texts of ``/memory`` (the reference's wording, extended)."""

from __future__ import annotations

from amrita_memory_pg.tools.context import ToolContext

USAGE_USER = (
    "/memory user list [页码] [-c 类别] [-i 最低重要度] — 列出个人记忆",
    "/memory user search [-c 类别] <关键词> — 搜索个人记忆",
    "/memory user delete <ID>    — 删除个人记忆（由它得出的内容一并处理）",
    "/memory user forget <内容或ID> — 忘记一件事：连同由它得出的画像/知识/备忘录、说过它的聊天记录和历史（先确认）",
    "/memory user add [-c 类别] [-i 1-10] <内容> — 添加个人记忆（手动条目，不会被自动流程改动）",
    "/memory user clear          — 清空个人记忆（先确认，再备份）",
)
USAGE_GROUP = (
    "/memory group list [页码] [-c 类别] — 列出群共享记忆",
    "/memory group search [-c 类别] <关键词> — 搜索群共享记忆",
    "/memory group delete <ID>   — 删除群共享记忆 (仅管理/群主)",
    "/memory group forget <内容或ID> — 忘记群里的一件事及由它得出的内容 (仅管理/群主；先确认)",
    "/memory group add [-c 类别] [-i 1-10] <内容> — 添加群共享记忆（群成员均可）",
    "/memory group clear         — 清空群共享记忆 (仅管理/群主；先确认，再备份)",
)
USAGE_GLOBAL = "/memory global list|search — 🌐全局记忆（add/delete/clear 仅超级用户）"
USAGE_EXTRACT = "/memory extract             — 立即从本会话自动提取记忆（群内仅管理）"
USAGE_CATEGORIES = "类别: preference(偏好) / rule(规则) / event(事件) / knowledge(知识)"
USAGE_MODES = (
    "检索方式: … search mode=hybrid|vector|keyword <关键词>（默认见 [retrieval] default_mode）"
)
#: superuser options: in the usage a superuser sees (the help used to omit them)
USAGE_PAUSE = "/memory pause|resume [user|group|global|分区键] — 暂停/恢复某作用域的记忆（仅超级用户；默认本会话）"
USAGE_ERASE = "/memory erase <user|group|分区键> — 彻底擦除一个人/群在每张表里的数据，旧备份也带不回（仅超级用户；先确认）"
USAGE_MEMO = "/memory memo                — 查看当前作用域的备忘录（只读）"
USAGE_PROFILE = "/memory profile [history]   — 查看自己的用户画像 / 修改历史"
USAGE_PROFILE_ADMIN = (
    "/memory profile show|history <用户> / revert [用户] <版本> — 他人画像、恢复版本（仅超级用户）"
)
USAGE_DMN = "/memory dmn [dry]           — 立即跑一轮潜意识整理（L3；仅超级用户 / lp.admin）"
#: the old short forms the parser still accepts (parsing.py), so that a user who learnt
#: them (the reference's help listed them) finds them here
USAGE_SHORT = (
    "简写: /memory list|search|delete … = /memory user list|search|delete …；"
    "/记忆 = /memory；memo=备忘录，profile=画像，knowledge=知识库，extract=提取，"
    "pause=暂停，resume=恢复；选项 -c/--category/类别=，-i/--importance/重要度="
)
USAGE_SHORT_ADMIN = "简写（仅超级用户）: /memory run 或 /memory 触发 = /memory dmn"
#: roles that see the superuser lines (the dispatcher lets them run ``dmn``)
ADMIN_ROLES = frozenset({"superuser", "lp.admin"})
PROFILE_USAGE = (
    "用法:\n"
    "/memory profile                    — 查看自己的用户画像\n"
    "/memory profile history            — 查看自己画像的修改历史\n"
    "/memory profile show <用户>         — 查看他人的画像（仅超级用户）\n"
    "/memory profile history <用户>      — 查看他人画像的修改历史（仅超级用户）\n"
    "/memory profile revert [用户] <版本> — 把画像恢复到某个版本（仅超级用户）"
)
USAGE_KNOWLEDGE = (
    "/memory knowledge list                 — 列出知识库（需知识库权限）",
    "/memory knowledge read <kid> [起始行] [结束行] — 阅读条目",
    "/memory knowledge search [mode=hybrid|vector|keyword] <关键词> — 检索知识库",
    "/memory knowledge suggest <标题> | <摘要> | <正文> [| <理由>] — 提交知识建议（任何人）",
    "/memory knowledge grant|revoke <用户ID> — 授予/撤销 memory.knowledge（仅超级用户）",
)


def usage(ctx: ToolContext) -> str:
    """The usage hint: the user scope, the group scope in a group chat, the memo, the
    profile and the knowledge base; a superuser also sees what only they may run."""
    lines = ["用法:", *USAGE_USER]
    if ctx.in_group:
        lines.extend(USAGE_GROUP)
    lines.extend((USAGE_GLOBAL, USAGE_EXTRACT, USAGE_MEMO, USAGE_CATEGORIES, USAGE_MODES))
    lines.append(USAGE_PROFILE)
    lines.extend(USAGE_KNOWLEDGE)
    lines.append(USAGE_SHORT)
    if ctx.roles & ADMIN_ROLES:
        lines.extend((USAGE_PROFILE_ADMIN, USAGE_PAUSE, USAGE_ERASE, USAGE_DMN, USAGE_SHORT_ADMIN))
    return "\n".join(lines)
