"""GET /api/v1/market-data/quotes through the real server: a quote without opening a stream.

The paper tests read one logged-in service on a manual clock; the stream test runs the service on a
scriptable upstream feed, whose streamed price and snapshot price differ, to see which one answers.
"""

from __future__ import annotations

import pytest

from ftdesk.domain.market import Quote
from tests.api.test_accounts_api import shared_service
from tests.api.test_streaming_api import SseReader, fake_feed_service, open_sse, quote_of
from tests.conftest import RunningService
from tests.fakes.quote_feed import FakeQuoteFeed

__all__ = ("fake_feed_service",)  # the fixture, imported to be used here

QUOTES = "/api/v1/market-data/quotes"


async def test_two_symbols_get_two_quotes_in_the_order_asked(tmp_path) -> None:
    async with shared_service(tmp_path, login=True) as service:
        status, body = await service.call("GET", QUOTES, params={"symbols": "msft, aapl,MSFT"})
        assert status == 200, body
        answer = body["data"]
        assert [q["symbol"] for q in answer["quotes"]] == ["MSFT", "AAPL"]
        for quote in answer["quotes"]:
            assert quote["last"] > 0 and 0 < quote["bid"] <= quote["ask"]
            assert quote["time"]
        assert answer["unknown"] == [] and answer["streamed"] == []
        assert answer["quotes"][0]["last"] != answer["quotes"][1]["last"]


async def test_an_unknown_symbol_is_named_and_the_others_still_answered(tmp_path) -> None:
    async with shared_service(tmp_path, login=True) as service:
        status, body = await service.call("GET", QUOTES, params={"symbols": "AAPL,ZZZZQ"})
        assert status == 200, body
        assert [q["symbol"] for q in body["data"]["quotes"]] == ["AAPL"]
        assert body["data"]["unknown"] == ["ZZZZQ"]
        status, body = await service.call("GET", QUOTES, params={"symbols": "ZZZZQ"})
        assert status == 200 and body["data"]["quotes"] == [] and body["data"]["unknown"] == ["ZZZZQ"]


@pytest.mark.parametrize(
    "symbols",
    ["", ",".join(f"S{i}" for i in range(51)), "AAPL,BAD;SYM"],
)
async def test_a_bad_symbol_list_is_422_naming_symbols(tmp_path, symbols: str) -> None:
    async with shared_service(tmp_path, login=True) as service:
        status, body = await service.call("GET", QUOTES, params={"symbols": symbols})
        assert status == 422 and body["error"]["code"] == "VALIDATION_ERROR", body
        assert {d["field"].split(".")[0] for d in body["error"]["details"]} == {"symbols"}


async def test_quotes_before_login_are_auth_required(tmp_path) -> None:
    async with shared_service(tmp_path, login=False) as service:
        status, body = await service.call("GET", QUOTES, params={"symbols": "AAPL"})
        assert status == 401 and body["error"]["code"] == "AUTH_REQUIRED", body


async def test_a_symbol_a_stream_holds_is_answered_with_the_streamed_quote(
    fake_feed_service: tuple[RunningService, FakeQuoteFeed],
) -> None:
    service, feed = fake_feed_service
    async with open_sse(service, {"symbols": "AAPL"}) as response:
        reader = SseReader(response)
        await reader.until(quote_of("AAPL"))
        # The stream now says 123.45 while a fresh snapshot would still say 100.00.
        feed.current.push(Quote(symbol="AAPL", last=123.45, bid=123.44, ask=123.46, time="2026-11-16T15:00:00Z"))
        await reader.until(lambda f: quote_of("AAPL")(f) and f.data["last"] == 123.45)

        status, body = await service.call("GET", QUOTES, params={"symbols": "AAPL,MSFT"})
        assert status == 200, body
        by_symbol = {q["symbol"]: q for q in body["data"]["quotes"]}
        assert (by_symbol["AAPL"]["last"], by_symbol["AAPL"]["bid"], by_symbol["AAPL"]["ask"]) == (
            123.45,
            123.44,
            123.46,
        )
        assert by_symbol["MSFT"]["last"] == 100.0  # not held by any stream: the upstream snapshot
        assert body["data"]["streamed"] == ["AAPL"]
        assert feed.current.symbols.keys() == {"AAPL"}  # the quote call subscribed nothing on the stream
