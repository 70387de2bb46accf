"""A model of the reference plugin's L3 cycle, for bench/bench_l3.py only (not shipped).

Written from the behaviour spec (reference-behaviour.md §8.4, §8.5, §8.8, §10.4, §11),
not from the reference's code: the system prompt (main template + knowledge guide +
profile guide, both guides always appended, W13), the user message, and the 21 tool
schemas with the names, arguments and defaults of §8.8, each described as that section
describes the tool. Replies are the reference's envelopes: 2-space indented JSON, except
get_context and iter_stop (compact), and get_context carries only the reference's keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAIN = """你是「记忆整理员」（Memory Curator），在后台安静地运行，维护用户 {target} 的长期记忆库。今天是 {date}（UTC）。

规则：
1. 始终通过工具操作，不要编造任何记忆。
2. 第一个动作必须是 subconscious_get_context，获取当前时间、上次整理的时间与总结、待处理的知识建议、记忆数量和空闲计划；没有调用它的本轮无效。
3. 然后列出或检索记忆（subconscious_list_memory、subconscious_read_memory、subconscious_duplicate_helper），找出重复、矛盾、过时和缺少标签的条目，并用 subconscious_write_memory / subconscious_update_memory / subconscious_delete_memory 修正。
4. 结束时必须调用 subconscious_iter_stop，用一两句话总结本轮做了什么。
5. 需要了解最近的互动时，使用 subconscious_read_sessions 和 subconscious_read_chat_context。
6. 通过 subconscious_get_profile / subconscious_update_profile 逐步建立用户画像。
7. 每轮只做少量、确定的修改。
8. 所有操作都针对目标用户，作用域固定为 user。
9. 数量只以 subconscious_get_context 的返回为准。

质量标准：
- 去重与合并：同一事实的多条记忆合并为一条，保留信息最全的版本。
- 矛盾：保留更新或更具体的一条。
- 标签保持一致。
- 重要程度校准：重要的事实用 high，琐碎的用 low。
- 过时信息：删除或更新。

