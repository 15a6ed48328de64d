"""The quote hub against a scriptable fake feed: refcounts, chunking, delays, reconnects, watchdog, fan-out."""

from __future__ import annotations

import asyncio

import pytest

from ftdesk.domain.errors import BrokerError, StreamingUnavailable
from ftdesk.streaming.consumer import normalize_symbols
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import ConsumerClosed, HubState
from tests.fakes.clock import ManualClock
from tests.fakes.quote_feed import FakeQuoteFeed
from tests.unit.streaming.conftest import MakeRig
from tests.unit.streaming.helpers import BACKOFF, DELAY, PROBE, WATCHDOG, errors, prices, settle, take

SYMBOLS_120 = [f"S{i:03d}" for i in range(120)]


# --- refcounts ---------------------------------------------------------------------------------


async def test_refcount_counts_distinct_holders_and_a_consumer_releases_only_what_it_holds(make_rig: MakeRig) -> None:
    rig = await make_rig()
    a, b = rig.hub.open_consumer("sse"), rig.hub.open_consumer("ws")
    assert a.acquire(["AAPL", "MSFT"]) == ["AAPL", "MSFT"]
    assert a.acquire(["aapl ", "AAPL"]) == []  # already held: counts once
    assert b.acquire(["AAPL"]) == ["AAPL"]
    assert rig.refcounts() == {"AAPL": 2, "MSFT": 1}
    assert b.release(["MSFT", "NVDA"]) == []  # b holds neither
    assert rig.refcounts() == {"AAPL": 2, "MSFT": 1}
    assert a.release(["AAPL"]) == ["AAPL"]
    assert a.release(["AAPL"]) == []
    assert rig.refcounts() == {"AAPL": 1, "MSFT": 1}
    kinds = {s.symbol: s.kinds for s in rig.hub.subscriptions()}
    assert kinds == {"AAPL": ["ws"], "MSFT": ["sse"]}


def test_symbols_are_normalised_and_a_bare_string_is_refused() -> None:
    assert normalize_symbols([" aapl", "AAPL", "", "  ", "msft"]) == ["AAPL", "MSFT"]
    with pytest.raises(TypeError):
        normalize_symbols("AAPL")


# --- chunking and the delayed unsubscribe -------------------------------------------------------


