"""Accounts and portfolio records (the accounts and portfolio endpoints).

Records named by the spec (AccountFeature, LotDetail, ClosedLotDetail, HardToBorrowPosition,
ShortInsightDetail, AccrualDetail, CashAccrualDetail) keep its field names unchanged; the others
use snake_case names a trader would guess, close to the upstream SDK's where those are known.
"""

from __future__ import annotations

from datetime import date
from enum import StrEnum

from pydantic import Field, computed_field

from ftdesk.domain.base import IsoDate, IsoDateOrEmpty, Record, UpstreamRecord


class AccountType(StrEnum):
    """Legal type of an account."""

    INDIVIDUAL = "INDIVIDUAL"
    JOINT = "JOINT"
    IRA = "IRA"
    ROTH_IRA = "ROTH_IRA"
    TRUST = "TRUST"
    WORKPLACE = "WORKPLACE"
    OTHER = "OTHER"


class SecurityType(StrEnum):
    """Kind of security held in a position."""

    EQUITY = "EQUITY"
    ETF = "ETF"
    OPTION = "OPTION"
    CORE = "CORE"
    MUTUAL_FUND = "MUTUAL_FUND"
    OTHER = "OTHER"


class OptionType(StrEnum):
    """Call or put."""

    CALL = "CALL"
    PUT = "PUT"


class Term(StrEnum):
    """Holding period of a lot for tax purposes."""

    LONG = "LONG"
    SHORT = "SHORT"


OPTION_LEVEL_PATTERN = "^[0-5]$"
"""An options trading level is one digit, 0 to 5, carried as a string everywhere (the spec's type)."""


def option_level_text(level: int) -> str:
    """Return an options trading level as the API carries it: "0" to "5", out-of-range values clamped."""
    return str(min(max(level, 0), 5))


class Account(UpstreamRecord):
    """One brokerage account."""

    acct_num: str
    acct_type: AccountType
    name: str = Field(description="The account's nickname, e.g. 'Individual'.")
    description: str = Field(description="Human-readable kind, e.g. 'Individual Margin Brokerage'.")
    margin_ind: bool
    option_level: str = Field(
        pattern=OPTION_LEVEL_PATTERN,
        description='Options trading level, "0" (none) to "5"; a string, as in the account features (the spec\'s '
        "type). Compare with int(option_level).",
    )
    retirement_ind: bool
    is_default: bool = False
    tradable: bool = True


class OptionContract(Record):
    """The option terms of an option position or quote."""

    underlying: str
    option_type: OptionType
    strike: float
    expiration: date
    multiplier: int = 100


class Position(UpstreamRecord):
    """One holding in one account; quantity is negative for a short position."""

    acct_num: str
    symbol: str
    security_type: SecurityType
    description: str
    cusip: str | None = None
    quantity: float
    last_price: float
    last_price_chg: float
    last_price_chg_pct: float
    prev_close_price: float
    market_value: float
    cost_basis: float
    avg_cost_per_share: float
    total_gain_loss: float
    total_gain_loss_pct: float
    todays_gain_loss: float
    todays_gain_loss_pct: float
    holding_pct: float = Field(description="Share of the account's market value, percent.")
    option: OptionContract | None = None
    unpriced_reason: str | None = Field(
        default=None,
        description="Why the position has no market price (null when it has one): the market gives no quote "
        "for the symbol (paper on Fidelity's market: an option series the simulation invented). Then last_price "
        "and prev_close_price are the average price it was booked at (dollars per share), market_value is at "
        "that price, the gain fields are 0 and not a market figure, and P&L sums (the cockpit's, the daily loss "
        "limit's) leave the position out.",
    )


class Balance(UpstreamRecord):
    """Balances and buying power of one account."""

    acct_num: str
    as_of: str = Field(description="ISO 8601 time the figures were computed.")
    net_worth: float = Field(description="Total account value: cash plus long minus short market value.")
    cash: float = Field(description="Cash held in the account (negative when a margin debit is outstanding).")
    settled_cash: float
    long_market_value: float
    short_market_value: float
    option_market_value: float
    margin_debt: float = Field(description="Amount borrowed on margin (0 for cash accounts).")
    margin_equity: float | None = Field(default=None, description="Equity in a margin account; null for cash accounts.")
    margin_equity_pct: float | None = None
    maintenance_requirement: float = 0.0
    cash_buying_power: float = Field(description="What can be bought without borrowing.")
    margin_buying_power: float | None = Field(
        default=None, description="What can be bought using margin; null for cash accounts."
    )
    non_margin_buying_power: float
    available_to_withdraw: float
    cash_committed_to_open_orders: float = 0.0
    short_proceeds_held: float = 0.0


class Transaction(UpstreamRecord):
    """One entry of an account's history."""

    txn_id: str
    acct_num: str
    date: IsoDateOrEmpty = Field(description='Trade or posting date, ISO YYYY-MM-DD ("" when the broker gave none).')
    settle_date: IsoDate | None = None
    txn_type: str = Field(
        description="BUY, SELL, SELL_SHORT, BUY_TO_COVER, OPTION_BUY, OPTION_SELL, DIVIDEND, INTEREST, DEPOSIT, "
        "FEE, ..."
    )
    description: str
    symbol: str | None = None
    quantity: float | None = None
    price: float | None = Field(
        default=None, description="Price of the trade, US dollars per share; for an option, per share of the contract."
    )
    amount: float = Field(description="Cash effect on the account: positive credit, negative debit.")
    commission: float = 0.0
    fees: float = 0.0


