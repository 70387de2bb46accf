"""A cascade eval in the style of MEME's "cascade" and "absence" questions: a fact changes or
is forgotten; how often does the product still answer from what was derived from it?

    .venv/bin/python bench/eval_cascade.py                     # this checkout
    .venv/bin/python bench/eval_cascade.py --baseline 0.14.1   # and a release (the "before"),
                                                               # one table

A baseline is a version of ``bench/releases.toml`` (or a git revision, for development):
its tree is exported with ``git archive`` under /tmp (kept for the next run) and imported
by this script in a child process, so the same scenarios run on its code.

Each scenario is one user of a fresh embedded PostgreSQL. In the chat the user says a fact
F ("我对花生过敏") and an unrelated one G ("周末常去西湖"); extraction turns the lines
into memories, the chat model writes F again in its own words, and one L3 cycle merges the
two, writes a profile line from F and a summary from F and G, distils a knowledge entry
from F and rewrites the memo with a sentence of F — every derivation path, through the
product's real code, the models scripted over real HTTP (``testing_llm.ScriptedLLM``).
Then half the users forget F (the chat model calls ``forget_memory``, or, where the code
has no such tool, ``delete_memory``: what the user gets there) and half change it
(``update_memory``: 花生 → 芒果). Four questions per user are asked at two moments — right
after the event, and after the next L3 cycle (whose scripted model does what each
re-derivation task it is given asks: it removes the forgotten text from the withheld row,
or puts the new value in place of the old) — through the four paths the chat model reads:
the per-turn block (memo and profile summary, injected), ``read_profile``,
``read_memory`` and ``knowledge_search``. An answer is *stale* when what the product hands
the model for it holds the old value. The chat model itself is not run: what it is given
is what it can answer from, so this measures the product, not a model.

Also counted for forgotten facts: the tables that still hold the old value anywhere
(history, access log, chat log, audit... "absence" beyond what is answered), and for
changed facts whether the new value reached the derived rows (the cost of withholding).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: (allergen, its replacement, a place): distinct words, so no user's answer holds another's
FACTS = [
    ("花生", "芒果", "西湖"),
    ("虾", "牛奶", "灵隐寺"),
    ("芝麻", "菠萝", "千岛湖"),
    ("猕猴桃", "鸡蛋", "西溪湿地"),
    ("螃蟹", "桃子", "龙井村"),
    ("腰果", "草莓", "良渚"),
    ("榴莲", "海带", "乌镇"),
    ("扇贝", "荔枝", "莫干山"),
    ("杏仁", "黄豆", "富春江"),
    ("蛤蜊", "樱桃", "南浔"),
    ("核桃", "番茄", "安吉"),
    ("鱿鱼", "香蕉", "桐庐"),
]
PATHS = ("block", "profile", "memory", "knowledge")


@dataclass
class Outcome:
    """One user's answers: path → stale at t0 (right after) and t1 (after the next cycle)."""

    event: str
    stale_t0: dict[str, bool]
    stale_t1: dict[str, bool]
    fresh_t0: dict[str, bool]
    fresh_t1: dict[str, bool]
    tables_t1: list[str]


def _responder_class() -> Any:
    from amrita_memory_pg.testing_llm import ScriptedLLM

    class Responder(ScriptedLLM):
        """A ScriptedLLM whose next answer may also be computed from the request."""

        def __init__(self) -> None:
            super().__init__()
            self.decide: Any = None

        def _next(self, body: dict[str, Any], headers: dict[str, str], *raw: Any) -> Any:
            # ``raw``: the request's bytes, which newer ScriptedLLMs also take (the same
            # script runs on a release whose stub did not)
            scripted = bool(self.script)
            step = super()._next(body, headers, *raw)  # records the request either way
            if scripted or self.decide is None:
                return step
            return self.decide(body)

    return Responder


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        ],
    }


def rederive_content(item: str) -> tuple[int, str]:
    """What a model that does what the task asks writes for one get_context task line
    (``id|kind|held|rule|sources``): the held text without the forgotten clause, or with
    the new value in place of the old."""
    parts = item.split("|")
    task_id, held, rule = int(parts[0]), parts[2], parts[3]
    changed = re.findall(r"「([^」]*)」已改为「([^」]*)」", rule)
    gone = re.findall(r"去掉「([^」]*)」", rule)
    if changed:
        for was, now in changed:
            held = held.replace(was, now)
            old_value = re.search(r"对(.+?)过敏", was)
            new_value = re.search(r"对(.+?)过敏", now)
            if old_value and new_value:
                held = held.replace(old_value.group(1), new_value.group(1))
        return task_id, held
    values = [m.group(1) for g in gone if (m := re.search(r"对(.+?)过敏", g))]
    clauses = [c for c in re.split(r"(?<=[；，。,;])", held) if c]
    kept = [c for c in clauses if not any(v in c for v in values)]
    return task_id, "".join(kept).strip("；，。,; ")


