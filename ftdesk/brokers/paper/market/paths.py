"""The price process of one symbol: daily bars since ``EPOCH``, the minutes of a day, the trades of a minute.

Every number is a deterministic function of (seed, symbol, time), made coarse to fine (each level only
where someone looks):

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
   The last trade at or before the current second is the quote's ``last``.

The simulated market trades around the clock, every day of the week (holidays included): each New
York calendar day is one session from midnight to midnight, so its open is the previous close.
"""

from __future__ import annotations

import itertools
import math
import operator
import random
from array import array
from collections.abc import Generator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from ftdesk.brokers.paper.calendar import to_new_york
from ftdesk.brokers.paper.market.randomness import allocate, bridge, normals, stable_uniform
from ftdesk.brokers.paper.market.venues import EQUITY_VENUES, LISTING_VENUE
from ftdesk.brokers.paper.pricing import DAYS_PER_YEAR
from ftdesk.brokers.paper.universe import Security

EPOCH = date(2020, 1, 1)
"""The first day of simulated history; the market cannot be asked about earlier times."""
REGULAR_OPEN_MINUTE = 9 * 60 + 30
REGULAR_CLOSE_MINUTE = 16 * 60
VOL_REVERSION = 4.0
"""Per year: how fast the volatility factor returns to normal (implied volatility decays the same way)."""

_DT = 1.0 / DAYS_PER_YEAR
_SQRT_DT = math.sqrt(_DT)
_PRICE_REVERSION = 2.0  # per year: deviations from the reference price halve in about four months
_VOL_OF_VOL = 0.8
_VOL_RETURN_CORRELATION = -0.6
_MIN_DAY_VOLUME = 200_000  # keeps every minute's volume at least its number of trades
_FORCED_TRADES = 4  # open, high, low and close of every minute
_MAX_EXTRA_TRADES = 54
_ODD_LOT_SHARE = 0.2
_WALK_BLOCK = 256
_MINUTES_PER_STEP = 360  # a quarter of a day's minutes: about a millisecond of work between two yields
_DST_CHANGE_MINUTE = 120  # US clocks change at 02:00 local time


def tick(price: float) -> float:
    """Return the equity quoting increment: a cent, or 0.0001 below one dollar."""
    return 0.01 if price >= 1.0 else 0.0001


def round_price(value: float) -> float:
    """Round to the equity tick (monotonic, so rounding keeps highs above lows)."""
    return round(value, 2) if value >= 1.0 else max(round(value, 4), 0.0001)


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


class DailyPath:
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
        self.first_open = round_price(security.price)
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
            draws = normals(self._rng, 3 * _WALK_BLOCK)
            x, v = self._x, self._v
            for k in range(0, 3 * _WALK_BLOCK, 3):
                z1, z2, z3 = draws[k], draws[k + 1], draws[k + 2]
                sigma_day = self._sigma * exp(v)
                x += -_PRICE_REVERSION * x * _DT + sigma_day * _SQRT_DT * z1
                v += -VOL_REVERSION * v * _DT + _VOL_OF_VOL * _SQRT_DT * (rho * z1 + rho_c * z2)
                self.sigma.append(sigma_day)
                self.close.append(round_price(exp(self._log_ref + x)))
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
        return max(round_price(high), opening, closing), min(round_price(low), opening, closing)


@dataclass
class Intraday:
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
class Tape:
    """The trades of one minute and the quote noise of its seconds."""

    seconds: list[int]
    prices: list[float]
    sizes: list[int]
    venues: list[int]
    """Index into ``EQUITY_VENUES`` of each trade."""
    cum_size: list[int]
    run_high: list[float]
    run_low: list[float]
    spread_extra: list[int]
    bid_offset: list[float]
    bid_lots: list[int]
    ask_lots: list[int]


