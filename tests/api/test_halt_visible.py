"""A halt is seen wherever a client looks: /health, GET /streaming/status and every stream's status frame."""

from __future__ import annotations

# stream_options: a fast heartbeat, so a halt reaches an idle stream at once
from tests.api.test_streaming_api import SseReader, of_type, open_sse, open_ws, stream_options, ws_next  # noqa: F401

API = "/api/v1"


async def halt(service, reason: str = "visible test") -> None:
    status, body = await service.call("POST", f"{API}/safety/halt", json={"reason": reason})
    assert status == 200, body


async def resume(service) -> None:
    status, body = await service.call("POST", f"{API}/safety/resume")
    assert status == 200, body


async def test_health_says_whether_trading_is_halted(start_service) -> None:
    service = await start_service()
    async with service.http.get(service.url(f"{API}/health")) as response:  # no API key needed
        assert (await response.json())["data"]["halted"] is False
    await halt(service)
    async with service.http.get(service.url(f"{API}/health")) as response:
        assert (await response.json())["data"]["halted"] is True
    await resume(service)
    async with service.http.get(service.url(f"{API}/health")) as response:
        assert (await response.json())["data"]["halted"] is False


async def test_streaming_status_says_whether_trading_is_halted(start_service) -> None:
    service = await start_service()
    _, body = await service.call("GET", f"{API}/streaming/status")
    assert body["data"]["halted"] is False
    await halt(service)
    _, body = await service.call("GET", f"{API}/streaming/status")
    assert body["data"]["halted"] is True


async def test_an_open_sse_quote_stream_gets_a_status_frame_when_trading_halts(start_service) -> None:
    service = await start_service()
    async with open_sse(service, {"symbols": "AAPL"}) as response:
        reader = SseReader(response)
        first = await reader.until(lambda f: f.event == "status")
        assert first[-1].data["halted"] is False
        await halt(service)
        halted = await reader.until(lambda f: f.event == "status")
        assert halted[-1].data["halted"] is True
        await resume(service)
        resumed = await reader.until(lambda f: f.event == "status")
        assert resumed[-1].data["halted"] is False


async def test_a_websocket_gets_a_status_frame_when_trading_halts(start_service) -> None:
    service = await start_service()
    ws = await open_ws(service)
    try:
        assert (await ws_next(ws, of_type("status")))["halted"] is False
        await halt(service)
        assert (await ws_next(ws, of_type("status")))["halted"] is True
    finally:
        await ws.close()


async def test_the_account_event_stream_status_carries_the_halt(start_service) -> None:
    service = await start_service()
    await service.login()
    await halt(service)
    response = await service.http.get(service.url(f"{API}/streaming/events"), headers=service.auth)
    try:
        frame = (await SseReader(response).until(lambda f: f.event == "status"))[-1]
        assert frame.data["halted"] is True
        await resume(service)
        frame = (await SseReader(response).until(lambda f: f.event == "status"))[-1]
        assert frame.data["halted"] is False
    finally:
        response.close()