async def _scenario(mem: Any, llm: Any, index: int, event: str) -> Outcome:
    from amrita_memory_pg.tools.context import ToolContext

    allergen, replacement, place = FACTS[index % len(FACTS)]
    user = str(20001 + index)
    key = f"QQPlatform_Private_{user}"
    ctx = ToolContext(platform="qq", user_id=user)
    reader = ToolContext(platform="qq", user_id=user, roles=frozenset({"superuser"}))
    fact, companion = f"对{allergen}过敏", f"周末常去{place}"
    llm.decide = None

    async def tool(name: str, args: dict[str, Any], who: ToolContext = ctx) -> Any:
        return json.loads(await mem.call_tool(name, args, who))

    for text in (f"我{fact}，别给我推荐含{allergen}的东西", f"我{companion}散步"):
        await mem.activity.record_user_message(
            session_key=key, user_key=key, user_id=user, group_id=None, text=text
        )
    llm.say(
        json.dumps(
            {
                "memories": [
                    {"category": "preference", "content": f"用户{fact}", "importance": 8},
                    {"category": "event", "content": f"用户{companion}", "importance": 5},
                ]
            },
            ensure_ascii=False,
        )
    )
    await mem.extractor.extract(key, trigger="cli")
    rows = await mem.pool.fetch(
        "SELECT id, content FROM amrita_memory.memory WHERE partition_key = $1", key
    )
    extracted = {r["content"]: r["id"] for r in rows}
    merged = f"用户{fact}，吃了会不舒服"
    written = await tool(
        "write_memory",
        {"content": merged, "tags": "健康", "importance": "high", "scope": "user"},
    )
    keep = written.get("memory_id") or written["id"]
    llm.call(
        "subconscious_merge_memories",
        {"keep_id": keep, "merge_ids": extracted[f"用户{fact}"], "content": merged},
    )
    llm.call(
        "subconscious_update_profile",
        {"summary": f"{companion}；{fact}", "new_lines": f"{fact}\n{companion}"},
    )
    llm.call(
        "subconscious_knowledge_create",
        {
            "title": f"{allergen}过敏",
            "summary": f"有用户{fact}：聚餐点菜避开{allergen}",
            "body": f"聚餐点菜避开{allergen}",
        },
    )
    llm.call("subconscious_rewrite_memo", {"content": f"用户{companion}。用户{fact}。"})
    llm.call("subconscious_iter_stop", {"summary": "整理"})
    first = await mem.run_cycle(key)
    assert first.ok, first.error

    async def answers() -> dict[str, str]:
        # the questions name no allergen: a query is logged, and must not be the trace
        block = await mem.memory_block(ctx, "我对什么过敏")
        profile = await tool("read_profile", {})
        found = await tool("read_memory", {"query": "过敏", "scope": "user"})
        known = await tool("knowledge_search", {"query": "过敏 聚餐"}, reader)
        return {
            "block": block,
            "profile": json.dumps(profile, ensure_ascii=False),
            "memory": json.dumps(found.get("documents"), ensure_ascii=False),
            "knowledge": json.dumps(
                [
                    i
                    for i in known.get("items") or []
                    if allergen in json.dumps(i, ensure_ascii=False)
                    or replacement in json.dumps(i, ensure_ascii=False)
                ],
                ensure_ascii=False,
            ),
        }

    # -- the event
    if event == "forget":
        if "forget_memory" in mem.tools.names():
            await tool("forget_memory", {"query": fact, "scope": "user"})
            await tool("forget_memory", {"id": keep, "scope": "user"})
        else:
            await tool("delete_memory", {"id": keep, "scope": "user"})
    else:
        await tool(
            "update_memory",
            {"id": keep, "content": f"用户对{replacement}过敏，吃了会不舒服", "scope": "user"},
        )
    t0 = await answers()

    # -- the next cycle: the scripted model does what each task it is given asks
    def decide(body: dict[str, Any]) -> dict[str, Any]:
        replies = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        done = any(
            c["function"]["name"] == "subconscious_rederive"
            for m in body["messages"]
            for c in m.get("tool_calls") or ()
        )
        context = replies[0] if replies else {}
        tasks = context.get("rederive") or []
        if not done and tasks:
            steps = []
            for item in tasks:
                task_id, content = rederive_content(item)
                args: dict[str, Any] = {"task_id": task_id, "content": content}
                if item.split("|")[1] == "知识" and "：" in content:
                    args["title"], _, args["content"] = content.partition("：")
                steps.append(("subconscious_rederive", args))
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_r{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(a, ensure_ascii=False)},
                    }
                    for n, (name, a) in enumerate(steps)
                ],
            }
        return _call("subconscious_iter_stop", {"summary": "完成"})

    llm.decide = decide
    second = await mem.run_cycle(key)
    assert second.ok, second.error
    llm.decide = None
    t1 = await answers()

    tables: list[str] = []
    for row in await mem.pool.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'amrita_memory' ORDER BY 1"
    ):
        table = row["tablename"]
        hit = await mem.pool.fetchval(
            f"SELECT count(*) FROM amrita_memory.{table} t WHERE t::text LIKE $1",
            f"%{allergen}%",
        )
        if hit:
            tables.append(table)
    return Outcome(
        event=event,
        stale_t0={p: allergen in t0[p] for p in PATHS},
        stale_t1={p: allergen in t1[p] for p in PATHS},
        fresh_t0={p: replacement in t0[p] for p in PATHS},
        fresh_t1={p: replacement in t1[p] for p in PATHS},
        tables_t1=tables,
    )


