"""The account-event hub over a real socket: the BEPS client against the fake AppSync server, on a manual clock.

Delays (backoff, the keep-alive timeout, the ack timeout) run on the manual clock; the socket is real, so
the tests wait (in real time, bounded) for the server or the hub to see what happened.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ftdesk.brokers.fidelity.beps import SUBSCRIPTION_DOCUMENT, BepsConfig
from ftdesk.brokers.fidelity.beps_feed import BepsAccountEventFeed
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.domain.errors import BrokerError
from ftdesk.domain.events import EventCategory
from ftdesk.streaming.event_consumer import EventConsumer, NumberedEvent
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.models import HubState
from tests.fakes.appsync_server import BEPS_HOST, STREAM_URL_TEMPLATE, FakeAppSync
from tests.fakes.clock import ManualClock
from tests.fakes.stepping import advance_in_steps
from tests.fakes.waiting import wait_until

TOKEN = "eyJhbGciOiJSUzI1NiJ9.beps-test-token.c2lnbmF0dXJl"
MID = "MID123"
BACKOFF = (1.0, 2.0, 4.0)
KEEPALIVE_MS = 30_000
ACK_TIMEOUT = 10.0


def beps_event(n: int, event_type: str = "MFCEX") -> dict[str, Any]:
    """Return a BEPS event object as subScribeBEPSEvent carries it."""
    return {
        "eventId": f"evt-{n:04d}",
        "subscribeId": MID,
        "source": "ORDER_EXEC",
        "eventCreatedTime": f"2026-11-16T15:01:{n % 60:02d}Z",
        "eventType": event_type,
        "handleTime": f"2026-11-16T15:01:{n % 60:02d}Z",
        "hasError": False,
        "message": json.dumps({"confNum": f"24A0BC{n:02d}", "symbol": "KO"}),
        "desc": f"event {n}",
        "consumerAppId": "ATN",
    }


class BepsRig:
    """A fake AppSync server, a BEPS feed routed to it and a started hub on a manual clock."""

    def __init__(self, server: FakeAppSync, clock: ManualClock, token: str = TOKEN) -> None:
        self.server = server
        self.clock = clock
        config = BepsConfig(token=token, host=BEPS_HOST, stream_url=STREAM_URL_TEMPLATE, mid=MID, app_id="ATN")
        self.feed = BepsAccountEventFeed(
            config, router=UpstreamRouter(server.base_url), clock=clock, connect_timeout=5.0, ack_timeout=ACK_TIMEOUT
        )
        self.hub = AccountEventHub(self.feed, clock, backoff=BACKOFF, stable_after=10.0)

    async def advance(self, seconds: float, step: float = 0.25) -> None:
        """Move the manual clock in steps, letting the hub react at each."""
        await advance_in_steps(self.clock, seconds, step)

    async def until(self, condition: Any, within: float = 5.0) -> None:
        """Wait in real time (bounded) for a condition on the hub or the server."""
        await wait_until(condition, within)

    async def subscribed(self) -> None:
        """Log in and wait until the server holds the subscription."""
        self.hub.set_session_active(True)
        await self.until(lambda: self.server.subscribed() == 1 and self.state() is HubState.CONNECTED)

    def state(self) -> HubState:
        """Return the hub's state (a call, so a type checker does not narrow it across awaits)."""
        return self.hub.state


async def read(consumer: EventConsumer, count: int, within: float = 5.0) -> list[NumberedEvent]:
    """Read exactly ``count`` events."""
    got: list[NumberedEvent] = []
    async with asyncio.timeout(within):
        while len(got) < count:
            got.extend(await consumer.get())
    assert len(got) == count
    return got


@pytest.fixture
async def rig() -> AsyncIterator[BepsRig]:
    server = FakeAppSync(token=TOKEN, connection_timeout_ms=KEEPALIVE_MS)
    await server.start()
    made = BepsRig(server, ManualClock())
    await made.hub.start()
    try:
        yield made
    finally:
        await made.hub.close()
        await server.close()


