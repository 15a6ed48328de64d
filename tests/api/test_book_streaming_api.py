"""Level 2 through the running service on the paper broker: `book` events on SSE (`depth=true`) and WebSocket
(`"depth": true`), two consumers of one symbol sharing one upstream book subscription."""

from __future__ import annotations

from typing import Any

from tests.api.test_streaming_api import SseFrame, SseReader, of_type, open_sse, open_ws, ws_next
from tests.conftest import RunningService
from tests.fakes.waiting import wait_until


def check_book(book: dict[str, Any], symbol: str) -> None:
    assert book["symbol"] == symbol and book["bids"] and book["asks"]
    bids = [level["price"] for level in book["bids"]]
    asks = [level["price"] for level in book["asks"]]
    assert bids == sorted(bids, reverse=True) and asks == sorted(asks)
    assert bids[0] < asks[0]  # never crossed
    assert all(level["size"] > 0 and level["venue"] for level in book["bids"] + book["asks"])


def subscription(service: RunningService, key: str) -> dict[str, Any] | None:
    for entry in service.context.quotes.subscriptions():
        if entry.symbol == key:
            return entry.model_dump()
    return None


async def test_sse_and_websocket_share_one_book_subscription(start_service) -> None:
    service = await start_service()
    await service.login()
    ws = await open_ws(service)
    try:
        async with open_sse(service, {"symbols": "AAPL", "depth": "true"}) as response:
            assert response.status == 200
            reader = SseReader(response)
            await ws.send_json({"action": "subscribe", "symbols": ["aapl"], "depth": True})
            ack = await ws_next(ws, of_type("ack"))
            assert ack["books"] == ["AAPL"] and ack["depth"] == ["AAPL"] and ack["subscribed"] == ["AAPL"]

            frames: list[SseFrame] = await reader.until(lambda frame: frame.event == "book")
            check_book(frames[-1].data, "AAPL")
            assert any(frame.event == "quote" for frame in frames) or await reader.until(
                lambda frame: frame.event == "quote"
            )
            check_book(await ws_next(ws, of_type("book")), "AAPL")

            await wait_until(lambda: (subscription(service, "AAPL#BOOK") or {}).get("refcount") == 2)
            shared = subscription(service, "AAPL#BOOK")
            assert shared is not None and shared["upstream"] is True and sorted(shared["kinds"]) == ["sse", "ws"]

            # Only the WebSocket's book goes: its quote stays, and the SSE stream keeps the book upstream.
            await ws.send_json({"action": "unsubscribe", "symbols": ["AAPL"], "depth": True})
            ack = await ws_next(ws, of_type("ack", action="unsubscribe"))
            assert ack["books"] == ["AAPL"] and ack["subscribed"] == ["AAPL"] and ack["depth"] == []
            await wait_until(lambda: (subscription(service, "AAPL#BOOK") or {}).get("refcount") == 1)
    finally:
        await ws.close()


async def test_without_depth_no_book_is_streamed_or_subscribed(start_service) -> None:
    service = await start_service()
    await service.login()
    async with open_sse(service, {"symbols": "MSFT"}) as response:
        reader = SseReader(response)
        frames = await reader.until(lambda frame: frame.event == "quote")
    assert not any(frame.event == "book" for frame in frames)
    assert subscription(service, "MSFT#BOOK") is None


async def test_a_book_of_an_unknown_symbol_is_an_error_frame_naming_the_book(start_service) -> None:
    service = await start_service()
    await service.login()
    ws = await open_ws(service)
    try:
        await ws.send_json({"action": "subscribe", "symbols": ["ZZZZQ"], "depth": True})
        errors = [await ws_next(ws, of_type("error")), await ws_next(ws, of_type("error"))]
    finally:
        await ws.close()
    assert sorted(error.get("book", False) for error in errors) == [False, True]
    assert all(error["symbol"] == "ZZZZQ" and error["code"] == "SYMBOL_UNAVAILABLE" for error in errors)
