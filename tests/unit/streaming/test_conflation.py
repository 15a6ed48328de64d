"""The per-consumer buffer: latest per symbol, counters, and lag measured from the oldest unread update."""

from __future__ import annotations

from ftdesk.streaming.conflation import ConflatingBuffer


def test_a_newer_value_replaces_an_unread_one_but_keeps_its_age_and_place() -> None:
    buffer: ConflatingBuffer[float] = ConflatingBuffer()
    buffer.put("AAPL", 1.0, now=10.0)
    buffer.put("MSFT", 2.0, now=11.0)
    buffer.put("AAPL", 1.5, now=12.0)
    assert len(buffer) == 2 and buffer.conflated == 1
    assert buffer.lag(now=15.0) == 5.0  # AAPL has been waiting since 10, not 12
    assert buffer.drain() == [1.5, 2.0]
    assert (buffer.delivered, buffer.lag(now=20.0), len(buffer)) == (2, 0.0, 0)


def test_discarding_the_oldest_moves_the_lag_to_the_next() -> None:
    buffer: ConflatingBuffer[str] = ConflatingBuffer()
    buffer.put("AAPL", "a", now=1.0)
    buffer.put("MSFT", "m", now=4.0)
    buffer.discard("AAPL")
    buffer.discard("NVDA")  # never there: no effect
    assert buffer.lag(now=5.0) == 1.0
    buffer.clear()
    assert buffer.drain() == [] and buffer.delivered == 0
