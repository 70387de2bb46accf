"""``ambot memory …``: the reference plugin's CLI entry point, run by our commands (§7.8).

AmritaBot loads click groups from the entry point group ``ambot.commands``; the
reference registered ``memory`` there. Operators' muscle memory and scripts
(``ambot memory status``, ``ambot memory reindex --yes`` …) keep working: each
subcommand takes the reference's arguments and runs the ``amrita-memory`` command that
does the same job here (outputs are ours). Commands the reference did not have are
listed in the group's help with their ``amrita-memory`` name.
"""

from __future__ import annotations

from pathlib import Path

import click

NEW_COMMANDS = (
    "amrita-memory import-legacy <data/amrita_plugin_memory>  从旧插件导入（记忆、备忘录、配置）\n"
    "amrita-memory db upgrade|current|downgrade|stop           数据库结构与内置 PostgreSQL\n"
    "amrita-memory sweep / ann-index / index check|rebuild      衰减清理与索引维护\n"
    "amrita-memory config show|docs / psql                      配置与直接查询"
)


def _run(*args: str) -> None:
    """Run one ``amrita-memory`` command line (its errors: one line, exit status 2)."""
    from amrita_memory_pg.cli.main import main

    main(list(args))


@click.group(
    "memory",
    epilog="\b\n本插件新增、旧插件没有的命令:\n" + NEW_COMMANDS,
)
def memory() -> None:
    """长期记忆维护（amrita-memory-pg，兼容 amrita_plugin_memory 的命令）。"""


@memory.command()
def status() -> None:
    """数据库、嵌入模型指纹、分区键版本与条数（= amrita-memory status）。"""
    _run("status")


@memory.command()
@click.option("--yes", is_flag=True, help="不询问，直接重新嵌入。")
def reindex(yes: bool) -> None:
    """用当前模型重新嵌入全部记忆（先备份；可中断续跑）。"""
    _run("reindex", *(["--yes"] if yes else []))


@memory.command("migrate-keys")
@click.option("--dry-run", is_flag=True, help="只统计需要改写的条数。")
def migrate_keys(dry_run: bool) -> None:
    """把旧格式分区键（user_/group_/纯数字）改写为当前格式。"""
    _run("migrate-keys", *(["--dry-run"] if dry_run else []))


@memory.command("reset-fingerprint")
def reset_fingerprint() -> None:
    """只写入当前模型指纹，不重新嵌入。"""
    _run("reset-fingerprint")


@memory.group()
def backup() -> None:
    """备份（pg_dump + JSONL）。"""


@backup.command("list")
def backup_list() -> None:
    """列出备份。"""
    _run("backup", "list")


@backup.command("create")
def backup_create() -> None:
    """立即备份。"""
    _run("backup", "create")


@backup.command("restore")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--yes", is_flag=True, help="不询问。")
def backup_restore(file: Path, yes: bool) -> None:
    """恢复 FILE：旧插件的 embed_backup_*.json 合并进当前记忆；本插件的备份替换全部。"""
    _run("backup", "restore", str(file.expanduser()), *(["--yes"] if yes else []))


@memory.command(
    "import-legacy",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def import_legacy(args: tuple[str, ...]) -> None:
    """从旧插件的数据目录导入（参数同 amrita-memory import-legacy --help）。"""
    _run("import-legacy", *args)