class OptionLegSummary(Record):
    """One option position within an underlying's summary."""

    symbol: str
    description: str
    option_type: OptionType
    strike: float
    expiration: IsoDate
    days_to_expiration: int
    quantity: float
    last_price: float
    market_value: float
    cost_basis: float
    gain_loss: float
    gain_loss_pct: float
    in_the_money: bool


class OptionUnderlyingSummary(Record):
    """The option positions on one underlying, with the strategy they form."""

    underlying: str
    underlying_price: float
    strategy: str = Field(description="SINGLE, VERTICAL, STRADDLE, STRANGLE, CALENDAR, CUSTOM, ...")
    legs: list[OptionLegSummary]
    total_market_value: float
    total_cost_basis: float
    total_gain_loss: float


class OptionsSummary(UpstreamRecord):
    """All option positions of an account grouped by underlying."""

    acct_num: str
    underlyings: list[OptionUnderlyingSummary]
    total_market_value: float
    total_cost_basis: float
    total_gain_loss: float


class ClosedPosition(UpstreamRecord):
    """Realised gain and loss on one symbol over a period."""

    acct_num: str
    symbol: str
    description: str
    quantity: float
    proceeds: float
    cost_basis: float
    gain_loss: float
    gain_loss_pct: float
    short_term_gain_loss: float
    long_term_gain_loss: float
    wash_sale_disallowed: float = 0.0
    last_closed_date: IsoDateOrEmpty


class LoanedSecurity(UpstreamRecord):
    """Shares lent out through fully-paid lending."""

    acct_num: str
    symbol: str
    quantity: float
    rate: float = Field(description="Annual lending rate, percent.")
    market_value: float
    loan_date: IsoDateOrEmpty
    income_mtd: float = 0.0


class AccountFeature(UpstreamRecord):
    """What an account may trade (spec record)."""

    acct_num: str
    acct_type: str
    option_level: str = Field(
        pattern=OPTION_LEVEL_PATTERN,
        description='Options trading level, "0" (none) to "5" (the spec\'s type: a string). The upstream\'s own '
        "value stays in raw.",
    )
    margin_ind: bool
    short_sell_ind: bool
    options_ind: bool
    crypto_ind: bool
    directed_trading_ind: bool
    penny_stock_ind: bool


class LotDetail(UpstreamRecord):
    """One open tax lot (spec record); also the row type of the tax-lots endpoint."""

    lot_id: str
    acquired_date: IsoDateOrEmpty
    quantity: float
    cost_basis: float
    cost_per_share: float
    market_value: float
    gain_loss: float
    gain_loss_pct: float
    term: Term
    symbol: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_long_term(self) -> bool:
        """True when the lot has been held over one year."""
        return self.term is Term.LONG


class ClosedLotDetail(UpstreamRecord):
    """One closed lot with its realised gain or loss (spec record)."""

    lot_id: str
    symbol: str
    quantity: float
    acquired_date: IsoDateOrEmpty
    sold_date: IsoDateOrEmpty
    cost_basis: float
    proceeds: float
    gain_loss: float
    gain_loss_pct: float
    term: Term
    wash_sale_ind: bool

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_long_term(self) -> bool:
        """True when the lot was held over one year."""
        return self.term is Term.LONG

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_wash_sale(self) -> bool:
        """True when the loss was disallowed as a wash sale."""
        return self.wash_sale_ind


class HardToBorrowPosition(UpstreamRecord):
    """Borrow availability and rate of one symbol (spec record)."""

    symbol: str
    cusip: str
    borrow_rate: float
    available_qty: float
    htb_ind: bool
    locate_required_ind: bool
    status: str
    status_desc: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def is_hard_to_borrow(self) -> bool:
        """True when the symbol is hard to borrow."""
        return self.htb_ind

    @computed_field  # type: ignore[prop-decorator]
    @property
    def needs_locate(self) -> bool:
        """True when a locate is required before shorting."""
        return self.locate_required_ind


class ShortInsightDetail(UpstreamRecord):
    """Short-interest figures of one symbol (spec record)."""

    symbol: str
    short_interest: float
    short_interest_ratio: float
    days_to_cover: float
    short_pct_of_float: float
    shares_short: float = Field(description="Shares sold short and not yet covered, as last reported.")
    prior_shares_short: float = Field(description="Shares sold short at the report before the last.")
    settlement_date: IsoDateOrEmpty
    borrow_rate: float
    lending_supply: float


class TimeSeriesPoint(Record):
    """One point of a time series."""

    date: IsoDate
    value: float = Field(
        description="The metric on that date, in its unit: shortInterest and sharesShort shares, daysToCover days,"
        " shortPctOfFloat percent of the float, borrowRate percent a year (as the same fields of a short insight)."
    )


class ShortInsightSeries(UpstreamRecord):
    """History of one short-insight metric for one symbol."""

    symbol: str
    metric: str
    points: list[TimeSeriesPoint]


class AccrualDetail(UpstreamRecord):
    """A margin-interest or dividend accrual (spec record)."""

    acct_num: str
    accrual_type: str
    accrual_amount: float
    accrual_date: IsoDateOrEmpty
    description: str
    symbol: str | None = None
    rate: float = Field(
        description="For MARGIN_INTEREST the annual interest rate, percent (11.825 means 11.825 %); for DIVIDEND the"
        " dividend, US dollars per share. On Fidelity, the upstream's rate as sent (that answer's shape is not yet"
        " confirmed)."
    )


class CashAccrualDetail(UpstreamRecord):
    """A cash-sweep accrual (spec record)."""

    acct_num: str
    cash_accrual_amount: float
    accrual_date: IsoDateOrEmpty
    description: str
