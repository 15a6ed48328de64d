"""The capability groups of a brokerage: one Protocol per function group of the spec.

Each method is async, returns domain records and raises the domain errors of ``ftdesk.domain.errors``:
``SessionExpired`` when the upstream session lapsed, ``AuthRequired`` before login, ``NotFound`` for unknown
accounts/orders/symbols, ``OrderRejected`` for refused orders and ``BrokerError`` for anything else the upstream
said no to. A ``Broker`` (``ftdesk.brokers.base``) exposes one object per group; a route depends only on the
group it uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Protocol, runtime_checkable

from ftdesk.domain.accounts import (
    Account,
    AccountFeature,
    AccrualDetail,
    Balance,
    CashAccrualDetail,
    ClosedLotDetail,
    ClosedPosition,
    HardToBorrowPosition,
    LoanedSecurity,
    LotDetail,
    OptionsSummary,
    Position,
    ShortInsightDetail,
    ShortInsightSeries,
    Transaction,
)
from ftdesk.domain.market import (
    AvailableMarkets,
    BarWidth,
    ChartResult,
    Montage,
    OptionChain,
    TimeAndSales,
)
from ftdesk.domain.orders import (
    CancelPreview,
    CancelResult,
    ConditionalOrder,
    ConditionalPreview,
    ConditionalReplace,
    EquityOrder,
    MultiLegOptionOrder,
    OptionOrder,
    Order,
    OrderDetailResult,
    OrderPlacement,
    OrderPreview,
    ReplaceOrder,
    StagedOrderDraft,
    StagedOrderList,
    StagedOrderResult,
    TradeAgreementResult,
)
from ftdesk.domain.research import (
    AnalyticsRequest,
    AnalyticsResult,
    AutosuggestResult,
    DividendEvent,
    EarningsEvent,
    NoteDetail,
    NoteDraft,
    NoteUpdate,
    ScanDefinition,
    ScreenerResult,
)
from ftdesk.domain.session import BrokerSession, Credentials
from ftdesk.domain.user_data import (
    AlertSubscription,
    Holiday,
    PriceTrigger,
    PriceTriggerDraft,
    Watchlist,
    WatchlistDraft,
)


@runtime_checkable
class SessionApi(Protocol):
    """Logs in and keeps the upstream session alive (``broker.session``)."""

    async def login(self, credentials: Credentials) -> BrokerSession:
        """Log in; raise ``LoginFailed`` or ``TotpRequired``."""

    async def logout(self) -> None:
        """End the upstream session; idempotent."""

    async def keep_alive(self) -> None:
        """Extend the upstream session; raise ``SessionExpired`` when it has lapsed."""


@runtime_checkable
class AccountsApi(Protocol):
    """Accounts and portfolio: balances, positions, history, lots, borrow and accruals (``broker.accounts``)."""

    async def get_accounts(self) -> list[Account]:
        """Return all accounts."""

    async def get_account(self, acct_num: str) -> Account:
        """Return one account."""

    async def get_positions(self, acct_num: str) -> list[Position]:
        """Return an account's positions."""

    async def get_balances(self, acct_num: str) -> Balance:
        """Return an account's balances."""

    async def get_transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return an account's history between two dates (inclusive), newest first."""

    async def get_options_summary(self, acct_num: str) -> OptionsSummary:
        """Return an account's option positions grouped by underlying."""

    async def get_closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol between two dates."""

    async def get_loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return securities on loan."""

    async def get_tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots that a sale of this symbol could draw from."""

    async def get_account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's trading capabilities."""

    async def get_hard_to_borrow(self, acct_num: str, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return borrow rates and availability."""

    async def get_open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position."""

    async def get_short_insights(self, acct_num: str, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return short-interest data."""

    async def get_short_insight_series(
        self, acct_num: str, symbol: str, metric: str, start: date | None, end: date | None
    ) -> ShortInsightSeries:
        """Return the history of one short-insight metric."""

    async def get_accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return margin-interest and dividend accruals."""

    async def get_cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return cash-sweep accruals."""

    async def get_closed_lots(
        self, acct_num: str, symbol: str, start: date | None, end: date | None
    ) -> list[ClosedLotDetail]:
        """Return closed lots with realised gain and loss."""


@runtime_checkable
class OrdersApi(Protocol):
    """Orders: status, staged orders, preview and place, cancel, replace, conditional orders (``broker.orders``)."""

    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        """Return open and recent orders (of one account, or all)."""

    async def get_order_detail(self, conf_num: str, acct_num: str | None) -> OrderDetailResult:
        """Return one order."""

    async def get_staged_orders(self) -> StagedOrderList:
        """Return saved orders."""

    async def save_staged_order(self, draft: StagedOrderDraft) -> StagedOrderResult:
        """Save an order for later."""

    async def delete_staged_order(self, stage_id: str) -> StagedOrderResult:
        """Delete a saved order."""

    async def preview_equity_order(self, order: EquityOrder) -> OrderPreview:
        """Validate and price an equity order."""

    async def place_equity_order(self, order: EquityOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed equity order."""

    async def preview_option_order(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""

    async def place_option_order(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""

    async def preview_multileg_order(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""

    async def place_multileg_order(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""

    async def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling this order would do."""

    async def cancel_order(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order."""

    async def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate an atomic cancel-and-replace."""

    async def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace."""

    async def preview_conditional_order(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price an OTO/OCO/OTOCO order."""

    async def place_conditional_order(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order."""

    async def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a replacement of a conditional order's working legs."""

    async def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""

    async def accept_trade_agreement(self, acct_num: str, agreement_id: str) -> TradeAgreementResult:
        """Record acceptance of a trade agreement."""


@runtime_checkable
class MarketDataApi(Protocol):
    """Market data on request: chains, montage, charts, time and sales, markets, holidays (``broker.market_data``)."""

    async def get_option_chain(self, symbol: str) -> OptionChain:
        """Return calls and puts for all strikes and expirations."""

    async def get_montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes."""

    async def get_chart(
        self, symbol: str, start: date | None, end: date | None, bar_width: BarWidth, extended_hours: bool
    ) -> ChartResult:
        """Return OHLCV bars."""

    async def get_time_and_sales(
        self, symbol: str, max_rows: int, low_price: float | None, high_price: float | None, low_size: int | None
    ) -> TimeAndSales:
        """Return recent trades, newest first, at most ``max_rows`` (capped at 500)."""

    async def get_available_markets(self, symbol: str) -> AvailableMarkets:
        """Return the routing destinations for a symbol."""

    async def get_holiday_calendar(self, year: int | None) -> list[Holiday]:
        """Return market holidays and early closes."""


@runtime_checkable
class ResearchApi(Protocol):
    """Research: earnings, dividends, symbol search, analytics, screener, notes (``broker.research``)."""

    async def get_earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return past and scheduled earnings."""

    async def get_dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return past and declared dividends."""

    async def search_symbols(self, query: str) -> AutosuggestResult:
        """Return symbols matching a prefix or description, best first."""

    async def analyze_position(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Return P&L, breakevens and Greeks of a set of legs."""

    async def run_screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run a volatility scan over the universe."""

    async def get_notes(self) -> list[NoteDetail]:
        """Return research notes."""

    async def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a research note."""

    async def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Update a research note."""

    async def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a research note."""


@runtime_checkable
class UserDataApi(Protocol):
    """The trader's own data: watchlists, alerts, price triggers, preferences (``broker.user_data``)."""

    async def get_watchlists(self) -> list[Watchlist]:
        """Return watchlists."""

    async def save_watchlist(self, draft: WatchlistDraft) -> Watchlist:
        """Create or replace a watchlist."""

    async def subscribe_alerts(self) -> AlertSubscription:
        """Activate alert delivery on the account-event feed."""

    async def get_price_triggers(self) -> list[PriceTrigger]:
        """Return price alerts."""

    async def create_price_trigger(self, draft: PriceTriggerDraft) -> PriceTrigger:
        """Create a price alert."""

    async def delete_price_trigger(self, trigger_id: str) -> None:
        """Delete a price alert."""

    async def get_preferences(self) -> dict[str, str]:
        """Return the key/value preference store."""

    async def put_preferences(self, values: dict[str, str]) -> dict[str, str]:
        """Merge values into the preference store and return the whole store."""

    async def delete_preferences(self, keys: Sequence[str] | None) -> dict[str, str]:
        """Delete some keys (or all when None) and return what remains."""
