"""The simulated market: determinism, sane quotes, options, depth, charts, tape, borrow and short data."""

from __future__ import annotations

import math
import statistics
import time
from datetime import UTC, date, datetime, timedelta

import pytest

from ftdesk.brokers.paper.calendar import to_new_york
from ftdesk.brokers.paper.market.depth import TIME_AND_SALES_CAP
from ftdesk.brokers.paper.market.listings import expiration_time
from ftdesk.brokers.paper.market.option_prices import OPTION_MULTIPLIER, RISK_FREE_RATE, SECONDS_PER_YEAR
from ftdesk.brokers.paper.market.short import SHORT_INSIGHT_METRICS
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.options import parse_option_symbol
from ftdesk.brokers.paper.ports import MarketView
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.accounts import OptionType, SecurityType
from ftdesk.domain.errors import NotFound, ValidationFailed
from ftdesk.domain.market import Bar, BarWidth, OptionChain, Quote
from tests.fakes.clock import ManualClock

MONDAY_10AM = datetime(2026, 11, 16, 15, 0, tzinfo=UTC)  # 10:00 in New York
SUNDAY_3AM = datetime(2026, 11, 15, 8, 0, tzinfo=UTC)  # 03:00 in New York, a weekend night
TUESDAY_5PM = datetime(2026, 11, 17, 22, 0, 30, tzinfo=UTC)  # 17:00 in New York, after the close
EQUITY_VENUES = {"NSDQ", "NYSE", "ARCA", "BATS", "EDGX", "IEX", "MEMX", "BYX"}


@pytest.fixture(scope="module")
def universe() -> Universe:
    return Universe.load()


def make_market(universe: Universe, when: datetime = MONDAY_10AM, seed: int = 7) -> tuple[MarketSimulator, ManualClock]:
    clock = ManualClock(when)
    return MarketSimulator(universe, seed, clock), clock


def near_term_expiration(chain: OptionChain, min_days: int = 20) -> int:
    return next(i for i, e in enumerate(chain.expirations) if e.days_to_expiration >= min_days)


# --- the universe -----------------------------------------------------------------------------


def test_universe_is_broad_and_consistent(universe: Universe) -> None:
    assert len(universe) >= 110
    assert len(universe.optionable()) >= 40
    assert {"SPY", "QQQ", "IWM", "DIA", "GLD", "TLT", "XLF", "XLE", "GME", "AMC"} <= set(universe.symbols)
    assert len({s.cusip for s in universe}) == len(universe)
    hard = [s for s in universe if s.borrow.hard_to_borrow]
    assert 3 <= len(hard) <= 15
    assert all(s.borrow.locate_required and s.borrow.rate > 5 for s in hard)
    for security in universe:
        assert security.exchange in {"NASDAQ", "NYSE", "NYSE ARCA", "CBOE"}
        assert security.security_type in (SecurityType.EQUITY, SecurityType.ETF)
        assert security.float_shares <= security.shares_outstanding
        assert (security.dividend_yield == 0) == (security.dividend_frequency == 0)
        assert (security.earnings is None) == security.is_etf
    assert universe.get("aapl") is universe.require("AAPL")
    with pytest.raises(NotFound, match="ZZZZ"):
        universe.require("zzzz")


def test_simulator_is_a_market_view(universe: Universe) -> None:
    market, _ = make_market(universe)
    view: MarketView = market
    assert view.now() == MONDAY_10AM


# --- determinism -------------------------------------------------------------------------------


def test_same_seed_and_time_give_the_same_market(universe: Universe) -> None:
    first, _ = make_market(universe)
    second, _ = make_market(universe)
    option = first.option_chain("AAPL").expirations[2].strikes[5].call
    assert option is not None
    symbols = ["AAPL", "SPY", "GME", "BYND", option.symbol]
    assert [q.model_dump() for q in first.quotes(symbols)] == [q.model_dump() for q in second.quotes(symbols)]
    assert first.montage("AAPL") == second.montage("AAPL")
    assert first.time_and_sales("GME", 50) == second.time_and_sales("GME", 50)
    assert first.chart("SPY", bar_width=BarWidth.WEEK) == second.chart("SPY", bar_width=BarWidth.WEEK)


