"""Every ``amrita-memory`` command with hostile arguments: no traceback,
ever; a refusal is a non-zero exit with a sentence. The commands are enumerated from the
click group, so a command added later is fuzzed too."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import click
import pytest
from click.testing import CliRunner

from amrita_memory_pg.cli.app import cli
from amrita_memory_pg.cli.main import INTERNAL_ERROR, _register_commands, main

#: long-running or interactive by design: an open shell, a web server
SKIPPED = {"psql", "web serve"}
HOSTILE = ("\x00", "1e20", "-1", "", "x" * 100_000, "../../etc", "100000000000000000000")
#: values that no argument of any command accepts
ALWAYS_REFUSED = ("\x00", "x" * 100_000)


@dataclass
class Outcome:
    code: int
    output: str


def commands() -> list[tuple[list[str], click.Command]]:
    _register_commands()
    found: list[tuple[list[str], click.Command]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                walk(sub, [*path, name])
        elif " ".join(path) not in SKIPPED:
            found.append((path, command))

    walk(cli, [])
    return found


def invoke(argv: list[str]) -> Outcome:
    runner = CliRunner()
    with runner.isolation(input="") as (out, err, _):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        text = out.getvalue().decode(errors="replace") + err.getvalue().decode(errors="replace")
    return Outcome(code, text)


def argvs(path: list[str], command: click.Command, value: str) -> list[list[str]]:
    """The command with every positional argument (and required option) ``value``; then
    each option that takes a value given ``value``, the arguments a plain key."""
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    required = [
        p for p in command.params if isinstance(p, click.Option) and p.required and not p.is_flag
    ]
    base = [*path]
    for option in required:
        base += [option.opts[0], value]
    tries = [base + [value] * len(arguments)]
    for option in command.params:
        if isinstance(option, click.Option) and not option.is_flag and not option.required:
            if option.name in ("config", "body_file", "legacy_config", "write_config"):
                continue
            tries.append(
                [*path, *[x for o in required for x in (o.opts[0], "global")]]
                + ["global"] * len(arguments)
                + [option.opts[0], value]
            )
    return tries


async def test_every_command_with_hostile_arguments_answers_with_a_sentence(
    db_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # relative paths ('', '../../etc', '1e20') land in a throwaway folder, not the checkout
    work = tmp_path / "a" / "b" / "cwd"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[database]\nurl = "{db_dsn}"\n'
        '[embedding]\nprotocol = "hash"\n',
        encoding="utf-8",
    )
    found = commands()
    assert len(found) > 40, [p for p, _ in found]
    problems: list[str] = []
    runs = 0
    for path, command in found:
        takes_arguments = any(isinstance(p, click.Argument) for p in command.params)
        for value in HOSTILE:
            for argv in argvs(path, command, value):
                outcome = await asyncio.to_thread(invoke, ["--config", str(config), *argv])
                runs += 1
                conn = await asyncpg.connect(db_dsn)  # the database survived the command
                await conn.close()
                said = outcome.output.replace("x" * 100, "x…")[-200:]
                shown = f"{' '.join(argv)[:80]!r} -> {outcome.code}: {said!r}"
                if "Traceback" in outcome.output or any(
                    m in outcome.output for m in INTERNAL_ERROR
                ):
                    problems.append("traceback " + shown)
                elif outcome.code != 0 and not outcome.output.strip():
                    problems.append("silent " + shown)
                elif (
                    value in ALWAYS_REFUSED
                    and takes_arguments
                    and outcome.code == 0
                    and value in (argv[-1], argv[len(path)])
                ):
                    problems.append("accepted " + shown)
    assert not problems, f"{len(problems)} of {runs} runs:\n" + "\n".join(problems)


async def test_clear_with_an_unusable_backup_folder_says_so_and_deletes_nothing(
    db_dsn: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "backups").write_text("not a folder", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{data}"\n[database]\nurl = "{db_dsn}"\n[embedding]\nprotocol = "hash"\n',
        encoding="utf-8",
    )
    added = await asyncio.to_thread(
        invoke, ["--config", str(config), "memory", "add", "global", "一条记忆"]
    )
    assert added.code == 0, added
    cleared = await asyncio.to_thread(invoke, ["--config", str(config), "clear", "global", "--yes"])
    assert cleared.code == 2 and "Traceback" not in cleared.output
    assert cleared.output.startswith("amrita-memory: ") and "backups" in cleared.output
    conn = await asyncpg.connect(db_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 1
    finally:
        await conn.close()


async def test_memory_profile_revert_with_a_huge_version_answers_a_sentence(
    db_dsn: str, tmp_path: Path
) -> None:
    from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
    from amrita_memory_pg.tools.context import ToolContext
    from tests.support.memory import memory_on

    root = ToolContext(platform="qq", user_id="99999", roles=frozenset({"superuser"}))
    async with memory_on(db_dsn, tmp_path) as mem:
        command = MemoryCommand.over(mem)
        for version in ("1e20", "100000000000000000000", "-1"):
            reply = await command.run(root, f"profile revert 10001 {version}")
            assert isinstance(reply, TextReply)
            assert "Error" not in reply.text and "asyncpg" not in reply.text, reply.text
            assert "版本" in reply.text, reply.text
