"""The metrics an operator reads about (docs/deployment.md) and graphs
(docs/grafana/amrita-memory.json) are the ones ``/metrics`` exports; JSON log lines."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path

from amrita_memory_pg import metrics
from amrita_memory_pg.logs import use_json_logs

DOCS = Path(__file__).resolve().parents[2] / "docs"
NAME = re.compile(r"\bamrita_memory_[a-z0-9_]+[a-z]")
#: what a histogram's or a counter's family adds to its name in the exposition
SUFFIXES = ("_bucket", "_count", "_sum")


def exported() -> set[str]:
    return set(metrics.metric_names())


def known(name: str) -> bool:
    """Whether ``name`` is a sample name ``/metrics`` can show."""
    families = exported()
    return name in families or any(
        name.endswith(s) and name[: -len(s)] in families for s in SUFFIXES
    )


def test_every_metric_is_in_the_deployment_table_and_every_name_there_exists() -> None:
    text = (DOCS / "deployment.md").read_text(encoding="utf-8")
    monitoring = text[text.index("## Monitoring") :]
    rows = set(re.findall(r"^\| `(amrita_memory_[a-z0-9_]+)` \|", monitoring, re.MULTILINE))
    assert rows == exported()
    named = set(NAME.findall(monitoring)) - {"amrita_memory_pg"}
    assert {n for n in named if not known(n)} == set()


def test_the_dashboards_queries_name_metrics_that_exist() -> None:
    dashboard = json.loads((DOCS / "grafana" / "amrita-memory.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(exprs) >= 10
    used = {name for expr in exprs for name in NAME.findall(expr)}
    assert {n for n in used if not known(n)} == set()
    # the families an operator needs first are on it
    for family in ("tool_calls_total", "search_seconds", "pool_waiting", "llm_tokens_total"):
        assert any(n.startswith(f"amrita_memory_{family}") for n in used), family


def test_no_metric_has_a_label_that_could_name_a_user_or_a_partition() -> None:
    labels = {
        label
        for collector in (
            metrics.TOOL_CALLS,
            metrics.SEARCH_SECONDS,
            metrics.WRITE_SECONDS,
            metrics.EMBEDDING_REQUESTS,
            metrics.LEASE_CLAIMS,
            metrics.L3_CYCLES,
            metrics.LLM_TOKENS,
        )
        for label in collector._labelnames
    }
    assert not labels & {"partition", "partition_key", "key", "user", "user_id", "group", "target"}


def test_json_logs_are_one_object_per_line_with_secrets_redacted() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("amrita_memory_pg.test_json")
    use_json_logs(logger, stream)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.warning("connecting to %s", "postgresql://amrita:hunter22@db/x")
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("a failure")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "warning" and first["logger"] == "amrita_memory_pg.test_json"
    assert "hunter22" not in lines[0] and "postgresql://" in first["message"]
    assert first["time"].endswith("+00:00")
    assert "ValueError: boom" in second["exception"]
