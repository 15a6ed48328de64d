"""Property: whatever consumers, the session and the network do, the hub converges on the desired state.

After any sequence of acquire/release/close by several consumers, drops, refused connects, logouts and
clock moves, once the session is back and every delay has run: the upstream carries exactly the symbols
with a positive refcount, and each refcount is the number of distinct consumers holding the symbol.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ftdesk.streaming.consumer import QuoteConsumer
from ftdesk.streaming.hub import QuoteHub
from tests.fakes.clock import ManualClock
from tests.fakes.quote_feed import FakeQuoteFeed
from tests.unit.streaming.helpers import settle

SYMBOLS = ["AAPL", "MSFT", "NVDA", "SPY", "QQQ", "TSLA", "KO"]
CONSUMERS = 3
DELAY = 3.0
BACKOFF = (1.0, 2.0)

symbol_sets = st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=5)
consumer_index = st.integers(0, CONSUMERS - 1)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("acquire"), consumer_index, symbol_sets),
        st.tuples(st.just("release"), consumer_index, symbol_sets),
        st.tuples(st.just("close"), consumer_index),
        st.tuples(st.just("drop")),
        st.tuples(st.just("refuse"), st.integers(1, 3)),
        st.tuples(st.just("logout")),
        st.tuples(st.just("login")),
        st.tuples(st.just("advance"), st.sampled_from([0.5, 1.0, 2.9, 3.0, 5.0])),
    ),
    max_size=30,
)


@dataclass
class Model:
    """What the test believes each consumer holds, kept independently of the hub."""

    held: list[set[str]]

    def refcounts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for symbols in self.held:
            for symbol in symbols:
                counts[symbol] = counts.get(symbol, 0) + 1
        return counts


def hub_refcounts(hub: QuoteHub) -> dict[str, int]:
    return {s.symbol: s.refcount for s in hub.subscriptions() if s.refcount > 0}


async def scenario(ops: list[tuple[object, ...]]) -> None:
    clock = ManualClock()
    feed = FakeQuoteFeed(clock, max_symbols_per_message=2)  # small, so chunking is exercised too
    # The fake only quotes on subscribe, so a long watchdog keeps silence out of this property.
    hub = QuoteHub(feed, clock, unsubscribe_delay=DELAY, backoff=BACKOFF, watchdog_timeout=10_000, stable_after=2.0)
    await hub.start()
    hub.set_session_active(True)
    consumers: list[QuoteConsumer] = [hub.open_consumer(("sse", "ws", "shared")[i]) for i in range(CONSUMERS)]
    model = Model(held=[set() for _ in range(CONSUMERS)])
    try:
        for op in ops:
            match op:
                case ("acquire", int(i), list(symbols)):
                    taken = consumers[i].acquire(symbols)
                    assert set(taken) == set(symbols) - model.held[i]
                    model.held[i] |= set(symbols)
                case ("release", int(i), list(symbols)):
                    released = consumers[i].release(symbols)
                    assert set(released) == set(symbols) & model.held[i]
                    model.held[i] -= set(symbols)
                case ("close", int(i)):
                    consumers[i].close()
                    consumers[i] = hub.open_consumer(consumers[i].kind)
                    model.held[i] = set()
                case ("drop",):
                    feed.drop_connections()
                case ("refuse", int(count)):
                    feed.refuse(count)
                case ("logout",):
                    hub.set_session_active(False)
                case ("login",):
                    hub.set_session_active(True)
                case ("advance", float(seconds)):
                    await clock.advance(seconds)
            await settle(10)
            assert hub_refcounts(hub) == model.refcounts()  # holds at every step, delays or not
            assert len(feed.open_connections) <= 1

        # Let every delay run: the session back, unsubscribe delays, a backoff per refusal still queued.
        hub.set_session_active(True)
        budget = DELAY + max(BACKOFF) * (feed.pending_refusals + 2)
        for _ in range(int(budget / 0.5) + 1):
            await settle(10)
            await clock.advance(0.5)
        await settle(10)

        wanted = model.refcounts()
        assert hub_refcounts(hub) == wanted
        assert set(hub.upstream_symbols) == set(wanted)
        if wanted:
            assert set(feed.current.symbols) == set(wanted)  # what the fake upstream itself carries
        assert all(len(m.symbols) <= 2 for m in feed.log)
        kinds = {s.symbol: s.kinds for s in hub.subscriptions()}
        for symbol in wanted:
            assert kinds[symbol] == sorted(consumers[i].kind for i in range(CONSUMERS) if symbol in model.held[i])
    finally:
        await hub.close()
    await settle(10)
    assert clock.sleeper_count == 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_upstream_converges_on_the_symbols_with_a_positive_refcount(ops: list[tuple[object, ...]]) -> None:
    asyncio.run(scenario(ops))