async def test_events_arrive_mapped_and_numbered(rig: BepsRig) -> None:
    consumer, _ = rig.hub.open_consumer()
    await rig.subscribed()

    for n, event_type in enumerate(("MFCEX", "SPPOS", "TRPA", "ZZNEW"), start=1):
        assert await rig.server.push(beps_event(n, event_type)) == 1
    got = await read(consumer, 4)

    assert [item.id for item in got] == [1, 2, 3, 4]
    assert [(item.event.event_type, item.event.category, item.event.upstream_code) for item in got] == [
        ("ORDER_FILL", EventCategory.ORDER, "MFCEX"),
        ("POSITION_CHANGED", EventCategory.POSITION, "SPPOS"),
        ("PRICE_ALERT_ABOVE", EventCategory.ALERT, "TRPA"),
        ("OTHER", EventCategory.OTHER, "ZZNEW"),
    ]
    fill = got[0].event
    assert fill.desc["event_id"] == "evt-0001" and fill.desc["desc"] == "event 1"
    assert json.loads(fill.desc["message"]) == {"confNum": "24A0BC01", "symbol": "KO"}
    assert fill.time == "2026-11-16T15:01:01+00:00"


async def test_the_handshake_and_the_subscription_follow_the_reference(rig: BepsRig) -> None:
    await rig.subscribed()

    session = rig.server.current
    assert session is not None
    assert session.protocol == "graphql-ws"
    assert session.types() == ["connection_init", "start"]
    (start,) = session.raw_starts
    assert isinstance(start["payload"]["data"], str)  # a JSON string, not an object
    assert json.loads(start["payload"]["data"]) == {
        "query": SUBSCRIPTION_DOCUMENT,
        "variables": {"subscribeId": MID, "consumerAppId": "ATN"},
    }
    assert start["payload"]["extensions"]["authorization"] == {"Authorization": TOKEN, "host": BEPS_HOST}
    assert rig.server.rejections == []


async def test_a_killed_connection_is_reopened_after_the_backoff_and_the_stream_continues(rig: BepsRig) -> None:
    consumer, _ = rig.hub.open_consumer()
    await rig.subscribed()
    await rig.server.push(beps_event(1))
    assert [item.id for item in await read(consumer, 1)] == [1]

    await rig.server.kill()
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    await rig.advance(BACKOFF[0] - 0.25)
    assert rig.server.attempts == 1  # not before the first backoff delay

    await rig.advance(0.25)
    await rig.until(lambda: rig.server.subscribed() == 1 and rig.state() is HubState.CONNECTED)
    assert rig.server.attempts == 2
    await rig.server.push(beps_event(2, "ORDUP"))

    (second,) = await read(consumer, 1)
    assert (second.id, second.event.event_type, second.event.upstream_code) == (2, "ORDER_UPDATED", "ORDUP")
    assert rig.hub.status().reconnect_count == 1


async def test_keepalives_hold_the_connection_and_silence_ends_it(rig: BepsRig) -> None:
    consumer, _ = rig.hub.open_consumer()
    await rig.subscribed()

    await rig.advance(25.0, step=1.0)
    assert await rig.server.keepalive() == 1
    await rig.server.push(beps_event(1))  # behind the ka on the socket: once read, the ka was seen
    await read(consumer, 1)
    await rig.advance(25.0, step=1.0)  # 50 s since the ack, 25 s since the ka: still alive
    assert rig.state() is HubState.CONNECTED and rig.server.attempts == 1

    await rig.advance(5.5, step=0.5)  # 30 s (the ack's connectionTimeoutMs) without a word
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    assert "no keep-alive for 30 s" in (rig.hub.status().last_error or "")

    await rig.advance(BACKOFF[0])
    await rig.until(lambda: rig.server.attempts == 2 and rig.server.subscribed() == 1)


