"""Research on the simulated market: earnings, dividends, search, position analytics and the screener."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, date, datetime

import pytest

from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.research import SCREENER_FIELDS, PaperResearch, realized_volatility
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.accounts import OptionType
from ftdesk.domain.errors import NotFound, ValidationFailed
from ftdesk.domain.market import ChainExpiration, ChainStrike, OptionQuote
from ftdesk.domain.research import AnalyticsLeg, AnalyticsRequest, ScanCriterion, ScanDefinition
from tests.fakes.clock import ManualClock

MONDAY_10AM = datetime(2026, 11, 16, 15, 0, tzinfo=UTC)
TODAY = date(2026, 11, 16)


@pytest.fixture(scope="module")
def universe() -> Universe:
    return Universe.load()


@pytest.fixture(scope="module")
def market(universe: Universe) -> MarketSimulator:
    return MarketSimulator(universe, 11, ManualClock(MONDAY_10AM))


@pytest.fixture(scope="module")
def research(market: MarketSimulator, universe: Universe) -> PaperResearch:
    return PaperResearch(market, universe)


def monthly(market: MarketSimulator, symbol: str) -> ChainExpiration:
    chain = market.option_chain(symbol)
    return next(e for e in chain.expirations if 25 <= e.days_to_expiration <= 60)


def at_the_money(expiration: ChainExpiration, spot: float, offset: int = 0) -> ChainStrike:
    rows = expiration.strikes
    index = min(range(len(rows)), key=lambda i: abs(rows[i].strike - spot))
    return rows[index + offset]


def side(row: ChainStrike, kind: OptionType) -> OptionQuote:
    quote = row.call if kind is OptionType.CALL else row.put
    assert quote is not None
    return quote


# --- earnings and dividends --------------------------------------------------------------------


def test_earnings_show_four_reported_quarters_and_the_next_report(research: PaperResearch) -> None:
    events = research.earnings(["AAPL", "JPM"])
    for symbol in ("AAPL", "JPM"):
        rows = [e for e in events if e.symbol == symbol]
        assert len(rows) == 5
        dates = [date.fromisoformat(e.report_date) for e in rows]
        assert dates == sorted(dates) and dates[3] <= TODAY < dates[4]
        assert all(d.weekday() < 5 for d in dates)
        for past in rows[:4]:
            assert past.eps_actual is not None and past.eps_estimate is not None and past.surprise_pct is not None
            expected = 100 * (past.eps_actual - past.eps_estimate) / abs(past.eps_estimate)
            assert past.surprise_pct == pytest.approx(expected, abs=0.01)
        assert rows[4].eps_actual is None and rows[4].surprise_pct is None and rows[4].eps_estimate is not None
        # Consecutive fiscal quarters, e.g. Q4 2025, Q1 2026, Q2 2026, Q3 2026, Q4 2026.
        quarters = [(int(e.fiscal_period[3:]), int(e.fiscal_period[1])) for e in rows]
        assert all((y * 4 + q) - (y0 * 4 + q0) == 1 for (y0, q0), (y, q) in itertools.pairwise(quarters))
    jpm = [e for e in events if e.symbol == "JPM"]
    assert {e.timing for e in jpm} == {"BMO"}
    assert all(date.fromisoformat(e.report_date).month in (1, 4, 7, 10) for e in jpm)


def test_earnings_of_etfs_are_empty_and_unknown_symbols_are_not_found(research: PaperResearch) -> None:
    assert research.earnings(["SPY", "TLT"]) == []
    with pytest.raises(NotFound):
        research.earnings(["ZZZZ"])


def test_earnings_are_deterministic_under_the_seed(universe: Universe, research: PaperResearch) -> None:
    again = PaperResearch(MarketSimulator(universe, 11, ManualClock(MONDAY_10AM)), universe)
    other = PaperResearch(MarketSimulator(universe, 12, ManualClock(MONDAY_10AM)), universe)
    assert again.earnings(["MSFT"]) == research.earnings(["MSFT"])
    assert other.earnings(["MSFT"]) != research.earnings(["MSFT"])


def test_dividends_follow_yield_and_schedule(
    universe: Universe, market: MarketSimulator, research: PaperResearch
) -> None:
    events = research.dividends(["KO", "O", "TSLA"])
    assert {e.symbol for e in events} == {"KO", "O"}  # Tesla pays no dividend
    ko = [e for e in events if e.symbol == "KO"]
    security = universe.require("KO")
    assert len(ko) == 5
    ex_dates = [date.fromisoformat(e.ex_date) for e in ko]
    assert ex_dates == sorted(ex_dates) and ex_dates[3] <= TODAY < ex_dates[4]
    assert all(80 <= (b - a).days <= 100 for a, b in itertools.pairwise(ex_dates))  # quarterly
    price = market.quote("KO").last
    for event in ko:
        assert event.frequency == "QUARTERLY"
        assert event.amount == pytest.approx(security.price * security.dividend_yield / 4, abs=1e-4)
        assert event.yield_pct == pytest.approx(100 * event.amount * 4 / price, abs=1e-3)
        assert event.record_date >= event.ex_date and event.pay_date > event.ex_date
    monthly_dates = [date.fromisoformat(e.ex_date) for e in events if e.symbol == "O"]
    assert len(monthly_dates) == 5 and all(25 <= (b - a).days <= 35 for a, b in itertools.pairwise(monthly_dates))
    with pytest.raises(NotFound):
        research.dividends(["ZZZZ"])


# --- search ------------------------------------------------------------------------------------


def test_search_ranks_exact_then_prefix_then_word_then_substring(research: PaperResearch) -> None:
    def symbols(query: str) -> list[str]:
        return [s.symbol for s in research.search(query).suggestions]

    assert symbols("aapl")[0] == "AAPL"
    assert symbols("AA")[0] == "AAPL"
    found = symbols("c")
    assert found[0] == "C" and all(s.startswith("C") for s in found) and len(found) == 10
    assert symbols("apple") == ["AAPL"]
    micro = symbols("micro")
    assert set(micro) == {"MSFT", "MU", "AMD", "SMCI"}  # Microsoft, Micron, Advanced Micro, Super Micro
    assert symbols("soft") == ["MSFT"]  # only inside a word
    general = symbols("ge")
    assert general[:2] == ["GE", "GM"]  # the exact symbol, then "General Motors" (a word of the description)
    # Word starts (Duke Energy, NextEra Energy, Energy Select) before a match inside a word (GENERAL Motors).
    assert symbols("ener") == ["DUK", "NEE", "XLE", "GM"]
    assert symbols("   ") == []
    suggestion = research.search("spy").suggestions[0]
    assert (suggestion.symbol, suggestion.security_type, suggestion.exchange) == ("SPY", "ETF", "NYSE ARCA")


# --- position analytics ------------------------------------------------------------------------


def test_long_call(market: MarketSimulator, research: PaperResearch) -> None:
    spot = market.quote("AAPL").last
    expiration = monthly(market, "AAPL")
    call = side(at_the_money(expiration, spot), OptionType.CALL)
    result = research.analyze(AnalyticsRequest(symbol="AAPL", legs=[AnalyticsLeg(symbol=call.symbol, quantity=2)]))
    premium = round((call.bid + call.ask) / 2, 4)
    assert result.legs[0].price == pytest.approx(premium)  # the mid when no price is given
    assert result.net_cost == pytest.approx(2 * 100 * premium, abs=0.01)
    assert result.max_profit is None  # unbounded upside
    assert result.max_loss == pytest.approx(-2 * 100 * premium, abs=0.01)
    assert result.breakevens == [pytest.approx(call.strike + premium, abs=0.01)]
    assert len(result.pnl_curve) == 61
    assert result.pnl_curve[0].underlying_price == pytest.approx(0.7 * spot, abs=0.01)
    assert result.pnl_curve[-1].underlying_price == pytest.approx(1.3 * spot, abs=0.01)
    assert result.delta == pytest.approx(2 * 100 * call.greeks.delta, rel=1e-3)
    assert result.gamma == pytest.approx(2 * 100 * call.greeks.gamma, rel=1e-3)
    assert result.theta < 0 < result.vega
    middle = result.pnl_curve[30]
    assert middle.underlying_price == pytest.approx(spot, abs=0.01)
    assert abs(middle.pnl_now) < 2 * 100 * (call.ask - call.bid)  # worth about what it cost


def test_short_call_has_unbounded_loss(market: MarketSimulator, research: PaperResearch) -> None:
    expiration = monthly(market, "AAPL")
    call = side(at_the_money(expiration, market.quote("AAPL").last, 2), OptionType.CALL)
    result = research.analyze(
        AnalyticsRequest(symbol="AAPL", legs=[AnalyticsLeg(symbol=call.symbol, quantity=-1, price=3.0)])
    )
    assert result.net_cost == -300.0
    assert result.max_profit == 300.0 and result.max_loss is None
    assert result.breakevens == [pytest.approx(call.strike + 3.0)]
    assert result.delta < 0


def test_long_stock_and_covered_call(market: MarketSimulator, research: PaperResearch) -> None:
    stock = research.analyze(
        AnalyticsRequest(symbol="MSFT", legs=[AnalyticsLeg(symbol="MSFT", quantity=100, price=400)])
    )
    assert stock.max_profit is None and stock.max_loss == -40_000.0
    assert stock.breakevens == [400.0] and stock.delta == 100.0 and stock.gamma == 0.0
    assert stock.legs[0].greeks is None and stock.legs[0].option_type is None

    call = side(at_the_money(monthly(market, "MSFT"), market.quote("MSFT").last, 2), OptionType.CALL)
    covered = research.analyze(
        AnalyticsRequest(
            symbol="msft",
            legs=[
                AnalyticsLeg(symbol="MSFT", quantity=100, price=400),
                AnalyticsLeg(symbol=call.symbol, quantity=-1, price=5),
            ],
        )
    )
    assert covered.max_profit == pytest.approx((call.strike - 400 + 5) * 100)
    assert covered.max_loss == pytest.approx(-(400 - 5) * 100)
    assert covered.breakevens == [pytest.approx(395.0)]


def test_vertical_spread_and_straddle(market: MarketSimulator, research: PaperResearch) -> None:
    spot = market.quote("SPY").last
    expiration = monthly(market, "SPY")
    low, high = at_the_money(expiration, spot), at_the_money(expiration, spot, 5)
    width = high.strike - low.strike
    spread = research.analyze(
        AnalyticsRequest(
            symbol="SPY",
            legs=[
                AnalyticsLeg(symbol=side(low, OptionType.CALL).symbol, quantity=1, price=3.0),
                AnalyticsLeg(symbol=side(high, OptionType.CALL).symbol, quantity=-1, price=1.0),
            ],
        )
    )
    assert spread.net_cost == 200.0
    assert spread.max_profit == pytest.approx((width - 2.0) * 100)
    assert spread.max_loss == pytest.approx(-200.0)
    assert spread.breakevens == [pytest.approx(low.strike + 2.0)]

    straddle = research.analyze(
        AnalyticsRequest(
            symbol="SPY",
            legs=[
                AnalyticsLeg(symbol=side(low, OptionType.CALL).symbol, quantity=1, price=4.0),
                AnalyticsLeg(symbol=side(low, OptionType.PUT).symbol, quantity=1, price=4.0),
            ],
        )
    )
    assert straddle.breakevens == [pytest.approx(low.strike - 8.0), pytest.approx(low.strike + 8.0)]
    assert straddle.max_loss == pytest.approx(-800.0) and straddle.max_profit is None
    assert abs(straddle.delta) < 30  # near delta-neutral
    assert straddle.legs[1].option_type is OptionType.PUT and straddle.legs[1].strike == low.strike


def test_analytics_errors(market: MarketSimulator, research: PaperResearch) -> None:
    call = side(at_the_money(monthly(market, "AAPL"), market.quote("AAPL").last), OptionType.CALL)
    with pytest.raises(ValidationFailed, match="not on MSFT"):
        research.analyze(AnalyticsRequest(symbol="MSFT", legs=[AnalyticsLeg(symbol=call.symbol, quantity=1)]))
    with pytest.raises(ValidationFailed, match="AAPL"):
        research.analyze(AnalyticsRequest(symbol="MSFT", legs=[AnalyticsLeg(symbol="AAPL", quantity=1)]))
    with pytest.raises(NotFound):
        research.analyze(AnalyticsRequest(symbol="ZZZZ", legs=[AnalyticsLeg(symbol="ZZZZ", quantity=1)]))
    with pytest.raises(NotFound):
        research.analyze(AnalyticsRequest(symbol="AAPL", legs=[AnalyticsLeg(symbol="AAPL991231C5", quantity=1)]))
    with pytest.raises(NotFound):
        research.analyze(AnalyticsRequest(symbol="AAPL", legs=[AnalyticsLeg(symbol="NOT-A-SYMBOL", quantity=1)]))
    with pytest.raises(ValidationFailed, match="zero"):
        research.analyze(AnalyticsRequest(symbol="AAPL", legs=[AnalyticsLeg(symbol="AAPL", quantity=0)]))


# --- screener ----------------------------------------------------------------------------------


def test_realized_volatility_is_the_annualised_sample_deviation() -> None:
    step = 0.01
    closes = [100.0, 100.0 * math.exp(step), 100.0, 100.0 * math.exp(step), 100.0]  # returns +1%, -1%, +1%, -1%
    assert realized_volatility(closes) == pytest.approx(step * math.sqrt(4 / 3) * math.sqrt(365))
    assert realized_volatility([100.0, 101.0]) == 0.0  # one return says nothing


@pytest.fixture(scope="module")
def everything(research: PaperResearch) -> list[dict[str, float | str | int]]:
    result = research.screener(ScanDefinition(limit=500))
    return [row.model_dump() for row in result.rows]


def test_screener_covers_the_optionable_symbols(
    universe: Universe, market: MarketSimulator, everything: list[dict[str, float | str | int]]
) -> None:
    assert {row["symbol"] for row in everything} == {s.symbol for s in universe.optionable()}
    ranks = [float(row["iv_rank"]) for row in everything]
    assert ranks == sorted(ranks, reverse=True)  # the default sort
    assert all(0 <= rank <= 100 for rank in ranks)
    spy = next(row for row in everything if row["symbol"] == "SPY")
    assert spy["price"] == market.quote("SPY").last
    closes = market.daily_closes("SPY", 20)
    assert len(closes) == 20
    assert spy["hv"] == pytest.approx(realized_volatility(closes), abs=1e-4)
    assert spy["iv"] == pytest.approx(market.atm_iv("SPY", 30), abs=1e-4)
    assert spy["iv_hv_ratio"] == pytest.approx(float(spy["iv"]) / float(spy["hv"]), abs=2e-3)
    history = market.iv_history("SPY", 365)
    assert len(history) == 365 and history[-1] == pytest.approx(float(spy["iv"]), abs=1e-4)
    expected_rank = 100 * (history[-1] - min(history)) / (max(history) - min(history))
    assert spy["iv_rank"] == pytest.approx(expected_rank, abs=0.01)


def test_screener_filters_inclusively_sorts_and_limits(
    research: PaperResearch, everything: list[dict[str, float | str | int]]
) -> None:
    prices = sorted(float(row["price"]) for row in everything)
    low, high = prices[10], prices[30]
    scan = ScanDefinition(
        criteria=[ScanCriterion(field="price", min=low, max=high)], sort_by="price", descending=False, limit=5
    )
    result = research.screener(scan)
    assert result.total_matches == sum(1 for p in prices if low <= p <= high) >= 21
    assert [row.price for row in result.rows] == prices[10:15]
    both = research.screener(
        ScanDefinition(
            criteria=[ScanCriterion(field="iv", min=0.5), ScanCriterion(field="volume", max=5_000_000)], limit=500
        )
    )
    expected = {r["symbol"] for r in everything if float(r["iv"]) >= 0.5 and int(r["volume"]) <= 5_000_000}
    assert {row.symbol for row in both.rows} == expected and both.total_matches == len(expected)
    by_symbol = research.screener(ScanDefinition(sort_by="symbol", descending=False, limit=3))
    assert [row.symbol for row in by_symbol.rows] == sorted(str(r["symbol"]) for r in everything)[:3]


def test_screener_refuses_unknown_fields(research: PaperResearch) -> None:
    with pytest.raises(ValidationFailed, match="iv, hv, iv_rank") as caught:
        research.screener(ScanDefinition(criteria=[ScanCriterion(field="pe_ratio", min=1)]))
    assert caught.value.details[0]["field"] == "criteria.field"
    assert caught.value.details[0]["allowed"] == list(SCREENER_FIELDS)
    with pytest.raises(ValidationFailed, match="sort"):
        research.screener(ScanDefinition(sort_by="beta"))
    with pytest.raises(ValidationFailed, match="above"):
        research.screener(ScanDefinition(criteria=[ScanCriterion(field="iv", min=2, max=1)]))
