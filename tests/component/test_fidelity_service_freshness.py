"""How fresh Fidelity answers are, as a script sees them through the running service.

An account answer serves identical reads for up to a second only while ftdesk can prove it current: BEPS
(the fake AppSync) is live and no account event and no write came since; the reused answer says so with
``Age``. Any event or write drops it; with BEPS down every read reaches the upstream (identical reads in
flight still share one call). Reference data comes from the cache and says so with ``Cache-Control`` and
``Age``; a level-2 book leaves the upstream once its last consumer is gone and the unsubscribe delay has
passed. Service and fakes share a hand-driven clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from multidict import CIMultiDictProxy

from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.service.push.state import StreamingOptions
from tests.component.test_fidelity_politeness import WatchedClock
from tests.component.test_fidelity_service import open_sse
from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.appsync_server import BEPS_HOST, STREAM_URL_TEMPLATE, FakeAppSync
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds
from tests.fakes.waiting import wait_until

API = "/api/v1"
POSITIONS_PATH = f"{API}/accounts/{payloads.MARGIN}/positions"
POSITIONS = "/ftgw/dp/position/v2"
HOLIDAYS = "/ftgw/dpdirect/market/holidaycalendar/v1"
BEPS_TOKEN = "beps-jwt-for-tests"

NOTES_PATH = f"{API}/research/notebooks"
TSLA = {
    "symbol": "TSLA",
    "securityType": "Equity",
    "securityDescription": "TESLA INC",
    "quantity": 2.0,
    "priceDetail": {"lastPrice": 250.0},
    "marketValDetail": {"marketVal": 500.0},
    "costBasisDetail": {"costBasis": 500.0},
}

Started = tuple[RunningService, FakeFidelity, FakeMdds, WatchedClock]
StartFidelity = Callable[..., Coroutine[Any, Any, Started]]


@pytest.fixture
def stream_options() -> StreamingOptions:
    """Heartbeat often so a dropped SSE client is noticed at once."""
    return StreamingOptions(heartbeat_seconds=0.05)


@pytest.fixture
async def start_fidelity(start_service: Callable[..., Any]) -> AsyncIterator[StartFidelity]:
    """Start the fakes and a Fidelity service in front of them, all on one ``WatchedClock``; log in."""
    fakes: list[tuple[FakeFidelity, FakeMdds, FakeAppSync]] = []

    async def start(**env: str) -> Started:
        clock = WatchedClock()
        mdds, appsync = FakeMdds(), FakeAppSync(token=BEPS_TOKEN)
        fake = FakeFidelity(mdds=mdds, appsync=appsync, clock=clock)
        for server in (mdds, appsync, fake):
            await server.start()
        fakes.append((fake, mdds, appsync))
        settings = {
            "broker": "fidelity",
            "fidelity_upstream": fake.base_url,
            "beps_token": BEPS_TOKEN,
            "beps_host": BEPS_HOST,
            "beps_stream_url": STREAM_URL_TEMPLATE,
            "beps_mid": "ee629881ce0a8830",
            "stream_backoff": "3600",  # keep the streams' retry waits out of the ones tests look for
            **env,
        }
        service = await start_service(clock=clock, **settings)
        status, body = await service.call(
            "POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"}
        )
        assert status == 200, body
        return service, fake, mdds, clock

    yield start
    for fake, mdds, appsync in fakes:
        await fake.close()
        await appsync.close()
        await mdds.close()


async def get(service: RunningService, path: str) -> tuple[int, CIMultiDictProxy[str], dict[str, Any]]:
    """GET a path; return the status, the headers and the JSON envelope."""
    async with service.http.get(service.url(path), headers=service.auth) as response:
        return response.status, response.headers, await response.json()


async def arrived(fake: FakeFidelity, path: str, count: int) -> None:
    """Return once the fake has been asked for ``path`` ``count`` times."""
    async with asyncio.timeout(5):
        while fake.hits[path] < count:  # noqa: ASYNC110 - the fake has no arrival event
            await asyncio.sleep(0.001)


async def slow_positions(
    service: RunningService, fake: FakeFidelity, clock: WatchedClock
) -> tuple[CIMultiDictProxy[str], dict[str, Any]]:
    """Read positions while the upstream takes 0.5 s on the clock (far enough away for answer sharing)."""
    before = fake.hits[POSITIONS]
    fake.hold(POSITIONS)
    read = asyncio.create_task(get(service, POSITIONS_PATH))
    await arrived(fake, POSITIONS, before + 1)
    await clock.advance(0.5)
    fake.release(POSITIONS)
    status, headers, body = await read
    assert status == 200, body
    assert "Age" not in headers  # fresh from the upstream
    return headers, body


def watch_of(service: RunningService) -> FidelityBroker:
    """Return the service's Fidelity broker (its ``event_watch`` says whether account events are live)."""
    broker = service.context.broker
    assert isinstance(broker, FidelityBroker)
    return broker


