"""Every time on the admin page is shown in ``[web] timezone``: one helper
converts, and no template formats a stored time itself."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from amrita_memory_pg.web.kit import in_zone

TEMPLATES = Path(__file__).resolve().parents[2] / "amrita_memory_pg" / "web" / "templates"
SHANGHAI = ZoneInfo("Asia/Shanghai")


def test_a_stored_time_reads_in_the_configured_zone() -> None:
    assert in_zone(datetime(2025, 1, 1, 0, 30, tzinfo=UTC), SHANGHAI) == "2025-01-01 08:30"
    # a naive time is a stored (UTC) one, whatever the host's zone is
    naive = datetime(2025, 1, 1, 16, 30)  # noqa: DTZ001
    assert in_zone(naive, SHANGHAI, "%m-%d %H:%M") == "01-02 00:30"


def test_no_template_formats_a_time_itself() -> None:
    """``x.strftime(…)`` in a template would show UTC unlabelled; ``when(x)`` converts and
    makes the layout name the zone. The one exception: the L3 planner's window, shown in
    the planner's own zone and named in that same line."""
    offenders = []
    for template in sorted(TEMPLATES.glob("*.html")):
        for number, line in enumerate(template.read_text(encoding="utf-8").splitlines(), 1):
            for found in re.finditer(r"([\w.]+)\.strftime\(", line):
                if not found.group(1).startswith("target.plan."):
                    offenders.append(f"{template.name}:{number}: {found.group(0)}")
    assert not offenders, offenders
    assert (TEMPLATES / "l3.html").read_text(encoding="utf-8").count("tz=page.timezone") >= 1
