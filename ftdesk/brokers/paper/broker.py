"""The paper brokerage assembled behind the ``Broker`` protocol.

One SQLite file holds the world (accounts, ledger, orders, notes, watchlists, preferences, alerts);
the simulated market is a pure function of the world's seed and the clock, so it needs no storage.
A tick task drives the world while the process runs, logged in or not, as a real brokerage works
GTC orders while you sleep: it fills and expires orders, posts income and fires price alerts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from pathlib import Path

from ftdesk.brokers.paper.alerts import ALERTS_SCHEMA, PriceAlerts
from ftdesk.brokers.paper.calendar import holiday_calendar, to_new_york
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.brokers.paper.dividends import DividendSchedule
from ftdesk.brokers.paper.engine import OrderEngine
from ftdesk.brokers.paper.engine_model import ENGINE_SCHEMA
from ftdesk.brokers.paper.feeds import EventBus, PaperAccountEventFeed, PaperQuoteFeed
from ftdesk.brokers.paper.ledger import LEDGER_SCHEMA, Ledger
from ftdesk.brokers.paper.market import MarketSimulator
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.brokers.paper.research import PaperResearch
from ftdesk.brokers.paper.session import PaperSession
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.universe import Universe
from ftdesk.brokers.paper.userdata import USERDATA_SCHEMA, UserData
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
from ftdesk.domain.market import AvailableMarkets, BarWidth, ChartResult, Montage, OptionChain, Quote, TimeAndSales
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

log = logging.getLogger(__name__)

DB_FILE_NAME = "paper.sqlite3"
_SEED_KEY = "market_seed"
_BOOTS_KEY = "boot_count"


def paper_db_path(data_dir: Path) -> Path:
    """Return where the paper world of a data dir lives."""
    return data_dir / "paper" / DB_FILE_NAME


def reset_world(db_path: Path) -> list[Path]:
    """Delete a paper world (database and its WAL files); return the files removed."""
    removed = []
    for suffix in ("", "-wal", "-shm"):
        path = db_path.with_name(db_path.name + suffix)
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed


class PaperBroker:
    """A complete simulated brokerage: the embedded default and the main test double."""

    name = "paper"

    def __init__(self, config: PaperConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.store = PaperStore(config.db_path, schemas=[LEDGER_SCHEMA, ENGINE_SCHEMA, USERDATA_SCHEMA, ALERTS_SCHEMA])
        self.session = PaperSession(config, clock)
        self.bus = EventBus()
        self.account_events = PaperAccountEventFeed(self.bus)
        self.universe = Universe.load()
        # The market is built in start(), once the world's seed is known; the feed reaches it lazily.
        self._market: MarketSimulator | None = None
        self.quote_feed = PaperQuoteFeed(_LazyMarket(self), clock, config.tick_interval, self.session.require_active)
        self._tick_task: asyncio.Task[None] | None = None
        self._started = False

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def market(self) -> MarketSimulator:
        """Return the simulated market (after ``start()``)."""
        if self._market is None:
            raise RuntimeError("PaperBroker.start() has not run")
        return self._market

    async def start(self) -> None:
        """Open (or create and seed) the world and start the market ticks."""
        if self._started:
            return
        # Opening, migrating and seeding touch the disk: keep them off the event loop.
        await asyncio.to_thread(self._open_world)
        self._tick_task = asyncio.get_running_loop().create_task(self._run_ticks(), name="paper-ticks")
        self._started = True

    def _open_world(self) -> None:
        self.store.open()
        stored_seed = self.store.get_meta(_SEED_KEY)
        if self.config.seed is not None:
            seed = self.config.seed
        elif stored_seed is not None:
            seed = int(stored_seed)
        else:
            seed = secrets.randbits(62)
        boots = int(self.store.get_meta(_BOOTS_KEY) or 0) + 1
        with self.store.transaction():
            self.store.set_meta(_SEED_KEY, str(seed))
            self.store.set_meta(_BOOTS_KEY, str(boots))
        # Ids must differ across restarts yet repeat for a fresh world with a fixed seed (tests).
        rng = random.Random(f"{seed}:{boots}")
        self._market = MarketSimulator(self.universe, seed, self.clock)
        self.research = PaperResearch(self._market, self.universe)
        self.ledger = Ledger(
            self.store, self._market, self.clock, self.bus.publish, dividends=DividendSchedule(self.universe, seed)
        )
        self.engine = OrderEngine(self.store, self.ledger, self._market, self.clock, self.bus.publish, rng)
        self.userdata = UserData(self.store, self._market, self.clock, rng)
        self.alerts = PriceAlerts(self.store, self._market, self.clock, self.bus.publish, rng)
        self.ledger.seed_world(random.Random(seed))
        self.userdata.seed_world()
        log.info("Paper world %s open (seed %d, start #%d)", self.config.db_path, seed, boots)

    async def close(self) -> None:
        """Stop the ticks, end open feed connections and close the world; idempotent."""
        if self._tick_task is not None:
            self._tick_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tick_task
            self._tick_task = None
        self.quote_feed.drop_connections()
        self.store.close()
        self._started = False

    def tick(self) -> int:
        """Advance the world once: work orders, post income, fire alerts; return the fills made."""
        fills = self.engine.process_market()
        self.alerts.check()
        return fills

    async def _run_ticks(self) -> None:
        while True:
            await self.clock.sleep(self.config.tick_interval)
            try:
                self.tick()
            except Exception:  # one bad tick must not stop the world; the next one retries
                log.exception("Paper market tick failed")

    # --- session ----------------------------------------------------------------------------

    async def login(self, credentials: Credentials) -> BrokerSession:
        """Log in to the simulated brokerage."""
        return self.session.login(credentials)

    async def logout(self) -> None:
        """End the session and the quote connections that depend on it."""
        self.session.logout()
        self.quote_feed.drop_connections()

    async def keep_alive(self) -> None:
        """Extend the session."""
        self.session.keep_alive()

    def _active(self) -> None:
        self.session.require_active()

    # --- accounts and portfolio -------------------------------------------------------------

    async def get_accounts(self) -> list[Account]:
        """Return all accounts."""
        self._active()
        return self.ledger.accounts()

    async def get_account(self, acct_num: str) -> Account:
        """Return one account."""
        self._active()
        return self.ledger.account(acct_num)

    async def get_positions(self, acct_num: str) -> list[Position]:
        """Return an account's positions."""
        self._active()
        return self.ledger.positions(acct_num)

    async def get_balances(self, acct_num: str) -> Balance:
        """Return an account's balances."""
        self._active()
        return self.ledger.balances(acct_num)

    async def get_transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return an account's history."""
        self._active()
        return self.ledger.transactions(acct_num, start, end)

    async def get_options_summary(self, acct_num: str) -> OptionsSummary:
        """Return option positions grouped by underlying."""
        self._active()
        return self.ledger.options_summary(acct_num)

    async def get_closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol."""
        self._active()
        return self.ledger.closed_positions(acct_num, start, end)

    async def get_loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return securities on loan."""
        self._active()
        return self.ledger.loaned_securities(acct_num)

    async def get_tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots a sale could draw from."""
        self._active()
        return self.ledger.tax_lots(acct_num, symbol)

    async def get_account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's capabilities."""
        self._active()
        return self.ledger.account_features(acct_num)

    async def get_hard_to_borrow(self, acct_num: str, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return borrow rates and availability."""
        self._active()
        self.ledger.account(acct_num)
        return self.market.hard_to_borrow(symbols)

    async def get_open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position."""
        self._active()
        return self.ledger.open_lots(acct_num, symbol)

    async def get_short_insights(self, acct_num: str, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return short-interest data."""
        self._active()
        self.ledger.account(acct_num)
        return self.market.short_insights(symbols)

    async def get_short_insight_series(
        self, acct_num: str, symbol: str, metric: str, start: date | None, end: date | None
    ) -> ShortInsightSeries:
        """Return the history of one short-insight metric."""
        self._active()
        self.ledger.account(acct_num)
        return self.market.short_insight_series(symbol, metric, start, end)

    async def get_accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return margin-interest and dividend accruals."""
        self._active()
        return self.ledger.accruals(acct_num)

    async def get_cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return cash-sweep accruals."""
        self._active()
        return self.ledger.cash_accruals(acct_num)

    async def get_closed_lots(
        self, acct_num: str, symbol: str, start: date | None, end: date | None
    ) -> list[ClosedLotDetail]:
        """Return closed lots with realised gain and loss."""
        self._active()
        return self.ledger.closed_lots(acct_num, symbol, start, end)

    # --- orders -----------------------------------------------------------------------------

    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        """Return open and recent orders."""
        self._active()
        return self.engine.order_status(acct_num)

    async def get_order_detail(self, conf_num: str, acct_num: str | None) -> OrderDetailResult:
        """Return one order."""
        self._active()
        return self.engine.order_detail(conf_num, acct_num)

    async def get_staged_orders(self) -> StagedOrderList:
        """Return saved orders."""
        self._active()
        return self.engine.staged_orders()

    async def save_staged_order(self, draft: StagedOrderDraft) -> StagedOrderResult:
        """Save an order for later."""
        self._active()
        return self.engine.save_staged(draft)

    async def delete_staged_order(self, stage_id: str) -> StagedOrderResult:
        """Delete a saved order."""
        self._active()
        return self.engine.delete_staged(stage_id)

    async def preview_equity_order(self, order: EquityOrder) -> OrderPreview:
        """Validate and price an equity order."""
        self._active()
        return self.engine.preview_equity(order)

    async def place_equity_order(self, order: EquityOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed equity order."""
        self._active()
        return self.engine.place_equity(order, conf_num)

    async def preview_option_order(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""
        self._active()
        return self.engine.preview_option(order)

    async def place_option_order(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""
        self._active()
        return self.engine.place_option(order, conf_num)

    async def preview_multileg_order(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""
        self._active()
        return self.engine.preview_multileg(order)

    async def place_multileg_order(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""
        self._active()
        return self.engine.place_multileg(order, conf_num)

    async def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling an order would do."""
        self._active()
        return self.engine.preview_cancel(conf_num, acct_num, action_code)

    async def cancel_order(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order."""
        self._active()
        return self.engine.cancel(conf_num, acct_num, action_code)

    async def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate a cancel-and-replace."""
        self._active()
        return self.engine.preview_replace(replace)

    async def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace."""
        self._active()
        return self.engine.place_replace(replace, conf_num)

    async def preview_conditional_order(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price a conditional order."""
        self._active()
        return self.engine.preview_conditional(order)

    async def place_conditional_order(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order."""
        self._active()
        return self.engine.place_conditional(order, conf_nums)

    async def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a conditional replace."""
        self._active()
        return self.engine.preview_conditional_replace(replace)

    async def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""
        self._active()
        return self.engine.place_conditional_replace(replace, conf_nums)

    async def accept_trade_agreement(self, acct_num: str, agreement_id: str) -> TradeAgreementResult:
        """Record acceptance of a trade agreement."""
        self._active()
        return self.engine.accept_trade_agreement(acct_num, agreement_id)

    # --- market data ------------------------------------------------------------------------

    async def get_option_chain(self, symbol: str) -> OptionChain:
        """Return the option chain."""
        self._active()
        return self.market.option_chain(symbol)

    async def get_montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes."""
        self._active()
        return self.market.montage(symbol)

    async def get_chart(
        self, symbol: str, start: date | None, end: date | None, bar_width: BarWidth, extended_hours: bool
    ) -> ChartResult:
        """Return OHLCV bars."""
        self._active()
        return self.market.chart(symbol, start, end, bar_width, extended_hours)

    async def get_time_and_sales(
        self, symbol: str, max_rows: int, low_price: float | None, high_price: float | None, low_size: int | None
    ) -> TimeAndSales:
        """Return recent trades."""
        self._active()
        return self.market.time_and_sales(symbol, max_rows, low_price, high_price, low_size)

    async def get_available_markets(self, symbol: str) -> AvailableMarkets:
        """Return routing destinations."""
        self._active()
        return self.market.available_markets(symbol)

    # --- research ---------------------------------------------------------------------------

    async def get_earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return earnings."""
        self._active()
        return self.research.earnings(symbols)

    async def get_dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return dividends."""
        self._active()
        return self.research.dividends(symbols)

    async def search_symbols(self, query: str) -> AutosuggestResult:
        """Return matching symbols."""
        self._active()
        return self.research.search(query)

    async def analyze_position(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Analyse option legs."""
        self._active()
        return self.research.analyze(request)

    async def run_screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run a volatility scan."""
        self._active()
        return self.research.screener(scan)

    async def get_notes(self) -> list[NoteDetail]:
        """Return research notes."""
        self._active()
        return self.userdata.notes()

    async def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a note."""
        self._active()
        return self.userdata.create_note(draft)

    async def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Update a note."""
        self._active()
        return self.userdata.update_note(note_id, update)

    async def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a note."""
        self._active()
        self.userdata.delete_note(note_id, symbol)

    # --- watchlists, preferences, alerts, reference -----------------------------------------

    async def get_watchlists(self) -> list[Watchlist]:
        """Return watchlists."""
        self._active()
        return self.userdata.watchlists()

    async def save_watchlist(self, draft: WatchlistDraft) -> Watchlist:
        """Create or replace a watchlist."""
        self._active()
        return self.userdata.save_watchlist(draft)

    async def subscribe_alerts(self) -> AlertSubscription:
        """Activate alert delivery."""
        self._active()
        return self.alerts.subscribe()

    async def get_price_triggers(self) -> list[PriceTrigger]:
        """Return price alerts."""
        self._active()
        return self.alerts.triggers()

    async def create_price_trigger(self, draft: PriceTriggerDraft) -> PriceTrigger:
        """Create a price alert."""
        self._active()
        return self.alerts.create(draft)

    async def delete_price_trigger(self, trigger_id: str) -> None:
        """Delete a price alert."""
        self._active()
        self.alerts.delete(trigger_id)

    async def get_preferences(self) -> dict[str, str]:
        """Return the preference store."""
        self._active()
        return self.userdata.preferences()

    async def put_preferences(self, values: dict[str, str]) -> dict[str, str]:
        """Merge preferences."""
        self._active()
        return self.userdata.put_preferences(values)

    async def delete_preferences(self, keys: Sequence[str] | None) -> dict[str, str]:
        """Delete preferences."""
        self._active()
        return self.userdata.delete_preferences(keys)

    async def get_holiday_calendar(self, year: int | None) -> list[Holiday]:
        """Return market holidays and early closes of a year (default: this year in New York)."""
        self._active()
        return holiday_calendar(year if year is not None else to_new_york(self.clock.now()).year)


class _LazyMarket:
    """The broker's market as a ``MarketView`` for the quote feed, which exists before ``start()`` seeds it."""

    def __init__(self, broker: PaperBroker) -> None:
        self._broker = broker

    def now(self) -> datetime:
        """Return the market time."""
        return self._broker.market.now()

    def instrument(self, symbol: str) -> Instrument:
        """Return an instrument."""
        return self._broker.market.instrument(symbol)

    def quote(self, symbol: str) -> Quote:
        """Return a quote."""
        return self._broker.market.quote(symbol)

    def warm_up(self, symbol: str) -> Iterator[None]:
        """Prepare a symbol's first quote in small steps (see ``MarketSimulator.warm_up``)."""
        return self._broker.market.warm_up(symbol)
