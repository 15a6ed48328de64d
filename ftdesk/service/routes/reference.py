"""Reference data: the market holiday calendar."""

from __future__ import annotations

from pydantic import Field

from ftdesk.domain.user_data import Holiday
from ftdesk.service.docs.cache_headers import cached_read_openapi
from ftdesk.service.routes.common import in_market_data
from ftdesk.service.web.routing import Call, QueryModel, RouteTable

routes = RouteTable(tag="reference")


class HolidayQuery(QueryModel):
    """Which year."""

    year: int | None = Field(
        default=None,
        ge=1990,
        le=2100,
        description="Calendar year, 1990 to 2100. Omitted: the current year in New York.",
    )


@routes.get(
    "/reference/holiday-calendar",
    summary="Market holiday calendar",
    query=HolidayQuery,
    response=list[Holiday],
    needs_session=True,
    extra_openapi=cached_read_openapi(43200, "12 h: the exchanges publish the calendar a year ahead"),
)
async def get_holiday_calendar(call: Call[None, HolidayQuery]) -> list[Holiday]:
    """List the US market holidays (`CLOSED`) and early closes (`EARLY_CLOSE`, with `close_time`) of a year, in date
    order."""
    year = call.query.year
    return await in_market_data(call, lambda market: market.get_holiday_calendar(year))
