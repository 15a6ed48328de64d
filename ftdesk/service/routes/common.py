"""What every route module shares: the service context, group calls in the session, and the request vocabulary.

Symbols, ISO dates and date ranges are validated the same way by every endpoint group.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ftdesk.brokers.base import QuoteFeed
from ftdesk.brokers.capabilities import AccountsApi, MarketDataApi, OrdersApi, ResearchApi, UserDataApi
from ftdesk.domain import errors as e
from ftdesk.service.context import CONTEXT, ServiceContext
from ftdesk.service.web.routing import Call, QueryModel

T = TypeVar("T")


def context(call: Call[Any, Any]) -> ServiceContext:
    """Return the service context of a request."""
    return call.app[CONTEXT]


# Each helper runs one capability group's call inside the brokerage session (AUTH_REQUIRED, SESSION_EXPIRED,
# re-auth), so a route module sees only the group it uses, never the whole broker.


async def in_accounts(call: Call[Any, Any], operation: Callable[[AccountsApi], Awaitable[T]]) -> T:
    """Run an accounts call inside the brokerage session."""
    return await context(call).session.run(lambda broker: operation(broker.accounts))


async def in_orders(call: Call[Any, Any], operation: Callable[[OrdersApi], Awaitable[T]]) -> T:
    """Run an orders read inside the brokerage session (previews, places and cancels go through the order desk)."""
    return await context(call).session.run(lambda broker: operation(broker.orders))


async def in_market_data(call: Call[Any, Any], operation: Callable[[MarketDataApi], Awaitable[T]]) -> T:
    """Run a market-data call inside the brokerage session."""
    return await context(call).session.run(lambda broker: operation(broker.market_data))


async def in_quote_feed(call: Call[Any, Any], operation: Callable[[QuoteFeed], Awaitable[T]]) -> T:
    """Run a one-shot call of the upstream quote feed (a snapshot) inside the brokerage session."""
    return await context(call).session.run(lambda broker: operation(broker.quote_feed))


async def in_research(call: Call[Any, Any], operation: Callable[[ResearchApi], Awaitable[T]]) -> T:
    """Run a research call inside the brokerage session."""
    return await context(call).session.run(lambda broker: operation(broker.research))


async def in_user_data(call: Call[Any, Any], operation: Callable[[UserDataApi], Awaitable[T]]) -> T:
    """Run a user-data call (watchlists, alerts, preferences) inside the brokerage session."""
    return await context(call).session.run(lambda broker: operation(broker.user_data))


# --- request vocabulary ------------------------------------------------------------------

SYMBOL_PATTERN = r"^[A-Za-z0-9./^$-]+$"
"""Letters, digits and . / ^ $ - (BRK.B, BRK/B, .SPX, -AAPL260417C200); upper-cased before use."""
MAX_SYMBOLS = 50
"""Most symbols one list query may carry."""
MIN_YEAR, MAX_YEAR = 1900, 2100
"""Dates outside these years are refused."""

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def upper_symbol(value: Any) -> Any:
    """Return a symbol trimmed and upper-cased (other values unchanged, for the validator to refuse)."""
    return value.strip().upper() if isinstance(value, str) else value


def _iso_date_only(value: Any) -> Any:
    # pydantic alone would also take unix timestamps ("0" -> 1970-01-01); a query date is YYYY-MM-DD only.
    if isinstance(value, str) and not _ISO_DATE.fullmatch(value.strip()):
        raise ValueError("must be an ISO date, YYYY-MM-DD")
    return value.strip() if isinstance(value, str) else value


# The normaliser comes last so that it runs first and the schema still shows the constraints.
Symbol = Annotated[
    str,
    StringConstraints(min_length=1, max_length=32, pattern=SYMBOL_PATTERN),
    BeforeValidator(upper_symbol),
]
"""A ticker or option symbol, trimmed and upper-cased."""


def _plausible_year(value: date) -> date:
    # Far-off years are typos, and date arithmetic near year 1 or 9999 overflows in the brokers.
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ValueError(f"must be between {MIN_YEAR}-01-01 and {MAX_YEAR}-12-31")
    return value


IsoDate = Annotated[date, BeforeValidator(_iso_date_only), AfterValidator(_plausible_year)]
"""A calendar date written YYYY-MM-DD, between 1900 and 2100."""

SymbolList = Annotated[
    list[Symbol],
    Field(
        min_length=1,
        max_length=MAX_SYMBOLS,
        description=f"Tickers (case-insensitive, upper-cased), 1 to {MAX_SYMBOLS}.",
    ),
]

_SYMBOL = TypeAdapter(Symbol)


def path_symbol(call: Call[Any, Any], name: str = "symbol") -> str:
    """Return a path symbol trimmed and upper-cased; a malformed one is a 422 naming the path parameter."""
    raw = call.path[name]
    try:
        return _SYMBOL.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        raise e.ValidationFailed(
            f"Invalid path: {name}",
            details=[{"field": name, "location": "path", "message": err["msg"], "type": err["type"]}],
        ) from None


class SymbolsQuery(QueryModel):
    """A list of tickers."""

    symbols: SymbolList


class DateRangeQuery(QueryModel):
    """An optional inclusive date range; both ends are ISO dates and the end may not precede the start."""

    start_date: IsoDate | None = Field(
        default=None, description="First day to include, YYYY-MM-DD (inclusive). Omitted: no lower bound."
    )
    end_date: IsoDate | None = Field(
        default=None, description="Last day to include, YYYY-MM-DD (inclusive); not before start_date. Omitted: today."
    )

    @field_validator("end_date")
    @classmethod
    def _end_not_before_start(cls, end: date | None, info: ValidationInfo) -> date | None:
        start = info.data.get("start_date")
        if end is not None and start is not None and end < start:
            raise ValueError(f"end_date {end.isoformat()} is before start_date {start.isoformat()}")
        return end


# --- query models of this group --------------------------------------------------------------------
