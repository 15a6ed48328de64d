"""Chart bars of the simulated market: daily, weekly and monthly bars, and intraday bars of recent days.

Intraday charts show the regular session (09:30-16:00 New York) unless ``extended_hours`` asks for the
whole day; the last bar ends at the current quote.
"""

from __future__ import annotations

import bisect
from datetime import UTC, date, datetime, timedelta

from ftdesk.brokers.paper.calendar import to_new_york
from ftdesk.brokers.paper.market.paths import EPOCH, REGULAR_CLOSE_MINUTE, REGULAR_OPEN_MINUTE
from ftdesk.brokers.paper.market.prices import PriceSource, Snapshot, Underlying, normalize
from ftdesk.domain.errors import ValidationFailed
from ftdesk.domain.market import Bar, BarWidth, ChartResult, SymbolInfo

INTRADAY_HISTORY_DAYS = 30
"""Days (today included) for which intraday bars are available."""


def chart(
    prices: PriceSource,
    symbol: str,
    start: date | None = None,
    end: date | None = None,
    bar_width: BarWidth = BarWidth.DAY,
    extended_hours: bool = False,
) -> ChartResult:
    """Return OHLCV bars of a stock or ETF; the last bar ends at the current quote."""
    ts = prices.now_ts()
    under = prices.equity(normalize(symbol), purpose="Charts")
    snap = prices.snapshot(under, ts)
    today = prices.day_date(snap.day)
    if start is not None and end is not None and start > end:
        raise ValidationFailed.for_field("end_date", f"Chart start {start} is after end {end}", location="query")
    if bar_width in (BarWidth.DAY, BarWidth.WEEK, BarWidth.MONTH):
        bars = _daily_bars(under, snap, today, start, end, bar_width)
    else:
        bars = _intraday_bars(prices, under, snap, today, start, end, int(bar_width.value), extended_hours)
    security = under.security
    return ChartResult(
        symbol=security.symbol,
        bar_width=bar_width,
        bars=bars,
        symbol_info=SymbolInfo(
            previous_close=snap.prev_close, description=security.description, exchange=security.exchange
        ),
    )


def _daily_bars(
    under: Underlying,
    snap: Snapshot,
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
    prices: PriceSource,
    under: Underlying,
    snap: Snapshot,
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
    _, now_minute, now_second = prices.locate(snap.ts)
    bars: list[Bar] = []
    day = first
    while day <= last:
        index = (day - EPOCH).days
        intraday = prices.intraday(under, index)
        stop = now_minute + 1 if day == today else intraday.minutes
        current: list[float] = []
        current_key = -1
        current_volume = 0
        for m in range(stop):
            local = intraday.local_minute(m)
            if not window[0] <= local < window[1]:
                continue
            if day == today and m == now_minute:
                tape = prices.tape(under, intraday, index, m)
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


def _bar(start_ts: int, ohlc: list[float], volume: int) -> Bar:
    moment = to_new_york(datetime.fromtimestamp(start_ts, UTC))
    return Bar(date=moment.isoformat(), open=ohlc[0], high=ohlc[1], low=ohlc[2], close=ohlc[3], volume=volume)
