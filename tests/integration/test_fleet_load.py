"""The short fleet load run (``bench/fleet.py --short``) passes.

Three bot-like processes share one database through a real PgBouncer in transaction mode
and schedule the same L3 targets against a slow scripted model; one worker is SIGKILLed
while it holds a target's lease, later the PostgreSQL server is stopped and comes back.
The script checks its invariants itself (no target ran two cycles at once, every
acknowledged write present, the killed worker's target taken over, every surviving worker
writing again after the restart) and exits 0 only if all hold. It runs in its own process
(it kills its own workers and server). This test also checks that each fault really
happened, so a run where nothing failed cannot pass.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the run itself takes ~1 min on two busy cores
BUDGET_SECONDS = 240


@pytest.mark.slow
def test_the_short_fleet_run_with_faults_keeps_its_invariants(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "fleet.py"), "--short"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=BUDGET_SECONDS)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"the short fleet run took over {BUDGET_SECONDS} s:\n{out}")
    print(out)
    assert proc.returncode == 0, out
    checks = re.findall(r"^(PASS|FAIL) (.+?):", out, flags=re.MULTILINE)
    assert checks and all(verdict == "PASS" for verdict, _ in checks), out
    names = {name for _, name in checks}
    assert "no target ran twice at once" in names, out
    assert "acked writes present" in names, out
    # the faults happened and were felt
    assert re.search(r"^killed worker \d+ holding the lease of \S+", out, re.MULTILINE), out
    assert re.search(r"server stopped and back after|restarted the server", out), out
    cycles = re.search(r"no target ran twice at once: (\d+) cycles", out)
    assert cycles is not None and int(cycles.group(1)) > 3, out
    acked = re.search(r"acked writes present: (\d+) of (\d+)", out)
    assert acked is not None and acked.group(1) == acked.group(2) != "0", out
