"""Research: earnings, dividends, symbol search, option position analytics, a volatility screener, notebooks."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field, StringConstraints, ValidationInfo, field_validator

from ftdesk.domain import errors as e
from ftdesk.domain.research import (
    AnalyticsLeg,
    AnalyticsRequest,
    AnalyticsResult,
    AutosuggestResult,
    DividendEvent,
    EarningsEvent,
    NoteDetail,
    NoteDraft,
    NoteUpdate,
    ScanCriterion,
    ScanDefinition,
    ScreenerResult,
)
from ftdesk.service.docs.cache_headers import cached_read_openapi
from ftdesk.service.routes.common import Symbol, SymbolsQuery, in_research, upper_symbol
from ftdesk.service.web.routing import BodyModel, Call, QueryModel, RouteTable

routes = RouteTable(tag="research")

MAX_ANALYTICS_LEGS = 20
MAX_LEG_QUANTITY = 1_000_000
MAX_PRICE = 10_000_000
MAX_NOTE_CHARS = 20_000
MAX_TITLE_CHARS = 200

# An empty symbol is how a note "filed under no symbol" is written, so note symbols may be blank.
NoteSymbol = Annotated[
    str, StringConstraints(max_length=32, pattern=r"^[A-Za-z0-9./^$-]*$"), BeforeValidator(upper_symbol)
]


# --- request models ----------------------------------------------------------------------------------


class SearchQuery(QueryModel):
    """What to look up."""

    q: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)] = Field(
        description="A symbol prefix or words of a company or fund name, 1 to 50 characters."
    )


class AnalyticsLegBody(BodyModel):
    """One leg of the position; negative quantity is short."""

    symbol: Symbol = Field(description="An option on the underlying (e.g. AAPL260417C200), or the underlying itself.")
    quantity: float = Field(
        ge=-MAX_LEG_QUANTITY,
        le=MAX_LEG_QUANTITY,
        allow_inf_nan=False,
        description="Contracts (shares for a stock leg), not zero; negative for short.",
    )
    price: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE,
        allow_inf_nan=False,
        description="Entry price per share or per contract unit; the current mid when omitted.",
    )

    @field_validator("quantity")
    @classmethod
    def _not_zero(cls, quantity: float) -> float:
        if quantity == 0:
            raise ValueError("quantity must not be zero")
        return quantity


class AnalyticsBody(BodyModel):
    """A position to analyse: an underlying and its legs."""

    symbol: Symbol = Field(description="The underlying, e.g. AAPL.")
    legs: list[AnalyticsLegBody] = Field(min_length=1, max_length=MAX_ANALYTICS_LEGS)

    def request(self) -> AnalyticsRequest:
        """Return the domain request."""
        return AnalyticsRequest(
            symbol=self.symbol,
            legs=[AnalyticsLeg(symbol=leg.symbol, quantity=leg.quantity, price=leg.price) for leg in self.legs],
        )


class ScanField(StrEnum):
    """What a scan can filter on: iv and hv are annualised fractions (0.25 = 25%), iv_rank is 0 to 100,
    change_pct is percent."""

    IV = "iv"
    HV = "hv"
    IV_RANK = "iv_rank"
    IV_HV_RATIO = "iv_hv_ratio"
    PRICE = "price"
    VOLUME = "volume"
    CHANGE_PCT = "change_pct"


class ScanSort(StrEnum):
    """What a scan can sort on: any filter field, or the symbol."""

    IV = "iv"
    HV = "hv"
    IV_RANK = "iv_rank"
    IV_HV_RATIO = "iv_hv_ratio"
    PRICE = "price"
    VOLUME = "volume"
    CHANGE_PCT = "change_pct"
    SYMBOL = "symbol"


_SCAN_UNITS = (
    "in the unit of `field` as the rows give it: iv and hv annualised fractions (0.25 = 25 %), iv_rank 0 to 100,"
    " iv_hv_ratio a plain ratio, price US dollars per share, volume shares (call contracts on Fidelity),"
    " change_pct percent."
)


class ScanCriterionBody(BodyModel):
    """Keep rows whose `field` lies between `min` and `max` (inclusive; either bound may be omitted)."""

    field: ScanField
    min: float | None = Field(default=None, allow_inf_nan=False, description=f"Lowest value kept, {_SCAN_UNITS}")
    max: float | None = Field(
        default=None, allow_inf_nan=False, description=f"Highest value kept, not below min; {_SCAN_UNITS}"
    )

    @field_validator("max")
    @classmethod
    def _max_not_below_min(cls, high: float | None, info: ValidationInfo) -> float | None:
        low = info.data.get("min")
        if high is not None and low is not None and high < low:
            raise ValueError(f"max {high} is below min {low}")
        return high


class ScanBody(BodyModel):
    """A volatility scan over the optionable universe."""

    criteria: list[ScanCriterionBody] = Field(
        default_factory=list, max_length=20, description="All must hold; none means every optionable symbol."
    )
    sort_by: ScanSort = Field(default=ScanSort.IV_RANK)
    descending: bool = True
    limit: int = Field(default=50, ge=1, le=500, description="Most rows to return; total_matches counts them all.")

    def scan(self) -> ScanDefinition:
        """Return the domain scan definition."""
        return ScanDefinition(
            criteria=[ScanCriterion(field=c.field.value, min=c.min, max=c.max) for c in self.criteria],
            sort_by=self.sort_by.value,
            descending=self.descending,
            limit=self.limit,
        )


class NoteCreateBody(BodyModel):
    """A research note to create."""

    note: str = Field(min_length=1, max_length=MAX_NOTE_CHARS, description="The note's text.")
    symbol: NoteSymbol = Field(default="", description="The ticker to file the note under; blank for none.")
    title: str = Field(default="", max_length=MAX_TITLE_CHARS)

    def draft(self) -> NoteDraft:
        """Return the domain draft."""
        return NoteDraft(note=self.note, symbol=self.symbol, title=self.title)


class NoteUpdateBody(BodyModel):
    """New text for a note, and optionally a new title or symbol."""

    note: str = Field(min_length=1, max_length=MAX_NOTE_CHARS, description="The new text (replaces the old).")
    title: str = Field(default="", max_length=MAX_TITLE_CHARS, description="New title; blank keeps the current one.")
    old_symbol: NoteSymbol = Field(
        default="",
        description="The symbol the note is filed under now; when given and different, the update is a "
        "`CONFLICT` (someone moved the note) and nothing changes.",
    )
    new_symbol: NoteSymbol = Field(default="", description="File the note under this symbol; blank keeps it.")

    def update(self) -> NoteUpdate:
        """Return the domain update."""
        return NoteUpdate(note=self.note, title=self.title, old_symbol=self.old_symbol, new_symbol=self.new_symbol)


class NoteDeleteQuery(QueryModel):
    """Which note, confirmed by its symbol."""

    symbol: NoteSymbol = Field(
        description="The symbol the note is filed under (empty, `symbol=`, for a note without one); a different "
        "symbol is a `CONFLICT` and nothing is deleted."
    )


class NoteDeleted(BaseModel):
    """The outcome of deleting a note."""

    deleted: bool = Field(description="Always true: a note that does not exist is NOT_FOUND instead.")
    note_id: str


# --- endpoints ------------------------------------------------------------------------------------------


@routes.get(
    "/research/earnings",
    summary="Earnings",
    query=SymbolsQuery,
    response=list[EarningsEvent],
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_earnings(call: Call[None, SymbolsQuery]) -> list[EarningsEvent]:
    """List past and scheduled earnings reports of each of `symbols` (1 to 50).

    `eps_actual` is null until reported; `timing` is BMO (before the open) or AMC (after the close).
    Funds report no earnings and contribute nothing; an unknown symbol is `NOT_FOUND`.
    """
    symbols = call.query.symbols
    return await in_research(call, lambda research: research.get_earnings(symbols))


@routes.get(
    "/research/dividends",
    summary="Dividends",
    query=SymbolsQuery,
    response=list[DividendEvent],
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_dividends(call: Call[None, SymbolsQuery]) -> list[DividendEvent]:
    """List past and declared dividends of each of `symbols` (1 to 50): ex, record and pay dates, amount per share."""
    symbols = call.query.symbols
    return await in_research(call, lambda research: research.get_dividends(symbols))


@routes.get(
    "/research/search",
    summary="Symbol autosuggest",
    query=SearchQuery,
    response=AutosuggestResult,
    needs_session=True,
    extra_openapi=cached_read_openapi(600, "10 min: listings change daily at most"),
)
async def search_symbols(call: Call[None, SearchQuery]) -> AutosuggestResult:
    """Return symbols matching `q` as a symbol or name prefix, best match first (an exact symbol ranks first)."""
    text = call.query.q
    return await in_research(call, lambda research: research.search_symbols(text))


@routes.post(
    "/research/analytics",
    summary="Option position analytics",
    body=AnalyticsBody,
    response=AnalyticsResult,
    needs_session=True,
    errors=(e.NotFound,),
)
async def analyze_position(call: Call[AnalyticsBody, None]) -> AnalyticsResult:
    """Analyse a position of option legs (and optionally the stock): P&L now and at the first expiry, breakevens,
    maximum profit and loss (null when unbounded) and the position's total Greeks.

    Every option leg must be on `symbol`; an unlisted series is `NOT_FOUND`.
    """
    request = call.body.request()
    return await in_research(call, lambda research: research.analyze_position(request))


@routes.post(
    "/research/screener",
    summary="Volatility screener scan",
    body=ScanBody,
    response=ScreenerResult,
    needs_session=True,
)
async def run_screener(call: Call[ScanBody, None]) -> ScreenerResult:
    """Scan the optionable universe: keep rows meeting every criterion, sort by `sort_by`, return `limit` rows.

    Each row has price, change, volume, 30-day implied volatility, historical volatility, IV rank and
    the IV/HV ratio.
    """
    scan = call.body.scan()
    return await in_research(call, lambda research: research.run_screener(scan))


@routes.get("/research/notebooks", summary="Research notes", response=list[NoteDetail], needs_session=True)
async def list_notes(call: Call[None, None]) -> list[NoteDetail]:
    """List research notes, the most recently updated first."""
    return await in_research(call, lambda research: research.get_notes())


@routes.post(
    "/research/notebooks",
    summary="Create a research note",
    body=NoteCreateBody,
    response=NoteDetail,
    status=201,
    needs_session=True,
)
async def create_note(call: Call[NoteCreateBody, None]) -> NoteDetail:
    """Create a note, optionally filed under a symbol and titled; return it with its new `note_id` (201)."""
    draft = call.body.draft()
    return await in_research(call, lambda research: research.create_note(draft))


@routes.put(
    "/research/notebooks/{note_id}",
    summary="Update a research note",
    body=NoteUpdateBody,
    response=NoteDetail,
    needs_session=True,
    errors=(e.NotFound, e.Conflict),
)
async def update_note(call: Call[NoteUpdateBody, None]) -> NoteDetail:
    """Replace a note's text, and its title or symbol when given; return the updated note.

    Send `old_symbol` to guard against a concurrent change: a note no longer filed under it is a
    `CONFLICT`. An unknown `note_id` is `NOT_FOUND`.
    """
    note_id, update = call.path["note_id"], call.body.update()
    return await in_research(call, lambda research: research.update_note(note_id, update))


@routes.delete(
    "/research/notebooks/{note_id}",
    summary="Delete a research note",
    query=NoteDeleteQuery,
    response=NoteDeleted,
    needs_session=True,
    errors=(e.NotFound, e.Conflict),
)
async def delete_note(call: Call[None, NoteDeleteQuery]) -> NoteDeleted:
    """Delete a note; `symbol` must be the one it is filed under (`CONFLICT` otherwise, nothing deleted)."""
    note_id, symbol = call.path["note_id"], call.query.symbol
    await in_research(call, lambda research: research.delete_note(note_id, symbol))
    return NoteDeleted(deleted=True, note_id=note_id)