def test_different_seeds_give_different_markets(universe: Universe) -> None:
    first, _ = make_market(universe, seed=7)
    second, _ = make_market(universe, seed=8)
    assert first.quote("AAPL").last != second.quote("AAPL").last
    assert first.quote("SPY").volume != second.quote("SPY").volume


def test_answers_do_not_depend_on_what_was_asked_before(universe: Universe) -> None:
    wandering, clock = make_market(universe)
    later = MONDAY_10AM + timedelta(days=3, hours=5, seconds=17)
    at_start = wandering.quote("MSFT")
    wandering.quotes(["AAPL", "TSLA", "NVDA"])
    wandering.option_chain("MSFT")
    clock.set_wall(later)
    wandering.time_and_sales("MSFT", 200)
    at_later = wandering.quote("MSFT")
    clock.set_wall(MONDAY_10AM)  # back in time: the same answer as before
    assert wandering.quote("MSFT") == at_start

    direct, _ = make_market(universe, when=later)
    assert direct.quote("MSFT") == at_later


@pytest.fixture(scope="module")
def monday_quotes(universe: Universe) -> list[Quote]:
    market, _ = make_market(universe)
    return market.quotes(universe.symbols)


def test_a_fresh_world_starts_near_real_world_prices(universe: Universe, monday_quotes: list[Quote]) -> None:
    deviations = [abs(math.log(q.last / universe.require(q.symbol).price)) for q in monday_quotes]
    assert statistics.median(deviations) < 0.25
    assert max(deviations) < math.log(5)


# --- quotes ------------------------------------------------------------------------------------


def assert_quote_sane(quote: Quote, when: datetime) -> None:
    assert quote.bid < quote.ask
    assert quote.bid <= quote.last <= quote.ask
    assert quote.low is not None and quote.high is not None and quote.open is not None
    assert quote.low <= min(quote.open, quote.last) <= max(quote.open, quote.last) <= quote.high
    assert quote.bid_size > 0 and quote.bid_size % 100 == 0
    assert quote.ask_size > 0 and quote.ask_size % 100 == 0
    assert quote.volume > 0 and quote.last_size > 0
    assert quote.prev_close is not None and quote.change is not None and quote.change_pct is not None
    assert quote.change == pytest.approx(quote.last - quote.prev_close, abs=1e-6)
    assert quote.change_pct == pytest.approx(100 * quote.change / quote.prev_close, abs=1e-3)
    assert quote.greeks is None
    assert datetime.fromisoformat(quote.time) == when.replace(microsecond=0)


def test_every_quote_is_sane(monday_quotes: list[Quote]) -> None:
    for quote in monday_quotes:
        assert_quote_sane(quote, MONDAY_10AM)


@pytest.mark.parametrize("when", [SUNDAY_3AM, TUESDAY_5PM])
def test_quotes_are_sane_at_night_and_after_the_close(universe: Universe, when: datetime) -> None:
    market, _ = make_market(universe, when=when)
    for quote in market.quotes(universe.symbols[::4]):
        assert_quote_sane(quote, when)


def test_spreads_are_a_cent_or_two_for_liquid_names_and_wider_for_volatile_ones(universe: Universe) -> None:
    market, clock = make_market(universe)
    relative: dict[str, list[float]] = {symbol: [] for symbol in ("AAPL", "MSFT", "SPY", "QQQ", "GME", "BYND", "AMC")}
    for _ in range(40):
        for symbol, spreads in relative.items():
            quote = market.quote(symbol)
            if symbol in ("AAPL", "MSFT", "SPY", "QQQ"):
                assert quote.ask - quote.bid <= 0.03 + 1e-9
            spreads.append((quote.ask - quote.bid) / quote.last)
        clock.set_wall(clock.now() + timedelta(seconds=1))
    large = statistics.median(statistics.median(relative[s]) for s in ("AAPL", "MSFT", "SPY", "QQQ"))
    volatile = statistics.median(statistics.median(relative[s]) for s in ("GME", "BYND", "AMC"))
    assert volatile > 3 * large


