"""The simulated market: quotes, option chains, depth, charts, time and sales, borrow and short data.

Every number is a deterministic function of (seed, symbol, time): asking at the same clock time gives
the same answer whatever else was asked before, so two simulators with the same seed agree and a
restarted world continues where it left off.

How prices are made, coarse to fine (each level only where someone looks):

1. Daily closes since ``EPOCH``: a mean-reverting (Ornstein-Uhlenbeck) walk of the log price around the
   security's reference price, with a stochastic volatility factor of its own (also mean-reverting,
   negatively correlated with returns). A fresh world therefore starts near real-world levels and
   realised volatility matches the universe's. Day high and low are drawn from the distribution of
   the maximum and minimum of a Brownian bridge between the open and the close.
2. Minutes of one day: a Brownian bridge through the open, the day's high, the day's low and the
   close, folded into [low, high], so the minutes aggregate exactly to the daily bar. Each minute gets
   its own high and low (inside the day's range), a volume (summing exactly to the day's volume, with
   the usual U-shaped profile of the regular session) and a number of trades.
3. Trades of one minute: at second 0 (the minute's open), at its high and low, at second 59 (the next
   minute's open) and at a few random seconds in between; their sizes sum to the minute's volume.
   The last trade at or before the current second is ``quote().last``.

The simulated market trades around the clock, every day of the week (holidays included): each New
York calendar day is one session from midnight to midnight, so its open is the previous close.
Scripts and tests therefore see live prices at any hour. Intraday charts show the regular session
(09:30-16:00 New York) unless ``extended_hours`` asks for the whole day. The holiday calendar is
reference data; it only moves option expirations off exchange holidays.

Options trade on the optionable underlyings with weekly expirations about five weeks out, monthly
ones (third Fridays) about six months out and two January LEAPS. They expire at 16:00 New York time
on their expiration date. A strike once listed stays listed until expiry. Option prices are
Black-Scholes-Merton values from the simulated underlying with a per-series implied volatility (term
structure from the volatility factor, plus skew and smile). After expiry an option quotes its
settlement value (intrinsic value at the 16:00 underlying price) so positions can still be valued.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import operator
import random
from array import array
from collections import OrderedDict
from collections.abc import Generator, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from statistics import NormalDist
from typing import Generic, TypeVar

from ftdesk.brokers.paper.calendar import new_york_midnight, nyse_closures, previous_trading_day
from ftdesk.brokers.paper.calendar import to_new_york as _to_new_york
from ftdesk.brokers.paper.ledger_income import month_end
from ftdesk.brokers.paper.ledger_money import session_close, trade_date
from ftdesk.brokers.paper.options import (
    format_option_symbol,
    is_option_symbol,
    option_description,
    parse_option_symbol,
)
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.brokers.paper.pricing import DAYS_PER_YEAR, bs_greeks, bs_price, bs_price_and_greeks, intrinsic_value
from ftdesk.brokers.paper.universe import Security, Universe
from ftdesk.domain.accounts import (
    HardToBorrowPosition,
    OptionContract,
    OptionType,
    SecurityType,
    ShortInsightDetail,
    ShortInsightSeries,
    TimeSeriesPoint,
)
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, NotFound, ValidationFailed
from ftdesk.domain.market import (
    AvailableMarkets,
    Bar,
    BarWidth,
    ChainExpiration,
    ChainStrike,
    ChartResult,
    ExchangeQuote,
    Greeks,
    MarketDestination,
    Montage,
    OptionChain,
    OptionQuote,
    Quote,
    SymbolInfo,
    TimeAndSales,
    TradeExecution,
)

EPOCH = date(2020, 1, 1)
"""The first day of simulated history; the market cannot be asked about earlier times."""
SECONDS_PER_YEAR = DAYS_PER_YEAR * 86_400
RISK_FREE_RATE = 0.04
"""Continuously compounded annual rate used to price options."""
OPTION_MULTIPLIER = 100
TIME_AND_SALES_CAP = 500
"""Most trades one time-and-sales request returns (the upstream server cap)."""
INTRADAY_HISTORY_DAYS = 30
"""Days (today included) for which intraday bars are available."""
REGULAR_OPEN_MINUTE = 9 * 60 + 30
REGULAR_CLOSE_MINUTE = 16 * 60
SHORT_INSIGHT_METRICS: tuple[str, ...] = (
    "shortInterest",
    "daysToCover",
    "shortPctOfFloat",
    "borrowRate",
    "sharesShort",
)
"""Metric names accepted by ``short_insight_series``."""
SHORT_INTEREST_PUBLICATION_LAG_DAYS = 8
"""Days between a short-interest settlement date and the publication of its figures."""

_DT = 1.0 / DAYS_PER_YEAR
_SQRT_DT = math.sqrt(_DT)
_PRICE_REVERSION = 2.0  # per year: deviations from the reference price halve in about four months
_VOL_REVERSION = 4.0  # per year
_VOL_OF_VOL = 0.8
_VOL_RETURN_CORRELATION = -0.6
_IV_PREMIUM = 0.06  # implied volatility trades a little above realised
_IV_SKEW = 0.06
_IV_SMILE = 0.02
_MIN_DAY_VOLUME = 200_000  # keeps every minute's volume at least its number of trades
_FORCED_TRADES = 4  # open, high, low and close of every minute
_MAX_EXTRA_TRADES = 54
_ODD_LOT_SHARE = 0.2
_DAY_CACHE_SIZE = 256  # about 80 kB each; covers 100+ subscribed symbols plus chart history
_TAPE_CACHE_SIZE = 8
_STRIKE_CACHE_SIZE = 4096
_QUOTE_CACHE_SIZE = 4096  # one entry per recently quoted symbol (equities and option series)
_WEEKLY_HORIZON_DAYS = 35
_MONTHLY_HORIZON_DAYS = 190
_LEAPS_HORIZON_DAYS = 800
_PENNY_OPTION_UNDERLYINGS = frozenset({"SPY", "QQQ", "IWM", "DIA"})
_NORMAL = NormalDist()
_TWO_PI = 2.0 * math.pi
_WALK_BLOCK = 256
_MINUTES_PER_STEP = 360  # a quarter of a day's minutes: about a millisecond of work between two yields
_DST_CHANGE_MINUTE = 120  # US clocks change at 02:00 local time

_EQUITY_VENUES: tuple[tuple[str, str], ...] = (
    ("NSDQ", "Nasdaq Stock Market"),
    ("NYSE", "New York Stock Exchange"),
    ("ARCA", "NYSE Arca"),
    ("BATS", "Cboe BZX Exchange"),
    ("EDGX", "Cboe EDGX Exchange"),
    ("IEX", "Investors Exchange"),
    ("MEMX", "Members Exchange"),
    ("BYX", "Cboe BYX Exchange"),
)
_OPTION_VENUES: tuple[tuple[str, str], ...] = (
    ("CBOE", "Cboe Options Exchange"),
    ("AMEX", "NYSE American Options"),
    ("PHLX", "Nasdaq PHLX"),
    ("ISE", "Nasdaq ISE"),
    ("ARCA", "NYSE Arca Options"),
    ("BOX", "BOX Options Exchange"),
    ("MIAX", "MIAX Options Exchange"),
    ("NOM", "Nasdaq Options Market"),
)
_EQUITY_MARKET_MAKERS: tuple[tuple[str, str, str], ...] = (
    ("CDRG", "Citadel Securities", "MARKET_MAKER"),
    ("VIRT", "Virtu Americas", "MARKET_MAKER"),
    ("JNST", "Jane Street Capital", "MARKET_MAKER"),
    ("UBSS", "UBS ATS", "ECN"),
)
_LISTING_VENUE = {"NASDAQ": "NSDQ", "NYSE": "NYSE", "NYSE ARCA": "ARCA", "CBOE": "BATS"}

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class _Lru(Generic[_K, _V]):
    """A small least-recently-used cache."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._data: OrderedDict[_K, _V] = OrderedDict()

    def get(self, key: _K) -> _V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: _K, value: _V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._capacity:
            self._data.popitem(last=False)


# --- small helpers ----------------------------------------------------------------------------


