"""``amrita-memory consolidate``: run one L3 cycle now for a partition and print its summary.

The loop runs even when ``[subconscious] enabled`` is false (an explicit operator
action); the model comes from ``[subconscious] llm_*`` or ``LLM_BASE_URL`` /
``LLM_MODEL`` / ``LLM_API_KEY``. ``--dry-run``: every writing tool checks its input and
answers as if done, but writes nothing (no memory, memo or pending message); only the
cycle's own row and its token usage are recorded, marked ``dry_run``.
"""

from __future__ import annotations

import click

from amrita_memory_pg.cli.app import KEY, CliState, cli, run_async


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
    from amrita_memory_pg.services.consolidation import describe

    settings = state.load(subconscious__enabled=True)
    async with open_memory(settings, startup=False) as memory:
        summary = await memory.run_cycle(target.strip(), dry_run=dry_run, trigger="cli")
    click.echo(describe(summary))
    if not summary.ok:
        raise SystemExit(1)
