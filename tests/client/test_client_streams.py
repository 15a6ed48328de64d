"""The client's stream iterators through a proxy the test cuts: SSE resumes without gaps, WebSocket re-subscribes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from ftdesk.brokers.paper.feeds import EventBus, PaperAccountEventFeed
from ftdesk.client import AsyncClient, AuthenticationError, Client, EventFrame, InvalidRequestError
from ftdesk.domain.accounts import AccountType
from ftdesk.domain.events import account_event
from ftdesk.domain.market import Quote
from ftdesk.service.routes.streaming_sse import event_stream_state
from ftdesk.streaming.event_hub import AccountEventHub, first_event_id
from tests.client.proxy import CuttingProxy
from tests.conftest import RunningService
from tests.fakes.clock import ANCHOR, ManualClock
from tests.fakes.waiting import wait_until

FAST_RECONNECT = (0.02, 0.05)


@contextlib.asynccontextmanager
async def proxied(service: RunningService) -> AsyncIterator[tuple[CuttingProxy, str]]:
    port = URL(service.base_url).port
    assert port is not None
    proxy = CuttingProxy(port)
    url = await proxy.start()
    try:
        yield proxy, url
    finally:
        await proxy.close()


async def buy_at_market(api: AsyncClient, acct: str) -> str:
    preview = await api.preview_equity_order(acct, "AAPL", "B", 1)
    return (await api.place_equity_order(acct, "AAPL", "B", 1, conf_num=preview.conf_num)).conf_num


async def test_the_event_iterator_resumes_after_a_drop_without_losing_or_repeating_events(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    hub = service.context.events
    received: list[EventFrame] = []
    async with (
        proxied(service) as (proxy, url),
        AsyncClient(url, service.api_key, reconnect_delays=FAST_RECONNECT) as listener,
        AsyncClient(service.base_url, service.api_key) as api,  # the orders do not go through the cut network
    ):
        await api.login("trader", "paper-pass")
        acct = next(a.acct_num for a in await api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)

        async def read() -> None:
            async for frame in listener.stream_events():
                received.append(frame)

        reader = asyncio.create_task(read())
        try:
            await wait_until(lambda: hub.status().consumers != [])
            first = await buy_at_market(api, acct)
            await wait_until(lambda: bool(received) and received[-1].id == hub.last_event_id)

            proxy.refusing = True  # the network is down: the connection drops and reconnects fail for a while
            proxy.cut()
            await wait_until(lambda: proxy.refused >= 2)
            assert proxy.open_connections == 0, "the client is disconnected while the next events happen"
            second = await buy_at_market(api, acct)
            missed_from = received[-1].id
            assert hub.last_event_id > missed_from

            proxy.refusing = False
            await wait_until(lambda: received[-1].id == hub.last_event_id)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    ids = [frame.id for frame in received]
    assert ids == list(range(hub.first_id, hub.last_event_id + 1)), "every event once, in order"
    conf_nums = {frame.event.desc.get("conf_num") for frame in received}
    assert {first, second} <= conf_nums
    assert proxy.connections == 2


async def test_the_event_iterator_takes_every_event_of_a_restarted_service_that_gave_out_more(start_service) -> None:
    clock = ManualClock()
    first_run = await start_service(clock=clock, live_trading="true")
    received: list[EventFrame] = []
    async with (
        proxied(first_run) as (proxy, url),
        AsyncClient(url, first_run.api_key, reconnect_delays=FAST_RECONNECT) as listener,
    ):

        async def read() -> None:
            async for frame in listener.stream_events():
                received.append(frame)

        reader = asyncio.create_task(read())
        try:
            async with AsyncClient(first_run.base_url, first_run.api_key) as api:
                await wait_until(lambda: first_run.context.events.status().consumers != [])
                await api.login("trader", "paper-pass")
                acct = next(a.acct_num for a in await api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)
                await buy_at_market(api, acct)
            first_ids = list(range(first_run.context.events.first_id, first_run.context.events.last_event_id + 1))
            await wait_until(lambda: [frame.id for frame in received] == first_ids)

            proxy.refusing = True
            proxy.cut()
            await first_run.runtime.stop()
            await clock.advance(20)  # the relaunch comes a little later on the same clock
            second_run = await start_service(clock=clock, live_trading="true")  # same data dir
            second = second_run.context.events
            # While the listener is away the new run gives out more events than the listener had seen: with ids
            # counting from 1 again its old id would fall inside them and the first ones would be skipped.
            async with AsyncClient(second_run.base_url, second_run.api_key) as api:
                await api.login("trader", "paper-pass")
                after = [await buy_at_market(api, acct) for _ in range(2)]
            await wait_until(lambda: second.last_event_id - second.first_id + 1 > len(first_ids))
            proxy.retarget(URL(second_run.base_url).port or 0)
            proxy.refusing = False
            await wait_until(lambda: received[-1].id == second.last_event_id)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    second_ids = list(range(second.first_id, second.last_event_id + 1))
    assert [frame.id for frame in received] == first_ids + second_ids, "every event of both runs, once, in order"
    assert set(after) <= {frame.event.desc.get("conf_num") for frame in received[len(first_ids) :]}


class DroppingEventService:
    """Serves ``/streaming/events`` from a real hub as the service does, over a connection that drops once.

    The first response ends right after its status frames, before any replayed event: the drop a reader must
    survive without losing the replay it was promised.
    """

    def __init__(self, hub: AccountEventHub) -> None:
        self.hub = hub
        self.resumed_after: list[str | None] = []

    async def stream(self, request: web.Request) -> web.StreamResponse:
        header = request.headers.get("Last-Event-ID")
        self.resumed_after.append(header)
        consumer, replay = self.hub.open_consumer(None if header is None else int(header))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            state = event_stream_state(self.hub, False, missed=replay.missed, message=replay.why_missed)
            await response.write(f"event: status\ndata: {state.model_dump_json()}\n\n".encode())
            if len(self.resumed_after) == 1:
                return response
            while True:
                for item in await consumer.get():
                    await response.write(
                        f"event: beps\ndata: {item.event.model_dump_json()}\nid: {item.id}\n\n".encode()
                    )
        finally:
            consumer.close()


async def test_a_drop_between_the_missed_signal_and_the_replay_still_gets_the_replay() -> None:
    bus = EventBus()
    hub = AccountEventHub(
        PaperAccountEventFeed(bus),
        ManualClock(),
        backoff=(1.0,),
        first_id=first_event_id(ANCHOR + timedelta(minutes=1)),
    )
    await hub.start()
    hub.set_session_active(True)
    fake = DroppingEventService(hub)
    app = web.Application()
    app.router.add_get("/api/v1/streaming/events", fake.stream)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        await wait_until(lambda: bus.connection_count == 1)
        for n in range(3):
            bus.publish(account_event("MFCEX", {"conf_num": f"C{n}"}, time=ANCHOR.isoformat()))
        await wait_until(lambda: hub.last_event_id == hub.first_id + 2)
        from_earlier_run = first_event_id(ANCHOR) + 7
        async with AsyncClient(
            str(server.make_url("")), "any-key-0123456789abcdef", reconnect_delays=FAST_RECONNECT
        ) as api:
            stream = api.stream_events(last_event_id=from_earlier_run)
            async with asyncio.timeout(5):
                got = [await anext(stream) for _ in range(3)]
            await stream.aclose()
    finally:
        await server.close()
        await hub.close()
    assert [frame.id for frame in got] == [hub.first_id, hub.first_id + 1, hub.first_id + 2]
    assert fake.resumed_after[:2] == [str(from_earlier_run)] * 2, "the reconnect still asks for the full replay"


async def test_the_event_iterator_starts_after_a_given_id(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    async with AsyncClient(service.base_url, service.api_key, reconnect_delays=FAST_RECONNECT) as api:
        await api.login("trader", "paper-pass")
        acct = next(a.acct_num for a in await api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)
        await buy_at_market(api, acct)
        await buy_at_market(api, acct)
        hub = service.context.events
        second = hub.first_id + 1
        stream = api.stream_events(last_event_id=second)
        async with asyncio.timeout(5):
            got = [await anext(stream) for _ in range(hub.last_event_id - second)]
        await stream.aclose()
    assert [frame.id for frame in got] == list(range(second + 1, hub.last_event_id + 1))


async def test_a_refused_key_is_raised_not_retried(start_service) -> None:
    service = await start_service()
    async with AsyncClient(service.base_url, "wrong-key-0123456789abcdef", reconnect_delays=FAST_RECONNECT) as api:
        with pytest.raises(AuthenticationError) as sse_refused:
            await anext(api.stream_quotes(["AAPL"]))
        assert sse_refused.value.code == "API_KEY_INVALID"
        with pytest.raises(AuthenticationError) as ws_refused:
            await anext(api.ws_quotes(["AAPL"]))
        assert ws_refused.value.code == "API_KEY_INVALID"


async def test_a_refused_websocket_subscription_raises_the_same_family_as_over_http(start_service) -> None:
    service = await start_service()
    too_many = [f"S{n:03d}" for n in range(201)]
    async with AsyncClient(service.base_url, service.api_key, reconnect_delays=FAST_RECONNECT) as api:
        with pytest.raises(InvalidRequestError) as ws_refused:
            await anext(api.ws_quotes(too_many))
        with pytest.raises(InvalidRequestError) as sse_refused:
            await anext(api.stream_quotes(too_many))
    assert ws_refused.value.code == sse_refused.value.code == "VALIDATION_ERROR"
    assert ws_refused.value.details


async def test_the_sse_quote_iterator_reconnects_after_a_drop(start_service) -> None:
    service = await start_service(paper_tick_interval="0.05")
    async with (
        proxied(service) as (proxy, url),
        AsyncClient(url, service.api_key, reconnect_delays=FAST_RECONNECT) as api,
    ):
        await api.login("trader", "paper-pass")
        stream = api.stream_quotes(["AAPL", "MSFT"])
        before = await anext(stream)
        assert isinstance(before, Quote) and before.symbol in ("AAPL", "MSFT")
        proxy.cut()
        after = await anext(stream)
        while proxy.connections < 2:  # quotes received before the cut come first; the next ones follow the reconnect
            after = await anext(stream)
        assert isinstance(after, Quote) and after.symbol in ("AAPL", "MSFT")
        await stream.aclose()


async def test_the_async_websocket_iterator_subscribes_again_after_a_drop(start_service) -> None:
    service = await start_service(paper_tick_interval="0.05")
    async with (
        proxied(service) as (proxy, url),
        AsyncClient(url, service.api_key, reconnect_delays=FAST_RECONNECT) as api,
    ):
        await api.login("trader", "paper-pass")
        stream = api.ws_quotes(["MSFT"])
        assert (await anext(stream)).symbol == "MSFT"
        proxy.cut()
        # The iterator reconnects only once the cut connection is drained, so the first quote read after the
        # second connection opened came over it, and a new WebSocket carries nothing until it subscribes.
        quote = await anext(stream)
        while proxy.connections < 2:
            quote = await anext(stream)
        assert quote.symbol == "MSFT"
        await stream.aclose()


async def test_the_sync_websocket_iterator_subscribes_again_after_a_drop(start_service) -> None:
    service = await start_service(paper_tick_interval="0.05")
    loop = asyncio.get_running_loop()
    async with proxied(service) as (proxy, url):

        def script() -> list[str]:
            symbols: list[str] = []
            with Client(url, service.api_key, reconnect_delays=FAST_RECONNECT) as api:
                api.login("trader", "paper-pass")
                with api.ws_quotes(["AAPL"]) as quotes:
                    symbols.append(next(quotes).symbol)
                    loop.call_soon_threadsafe(proxy.cut)
                    for quote in quotes:
                        symbols.append(quote.symbol)
                        if proxy.connections >= 2:
                            break
            return symbols

        symbols = await asyncio.to_thread(script)
    assert set(symbols) == {"AAPL"} and proxy.connections >= 2


async def test_the_sync_sse_iterators_stop_cleanly(start_service) -> None:
    service = await start_service(paper_tick_interval="0.05")

    def script() -> tuple[list[str], int]:
        with Client(service.base_url, service.api_key, reconnect_delays=FAST_RECONNECT) as api:
            api.login("trader", "paper-pass")
            with api.stream_quotes(["AAPL"]) as quotes:
                symbols = [next(quotes).symbol for _ in range(3)]
            left_open = api.stream_quotes(["MSFT"])  # never closed by the script: closing the client ends it
            next(left_open)
            streams_open = service.context.streams.open_count
        return symbols, streams_open

    symbols, streams_open = await asyncio.to_thread(script)
    assert symbols == ["AAPL"] * 3 and streams_open >= 1
    await wait_until(lambda: service.context.streams.open_count == 0)
