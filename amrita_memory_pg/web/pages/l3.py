"""L3 runs: every cycle (when, target, tool calls, tokens, outcome), and per configured
target its next planned window with the 7 × 12 activity heatmap the planner works on
(CSS grid; colour steps relative to the busiest cell; the window's cells outlined).

Read-only: the loop runs on its own schedule; ``/memory dmn`` and the CLI start cycles.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from amrita_memory_pg.domain.activity import SLOT_MINUTES, SLOTS_PER_DAY
from amrita_memory_pg.domain.planner import WEEKDAY_NAMES
from amrita_memory_pg.web import kit, opsview

router = APIRouter()
NAV = [kit.NavItem("l3", "/l3", "nav.l3")]

#: column heads of the heatmap: each slot's start hour
SLOT_HOURS = [f"{slot * SLOT_MINUTES // 60:02d}" for slot in range(SLOTS_PER_DAY)]
WEEKDAYS_EN = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@router.get("/l3")
async def l3(request: Request, _user: kit.Admin) -> Response:
    page = await opsview.l3_page(
        kit.memory(request),
        kit.now(request),
        target=request.query_params.get("target"),
        page=opsview.page_number(request.query_params.get("page")),
    )
    weekdays = WEEKDAY_NAMES if request.state.lang == "zh" else WEEKDAYS_EN
    return kit.render(request, "l3.html", page=page, slot_hours=SLOT_HOURS, weekdays=weekdays)
