"""Direct delivery: a consumer whose reader waits idle gets its updates written by the hub, without a wake-up.

The edge's writer is played by ``FakeClient``: a socket that takes each write at once, or holds it until
drained (a client that stopped reading), or is gone. ``Stream`` is the edge's pump around it: it registers
the client as the consumer's sink and writes whatever ``get()`` returns, as the SSE and WebSocket edges do.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from ftdesk.streaming.consumer import DIRECT_DELIVERY, QuoteConsumer
from ftdesk.streaming.models import ConsumerClosed, QuoteItem
from tests.unit.streaming.conftest import MakeRig
from tests.unit.streaming.helpers import Rig, prices, settle

pytestmark = pytest.mark.skipif(not DIRECT_DELIVERY, reason="direct delivery needs eager tasks (Python 3.12+)")

HEARTBEAT = 5.0


class FakeClient:
    """What a consumer's client has been sent, write by write, and how its socket behaves."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, list[QuoteItem]]] = []  # ("direct" or "pumped", batch), in write order
        self.full = False  # a write waits until drain(): the client stopped reading
        self.gone: BaseException | None = None  # the next write raises this: the client went away
        self.cancelled_writes = 0
        self._room = asyncio.Event()

    @property
    def direct(self) -> list[list[QuoteItem]]:
        """Return the batches the hub handed to the sink while the reader waited."""
        return [batch for how, batch in self.writes if how == "direct"]

    @property
    def pumped(self) -> list[list[QuoteItem]]:
        """Return the batches the reader took from get() and wrote (an empty one is a heartbeat)."""
        return [batch for how, batch in self.writes if how == "pumped"]

    @property
    def quotes(self) -> list[tuple[str, float]]:
        """Return every quote the client got, in the order it got them."""
        return [quote for _, batch in self.writes for quote in prices(batch)]

    async def send(self, batch: list[QuoteItem]) -> None:
        """The consumer's writer: what it runs while the reader waits."""
        await self._write("direct", batch)

    async def pumped_write(self, batch: list[QuoteItem]) -> None:
        """What the reader does with a batch from get()."""
        await self._write("pumped", batch)

    async def _write(self, how: str, batch: list[QuoteItem]) -> None:
        if self.gone is not None:
            raise self.gone
        # As on a socket: the bytes are buffered first, and only then does a full socket make the write wait.
        self.writes.append((how, batch))
        if self.full:
            self._room.clear()
            try:
                await self._room.wait()
            except asyncio.CancelledError:
                self.cancelled_writes += 1
                raise
            if self.gone is not None:
                raise self.gone

    def drain(self) -> None:
        """Let a held write finish, as a client that reads again does."""
        self.full = False
        self._room.set()


class Stream:
    """The edge around a consumer: sink registered, then write what get() returns until it fails."""

    def __init__(self, consumer: QuoteConsumer, client: FakeClient) -> None:
        self.consumer = consumer
        self.client = client
        consumer.deliver_to(client)
        self.task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            while True:
                await self.client.pumped_write(await self.consumer.get(timeout=HEARTBEAT))
        finally:
            self.consumer.close()  # as the handlers do when their pump ends

    @property
    def failure(self) -> BaseException | None:
        """Return what ended the stream, or None while it runs."""
        if not self.task.done():
            return None
        return self.task.exception()

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, ConsumerClosed):
            await self.task


async def streaming(rig: Rig, *symbols: str) -> Stream:
    """Return a running stream of these symbols whose first quotes were written and whose reader now waits."""
    consumer = await rig.reading(*symbols)
    stream = Stream(consumer, FakeClient())
    await settle()
    return stream


async def test_updates_for_an_idle_reader_are_written_directly_in_order_and_counted(make_rig: MakeRig) -> None:
    rig = await make_rig()
    stream = await streaming(rig, "AAPL", "MSFT")

    for step in range(5):
        rig.fake.set_price("AAPL", 100.0 + step)
        await settle()
        rig.fake.set_price("MSFT", 200.0 + step)
        await settle()

    expected = [(symbol, base + step) for step in range(5) for symbol, base in (("AAPL", 100.0), ("MSFT", 200.0))]
    assert stream.client.quotes == expected
    assert stream.client.pumped == [], "the reader was never woken: every update went straight out"
    [status] = [c for c in rig.hub.status().consumers if c.id == stream.consumer.id]
    assert (status.delivered, status.conflated, status.pending, status.lag_seconds) == (2 + 10, 0, 0, 0.0)
    await stream.stop()


async def test_updates_of_one_burst_go_out_in_one_write(make_rig: MakeRig) -> None:
    rig = await make_rig()
    stream = await streaming(rig, "AAPL", "MSFT", "NVDA")

    rig.fake.set_price("AAPL", 101.0)
    rig.fake.set_price("MSFT", 201.0)
    rig.fake.set_price("AAPL", 102.0)  # before the hub flushed: conflated, keeps AAPL's place
    await settle()

    assert [prices(batch) for batch in stream.client.direct] == [[("AAPL", 102.0), ("MSFT", 201.0)]]
    await stream.stop()


