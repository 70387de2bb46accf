"""``amrita-memory web hash-password`` and the refusal to serve without a usable hash."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from amrita_memory_pg.cli.app import cli, set_language
from amrita_memory_pg.cli.main import _register_commands
from amrita_memory_pg.web.security import verify_password


def _run(args: list[str], stdin: str | None = None) -> tuple[int, str]:
    _register_commands()
    set_language("en", cli)  # what main() does first; this calls the group directly
    result = CliRunner().invoke(cli, args, input=stdin)
    return result.exit_code, result.output + (str(result.exception) if result.exception else "")


def test_hash_password_prints_a_hash_that_verifies() -> None:
    code, out = _run(["web", "hash-password", "--stdin"], "s3cret-pass\n")
    assert code == 0
    assert verify_password("s3cret-pass", out.strip())
    code, out = _run(["web", "hash-password", "--stdin"], "short\n")
    assert code != 0 and "at least 8" in out


def test_serving_needs_a_password_hash(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[web]\npassword_hash = "plain-password"\n', encoding="utf-8")
    code, out = _run(["--config", str(config), "web"])
    assert code != 0 and "password_hash" in out and "hash-password" in out
    config.write_text("[web]\nenabled = true\n", encoding="utf-8")
    code, out = _run(["--config", str(config), "web"])
    assert code != 0 and "needs password_hash" in out
