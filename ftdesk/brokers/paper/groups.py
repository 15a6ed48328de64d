"""The paper brokerage's capability groups: each holds the parts of the world its calls need.

Every call outside the session group checks the session first, as the real brokerage does, then asks one part.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Protocol

from ftdesk.brokers.paper.alerts import PriceAlerts
from ftdesk.brokers.paper.calendar import holiday_calendar, to_new_york
from ftdesk.brokers.paper.engine.engine import OrderEngine
from ftdesk.brokers.paper.feeds import PaperQuoteFeed
from ftdesk.brokers.paper.ledger.ledger import Ledger
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.readiness import MarketReadiness
from ftdesk.brokers.paper.research import PaperResearch
from ftdesk.brokers.paper.session import PaperSession
from ftdesk.brokers.paper.userdata import UserData
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
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import Conflict
from ftdesk.domain.market import AvailableMarkets, BarWidth, ChartResult, Montage, OptionChain, TimeAndSales
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


class SessionGate(Protocol):
    """What every call outside the session group checks first: a live login (the paper one, or Fidelity's)."""

    def require_active(self) -> None:
        """Raise ``AuthRequired`` or ``SessionExpired`` unless a live session exists."""


class PaperSessionApi:
    """The paper login session: login, logout (which ends quote connections), keep-alive."""

    def __init__(self, session: PaperSession, quote_feed: PaperQuoteFeed) -> None:
        self._session = session
        self._quote_feed = quote_feed

    async def login(self, credentials: Credentials) -> BrokerSession:
        """Log in to the simulated brokerage."""
        return self._session.login(credentials)

    async def logout(self) -> None:
        """End the session and the quote connections that depend on it."""
        self._session.logout()
        self._quote_feed.drop_connections()

    async def keep_alive(self) -> None:
        """Extend the session."""
        self._session.keep_alive()


class PaperAccountsApi:
    """Accounts and portfolio read from the ledger; borrow and short data from the simulated market.

    With ``simulated_lending=False`` (the paper world trades on a broker's real market) the borrow and short
    reads are refused with ``CONFLICT``: the simulation's figures would be read as the real market's.
    """

    def __init__(
        self,
        session: SessionGate,
        ledger: Ledger,
        market: MarketSimulator,
        readiness: MarketReadiness,
        *,
        simulated_lending: bool = True,
    ) -> None:
        self._session = session
        self._ledger = ledger
        self._market = market
        self._ready = readiness
        self._simulated_lending = simulated_lending

    def _lending(self, acct_num: str, what: str) -> MarketSimulator:
        """Return the market the borrow and short figures come from; refuse them on a real market."""
        self._session.require_active()
        self._ledger.account(acct_num)
        if not self._simulated_lending:
            raise Conflict(
                f"{what} are not served while paper trades on Fidelity's market: the paper world has only the"
                " simulation's figures, which are not Fidelity's. Read them with the broker set to Fidelity.",
                details={"reason": "SIMULATED_ONLY", "mode": "paper on Fidelity's market"},
            )
        return self._market

    async def get_accounts(self) -> list[Account]:
        """Return all accounts."""
        self._session.require_active()
        await self._ready.for_account(None)
        return self._ledger.accounts()

    async def get_account(self, acct_num: str) -> Account:
        """Return one account."""
        self._session.require_active()
        await self._ready.for_account(acct_num)
        return self._ledger.account(acct_num)

    async def get_positions(self, acct_num: str) -> list[Position]:
        """Return an account's positions."""
        self._session.require_active()
        await self._ready.for_account(acct_num)
        return self._ledger.positions(acct_num)

    async def get_balances(self, acct_num: str) -> Balance:
        """Return an account's balances."""
        self._session.require_active()
        await self._ready.for_account(acct_num)
        return self._ledger.balances(acct_num)

    async def get_transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return an account's history."""
        self._session.require_active()
        return self._ledger.transactions(acct_num, start, end)

    async def get_options_summary(self, acct_num: str) -> OptionsSummary:
        """Return option positions grouped by underlying."""
        self._session.require_active()
        await self._ready.for_account(acct_num)
        return self._ledger.options_summary(acct_num)

    async def get_closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol."""
        self._session.require_active()
        return self._ledger.closed_positions(acct_num, start, end)

    async def get_loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return securities on loan."""
        self._session.require_active()
        return self._ledger.loaned_securities(acct_num)

    async def get_tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots a sale could draw from."""
        self._session.require_active()
        return self._ledger.tax_lots(acct_num, symbol)

    async def get_account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's capabilities."""
        self._session.require_active()
        return self._ledger.account_features(acct_num)

    async def get_hard_to_borrow(self, acct_num: str, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return borrow rates and availability."""
        return self._lending(acct_num, "Borrow rates").hard_to_borrow(symbols)

    async def get_open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position."""
        self._session.require_active()
        return self._ledger.open_lots(acct_num, symbol)

    async def get_short_insights(self, acct_num: str, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return short-interest data."""
        return self._lending(acct_num, "Short-interest figures").short_insights(symbols)

    async def get_short_insight_series(
        self, acct_num: str, symbol: str, metric: str, start: date | None, end: date | None
    ) -> ShortInsightSeries:
        """Return the history of one short-insight metric."""
        return self._lending(acct_num, "Short-interest figures").short_insight_series(symbol, metric, start, end)

    async def get_accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return margin-interest and dividend accruals."""
        self._session.require_active()
        return self._ledger.accruals(acct_num)

    async def get_cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return cash-sweep accruals."""
        self._session.require_active()
        return self._ledger.cash_accruals(acct_num)

    async def get_closed_lots(
        self, acct_num: str, symbol: str, start: date | None, end: date | None
    ) -> list[ClosedLotDetail]:
        """Return closed lots with realised gain and loss."""
        self._session.require_active()
        return self._ledger.closed_lots(acct_num, symbol, start, end)


class PaperOrdersApi:
    """Orders worked by the order engine."""

    def __init__(self, session: SessionGate, engine: OrderEngine, readiness: MarketReadiness) -> None:
        self._session = session
        self._engine = engine
        self._ready = readiness

    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        """Return open and recent orders."""
        self._session.require_active()
        return self._engine.order_status(acct_num)

    async def get_order_detail(self, conf_num: str, acct_num: str | None) -> OrderDetailResult:
        """Return one order."""
        self._session.require_active()
        return self._engine.order_detail(conf_num, acct_num)

    async def get_staged_orders(self) -> StagedOrderList:
        """Return saved orders."""
        self._session.require_active()
        return self._engine.staged_orders()

    async def save_staged_order(self, draft: StagedOrderDraft) -> StagedOrderResult:
        """Save an order for later."""
        self._session.require_active()
        return self._engine.save_staged(draft)

    async def delete_staged_order(self, stage_id: str) -> StagedOrderResult:
        """Delete a saved order."""
        self._session.require_active()
        return self._engine.delete_staged(stage_id)

    async def preview_equity_order(self, order: EquityOrder) -> OrderPreview:
        """Validate and price an equity order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.preview_equity(order)

    async def place_equity_order(self, order: EquityOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed equity order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.place_equity(order, conf_num)

    async def preview_option_order(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.preview_option(order)

    async def place_option_order(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.place_option(order, conf_num)

    async def preview_multileg_order(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.preview_multileg(order)

    async def place_multileg_order(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.place_multileg(order, conf_num)

    async def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling an order would do."""
        self._session.require_active()
        return self._engine.preview_cancel(conf_num, acct_num, action_code)

    async def cancel_order(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order."""
        self._session.require_active()
        return self._engine.cancel(conf_num, acct_num, action_code)

    async def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate a cancel-and-replace."""
        self._session.require_active()
        await self._ready.for_order(replace, working=True)
        return self._engine.preview_replace(replace)

    async def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace."""
        self._session.require_active()
        await self._ready.for_order(replace, working=True)
        return self._engine.place_replace(replace, conf_num)

    async def preview_conditional_order(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price a conditional order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.preview_conditional(order)

    async def place_conditional_order(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order."""
        self._session.require_active()
        await self._ready.for_order(order)
        return self._engine.place_conditional(order, conf_nums)

    async def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a conditional replace."""
        self._session.require_active()
        await self._ready.for_order(replace, working=True)
        return self._engine.preview_conditional_replace(replace)

    async def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""
        self._session.require_active()
        await self._ready.for_order(replace, working=True)
        return self._engine.place_conditional_replace(replace, conf_nums)

    async def accept_trade_agreement(self, acct_num: str, agreement_id: str) -> TradeAgreementResult:
        """Record acceptance of a trade agreement."""
        self._session.require_active()
        return self._engine.accept_trade_agreement(acct_num, agreement_id)


class PaperMarketDataApi:
    """Market data on request from the simulated market and the exchange calendar."""

    def __init__(self, session: SessionGate, market: MarketSimulator, clock: Clock) -> None:
        self._session = session
        self._market = market
        self._clock = clock

    async def get_option_chain(self, symbol: str) -> OptionChain:
        """Return the option chain."""
        self._session.require_active()
        return self._market.option_chain(symbol)

    async def get_montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes."""
        self._session.require_active()
        return self._market.montage(symbol)

    async def get_chart(
        self, symbol: str, start: date | None, end: date | None, bar_width: BarWidth, extended_hours: bool
    ) -> ChartResult:
        """Return OHLCV bars."""
        self._session.require_active()
        return self._market.chart(symbol, start, end, bar_width, extended_hours)

    async def get_time_and_sales(
        self, symbol: str, max_rows: int, low_price: float | None, high_price: float | None, low_size: int | None
    ) -> TimeAndSales:
        """Return recent trades."""
        self._session.require_active()
        return self._market.time_and_sales(symbol, max_rows, low_price, high_price, low_size)

    async def get_available_markets(self, symbol: str) -> AvailableMarkets:
        """Return routing destinations."""
        self._session.require_active()
        return self._market.available_markets(symbol)

    async def get_holiday_calendar(self, year: int | None) -> list[Holiday]:
        """Return market holidays and early closes of a year (default: this year in New York)."""
        self._session.require_active()
        return holiday_calendar(year if year is not None else to_new_york(self._clock.now()).year)


class PaperResearchApi:
    """Research from the simulated market, and the notebook kept with the user data."""

    def __init__(self, session: SessionGate, research: PaperResearch, userdata: UserData) -> None:
        self._session = session
        self._research = research
        self._userdata = userdata

    async def get_earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return earnings."""
        self._session.require_active()
        return self._research.earnings(symbols)

    async def get_dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return dividends."""
        self._session.require_active()
        return self._research.dividends(symbols)

    async def search_symbols(self, query: str) -> AutosuggestResult:
        """Return matching symbols."""
        self._session.require_active()
        return self._research.search(query)

    async def analyze_position(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Analyse option legs."""
        self._session.require_active()
        return self._research.analyze(request)

    async def run_screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run a volatility scan."""
        self._session.require_active()
        return self._research.screener(scan)

    async def get_notes(self) -> list[NoteDetail]:
        """Return research notes."""
        self._session.require_active()
        return self._userdata.notes()

    async def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a note."""
        self._session.require_active()
        return self._userdata.create_note(draft)

    async def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Update a note."""
        self._session.require_active()
        return self._userdata.update_note(note_id, update)

    async def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a note."""
        self._session.require_active()
        self._userdata.delete_note(note_id, symbol)


class PaperUserDataApi:
    """Watchlists and preferences from the user data; alerts and price triggers from the price alerts."""

    def __init__(self, session: SessionGate, userdata: UserData, alerts: PriceAlerts) -> None:
        self._session = session
        self._userdata = userdata
        self._alerts = alerts

    async def get_watchlists(self) -> list[Watchlist]:
        """Return watchlists."""
        self._session.require_active()
        return self._userdata.watchlists()

    async def save_watchlist(self, draft: WatchlistDraft) -> Watchlist:
        """Create or replace a watchlist."""
        self._session.require_active()
        return self._userdata.save_watchlist(draft)

    async def subscribe_alerts(self) -> AlertSubscription:
        """Activate alert delivery."""
        self._session.require_active()
        return self._alerts.subscribe()

    async def get_price_triggers(self) -> list[PriceTrigger]:
        """Return price alerts."""
        self._session.require_active()
        return self._alerts.triggers()

    async def create_price_trigger(self, draft: PriceTriggerDraft) -> PriceTrigger:
        """Create a price alert."""
        self._session.require_active()
        return self._alerts.create(draft)

    async def delete_price_trigger(self, trigger_id: str) -> None:
        """Delete a price alert."""
        self._session.require_active()
        self._alerts.delete(trigger_id)

    async def get_preferences(self) -> dict[str, str]:
        """Return the preference store."""
        self._session.require_active()
        return self._userdata.preferences()

    async def put_preferences(self, values: dict[str, str]) -> dict[str, str]:
        """Merge preferences."""
        self._session.require_active()
        return self._userdata.put_preferences(values)

    async def delete_preferences(self, keys: Sequence[str] | None) -> dict[str, str]:
        """Delete preferences."""
        self._session.require_active()
        return self._userdata.delete_preferences(keys)
