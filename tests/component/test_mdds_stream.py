"""The quote hub over a real socket: the MDDS client against the fake MDDS server, on a manual clock.

Delays (backoff, delayed unsubscribe, watchdog) run on the manual clock; the socket is real, so the tests
wait (in real time, bounded) for the server to see what the hub sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ftdesk.brokers.fidelity.mdds import MDDS_URL, MddsQuoteFeed
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.domain.errors import AuthRequired, SessionExpired
from ftdesk.domain.market import Quote
from ftdesk.streaming.consumer import QuoteConsumer
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import HubState, QuoteError, QuoteItem
from tests.fakes.clock import ManualClock
from tests.fakes.mdds_server import FakeMdds
from tests.fakes.stepping import advance_in_steps
from tests.fakes.waiting import wait_until

DELAY = 10.0
BACKOFF = (1.0, 2.0, 4.0)
WATCHDOG = 30.0
PROBE = 10.0
STABLE_AFTER = 10.0
COOKIES = {"ATC": "session-token", "FC": "fc-cookie"}


class MddsRig:
    """A fake MDDS server, an MDDS feed routed to it and a started hub on a manual clock."""

    def __init__(self, server: FakeMdds, clock: ManualClock) -> None:
        self.server = server
        self.clock = clock
        self.cookies: dict[str, str] = dict(COOKIES)
        self.feed = MddsQuoteFeed(
            cookies=lambda: self.cookies,
            router=UpstreamRouter(server.base_url),
            clock=clock,
            url=MDDS_URL,
            connect_timeout=5.0,
        )
        self.hub = QuoteHub(
            self.feed,
            clock,
            unsubscribe_delay=DELAY,
            backoff=BACKOFF,
            watchdog_timeout=WATCHDOG,
            probe_timeout=PROBE,
            stable_after=STABLE_AFTER,
        )

    async def advance(self, seconds: float, step: float = 0.25) -> None:
        """Move the manual clock in steps, letting the hub react at each."""
        await advance_in_steps(self.clock, seconds, step)

    async def until(self, condition: Any, within: float = 5.0) -> None:
        """Wait in real time (bounded) for a condition on the hub or the server."""
        await wait_until(condition, within)

    def state(self) -> HubState:
        """Return the hub's state (a call, so a type checker does not narrow it across awaits)."""
        return self.hub.state

    def carried(self) -> set[str]:
        """Return what the server's newest open connection carries."""
        current = self.server.current
        return set() if current is None else current.subscribed


async def read(consumer: QuoteConsumer, count: int, within: float = 5.0) -> dict[str, QuoteItem]:
    """Read until ``count`` symbols have an item (latest per symbol)."""
    seen: dict[str, QuoteItem] = {}
    async with asyncio.timeout(within):
        while len(seen) < count:
            for item in await consumer.get():
                seen[item.symbol] = item
    return seen


async def read_until(consumer: QuoteConsumer, wanted: Any, within: float = 5.0) -> QuoteItem:
    """Read until an item satisfies ``wanted``; return it."""
    async with asyncio.timeout(within):
        while True:
            for item in await consumer.get():
                if wanted(item):
                    return item


@pytest.fixture
async def rig() -> AsyncIterator[MddsRig]:
    server = FakeMdds(unknown={"NOPE", "-SPXW260217P6750"})
    await server.start()
    made = MddsRig(server, ManualClock())
    await made.hub.start()
    try:
        yield made
    finally:
        await made.hub.close()
        await server.close()


async def test_a_consumer_gets_the_snapshot_mapped_with_the_decompiled_field_ids(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["RKLB"])
    rig.hub.set_session_active(True)

    quote = (await read(consumer, 1))["RKLB"]

    assert isinstance(quote, Quote)
    # The captured snapshot: 29 last, 20 bid, 18 ask, 31 open, 32 previous close, 33 volume.
    assert (quote.last, quote.bid, quote.ask) == (57.38, 56.6, 56.73)
    assert (quote.open, quote.high, quote.low, quote.prev_close) == (61.45, 61.64, 56.132, 60.93)
    assert (quote.bid_size, quote.ask_size, quote.volume) == (100, 200, 21933537)
    assert (quote.change, quote.change_pct) == (-3.55, -5.8264)
    assert rig.state() is HubState.CONNECTED
    session = rig.server.current
    assert session is not None
    assert session.commands[0]["SessionId"] == session.session_id  # every command echoes the greeting's id