def test_quotes_move_at_any_hour(universe: Universe) -> None:
    market, clock = make_market(universe, when=SUNDAY_3AM)
    seen = set()
    for _ in range(120):
        seen.add(market.quote("SPY").last)
        clock.set_wall(clock.now() + timedelta(seconds=1))
    assert len(seen) > 3


def test_volume_grows_through_the_day_and_the_close_becomes_the_next_previous_close(universe: Universe) -> None:
    market, clock = make_market(universe)
    day = date(2026, 11, 16)
    volumes = []
    for hour, minute, second in [(0, 0, 30), (4, 0, 0), (9, 31, 0), (12, 0, 0), (16, 0, 0), (23, 59, 59)]:
        clock.set_wall(
            datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=to_new_york(MONDAY_10AM).tzinfo)
        )
        quote = market.quote("AAPL")
        volumes.append(quote.volume)
        assert quote.open == quote.prev_close  # the simulated session runs from midnight to midnight
    assert volumes == sorted(volumes) and volumes[0] < volumes[-1]
    closing = market.quote("AAPL")
    clock.set_wall(clock.now() + timedelta(seconds=2))
    next_day = market.quote("AAPL")
    assert next_day.prev_close == closing.last
    assert next_day.volume < closing.volume
    # Most volume trades in the regular session.
    regular = volumes[4] - volumes[2]
    assert regular > 0.6 * volumes[-1]


def test_the_last_price_is_the_newest_trade_and_volume_is_the_tape(universe: Universe) -> None:
    market, clock = make_market(universe)
    newest = market.time_and_sales("AAPL", 5).trades[0]
    quote = market.quote("AAPL")
    assert (newest.price, newest.size) == (quote.last, quote.last_size)
    clock.set_wall(MONDAY_10AM - timedelta(seconds=90))
    earlier = market.quote("AAPL").volume
    clock.set_wall(MONDAY_10AM)
    trades = market.time_and_sales("AAPL", 500).trades
    since = [t for t in trades if datetime.fromisoformat(t.time) > MONDAY_10AM - timedelta(seconds=90)]
    assert len(since) < len(trades)  # the window is fully inside what the tape returned
    assert quote.volume - earlier == sum(t.size for t in since)


def test_unknown_symbols_are_not_found(universe: Universe) -> None:
    market, _ = make_market(universe)
    for symbol in ["ZZZZ", ".SPX", "", "AAPL261218C231.5", "AAPL270618C250", "XLY261218C235", "ZZZZ261218C10"]:
        with pytest.raises(NotFound):
            market.quote(symbol)
        with pytest.raises(NotFound):
            market.instrument(symbol)


def test_instrument_reference_data(universe: Universe) -> None:
    market, _ = make_market(universe)
    apple = market.instrument("aapl")
    assert (apple.symbol, apple.security_type, apple.exchange, apple.multiplier) == (
        "AAPL",
        SecurityType.EQUITY,
        "NASDAQ",
        1,
    )
    assert apple.cusip == universe.require("AAPL").cusip
    assert market.instrument("SPY").security_type is SecurityType.ETF
    row = market.option_chain("AAPL").expirations[0].strikes[3]
    assert row.put is not None
    option = market.instrument("-" + row.put.symbol)
    assert option.symbol == row.put.symbol
    assert option.security_type is SecurityType.OPTION
    assert option.multiplier == OPTION_MULTIPLIER
    assert option.option is not None
    assert (option.option.underlying, option.option.option_type, option.option.strike) == (
        "AAPL",
        OptionType.PUT,
        row.strike,
    )
    assert "Put" in option.description and len(option.cusip) == 9


# --- options -----------------------------------------------------------------------------------


