"""``amrita-memory pause|resume|paused``, ``inspect`` and ``memory history|accesses``:
the memory's trail by hand.

A paused partition keeps its memories but is not injected, not recalled (read_memory and
``/memory search`` answer that it is paused) and not written by the chat LLM, extraction
or the L3 loop; people (``/memory``, this CLI, the admin web) still manage it.
``inspect CHAT`` prints exactly what the next turn of a chat injects, with token counts.
"""

from __future__ import annotations

import getpass
import json

import click

from amrita_memory_pg.cli.app import KEY, CliState, TextType, cli, run_async
from amrita_memory_pg.cli.memories import memory_group
from amrita_memory_pg.domain.keys import MAX_KEY_CHARS
from amrita_memory_pg.domain.validation import MAX_ID_CHARS, MAX_NOTE_CHARS, MAX_QUERY_CHARS


@cli.command("pause")
@click.argument("key", type=KEY)
@click.option(
    "--reason", type=TextType(MAX_NOTE_CHARS), default=None, help="Why (shown with the pause)."
)
@click.pass_obj
@run_async
async def pause(state: CliState, key: str, reason: str | None) -> None:
    """Pause the memory of partition KEY (kept, not injected, not recalled)."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        done = await mem.cases.pause.pause(key, by=f"person:cli:{getpass.getuser()}", reason=reason)
    click.echo(f"paused {key}" if done else f"{key} was already paused")


@cli.command("resume")
@click.argument("key", type=KEY)
@click.pass_obj
@run_async
async def resume(state: CliState, key: str) -> None:
    """Resume the memory of partition KEY."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        done = await mem.cases.pause.resume(key)
    click.echo(f"resumed {key}" if done else f"{key} was not paused")


@cli.command("paused")
@click.pass_obj
@run_async
async def paused(state: CliState) -> None:
    """List the paused partitions."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        states = await mem.trail.paused()
    for s in states:
        reason = f"  ({s.reason})" if s.reason else ""
        click.echo(f"{s.partition_key}  since {s.paused_at.isoformat()}  by {s.paused_by}{reason}")
    click.echo(f"{len(states)} paused")


@cli.command("inspect")
@click.argument("chat", type=TextType(MAX_KEY_CHARS))
@click.option(
    "--user",
    "user_id",
    type=TextType(MAX_KEY_CHARS),
    default=None,
    help="The speaker in a group chat.",
)
@click.option(
    "--message",
    type=TextType(MAX_QUERY_CHARS),
    default=None,
    help="The current message (for relevant_top_k).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the inspection as JSON.")
@click.pass_obj
@run_async
async def inspect_command(
    state: CliState, chat: str, user_id: str | None, message: str | None, as_json: bool
) -> None:
    """What the bot sees: the exact memory block of CHAT's next turn (a session key,
    e.g. QQPlatform_Group_30003 or QQPlatform_Private_10001) with token counts."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        seen = await mem.inspect(chat, user_id=user_id, message=message)
    if not as_json:
        click.echo(seen.render())
        return
    payload = {
        "chat": seen.chat_key,
        "tokens": seen.tokens,
        "lines_tokens": seen.lines_tokens,
        "budget": seen.budget,
        "injected": [
            {"partition_key": m.partition_key, "id": m.id, "tokens": m.tokens, "line": m.line}
            for m in seen.injected
        ],
        "paused": seen.paused,
        "text": seen.text,
    }
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2))


@memory_group.command("history")
@click.argument("key", type=KEY)
@click.argument("memory_id", type=TextType(MAX_ID_CHARS))
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.pass_obj
@run_async
async def memory_history(state: CliState, key: str, memory_id: str, limit: int) -> None:
    """Who changed memory MEMORY_ID of KEY, newest first (content redacted)."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        entries = await mem.trail.history(key, memory_id, limit)
    for e in entries:
        fields = ",".join(e.changed_fields())
        after = (e.after or e.before or {}).get("content", "")
        who = e.actor.kind + (f":{e.actor.id}" if e.actor.id else "")
        # a merge's note starts with the kept memory's id; what follows is shown
        said = (e.note or "").partition(" ")[2] if e.op == "merge" else e.note or ""
        note = f"  （{said}）" if said else ""
        click.echo(
            f"{e.at.isoformat()}  {e.op:<6} {who}  [{fields}]  {' '.join(str(after).split())}{note}"
        )
    click.echo(f"{len(entries)} changes")


@memory_group.command("accesses")
@click.argument("key", type=KEY)
@click.argument("memory_id", type=TextType(MAX_ID_CHARS))
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.pass_obj
@run_async
async def memory_accesses(state: CliState, key: str, memory_id: str, limit: int) -> None:
    """Who recalled memory MEMORY_ID of KEY, newest first."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        entries = await mem.trail.access_log(key, memory_id, limit)
    for a in entries:
        score = "-" if a.score is None else f"{a.score:.4f}"
        click.echo(
            f"{a.at.isoformat()}  {a.surface:<8} {a.chat_key or '-'} {a.who or '-'}  "
            f"{score}  {a.query or ''}"
        )
    click.echo(f"{len(entries)} recalls")