async def test_a_client_that_stops_reading_gets_the_latest_of_each_symbol_after_its_held_write(
    make_rig: MakeRig,
) -> None:
    rig = await make_rig()
    stalled, reader = await streaming(rig, "AAPL", "MSFT"), await streaming(rig, "AAPL", "MSFT")
    stalled.client.full = True

    rig.fake.set_price("AAPL", 101.0)  # written, then the write waits for the socket
    await settle()
    for step in range(1, 50):
        rig.fake.set_price("AAPL", 101.0 + step)
        rig.fake.set_price("MSFT", 200.0 + step)
        await settle()
    await rig.advance(HEARTBEAT * 3)  # no heartbeat sneaks past the held write either

    assert stalled.client.quotes == [("AAPL", 101.0)], "nothing more is written while the write is held"
    assert stalled.consumer.pending_count == 2, "one pending update per symbol"
    [status] = [c for c in rig.hub.status().consumers if c.id == stalled.consumer.id]
    assert status.conflated == 2 * 49 - 2 and status.lag_seconds == HEARTBEAT * 3
    assert reader.client.quotes[-2:] == [("AAPL", 150.0), ("MSFT", 249.0)], "the others are not slowed"

    stalled.client.drain()
    await settle()
    assert stalled.client.quotes == [("AAPL", 101.0), ("AAPL", 150.0), ("MSFT", 249.0)]
    assert [prices(batch) for batch in stalled.client.pumped] == [[("AAPL", 150.0), ("MSFT", 249.0)]]

    rig.fake.set_price("MSFT", 300.0)  # caught up and idle again: direct once more
    await settle()
    assert prices(stalled.client.direct[-1]) == [("MSFT", 300.0)]
    await stalled.stop()
    await reader.stop()


async def test_while_the_reader_writes_a_batch_updates_wait_for_it(make_rig: MakeRig) -> None:
    rig = await make_rig()
    consumer = await rig.reading("AAPL")
    rig.fake.set_price("AAPL", 101.0)  # nobody reads yet: pending
    await settle()
    client = FakeClient()
    client.full = True
    stream = Stream(consumer, client)  # the reader takes 101 and its write is held
    await settle()

    rig.fake.set_price("AAPL", 102.0)
    await settle()
    rig.fake.set_price("AAPL", 103.0)
    await settle()
    assert client.direct == [], "never written beside a reader that is busy writing"
    client.drain()
    await settle()
    assert client.quotes == [("AAPL", 101.0), ("AAPL", 103.0)]
    await stream.stop()


async def test_the_heartbeat_counts_from_the_last_update_written_directly(make_rig: MakeRig) -> None:
    rig = await make_rig()
    stream = await streaming(rig, "AAPL")

    await rig.advance(3)
    rig.fake.set_price("AAPL", 101.0)
    await settle()
    await rig.advance(HEARTBEAT - 0.25)  # 8 s after get() started, under 5 s after the update
    assert stream.client.pumped == []
    await rig.advance(0.25)
    assert stream.client.pumped == [[]], "one heartbeat once the stream was quiet for the whole interval"
    await stream.stop()


async def test_a_client_gone_ends_only_its_stream_and_the_hub_reads_on(make_rig: MakeRig) -> None:
    rig = await make_rig()
    gone, other = await streaming(rig, "AAPL"), await streaming(rig, "AAPL")
    gone.client.gone = ConnectionResetError("Cannot write to closing transport")

    rig.fake.set_price("AAPL", 101.0)
    await settle()

    assert isinstance(gone.failure, ConnectionResetError), "the reader sees the failed write as its own"
    assert gone.consumer.closed
    rig.fake.set_price("AAPL", 102.0)
    await settle()
    assert other.client.quotes == [("AAPL", 101.0), ("AAPL", 102.0)]
    assert rig.refcounts() == {"AAPL": 1}
    assert rig.hub.status().state == "connected"
    await other.stop()


async def test_a_client_gone_while_its_write_is_held_ends_its_stream(make_rig: MakeRig) -> None:
    rig = await make_rig()
    stream = await streaming(rig, "AAPL")
    stream.client.full = True
    rig.fake.set_price("AAPL", 101.0)
    await settle()
    rig.fake.set_price("AAPL", 102.0)
    await settle()

    stream.client.gone = ConnectionResetError("Connection lost")
    stream.client.drain()
    await settle()

    assert isinstance(stream.failure, ConnectionResetError)
    assert rig.refcounts() == {}
    assert stream.client.quotes == [("AAPL", 101.0)]


async def test_closing_a_consumer_cancels_its_held_write(make_rig: MakeRig) -> None:
    rig = await make_rig()
    stream = await streaming(rig, "AAPL")
    stream.client.full = True
    rig.fake.set_price("AAPL", 101.0)
    await settle()

    stream.consumer.close()
    await settle()

    assert stream.client.cancelled_writes == 1
    assert stream.task.done(), "the reader ended with the consumer"
    rig.fake.set_price("AAPL", 102.0)
    await settle()
    assert stream.client.quotes == [("AAPL", 101.0)]
    await stream.stop()
