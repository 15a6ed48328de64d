"""A WebSocket that closes on an unmasked client frame, as RFC 6455 section 5.1 requires of a server.

aiohttp 3.14 reads a client's frames whether or not they are masked (it has no setting for it). Masking is what
keeps a client's bytes from reading as something else to a proxy in between (a cache poisoned by a forged
HTTP response), so a server "MUST close the connection upon receiving a frame that is not masked", with 1002
(protocol error). ``ClientWebSocket`` puts a small scanner of the frame headers in front of aiohttp's reader:
frames pass through unchanged, and the first unmasked one makes the reader fail with that protocol error, which
aiohttp answers by closing with 1002.

It also writes ready-made text frames (``text_frame``) in one go (``write_frames``): a fan-out sends the same
quote to every socket, so its frame is made once, and a batch of frames costs one transport write instead of
one ``send_str`` (and one ``send()`` system call) per frame.
"""

from __future__ import annotations

from typing import Any

from aiohttp import WSCloseCode, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_websocket import WebSocketError

from ftdesk.service.web.front_door import stamp_common_headers

_MASK_BIT = 0x80
_LENGTH_BITS = 0x7F
_MASK_BYTES = 4
_FIN_TEXT = 0x81  # FIN bit and opcode 1 (text): a whole message in one frame


def text_frame(text: str) -> bytes:
    """Return a server's WebSocket text frame (unmasked, uncompressed) carrying ``text``, header and all."""
    payload = text.encode("utf-8")
    length = len(payload)
    if length < 126:
        header = bytes((_FIN_TEXT, length))
    elif length < 65536:
        header = bytes((_FIN_TEXT, 126)) + length.to_bytes(2, "big")
    else:
        header = bytes((_FIN_TEXT, 127)) + length.to_bytes(8, "big")
    return header + payload


class FrameHeaders:
    """Follows the frames of a byte stream (headers read, payloads skipped); says whether each one is masked."""

    def __init__(self) -> None:
        self._header = bytearray()
        self._payload_left = 0

    def all_masked(self, data: bytes) -> bool:
        """Read the next bytes of the stream; return False at the first frame that is not masked."""
        at, end = 0, len(data)
        while at < end:
            if self._payload_left:
                step = min(self._payload_left, end - at)
                self._payload_left -= step
                at += step
                continue
            self._header.append(data[at])
            at += 1
            header = self._header
            if len(header) < 2:
                continue
            if not header[1] & _MASK_BIT:
                return False
            length = header[1] & _LENGTH_BITS
            extended = 2 if length == 126 else 8 if length == 127 else 0
            if len(header) < 2 + extended + _MASK_BYTES:
                continue
            if extended:
                length = int.from_bytes(header[2 : 2 + extended], "big")
            self._payload_left = length
            header.clear()
        return True


class _MaskedFramesOnly:
    """aiohttp's frame reader behind a check that every client frame is masked."""

    def __init__(self, reader: Any, queue: Any) -> None:
        self._reader = reader
        self._queue = queue
        self._frames = FrameHeaders()
        self._refused = False

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if self._refused:
            return True, b""
        if not self._frames.all_masked(bytes(data)):
            self._refused = True
            self._queue.set_exception(
                WebSocketError(WSCloseCode.PROTOCOL_ERROR, "A client frame was not masked (RFC 6455 section 5.1)")
            )
            return True, b""
        result: tuple[bool, bytes] = self._reader.feed_data(data)
        return result

    def feed_eof(self) -> None:
        self._reader.feed_eof()


class ClientWebSocket(web.WebSocketResponse):
    """``web.WebSocketResponse`` that closes with 1002 on a client frame that is not masked.

    ``write_frames`` writes frames made by ``text_frame`` as they are, when no compression was negotiated.
    """

    _frames_transport: Any = None
    _frames_drain: AbstractStreamWriter | None = None

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter:
        """Answer the handshake (with the common headers); keep what ``write_frames`` writes through and drains."""
        stamp_common_headers(request, self)
        writer = await super().prepare(request)
        self._frames_drain = writer
        return writer

    def _post_start(self, request: web.BaseRequest, protocol: str | None, writer: Any) -> None:
        super()._post_start(request, protocol, writer)
        self._frames_transport = writer.transport  # the connection's transport, which aiohttp's writer writes to
        # aiohttp has no public hook for its frame reader: the connection's parser is wrapped once, here.
        connection = request.protocol
        connection._payload_parser = _MaskedFramesOnly(connection._payload_parser, self._reader)

    @property
    def writes_frames(self) -> bool:
        """Say whether ``write_frames`` may be used: the socket is open and sends frames uncompressed."""
        return self._frames_transport is not None and not self.compress and not self.closed

    def write_frames(self, frames: bytes) -> bool:
        """Write whole text frames (``text_frame``) in one go; return True when the caller should ``drain_frames()``.

        Frames are written whole, so they never interleave with aiohttp's own (replies, pings, the close).
        Raises ``ConnectionResetError`` once the socket is closing, as ``send_str`` does.
        """
        transport = self._frames_transport
        if transport is None or self.closed or transport.is_closing():
            raise ConnectionResetError("Cannot write to closing transport")
        transport.write(frames)
        # Something left unsent: the transport may have paused the connection (above its high-water mark); the
        # writer then waits for it to drain, as send_str does, so updates for a client that does not read wait
        # in its consumer (conflated), not in memory here.
        return bool(transport.get_write_buffer_size())

    async def drain_frames(self) -> None:
        """Wait until the connection may take more (at once unless the transport paused it)."""
        if self._frames_drain is not None:
            await self._frames_drain.drain()
