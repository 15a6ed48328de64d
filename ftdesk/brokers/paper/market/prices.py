"""Where the simulated market's prices come from: symbol lookup, the instant asked, cached paths and snapshots."""

from __future__ import annotations

import bisect
import math
from collections import OrderedDict
from collections.abc import Generator, Hashable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Generic, TypeVar

from ftdesk.brokers.paper.calendar import new_york_midnight, nyse_closures
from ftdesk.brokers.paper.ledger.money import trade_date
from ftdesk.brokers.paper.market.paths import (
    EPOCH,
    DailyPath,
    Intraday,
    Tape,
    build_tape,
    intraday_steps,
    round_price,
    tick,
)
from ftdesk.brokers.paper.options import is_option_symbol
from ftdesk.brokers.paper.universe import Security, Universe
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, NotFound, ValidationFailed
from ftdesk.domain.market import Quote

_DAY_CACHE_SIZE = 256  # about 80 kB each; covers 100+ subscribed symbols plus chart history
_TAPE_CACHE_SIZE = 8

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class Lru(Generic[_K, _V]):
    """A small least-recently-used cache."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._data: OrderedDict[_K, _V] = OrderedDict()

    def get(self, key: _K) -> _V | None:
        """Return the value cached under ``key`` (now the most recently used), or None."""
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: _K, value: _V) -> None:
        """Cache ``value`` under ``key``, dropping the least recently used entry past capacity."""
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._capacity:
            self._data.popitem(last=False)


@dataclass
class Underlying:
    """Per-symbol simulation state."""

    security: Security
    path: DailyPath
    tapes: Lru[tuple[int, int], Tape]


@dataclass(frozen=True)
class Snapshot:
    """The state of one stock or ETF at one second."""

    ts: int
    day: int
    last: float
    last_size: int
    bid: float
    ask: float
    bid_size: int
    ask_size: int
    open: float
    high: float
    low: float
    prev_close: float
    volume: int
    day_volume: int
    """The whole day's volume (known to the simulator, used to pace option volumes)."""


def normalize(symbol: str) -> str:
    """Return ``symbol`` trimmed and upper-cased; raise ``NotFound`` if it is empty."""
    text = symbol.strip().upper() if isinstance(symbol, str) else ""
    if not text:
        raise NotFound("Empty symbol", details={"symbol": symbol})
    return text


def iso(ts: int) -> str:
    """Return an epoch second as an ISO 8601 UTC time."""
    return datetime.fromtimestamp(ts, UTC).isoformat()


