"""A loopback TCP proxy a test can cut: the network drop a reconnecting client must survive."""

from __future__ import annotations

import asyncio
import contextlib


class CuttingProxy:
    """Forwards 127.0.0.1:<port> to a target; ``cut()`` drops every open connection, ``refusing`` refuses new ones."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.refusing = False
        self.connections = 0
        self.refused = 0

    async def start(self) -> str:
        """Start listening; return the proxy's base URL."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            self.refused += 1
            writer.transport.abort()
            return
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        self._writers.update((writer, up_writer))
        pumps = [asyncio.create_task(self._pump(reader, up_writer)), asyncio.create_task(self._pump(up_reader, writer))]
        self._tasks.update(pumps)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for writer_ in (writer, up_writer):
            writer_.transport.abort()
            self._writers.discard(writer_)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._tasks.discard(asyncio.current_task())  # type: ignore[arg-type]

    def retarget(self, port: int) -> None:
        """Forward new connections to another port (a service started again elsewhere)."""
        self._target_port = port

    def cut(self) -> None:
        """Drop every open connection at once, as a network failure would (no close handshake)."""
        for writer in list(self._writers):
            writer.transport.abort()

    @property
    def open_connections(self) -> int:
        """Return how many client connections are forwarded now."""
        return len(self._writers) // 2

    async def close(self) -> None:
        """Stop listening and drop everything."""
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
