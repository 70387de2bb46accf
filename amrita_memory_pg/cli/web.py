"""``amrita-memory web`` (serve the admin page) and ``web hash-password``."""

from __future__ import annotations

import importlib.util
import sys

import click

from amrita_memory_pg.cli.app import CliState, cli, say, tr


def _need_web_extra() -> None:
    missing = [
        m for m in ("fastapi", "uvicorn", "multipart") if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise click.ClickException(tr("cli.web.extra", missing=", ".join(missing)))


@cli.group("web", invoke_without_command=True)
@click.option("--host", default=None, help="Address to listen on (default: [web] host).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Default: [web] port.")
@click.pass_context
def web(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Serve the admin web page (uvicorn) until ctrl+c; needs [web] password_hash.

    Runs whether or not [web] enabled is set (that key is for the NoneBot plugin);
    the store opens as for the other commands (the embedded server when no DATABASE_URL).
    """
    if ctx.invoked_subcommand is not None:
        return
    _need_web_extra()
    from amrita_memory_pg.web.app import check_web_settings
    from amrita_memory_pg.web.server import serve

    state: CliState = ctx.obj
    settings = state.settings
    check_web_settings(settings)
    where = f"http://{host or settings.web.host}:{port or settings.web.port}{settings.web.path}/"
    say("cli.web.serving", where=where, err=True)
    serve(settings, host=host, port=port)


@web.command("hash-password")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the password from standard input.")
def hash_password_command(from_stdin: bool) -> None:
    """Print the hash of a password for [web] password_hash / superuser_password_hash."""
    from amrita_memory_pg.web.security import hash_password

    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt(tr("cli.web.prompt"), hide_input=True, confirmation_prompt=True)
    if len(password) < 8:
        raise click.ClickException(tr("cli.web.short"))
    click.echo(hash_password(password))
