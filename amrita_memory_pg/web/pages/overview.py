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
#: the drawing's own units (the SVG scales to its box's width, keeping this ratio)
WIDTH, HEIGHT, BAR_GAP = 600, 170, 2
#: room for the value axis on the left, the dates below, a little above and right
LEFT, BOTTOM, TOP, RIGHT = 48, 24, 10, 8
#: the days labelled under the bars (indexes of the 30; the last is today)
LABELLED = (0, 7, 14, 21, 29)


def _tick(value: float) -> str:
    """An axis value: integers as they are, large ones shortened (12k)."""
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def bar_chart(days: list[date], values: list[int], label: str) -> Markup:
    """One bar per day, scaled to the largest, over a value axis (0, half, the largest)
    and dates under the bars (the first, every seventh, the last); every label inside
    the drawing (none clipped), which scales to the page's width. Each bar's title names
    its day and value."""
    top = max(values, default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(values), 1)
    base = TOP + plot_h
    parts: list[str] = []
    # a half-way line only where it is a whole number of something
    for fraction in (0.0, 0.5, 1.0) if top >= 2 else (0.0, 1.0):
        y = round(base - fraction * plot_h, 1)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}"/>')
        parts.append(
            f'<text class="axis" x="{LEFT - 6}" y="{y + 4}" text-anchor="end">'
            f"{_tick(top * fraction)}</text>"
        )
    for n, (day, value) in enumerate(zip(days, values, strict=True)):
        height = round(value / top * plot_h, 1)
        x = round(LEFT + n * step, 1)
        parts.append(
            f'<rect class="bar" x="{x}" y="{round(base - height, 1)}" '
            f'width="{max(step - BAR_GAP, 1):.1f}" height="{height}" '
            f'data-day="{day.isoformat()}" data-value="{value}">'
            f"<title>{day.isoformat()}: {value}</title></rect>"
        )
        if n in LABELLED or n == len(values) - 1:
            anchor = "start" if n == 0 else "end" if n == len(values) - 1 else "middle"
            tx = x if anchor == "start" else x + step - BAR_GAP if anchor == "end" else x + step / 2
            parts.append(
                f'<text class="axis day" x="{round(tx, 1)}" y="{HEIGHT - 6}" '
                f'text-anchor="{anchor}">{day.strftime("%m-%d")}</text>'
            )
    parts.append(f'<line class="base" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>')
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="xMinYMin meet" '
        f'role="img" aria-label="{escape(label)}">{"".join(parts)}</svg>'
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