async def beps_live(service: RunningService) -> None:
    """Return once the account-event stream (BEPS on the fake AppSync) is being read."""
    await wait_until(lambda: watch_of(service).event_watch.live)


def symbols(body: dict[str, Any]) -> list[str]:
    return [position["symbol"] for position in body["data"]]


async def test_while_beps_is_live_a_read_100_ms_later_gets_the_kept_answer_with_its_age(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, _, clock = await start_fidelity()
    await beps_live(service)
    kept, first = await slow_positions(service, fake, clock)
    assert kept["Cache-Control"] == "max-age=1"  # fresh, and kept for a second
    hits = fake.hits[POSITIONS]

    await clock.advance(0.1)
    status, headers, body = await get(service, POSITIONS_PATH)

    assert status == 200 and body["data"] == first["data"]
    assert fake.hits[POSITIONS] == hits  # one upstream call for both reads
    assert headers["Age"] == "0" and headers["Cache-Control"] == "max-age=1"

    await clock.advance(0.9)  # a second after it arrived: asked again
    status, headers, _ = await get(service, POSITIONS_PATH)
    assert status == 200 and fake.hits[POSITIONS] == hits + 1 and "Age" not in headers


async def test_a_fill_event_drops_the_kept_answer_and_the_next_read_shows_the_fill(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, _, clock = await start_fidelity()
    await beps_live(service)
    _, first = await slow_positions(service, fake, clock)
    assert "TSLA" not in symbols(first)
    hits = fake.hits[POSITIONS]

    fake.add_position(payloads.MARGIN, TSLA)  # the order fills upstream, and BEPS says so
    appsync = fake.appsync
    assert appsync is not None
    event = {"eventId": "evt-1", "subscribeId": "ee629881ce0a8830", "eventType": "MFCEX", "message": "filled"}
    assert await appsync.push(event) == 1
    await wait_until(lambda: watch_of(service).event_watch.events == 1)
    await clock.advance(0.1)
    status, headers, body = await get(service, POSITIONS_PATH)

    assert status == 200 and "TSLA" in symbols(body)
    assert fake.hits[POSITIONS] == hits + 1 and "Age" not in headers


async def test_a_write_drops_the_kept_answer(start_fidelity: StartFidelity) -> None:
    service, fake, _, clock = await start_fidelity()
    await beps_live(service)
    await slow_positions(service, fake, clock)
    hits = fake.hits[POSITIONS]

    status, body = await service.call("POST", NOTES_PATH, json={"note": "n", "symbol": "SPY", "title": "t"})
    assert status == 201, body
    status, headers, _ = await get(service, POSITIONS_PATH)

    assert status == 200 and fake.hits[POSITIONS] == hits + 1 and "Age" not in headers


async def test_with_beps_down_every_read_reaches_the_upstream(start_fidelity: StartFidelity) -> None:
    service, fake, _, clock = await start_fidelity()
    await beps_live(service)
    appsync = fake.appsync
    assert appsync is not None
    appsync.refuse(100)  # BEPS goes away and stays away (the hub retries after an hour of backoff)
    await appsync.kill()
    await wait_until(lambda: not watch_of(service).event_watch.live)

    first, _ = await slow_positions(service, fake, clock)
    assert "Cache-Control" not in first  # not kept for anyone else either
    hits = fake.hits[POSITIONS]
    await clock.advance(0.1)
    status, headers, body = await get(service, POSITIONS_PATH)

    assert status == 200, body
    assert fake.hits[POSITIONS] == hits + 1  # asked again: a fill in those 100 ms would show
    assert "Age" not in headers and "Cache-Control" not in headers


async def test_while_beps_is_live_a_tight_loop_on_a_quick_upstream_asks_it_once_a_window(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, _, clock = await start_fidelity()
    await beps_live(service)
    hits = fake.hits[POSITIONS]
    ages = []
    for _ in range(5):  # the upstream answers at once; the clock does not move between reads
        status, headers, _ = await get(service, POSITIONS_PATH)
        assert status == 200 and headers["Cache-Control"] == "max-age=1"
        ages.append(headers.get("Age"))
    assert fake.hits[POSITIONS] == hits + 1  # a proven-current answer served the other four
    assert ages == [None, "0", "0", "0", "0"]

    await clock.advance(1.0)  # the window has passed: asked again
    status, headers, _ = await get(service, POSITIONS_PATH)
    assert status == 200 and fake.hits[POSITIONS] == hits + 2 and "Age" not in headers


async def test_two_concurrent_identical_position_reads_reach_the_upstream_once(start_fidelity: StartFidelity) -> None:
    service, fake, _, _ = await start_fidelity()
    hits = fake.hits[POSITIONS]
    fake.hold(POSITIONS)
    first = asyncio.create_task(get(service, POSITIONS_PATH))
    await arrived(fake, POSITIONS, hits + 1)
    second = asyncio.create_task(get(service, POSITIONS_PATH))
    # Client, service and fake share this loop: these turns (no wall time) carry the second request through
    # the service to the call in flight. Had it gone upstream on its own, the hold would park it at the fake,
    # which counts it on arrival.
    for _ in range(200):
        await asyncio.sleep(0)
    fake.release(POSITIONS)
    (status1, headers1, body1), (status2, headers2, body2) = await asyncio.gather(first, second)

    assert status1 == status2 == 200 and body1["data"] == body2["data"]
    assert fake.hits[POSITIONS] == hits + 1
    for headers in (headers1, headers2):  # an answer that was on its way when the read came in is not stale
        assert "Age" not in headers and "Cache-Control" not in headers


async def test_a_read_asked_after_a_write_does_not_share_a_call_that_left_before_it(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, _, _ = await start_fidelity()
    hits = fake.hits[POSITIONS]
    fake.hold(POSITIONS)
    first = asyncio.create_task(get(service, POSITIONS_PATH))
    await arrived(fake, POSITIONS, hits + 1)  # on its way: it may be answered as things were before the write

    status, body = await service.call("POST", NOTES_PATH, json={"note": "n", "symbol": "SPY", "title": "t"})
    assert status == 201, body
    second = asyncio.create_task(get(service, POSITIONS_PATH))
    await arrived(fake, POSITIONS, hits + 2)  # asked upstream on its own
    fake.release(POSITIONS)
    for status, _, body in await asyncio.gather(first, second):
        assert status == 200, body


async def test_the_holiday_calendar_comes_from_the_cache_the_second_time_and_says_so(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, _, clock = await start_fidelity()
    status, headers, first = await get(service, f"{API}/reference/holiday-calendar?year=2026")
    assert status == 200, first
    assert headers["Cache-Control"] == "max-age=43200" and "Age" not in headers
    assert fake.hits[HOLIDAYS] == 1

    await clock.advance(125)
    status, headers, second = await get(service, f"{API}/reference/holiday-calendar?year=2026")

    assert status == 200 and second["data"] == first["data"]
    assert fake.hits[HOLIDAYS] == 1  # no upstream call
    assert headers["Age"] == "125" and headers["Cache-Control"] == "max-age=43200"

    await clock.advance(43200 - 125)  # past its freshness: asked again
    status, headers, _ = await get(service, f"{API}/reference/holiday-calendar?year=2026")
    assert status == 200 and fake.hits[HOLIDAYS] == 2 and "Age" not in headers


async def test_openapi_documents_the_freshness_headers_of_the_cached_reads(start_fidelity: StartFidelity) -> None:
    service, _, _, _ = await start_fidelity()
    status, _, document = await get(service, "/docs/openapi.json")
    assert status == 200
    paths = document["paths"]
    documented = {
        "/api/v1/reference/holiday-calendar": "max-age=43200",
        "/api/v1/market-data/markets/{symbol}": "max-age=3600",
        "/api/v1/research/search": "max-age=600",
    }
    for path, max_age in documented.items():
        headers = paths[path]["get"]["responses"]["200"]["headers"]
        assert max_age in headers["Cache-Control"]["description"] and "Age" in headers
    for path in ("/api/v1/accounts/{acct}/positions", "/api/v1/accounts/{acct}/balances", "/api/v1/orders/status"):
        headers = paths[path]["get"]["responses"]["200"]["headers"]  # kept only while account events are live
        assert "BEPS" in headers["Cache-Control"]["description"] and "Age" in headers


async def test_a_book_leaves_the_upstream_after_the_unsubscribe_delay_once_its_last_consumer_is_gone(
    start_fidelity: StartFidelity,
) -> None:
    service, _, mdds, clock = await start_fidelity(unsubscribe_delay="7")
    async with open_sse(service, f"{API}/streaming/quotes?symbols=RKLB&depth=true") as stream:
        await stream.until(lambda frame: frame.event == "book")
        session = mdds.current
        assert session is not None and session.books_subscribed == {"RKLB"}

    async with asyncio.timeout(5):
        while not any(6.9 <= seconds <= 7.0 for seconds in clock.requested):
            # Heartbeats run on the clock: the next one finds the client gone, and the book starts to linger.
            await clock.advance(0.05)
    assert session.books_subscribed == {"RKLB"} and not session.commands_named("unsubscribe")
    await clock.advance(7)
    async with asyncio.timeout(5):
        sent = 0
        while session.books_subscribed:  # the quote of RKLB leaves too, by its own command
            sent += 1
            await mdds.commanded("unsubscribe", count=sent)
    assert session.books_subscribed == set() and session.subscribed == set()
