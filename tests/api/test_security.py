"""Local-only security: API key, Host (DNS rebinding), Origin (REST and WebSocket), CORS, no secrets in logs."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest

from tests.api import routes_for_tests
from tests.conftest import TEST_API_KEY


@pytest.fixture
async def service(start_service):
    return await start_service(extra_tables=[routes_for_tests.routes], allowed_origins="http://localhost:3000")


async def code_of(response) -> str:
    return (await response.json())["error"]["code"]


async def test_missing_key_is_403_api_key_invalid(service) -> None:
    async with service.http.post(service.url("/api/v1/_test/echo"), json={"name": "a", "qty": 1, "side": "B"}) as r:
        assert r.status == 403 and await code_of(r) == "API_KEY_INVALID"


@pytest.mark.parametrize(
    "header",
    [f"Bearer {TEST_API_KEY}x", f"Bearer {TEST_API_KEY[:-1]}", f"Basic {TEST_API_KEY}", TEST_API_KEY, "Bearer "],
)
async def test_wrong_key_is_403(service, header: str) -> None:
    async with service.http.get(service.url("/api/v1/_test/items?symbols=A"), headers={"Authorization": header}) as r:
        assert r.status == 403 and await code_of(r) == "API_KEY_INVALID"


async def test_right_key_passes_and_scheme_is_case_insensitive(service) -> None:
    for scheme in ("Bearer", "bearer"):
        headers = {"Authorization": f"{scheme} {TEST_API_KEY}"}
        async with service.http.get(service.url("/api/v1/_test/items?symbols=A"), headers=headers) as r:
            assert r.status == 200


async def test_health_and_docs_need_no_key(service) -> None:
    for path in ("/api/v1/health", "/docs", "/docs/openapi.json"):
        async with service.http.get(service.url(path)) as r:
            assert r.status == 200, path


async def test_key_check_can_be_disabled(start_service) -> None:
    service = await start_service(extra_tables=[routes_for_tests.routes], api_key_required="false")
    async with service.http.get(service.url("/api/v1/_test/items?symbols=A")) as r:
        assert r.status == 200


async def test_api_key_query_parameter_only_where_allowed(service) -> None:
    async with service.http.get(service.url(f"/api/v1/_test/items?symbols=A&api_key={TEST_API_KEY}")) as r:
        assert r.status == 403 and await code_of(r) == "API_KEY_INVALID"
    async with service.http.ws_connect(service.url(f"/api/v1/_test/ws?api_key={TEST_API_KEY}")) as ws:
        await ws.send_str("hi")
        assert (await ws.receive_str()) == "hi"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8787", "192.168.1.10:8787", "127.0.0.1.evil.example"])
async def test_foreign_host_header_is_refused(service, host: str) -> None:
    headers = {**service.auth, "Host": host}
    async with service.http.get(service.url("/api/v1/health"), headers=headers) as r:
        assert r.status == 403 and await code_of(r) == "HOST_NOT_ALLOWED"
        assert r.headers["X-Request-ID"]


@pytest.mark.parametrize("host", ["localhost", "localhost:8787", "127.0.0.1:1", "[::1]:8787", "LOCALHOST"])
async def test_local_host_names_are_accepted(service, host: str) -> None:
    async with service.http.get(service.url("/api/v1/health"), headers={"Host": host}) as r:
        assert r.status == 200


async def test_foreign_origin_is_refused_on_rest(service) -> None:
    headers = {**service.auth, "Origin": "http://evil.example"}
    async with service.http.get(service.url("/api/v1/health"), headers=headers) as r:
        assert r.status == 403 and await code_of(r) == "ORIGIN_NOT_ALLOWED"
    headers["Origin"] = "null"
    async with service.http.get(service.url("/api/v1/health"), headers=headers) as r:
        assert r.status == 403 and await code_of(r) == "ORIGIN_NOT_ALLOWED"


async def test_foreign_origin_is_refused_on_a_websocket_handshake(service) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as info:
        await service.http.ws_connect(
            service.url("/api/v1/_test/ws"), headers=service.auth, origin="http://evil.example"
        )
    assert info.value.status == 403


async def test_own_and_allowed_origins_are_accepted_with_cors_for_the_allowed_one(service) -> None:
    own = service.base_url
    async with service.http.get(service.url("/api/v1/health"), headers={"Origin": own}) as r:
        assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers
    headers = {**service.auth, "Origin": "http://localhost:3000"}
    async with service.http.get(service.url("/api/v1/_test/items?symbols=A"), headers=headers) as r:
        assert r.status == 200
        assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
        assert r.headers["Vary"] == "Origin"
    async with service.http.ws_connect(
        service.url("/api/v1/_test/ws"), headers=service.auth, origin="http://localhost:3000"
    ) as ws:
        await ws.send_str("ok")
        assert await ws.receive_str() == "ok"


async def test_cors_preflight_for_an_allowed_origin(service) -> None:
    headers = {
        "Origin": "http://localhost:3000",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with service.http.options(service.url("/api/v1/_test/echo"), headers=headers) as r:
        assert r.status == 204
        assert "Authorization" in r.headers["Access-Control-Allow-Headers"]
        assert "POST" in r.headers["Access-Control-Allow-Methods"]
    headers["Origin"] = "http://evil.example"
    async with service.http.options(service.url("/api/v1/_test/echo"), headers=headers) as r:
        assert r.status == 403


async def test_logs_never_contain_the_key_the_query_or_the_body(service, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret_body = {"name": "s3cret-body-value", "qty": 1, "side": "B"}
    async with service.http.post(service.url("/api/v1/_test/echo"), json=secret_body, headers=service.auth) as r:
        assert r.status == 200
    async with service.http.ws_connect(service.url(f"/api/v1/_test/ws?api_key={TEST_API_KEY}")) as ws:
        await ws.close()
    async with service.http.get(
        service.url("/api/v1/health"), headers={"Authorization": "Bearer wrong-key-abcdef"}
    ) as r:
        assert r.status == 200
    text = caplog.text
    assert "GET /api/v1/_test/ws -> 101" in text  # the access log did record these requests
    assert TEST_API_KEY not in text and "s3cret-body-value" not in text and "wrong-key-abcdef" not in text


async def test_a_path_that_does_not_exist_asks_for_the_key_before_saying_so(service) -> None:
    async with service.http.get(service.url("/api/v1/no/such/thing")) as r:
        assert r.status == 403 and await code_of(r) == "API_KEY_INVALID"
    async with service.http.get(service.url("/api/v1/no/such/thing"), headers=service.auth) as r:
        assert r.status == 404 and await code_of(r) == "NOT_FOUND"
    async with service.http.delete(service.url("/api/v1/health")) as r:  # a method the path does not allow
        assert r.status == 403 and await code_of(r) == "API_KEY_INVALID"
    async with service.http.delete(service.url("/api/v1/health"), headers=service.auth) as r:
        assert r.status == 405 and r.headers["Allow"] == "GET"


async def test_streams_carry_the_request_id_and_cors_headers(service) -> None:
    headers = {**service.auth, "Origin": "http://localhost:3000", "X-Request-ID": "sse-1"}
    async with service.http.get(service.url("/api/v1/streaming/quotes?symbols=AAPL"), headers=headers) as r:
        assert r.status == 200 and r.content_type == "text/event-stream"
        assert r.headers["X-Request-ID"] == "sse-1"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    host, port = service.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        (
            "GET /api/v1/ws/quotes HTTP/1.1\r\n"
            f"Host: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {TEST_API_KEY}\r\nX-Request-ID: ws-1\r\n\r\n"
        ).encode()
    )
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    writer.close()
    assert head.startswith("HTTP/1.1 101")
    assert "X-Request-ID: ws-1\r\n" in head and "X-Content-Type-Options: nosniff\r\n" in head


async def test_a_key_with_bytes_that_are_not_utf8_is_refused_not_a_crash(service) -> None:
    host, port = service.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        f"GET /api/v1/_test/items?symbols=A HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
        + b"Authorization: Bearer \xff\xfe"
        + TEST_API_KEY.encode()
        + b"\r\nConnection: close\r\n\r\n"
    )
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 403") and b'"API_KEY_INVALID"' in answer