def intraday_steps(
    seed: int, security: Security, path: DailyPath, day: int, start: int, end: int
) -> Generator[None, None, Intraday]:
    """Build the minutes of day ``day`` (epoch seconds ``start`` to ``end``), yielding between ~1 ms steps."""
    path.ensure(day)
    n = (end - start) // 60
    start_offset = to_new_york(datetime.fromtimestamp(start, UTC)).utcoffset() or timedelta(0)
    end_offset = to_new_york(datetime.fromtimestamp(end - 1, UTC)).utcoffset() or timedelta(0)
    shift = int((end_offset - start_offset).total_seconds() // 60)
    opening, closing = path.open(day), path.close[day]
    day_high, day_low = path.extremes(day)
    rng = random.Random(f"{seed}/{security.symbol}/{day}/minutes")
    _, _, u_high_at, u_low_at = path.uniforms(day)
    high_at = 1 + int(u_high_at * (n - 1))
    low_at = 1 + int(u_low_at * (n - 1))
    if low_at == high_at:
        low_at = high_at - 1 if high_at > 1 else high_at + 1
    log_high, log_low = math.log(day_high), math.log(day_low)
    step_sd = path.sigma[day] * _SQRT_DT / math.sqrt(n)
    anchors = sorted([(0, math.log(opening)), (high_at, log_high), (low_at, log_low), (n, math.log(closing))])
    logs = bridge(rng, anchors, step_sd, log_low, log_high)
    yield
    exp = math.exp
    nodes = array("d", (min(day_high, max(day_low, round_price(value))) for value in map(exp, logs)))
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
            up = round(up, 2) if up >= 1.0 else round_price(up)
            down = exp(mid - sqrt(half_sq - half_var * log(1.0 - uniform())))
            down = round(down, 2) if down >= 1.0 else round_price(down)
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
    allocated = allocate(path.volume[day] - sum(trades), weights)
    volume = array("q", map(operator.add, trades, allocated))
    cum_volume = array("q", itertools.accumulate(volume, initial=0))
    run_high = array("d", itertools.accumulate(highs, max))
    run_low = array("d", itertools.accumulate(lows, min))
    return Intraday(
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


def build_tape(seed: int, security: Security, day: Intraday, day_index: int, minute: int) -> Tape:
    """Return the trades of minute ``minute`` of day ``day`` (day index ``day_index``)."""
    rng = random.Random(f"{seed}/{security.symbol}/{day_index}/{minute}")
    count = day.trades[minute]
    picks = rng.sample(range(1, 59), count - 2)
    at_high, at_low = picks[0], picks[1]
    opening, closing = day.nodes[minute], day.nodes[minute + 1]
    high, low = day.high[minute], day.low[minute]
    log_high, log_low = math.log(high), math.log(low)
    anchors = sorted(
        [(0, day.log_nodes[minute]), (at_high, log_high), (at_low, log_low), (59, day.log_nodes[minute + 1])]
    )
    logs = bridge(rng, anchors, day.step_sd / math.sqrt(60.0), log_low, log_high)
    fixed = {0: opening, 59: closing, at_high: high, at_low: low}
    seconds = sorted([0, 59, *picks])
    prices = [fixed[s] if s in fixed else min(high, max(low, round_price(math.exp(logs[s])))) for s in seconds]
    sizes = _trade_sizes(rng, day.volume[minute], count)
    venues = [rng.randrange(len(EQUITY_VENUES)) for _ in seconds]
    listing = LISTING_VENUE.get(security.exchange)
    if listing is not None:  # the listing exchange prints the minute's first trade
        venues[0] = next(i for i, (code, _) in enumerate(EQUITY_VENUES) if code == listing)
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
    return Tape(
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


def _trade_sizes(rng: random.Random, volume: int, count: int) -> list[int]:
    """Split a minute's volume into ``count`` trade sizes, some of them odd lots."""
    odd = {k: rng.randint(1, 99) for k in range(count) if rng.random() < _ODD_LOT_SHARE}
    free = [k for k in range(count) if k not in odd]
    remaining = volume - sum(odd.values())
    if not free or remaining < len(free):
        odd, free, remaining = {}, list(range(count)), volume
    shares = allocate(remaining - len(free), [rng.expovariate(1.0) for _ in free])
    sizes = [0] * count
    for k, size in odd.items():
        sizes[k] = size
    for k, share in zip(free, shares, strict=True):
        sizes[k] = 1 + share
    return sizes