async def test_updates_merge_into_the_symbols_state(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("ws")
    consumer.acquire(["RKLB"])
    rig.hub.set_session_active(True)
    await read(consumer, 1)

    assert await rig.server.publish("RKLB", {"20": "57.01", "21": "900"}) == 1
    quote = (await read(consumer, 1))["RKLB"]

    assert isinstance(quote, Quote)
    assert (quote.bid, quote.bid_size) == (57.01, 900)
    assert (quote.ask, quote.last) == (56.73, 57.38)  # unchanged fields keep their last value


async def test_options_are_sent_with_a_dash_and_carry_the_greeks_item(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["EVGO270115C7"])
    rig.hub.set_session_active(True)

    await rig.until(lambda: "-EVGO270115C7" in rig.carried())
    session = rig.server.current
    assert session is not None
    assert session.commands_named("subscribe")[0]["IncludeGreeks"] is True

    quote = await read_until(consumer, lambda item: isinstance(item, Quote) and item.greeks is not None)
    assert isinstance(quote, Quote) and quote.greeks is not None
    assert quote.symbol == "EVGO270115C7"
    assert quote.greeks.delta == 0.0863
    assert quote.greeks.implied_volatility == 1.25337  # iv_mid (196), the decompiled name


async def test_an_unknown_symbol_is_an_error_for_its_holder_and_the_rest_still_flows(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["NOPE", "RKLB"])
    rig.hub.set_session_active(True)

    items = await read(consumer, 2)

    error = items["NOPE"]
    assert isinstance(error, QuoteError)
    assert "Source not found" in error.message and "18" in error.message
    assert isinstance(items["RKLB"], Quote)
    assert "NOPE" not in rig.hub.upstream_symbols
    assert next(s for s in rig.hub.subscriptions() if s.symbol == "NOPE").error == error.message


async def test_subscribes_are_chunked_at_fifty_symbols(rig: MddsRig) -> None:
    symbols = [f"S{n:03d}" for n in range(120)]
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(symbols)
    rig.hub.set_session_active(True)

    await rig.until(lambda: rig.carried() == set(symbols))

    session = rig.server.current
    assert session is not None
    sizes = [len(command["Symbol"].split(",")) for command in session.commands_named("subscribe")]
    assert sizes == [50, 50, 20]


async def test_subscriptions_made_before_login_are_applied_when_the_session_starts(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT"])
    await rig.advance(5)

    assert rig.server.attempts == 0
    assert rig.state() is HubState.WAITING_FOR_SESSION

    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.carried() == {"AAPL", "MSFT"})
    assert set(await read(consumer, 2)) == {"AAPL", "MSFT"}


async def test_a_killed_connection_is_reopened_after_the_backoff_and_every_symbol_resubscribed(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire([f"S{n:03d}" for n in range(60)])
    rig.hub.set_session_active(True)
    await rig.until(lambda: len(rig.carried()) == 60)
    first = rig.server.current
    assert first is not None

    await rig.server.kill()
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    await rig.advance(BACKOFF[0] - 0.25)
    assert rig.server.attempts == 1  # not before the first backoff delay

    await rig.advance(0.25)
    await rig.until(lambda: len(rig.carried()) == 60)

    second = rig.server.current
    assert second is not None and second.session_id != first.session_id
    # Every command on the new connection echoes the new SessionId.
    assert {command["SessionId"] for command in second.commands} == {second.session_id}
    assert rig.hub.status().reconnect_count == 1
    assert rig.state() is HubState.CONNECTED


async def test_refused_connects_back_off_along_the_array_and_reuse_the_last_delay(rig: MddsRig) -> None:
    rig.server.refuse(5, status=503)
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.server.attempts == 1 and rig.state() is HubState.RECONNECTING)

    for expected_attempt, delay in enumerate((1.0, 2.0, 4.0, 4.0), start=2):
        await rig.advance(delay - 0.25)
        assert rig.server.attempts == expected_attempt - 1, f"attempt {expected_attempt} came before {delay} s"
        await rig.advance(0.25)
        await rig.until(lambda n=expected_attempt: rig.server.attempts == n)
        await rig.until(lambda: rig.state() is HubState.RECONNECTING)

    assert "503" in (rig.hub.status().last_error or "")
    await rig.advance(4.0)  # the sixth attempt: the fake stops refusing
    await rig.until(lambda: rig.carried() == {"AAPL"})
    assert rig.state() is HubState.CONNECTED


async def test_the_backoff_starts_again_after_a_good_connection(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.carried() == {"AAPL"})
    rig.server.refuse(2)
    await rig.server.kill()
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    await rig.advance(1.0)
    await rig.until(lambda: rig.server.attempts == 2)
    await rig.advance(2.0)
    await rig.until(lambda: rig.server.attempts == 3)
    await rig.advance(4.0)
    await rig.until(lambda: rig.carried() == {"AAPL"})

    # Stable for longer than STABLE_AFTER: the next failure waits the first delay again, not the last.
    await rig.advance(STABLE_AFTER + 1, step=1.0)
    await rig.server.publish("AAPL", {"20": "1"})  # keeps the watchdog quiet
    await rig.server.kill()
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    attempts = rig.server.attempts
    await rig.advance(BACKOFF[0])
    await rig.until(lambda: rig.server.attempts == attempts + 1)


async def test_an_expired_session_cookie_is_reported_and_retried(rig: MddsRig) -> None:
    rig.cookies = {"ATC": "stale"}
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)

    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    assert "401" in (rig.hub.status().last_error or "")

    rig.cookies = dict(COOKIES)  # the session manager re-authenticated meanwhile
    await rig.advance(BACKOFF[0])
    await rig.until(lambda: rig.carried() == {"AAPL"})