def test_option_chain_lists_weeklies_monthlies_and_leaps(universe: Universe) -> None:
    market, _ = make_market(universe)
    chain = market.option_chain("AAPL")
    spot = market.quote("AAPL").last
    assert chain.symbol == "AAPL" and chain.underlying_price == spot
    dates = [date.fromisoformat(e.expiration) for e in chain.expirations]
    assert dates == sorted(dates) and len(set(dates)) == len(dates)
    today = date(2026, 11, 16)
    third_fridays = [d for d in dates if 15 <= d.day <= 21 and d.weekday() == 4]
    weeklies = [d for d in dates if d not in third_fridays]
    assert len(weeklies) >= 3 and all((d - today).days <= 35 for d in weeklies)
    monthlies = [d for d in third_fridays if (d - today).days <= 200]
    assert len(monthlies) >= 5
    leaps = [d for d in dates if (d - today).days > 365]
    assert len(leaps) == 2 and all(d.month == 1 for d in leaps)
    assert max(dates) - today <= timedelta(days=800)
    carry = universe.require("AAPL").dividend_yield
    carry_discount = {
        e.expiration: math.exp(
            -carry
            * (expiration_time(date.fromisoformat(e.expiration)) - MONDAY_10AM).total_seconds()
            / SECONDS_PER_YEAR
        )
        for e in chain.expirations
    }
    for expiration in chain.expirations:
        assert expiration.days_to_expiration == (date.fromisoformat(expiration.expiration) - today).days
        strikes = [row.strike for row in expiration.strikes]
        assert strikes == sorted(strikes) and strikes[0] < spot < strikes[-1]
        for row in expiration.strikes:
            assert row.call is not None and row.put is not None
            for side, kind in ((row.call, OptionType.CALL), (row.put, OptionType.PUT)):
                contract = parse_option_symbol(side.symbol)
                assert (contract.option_type, contract.strike, contract.expiration.isoformat()) == (
                    kind,
                    row.strike,
                    expiration.expiration,
                )
                assert 0 <= side.bid < side.ask
                assert side.bid <= side.last <= side.ask
                assert side.open_interest > 0 and side.volume >= 0
            assert 0 <= row.call.greeks.delta <= 1 and -1 <= row.put.greeks.delta <= 0
            assert row.call.greeks.delta - row.put.greeks.delta == pytest.approx(carry_discount[expiration.expiration])
            assert row.call.greeks.gamma == pytest.approx(row.put.greeks.gamma, rel=1e-9)


def test_option_quotes_match_the_chain_and_put_call_parity(universe: Universe) -> None:
    market, _ = make_market(universe)
    chain = market.option_chain("MSFT")
    expiration = chain.expirations[near_term_expiration(chain)]
    spot = market.quote("MSFT").last
    years = (
        expiration_time(date.fromisoformat(expiration.expiration)) - MONDAY_10AM
    ).total_seconds() / SECONDS_PER_YEAR
    carry = universe.require("MSFT").dividend_yield
    near = sorted(expiration.strikes, key=lambda row: abs(row.strike - spot))[:8]
    for row in near:
        assert row.call is not None and row.put is not None
        call, put = market.quote(row.call.symbol), market.quote(row.put.symbol)
        assert (call.bid, call.ask, put.bid, put.ask) == (row.call.bid, row.call.ask, row.put.bid, row.put.ask)
        assert call.greeks is not None and put.greeks is not None
        assert call.greeks.implied_volatility == put.greeks.implied_volatility
        parity = spot * math.exp(-carry * years) - row.strike * math.exp(-RISK_FREE_RATE * years)
        mids = (call.bid + call.ask) / 2 - (put.bid + put.ask) / 2
        assert abs(mids - parity) <= (call.ask - call.bid + put.ask - put.bid) / 2 + 0.01
        for quote in (call, put):
            assert quote.bid < quote.ask <= quote.bid + max(0.10, 0.08 * quote.ask)
            assert quote.low is not None and quote.high is not None
            assert quote.low <= quote.last <= quote.high