async def test_120_symbols_go_upstream_in_three_messages_of_at_most_50(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(SYMBOLS_120)
    await rig.login()
    sent = rig.fake.sent("subscribe")
    assert [len(m) for m in sent] == [50, 50, 20]
    assert [s for m in sent for s in m] == SYMBOLS_120
    assert list(rig.fake.current.symbols) == SYMBOLS_120 == rig.hub.upstream_symbols

    consumer.close()
    await rig.advance(DELAY)
    unsent = rig.fake.sent("unsubscribe")
    assert [len(m) for m in unsent] == [50, 50, 20]
    assert rig.fake.current.symbols == {} and rig.hub.upstream_symbols == []


async def test_unsubscribe_waits_the_delay_and_restarts_it_on_each_release(make_rig: MakeRig) -> None:
    rig = await make_rig(watchdog_timeout=1000)  # the fake only sends snapshots: keep the watchdog out of it
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    await settle()
    consumer.release(["AAPL"])
    await rig.advance(DELAY - 1)
    assert rig.fake.sent("unsubscribe") == []
    [aapl] = rig.hub.subscriptions()
    assert (aapl.refcount, aapl.upstream, aapl.unsubscribe_in_seconds) == (0, True, 1.0)

    consumer.acquire(["AAPL"])  # back within the delay: no churn
    await rig.advance(DELAY + 5)
    assert rig.fake.sent("unsubscribe") == [] and rig.fake.sent("subscribe") == [("AAPL",)]

    consumer.release(["AAPL"])  # a new delay starts from this release
    await rig.advance(DELAY - 0.25)
    assert rig.fake.sent("unsubscribe") == []
    await rig.advance(0.25)
    assert rig.fake.sent("unsubscribe") == [("AAPL",)]
    assert rig.hub.subscriptions() == [] and rig.hub.upstream_symbols == []


async def test_a_symbol_taken_over_by_another_consumer_within_the_delay_stays_subscribed(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    first = rig.hub.open_consumer("sse")
    first.acquire(["AAPL"])
    await settle()
    first.close()
    await rig.advance(DELAY / 2)
    second = rig.hub.open_consumer("ws")
    second.acquire(["AAPL"])
    assert prices(await take(second)) == [("AAPL", 100.0)]  # the cached quote, at once
    await rig.advance(2 * DELAY)
    assert rig.fake.sent("subscribe") == [("AAPL",)] and rig.fake.sent("unsubscribe") == []
    assert rig.hub.upstream_symbols == ["AAPL"]


async def test_without_a_delay_the_unsubscribe_is_immediate(make_rig: MakeRig) -> None:
    rig = await make_rig(unsubscribe_delay=0)
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT"])
    await settle()
    consumer.release(["AAPL"])
    await settle()
    assert rig.fake.sent("unsubscribe") == [("AAPL",)]
    assert rig.hub.upstream_symbols == ["MSFT"]


# --- session and the offline queue --------------------------------------------------------------


async def test_subscriptions_before_login_are_queued_and_applied_on_login(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT"])
    await rig.advance(60)
    assert rig.fake.attempts == []  # no session, no connection attempt
    assert rig.state() is HubState.WAITING_FOR_SESSION
    assert rig.hub.upstream_symbols == []
    await rig.login()
    assert rig.state() is HubState.CONNECTED
    assert rig.fake.sent("subscribe") == [("AAPL", "MSFT")]
    assert prices(await take(consumer)) == [("AAPL", 100.0), ("MSFT", 100.0)]


async def test_logged_in_without_symbols_opens_no_connection_until_one_is_wanted(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    await rig.advance(5)
    assert rig.state() is HubState.IDLE and rig.fake.attempts == []
    rig.hub.open_consumer("ws").acquire(["SPY"])
    await settle()
    assert rig.state() is HubState.CONNECTED and len(rig.fake.connections) == 1


async def test_logout_closes_the_upstream_and_login_restores_every_symbol(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT"])
    await settle()
    first = rig.fake.current

    await rig.logout()
    assert first.closed_by_client
    assert rig.fake.open_connections == []
    assert rig.state() is HubState.WAITING_FOR_SESSION
    assert rig.hub.upstream_symbols == []
    consumer.acquire(["NVDA"])  # while logged out: queued
    await rig.advance(30)
    assert len(rig.fake.attempts) == 1

    await rig.login()
    second = rig.fake.current
    assert second is not first
    assert list(second.symbols) == ["AAPL", "MSFT", "NVDA"]
    assert rig.hub.status().reconnect_count == 0  # a login is not a reconnect
    assert rig.hub.status().last_error is None


# --- reconnects and backoff ---------------------------------------------------------------------


async def test_a_dropped_connection_is_reopened_after_the_backoff_with_every_symbol(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(SYMBOLS_120[:60])
    await settle()
    lingering = rig.hub.open_consumer("ws")
    lingering.acquire(["ZED"])
    lingering.close()
    await rig.advance(DELAY)
    await take(consumer)

    rig.fake.drop_connections()
    await settle()
    assert rig.state() is HubState.RECONNECTING and rig.hub.upstream_symbols == []
    assert "closed" in (rig.hub.status().last_error or "")
    await rig.advance(BACKOFF[0] - 0.25)
    assert len(rig.fake.connections) == 1
    await rig.advance(0.25)
    second = rig.fake.current
    assert second.number == 2
    assert [len(m) for m in rig.fake.sent("subscribe", connection=2)] == [50, 10]
    assert list(second.symbols) == SYMBOLS_120[:60]  # not ZED: nobody holds it any more
    assert len(prices(await take(consumer))) == 60  # fresh quotes after the reconnect
    assert rig.hub.status().reconnect_count == 1


async def test_a_failing_stream_counts_as_a_drop(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    rig.hub.open_consumer("sse").acquire(["AAPL"])
    await settle()
    rig.fake.current.fail(ConnectionResetError("socket reset"))
    await settle()
    assert "ConnectionResetError: socket reset" in (rig.hub.status().last_error or "")
    await rig.advance(BACKOFF[0])
    assert list(rig.fake.current.symbols) == ["AAPL"]


async def test_backoff_follows_the_sequence_reuses_the_last_delay_and_resets_after_a_good_connection(
    make_rig: MakeRig,
) -> None:
    rig = await make_rig()  # backoff 1, 2, 4; a connection is good once it stayed up 10 s
    rig.fake.refuse(4)
    rig.hub.open_consumer("sse").acquire(["AAPL"])
    start = rig.clock.monotonic()
    await rig.login()
    await rig.advance(20)
    assert [t - start for t in rig.fake.attempts] == [0, 1, 3, 7, 11]
    assert rig.state() is HubState.CONNECTED
    assert rig.hub.status().reconnect_count == 4
    assert "Could not open" in (rig.hub.status().last_error or "")

    # Up 9 s since t=11 (not yet good): the next drop continues the sequence.
    rig.fake.drop_connections()
    dropped = rig.clock.monotonic()
    await rig.advance(10)
    assert rig.fake.attempts[-1] - dropped == 4  # failures now 5: the last delay again
    # This connection stays up 10 s: good. The next drop starts the sequence over.
    await rig.advance(10)
    rig.fake.drop_connections()
    dropped = rig.clock.monotonic()
    await rig.advance(5)
    assert rig.fake.attempts[-1] - dropped == BACKOFF[0]
    # Dropped again at once: not good, so the second delay.
    rig.fake.drop_connections()
    dropped = rig.clock.monotonic()
    await rig.advance(5)
    assert rig.fake.attempts[-1] - dropped == BACKOFF[1]
    assert len(rig.fake.open_connections) == 1


async def test_logout_during_the_backoff_stops_retrying_and_login_connects_at_once(make_rig: MakeRig) -> None:
    rig = await make_rig()
    rig.fake.refuse(2)
    rig.hub.open_consumer("sse").acquire(["AAPL"])
    await rig.login()
    await rig.advance(1)  # second refusal; now waiting 2 s
    await rig.logout()
    assert rig.state() is HubState.WAITING_FOR_SESSION
    await rig.advance(30)
    assert len(rig.fake.attempts) == 2
    await rig.login()
    assert len(rig.fake.attempts) == 3 and rig.state() is HubState.CONNECTED


async def test_subscriptions_made_while_reconnecting_are_applied_when_it_comes_up(make_rig: MakeRig) -> None:
    rig = await make_rig()
    rig.fake.refuse(1)
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    await rig.login()
    assert rig.state() is HubState.RECONNECTING
    consumer.acquire(["MSFT"])
    consumer.release(["AAPL"])
    await rig.advance(BACKOFF[0])
    assert rig.fake.sent("subscribe") == [("AAPL", "MSFT")]  # AAPL still lingers in its delay
    await rig.advance(DELAY)
    assert rig.hub.upstream_symbols == ["MSFT"]


# --- watchdog -----------------------------------------------------------------------------------


async def test_the_watchdog_reconnects_a_silent_connection_that_ignores_its_probe(make_rig: MakeRig) -> None:
    rig = await make_rig()
    rig.fake.go_silent()
    rig.hub.open_consumer("sse").acquire(["AAPL"])
    await rig.login()
    await rig.advance(WATCHDOG)
    # Silent for the timeout: probed with a re-subscribe, not dropped yet.
    assert [m.action for m in rig.fake.log] == ["subscribe", "subscribe"]
    assert rig.hub.status().watchdog_probes == 1
    await rig.advance(PROBE - 0.25)
    assert len(rig.fake.connections) == 1 and rig.state() is HubState.CONNECTED
    await rig.advance(0.25)
    assert rig.fake.connections[0].closed_by_client
    assert rig.state() is HubState.RECONNECTING
    assert rig.hub.status().last_error == (
        f"No market data for {WATCHDOG:g} s while symbols were subscribed, and no answer to a probe within {PROBE:g} s"
    )
    rig.fake.silent = False
    await rig.advance(BACKOFF[0])
    assert list(rig.fake.current.symbols) == ["AAPL"]


async def test_a_quiet_feed_that_answers_the_probe_keeps_its_connection(make_rig: MakeRig) -> None:
    rig = await make_rig()  # the fake quotes on every subscribe and otherwise says nothing: a quiet night
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    await rig.login()
    await take(consumer)

    await rig.advance(5 * (WATCHDOG + PROBE), step=1.0)

    assert len(rig.fake.connections) == 1 and rig.state() is HubState.CONNECTED
    assert rig.hub.status().watchdog_probes >= 4
    assert rig.hub.status().reconnect_count == 0


async def test_the_watchdog_leaves_a_connection_alone_while_it_delivers(make_rig: MakeRig) -> None:
    rig = await make_rig()
    rig.hub.open_consumer("sse").acquire(["AAPL"])
    await rig.login()
    for step in range(10):
        await rig.advance(WATCHDOG - 5)
        rig.fake.set_price("AAPL", 100.0 + step)
        await settle()
    assert len(rig.fake.connections) == 1 and rig.state() is HubState.CONNECTED


async def test_the_watchdog_ignores_a_connection_without_symbols(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL"])
    await rig.login()
    consumer.release(["AAPL"])
    await rig.advance(DELAY)
    assert rig.hub.upstream_symbols == []
    await rig.advance(5 * WATCHDOG, step=5)
    assert len(rig.fake.connections) == 1 and rig.state() is HubState.CONNECTED
    # Its silence counts from the next subscription, not from the last message long ago.
    rig.fake.go_silent()
    consumer.acquire(["MSFT"])
    await settle()
    await rig.advance(WATCHDOG + PROBE - 1)
    assert len(rig.fake.connections) == 1
    await rig.advance(1)
    assert rig.fake.connections[0].closed


# --- fan-out ------------------------------------------------------------------------------------


async def test_a_consumer_that_never_reads_neither_slows_others_nor_grows(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    symbols = ["AAPL", "MSFT", "NVDA"]
    stalled, reader = rig.hub.open_consumer("sse"), rig.hub.open_consumer("ws")
    stalled.acquire(symbols)
    reader.acquire(symbols)
    await settle()
    await take(reader)
    stalled_since = rig.clock.monotonic()

    pushed: list[tuple[str, float]] = []
    received: list[tuple[str, float]] = []
    for i in range(600):
        symbol = symbols[i % 3]
        rig.fake.set_price(symbol, 100 + i / 100)
        pushed.append((symbol, 100 + i / 100))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        received.extend(prices(await take(reader)))  # promptly: no clock movement, no waiting
        assert stalled.pending_count <= len(symbols)
        await rig.clock.advance(0.01)
    assert received == pushed

    stats = {c.id: c for c in rig.hub.status().consumers}
    slow, fast = stats[stalled.id], stats[reader.id]
    assert (slow.pending, slow.delivered) == (3, 0)
    assert slow.conflated == 600 + 3 - 3  # three snapshots plus 600 updates in three slots
    assert slow.lag_seconds == pytest.approx(rig.clock.monotonic() - stalled_since, abs=1e-6)
    assert (fast.pending, fast.delivered, fast.conflated, fast.lag_seconds) == (0, 603, 0, 0.0)
    # When it finally reads, the stalled consumer gets the latest of each symbol, once.
    assert prices(await take(stalled)) == [("AAPL", 105.97), ("MSFT", 105.98), ("NVDA", 105.99)]


async def test_a_new_consumer_gets_the_latest_quote_at_once_then_updates(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    first = rig.hub.open_consumer("sse")
    first.acquire(["AAPL"])
    await settle()
    rig.fake.set_price("AAPL", 101.0)
    await settle()
    assert prices(await take(first)) == [("AAPL", 101.0)]  # the snapshot was conflated into the update

    late = rig.hub.open_consumer("ws")
    late.acquire(["AAPL"])
    assert prices(await take(late)) == [("AAPL", 101.0)]  # no clock movement, no upstream message
    assert rig.fake.sent("subscribe") == [("AAPL",)]
    rig.fake.set_price("AAPL", 102.0)
    await settle()
    assert prices(await take(first)) == prices(await take(late)) == [("AAPL", 102.0)]


async def test_a_refused_symbol_reaches_its_holders_as_an_error_and_is_not_asked_again(make_rig: MakeRig) -> None:
    rig = await make_rig(feed_options={"unknown_symbols": {"ZZZZ"}})
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    bystander = rig.hub.open_consumer("sse")
    bystander.acquire(["MSFT"])
    consumer.acquire(["AAPL", "ZZZZ"])
    await settle()
    batch = await take(consumer)
    assert errors(batch) == [("ZZZZ", "unknown symbol")] and prices(batch) == [("AAPL", 100.0)]
    assert errors(await take(bystander)) == []
    assert rig.hub.upstream_symbols == ["MSFT", "AAPL"]
    zzzz = next(s for s in rig.hub.subscriptions() if s.symbol == "ZZZZ")
    assert (zzzz.refcount, zzzz.upstream, zzzz.error) == (1, False, "unknown symbol")

    late = rig.hub.open_consumer("ws")
    late.acquire(["ZZZZ"])
    assert errors(await take(late)) == [("ZZZZ", "unknown symbol")]  # the known error, at once
    await rig.advance(5)
    assert sum("ZZZZ" in m for m in rig.fake.sent("subscribe")) == 1  # not retried on this connection

    rig.fake.drop_connections()
    await rig.advance(BACKOFF[0])
    assert sum("ZZZZ" in m for m in rig.fake.sent("subscribe")) == 2  # a new connection asks once more


async def test_status_reports_state_consumers_and_the_last_message(make_rig: MakeRig) -> None:
    rig = await make_rig()
    status = rig.hub.status()
    assert status.state is HubState.WAITING_FOR_SESSION and status.last_message_at is None
    sse = rig.hub.open_consumer("sse")
    rig.hub.open_consumer("ws")
    rig.hub.open_consumer("ws")
    sse.acquire(["AAPL"])
    await rig.login()
    at = rig.clock.now()
    await rig.advance(3)
    status = rig.hub.status()
    assert status.state is HubState.CONNECTED and status.since == at
    assert status.last_message_at == at
    assert status.subscribed_symbols == ["AAPL"]
    assert status.consumers_by_kind == {"sse": 1, "ws": 2, "shared": 0, "paper": 0}
    [mine] = [c for c in status.consumers if c.id == sse.id]
    assert (mine.kind, mine.symbol_count, mine.pending, mine.lag_seconds) == ("sse", 1, 1, 3.0)
    assert status.model_dump(mode="json")["state"] == "connected"


# --- consumers and shutdown ---------------------------------------------------------------------


async def test_get_waits_for_an_update_and_times_out_on_the_hub_clock(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = await rig.reading("AAPL")

    waiting = asyncio.create_task(consumer.get(timeout=5))
    await rig.advance(4.75)
    assert not waiting.done()
    await rig.advance(0.25)
    assert waiting.done() and waiting.result() == []

    waiting = asyncio.create_task(consumer.get())
    await settle()
    rig.fake.set_price("AAPL", 99.0)
    await settle()
    assert waiting.done() and prices(waiting.result()) == [("AAPL", 99.0)]


async def test_closing_a_consumer_releases_its_symbols_and_ends_its_reader(make_rig: MakeRig) -> None:
    rig = await make_rig()
    await rig.login()
    consumer = rig.hub.open_consumer("sse")
    consumer.acquire(["AAPL", "MSFT"])
    waiting = asyncio.create_task(consumer.get(timeout=60))
    await settle()
    waiting.cancel()
    reader = asyncio.create_task(consumer.get())
    await settle()
    consumer.close()
    consumer.close()
    await settle()
    with pytest.raises(ConsumerClosed):
        reader.result()
    with pytest.raises(ConsumerClosed):
        consumer.acquire(["NVDA"])
    assert consumer.release(["AAPL"]) == []
    assert rig.refcounts() == {}
    assert rig.hub.status().consumers == []
    await rig.advance(DELAY)
    assert rig.hub.upstream_symbols == []


async def test_close_stops_everything_and_is_idempotent(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = await rig.reading("AAPL")
    reader = asyncio.create_task(consumer.get(timeout=100))
    await settle()
    connection = rig.fake.current
    await rig.hub.close()
    await rig.hub.close()
    await settle()
    assert connection.closed_by_client
    assert rig.state() is HubState.DISABLED
    with pytest.raises(ConsumerClosed, match="shutting down"):
        reader.result()
    with pytest.raises(StreamingUnavailable):
        rig.hub.open_consumer("sse")
    with pytest.raises(StreamingUnavailable):
        await rig.hub.start()
    assert rig.clock.sleeper_count == 0


async def test_close_while_backing_off_leaves_no_task_behind(make_rig: MakeRig) -> None:
    rig = await make_rig()
    rig.fake.refuse(1, BrokerError("down"))
    rig.hub.open_consumer("sse").acquire(["AAPL"])
    await rig.login()
    assert rig.clock.sleeper_count >= 1
    await rig.hub.close()
    assert rig.clock.sleeper_count == 0


def test_bad_settings_are_refused() -> None:
    clock = ManualClock()
    feed = FakeQuoteFeed(clock)
    with pytest.raises(ValueError, match="backoff"):
        QuoteHub(feed, clock, unsubscribe_delay=1, backoff=())
    with pytest.raises(ValueError, match="backoff"):
        QuoteHub(feed, clock, unsubscribe_delay=1, backoff=(1, 0))
    with pytest.raises(ValueError, match="unsubscribe_delay"):
        QuoteHub(feed, clock, unsubscribe_delay=-1, backoff=(1,))
    with pytest.raises(ValueError, match="watchdog"):
        QuoteHub(feed, clock, unsubscribe_delay=1, backoff=(1,), watchdog_timeout=0)


async def test_unknown_consumer_kinds_are_refused(make_rig: MakeRig) -> None:
    rig = await make_rig()
    with pytest.raises(ValueError, match="sse, ws, shared"):
        rig.hub.open_consumer("rest")
