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
from pathlib import Path
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


def _tool(row: Mapping[str, Any]) -> dict[str, Any]:
    """One reference schema row (``reference_l3_tools.json``) in function-calling form."""
    parameters = {"type": "object", "properties": row["properties"], "required": row["required"]}
    return {
        "type": "function",
        "function": {
            "name": row["name"],
            "description": row["description"],
            "parameters": parameters,
        },
    }


#: the 21 schemas are data (names, descriptions, arguments of §8.8), kept beside this file
SCHEMAS: list[dict[str, Any]] = [
    _tool(row)
    for row in json.loads(Path(__file__).with_name("reference_l3_tools.json").read_text("utf-8"))
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