def test_implied_volatility_has_a_put_skew(universe: Universe) -> None:
    market, _ = make_market(universe)
    chain = market.option_chain("SPY")
    expiration = chain.expirations[near_term_expiration(chain, 30)]
    spot = chain.underlying_price
    low = min(expiration.strikes, key=lambda row: abs(row.strike - 0.92 * spot))
    atm = min(expiration.strikes, key=lambda row: abs(row.strike - spot))
    assert low.put is not None and atm.put is not None
    assert low.put.greeks.implied_volatility > atm.put.greeks.implied_volatility


def test_expirations_move_off_exchange_holidays(universe: Universe) -> None:
    market, _ = make_market(universe, when=datetime(2026, 3, 10, 14, tzinfo=UTC))
    expirations = market.listed_expirations("SPY")
    assert date(2026, 4, 2) in expirations  # Good Friday 2026-04-03: the weekly expires on Thursday
    assert date(2026, 4, 3) not in expirations


def test_listed_strikes_stay_listed_as_the_price_moves(universe: Universe) -> None:
    market, clock = make_market(universe)
    target = date(2027, 4, 16)
    before = market.listed_strikes("GME", target)
    for days in (10, 40, 90):
        clock.set_wall(MONDAY_10AM + timedelta(days=days))
        after = market.listed_strikes("GME", target)
        assert set(before) <= set(after)
        before = after
    far = f"GME270416C{before[-1]:g}"
    assert market.quote(far).bid >= 0


