"""Research records (the research endpoints)."""

from __future__ import annotations

from pydantic import Field

from ftdesk.domain.accounts import OptionType
from ftdesk.domain.base import IsoDate, IsoDateOrEmpty, IsoDateTimeOrEmpty, Record, UpstreamRecord
from ftdesk.domain.market import Greeks

# Fidelity's screener runs the one LiveVol scan known (call volume), which has no volatility columns.
_FIDELITY_SCAN = (
    " On Fidelity 0 unless the scan has the column; LiveVol's number is then passed on as sent, its unit unconfirmed."
)


class EarningsEvent(UpstreamRecord):
    """One earnings report, past or scheduled."""

    symbol: str
    report_date: IsoDate
    fiscal_period: str = Field(description="e.g. 'Q3 2026'.")
    timing: str = Field(description="BMO before market open, AMC after market close.")
    eps_estimate: float | None
    eps_actual: float | None = Field(description="Null until reported.")
    surprise_pct: float | None = None


class DividendEvent(UpstreamRecord):
    """One dividend, past or declared."""

    symbol: str
    ex_date: IsoDate
    record_date: IsoDateOrEmpty
    pay_date: IsoDateOrEmpty
    amount: float = Field(description="Per share.")
    frequency: str = Field(description="QUARTERLY, MONTHLY, ANNUAL, ...")
    yield_pct: float


class Suggestion(Record):
    """One autosuggest hit."""

    symbol: str
    description: str
    exchange: str = ""
    security_type: str = "EQUITY"


class AutosuggestResult(Record):
    """Autosuggest hits, best first (spec: suggestions)."""

    suggestions: list[Suggestion]


class AnalyticsLeg(Record):
    """One leg of a position to analyse; negative quantity is short."""

    symbol: str = Field(description="An option symbol, or the underlying itself for a stock leg.")
    quantity: float = Field(description="Contracts (or shares for a stock leg); negative for short.")
    price: float | None = Field(
        default=None, description="Entry price per share/contract unit; the current mid if omitted."
    )


class AnalyticsRequest(Record):
    """A position to analyse."""

    symbol: str = Field(description="The underlying.")
    legs: list[AnalyticsLeg] = Field(min_length=1)


class LegAnalytics(Record):
    """Per-leg figures of an analysis."""

    symbol: str
    quantity: float
    option_type: OptionType | None
    strike: float | None
    expiration: IsoDate | None
    price: float = Field(description="The leg's price, US dollars per share of the contract.")
    greeks: Greeks | None


class PnlPoint(Record):
    """Profit or loss of the whole position at one underlying price."""

    underlying_price: float
    pnl_at_expiry: float
    pnl_now: float


class AnalyticsResult(UpstreamRecord):
    """Option position analytics: P&L at expiry and now, breakevens, total Greeks."""

    symbol: str
    underlying_price: float
    net_cost: float = Field(description="Cash paid to open (negative: credit received).")
    legs: list[LegAnalytics]
    pnl_curve: list[PnlPoint]
    breakevens: list[float]
    max_profit: float | None = Field(description="Null when unbounded.")
    max_loss: float | None = Field(description="Null when unbounded.")
    delta: float
    gamma: float
    theta: float
    vega: float


class ScanCriterion(Record):
    """One filter of a screener scan: ``field`` between ``min`` and ``max``."""

    field: str = Field(description="iv, hv, iv_rank, iv_hv_ratio, price, volume, change_pct.")
    min: float | None = None
    max: float | None = None


class ScanDefinition(Record):
    """A volatility screener scan."""

    criteria: list[ScanCriterion] = Field(default_factory=list)
    sort_by: str = "iv_rank"
    descending: bool = True
    limit: int = Field(default=50, ge=1, le=500)


class ScreenerRow(Record):
    """One symbol that passed a scan."""

    symbol: str
    description: str
    price: float = Field(description="Last price, US dollars per share.")
    change_pct: float
    volume: int = Field(
        description="Shares of the stock traded today. On Fidelity the scan's call volume: option contracts traded"
        " today on the stock's calls."
    )
    iv: float = Field(
        description="30-day at-the-money implied volatility, annualised, as a fraction: 0.25 means 25 %."
        + _FIDELITY_SCAN
    )
    hv: float = Field(
        description="Historical volatility of the last 20 daily closes, annualised, as a fraction: 0.25 means 25 %."
        + _FIDELITY_SCAN
    )
    iv_rank: float = Field(
        description="Where today's iv lies between its lowest (0) and highest (100) of the past year." + _FIDELITY_SCAN
    )
    iv_hv_ratio: float = Field(description="iv divided by hv, a plain ratio; 0 when hv is 0.")


class ScreenerResult(UpstreamRecord):
    """Symbols that passed a scan, sorted as asked."""

    rows: list[ScreenerRow]
    total_matches: int = Field(description="Securities that match the screen; the rows returned may be fewer (limit).")


class NoteDetail(UpstreamRecord):
    """A research note (spec record)."""

    note_id: str
    symbol: str
    title: str
    note: str
    channel: str = "ATN"
    create_date: IsoDateTimeOrEmpty
    update_date: IsoDateTimeOrEmpty


class NoteDraft(Record):
    """A note to create."""

    note: str = Field(min_length=1)
    symbol: str = ""
    title: str = ""


class NoteUpdate(Record):
    """Changes to a note."""

    note: str = Field(min_length=1)
    title: str = ""
    old_symbol: str = ""
    new_symbol: str = ""
