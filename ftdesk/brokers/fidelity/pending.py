"""The Broker methods the Fidelity adapter does not speak yet: orders, market-data REST, research, user data.

Each raises a clear ``BrokerError``. A later module replaces one group at a time: ``FidelityBroker`` lists
this mixin last, so a group module's methods, mixed in before it, take precedence.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from ftdesk.domain.errors import BrokerError
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
from ftdesk.domain.user_data import (
    AlertSubscription,
    Holiday,
    PriceTrigger,
    PriceTriggerDraft,
    Watchlist,
    WatchlistDraft,
)


def not_implemented(group: str) -> BrokerError:
    """Return the error an unimplemented group raises."""
    return BrokerError(f"{group} is not implemented for the Fidelity broker yet", details={"group": group})


class NotYetImplemented:
    """The function groups still to come (see the module docstring)."""

    # --- orders (later: one module each) ---------------------------------------------------------
    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        """Return open and recent orders (of one account, or all)."""
        raise not_implemented("Orders")

    async def get_order_detail(self, conf_num: str, acct_num: str | None) -> OrderDetailResult:
        """Return one order."""
        raise not_implemented("Orders")

    async def get_staged_orders(self) -> StagedOrderList:
        """Return saved orders."""
        raise not_implemented("Orders")

    async def save_staged_order(self, draft: StagedOrderDraft) -> StagedOrderResult:
        """Save an order for later."""
        raise not_implemented("Orders")

    async def delete_staged_order(self, stage_id: str) -> StagedOrderResult:
        """Delete a saved order."""
        raise not_implemented("Orders")

    async def preview_equity_order(self, order: EquityOrder) -> OrderPreview:
        """Validate and price an equity order."""
        raise not_implemented("Orders")

    async def place_equity_order(self, order: EquityOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed equity order."""
        raise not_implemented("Orders")

    async def preview_option_order(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""
        raise not_implemented("Orders")

    async def place_option_order(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""
        raise not_implemented("Orders")

    async def preview_multileg_order(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""
        raise not_implemented("Orders")

    async def place_multileg_order(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""
        raise not_implemented("Orders")

    async def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling this order would do."""
        raise not_implemented("Orders")

    async def cancel_order(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order."""
        raise not_implemented("Orders")

    async def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate an atomic cancel-and-replace."""
        raise not_implemented("Orders")

    async def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace."""
        raise not_implemented("Orders")

    async def preview_conditional_order(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price an OTO/OCO/OTOCO order."""
        raise not_implemented("Orders")

    async def place_conditional_order(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order."""
        raise not_implemented("Orders")

    async def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a replacement of a conditional order"s working legs."""
        raise not_implemented("Orders")

    async def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""
        raise not_implemented("Orders")

    async def accept_trade_agreement(self, acct_num: str, agreement_id: str) -> TradeAgreementResult:
        """Record acceptance of a trade agreement."""
        raise not_implemented("Orders")

    # --- market data (later: one module each) ----------------------------------------------------
    async def get_option_chain(self, symbol: str) -> OptionChain:
        """Return calls and puts for all strikes and expirations."""
        raise not_implemented("Market data (REST)")

    async def get_montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes."""
        raise not_implemented("Market data (REST)")

    async def get_chart(
        self, symbol: str, start: date | None, end: date | None, bar_width: BarWidth, extended_hours: bool
    ) -> ChartResult:
        """Return OHLCV bars."""
        raise not_implemented("Market data (REST)")

    async def get_time_and_sales(
        self, symbol: str, max_rows: int, low_price: float | None, high_price: float | None, low_size: int | None
    ) -> TimeAndSales:
        """Return recent trades, newest first, at most ``max_rows`` (capped at 500)."""
        raise not_implemented("Market data (REST)")

    async def get_available_markets(self, symbol: str) -> AvailableMarkets:
        """Return the routing destinations for a symbol."""
        raise not_implemented("Market data (REST)")

    # --- research (later: one module each) -------------------------------------------------------
    async def get_earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return past and scheduled earnings."""
        raise not_implemented("Research")

    async def get_dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return past and declared dividends."""
        raise not_implemented("Research")

    async def search_symbols(self, query: str) -> AutosuggestResult:
        """Return symbols matching a prefix or description, best first."""
        raise not_implemented("Research")

    async def analyze_position(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Return P&L, breakevens and Greeks of a set of legs."""
        raise not_implemented("Research")

    async def run_screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run a volatility scan over the universe."""
        raise not_implemented("Research")

    async def get_notes(self) -> list[NoteDetail]:
        """Return research notes."""
        raise not_implemented("Research")

    async def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a research note."""
        raise not_implemented("Research")

    async def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Update a research note."""
        raise not_implemented("Research")

    async def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a research note."""
        raise not_implemented("Research")

    # --- watchlists, preferences, alerts, reference (later: one module each) ---------------------
    async def get_watchlists(self) -> list[Watchlist]:
        """Return watchlists."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def save_watchlist(self, draft: WatchlistDraft) -> Watchlist:
        """Create or replace a watchlist."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def subscribe_alerts(self) -> AlertSubscription:
        """Activate alert delivery on the account-event feed."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def get_price_triggers(self) -> list[PriceTrigger]:
        """Return price alerts."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def create_price_trigger(self, draft: PriceTriggerDraft) -> PriceTrigger:
        """Create a price alert."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def delete_price_trigger(self, trigger_id: str) -> None:
        """Delete a price alert."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def get_preferences(self) -> dict[str, str]:
        """Return the key/value preference store."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def put_preferences(self, values: dict[str, str]) -> dict[str, str]:
        """Merge values into the preference store and return the whole store."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def delete_preferences(self, keys: Sequence[str] | None) -> dict[str, str]:
        """Delete some keys (or all when None) and return what remains."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")

    async def get_holiday_calendar(self, year: int | None) -> list[Holiday]:
        """Return market holidays and early closes."""
        raise not_implemented("User data (watchlists, preferences, alerts, holidays)")
