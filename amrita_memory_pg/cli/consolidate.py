"""``amrita-memory consolidate``: run one L3 cycle now for a partition and print its summary.

The loop runs even when ``[subconscious] enabled`` is false (an explicit operator
action); the model comes from ``[subconscious] llm_*`` or ``LLM_BASE_URL`` /
``LLM_MODEL`` / ``LLM_API_KEY``. ``--dry-run``: every writing tool checks its input and
answers as if done, but writes nothing (no memory, memo or pending message); only the
cycle's own row and its token usage are recorded, marked ``dry_run``.

Exit status: 0 the cycle succeeded, 1 it failed, 3 another process of the fleet is
running this target's cycle right now (it holds the lease): nothing ran here, the
message names the holder (``host:pid:start``).
"""

from __future__ import annotations

import click

from amrita_memory_pg.cli.app import KEY, CliState, cli, run_async, say, tr

#: exit status when another process holds the target's lease (1: failed, 2: an error)
EXIT_HELD = 3


@cli.command()
@click.option(
    "--target", required=True, type=KEY, help="Partition key, e.g. QQPlatform_Private_10001."
)
@click.option("--dry-run", is_flag=True, help="Answer writes as if done; write nothing.")
@click.pass_obj
@run_async
async def consolidate(state: CliState, target: str, dry_run: bool) -> None:
    """Run one L3 consolidation cycle now and print its summary."""
    from amrita_memory_pg.bootstrap import open_memory

    settings = state.load(subconscious__enabled=True)
    async with open_memory(settings, startup=False) as memory:
        summary = await memory.run_cycle(target.strip(), dry_run=dry_run, trigger="cli")
    if summary.held_by is not None:
        say("cli.l3.held", key=summary.target_key, holder=summary.held_by, err=True)
        raise SystemExit(EXIT_HELD)
    outcome = tr("cli.l3.ok") if summary.ok else tr("cli.l3.failed", error=summary.error)
    say(
        "cli.l3.line",
        key=summary.target_key,
        cycle=summary.cycle_id,
        outcome=outcome,
        dry=tr("cli.l3.dry") if summary.dry_run else "",
        iterations=summary.iterations,
        calls=summary.tool_calls,
        changed=summary.memories_changed,
        prompt=summary.prompt_tokens,
        completion=summary.completion_tokens,
    )
    if summary.summary:
        say("cli.l3.summary", summary=summary.summary)
    if not summary.ok:
        raise SystemExit(1)
