"""Fidelity market-data REST through the real client against the fake upstream on a socket."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from pydantic import SecretStr

from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.values import new_york_date
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import OptionType
from ftdesk.domain.clock import SystemClock
from ftdesk.domain.market import BarWidth
from ftdesk.domain.session import Credentials
from tests.component.conftest import FIDELITY_PASSWORD, FIDELITY_USER
from tests.fakes.clock import ANCHOR, AnchoredClock
from tests.fakes.fidelity_server import FakeFidelity


def last_request(fake: FakeFidelity, path: str) -> tuple[str, dict[str, str] | None, object]:
    request = next(r for r in reversed(fake.requests) if r.path == path)
    return request.method, request.headers, request.body


async def test_option_chain_pairs_calls_and_puts_by_strike_with_model_greeks(broker: FidelityBroker) -> None:
    chain = await broker.market_data.get_option_chain("aapl")
    assert chain.symbol == "AAPL" and chain.underlying_price == 182.50
    assert [x.days_to_expiration for x in chain.expirations] == sorted(x.days_to_expiration for x in chain.expirations)
    first = chain.expirations[0]
    assert [s.strike for s in first.strikes] == [165.0, 170.0, 175.0, 180.0, 185.0, 190.0, 195.0]
    deltas = [s.call.greeks.delta for s in first.strikes if s.call]
    # Days before a weekly expiration a deep in-the-money call's delta rounds to 1.0 (six places).
    assert deltas == sorted(deltas, reverse=True) and all(0 <= d <= 1 for d in deltas) and deltas[0] > 0.9
    atm = first.strikes[3]
    assert atm.call is not None and atm.put is not None
    assert 0 < atm.call.greeks.delta < 1
    assert atm.call.symbol.startswith("AAPL") and not atm.call.symbol.startswith("-")
    assert atm.call.option_type is OptionType.CALL and -1 < atm.put.greeks.delta < 0
    assert atm.call.bid == atm.call.ask == 0.0  # chainLite has no prices; nothing is invented
    # A single-contract expiration arrives as a lone XML element and still maps.
    assert len(chain.expirations[-1].strikes) == 1
    assert chain.raw is not None and "OPTIONCHAIN" in chain.raw


@pytest.mark.parametrize("days_after_anchor", range(7))
async def test_the_chain_on_every_day_of_the_week_starts_at_the_next_friday(days_after_anchor: int) -> None:
    clock = AnchoredClock(ANCHOR + timedelta(days=days_after_anchor))  # Monday .. Sunday
    fake = FakeFidelity(username=FIDELITY_USER, password=FIDELITY_PASSWORD, clock=clock)
    await fake.start()
    broker = FidelityBroker(FidelityConfig(upstream=fake.base_url, request_timeout=5.0, read_share=0.0), clock)
    try:
        await broker.start()
        await broker.session.login(Credentials(username=FIDELITY_USER, password=SecretStr(FIDELITY_PASSWORD)))
        chain = await broker.market_data.get_option_chain("AAPL")
    finally:
        await broker.close()
        await fake.close()
    today = fake.today()
    first = chain.expirations[0]
    assert date.fromisoformat(first.expiration).weekday() == 4 and 1 <= first.days_to_expiration <= 7
    assert (date.fromisoformat(first.expiration) - today).days == first.days_to_expiration
    deltas = [s.call.greeks.delta for s in first.strikes if s.call]
    assert deltas == sorted(deltas, reverse=True) and all(0 <= d <= 1 for d in deltas)
    atm = first.strikes[3]
    assert atm.call is not None and atm.put is not None
    assert 0 < atm.call.greeks.delta < 1 and -1 < atm.put.greeks.delta < 0


async def test_chain_of_an_unknown_symbol_is_not_found(broker: FidelityBroker) -> None:
    with pytest.raises(e.NotFound):
        await broker.market_data.get_option_chain("NOSUCHSYMBOLX")


async def test_montage_of_an_option_and_an_equity(broker: FidelityBroker, fake: FakeFidelity) -> None:
    chain = await broker.market_data.get_option_chain("AAPL")
    call = chain.expirations[0].strikes[3].call
    assert call is not None
    montage = await broker.market_data.get_montage(call.symbol)
    assert montage.symbol == call.symbol and [q.exchange for q in montage.quotes] == ["AM", "CB", "PH"]
    assert montage.quotes[0].bid == 7.99 and montage.quotes[0].ask == 8.08 and montage.quotes[0].bid_size == 100
    method, _, _ = last_request(fake, "/service/quote/dtmontage")
    assert method == "GET"
    sent = next(r for r in fake.requests if r.path == "/service/quote/dtmontage")
    assert sent.host == "fastquote.fidelity.com"
    equity = await broker.market_data.get_montage("AAPL")  # one exchange: a lone ``O`` object
    assert len(equity.quotes) == 1 and equity.quotes[0].bid < equity.quotes[0].ask
    with pytest.raises(e.NotFound):
        await broker.market_data.get_montage("NOSUCHSYMBOLX")


async def test_montage_without_entitlement_is_a_broker_error_with_the_upstream_text(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    fake.market_data.montage_refusal = True
    with pytest.raises(e.BrokerError, match="Delayed quotes not supported"):
        await broker.market_data.get_montage("AAPL")


async def test_daily_chart_from_jsonp_in_date_order(broker: FidelityBroker) -> None:
    today = new_york_date(broker.clock.now())
    chart = await broker.market_data.get_chart("AAPL", today - timedelta(days=30), today, BarWidth.DAY, False)
    dates = [bar.date for bar in chart.bars]
    assert dates == sorted(dates) and len(dates) >= 20 and dates[-1] <= today.isoformat()
    assert all(bar.low <= min(bar.open, bar.close) <= max(bar.open, bar.close) <= bar.high for bar in chart.bars)
    assert chart.symbol_info.description == "APPLE INC" and chart.symbol_info.previous_close > 0


async def test_intraday_chart_has_timestamps_and_the_request_names_the_width(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    chart = await broker.market_data.get_chart("SPY", None, None, BarWidth.MIN15, True)
    assert len(chart.bars) == 26 and "T" in chart.bars[0].date
    query = [r for r in fake.requests if r.path.endswith("/chart/json")][-1]
    assert query.method == "GET"
    with pytest.raises(e.NotFound):
        await broker.market_data.get_chart("NOSUCHSYMBOLX", None, None, BarWidth.DAY, False)
    today = new_york_date(broker.clock.now())
    with pytest.raises(e.ValidationFailed):
        await broker.market_data.get_chart("SPY", today, today - timedelta(days=1), BarWidth.DAY, False)


async def test_time_and_sales_newest_first_filtered_and_capped(broker: FidelityBroker) -> None:
    tape = await broker.market_data.get_time_and_sales("AAPL", 25, None, None, None)
    times = [t.time for t in tape.trades]
    assert len(times) == 25 and times == sorted(times, reverse=True)
    assert {t.condition for t in tape.trades} <= {"F", "I"}
    big = await broker.market_data.get_time_and_sales("AAPL", 40, 182.45, 182.55, 100)
    assert big.trades and all(182.45 <= t.price <= 182.55 and t.size >= 100 for t in big.trades)
    with pytest.raises(e.NotFound):
        await broker.market_data.get_time_and_sales("NOSUCHSYMBOLX", 5, None, None, None)


async def test_available_markets_are_asked_for_a_tradable_account(broker: FidelityBroker, fake: FakeFidelity) -> None:
    markets = await broker.market_data.get_available_markets("aapl")
    assert [(m.routing_code, m.market_type, m.default) for m in markets.markets] == [
        ("#O", "AUTO", True),
        ("QV", "EXCHANGE", False),
    ]
    _, headers, body = last_request(fake, "/ftgw/dp/reference/security/stock/availablemarket/v1")
    # Style D: a flat object, no request/parameter wrapper.
    tradable = {a.acct_num for a in await broker.accounts.get_accounts() if a.tradable}
    assert isinstance(body, dict) and len(body["accounts"]) == 1 and body["accounts"][0] in tradable
    assert body == {"symbol": "AAPL", "accounts": body["accounts"], "requestType": "", "isCheckShares": False}
    assert headers is not None and headers["AppId"] == "AP149323"
    with pytest.raises(e.NotFound):
        await broker.market_data.get_available_markets("NOSUCHSYMBOLX")


async def test_an_expired_session_on_fastquote_is_session_expired(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.expiry_style = "html"
    fake.expire()
    with pytest.raises(e.SessionExpired):
        await broker.market_data.get_montage("AAPL")


async def test_market_data_needs_a_login(fake: FakeFidelity) -> None:
    config = FidelityConfig(upstream=fake.base_url, request_timeout=5.0, read_share=0.0)
    logged_out = FidelityBroker(config, SystemClock())
    with pytest.raises(e.AuthRequired):
        await logged_out.market_data.get_option_chain("AAPL")