async def test_a_release_unsubscribes_by_request_id_only_after_the_delay(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await read(consumer, 1)
    session = rig.server.current
    assert session is not None

    consumer.release(["AAPL"])
    await rig.advance(DELAY - 0.5)
    assert session.commands_named("unsubscribe") == []
    assert rig.carried() == {"AAPL"}

    await rig.advance(0.5)
    await rig.until(lambda: rig.carried() == set())
    (unsubscribe,) = session.commands_named("unsubscribe")
    assert set(unsubscribe) == {"SessionId", "Command", "Request"}  # the app's form, not the symbol list


async def test_taking_a_symbol_again_within_the_delay_keeps_the_subscription(rig: MddsRig) -> None:
    first = rig.hub.open_consumer("sse")
    first.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await read(first, 1)
    session = rig.server.current
    assert session is not None

    first.close()
    await rig.advance(DELAY / 2)
    second = rig.hub.open_consumer("ws")
    second.acquire(["AAPL"])
    await rig.advance(DELAY * 2)

    assert session.commands_named("unsubscribe") == []
    assert len(session.commands_named("subscribe")) == 1
    assert rig.carried() == {"AAPL"}


async def test_dropping_part_of_a_request_keeps_the_rest_subscribed(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT", "IBM"])
    rig.hub.set_session_active(True)
    await read(consumer, 3)

    consumer.release(["MSFT"])
    await rig.advance(DELAY)
    await rig.until(lambda: rig.carried() == {"AAPL", "IBM"})

    assert await rig.server.publish("AAPL", {"20": "1.5"}) == 1
    await read_until(consumer, lambda item: isinstance(item, Quote) and item.symbol == "AAPL" and item.bid == 1.5)


async def test_the_watchdog_probes_a_silent_connection_and_reopens_it_when_the_probe_goes_unanswered(
    rig: MddsRig,
) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await read(consumer, 1)
    session = rig.server.current
    assert session is not None

    # A quiet symbol: the probe (a second subscribe) is answered with a snapshot, so the socket stays.
    await rig.advance(WATCHDOG, step=1.0)
    await rig.until(lambda: len(session.commands_named("subscribe")) == 2)
    await read(consumer, 1)
    await rig.advance(PROBE, step=1.0)
    assert rig.server.attempts == 1 and rig.state() is HubState.CONNECTED
    assert len(session.requests) == 2  # the probe's subscribe is a second request for AAPL

    # A dead feed: the probe gets nothing, the connection is reopened.
    rig.server.silent = True
    await rig.advance(WATCHDOG - PROBE, step=1.0)  # silence counts from the probe's answer
    await rig.until(lambda: len(session.commands_named("subscribe")) == 3)
    await rig.advance(PROBE, step=1.0)
    await rig.until(lambda: rig.state() is HubState.RECONNECTING)
    assert "No market data" in (rig.hub.status().last_error or "")

    rig.server.silent = False
    await rig.advance(BACKOFF[0])
    await rig.until(lambda: rig.server.attempts == 2 and rig.carried() == {"AAPL"})
    # The probe's extra request was cancelled with the first: nothing leaks on the old socket either.
    assert session.closed


async def test_logout_closes_the_upstream_and_login_reopens_it(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.carried() == {"AAPL"})

    rig.hub.set_session_active(False)
    # The server may see the socket close a moment before the hub's supervisor records the new state.
    await rig.until(lambda: rig.server.current is None and rig.state() is HubState.WAITING_FOR_SESSION)

    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.carried() == {"AAPL"})
    assert len(rig.server.sessions) == 2


async def test_every_consumer_gone_means_nothing_carried_once_the_delay_ran(rig: MddsRig) -> None:
    consumers = [rig.hub.open_consumer("sse" if n % 2 else "ws") for n in range(10)]
    for n, consumer in enumerate(consumers):
        consumer.acquire([f"S{m:03d}" for m in range(n, n + 30)])
    rig.hub.set_session_active(True)
    await rig.until(lambda: len(rig.carried()) == 39)

    for consumer in consumers:
        consumer.close()
    await rig.advance(DELAY)

    await rig.until(lambda: rig.carried() == set())
    assert rig.hub.subscriptions() == []


async def test_snapshot_reads_known_symbols_through_a_short_connection(rig: MddsRig) -> None:
    quotes = await rig.feed.snapshot(["RKLB", "NOPE", "AAPL"])

    assert [quote.symbol for quote in quotes] == ["RKLB", "AAPL"]
    await rig.until(lambda: rig.server.current is None)  # closed again


async def test_connect_without_cookies_is_auth_required_and_a_bad_cookie_is_an_expiry(rig: MddsRig) -> None:
    rig.cookies = {}
    with pytest.raises(AuthRequired):
        await rig.feed.connect()
    rig.cookies = {"ATC": "stale"}
    with pytest.raises(SessionExpired) as raised:
        await rig.feed.connect()
    assert "stale" not in str(raised.value)  # cookie values never reach messages


async def test_a_symbol_never_answered_is_unsubscribed_by_name(rig: MddsRig) -> None:
    rig.server.silent = True  # no snapshot, hence no Request id to cancel by
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    rig.hub.set_session_active(True)
    await rig.until(lambda: rig.carried() == {"AAPL"})

    consumer.close()
    await rig.advance(DELAY)

    await rig.until(lambda: rig.carried() == set())
    session = rig.server.current
    assert session is not None
    (unsubscribe,) = session.commands_named("unsubscribe")
    assert unsubscribe["Symbol"] == "AAPL"


async def test_a_symbol_carried_by_a_probe_request_too_is_fully_unsubscribed(rig: MddsRig) -> None:
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT"])
    rig.hub.set_session_active(True)
    await read(consumer, 2)
    await rig.advance(WATCHDOG, step=1.0)  # the probe re-subscribes AAPL under a second Request id
    session = rig.server.current
    assert session is not None
    await rig.until(lambda: len(session.requests) == 2)

    consumer.release(["AAPL"])
    await rig.advance(DELAY, step=1.0)

    await rig.until(lambda: rig.carried() == {"MSFT"})
    await rig.server.publish("MSFT", {"20": "2.5"})
    await read_until(consumer, lambda item: isinstance(item, Quote) and item.bid == 2.5)
