"""Server-sent events over aiohttp: a frame parser and reconnecting readers of the quote and event streams.

A dropped stream is reopened after a jittered backoff. The account-event stream resumes with
``Last-Event-ID`` (the service replays what was missed from its buffer, so nothing is lost or repeated; its
ids increase across service restarts, so an id from before a restart is recognised and answered with a full
replay and an ``events_missed`` status);
quote ids are per connection, so the quote stream simply starts over with the latest quote of each symbol.
An error answer (bad API key, bad symbol list, a stream the service has not configured) is raised, not retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from ftdesk.client.backoff import Backoff
from ftdesk.client.errors import FtdeskApiError, api_error
from ftdesk.client.models import EventFrame
from ftdesk.domain.event_names import EventName
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.market import OrderBook, Quote

log = logging.getLogger(__name__)

EVENT_NAMES = frozenset(name.value for name in EventName)

READ_TIMEOUT = 45.0
"""Seconds without a byte (the service sends a heartbeat every 15 s) before a stream counts as dead."""


@dataclass(frozen=True)
class SseFrame:
    """One dispatched event of a text/event-stream."""

    event: str
    data: str
    id: str | None


class SseParser:
    """Turns the lines of a text/event-stream into frames (comments and retry lines are skipped)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> SseFrame | None:
        """Take one line (without its newline); return a frame when a blank line completes one."""
        if not line:
            frame = None
            if self._data:
                frame = SseFrame(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data, self._id = "", [], None
            return frame
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None


Opener = Callable[[dict[str, str]], Awaitable[aiohttp.ClientResponse]]


async def _frames(
    open_stream: Opener, headers: Callable[[], dict[str, str]], backoff: Backoff
) -> AsyncGenerator[SseFrame, None]:
    """Yield the frames of a stream forever, reopening it after a drop."""
    while True:
        try:
            response = await open_stream(headers())
        except (aiohttp.ClientError, TimeoutError) as exc:
            delay = backoff.next_delay()
            log.info("Stream unreachable (%s); reconnecting in %.2f s", type(exc).__name__, delay)
            await asyncio.sleep(delay)
            continue
        try:
            if response.status >= 400:
                try:
                    body: Any = await response.json(content_type=None)
                except (ValueError, aiohttp.ClientError):
                    body = None
                error = api_error(response.status, body, response.headers.get("X-Request-ID"))
                if response.status < 500 or error.code == "STREAMING_UNAVAILABLE":
                    raise error  # a refusal, or a stream not configured: asking again would not change it
                raise _Retry(error)
            parser = SseParser()
            async for raw in response.content:
                frame = parser.feed(raw.decode("utf-8").rstrip("\r\n"))
                if frame is not None:
                    backoff.reset()
                    yield frame
        except (aiohttp.ClientError, TimeoutError, _Retry) as exc:
            log.info("Stream dropped (%s)", type(exc).__name__)
        finally:
            response.close()  # an unfinished stream's connection cannot be reused
        delay = backoff.next_delay()
        log.info("Stream ended; reconnecting in %.2f s", delay)
        await asyncio.sleep(delay)


class _Retry(Exception):
    def __init__(self, error: FtdeskApiError) -> None:
        super().__init__(str(error))


async def quote_frames(
    open_stream: Opener, backoff: Backoff, *, depth: bool = False
) -> AsyncGenerator[Quote | OrderBook, None]:
    """Yield quotes (and books with ``depth``) from the quote SSE, reconnecting after a drop."""
    async for frame in _frames(open_stream, dict, backoff):
        if frame.event == "quote":
            yield Quote.model_validate_json(frame.data, extra="ignore")
        elif frame.event == "book" and depth:
            yield OrderBook.model_validate_json(frame.data, extra="ignore")
        elif frame.event == "error":
            log.warning("Quote stream: %s", frame.data)


def parse_event(data: str) -> AccountEvent:
    """Read an account event; a name newer than this client arrives as OTHER, its name in ``desc.event_name``."""
    event = json.loads(data)
    name = event.get("event_type") if isinstance(event, dict) else None
    if isinstance(name, str) and name not in EVENT_NAMES:
        desc = event.get("desc") if isinstance(event.get("desc"), dict) else {}
        event = {**event, "event_type": EventName.OTHER.value, "desc": {**desc, "event_name": name}}
    return AccountEvent.model_validate(event, extra="ignore")


def _events_missed(data: str) -> bool:
    try:
        state = json.loads(data)
    except ValueError:
        return False
    return isinstance(state, dict) and state.get("events_missed") is True


async def event_frames(
    open_stream: Opener, backoff: Backoff, last_event_id: int | None
) -> AsyncGenerator[EventFrame, None]:
    """Yield account events, resuming after the last one seen with ``Last-Event-ID`` on every reconnect."""
    seen: list[int | None] = [last_event_id]
    # After an events_missed frame the next event is taken whatever its id: a service whose clock went back since
    # our id was issued (or an older version, whose ids start at 1 on each start) gives out lower ids.
    resyncing = [False]

    def headers() -> dict[str, str]:
        return {} if seen[0] is None else {"Last-Event-ID": str(seen[0])}

    async for frame in _frames(open_stream, headers, backoff):
        if frame.event in ("status", "error") or frame.id is None:
            if frame.event == "status" and _events_missed(frame.data):
                # Some events after our id may be gone: they fell out of the buffer, or the id is from before the
                # service last started. Every buffered event follows. Our id is kept until the first of them
                # arrives, so a drop before then asks for the same full replay again instead of none at all.
                log.warning("Account events after id %s may be lost: the service no longer buffers them", seen[0])
                resyncing[0] = True
            continue
        event_id = int(frame.id)
        if not resyncing[0] and seen[0] is not None and event_id <= seen[0]:
            continue  # already delivered (a replay that overlaps what this reader saw)
        resyncing[0] = False
        seen[0] = event_id
        yield EventFrame(id=event_id, event=parse_event(frame.data))
