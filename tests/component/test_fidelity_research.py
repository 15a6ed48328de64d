"""Fidelity research (earnings, dividends, autosuggest, analytics, screener, notebooks) through the real client.

The client talks to the fake upstream on a loopback socket.
"""

from __future__ import annotations

import pytest

from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.domain import errors as e
from ftdesk.domain.research import AnalyticsLeg, AnalyticsRequest, NoteDraft, NoteUpdate, ScanCriterion, ScanDefinition
from tests.fakes.fidelity_server import FakeFidelity


async def test_earnings_for_pipe_joined_symbols(broker: FidelityBroker, fake: FakeFidelity) -> None:
    events = await broker.research.get_earnings(["ual", "AAPL", "UAL"])
    assert {ev.symbol for ev in events} == {"UAL", "AAPL"}
    ual = [ev for ev in events if ev.symbol == "UAL"]
    assert ual[0].report_date == "2024-04-16" and ual[0].fiscal_period == "Q1 2024"
    assert ual[0].eps_actual == -0.15 and ual[0].eps_estimate == -0.575 and ual[0].surprise_pct == 73.91
    sent = [r for r in fake.requests if r.path == "/ftgw/dpdirect/research/earning/v1"][-1]
    assert sent.method == "GET" and sent.headers["fsreqid"].startswith("REQ")


async def test_dividends_declared_and_history(broker: FidelityBroker) -> None:
    events = await broker.research.get_dividends(["UNH", "AAPL"])
    assert [(ev.ex_date, ev.amount) for ev in events] == [
        ("2026-03-09", 2.21),
        ("2024-06-17", 2.1),
        ("2024-03-08", 2.1),
    ]
    assert events[1].pay_date == "2024-06-25" and events[1].frequency == "QUARTERLY"
    assert all(ev.yield_pct == 3.412864 for ev in events)


async def test_autosuggest_puts_the_exact_symbol_first(broker: FidelityBroker) -> None:
    hits = await broker.research.search_symbols("AAPL")
    assert [h.symbol for h in hits.suggestions] == ["AAPL", "AAPLW"]
    spy = await broker.research.search_symbols("SP")
    kinds = {h.symbol: h.security_type for h in spy.suggestions}
    assert kinds == {"SPAXX": "MONEY_MARKET", "SPY": "ETF"}


async def test_analytics_of_a_long_call_priced_from_the_montage(broker: FidelityBroker, fake: FakeFidelity) -> None:
    chain = await broker.market_data.get_option_chain("AAPL")
    call = chain.expirations[0].strikes[3].call
    assert call is not None
    result = await broker.research.analyze_position(
        AnalyticsRequest(symbol="AAPL", legs=[AnalyticsLeg(symbol=call.symbol, quantity=1)])
    )
    mid = round((7.99 + 8.08) / 2, 4)
    assert result.legs[0].price == mid and result.net_cost == round(mid * 100, 2)
    assert result.max_profit is None and result.max_loss == -result.net_cost  # "Infinity" means unbounded
    assert result.breakevens == [round(call.strike + mid, 2)]
    assert result.underlying_price == 182.50 and result.legs[0].greeks is not None
    assert result.legs[0].greeks.implied_volatility == pytest.approx(0.352)
    sent = [r for r in fake.requests if r.path.endswith("/positions/analytics/v1")][-1]
    # Style D: flat, posDetails a list of positions each a list of legs, no leading dash.
    assert sent.body["posDetails"] == [[{"symbol": call.symbol, "qty": 1.0, "price": mid, "equity": False}]]
    assert sent.body["underlyingSymbol"] == "AAPL"


async def test_screener_runs_the_three_saml_hops_then_filters(broker: FidelityBroker, fake: FakeFidelity) -> None:
    result = await broker.research.run_screener(ScanDefinition(sort_by="volume", limit=3))
    assert [row.symbol for row in result.rows] == ["SPY", "AAPL", "UNH"] and result.total_matches == 6
    prmb = await broker.research.run_screener(
        ScanDefinition(criteria=[ScanCriterion(field="price", max=20)], sort_by="price")
    )
    assert [(row.symbol, row.price, row.volume) for row in prmb.rows] == [("PRMB", 18.65, 16427), ("QS", 6.85, 55012)]
    assert prmb.rows[0].change_pct == pytest.approx(-0.22 / 18.87 * 100, abs=1e-3)
    screener_hosts = ("fidelity-widgets.financial.com", "fidelity.apps.livevol.com")
    hops = [(r.host, r.method) for r in fake.requests if "rschwidgets" in r.path or r.host in screener_hosts]
    assert hops[:3] == [
        ("digital.fidelity.com", "GET"),
        ("fidelity-widgets.financial.com", "POST"),
        ("fidelity.apps.livevol.com", "POST"),
    ]
    login = next(r for r in fake.requests if "samllogin" in r.path)
    assert login.headers["Content-Type"] == "application/x-www-form-urlencoded"


async def test_screener_refusal_is_a_broker_error(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.failures["/auth/api/v1/sessions/samllogin"] = (401, {"message": "bad assertion"})
    with pytest.raises(e.BrokerError, match="sign-in was refused"):
        await broker.research.run_screener(ScanDefinition())
    assert broker.cookies()  # the Fidelity session itself is untouched


async def test_notebook_crud_and_guards(broker: FidelityBroker, fake: FakeFidelity) -> None:
    assert await broker.research.get_notes() == []
    note = await broker.research.create_note(NoteDraft(note="Watch the 50-day", symbol="spy", title="SPY idea"))
    assert note.symbol == "SPY" and note.note_id and note.create_date
    assert note in await broker.research.get_notes()
    with pytest.raises(e.Conflict):
        await broker.research.update_note(note.note_id, NoteUpdate(note="x", old_symbol="QQQ"))
    updated = await broker.research.update_note(
        note.note_id, NoteUpdate(note="Broke out", old_symbol="SPY", new_symbol="QQQ")
    )
    assert (updated.note, updated.symbol, updated.title) == ("Broke out", "QQQ", "SPY idea")
    sent = [r for r in fake.requests if r.path.endswith("/note/update/v1")][-1]
    assert sent.body["noteId"] == note.note_id and "request" not in sent.body
    with pytest.raises(e.Conflict):
        await broker.research.delete_note(note.note_id, "SPY")
    await broker.research.delete_note(note.note_id, "QQQ")
    assert await broker.research.get_notes() == []
    with pytest.raises(e.NotFound):
        await broker.research.delete_note(note.note_id, "QQQ")


async def test_an_upstream_note_refusal_carries_its_message(broker: FidelityBroker) -> None:
    with pytest.raises(e.BrokerError, match="A note needs text"):
        await broker.research.create_note(NoteDraft.model_construct(note=" ", symbol="", title=""))