def stable_uniform(*parts: object) -> float:
    """Return a uniform number in [0, 1) that depends only on ``parts`` (the same in every run)."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 18_446_744_073_709_551_616.0


def stable_normal(*parts: object) -> float:
    """Return a standard normal number that depends only on ``parts`` (the same in every run)."""
    return _NORMAL.inv_cdf(min(max(stable_uniform(*parts), 1e-12), 1.0 - 1e-12))


def _tick(price: float) -> float:
    """Return the equity quoting increment: a cent, or 0.0001 below one dollar."""
    return 0.01 if price >= 1.0 else 0.0001


def _round_price(value: float) -> float:
    """Round to the equity tick (monotonic, so rounding keeps highs above lows)."""
    return round(value, 2) if value >= 1.0 else max(round(value, 4), 0.0001)


def _fold(value: float, low: float, high: float) -> float:
    """Reflect ``value`` into [low, high], as a path bouncing off both walls would."""
    if low <= value <= high:
        return value
    width = high - low
    if width <= 0.0:
        return low
    rem = (value - low) % (2.0 * width)
    return low + (rem if rem <= width else 2.0 * width - rem)


def _normals(rng: random.Random, count: int) -> list[float]:
    """Return ``count`` standard normal numbers (Box-Muller; faster than calling ``gauss`` each time)."""
    uniform, sqrt, log, cos, sin = rng.random, math.sqrt, math.log, math.cos, math.sin
    out: list[float] = []
    for _ in range((count + 1) // 2):
        angle = _TWO_PI * uniform()
        radius = sqrt(-2.0 * log(1.0 - uniform()))
        out.append(radius * cos(angle))
        out.append(radius * sin(angle))
    del out[count:]
    return out


def _bridge(
    rng: random.Random, anchors: Sequence[tuple[int, float]], step_sd: float, low: float, high: float
) -> list[float]:
    """Return a Brownian path at integer steps through ``anchors`` (sorted by step), folded into [low, high]."""
    last = anchors[-1][0]
    out = [0.0] * (last + 1)
    for (a, xa), (b, xb) in itertools.pairwise(anchors):
        out[a] = xa
        steps = b - a
        if steps <= 1:
            continue
        walk = []
        acc = 0.0
        for z in _normals(rng, steps):
            acc += z * step_sd
            walk.append(acc)
        gap = (acc - (xb - xa)) / steps
        for k in range(1, steps):
            value = xa + walk[k - 1] - gap * k
            out[a + k] = value if low <= value <= high else _fold(value, low, high)
    out[last] = anchors[-1][1]
    return out


def _allocate(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` into integer parts proportional to ``weights`` that sum exactly to it."""
    weight_sum = sum(weights)
    parts: list[int] = []
    acc = 0.0
    previous = 0
    for weight in weights:
        acc += weight
        current = round(total * acc / weight_sum) if weight_sum > 0 else 0
        parts.append(current - previous)
        previous = current
    parts[-1] += total - previous
    return parts


def _iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _invented_cusip(symbol: str) -> str:
    """Return a stable invented 9-character identifier for a symbol without a CUSIP of its own."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    number = int.from_bytes(hashlib.blake2b(symbol.encode(), digest_size=8).digest(), "big")
    chars = []
    for _ in range(8):
        number, rem = divmod(number, 36)
        chars.append(alphabet[rem])
    body = "".join(chars)
    total = 0
    for index, char in enumerate(body):
        value = alphabet.index(char) * (2 if index % 2 else 1)
        total += value // 10 + value % 10
    return body + str((10 - total % 10) % 10)


def expiration_time(expiration: date) -> datetime:
    """Return the UTC instant an option expiring on ``expiration`` stops trading (16:00 New York)."""
    # The ledger and the order engine decide expiry with ``ledger_money.option_expired``: the same instant.
    return session_close(expiration)


def _volume_profile(local_minute: int) -> float:
    """Relative trading intensity by New York minute of day: U-shaped in the regular session."""
    if REGULAR_OPEN_MINUTE <= local_minute < REGULAR_CLOSE_MINUTE:
        since_open = local_minute - REGULAR_OPEN_MINUTE
        to_close = REGULAR_CLOSE_MINUTE - 1 - local_minute
        return 1.0 + 2.0 * math.exp(-since_open / 25.0) + 1.5 * math.exp(-to_close / 20.0)
    if 4 * 60 <= local_minute < 20 * 60:
        return 0.06
    return 0.012


_PROFILE: tuple[float, ...] = tuple(_volume_profile(minute) for minute in range(25 * 60))
"""``_volume_profile`` by local minute (a constant table; 25 hours cover the long DST day)."""


# --- the simulated paths ----------------------------------------------------------------------


class _DailyPath:
    """Daily closes of one symbol since EPOCH, walked forward on demand from a seeded stream."""

    def __init__(self, seed: int, security: Security) -> None:
        self._seed = seed
        self._symbol = security.symbol
        self._rng = random.Random(f"{seed}/{security.symbol}/daily")
        self._log_ref = math.log(security.price)
        self._sigma = security.volatility
        self._adv = security.avg_volume
        self._x = 0.0
        self._v = 0.0
        self.first_open = _round_price(security.price)
        self.close = array("d")
        self.sigma = array("d")
        """Annualised volatility of each day's move."""
        self.volume = array("q")

    def ensure(self, index: int) -> None:
        """Walk forward until day ``index`` exists (in blocks, so the random stream is the same however asked)."""
        rho = _VOL_RETURN_CORRELATION
        rho_c = math.sqrt(1.0 - rho * rho)
        exp, sqrt = math.exp, math.sqrt
        while len(self.close) <= index:
            normals = _normals(self._rng, 3 * _WALK_BLOCK)
            x, v = self._x, self._v
            for k in range(0, 3 * _WALK_BLOCK, 3):
                z1, z2, z3 = normals[k], normals[k + 1], normals[k + 2]
                sigma_day = self._sigma * exp(v)
                x += -_PRICE_REVERSION * x * _DT + sigma_day * _SQRT_DT * z1
                v += -_VOL_REVERSION * v * _DT + _VOL_OF_VOL * _SQRT_DT * (rho * z1 + rho_c * z2)
                self.sigma.append(sigma_day)
                self.close.append(_round_price(exp(self._log_ref + x)))
                activity = exp(0.3 * z3 - 0.045 + 0.35 * abs(z1) - 0.28) * sqrt(sigma_day / self._sigma)
                self.volume.append(max(_MIN_DAY_VOLUME, int(self._adv * activity)))
            self._x, self._v = x, v

    def open(self, index: int) -> float:
        """Return the open of day ``index`` (the previous close)."""
        return self.first_open if index == 0 else self.close[index - 1]

    def uniforms(self, index: int) -> tuple[float, float, float, float]:
        """Return the day's four shape numbers: high and low excursions in (0, 1], their times in [0, 1)."""
        return (
            1.0 - stable_uniform(self._seed, self._symbol, index, "high"),
            1.0 - stable_uniform(self._seed, self._symbol, index, "low"),
            stable_uniform(self._seed, self._symbol, index, "high-at"),
            stable_uniform(self._seed, self._symbol, index, "low-at"),
        )

    def extremes(self, index: int) -> tuple[float, float]:
        """Return (high, low) of day ``index``."""
        opening, closing = self.open(index), self.close[index]
        u_high, u_low, _, _ = self.uniforms(index)
        a, b = math.log(opening), math.log(closing)
        mid, half_sq = 0.5 * (a + b), (0.5 * (b - a)) ** 2
        var = (self.sigma[index] * _SQRT_DT) ** 2
        high = math.exp(mid + math.sqrt(half_sq - 0.5 * var * math.log(u_high)))
        low = math.exp(mid - math.sqrt(half_sq - 0.5 * var * math.log(u_low)))
        return max(_round_price(high), opening, closing), min(_round_price(low), opening, closing)


@dataclass
class _Intraday:
    """The minutes of one symbol's day."""

    start: int
    """Epoch seconds of New York midnight."""
    minutes: int
    shift_at: int
    shift: int
    """From elapsed minute ``shift_at`` on, local minute = elapsed minute + ``shift`` (DST days)."""
    nodes: array[float]
    """Price at second 0 of each minute (``minutes + 1`` values; the last is the close)."""
    log_nodes: array[float]
    high: array[float]
    low: array[float]
    volume: array[int]
    trades: array[int]
    cum_volume: array[int]
    """Volume before each minute (``minutes + 1`` values)."""
    run_high: array[float]
    run_low: array[float]
    """Day high and low up to and including each minute."""
    step_sd: float
    """Log-price standard deviation of one minute."""

    def local_minute(self, minute: int) -> int:
        """Return the New York wall-clock minute of day of elapsed minute ``minute``."""
        return minute + self.shift if minute >= self.shift_at else minute