输出：只输出工具调用；subconscious_iter_stop 的总结简要说明做了什么。"""

KNOWLEDGE = """## 全局知识库使用指南
- 何时写入：与具体用户无关、可以复用的通用知识（事实、方法、约定）。
- 何时读取：整理中遇到可能已有记录的主题时，先 subconscious_knowledge_search 或 subconscious_knowledge_list。
- 何时更新：已有条目过时或不完整时用 subconscious_knowledge_update，优先合并到已有条目，而不是新建许多零碎的小条目。
- 何时删除：条目错误或已完全过时。
- 读取长条目：total_lines 超过 100 行时，用 start_line / end_line 分段读取。
- 正文最多 10000 个字符，超出会被拒绝。
- 不要把任何个人隐私写入全局知识库。
- 有待处理的知识建议时，用 subconscious_read_suggestions 读取并决定是否采纳。"""

PROFILE = """## 用户画像维护指南（用户 {target}）
- 先读近期会话（subconscious_read_sessions），再读当前画像（subconscious_get_profile）。
- 增量更新：只追加或替换需要变化的行；不确定的内容不要写。
- 第一次建立画像时，使用追加方式。
- 画像包含：性格特点、稳定的偏好、背景信息、与机器人的关系、重要事件。
- 摘要不超过 200 字。
- 不写敏感信息。
- 区分一次性的话题和长期特质：只有反复出现的才算特质。"""

USER = (
    "请先调用 subconscious_get_context 了解当前环境，再检查用户 (ID: {target}) 的记忆库，"
    "执行必要的整理操作。完成后务必调用 subconscious_iter_stop。"
)

IMPORTANCE = {"type": ["string", "null"], "enum": ["low", "medium", "high", None]}


def _tool(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def _s(description: str, nullable: bool = False) -> dict[str, Any]:
    return {"type": ["string", "null"] if nullable else "string", "description": description}


def _i(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


SCHEMAS: list[dict[str, Any]] = [
    _tool(
        "subconscious_read_memory",
        "按语义检索目标用户的长期记忆，返回最相关的若干条（含标签、重要程度、创建时间和距离）。",
        {
            "query": _s("检索关键词"),
            "top_k": _i("返回条数，默认 5"),
            "importance": {**IMPORTANCE, "description": "只返回该重要程度的记忆（可选）"},
        },
        ["query"],
    ),
    _tool(
        "subconscious_write_memory",
        "为目标用户写入一条新的长期记忆（例如整理时合并出的新事实）。",
        {
            "content": _s("记忆内容，一条一个事实"),
            "tags": _s("标签，逗号分隔"),
            "importance": {
                "type": "string",
                "enum": ["low", "medium", "high"],
                "description": "重要程度",
            },
        },
        ["content", "tags", "importance"],
    ),
    _tool(
        "subconscious_update_memory",
        "修改目标用户的一条已有记忆；未变化的字段请省略，省略的字段保持原值。",
        {
            "id": _s("记忆 ID"),
            "content": _s("新内容（不变则省略）", nullable=True),
            "tags": _s("新标签（不变则省略）", nullable=True),
            "importance": {**IMPORTANCE, "description": "新的重要程度（不变则省略）"},
        },
        ["id"],
    ),
    _tool(
        "subconscious_delete_memory",
        "删除目标用户的一条记忆。",
        {"id": _s("记忆 ID")},
        ["id"],
    ),
    _tool(
        "subconscious_list_memory",
        "按存储顺序列出目标用户的前 limit 条记忆（ID、标签、重要程度和 80 字预览），并给出总数。",
        {"limit": _i("条数，默认 10")},
        [],
    ),
    _tool(
        "subconscious_iter_stop",
        "结束本轮整理并写下总结；总结会在下一轮的 subconscious_get_context 中显示。必须在本轮最后调用。",
        {"summary": _s("本轮做了什么（一两句话）")},
        ["summary"],
    ),
    _tool(
        "subconscious_send_to_user",
        "以机器人的口吻给目标用户发一条主动消息（问候、关心或分享）。每轮最多一次；需要启用 allow_send_to_user。",
        {"intent": _s("想对用户说这句话的意图"), "memory_context": _s("相关的记忆内容（可选）")},
        ["intent"],
    ),
    _tool(
        "subconscious_read_chat_context",
        "读取目标用户私聊会话中最近的聊天消息。",
        {"limit": _i("最近的消息条数，默认 10")},
        [],
    ),
    _tool(
        "subconscious_duplicate_helper",
        "分页查看目标用户的记忆，并按向量余弦相似度给出候选重复组，帮助找出并合并重复记忆。"
        "可按标签、重要程度过滤，按创建时间、重要程度或长度排序；把 next_cursor 原样传回以继续。",
        {
            "tag": _s("只看标签串完全等于它的记忆（可选）", nullable=True),
            "importance": {**IMPORTANCE, "description": "只看该重要程度（可选）"},
            "sort_by": {
                "type": "string",
                "enum": ["created_at", "importance", "length"],
                "description": "排序方式，默认 created_at",
            },
            "limit": _i("每页条数，默认 40，范围 1–200"),
            "cursor": _s("上一页返回的 next_cursor（可选）", nullable=True),
            "similarity_threshold": {
                "type": "number",
                "description": "候选重复组的余弦相似度阈值，默认 0.85",
            },
        },
        [],
    ),
    _tool(
        "subconscious_get_context",
        "获取当前环境：当前时间与星期、上次整理的时间与总结、待处理的知识建议、记忆数量与提示、空闲计划。"
        "每轮的第一个调用。",
        {},
        [],
    ),
    _tool(
        "subconscious_get_memory_stats",
        "目标用户记忆库的统计：总数、按重要程度和标签计数、最早与最新的创建时间、平均长度。",
        {},
        [],
    ),
    _tool(
        "subconscious_knowledge_list",
        "列出全局知识库的所有条目（ID、标题、摘要预览）。",
        {},
        [],
    ),
    _tool(
        "subconscious_knowledge_read",
        "读取一条知识的标题、摘要和正文；正文很长时用 start_line / end_line 按行分段读取。",
        {
            "kid": _s("知识 ID"),
            "start_line": {"type": ["integer", "null"], "description": "起始行（可选）"},
            "end_line": {"type": ["integer", "null"], "description": "结束行（可选）"},
        },
        ["kid"],
    ),
    _tool(
        "subconscious_knowledge_create",
        "新建一条全局知识（与具体用户无关、可复用的知识）。正文最多 10000 字符。",
        {"title": _s("标题"), "summary": _s("摘要（用于检索）"), "body": _s("正文")},
        ["title", "summary", "body"],
    ),
    _tool(
        "subconscious_knowledge_update",
        "更新一条全局知识的标题、摘要或正文（至少给出一项）。",
        {
            "kid": _s("知识 ID"),
            "title": _s("新标题（可选）", nullable=True),
            "summary": _s("新摘要（可选）", nullable=True),
            "body": _s("新正文（可选）", nullable=True),
        },
        ["kid"],
    ),
    _tool(
        "subconscious_knowledge_delete",
        "删除一条全局知识。",
        {"kid": _s("知识 ID")},
        ["kid"],
    ),
    _tool(
        "subconscious_knowledge_search",
        "按语义检索全局知识库，返回最相关的条目（ID、标题、摘要、距离）。",
        {"query": _s("检索关键词"), "top_k": _i("返回条数，默认 5")},
        ["query"],
    ),
    _tool(
        "subconscious_read_suggestions",
        "读取聊天中产生的待处理知识建议，并清空建议队列。",
        {},
        [],
    ),
    _tool(
        "subconscious_read_sessions",
        "读取目标用户最近 n 段会话的摘要，最新的在前。",
        {"n": _i("会话数，默认 5")},
        [],
    ),
    _tool(
        "subconscious_get_profile",
        "读取目标用户的画像：摘要和按行编号的正文，可按行窗口读取。",
        {
            "start_line": {"type": ["integer", "null"], "description": "起始行（可选）"},
            "end_line": {"type": ["integer", "null"], "description": "结束行（可选）"},
        },
        [],
    ),
    _tool(
        "subconscious_update_profile",
        "增量更新目标用户的画像：替换摘要，并追加新行或替换 [start_line, end_line) 范围的行。",
        {
            "summary": _s("新的画像摘要（不超过 200 字）"),
            "new_lines": _s("新增或替换的正文行"),
            "start_line": {"type": ["integer", "null"], "description": "替换起始行（可选）"},
            "end_line": {"type": ["integer", "null"], "description": "替换结束行（可选）"},
        },
        ["summary", "new_lines"],
    ),
]
assert len(SCHEMAS) == 21

#: get_context's keys in the reference (§8.8 tool 10); ours adds the pre-pass
CONTEXT_KEYS = (
    "status",
    "now",
    "timezone",
    "timezone_fallback",
    "weekday",
    "last_run_at",
    "minutes_since_last_run",
    "last_run_summary",
    "pending_knowledge_suggestions",
    "memory_total",
    "memory_low_importance",
    "memory_hint",
    "memory_warn_threshold",
    "idle_plan",
    "stale",
)
#: list_memory items in the reference: no source
LIST_KEYS = ("id", "tags", "importance", "content_preview")
#: duplicate_helper replies as the reference gives them (no candidates_only in it)
COMPACT = ("subconscious_get_context", "subconscious_iter_stop")


def system_prompt(target: str, date: str) -> str:
    """Main template + knowledge guide + profile guide (§8.5)."""
    return "\n\n".join(
        (MAIN.format(target=target, date=date), KNOWLEDGE, PROFILE.format(target=target))
    )


def reply(name: str, ours: str) -> str:
    """Our tool's reply in the reference's envelope for the same call."""
    try:
        value = json.loads(ours)
    except json.JSONDecodeError:
        return ours
    if not isinstance(value, Mapping):
        return ours
    payload = dict(value)
    if name == "subconscious_get_context":
        payload = {k: payload.get(k) for k in CONTEXT_KEYS}
    elif name == "subconscious_list_memory" and isinstance(payload.get("memories"), list):
        payload["memories"] = [
            {k: m.get(k) for k in LIST_KEYS} for m in payload["memories"] if isinstance(m, dict)
        ]
    if name in COMPACT:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(payload, ensure_ascii=False, indent=2)