async def run(users: int) -> dict[str, Any]:
    from amrita_memory_pg.bootstrap import open_memory
    from amrita_memory_pg.settings import load_settings

    root = Path(tempfile.mkdtemp(prefix="amrita-cascade-"))
    os.chmod(root, 0o755)
    outcomes: list[Outcome] = []
    llm = _responder_class()()
    llm.usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    llm.start()
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={
            "data_dir": str(root / "data"),
            "embedding.protocol": "hash",
            "subconscious.enabled": True,
            "subconscious.targets": [f"QQPlatform_Private_{20001 + i}" for i in range(users)],
            "subconscious.prompt_dir": str(root / "prompts"),
            "extraction.enabled": True,
            "profile.inject_summary": True,
            "llm.base_url": llm.base_url,
            "llm.model": "stub",
            "llm.timeout_seconds": 10.0,
        },
    )
    try:
        async with open_memory(settings, startup=False) as mem:
            for index in range(users):
                event = "forget" if index % 2 == 0 else "change"
                outcomes.append(await _scenario(mem, llm, index, event))
    finally:
        llm.stop()
        shutil.rmtree(root, ignore_errors=True)
    summary: dict[str, Any] = {}
    for event in ("forget", "change"):
        mine = [o for o in outcomes if o.event == event]
        questions = len(mine) * len(PATHS)
        summary[event] = {
            "users": len(mine),
            "questions": questions,
            "stale_t0": sum(sum(o.stale_t0.values()) for o in mine),
            "stale_t1": sum(sum(o.stale_t1.values()) for o in mine),
            "fresh_t0": sum(sum(o.fresh_t0.values()) for o in mine),
            "fresh_t1": sum(sum(o.fresh_t1.values()) for o in mine),
            "by_path_t1": {p: sum(o.stale_t1[p] for o in mine) for p in PATHS},
            "tables_t1": sorted({t for o in mine for t in o.tables_t1}),
            "tables_per_user_t1": sum(len(o.tables_t1) for o in mine) / max(1, len(mine)),
        }
    return summary


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def render(label: str, s: dict[str, Any]) -> list[str]:
    f, c = s["forget"], s["change"]
    return [
        f"| {label} | forgotten: stale right after | {_pct(f['stale_t0'], f['questions'])} |",
        f"| {label} | forgotten: stale after the next cycle | {_pct(f['stale_t1'], f['questions'])} |",
        f"| {label} | forgotten: tables still holding it (per user) | {f['tables_per_user_t1']:.1f}: "
        f"{', '.join(f['tables_t1']) or 'none'} |",
        f"| {label} | changed: stale right after | {_pct(c['stale_t0'], c['questions'])} |",
        f"| {label} | changed: stale after the next cycle | {_pct(c['stale_t1'], c['questions'])} |",
        f"| {label} | changed: new value in the answers right after | "
        f"{_pct(c['fresh_t0'], c['questions'])} |",
        f"| {label} | changed: new value in the answers after the next cycle | "
        f"{_pct(c['fresh_t1'], c['questions'])} |",
    ]


def _child(code: Path, users: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--users", str(users), "--json"],
        env=env,
        cwd=str(code),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the run on {code} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def exported(name: str) -> tuple[Path, str]:
    """The tree of release (or revision) ``name`` under /tmp, and its label."""
    sys.path.insert(0, str(REPO / "bench"))
    from releases import resolve

    rev, label = resolve(name)
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"amrita-cascade-{sha[:12]}"
    if not (path / "amrita_memory_pg").is_dir():
        path.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", sha], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return path, label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=len(FACTS), help="scenarios (half forget)")
    parser.add_argument("--baseline", help="also run this release (or revision): the 'before'")
    parser.add_argument("--json", action="store_true", help="run here, print the summary as JSON")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(asyncio.run(run(args.users)), ensure_ascii=False))
        return
    lines = ["| code | measure | result |", "|---|---|---|"]
    if args.baseline is not None:
        path, label = exported(args.baseline)
        lines += render(label, _child(path, args.users))
    lines += render("this", _child(REPO, args.users))
    print(
        f"# cascade eval: {args.users} users, 4 questions each (block, read_profile, "
        "read_memory, knowledge_search)"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
