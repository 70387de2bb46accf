"""The overview: memories counted by scope, category and source across
every partition, and three per-day charts (memories written, recalls, L3 tokens) drawn
here as inline SVG: no script, no CDN, readable without JavaScript."""

from __future__ import annotations

from datetime import date, timedelta

from fastapi import APIRouter, Request, Response
from markupsafe import Markup, escape

from amrita_memory_pg.domain.records import CATEGORY_NAMES
from amrita_memory_pg.web import kit

router = APIRouter()
NAV = [kit.NavItem("overview", "/overview", "nav.overview")]

#: days the charts cover (today included)
DAYS = 30
WIDTH, HEIGHT, BAR_GAP = 600, 120, 2


def bar_chart(days: list[date], values: list[int], label: str) -> Markup:
    """One bar per day, scaled to the largest; each bar's title names its day and value."""
    top = max(values, default=0) or 1
    step = WIDTH / max(len(values), 1)
    bars: list[str] = []
    for day, value in zip(days, values, strict=True):
        height = round(value / top * (HEIGHT - 14), 1)
        x = round(len(bars) * step, 1)
        bars.append(
            f'<rect x="{x}" y="{HEIGHT - height}" width="{max(step - BAR_GAP, 1):.1f}" '
            f'height="{height}" data-day="{day.isoformat()}" data-value="{value}">'
            f"<title>{day.isoformat()}: {value}</title></rect>"
        )
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(label)}">'
        f'<text x="0" y="10" class="chart-max">{top}</text>{"".join(bars)}</svg>'
    )


@router.get("/overview")
async def overview(request: Request, _user: kit.Admin) -> Response:
    t = kit.translator_for(request)
    settings = kit.state(request).settings
    tz = settings.web.timezone
    store = kit.admin_store(request)
    counts: dict[str, list[tuple[str, int]]] = {"scope": [], "category": [], "source": []}
    for dimension, value, n in await store.overview_counts():
        counts.setdefault(dimension, []).append((value, n))
    since = kit.now(request) - timedelta(days=DAYS - 1)
    daily = await store.overview_daily(since, tz)
    days = [day for day, _w, _r, _t in daily]
    series = {
        "written": [w for _d, w, _r, _t in daily],
        "recalls": [r for _d, _w, r, _t in daily],
        "tokens": [n for _d, _w, _r, n in daily],
    }
    charts = [
        (name, bar_chart(days, values, t(f"overview.chart.{name}")), sum(values))
        for name, values in series.items()
    ]
    return kit.render(
        request,
        "overview.html",
        counts=counts,
        category_names=CATEGORY_NAMES,
        charts=charts,
        days=DAYS,
        first=days[0] if days else None,
        last=days[-1] if days else None,
    )