class PriceSource:
    """The per-world state every part of the simulated market reads prices from: one per simulator."""

    def __init__(self, universe: Universe, seed: int, clock: Clock) -> None:
        self.universe = universe
        self.seed = seed
        self._clock = clock
        self._underlyings: dict[str, Underlying] = {}
        self._days: Lru[tuple[str, int], Intraday] = Lru(_DAY_CACHE_SIZE)
        self._day_starts: dict[int, int] = {}
        self._located: tuple[int, int, int] = (0, 0, -1)
        self._closures: dict[int, frozenset[date]] = {}

    # --- time ----------------------------------------------------------------------------------

    def now(self) -> datetime:
        """Return the market's current UTC time."""
        return self._clock.now()

    def now_ts(self) -> int:
        """Return the current whole epoch second."""
        now = self._clock.now()
        if now.tzinfo is None:
            raise BrokerError("The market clock must return timezone-aware times")
        return math.floor(now.timestamp())

    def day_date(self, day: int) -> date:
        """Return the New York date of day index ``day``."""
        return EPOCH + timedelta(days=day)

    def day_start(self, day: int) -> int:
        """Return the epoch second of New York midnight starting day index ``day``."""
        start = self._day_starts.get(day)
        if start is None:
            start = int(new_york_midnight(self.day_date(day)).timestamp())
            self._day_starts[day] = start
        return start

    def locate(self, ts: int) -> tuple[int, int, int]:
        """Return (day index, elapsed minute of the day, second of the minute) of an epoch second."""
        start, end, day = self._located
        if not start <= ts < end:
            local = trade_date(datetime.fromtimestamp(ts, UTC))
            day = (local - EPOCH).days
            if day < 0:
                raise BrokerError(f"The simulated market starts on {EPOCH.isoformat()}; nothing happened before")
            start, end = self.day_start(day), self.day_start(day + 1)
            self._located = (start, end, day)
        minute, second = divmod(ts - start, 60)
        return day, minute, second

    def closed_days(self, year: int) -> frozenset[date]:
        """Return the exchange holidays of ``year``."""
        days = self._closures.get(year)
        if days is None:
            days = frozenset(nyse_closures(year))
            self._closures[year] = days
        return days

    # --- symbols -------------------------------------------------------------------------------

    def underlying(self, security: Security) -> Underlying:
        """Return the simulation state of a stock or ETF, creating it on first use."""
        under = self._underlyings.get(security.symbol)
        if under is None:
            under = Underlying(security, DailyPath(self.seed, security), Lru(_TAPE_CACHE_SIZE))
            self._underlyings[security.symbol] = under
        return under

    def equity(self, symbol: str, *, purpose: str) -> Underlying:
        """Return the state of a stock or ETF; an option symbol is a ``ValidationFailed`` naming ``purpose``."""
        security = self.universe.get(symbol)
        if security is None:
            if is_option_symbol(symbol):
                raise ValidationFailed.for_field(
                    "symbol", f"{purpose} are available for stocks and ETFs, not options ({symbol})", location="path"
                )
            raise NotFound(f"Unknown symbol {symbol}", details={"symbol": symbol})
        return self.underlying(security)

    def optionable(self, symbol: str) -> Underlying:
        """Return the state of a stock or ETF with listed options; raise ``NotFound`` otherwise."""
        under = self.equity(symbol, purpose="Option chains")
        if not under.security.optionable:
            raise NotFound(f"{under.security.symbol} has no listed options", details={"symbol": symbol})
        return under

    # --- paths ---------------------------------------------------------------------------------

    def intraday(self, under: Underlying, day: int) -> Intraday:
        """Return the minutes of one symbol's day (cached)."""
        key = (under.security.symbol, day)
        cached = self._days.get(key)
        if cached is None:
            steps = self._intraday_steps(under, day)
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    cached = done.value
                    break
            self._days.put(key, cached)
        return cached

    def warm_up(self, security: Security) -> Generator[None, None, None]:
        """Compute what the first quote of a stock or ETF needs, yielding after each step of about a millisecond."""
        under = self.underlying(security)
        day = self.locate(self.now_ts())[0]
        path = under.path
        while len(path.close) <= day:
            path.ensure(len(path.close))  # walks exactly one block
            yield
        key = (security.symbol, day)
        if self._days.get(key) is None:
            built = yield from self._intraday_steps(under, day)
            self._days.put(key, built)

    def _intraday_steps(self, under: Underlying, day: int) -> Generator[None, None, Intraday]:
        start, end = self.day_start(day), self.day_start(day + 1)
        return intraday_steps(self.seed, under.security, under.path, day, start, end)

    def tape(self, under: Underlying, day: Intraday, day_index: int, minute: int, *, cache: bool = True) -> Tape:
        """Return the trades of one minute (kept in the symbol's small tape cache unless ``cache`` is false)."""
        key = (day_index, minute)
        tape = under.tapes.get(key)
        if tape is None:
            tape = build_tape(self.seed, under.security, day, day_index, minute)
            if cache:
                under.tapes.put(key, tape)
        return tape

    # --- equity prices -------------------------------------------------------------------------

    def snapshot(self, under: Underlying, ts: int) -> Snapshot:
        """Return the state of a stock or ETF at epoch second ``ts``."""
        day_index, minute, second = self.locate(ts)
        day = self.intraday(under, day_index)
        tape = self.tape(under, day, day_index, minute)
        k = bisect.bisect_right(tape.seconds, second) - 1
        last = tape.prices[k]
        high, low = tape.run_high[k], tape.run_low[k]
        if minute > 0:
            high, low = max(high, day.run_high[minute - 1]), min(low, day.run_low[minute - 1])
        increment = tick(last)
        security = under.security
        # Spreads widen with volatility and narrow with liquidity: a cent for the big names.
        relative = 0.00001 + 0.0004 * security.volatility / math.sqrt(max(security.avg_volume / 1e6, 0.1))
        ticks = max(1, round(last * relative / increment)) + tape.spread_extra[second]
        below = min(ticks, int(tape.bid_offset[second] * (ticks + 1)))
        bid = round_price(last - below * increment)
        if bid < increment:
            bid = increment
        ask = round_price(bid + ticks * increment)
        opening = day.nodes[0]
        return Snapshot(
            ts=ts,
            day=day_index,
            last=last,
            last_size=tape.sizes[k],
            bid=bid,
            ask=ask,
            bid_size=100 * tape.bid_lots[second],
            ask_size=100 * tape.ask_lots[second],
            open=opening,
            high=high,
            low=low,
            prev_close=opening,
            volume=day.cum_volume[minute] + tape.cum_size[k],
            day_volume=day.cum_volume[day.minutes],
        )

    def equity_quote(self, security: Security, ts: int) -> Quote:
        """Return the quote of a stock or ETF at epoch second ``ts``."""
        snap = self.snapshot(self.underlying(security), ts)
        change = snap.last - snap.prev_close
        return Quote(
            symbol=security.symbol,
            last=snap.last,
            bid=snap.bid,
            ask=snap.ask,
            bid_size=snap.bid_size,
            ask_size=snap.ask_size,
            last_size=snap.last_size,
            volume=snap.volume,
            open=snap.open,
            high=snap.high,
            low=snap.low,
            prev_close=snap.prev_close,
            change=round(change, 4),
            change_pct=round(100.0 * change / snap.prev_close, 4),
            time=iso(ts),
        )