async def test_a_wrong_token_is_a_clear_error_in_the_status_that_never_shows_the_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server = FakeAppSync(token="the-token-the-server-expects")
    await server.start()
    made = BepsRig(server, ManualClock(), token=TOKEN)
    await made.hub.start()
    try:
        made.hub.set_session_active(True)
        await made.until(lambda: made.state() is HubState.RECONNECTING)

        status = made.hub.status()
        assert status.last_error is not None
        assert "HTTP 401" in status.last_error and "FTSERVICE_BEPS_TOKEN" in status.last_error
        assert server.rejections == ["wrong token in header"]
        config = BepsConfig(token=TOKEN, host=BEPS_HOST, stream_url=STREAM_URL_TEMPLATE, mid=MID)
        # The fake server's own access log prints the URL it was asked for; that log is not ftdesk's.
        logged = "\n".join(record.getMessage() for record in caplog.records if record.name != "aiohttp.access")
        shown = status.model_dump_json() + logged
        for secret in config.secrets():
            assert secret not in shown
    finally:
        await made.hub.close()
        await server.close()


@pytest.mark.parametrize(
    ("ending", "message"),
    [
        ("subscription_error", "BEPS ended the subscription: UnauthorizedException: token expired"),
        ("connection_error", "BEPS ended the subscription: UnauthorizedException: token expired"),
        ("complete", "BEPS completed the subscription"),
    ],
)
async def test_an_upstream_error_or_complete_ends_the_connection_with_a_reason(
    rig: BepsRig, ending: str, message: str
) -> None:
    await rig.subscribed()

    if ending == "complete":
        await rig.server.complete()
    else:
        await getattr(rig.server, ending)("UnauthorizedException", "token expired")

    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    assert f"BrokerError: {message}" in (rig.hub.status().last_error or "")
    await rig.advance(BACKOFF[0])
    await rig.until(lambda: rig.server.attempts == 2 and rig.server.subscribed() == 1)


async def test_close_stops_the_subscription_then_closes_and_may_be_repeated(rig: BepsRig) -> None:
    connection = await rig.feed.connect()
    await rig.until(lambda: rig.server.subscribed() == 1)
    session = rig.server.current
    assert session is not None

    await connection.close()
    await connection.close()

    await rig.until(lambda: session.closed)
    assert session.types() == ["connection_init", "start", "stop"]
    assert [event async for event in connection.events()] == []  # a closed connection yields nothing


async def test_logout_stops_the_subscription_and_login_starts_a_new_one(rig: BepsRig) -> None:
    await rig.subscribed()
    first = rig.server.current
    assert first is not None

    rig.hub.set_session_active(False)
    await rig.until(lambda: first.closed and rig.state() is HubState.WAITING_FOR_SESSION)
    assert first.types()[-1] == "stop"

    await rig.subscribed()
    assert len(rig.server.sessions) == 2


async def test_a_missing_ack_fails_the_connect_after_the_ack_timeout(rig: BepsRig) -> None:
    rig.server.ack = False
    connecting = asyncio.create_task(rig.feed.connect())
    await rig.until(lambda: rig.server.current is not None and rig.server.current.types() == ["connection_init"])

    await rig.advance(ACK_TIMEOUT - 0.5)
    assert not connecting.done()
    await rig.advance(0.5)

    with pytest.raises(BrokerError, match="did not acknowledge the connection within 10 s"):
        await asyncio.wait_for(connecting, 5.0)
    await rig.until(lambda: rig.server.current is None)  # the socket was closed, not left behind


async def test_cancelling_a_connect_closes_the_socket(rig: BepsRig) -> None:
    rig.server.ack = False
    connecting = asyncio.create_task(rig.feed.connect())
    await rig.until(lambda: rig.server.current is not None and rig.server.current.types() == ["connection_init"])

    connecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await connecting
    await rig.until(lambda: rig.server.current is None)


async def test_a_refused_upgrade_is_reported_with_its_status_and_retried(rig: BepsRig) -> None:
    rig.server.refuse(1, status=503)
    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    assert "BEPS refused the connection (HTTP 503)" in (rig.hub.status().last_error or "")

    await rig.advance(BACKOFF[0])
    await rig.until(lambda: rig.server.subscribed() == 1 and rig.state() is HubState.CONNECTED)
