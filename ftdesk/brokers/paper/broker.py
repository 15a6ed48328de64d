"""The paper brokerage assembled behind the ``Broker`` protocol: its world, its ticks and one object per group.

One SQLite file holds the world (accounts, ledger, orders, notes, watchlists, preferences, alerts);
the simulated market is a pure function of the world's seed and the clock, so it needs no storage.
A tick task drives the world while the process runs, logged in or not, as a real brokerage works
GTC orders while you sleep: it fills and expires orders, posts income and fires price alerts.

The market the world trades on is a collaborator (``ports.TradingMarket``): the simulated one unless the
composition root hands in another (Fidelity's quotes, for paper on Fidelity's market), and the session
every call checks may likewise be another login's (``groups.SessionGate``). Nothing below the broker knows
which it has. The simulated market still serves what only it has (borrow data, research, seeding).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from ftdesk.brokers.paper.alerts import ALERTS_SCHEMA, PriceAlerts
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.brokers.paper.dividends import DividendSchedule
from ftdesk.brokers.paper.engine.engine import OrderEngine
from ftdesk.brokers.paper.engine.model import ENGINE_SCHEMA
from ftdesk.brokers.paper.feeds import EventBus, PaperAccountEventFeed, PaperQuoteFeed
from ftdesk.brokers.paper.groups import (
    PaperAccountsApi,
    PaperMarketDataApi,
    PaperOrdersApi,
    PaperResearchApi,
    PaperSessionApi,
    PaperUserDataApi,
    SessionGate,
)
from ftdesk.brokers.paper.ledger.ledger import LEDGER_SCHEMA, Ledger
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.ports import Instrument, TradingMarket
from ftdesk.brokers.paper.readiness import MarketReadiness
from ftdesk.brokers.paper.research import PaperResearch
from ftdesk.brokers.paper.session import PaperSession
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.universe import Universe
from ftdesk.brokers.paper.userdata import USERDATA_SCHEMA, UserData
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import FtdeskError, InternalError, StorageFull
from ftdesk.domain.market import Quote

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
    """A complete simulated brokerage: the embedded default and the main test double.

    ``session`` exists from construction; the other capability groups hold parts of the world, so they exist
    once ``start()`` has opened it.
    """

    name = "paper"

    def __init__(
        self,
        config: PaperConfig,
        clock: Clock,
        *,
        market: TradingMarket | None = None,
        gate: SessionGate | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self._given_market = market
        self.store = PaperStore(
            config.db_path,
            schemas=[LEDGER_SCHEMA, ENGINE_SCHEMA, USERDATA_SCHEMA, ALERTS_SCHEMA],
            on_damaged=config.on_damaged,
        )
        self._session = PaperSession(config, clock)
        self._gate: SessionGate = gate or self._session
        self.bus = EventBus()
        self.account_events = PaperAccountEventFeed(self.bus)
        self.event_fallback = None  # the paper ledger's event feed never goes down
        self.universe = Universe.load()
        # The market is built in start(), once the world's seed is known; the feed reaches it lazily.
        self._market: MarketSimulator | None = None
        self.quote_feed = PaperQuoteFeed(_LazyMarket(self), clock, config.tick_interval, self._session.require_active)
        self.session = PaperSessionApi(self._session, self.quote_feed)
        self._tick_task: asyncio.Task[None] | None = None
        self._started = False

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def market(self) -> MarketSimulator:
        """Return the simulated market (after ``start()``)."""
        if self._market is None:
            raise InternalError("PaperBroker.start() has not run")
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
        try:
            with self.store.transaction():
                self.store.set_meta(_SEED_KEY, str(seed))
                self.store.set_meta(_BOOTS_KEY, str(boots))
        except StorageFull:  # a start on a full disk: this start's ids must still differ from the last one's
            if stored_seed is None:
                raise
            boots += 1 + secrets.randbelow(1 << 30)
            log.warning("The disk is full: the paper world's start count is not saved this time")
        # Ids must differ across restarts yet repeat for a fresh world with a fixed seed (tests).
        rng = random.Random(f"{seed}:{boots}")
        self._market = MarketSimulator(self.universe, seed, self.clock)
        trading: TradingMarket = self._given_market or self._market
        self.trading_market = trading
        self.ledger = Ledger(
            self.store, trading, self.clock, self.bus.publish, dividends=DividendSchedule(self.universe, seed)
        )
        self.engine = OrderEngine(self.store, self.ledger, trading, self.clock, self.bus.publish, rng)
        self.userdata = UserData(self.store, trading, self.clock, rng)
        self.alerts = PriceAlerts(self.store, trading, self.clock, self.bus.publish, rng)
        # The seeded history is priced on the simulated market, whatever market the world then trades on.
        self.ledger.seed_world(random.Random(seed), self._market)
        self.userdata.seed_world()
        self.store.compact_log()  # seeding wrote the whole world to the write-ahead log: give that space back
        self.readiness = MarketReadiness(trading, self.store, self.engine)
        trading.on_quote(self._on_quote)
        # The capability groups hold this world's parts; a restart builds them again with the new parts.
        session = self._gate
        # Borrow and short figures exist only in the simulation: on another market they would pass for its own.
        self.accounts = PaperAccountsApi(
            session, self.ledger, self._market, self.readiness, simulated_lending=self._given_market is None
        )
        self.orders = PaperOrdersApi(session, self.engine, self.readiness)
        self.market_data = PaperMarketDataApi(session, self._market, self.clock)
        self.research = PaperResearchApi(session, PaperResearch(self._market, self.universe), self.userdata)
        self.user_data = PaperUserDataApi(session, self.userdata, self.alerts)
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

    @property
    def started(self) -> bool:
        """Return whether the world is open (its ledger, engine and alerts exist)."""
        return self._started

    def tick(self) -> int:
        """Advance the world once: work orders, post income, fire alerts; return the fills made."""
        fills = self.engine.process_market()
        self.alerts.check()
        return fills

    async def prepared_tick(self) -> int:
        """Make the working orders' and price alerts' quotes current, then advance the world once; return the fills."""
        try:
            await self.readiness.for_symbols([*self.engine.working_symbols(), *self.alerts.watched_symbols()])
        except FtdeskError as exc:
            # Logged out, or the market cannot be reached now: the tick still expires orders and posts income,
            # and what has no current quote simply does not fill (a market with quotes never gets here).
            log.debug("Paper market quotes not refreshed before the tick: %s", exc)
        return self.tick()

    def _on_quote(self, symbol: str) -> None:
        """Work the orders on a symbol whose quote the market has just pushed."""
        if not self._started:
            return
        try:
            # Inside the quote hub's fan-out: the balances a fill changes are built just after, not in the way
            # of the quote and fill frames (Outbox.deferring).
            with self.ledger.outbox.deferring():
                self.engine.process_symbol(symbol)
        except Exception:  # a bad order must not stop the market's delivery; the next tick retries
            log.exception("Paper orders on %s could not be worked on a new quote", symbol)

    async def _run_ticks(self) -> None:
        while True:
            await self.clock.sleep(self.config.tick_interval)
            try:
                await self.prepared_tick()
            except Exception:  # one bad tick must not stop the world; the next one retries
                log.exception("Paper market tick failed")


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
