"""Hostile connections: a request target naming another host, unmasked WebSocket frames, slow clients."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import struct
from urllib.parse import urlsplit

import pytest

from tests.api import routes_for_tests
from tests.conftest import TEST_API_KEY


@pytest.fixture
async def service(start_service):
    return await start_service(extra_tables=[routes_for_tests.routes])


async def raw_request(service, request: bytes) -> tuple[int, dict]:
    """Send bytes as they are on a new connection; return the status and the JSON body of the answer."""
    parts = urlsplit(service.base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(request)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        size, _, rest = body.partition(b"\r\n")
        body = rest[: int(size, 16)]
    return status, json.loads(body)


@pytest.mark.parametrize("host", ["evil.com", "127.0.0.1"])
@pytest.mark.parametrize("authority", ["evil.com", "evil.com:80", "127.0.0.1.evil.com"])
async def test_a_request_target_naming_another_host_is_refused_like_a_bad_host(
    service, host: str, authority: str
) -> None:
    request = (f"GET http://{authority}/api/v1/health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode()
    status, body = await raw_request(service, request)
    assert status == 403 and body["error"]["code"] == "HOST_NOT_ALLOWED", body


async def test_a_request_target_naming_this_machine_is_served(service) -> None:
    port = urlsplit(service.base_url).port
    request = f"GET http://127.0.0.1:{port}/api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    status, body = await raw_request(service, request.encode())
    assert status == 200 and body["data"]["service"] == "ftdesk"


async def test_a_foreign_host_header_is_refused_whatever_the_request_target_names(service) -> None:
    port = urlsplit(service.base_url).port
    request = f"GET http://127.0.0.1:{port}/api/v1/health HTTP/1.1\r\nHost: evil.com\r\nConnection: close\r\n\r\n"
    status, body = await raw_request(service, request.encode())
    assert status == 403 and body["error"]["code"] == "HOST_NOT_ALLOWED", body


async def websocket(service) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open the quote WebSocket by hand (a client that frames what it likes); return the stream after the 101."""
    parts = urlsplit(service.base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /api/v1/ws/quotes HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {TEST_API_KEY}\r\n\r\n"
        ).encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


async def close_code(reader: asyncio.StreamReader) -> int:
    """Read the server's frames until its close frame; return the close code."""
    while True:
        first, second = await asyncio.wait_for(reader.readexactly(2), 10)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", await reader.readexactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", await reader.readexactly(8))[0]
        payload = await reader.readexactly(length)
        if first & 0x0F == 0x8:
            return int(struct.unpack("!H", payload[:2])[0])


def frame(text: str, *, masked: bool) -> bytes:
    data = text.encode()
    if not masked:
        return bytes([0x81, len(data)]) + data
    mask = os.urandom(4)
    return bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


async def test_an_unmasked_client_frame_closes_the_websocket_with_1002(service) -> None:
    reader, writer = await websocket(service)
    try:
        writer.write(frame('{"action": "subscribe", "symbols": ["AAPL"]}', masked=False))
        await writer.drain()
        assert await close_code(reader) == 1002
    finally:
        writer.close()


async def test_masked_client_frames_split_anywhere_are_read_as_usual(service) -> None:
    reader, writer = await websocket(service)
    try:
        data = frame('{"action": "subscribe", "symbols": ["AAPL"]}', masked=True) + frame("not json", masked=True)
        for at in range(0, len(data), 3):  # the frame headers arrive in pieces
            writer.write(data[at : at + 3])
            await writer.drain()
        # The service read both frames: it answers the second, which is not JSON, with an error frame, not a close.
        while True:
            first, second = await asyncio.wait_for(reader.readexactly(2), 10)
            payload = await reader.readexactly(
                second & 0x7F if second & 0x7F < 126 else struct.unpack("!H", await reader.readexactly(2))[0]
            )
            assert first & 0x0F != 0x8, payload
            if b'"error"' in payload:
                break
    finally:
        writer.close()


async def test_a_username_with_a_newline_is_logged_masked_on_one_line(
    service, caplog: pytest.LogCaptureFixture
) -> None:
    username = "trader-one\n2026-01-01 00:00:00,000 INFO ftdesk: forged line by trader-one"
    with caplog.at_level(logging.INFO):
        async with service.http.post(
            service.url("/api/v1/auth/login"),
            json={"username": username, "password": "paper-pass"},
            headers=service.auth,
        ) as answer:
            assert answer.status == 200
    lines = [record.getMessage() for record in caplog.records]
    assert not [line for line in lines if "\n" in line or "trader-one" in line], lines
    assert any("tr***ne" in line for line in lines), lines


@pytest.fixture
def quick_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ftdesk.service.web.server.HEAD_TIMEOUT", 0.3)
    monkeypatch.setattr("ftdesk.service.web.server.BODY_TIMEOUT", 0.3)


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """Return what the server sent before it closed the connection (fails if it stays open longer)."""
    return await asyncio.wait_for(reader.read(), seconds)


@pytest.mark.usefixtures("quick_timeouts")
async def test_a_client_too_slow_with_its_headers_is_disconnected(service) -> None:
    parts = urlsplit(service.base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends
        await writer.drain()
        assert await closed_within(reader, 5) == b""
    finally:
        writer.close()


@pytest.mark.usefixtures("quick_timeouts")
async def test_a_client_too_slow_with_its_body_is_disconnected(service) -> None:
    parts = urlsplit(service.base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(
            b"POST /api/v1/orders/equity/preview HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TEST_API_KEY}\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"acctNum": '
        )
        await writer.drain()
        answer = await closed_within(reader, 5)
        assert b" 200 " not in answer.split(b"\r\n", 1)[0]
    finally:
        writer.close()


@pytest.mark.usefixtures("quick_timeouts")
async def test_an_idle_keep_alive_connection_and_a_prompt_client_are_not_cut(service) -> None:
    parts = urlsplit(service.base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        for _ in range(2):  # one request, an idle pause longer than the timeouts, another request
            writer.write(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert head.startswith(b"HTTP/1.1 200"), head
            length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
            await reader.readexactly(length)
            with pytest.raises(TimeoutError):  # idle for longer than both timeouts: the connection stays open
                await asyncio.wait_for(reader.read(1), 0.5)
    finally:
        writer.close()
