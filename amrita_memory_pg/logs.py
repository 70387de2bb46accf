"""JSON log lines (``[observability] json_logs``): one object per line, for a log shipper.

A fleet's logs are read by machines (Loki, Elasticsearch…), which want fields rather than
a text line to parse. Each record becomes ``{"time", "level", "logger", "message"}`` plus
``exception`` when it carries one; the message goes through the one redaction, as every
text that can reach a log does.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

from amrita_memory_pg.domain.redact import redact


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
            "process": record.process,
        }
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False)


def json_handler(stream: TextIO | None = None) -> logging.Handler:
    """A stream handler (stderr by default) writing :class:`JsonFormatter` lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    return handler


def use_json_logs(logger: logging.Logger, stream: TextIO | None = None) -> None:
    """Replace ``logger``'s handlers by one JSON handler (the root logger: every line)."""
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.addHandler(json_handler(stream))