def test_an_expired_option_quotes_its_settlement_value(universe: Universe) -> None:
    market, clock = make_market(universe)
    expiration = market.option_chain("AAPL").expirations[0]
    assert expiration.expiration == "2026-11-20"
    rows = expiration.strikes
    clock.set_wall(datetime(2026, 11, 21, 15, tzinfo=UTC))
    day = date(2026, 11, 20)
    bars = market.chart("AAPL", day, day, BarWidth.MIN1, extended_hours=True).bars
    settle = next(bar.open for bar in bars if bar.date == "2026-11-20T16:00:00-05:00")
    for row in (rows[0], rows[len(rows) // 2], rows[-1]):
        assert row.call is not None and row.put is not None
        call, put = market.quote(row.call.symbol), market.quote(row.put.symbol)
        assert call.last == pytest.approx(max(0.0, settle - row.strike), abs=0.006)
        assert put.last == pytest.approx(max(0.0, row.strike - settle), abs=0.006)
        assert call.bid < call.ask
        assert market.instrument(row.call.symbol).option is not None  # still known for settling positions
    assert date(2026, 11, 20) not in market.listed_expirations("AAPL")


# --- depth, routing ------------------------------------------------------------------------------


@pytest.mark.parametrize("symbol", ["AAPL", "GME", "BYND", "option"])
def test_montage_best_prices_are_the_nbbo(universe: Universe, symbol: str) -> None:
    market, _ = make_market(universe)
    if symbol == "option":
        row = market.option_chain("QQQ").expirations[1].strikes[10]
        assert row.call is not None
        symbol = row.call.symbol
    montage = market.montage(symbol)
    quote = market.quote(symbol)
    rows = montage.quotes
    assert 6 <= len(rows) <= 10
    assert len({row.exchange for row in rows}) == len(rows)
    assert max(row.bid for row in rows) == quote.bid
    assert min(row.ask for row in rows) == quote.ask
    assert sum(row.bid_size for row in rows if row.bid == quote.bid) == quote.bid_size
    assert sum(row.ask_size for row in rows if row.ask == quote.ask) == quote.ask_size
    assert all(row.bid <= quote.bid and row.ask >= quote.ask and row.bid < row.ask for row in rows)
    codes = {row.exchange for row in rows}
    if quote.greeks is None:
        assert codes <= EQUITY_VENUES
    else:
        assert "CBOE" in codes


def test_available_markets(universe: Universe) -> None:
    market, _ = make_market(universe)
    equity = market.available_markets("AAPL").markets
    assert equity[0].routing_code == "AUTO" and equity[0].default
    assert sum(m.default for m in equity) == 1
    assert {"EXCHANGE", "MARKET_MAKER"} <= {m.market_type for m in equity}
    row = market.option_chain("SPY").expirations[0].strikes[0]
    assert row.put is not None
    option = market.available_markets(row.put.symbol)
    assert option.symbol == row.put.symbol
    assert "CBOE" in {m.routing_code for m in option.markets}
    with pytest.raises(NotFound):
        market.available_markets("ZZZZ")


# --- charts --------------------------------------------------------------------------------------


def assert_bars_sane(bars: list[Bar]) -> None:
    for bar in bars:
        assert bar.high >= max(bar.open, bar.close) >= min(bar.open, bar.close) >= bar.low > 0
        assert bar.volume > 0


def aggregate(bars: list[Bar]) -> tuple[float, float, float, float, int]:
    return (
        bars[0].open,
        max(b.high for b in bars),
        min(b.low for b in bars),
        bars[-1].close,
        sum(b.volume for b in bars),
    )


@pytest.mark.parametrize("when", [MONDAY_10AM, SUNDAY_3AM, TUESDAY_5PM])
def test_daily_weekly_and_monthly_bars_end_at_the_quote_and_aggregate_exactly(
    universe: Universe, when: datetime
) -> None:
    market, _ = make_market(universe, when=when)
    quote = market.quote("NVDA")
    today = to_new_york(when).date()
    daily = market.chart("NVDA", bar_width=BarWidth.DAY)
    assert daily.symbol_info.previous_close == quote.prev_close
    assert daily.symbol_info.description == "NVIDIA Corporation"
    assert len(daily.bars) == 366 and daily.bars[-1].date == today.isoformat()
    last = daily.bars[-1]
    assert (last.open, last.high, last.low, last.close, last.volume) == (
        quote.open,
        quote.high,
        quote.low,
        quote.last,
        quote.volume,
    )
    assert daily.bars[-2].close == quote.prev_close
    assert_bars_sane(daily.bars)

    start = today - timedelta(days=5 * 365)
    all_days = market.chart("NVDA", start, today, BarWidth.DAY).bars
    for width, key in ((BarWidth.WEEK, lambda d: d.isocalendar()[:2]), (BarWidth.MONTH, lambda d: (d.year, d.month))):
        grouped: dict[tuple[int, int], list[Bar]] = {}
        for bar in all_days:
            grouped.setdefault(key(date.fromisoformat(bar.date)), []).append(bar)
        bars = market.chart("NVDA", bar_width=width).bars
        assert [(b.open, b.high, b.low, b.close, b.volume) for b in bars] == [aggregate(g) for g in grouped.values()]
        assert bars[-1].close == quote.last


def test_chart_honours_the_date_range(universe: Universe) -> None:
    market, _ = make_market(universe)
    bars = market.chart("KO", date(2026, 1, 1), date(2026, 1, 31), BarWidth.DAY).bars
    assert [b.date for b in bars] == [(date(2026, 1, 1) + timedelta(days=i)).isoformat() for i in range(31)]
    assert market.chart("KO", date(2019, 6, 1), date(2019, 12, 31), BarWidth.DAY).bars == []
    with pytest.raises(ValidationFailed, match="after"):
        market.chart("KO", date(2026, 2, 1), date(2026, 1, 1), BarWidth.DAY)
    with pytest.raises(ValidationFailed, match="not options"):
        market.chart("KO261218C70", bar_width=BarWidth.DAY)
    with pytest.raises(NotFound):
        market.chart("ZZZZ", bar_width=BarWidth.DAY)


@pytest.mark.parametrize("day", [date(2026, 11, 13), date(2026, 11, 1)])  # a Friday, and the day DST ends
def test_intraday_bars_of_a_whole_day_aggregate_to_its_daily_bar(universe: Universe, day: date) -> None:
    market, _ = make_market(universe)
    daily = market.chart("TSLA", day, day, BarWidth.DAY).bars
    minutes = market.chart("TSLA", day, day, BarWidth.MIN1, extended_hours=True).bars
    hours = market.chart("TSLA", day, day, BarWidth.MIN60, extended_hours=True).bars
    length = 25 if day == date(2026, 11, 1) else 24
    assert len(minutes) == 60 * length and len(hours) == length
    assert_bars_sane(minutes)
    expected = (daily[0].open, daily[0].high, daily[0].low, daily[0].close, daily[0].volume)
    assert aggregate(minutes) == expected
    assert aggregate(hours) == expected
    midnight_offset = "-04:00" if day == date(2026, 11, 1) else "-05:00"  # daylight time until 02:00 that day
    assert hours[0].date == f"{day.isoformat()}T00:00:00{midnight_offset}"
    regular = market.chart("TSLA", day, day, BarWidth.MIN15).bars
    assert len(regular) == 26
    assert regular[0].date == f"{day.isoformat()}T09:30:00-05:00"
    assert regular[-1].date == f"{day.isoformat()}T15:45:00-05:00"


def test_intraday_bars_end_at_the_quote(universe: Universe) -> None:
    at = MONDAY_10AM + timedelta(minutes=7, seconds=31)  # 10:07:31 New York
    market, _ = make_market(universe, when=at)
    quote = market.quote("AMZN")
    five = market.chart("AMZN", bar_width=BarWidth.MIN5)
    assert five.bars[-1].date == "2026-11-16T10:05:00-05:00"
    assert five.bars[-1].close == quote.last
    assert len({b.date[:10] for b in five.bars}) == 5  # five days by default
    assert all("09:30:00" <= b.date[11:19] < "16:00:00" for b in five.bars)
    assert all(int(b.date[14:16]) % 5 == 0 for b in five.bars)
    one = market.chart("AMZN", bar_width=BarWidth.MIN1).bars
    assert [b.date[11:16] for b in one][:2] == ["09:30", "09:31"] and one[-1].date[11:16] == "10:07"
    assert one[-1].close == quote.last
    assert_bars_sane(one)
    night, _ = make_market(universe, when=SUNDAY_3AM)
    extended = night.chart("AMZN", bar_width=BarWidth.MIN15, extended_hours=True).bars
    assert extended[-1].close == night.quote("AMZN").last
    assert extended[-1].date == "2026-11-15T03:00:00-05:00"


# --- time and sales ----------------------------------------------------------------------------


def test_time_and_sales_is_newest_first_capped_and_filtered(universe: Universe) -> None:
    market, _ = make_market(universe)
    everything = market.time_and_sales("AAPL", 10_000).trades
    assert len(everything) == TIME_AND_SALES_CAP
    times = [datetime.fromisoformat(t.time) for t in everything]
    assert times == sorted(times, reverse=True) and times[0] <= MONDAY_10AM
    assert {t.exchange for t in everything} <= EQUITY_VENUES
    assert len(market.time_and_sales("AAPL", 7).trades) == 7
    for trade in everything:
        assert trade.condition == ("I" if trade.size < 100 else "F")
    assert any(t.condition == "I" for t in everything)

    prices = sorted({t.price for t in everything})
    low, high = prices[1], prices[-2]
    filtered = market.time_and_sales("AAPL", 500, low_price=low, high_price=high).trades
    assert filtered and all(low <= t.price <= high for t in filtered)
    assert {t.price for t in filtered} >= {low, high}  # the bounds are inclusive
    big = market.time_and_sales("AAPL", 100, low_size=1000).trades
    assert big and all(t.size >= 1000 for t in big)
    assert market.time_and_sales("AAPL", 100, low_size=10**12).trades == []
    with pytest.raises(ValidationFailed):
        market.time_and_sales("AAPL", 0)
    with pytest.raises(ValidationFailed):
        market.time_and_sales("AAPL", 10, low_price=5, high_price=4)


def test_trades_outside_the_regular_session_are_marked_extended(universe: Universe) -> None:
    market, _ = make_market(universe, when=SUNDAY_3AM)
    trades = market.time_and_sales("SPY", 200).trades
    assert trades and {t.condition for t in trades} == {"T"}


# --- borrow and short interest -----------------------------------------------------------------


def test_hard_to_borrow(universe: Universe) -> None:
    market, _ = make_market(universe)
    beyond, apple = market.hard_to_borrow(["BYND", "aapl"])
    assert beyond.htb_ind and beyond.locate_required_ind and beyond.is_hard_to_borrow and beyond.needs_locate
    assert beyond.borrow_rate > 5 and beyond.status == "HTB"
    assert not apple.htb_ind and not apple.locate_required_ind and apple.status == "ETB"
    assert 0 < apple.borrow_rate < 1
    for row in (beyond, apple):
        assert row.available_qty > 0 and row.available_qty % 100 == 0
        assert row.cusip == universe.require(row.symbol).cusip
    with pytest.raises(NotFound):
        market.hard_to_borrow(["ZZZZ"])
    with pytest.raises(ValidationFailed):
        market.hard_to_borrow(["GME261218C20"])


def test_short_insights_are_consistent(universe: Universe) -> None:
    market, _ = make_market(universe)
    (detail,) = market.short_insights(["GME"])
    settlement = date.fromisoformat(detail.settlement_date)
    assert settlement <= date(2026, 11, 16) - timedelta(days=8)
    assert detail.short_interest == detail.shares_short > 0
    assert detail.short_interest_ratio == detail.days_to_cover
    float_shares = universe.require("GME").float_shares
    assert detail.short_pct_of_float == pytest.approx(100 * detail.shares_short / float_shares, abs=0.005)
    volumes = [b.volume for b in market.chart("GME", settlement - timedelta(days=14), settlement, BarWidth.DAY).bars]
    assert detail.days_to_cover == pytest.approx(detail.shares_short / statistics.mean(volumes), abs=0.005)

    series = {
        metric: market.short_insight_series("GME", metric, date(2026, 1, 1), None).points
        for metric in SHORT_INSIGHT_METRICS
    }
    dates = [date.fromisoformat(p.date) for p in series["sharesShort"]]
    assert dates == sorted(dates) and dates[0] >= date(2026, 1, 1) and dates[-1] == settlement
    assert all(12 <= d.day <= 15 or d.day >= 26 for d in dates)  # mid-month and month-end
    assert len(dates) == 20  # January to October 2026; November's first figures are not out yet
    assert series["sharesShort"][-1].value == detail.shares_short
    assert series["shortInterest"][-1].value == detail.short_interest
    assert series["daysToCover"][-1].value == detail.days_to_cover
    assert series["shortPctOfFloat"][-1].value == detail.short_pct_of_float
    assert series["borrowRate"][-1].value == detail.borrow_rate
    assert series["sharesShort"][-2].value == detail.prior_shares_short
    assert market.short_insight_series("GME", "DAYSTOCOVER").metric == "daysToCover"


def test_unknown_short_metric_names_the_allowed_ones(universe: Universe) -> None:
    market, _ = make_market(universe)
    with pytest.raises(ValidationFailed, match="shortInterest, daysToCover") as caught:
        market.short_insight_series("GME", "shortRatio")
    assert caught.value.details[0]["field"] == "metric"
    assert caught.value.details[0]["allowed"] == list(SHORT_INSIGHT_METRICS)


# --- performance -------------------------------------------------------------------------------


def test_warm_quotes_are_cheap(universe: Universe) -> None:
    market, clock = make_market(universe)
    symbols = list(universe.symbols[:50])
    market.quotes(symbols)
    count = 0
    started = time.perf_counter()
    for _ in range(20):
        clock.set_wall(clock.now() + timedelta(seconds=1))
        for symbol in symbols:
            market.quote(symbol)
            count += 1
    assert (time.perf_counter() - started) / count < 0.0005


def test_quotes_of_options_carry_greeks(universe: Universe) -> None:
    market, _ = make_market(universe)
    row = market.option_chain("IWM").expirations[2].strikes[8]
    assert row.call is not None
    quote: Quote = market.quote(row.call.symbol)
    assert quote.greeks is not None and quote.greeks.implied_volatility > 0
    assert quote.prev_close is not None and quote.prev_close > 0
    assert quote.volume >= 0 and quote.bid_size >= 1
