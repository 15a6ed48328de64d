"""The shortcuts that keep a fan-out to many consumers cheap behave exactly as the plain versions did.

A consumer keeps its get() timer across calls, and the quote edges share one JSON text per quote.
"""

from __future__ import annotations

import asyncio
import json

from ftdesk.domain.market import Quote
from ftdesk.service.push.quote_frames import QuoteJson
from ftdesk.streaming.models import QuoteError
from tests.unit.streaming.conftest import MakeRig
from tests.unit.streaming.helpers import prices, settle


async def test_a_timeout_counts_from_its_own_get_even_after_an_earlier_get_returned(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = await rig.reading("AAPL")

    first = asyncio.create_task(consumer.get(timeout=5))
    await rig.advance(1)
    rig.fake.set_price("AAPL", 99.0)
    await settle()
    assert prices(first.result()) == [("AAPL", 99.0)]

    second = asyncio.create_task(consumer.get(timeout=5))  # from t=1: due at t=6
    await rig.advance(4.5)  # t=5.5: past the first call's deadline
    assert not second.done()
    await rig.advance(0.5)
    assert second.done() and second.result() == []


async def test_a_short_timeout_after_a_long_one_is_kept(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = await rig.reading("MSFT", kind="ws")

    long_wait = asyncio.create_task(consumer.get(timeout=60))
    await settle()
    rig.fake.set_price("MSFT", 201.0)
    await settle()
    assert prices(long_wait.result()) == [("MSFT", 201.0)]

    short_wait = asyncio.create_task(consumer.get(timeout=2))
    await rig.advance(2)
    assert short_wait.done() and short_wait.result() == []


async def test_a_cancelled_get_leaves_no_timer_sleeping(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = await rig.reading("AAPL")
    sleepers = rig.clock.sleeper_count

    waiting = asyncio.create_task(consumer.get(timeout=60))
    await settle()
    assert rig.clock.sleeper_count == sleepers + 1
    waiting.cancel()
    await settle()
    assert rig.clock.sleeper_count == sleepers


def quote(symbol: str, last: float) -> Quote:
    return Quote(symbol=symbol, last=last, bid=last - 0.01, ask=last + 0.01, time="2026-11-16T15:00:00+00:00")


def test_shared_quote_json_follows_the_newest_quote_of_each_symbol() -> None:
    encoded = QuoteJson()
    older, newer = quote("AAPL", 100.0), quote("AAPL", 101.0)
    assert encoded.sse_frame(older) == ("quote", older.model_dump_json())
    assert encoded.sse_frame(newer) == ("quote", newer.model_dump_json())
    assert json.loads(encoded.ws_frame(older)) == {"type": "quote", **older.model_dump(mode="json")}
    assert json.loads(encoded.ws_frame(newer))["last"] == 101.0
    assert json.loads(encoded.ws_frame(quote("MSFT", 7.0)))["symbol"] == "MSFT"


def test_refused_symbols_are_error_frames() -> None:
    encoded = QuoteJson()
    refused = QuoteError("NOPE", "unknown symbol")
    event, data = encoded.sse_frame(refused)
    assert event == "error" and json.loads(data) == {
        "code": "SYMBOL_UNAVAILABLE",
        "symbol": "NOPE",
        "message": "unknown symbol",
    }
    assert json.loads(encoded.ws_frame(refused))["type"] == "error"