@dataclass
class _Tape:
    """The trades of one minute and the quote noise of its seconds."""

    seconds: list[int]
    prices: list[float]
    sizes: list[int]
    venues: list[int]
    cum_size: list[int]
    run_high: list[float]
    run_low: list[float]
    spread_extra: list[int]
    bid_offset: list[float]
    bid_lots: list[int]
    ask_lots: list[int]


@dataclass
class _Underlying:
    """Per-symbol simulation state."""

    security: Security
    path: _DailyPath
    tapes: _Lru[tuple[int, int], _Tape]


@dataclass(frozen=True)
class _Snapshot:
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


@dataclass(frozen=True)
class _OptionPoint:
    """An option's value and market at one moment."""

    theo: float
    greeks: Greeks
    bid: float
    ask: float
    last: float
    volume: int
    open_interest: int


@dataclass(frozen=True)
class _Expiration:
    expiration: date
    horizon_days: int
    """How long before its (unadjusted) Friday the expiration is listed."""
    friday: date


class MarketSimulator:
    """The paper brokerage's market: a seeded, clock-driven simulation of the universe."""

    def __init__(self, universe: Universe, seed: int, clock: Clock) -> None:
        self._universe = universe
        self._seed = seed
        self._clock = clock
        self._underlyings: dict[str, _Underlying] = {}
        self._days: _Lru[tuple[str, int], _Intraday] = _Lru(_DAY_CACHE_SIZE)
        self._day_starts: dict[int, int] = {}
        self._located: tuple[int, int, int] = (0, 0, -1)
        self._closures: dict[int, frozenset[date]] = {}
        self._schedules: _Lru[int, list[_Expiration]] = _Lru(16)
        self._strikes: _Lru[tuple[str, date, int], tuple[float, ...]] = _Lru(_STRIKE_CACHE_SIZE)
        # A quote is a pure function of (symbol, whole second): reuse it within the second. Positions,
        # balances, fills and every streaming consumer ask for the same quotes many times per tick.
        self._quote_cache: _Lru[str, tuple[int, Quote]] = _Lru(_QUOTE_CACHE_SIZE)

    @property
    def universe(self) -> Universe:
        """Return the universe this market trades."""
        return self._universe

    @property
    def seed(self) -> int:
        """Return the seed of this world."""
        return self._seed

    # --- MarketView ----------------------------------------------------------------------------

    def now(self) -> datetime:
        """Return the market's current UTC time."""
        return self._clock.now()

    def instrument(self, symbol: str) -> Instrument:
        """Return reference data of an equity, ETF or listed option; raise ``NotFound`` if unknown."""
        text = _normalize(symbol)
        security = self._universe.get(text)
        if security is not None:
            return Instrument(
                symbol=security.symbol,
                description=security.description,
                security_type=security.security_type,
                exchange=security.exchange,
                cusip=security.cusip,
            )
        contract, canonical, _ = self._listed_option(text, self._now_ts())
        return Instrument(
            symbol=canonical,
            description=option_description(contract),
            security_type=SecurityType.OPTION,
            exchange="OPRA",
            cusip=_invented_cusip(canonical),
            option=contract,
        )

    def quote(self, symbol: str) -> Quote:
        """Return the current quote of an equity, ETF or option symbol; raise ``NotFound`` if unknown."""
        text = _normalize(symbol)
        ts = self._now_ts()
        cached = self._quote_cache.get(text)
        if cached is not None and cached[0] == ts:
            return cached[1].model_copy()  # a copy: callers may not alter the cached value
        quote = self._quote(text, ts)
        self._quote_cache.put(text, (ts, quote))
        return quote.model_copy()

    def warm_up(self, symbol: str) -> Iterator[None]:
        """Compute what the first quote of a symbol needs in steps of about a millisecond, yielding after each.

        A symbol's first quote walks its daily history since ``EPOCH`` and builds today's minutes, about
        10 ms in all. A caller on an event loop yields to the loop between the steps (one block of daily
        history, then the day's minutes), so subscribing many cold symbols never blocks it for long. An
        option warms its underlying. Unknown symbols, and symbols already warm, take no step. The steps
        compute exactly what ``quote()`` would, so the quotes are the same with or without a warm-up.
        """
        text = symbol.strip().upper() if isinstance(symbol, str) else ""
        security = self._universe.get(text)
        if security is None:
            try:
                security = self._universe.get(parse_option_symbol(text).underlying)
            except ValueError:
                return
            if security is None:
                return
        under = self._underlying(security)
        day = self._locate(self._now_ts())[0]
        path = under.path
        while len(path.close) <= day:
            path.ensure(len(path.close))  # walks exactly one block
            yield
        key = (security.symbol, day)
        if self._days.get(key) is None:
            built = yield from self._intraday_steps(under, day)
            self._days.put(key, built)

    def quotes(self, symbols: Iterable[str]) -> list[Quote]:
        """Return current quotes of several symbols (all at the same instant), in the order asked."""
        ts = self._now_ts()
        return [self._quote(_normalize(symbol), ts) for symbol in symbols]

    # --- market data -----------------------------------------------------------------------------

    def option_chain(self, symbol: str) -> OptionChain:
        """Return every listed series of an optionable underlying, priced now."""
        ts = self._now_ts()
        under = self._optionable(_normalize(symbol))
        snap = self._snapshot(under, ts)
        today = self._date(snap.day)
        expirations: list[ChainExpiration] = []
        for item in self._listed_expirations(snap.day, ts):
            strikes = self._strike_list(under, item, snap.day)
            rows: list[ChainStrike] = []
            for strike in strikes:
                sides: dict[OptionType, OptionQuote] = {}
                for option_type in (OptionType.CALL, OptionType.PUT):
                    contract = OptionContract(
                        underlying=under.security.symbol,
                        option_type=option_type,
                        strike=strike,
                        expiration=item.expiration,
                    )
                    option_symbol = format_option_symbol(contract)
                    point = self._option_point(under, contract, option_symbol, snap, ts)
                    sides[option_type] = OptionQuote(
                        symbol=option_symbol,
                        option_type=option_type,
                        strike=strike,
                        expiration=item.expiration.isoformat(),
                        bid=point.bid,
                        ask=point.ask,
                        last=point.last,
                        volume=point.volume,
                        open_interest=point.open_interest,
                        greeks=point.greeks,
                    )
                rows.append(ChainStrike(strike=strike, call=sides[OptionType.CALL], put=sides[OptionType.PUT]))
            expirations.append(
                ChainExpiration(
                    expiration=item.expiration.isoformat(),
                    days_to_expiration=(item.expiration - today).days,
                    strikes=rows,
                )
            )
        return OptionChain(symbol=under.security.symbol, underlying_price=snap.last, expirations=expirations)

    def montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes whose best bid and offer are the NBBO of ``quote()``."""
        ts = self._now_ts()
        text = _normalize(symbol)
        quote = self._quote(text, ts)
        is_option = self._universe.get(text) is None
        venues = _OPTION_VENUES if is_option else _EQUITY_VENUES
        lot = 1 if is_option else 100
        tick = 0.01 if is_option else _tick(quote.bid)
        rng = random.Random(f"{self._seed}/{quote.symbol}/montage/{ts}")
        order = list(range(len(venues)))
        rng.shuffle(order)
        bids = _spread_depth(rng, quote.bid, quote.bid_size, lot, tick, len(venues), downward=True)
        asks = _spread_depth(rng, quote.ask, quote.ask_size, lot, tick, len(venues), downward=False)
        asks_order = list(range(len(venues)))
        rng.shuffle(asks_order)
        time_text = _iso(ts)
        rows = []
        for position, venue_index in enumerate(order):
            code, name = venues[venue_index]
            bid_price, bid_size = bids[position]
            ask_price, ask_size = asks[asks_order[position]]
            rows.append(
                ExchangeQuote(
                    exchange=code,
                    exchange_name=name,
                    bid=bid_price,
                    bid_size=bid_size,
                    ask=ask_price,
                    ask_size=ask_size,
                    time=time_text,
                )
            )
        rows.sort(key=lambda row: (-row.bid, row.ask, row.exchange))
        return Montage(symbol=quote.symbol, quotes=rows)

    def chart(
        self,
        symbol: str,
        start: date | None = None,
        end: date | None = None,
        bar_width: BarWidth = BarWidth.DAY,
        extended_hours: bool = False,
    ) -> ChartResult:
        """Return OHLCV bars of a stock or ETF; the last bar ends at the current quote."""
        ts = self._now_ts()
        under = self._equity(_normalize(symbol), purpose="Charts")
        snap = self._snapshot(under, ts)
        today = self._date(snap.day)
        if start is not None and end is not None and start > end:
            raise ValidationFailed.for_field("end_date", f"Chart start {start} is after end {end}", location="query")
        if bar_width in (BarWidth.DAY, BarWidth.WEEK, BarWidth.MONTH):
            bars = self._daily_bars(under, snap, today, start, end, bar_width)
        else:
            bars = self._intraday_bars(under, snap, today, start, end, int(bar_width.value), extended_hours)
        security = under.security
        return ChartResult(
            symbol=security.symbol,
            bar_width=bar_width,
            bars=bars,
            symbol_info=SymbolInfo(
                previous_close=snap.prev_close, description=security.description, exchange=security.exchange
            ),
        )

    def time_and_sales(
        self,
        symbol: str,
        max_rows: int = 100,
        low_price: float | None = None,
        high_price: float | None = None,
        low_size: int | None = None,
    ) -> TimeAndSales:
        """Return recent trades, newest first, filtered by price range and minimum size (at most 500)."""
        if max_rows < 1:
            raise ValidationFailed.for_field("max_rows", "max_rows must be at least 1", location="query")
        if low_price is not None and high_price is not None and low_price > high_price:
            raise ValidationFailed.for_field(
                "high_price", f"low_price {low_price} is above high_price {high_price}", location="query"
            )
        ts = self._now_ts()
        under = self._equity(_normalize(symbol), purpose="Time and sales")
        limit = min(max_rows, TIME_AND_SALES_CAP)
        day_index, minute, second = self._locate(ts)
        trades: list[TradeExecution] = []
        venues = _EQUITY_VENUES
        for _ in range(24 * 60):  # look back at most one day
            day = self._intraday(under, day_index)
            tape = self._tape(under, day, day_index, minute, cache=False)
            regular = REGULAR_OPEN_MINUTE <= day.local_minute(minute) < REGULAR_CLOSE_MINUTE
            for k in range(len(tape.seconds) - 1, -1, -1):
                sec = tape.seconds[k]
                if sec > second:
                    continue
                price, size = tape.prices[k], tape.sizes[k]
                if low_price is not None and price < low_price:
                    continue
                if high_price is not None and price > high_price:
                    continue
                if low_size is not None and size < low_size:
                    continue
                condition = "F" if regular else "T"
                if regular and size < 100:
                    condition = "I"
                trades.append(
                    TradeExecution(
                        time=_iso(day.start + minute * 60 + sec),
                        price=price,
                        size=size,
                        exchange=venues[tape.venues[k]][0],
                        condition=condition,
                    )
                )
                if len(trades) >= limit:
                    return TimeAndSales(symbol=under.security.symbol, trades=trades)
            second = 59
            minute -= 1
            if minute < 0:
                if day_index == 0:
                    break
                day_index -= 1
                minute = self._intraday(under, day_index).minutes - 1
        return TimeAndSales(symbol=under.security.symbol, trades=trades)

    def available_markets(self, symbol: str) -> AvailableMarkets:
        """Return the routing destinations of a symbol: AUTO (the default) and the venues."""
        text = _normalize(symbol)
        security = self._universe.get(text)
        markets = [MarketDestination(routing_code="AUTO", name="AUTO", market_type="AUTO", default=True)]
        if security is None:
            _, canonical, _ = self._listed_option(text, self._now_ts())
            markets += [
                MarketDestination(routing_code=code, name=name, market_type="EXCHANGE") for code, name in _OPTION_VENUES
            ]
            return AvailableMarkets(symbol=canonical, markets=markets)
        markets += [
            MarketDestination(routing_code=code, name=name, market_type="EXCHANGE") for code, name in _EQUITY_VENUES
        ]
        markets += [
            MarketDestination(routing_code=code, name=name, market_type=kind)
            for code, name, kind in _EQUITY_MARKET_MAKERS
        ]
        return AvailableMarkets(symbol=security.symbol, markets=markets)

    # --- borrow and short interest ----------------------------------------------------------

    def hard_to_borrow(self, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return today's borrow rate and availability of each stock or ETF."""
        day = self._locate(self._now_ts())[0]
        rows = []
        for symbol in symbols:
            security = self._equity(_normalize(symbol), purpose="Borrow data").security
            rate, available = self._borrow(security, day)
            htb = security.borrow.hard_to_borrow
            rows.append(
                HardToBorrowPosition(
                    symbol=security.symbol,
                    cusip=security.cusip,
                    borrow_rate=rate,
                    available_qty=float(available),
                    htb_ind=htb,
                    locate_required_ind=security.borrow.locate_required,
                    status="HTB" if htb else "ETB",
                    status_desc="Hard to borrow: a locate is required before selling short"
                    if security.borrow.locate_required
                    else ("Hard to borrow" if htb else "Easy to borrow"),
                )
            )
        return rows

    def short_insights(self, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return the latest published short-interest figures of each stock or ETF."""
        today = self._date(self._locate(self._now_ts())[0])
        latest = self._published_settlements(max(today - timedelta(days=60), EPOCH), today)
        if not latest:
            raise BrokerError("No short-interest figures have been published yet in the simulated market")
        current, prior = latest[-1], latest[-2] if len(latest) > 1 else latest[-1]
        rows = []
        for symbol in symbols:
            under = self._equity(_normalize(symbol), purpose="Short insights")
            figures = self._short_figures(under, current)
            rows.append(
                ShortInsightDetail(
                    symbol=under.security.symbol,
                    short_interest=figures["shortInterest"],
                    short_interest_ratio=figures["daysToCover"],
                    days_to_cover=figures["daysToCover"],
                    short_pct_of_float=figures["shortPctOfFloat"],
                    shares_short=figures["sharesShort"],
                    prior_shares_short=self._shares_short(under.security, prior),
                    settlement_date=current.isoformat(),
                    borrow_rate=figures["borrowRate"],
                    lending_supply=figures["lendingSupply"],
                )
            )
        return rows

    def short_insight_series(
        self, symbol: str, metric: str, start: date | None = None, end: date | None = None
    ) -> ShortInsightSeries:
        """Return one short-interest metric at each published settlement date between two dates."""
        names = {name.lower(): name for name in SHORT_INSIGHT_METRICS}
        canonical = names.get(metric.strip().lower())
        if canonical is None:
            raise ValidationFailed.for_field(
                "metric",
                f"Unknown short-insight metric {metric!r}; use one of: {', '.join(SHORT_INSIGHT_METRICS)}",
                location="query",
                allowed=SHORT_INSIGHT_METRICS,
            )
        under = self._equity(_normalize(symbol), purpose="Short insights")
        today = self._date(self._locate(self._now_ts())[0])
        end = min(end or today, today)
        start = start or end - timedelta(days=365)
        if start > end:
            raise ValidationFailed.for_field("end_date", f"Series start {start} is after end {end}", location="query")
        points = [
            TimeSeriesPoint(date=settlement.isoformat(), value=self._short_figures(under, settlement)[canonical])
            for settlement in self._published_settlements(max(start, EPOCH + timedelta(days=30)), end)
            if settlement >= start
        ]
        return ShortInsightSeries(symbol=under.security.symbol, metric=canonical, points=points)

    # --- figures research needs ----------------------------------------------------------------

    def listed_expirations(self, symbol: str) -> list[date]:
        """Return the expirations listed now for an optionable underlying, nearest first."""
        ts = self._now_ts()
        self._optionable(_normalize(symbol))
        return [item.expiration for item in self._listed_expirations(self._locate(ts)[0], ts)]

    def listed_strikes(self, symbol: str, expiration: date) -> list[float]:
        """Return the strikes listed now for one expiration of an optionable underlying."""
        ts = self._now_ts()
        under = self._optionable(_normalize(symbol))
        day = self._locate(ts)[0]
        for item in self._listed_expirations(day, ts):
            if item.expiration == expiration:
                return list(self._strike_list(under, item, day))
        raise NotFound(f"{under.security.symbol} has no options expiring {expiration.isoformat()}")

    def series_iv(self, contract: OptionContract) -> float:
        """Return the current implied volatility of an option series (also for unlisted strikes)."""
        ts = self._now_ts()
        under = self._optionable(contract.underlying.strip().upper())
        snap = self._snapshot(under, ts)
        years = max((expiration_time(contract.expiration).timestamp() - ts) / SECONDS_PER_YEAR, 0.0)
        return self._iv(under, snap.day, snap.last, contract.strike, years)

    def atm_iv(self, symbol: str, days: int = 30) -> float:
        """Return the current at-the-money implied volatility for a ``days``-day horizon."""
        under = self._equity(_normalize(symbol), purpose="Implied volatility")
        day = self._locate(self._now_ts())[0]
        return self._atm_iv(under, day, days / DAYS_PER_YEAR)

    def iv_history(self, symbol: str, days: int = 365) -> list[float]:
        """Return the 30-day at-the-money implied volatility of each of the last ``days`` days (today last)."""
        under = self._equity(_normalize(symbol), purpose="Implied volatility")
        today = self._locate(self._now_ts())[0]
        return [self._atm_iv(under, day, 30 / DAYS_PER_YEAR) for day in range(max(0, today - days + 1), today + 1)]

    def daily_closes(self, symbol: str, count: int) -> list[float]:
        """Return the last ``count`` completed daily closes (yesterday last)."""
        under = self._equity(_normalize(symbol), purpose="Price history")
        today = self._locate(self._now_ts())[0]
        under.path.ensure(today)
        first = max(0, today - count)
        return list(under.path.close[first:today])

    # --- internals: time -------------------------------------------------------------------------

    def _now_ts(self) -> int:
        now = self._clock.now()
        if now.tzinfo is None:
            raise BrokerError("The market clock must return timezone-aware times")
        return math.floor(now.timestamp())

    def _date(self, day: int) -> date:
        return EPOCH + timedelta(days=day)

    def _day_start(self, day: int) -> int:
        start = self._day_starts.get(day)
        if start is None:
            start = int(new_york_midnight(self._date(day)).timestamp())
            self._day_starts[day] = start
        return start

    def _locate(self, ts: int) -> tuple[int, int, int]:
        """Return (day index, elapsed minute of the day, second of the minute) of an epoch second."""
        start, end, day = self._located
        if not start <= ts < end:
            local = trade_date(datetime.fromtimestamp(ts, UTC))
            day = (local - EPOCH).days
            if day < 0:
                raise BrokerError(f"The simulated market starts on {EPOCH.isoformat()}; nothing happened before")
            start, end = self._day_start(day), self._day_start(day + 1)
            self._located = (start, end, day)
        minute, second = divmod(ts - start, 60)
        return day, minute, second

    def _closed_days(self, year: int) -> frozenset[date]:
        days = self._closures.get(year)
        if days is None:
            days = frozenset(nyse_closures(year))
            self._closures[year] = days
        return days

    # --- internals: equities ---------------------------------------------------------------------

    def _underlying(self, security: Security) -> _Underlying:
        under = self._underlyings.get(security.symbol)
        if under is None:
            under = _Underlying(security, _DailyPath(self._seed, security), _Lru(_TAPE_CACHE_SIZE))
            self._underlyings[security.symbol] = under
        return under

    def _equity(self, symbol: str, *, purpose: str) -> _Underlying:
        security = self._universe.get(symbol)
        if security is None:
            if is_option_symbol(symbol):
                raise ValidationFailed.for_field(
                    "symbol", f"{purpose} are available for stocks and ETFs, not options ({symbol})", location="path"
                )
            raise NotFound(f"Unknown symbol {symbol}", details={"symbol": symbol})
        return self._underlying(security)

    def _optionable(self, symbol: str) -> _Underlying:
        under = self._equity(symbol, purpose="Option chains")
        if not under.security.optionable:
            raise NotFound(f"{under.security.symbol} has no listed options", details={"symbol": symbol})
        return under

    def _intraday(self, under: _Underlying, day: int) -> _Intraday:
        key = (under.security.symbol, day)
        cached = self._days.get(key)
        if cached is None:
            cached = self._build_intraday(under, day)
            self._days.put(key, cached)
        return cached

    def _build_intraday(self, under: _Underlying, day: int) -> _Intraday:
        steps = self._intraday_steps(under, day)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                built: _Intraday = done.value
                return built

    def _intraday_steps(self, under: _Underlying, day: int) -> Generator[None, None, _Intraday]:
        """Build the minutes of one symbol's day, yielding between steps of about a millisecond (see warm_up)."""
        path = under.path
        path.ensure(day)
        security = under.security
        start, end = self._day_start(day), self._day_start(day + 1)
        n = (end - start) // 60
        start_offset = _to_new_york(datetime.fromtimestamp(start, UTC)).utcoffset() or timedelta(0)
        end_offset = _to_new_york(datetime.fromtimestamp(end - 1, UTC)).utcoffset() or timedelta(0)
        shift = int((end_offset - start_offset).total_seconds() // 60)
        opening, closing = path.open(day), path.close[day]
        day_high, day_low = path.extremes(day)
        rng = random.Random(f"{self._seed}/{security.symbol}/{day}/minutes")
        _, _, u_high_at, u_low_at = path.uniforms(day)
        high_at = 1 + int(u_high_at * (n - 1))
        low_at = 1 + int(u_low_at * (n - 1))
        if low_at == high_at:
            low_at = high_at - 1 if high_at > 1 else high_at + 1
        log_high, log_low = math.log(day_high), math.log(day_low)
        step_sd = path.sigma[day] * _SQRT_DT / math.sqrt(n)
        anchors = sorted([(0, math.log(opening)), (high_at, log_high), (low_at, log_low), (n, math.log(closing))])
        logs = _bridge(rng, anchors, step_sd, log_low, log_high)
        yield
        exp = math.exp
        nodes = array("d", (min(day_high, max(day_low, _round_price(value))) for value in map(exp, logs)))
        nodes[0], nodes[high_at], nodes[low_at], nodes[n] = opening, day_high, day_low, closing
        logs[0], logs[high_at], logs[low_at], logs[n] = (math.log(v) for v in (opening, day_high, day_low, closing))
        yield

        # Each minute's high and low: the extremes of a bridge between its two nodes (same formula as the
        # day's), clipped to the day's range so that the minutes aggregate exactly to the daily bar.
        half_var = 0.5 * step_sd * step_sd
        uniform, sqrt, log = rng.random, math.sqrt, math.log
        highs = array("d", bytes(8 * n))
        lows = array("d", bytes(8 * n))
        weights: list[float] = []
        trades = array("q", bytes(8 * n))
        intensity = min(float(_MAX_EXTRA_TRADES), max(2.0, security.avg_volume / 2_000_000))
        for first in range(0, n, _MINUTES_PER_STEP):
            for m in range(first, min(n, first + _MINUTES_PER_STEP)):
                a, b = logs[m], logs[m + 1]
                mid, half_sq = 0.5 * (a + b), 0.25 * (a - b) * (a - b)
                up = exp(mid + sqrt(half_sq - half_var * log(1.0 - uniform())))
                up = round(up, 2) if up >= 1.0 else _round_price(up)
                down = exp(mid - sqrt(half_sq - half_var * log(1.0 - uniform())))
                down = round(down, 2) if down >= 1.0 else _round_price(down)
                pa, pb = nodes[m], nodes[m + 1]
                top, bottom = (pa, pb) if pa >= pb else (pb, pa)
                highs[m] = top if up < top else (day_high if up > day_high else up)
                lows[m] = bottom if down > bottom else (day_low if down < day_low else down)
                profile = _PROFILE[m + shift if m >= _DST_CHANGE_MINUTE else m]
                weights.append(profile * (0.4 + 1.2 * uniform()))
                extra = int(intensity * profile * (0.3 + uniform()))
                trades[m] = _FORCED_TRADES + (extra if extra < _MAX_EXTRA_TRADES else _MAX_EXTRA_TRADES)
            yield
        # Every trade gets at least one share; the rest of the day's volume follows the intraday profile.
        allocated = _allocate(path.volume[day] - sum(trades), weights)
        volume = array("q", map(operator.add, trades, allocated))
        cum_volume = array("q", itertools.accumulate(volume, initial=0))
        run_high = array("d", itertools.accumulate(highs, max))
        run_low = array("d", itertools.accumulate(lows, min))
        return _Intraday(
            start=start,
            minutes=n,
            shift_at=_DST_CHANGE_MINUTE,
            shift=shift,
            nodes=nodes,
            log_nodes=array("d", logs),
            high=highs,
            low=lows,
            volume=volume,
            trades=trades,
            cum_volume=cum_volume,
            run_high=run_high,
            run_low=run_low,
            step_sd=step_sd,
        )

    def _tape(self, under: _Underlying, day: _Intraday, day_index: int, minute: int, *, cache: bool = True) -> _Tape:
        key = (day_index, minute)
        tape = under.tapes.get(key)
        if tape is None:
            tape = self._build_tape(under, day, day_index, minute)
            if cache:
                under.tapes.put(key, tape)
        return tape

    def _build_tape(self, under: _Underlying, day: _Intraday, day_index: int, minute: int) -> _Tape:
        security = under.security
        rng = random.Random(f"{self._seed}/{security.symbol}/{day_index}/{minute}")
        count = day.trades[minute]
        picks = rng.sample(range(1, 59), count - 2)
        at_high, at_low = picks[0], picks[1]
        opening, closing = day.nodes[minute], day.nodes[minute + 1]
        high, low = day.high[minute], day.low[minute]
        log_high, log_low = math.log(high), math.log(low)
        anchors = sorted(
            [(0, day.log_nodes[minute]), (at_high, log_high), (at_low, log_low), (59, day.log_nodes[minute + 1])]
        )
        logs = _bridge(rng, anchors, day.step_sd / math.sqrt(60.0), log_low, log_high)
        fixed = {0: opening, 59: closing, at_high: high, at_low: low}
        seconds = sorted([0, 59, *picks])
        prices = [fixed[s] if s in fixed else min(high, max(low, _round_price(math.exp(logs[s])))) for s in seconds]
        sizes = self._trade_sizes(rng, day.volume[minute], count)
        venues = [rng.randrange(len(_EQUITY_VENUES)) for _ in seconds]
        listing = _LISTING_VENUE.get(security.exchange)
        if listing is not None:  # the listing exchange prints the minute's first trade
            venues[0] = next(i for i, (code, _) in enumerate(_EQUITY_VENUES) if code == listing)
        cum_size, run_high, run_low = [], [], []
        total, top, bottom = 0, 0.0, math.inf
        for price, size in zip(prices, sizes, strict=True):
            total += size
            top, bottom = max(top, price), min(bottom, price)
            cum_size.append(total)
            run_high.append(top)
            run_low.append(bottom)
        uniform = rng.random
        lots = max(3, min(40, security.avg_volume // 5_000_000))
        extras = [0 if uniform() < 0.8 else 1 for _ in range(60)]
        return _Tape(
            seconds=seconds,
            prices=prices,
            sizes=sizes,
            venues=venues,
            cum_size=cum_size,
            run_high=run_high,
            run_low=run_low,
            spread_extra=extras,
            bid_offset=[uniform() for _ in range(60)],
            bid_lots=[1 + int(uniform() * lots) for _ in range(60)],
            ask_lots=[1 + int(uniform() * lots) for _ in range(60)],
        )

    @staticmethod
    def _trade_sizes(rng: random.Random, volume: int, count: int) -> list[int]:
        """Split a minute's volume into ``count`` trade sizes, some of them odd lots."""
        odd = {k: rng.randint(1, 99) for k in range(count) if rng.random() < _ODD_LOT_SHARE}
        free = [k for k in range(count) if k not in odd]
        remaining = volume - sum(odd.values())
        if not free or remaining < len(free):
            odd, free, remaining = {}, list(range(count)), volume
        shares = _allocate(remaining - len(free), [rng.expovariate(1.0) for _ in free])
        sizes = [0] * count
        for k, size in odd.items():
            sizes[k] = size
        for k, share in zip(free, shares, strict=True):
            sizes[k] = 1 + share
        return sizes

    def _snapshot(self, under: _Underlying, ts: int) -> _Snapshot:
        day_index, minute, second = self._locate(ts)
        day = self._intraday(under, day_index)
        tape = self._tape(under, day, day_index, minute)
        k = bisect.bisect_right(tape.seconds, second) - 1
        last = tape.prices[k]
        high, low = tape.run_high[k], tape.run_low[k]
        if minute > 0:
            high, low = max(high, day.run_high[minute - 1]), min(low, day.run_low[minute - 1])
        tick = _tick(last)
        security = under.security
        # Spreads widen with volatility and narrow with liquidity: a cent for the big names.
        relative = 0.00001 + 0.0004 * security.volatility / math.sqrt(max(security.avg_volume / 1e6, 0.1))
        ticks = max(1, round(last * relative / tick)) + tape.spread_extra[second]
        below = min(ticks, int(tape.bid_offset[second] * (ticks + 1)))
        bid = _round_price(last - below * tick)
        if bid < tick:
            bid = tick
        ask = _round_price(bid + ticks * tick)
        opening = day.nodes[0]
        return _Snapshot(
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

    def _price_at(self, under: _Underlying, ts: int) -> float:
        return self._snapshot(under, ts).last

    def _quote(self, text: str, ts: int) -> Quote:
        security = self._universe.get(text)
        if security is None:
            return self._option_quote(text, ts)
        snap = self._snapshot(self._underlying(security), ts)
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
            time=_iso(ts),
        )

    # --- internals: charts -----------------------------------------------------------------------

    def _daily_bars(
        self,
        under: _Underlying,
        snap: _Snapshot,
        today: date,
        start: date | None,
        end: date | None,
        bar_width: BarWidth,
    ) -> list[Bar]:
        if start is None:
            start = today - timedelta(days=365 if bar_width is BarWidth.DAY else 5 * 365)
        first = max(start, EPOCH)
        last = min(end or today, today)
        path = under.path
        daily: list[tuple[date, float, float, float, float, int]] = []
        day = first
        while day <= last:
            index = (day - EPOCH).days
            if day == today:
                daily.append((day, snap.open, snap.high, snap.low, snap.last, snap.volume))
            else:
                path.ensure(index)
                high, low = path.extremes(index)
                daily.append((day, path.open(index), high, low, path.close[index], path.volume[index]))
            day += timedelta(days=1)
        if bar_width is BarWidth.DAY:
            groups = [[row] for row in daily]
        else:
            keyed: dict[tuple[int, int], list[tuple[date, float, float, float, float, int]]] = {}
            for row in daily:
                iso = row[0].isocalendar()
                key = (iso.year, iso.week) if bar_width is BarWidth.WEEK else (row[0].year, row[0].month)
                keyed.setdefault(key, []).append(row)
            groups = list(keyed.values())
        return [
            Bar(
                date=group[0][0].isoformat(),
                open=group[0][1],
                high=max(row[2] for row in group),
                low=min(row[3] for row in group),
                close=group[-1][4],
                volume=sum(row[5] for row in group),
            )
            for group in groups
        ]

    def _intraday_bars(
        self,
        under: _Underlying,
        snap: _Snapshot,
        today: date,
        start: date | None,
        end: date | None,
        width: int,
        extended_hours: bool,
    ) -> list[Bar]:
        default_days = {1: 1, 5: 5, 15: 10, 60: 30}[width]
        earliest = max(today - timedelta(days=INTRADAY_HISTORY_DAYS - 1), EPOCH)
        first = max(start or today - timedelta(days=default_days - 1), earliest)
        last = min(end or today, today)
        window = (0, 24 * 60) if extended_hours else (REGULAR_OPEN_MINUTE, REGULAR_CLOSE_MINUTE)
        _, now_minute, now_second = self._locate(snap.ts)
        bars: list[Bar] = []
        day = first
        while day <= last:
            index = (day - EPOCH).days
            intraday = self._intraday(under, index)
            stop = now_minute + 1 if day == today else intraday.minutes
            current: list[float] = []
            current_key = -1
            current_volume = 0
            for m in range(stop):
                local = intraday.local_minute(m)
                if not window[0] <= local < window[1]:
                    continue
                if day == today and m == now_minute:
                    tape = self._tape(under, intraday, index, m)
                    k = bisect.bisect_right(tape.seconds, now_second) - 1
                    o, h, lo, c = tape.prices[0], tape.run_high[k], tape.run_low[k], tape.prices[k]
                    v = tape.cum_size[k]
                else:
                    o, h, lo, c = intraday.nodes[m], intraday.high[m], intraday.low[m], intraday.nodes[m + 1]
                    v = intraday.volume[m]
                key = m - (local - window[0]) % width
                if key != current_key:
                    if current_key >= 0:
                        bars.append(_bar(intraday.start + current_key * 60, current, current_volume))
                    current_key, current, current_volume = key, [o, h, lo, c], v
                else:
                    current[1] = max(current[1], h)
                    current[2] = min(current[2], lo)
                    current[3] = c
                    current_volume += v
            if current_key >= 0:
                bars.append(_bar(intraday.start + current_key * 60, current, current_volume))
            day += timedelta(days=1)
        return bars

    # --- internals: options ----------------------------------------------------------------------

    def _listed_expirations(self, day: int, ts: int) -> list[_Expiration]:
        """Return the expirations trading at ``ts`` (``day`` is its day index)."""
        return [item for item in self._schedule(day) if expiration_time(item.expiration).timestamp() > ts]

    def _schedule(self, day: int) -> list[_Expiration]:
        schedule = self._schedules.get(day)
        if schedule is None:
            schedule = self._expiration_schedule(self._date(day))
            self._schedules.put(day, schedule)
        return schedule

    def _expiration_schedule(self, today: date) -> list[_Expiration]:
        """Return the expirations listed on ``today`` that have not expired before it."""
        friday = today - timedelta(days=(today.weekday() - 4) % 7)
        out: list[_Expiration] = []
        while (friday - today).days <= _LEAPS_HORIZON_DAYS:
            third_friday = 15 <= friday.day <= 21
            if third_friday and friday.month == 1:
                horizon = _LEAPS_HORIZON_DAYS
            elif third_friday:
                horizon = _MONTHLY_HORIZON_DAYS
            else:
                horizon = _WEEKLY_HORIZON_DAYS
            expiration = friday
            while expiration in self._closed_days(expiration.year):  # e.g. Good Friday: Thursday expiry
                expiration -= timedelta(days=1)
            if expiration >= today and (friday - today).days <= horizon:
                out.append(_Expiration(expiration=expiration, horizon_days=horizon, friday=friday))
            friday += timedelta(days=7)
        return out

    def _expiration_listed_at(self, expiration: date, day: int) -> _Expiration | None:
        """Return the schedule entry of ``expiration`` if it was listed on day index ``day``."""
        for item in self._schedule(day):
            if item.expiration == expiration:
                return item
        return None

    def _strike_list(self, under: _Underlying, item: _Expiration, day: int) -> tuple[float, ...]:
        key = (under.security.symbol, item.expiration, day)
        strikes = self._strikes.get(key)
        if strikes is None:
            strikes = self._compute_strikes(under, item, day)
            self._strikes.put(key, strikes)
        return strikes

    def _compute_strikes(self, under: _Underlying, item: _Expiration, day: int) -> tuple[float, ...]:
        """Return the strikes listed on day ``day``: a grid around every price seen since listing."""
        path = under.path
        path.ensure(day)
        listing = max(0, (item.friday - timedelta(days=item.horizon_days) - EPOCH).days)
        listing = min(listing, day)
        seen = [path.open(listing), *path.close[listing:day]]
        low_seen, high_seen = min(seen), max(seen)
        reference = path.open(listing)
        increment = _strike_increment(under.security.symbol, reference)
        coarse = next(
            (
                step
                for step in (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0)
                if step >= max(increment * 2, reference * 0.02) and (step / increment).is_integer()
            ),
            increment * 100,
        )
        width = min(0.6, max(0.1, 2.0 * under.security.volatility * math.sqrt(item.horizon_days / DAYS_PER_YEAR)))
        strikes = set(_grid(low_seen * (1.0 - width), high_seen * (1.0 + width), coarse))
        if item.horizon_days < _LEAPS_HORIZON_DAYS:  # LEAPS list only the coarse strikes
            strikes.update(_grid(low_seen * 0.95, high_seen * 1.05, increment))
        if low_seen < 2 * increment:  # a stock trading for pennies keeps a strike (and never loses it)
            strikes.add(increment)
        return tuple(sorted(strike for strike in strikes if strike > 0))

    def _listed_option(self, text: str, ts: int) -> tuple[OptionContract, str, _Underlying]:
        """Parse an option symbol and check that the series is (or was, if expired) listed."""
        try:
            contract = parse_option_symbol(text)
        except ValueError as exc:
            raise NotFound(f"Unknown symbol {text}: {exc}", details={"symbol": text}) from None
        security = self._universe.get(contract.underlying)
        if security is None:
            raise NotFound(f"Unknown option {text}: no underlying {contract.underlying}", details={"symbol": text})
        if not security.optionable:
            raise NotFound(f"Unknown option {text}: {security.symbol} has no listed options", details={"symbol": text})
        under = self._underlying(security)
        canonical = format_option_symbol(contract)
        expiry_ts = int(expiration_time(contract.expiration).timestamp())
        day = self._locate(min(ts, expiry_ts - 1))[0]
        item = self._expiration_listed_at(contract.expiration, day)
        if item is None:
            raise NotFound(
                f"Unknown option {canonical}: {security.symbol} has no options expiring "
                f"{contract.expiration.isoformat()}",
                details={"symbol": text},
            )
        if contract.strike not in self._strike_list(under, item, day):
            raise NotFound(
                f"Unknown option {canonical}: strike {contract.strike:g} is not listed for "
                f"{security.symbol} {contract.expiration.isoformat()}",
                details={"symbol": text},
            )
        return contract, canonical, under

    def _atm_iv(self, under: _Underlying, day: int, years: float) -> float:
        """Return the at-the-money implied volatility for a horizon: today's vol factor decaying to normal."""
        path = under.path
        path.ensure(day)
        base = under.security.volatility
        factor = path.sigma[day] / base
        horizon = max(years, 1.0 / DAYS_PER_YEAR)
        weight = (1.0 - math.exp(-_VOL_REVERSION * horizon)) / (_VOL_REVERSION * horizon)
        return base * (1.0 + _IV_PREMIUM) * (factor * weight + (1.0 - weight))

    def _iv(self, under: _Underlying, day: int, spot: float, strike: float, years: float) -> float:
        """Return a series' implied volatility: the ATM level with a put skew and a smile."""
        atm = self._atm_iv(under, day, years)
        moneyness = math.log(strike / spot) / (atm * math.sqrt(max(years, 1.0 / DAYS_PER_YEAR)))
        moneyness = max(-4.0, min(4.0, moneyness))
        return max(0.05, atm * (1.0 - _IV_SKEW * moneyness + _IV_SMILE * moneyness * moneyness))

    def _option_point(
        self, under: _Underlying, contract: OptionContract, symbol: str, snap: _Snapshot, ts: int
    ) -> _OptionPoint:
        security = under.security
        expiry_ts = expiration_time(contract.expiration).timestamp()
        years = max((expiry_ts - ts) / SECONDS_PER_YEAR, 0.0)
        spot = snap.last
        iv = self._iv(under, snap.day, spot, contract.strike, years)
        rate, carry = RISK_FREE_RATE, security.dividend_yield
        theo, greeks = bs_price_and_greeks(contract.option_type, spot, contract.strike, years, rate, iv, carry)
        bid, ask = _option_bid_ask(theo, security)
        last = min(ask, max(bid, round(theo, 2)))
        moneyness = math.log(contract.strike / snap.open) / (iv * math.sqrt(max(years, 1.0 / DAYS_PER_YEAR)))
        liquidity = math.exp(-0.5 * moneyness * moneyness)
        day_volume = (
            security.avg_volume
            / 4000.0
            * liquidity
            * (0.2 + 1.6 * stable_uniform(self._seed, symbol, snap.day, "volume"))
        )
        day_volume /= 1.0 + 3.0 * years
        pace = snap.volume / snap.day_volume if snap.day_volume else 0.0
        open_interest = security.avg_volume / 800.0 * math.exp(-0.125 * moneyness * moneyness)
        interest = stable_uniform(self._seed, symbol, snap.day, "oi")
        open_interest = open_interest * (0.2 + interest) + 1 + 40 * interest  # far strikes keep a few contracts
        return _OptionPoint(
            theo=theo,
            greeks=greeks,
            bid=bid,
            ask=ask,
            last=last,
            volume=int(day_volume * pace),
            open_interest=int(open_interest),
        )

    def _option_quote(self, text: str, ts: int) -> Quote:
        contract, canonical, under = self._listed_option(text, ts)
        expiry_ts = int(expiration_time(contract.expiration).timestamp())
        if ts >= expiry_ts:
            return self._settlement_quote(under, contract, canonical, expiry_ts)
        snap = self._snapshot(under, ts)
        point = self._option_point(under, contract, canonical, snap, ts)
        security = under.security
        rate, carry = RISK_FREE_RATE, security.dividend_yield
        day_start = self._day_start(snap.day)
        prev_years = max((expiry_ts - day_start) / SECONDS_PER_YEAR, 0.0)
        prev_iv = self._iv(under, max(snap.day - 1, 0), snap.prev_close, contract.strike, prev_years)
        prev_close = round(
            bs_price(contract.option_type, snap.prev_close, contract.strike, prev_years, rate, prev_iv, carry), 2
        )
        years = max((expiry_ts - ts) / SECONDS_PER_YEAR, 0.0)
        extremes = [
            round(
                bs_price(
                    contract.option_type, spot, contract.strike, years, rate, point.greeks.implied_volatility, carry
                ),
                2,
            )
            for spot in (snap.high, snap.low)
        ]
        high = max(*extremes, prev_close, point.last)
        low = min(*extremes, prev_close, point.last)
        change = point.last - prev_close
        return Quote(
            symbol=canonical,
            last=point.last,
            bid=point.bid,
            ask=point.ask,
            bid_size=1 + int(stable_uniform(self._seed, canonical, ts, "bid") * 99),
            ask_size=1 + int(stable_uniform(self._seed, canonical, ts, "ask") * 99),
            last_size=1 + int(stable_uniform(self._seed, canonical, ts, "last") * 20),
            volume=point.volume,
            open=prev_close,
            high=high,
            low=low,
            prev_close=prev_close,
            change=round(change, 4),
            change_pct=round(100.0 * change / prev_close, 4) if prev_close > 0 else 0.0,
            time=_iso(ts),
            greeks=point.greeks,
        )

    def _settlement_quote(self, under: _Underlying, contract: OptionContract, canonical: str, expiry_ts: int) -> Quote:
        """Quote an expired option at its settlement value (intrinsic at the 16:00 underlying price)."""
        spot = self._price_at(under, expiry_ts)
        value = round(intrinsic_value(contract.option_type, spot, contract.strike), 2)
        greeks = bs_greeks(contract.option_type, spot, contract.strike, 0.0, RISK_FREE_RATE, 0.0)
        return Quote(
            symbol=canonical,
            last=value,
            bid=value,
            ask=round(value + 0.01, 2),
            volume=0,
            open=value,
            high=value,
            low=value,
            prev_close=value,
            change=0.0,
            change_pct=0.0,
            time=_iso(expiry_ts),
            greeks=greeks,
        )

    # --- internals: borrow and short interest -------------------------------------------------

    def _borrow(self, security: Security, day: int) -> tuple[float, int]:
        """Return (annual borrow rate %, shares available) on day index ``day``."""
        terms = security.borrow
        wobble = stable_uniform(self._seed, security.symbol, day, "borrow")
        rate = terms.rate * (0.8 + 0.4 * wobble) if terms.hard_to_borrow else terms.rate * (0.95 + 0.1 * wobble)
        available = int(
            terms.available * (0.6 + 0.8 * stable_uniform(self._seed, security.symbol, day, "supply")) // 100 * 100
        )
        return round(rate, 2), available

    def _published_settlements(self, start: date, end: date) -> list[date]:
        """Return short-interest settlement dates whose figures are published by ``end``."""
        cutoff = end - timedelta(days=SHORT_INTEREST_PUBLICATION_LAG_DAYS)
        out: list[date] = []
        year, month = start.year, start.month
        while date(year, month, 1) <= cutoff:
            mid = previous_trading_day(date(year, month, 15))
            last = previous_trading_day(month_end(date(year, month, 1)))
            out += [day for day in (mid, last) if start <= day <= cutoff]
            year, month = year + month // 12, month % 12 + 1
        return out

    def _shares_short(self, security: Security, settlement: date) -> float:
        period = (settlement.year - EPOCH.year) * 24 + (settlement.month - 1) * 2 + (1 if settlement.day > 15 else 0)
        # A moving sum of three period shocks keeps consecutive reports correlated.
        shock = sum(stable_normal(self._seed, security.symbol, "short", period - lag) for lag in range(3)) / math.sqrt(
            3.0
        )
        return float(round(security.float_shares * security.short_pct_float / 100.0 * math.exp(0.25 * shock)))

    def _short_figures(self, under: _Underlying, settlement: date) -> dict[str, float]:
        security = under.security
        day = (settlement - EPOCH).days
        under.path.ensure(day)
        recent = under.path.volume[max(0, day - 14) : day + 1]
        avg_volume = sum(recent) / len(recent)
        shares_short = self._shares_short(security, settlement)
        rate, available = self._borrow(security, day)
        return {
            "shortInterest": shares_short,
            "sharesShort": shares_short,
            "daysToCover": round(shares_short / avg_volume, 2),
            "shortPctOfFloat": round(100.0 * shares_short / security.float_shares, 2),
            "borrowRate": rate,
            "lendingSupply": float(available),
        }


# --- module helpers that need no simulator state ------------------------------------------------


def _normalize(symbol: str) -> str:
    text = symbol.strip().upper() if isinstance(symbol, str) else ""
    if not text:
        raise NotFound("Empty symbol", details={"symbol": symbol})
    return text


def _strike_increment(symbol: str, reference: float) -> float:
    if symbol in _PENNY_OPTION_UNDERLYINGS:
        return 1.0
    for limit, step in ((25.0, 0.5), (100.0, 1.0), (250.0, 2.5), (1000.0, 5.0)):
        if reference < limit:
            return step
    return 10.0


def _grid(low: float, high: float, step: float) -> list[float]:
    first, last = math.ceil(low / step), math.floor(high / step)
    return [k * step for k in range(max(first, 1), last + 1)]


def _option_bid_ask(theo: float, security: Security) -> tuple[float, float]:
    """Return a market around a theoretical value: pennies below $3, nickels above (penny names always)."""
    tick = 0.01 if theo < 3.0 or security.symbol in _PENNY_OPTION_UNDERLYINGS else 0.05
    liquidity = 1.0 if security.avg_volume >= 20_000_000 else (1.5 if security.avg_volume >= 5_000_000 else 2.5)
    half = 0.5 * (0.02 + 0.015 * theo**0.85) * liquidity
    bid = max(0.0, math.floor((theo - half) / tick + 1e-9) * tick)
    ask = math.ceil((theo + half) / tick - 1e-9) * tick
    if ask - bid < tick - 1e-9:
        ask = bid + tick
    return round(bid, 2), round(ask, 2)


def _spread_depth(
    rng: random.Random, best: float, best_size: int, lot: int, tick: float, venues: int, *, downward: bool
) -> list[tuple[float, int]]:
    """Return one (price, size) per venue: some at the best price sharing its size, the rest behind it."""
    lots = max(1, best_size // lot)
    at_best = max(1, min(lots, rng.randint(1, 3)))
    split = _allocate(lots - at_best, [rng.random() + 0.1 for _ in range(at_best)])
    rows = [(best, (1 + extra) * lot) for extra in split]
    for _ in range(venues - at_best):
        steps = rng.randint(1, 4)
        price = best - steps * tick if downward else best + steps * tick
        price = round(max(price, 0.0), 4 if tick < 0.01 else 2)
        rows.append((price, lot * rng.randint(1, 10)))
    return rows


def _bar(start_ts: int, ohlc: list[float], volume: int) -> Bar:
    moment = _to_new_york(datetime.fromtimestamp(start_ts, UTC))
    return Bar(date=moment.isoformat(), open=ohlc[0], high=ohlc[1], low=ohlc[2], close=ohlc[3], volume=volume)
