"""Long-lived responses (SSE, WebSocket) tracked so shutdown can end them at once.

aiohttp waits for open handlers when it stops, which kept Quit hanging for 14-99 s with clients
connected (measured, on plain asyncio too). Handlers register here; shutdown closes WebSockets with GOING_AWAY and
cancels the rest, so the server stops in well under a second.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from aiohttp import WSCloseCode, web


class StreamRegistry:
    """The set of open streaming handlers."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()
        self._sockets: set[web.WebSocketResponse] = set()
        self.closing = False

    @contextlib.contextmanager
    def track(self, response: web.StreamResponse | None = None) -> Iterator[None]:
        """Register the current handler task (and its WebSocket) for the duration of the block."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        if isinstance(response, web.WebSocketResponse):
            self._sockets.add(response)
        try:
            yield
        finally:
            if task is not None:
                self._tasks.discard(task)
            if isinstance(response, web.WebSocketResponse):
                self._sockets.discard(response)

    @property
    def open_count(self) -> int:
        """Return the number of open streaming handlers."""
        return len(self._tasks)

    async def close_all(self, _app: web.Application | None = None) -> None:
        """Close WebSockets with GOING_AWAY and cancel every other streaming handler."""
        self.closing = True
        for ws in list(self._sockets):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down"), 0.5)
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)
