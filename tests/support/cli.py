"""Run the ``amrita-memory`` command in a subprocess, as an operator would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The current environment without any of our settings, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("AMRITA_MEMORY_", "EMBEDDING_", "EMBED_", "REEMBED_", "VECTOR_DB_", "LLM_")
        )
        and k != "DATABASE_URL"
    }
    env.update(extra or {})
    return env


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amrita_memory_pg.cli.main", *args],
        env=clean_env(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )
