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

from amrita_memory_pg.cli.app import KEY, CliState, TextType, cli, run_async, say, tr
from amrita_memory_pg.cli.forget import print_lineage
from amrita_memory_pg.cli.memories import memory_group
from amrita_memory_pg.domain.keys import MAX_KEY_CHARS
from amrita_memory_pg.domain.validation import MAX_ID_CHARS, MAX_NOTE_CHARS, MAX_QUERY_CHARS, echo


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
    say("cli.pause.done" if done else "cli.pause.already", key=key)


@cli.command("resume")
@click.argument("key", type=KEY)
@click.pass_obj
@run_async
async def resume(state: CliState, key: str) -> None:
    """Resume the memory of partition KEY."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        done = await mem.cases.pause.resume(key)
    say("cli.resume.done" if done else "cli.resume.not", key=key)


@cli.command("paused")
@click.pass_obj
@run_async
async def paused(state: CliState) -> None:
    """List the paused partitions."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        states = await mem.trail.paused()
    for s in states:
        reason = tr("cli.reason", reason=s.reason) if s.reason else ""
        say(
            "cli.paused.row",
            key=s.partition_key,
            since=s.paused_at.isoformat(),
            by=s.paused_by,
            reason=reason,
        )
    say("cli.paused.total", n=len(states))


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
        click.echo(seen.render(tr))
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


def _unknown(key: str, memory_id: str, state: CliState) -> str:
    """The sentence for an id that is neither a memory of ``key`` nor in its history."""
    days = state.settings.trail.history_keep_deleted_days
    return tr("cli.trail.unknown", id=echo(memory_id), key=key, days=days)


@memory_group.command("history")
@click.argument("key", type=KEY)
@click.argument("memory_id", type=TextType(MAX_ID_CHARS))
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.pass_obj
@run_async
async def memory_history(state: CliState, key: str, memory_id: str, limit: int) -> None:
    """Who changed memory MEMORY_ID of KEY, newest first (content redacted), then what it
    was made from and what was made from it (its lineage)."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        entries = await mem.trail.history(key, memory_id, limit)
        seen = await mem.cases.forgetting.lineage_of_memory(key, memory_id)
    if not entries:  # every memory has its creation row while it or its history is kept
        raise click.ClickException(_unknown(key, memory_id, state))
    for e in entries:
        fields = ",".join(e.changed_fields())
        after = (e.after or e.before or {}).get("content", "")
        who = e.actor.kind + (f":{e.actor.id}" if e.actor.id else "")
        # a merge's note starts with the kept memory's id; what follows is shown
        said = (e.note or "").partition(" ")[2] if e.op == "merge" else e.note or ""
        say(
            "cli.history.row",
            at=e.at.isoformat(),
            op=e.op,
            who=who,
            fields=fields,
            content=" ".join(str(after).split()),
            note=tr("cli.reason", reason=said) if said else "",
        )
    say("cli.history.total", n=len(entries))
    print_lineage("cli.lineage.made_from", seen.made_from)
    print_lineage("cli.lineage.used_by", seen.used_by)


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
        known = bool(entries) or bool(await mem.trail.history(key, memory_id, 1))
    if not known:
        raise click.ClickException(_unknown(key, memory_id, state))
    for a in entries:
        score = "-" if a.score is None else f"{a.score:.4f}"
        say(
            "cli.accesses.row",
            at=a.at.isoformat(),
            surface=a.surface,
            chat=a.chat_key or "-",
            who=a.who or "-",
            score=score,
            query=a.query or "",
        )
    say("cli.accesses.total", n=len(entries))
