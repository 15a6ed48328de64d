"""The research group's contract (``broker.research``): analytics, calendars, search, screener and notebook."""

from __future__ import annotations

import pytest

from ftdesk.brokers.capabilities import MarketDataApi, ResearchApi
from ftdesk.domain import errors as e
from ftdesk.domain.research import AnalyticsLeg, AnalyticsRequest, NoteDraft, NoteUpdate, ScanDefinition


async def test_analytics_of_a_long_call(
    research: ResearchApi, market_data: MarketDataApi, optionable_symbol: str
) -> None:
    chain = await market_data.get_option_chain(optionable_symbol)
    strike = min(chain.expirations[0].strikes, key=lambda s: abs(s.strike - chain.underlying_price))
    assert strike.call is not None
    analysis = await research.analyze_position(
        AnalyticsRequest(symbol=optionable_symbol, legs=[AnalyticsLeg(symbol=strike.call.symbol, quantity=1)])
    )
    assert analysis.max_loss is not None and analysis.max_profit is None  # a long call: loss capped, gain open
    assert len(analysis.breakevens) == 1 and analysis.breakevens[0] > strike.strike


async def test_research_calendars_search_and_screener(research: ResearchApi, optionable_symbol: str) -> None:
    earnings = await research.get_earnings([optionable_symbol])
    assert earnings and all(ev.symbol == optionable_symbol for ev in earnings)
    assert isinstance(await research.get_dividends([optionable_symbol]), list)
    hits = await research.search_symbols(optionable_symbol)
    assert hits.suggestions[0].symbol == optionable_symbol
    result = await research.run_screener(ScanDefinition(limit=5))
    assert 0 < len(result.rows) <= 5


async def test_notebook_crud(research: ResearchApi) -> None:
    note = await research.create_note(NoteDraft(note="Watch the 50-day", symbol="SPY", title="SPY idea"))
    assert note in await research.get_notes()
    updated = await research.update_note(note.note_id, NoteUpdate(note="Broke out", title="SPY", old_symbol="SPY"))
    assert updated.note == "Broke out"
    await research.delete_note(note.note_id, "SPY")
    assert note.note_id not in {n.note_id for n in await research.get_notes()}
    with pytest.raises(e.NotFound):
        await research.delete_note(note.note_id, "SPY")
