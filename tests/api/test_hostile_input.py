"""Hostile input through the running server: JSON past the limits, wrong JSON types, WebSocket frames that
used to kill a connection's consumer, request text that could forge log lines, uploads cut off midway, and
requests aiohttp's own HTTP parser refuses."""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import re
from typing import Any

import aiohttp
import pytest
from pydantic import BaseModel

from ftdesk.domain.accounts import AccountType
from ftdesk.service.context import ENDPOINTS
from ftdesk.service.push.quote_frames import QuoteJson
from ftdesk.service.push.state import StreamingOptions
from ftdesk.service.web.json_input import MAX_JSON_DEPTH, MAX_JSON_INTEGER
from ftdesk.streaming.models import QuoteItem
from tests.api import routes_for_tests
from tests.api.test_streaming_api import of_type, open_ws, ws_next
from tests.conftest import TEST_API_KEY
from tests.fakes.waiting import wait_until

API = "/api/v1"
WAIT = 10.0


@pytest.fixture
async def service(start_service):
    return await start_service(extra_tables=[routes_for_tests.routes])


def nested(depth: int, inner: str = "1") -> str:
    """Return a JSON array nested `depth` levels deep."""
    return "[" * depth + inner + "]" * depth


async def post_raw(service, path: str, text: str | bytes, method: str = "POST") -> tuple[int, dict[str, Any]]:
    headers = {**service.auth, "Content-Type": "application/json"}
    async with service.http.request(method, service.url(path), data=text, headers=headers) as response:
        assert response.content_type == "application/json", await response.text()
        return response.status, await response.json()


def only_detail(body: dict[str, Any]) -> dict[str, Any]:
    (detail,) = body["error"]["details"]
    return detail


# --- JSON past the limits ------------------------------------------------------------------------------


async def test_nesting_up_to_the_limit_is_read_and_one_level_more_is_refused(service) -> None:
    body = '{"name": "a", "qty": 1, "side": "B", "extra": ' + nested(MAX_JSON_DEPTH - 1) + "}"
    status, answer = await post_raw(service, f"{API}/_test/echo", body)
    # Read in full: what refuses it is the unknown field, not the depth.
    assert status == 422 and only_detail(answer)["field"] == "extra", answer

    body = '{"name": "a", "qty": 1, "side": "B", "extra": ' + nested(MAX_JSON_DEPTH) + "}"
    status, answer = await post_raw(service, f"{API}/_test/echo", body)
    assert status == 400 and answer["error"]["code"] == "VALIDATION_ERROR"
    assert only_detail(answer)["type"] == "json_too_deep" and str(MAX_JSON_DEPTH) in answer["error"]["message"]


@pytest.mark.parametrize("depth", [200, 5_000, 200_000])
async def test_far_too_deep_bodies_are_a_validation_error_not_a_crash(service, depth: int) -> None:
    status, answer = await post_raw(service, f"{API}/_test/echo", nested(depth))
    assert status == 400 and only_detail(answer)["type"] == "json_too_deep"


@pytest.mark.parametrize(
    ("literal", "shown"),
    [
        ("9" * 5000, "(5000 characters)"),  # past CPython's 4300-digit int-from-string limit
        (str(MAX_JSON_INTEGER + 1), str(MAX_JSON_INTEGER + 1)),
        ("1e400", "1e400"),  # overflows a float to infinity
        ("-1e400", "-1e400"),
    ],
)
async def test_numbers_too_large_are_refused_naming_the_field(service, literal: str, shown: str) -> None:
    status, answer = await post_raw(service, f"{API}/_test/echo", '{"name": "a", "side": "B", "qty": ' + literal + "}")
    assert status == 400 and answer["error"]["code"] == "VALIDATION_ERROR"
    detail = only_detail(answer)
    assert detail == {
        "field": "qty",
        "location": "body",
        "message": detail["message"],
        "type": "number_too_large",
    }
    assert shown in detail["message"] and "too large" in detail["message"]


async def test_a_huge_number_deep_inside_a_body_is_named_by_its_path(service) -> None:
    await service.login()
    acct = await individual_account(service)
    body = {"acct_num": acct, "legs": [{"symbol": "AAPL", "qty": 1}, {"symbol": "MSFT", "qty": 1}]}
    text = json.dumps(body).replace('"qty": 1}]', '"qty": ' + "7" * 4400 + "}]")
    status, answer = await post_raw(service, f"{API}/orders/conditional/preview", text)
    assert status == 400 and only_detail(answer)["field"] == "legs.1.qty"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_infinity_are_not_json(service, literal: str) -> None:
    status, answer = await post_raw(service, f"{API}/_test/echo", '{"name": "a", "side": "B", "qty": ' + literal + "}")
    assert status == 400 and answer["error"]["code"] == "MALFORMED_REQUEST" and literal in answer["error"]["message"]


async def individual_account(service) -> str:
    accounts = await service.context.broker.accounts.get_accounts()
    return next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)


HOSTILE_VALUES = {
    "nested 200 deep": nested(200),
    "5000-digit integer": "9" * 5000,
    "1e400": "1e400",
    "2**70": str(2**70),
    "NaN": "NaN",
    "the string 10": '"10"',
    "zero": "0",
}


async def test_no_body_endpoint_answers_a_server_error_to_hostile_json(service) -> None:
    """Every endpoint with a body, each of its first fields set to each hostile value, and whole bodies too deep."""
    await service.login()
    endpoints = [ep for ep in service.runtime.server._app[ENDPOINTS] if ep.body is not None]
    assert len(endpoints) >= 25
    outcomes: dict[int, int] = {}
    sent = 0
    for endpoint in endpoints:
        if endpoint.path.endswith(("/auth/logout", "/auth/login")):
            continue
        path = re.sub(r"\{[^}]+\}", "X1", endpoint.path)
        bodies = [nested(100_000), '{"a":' * 5_000 + "1" + "}" * 5_000]
        for name in [*list(endpoint.body.model_fields)[:3], "unknown_field"]:
            bodies += ["{" + json.dumps(name) + ":" + value + "}" for value in HOSTILE_VALUES.values()]
        for text in bodies:
            status, answer = await post_raw(service, path, text, method=endpoint.method)
            sent += 1
            outcomes[status] = outcomes.get(status, 0) + 1
            assert status < 500, (endpoint.method, endpoint.path, text[:80], answer)
            assert answer["ok"] is (status < 400)
    assert sent >= 700 and set(outcomes) <= {200, 201, 400, 404, 409, 422}, outcomes


# --- JSON types --------------------------------------------------------------------------------------------


async def test_a_number_sent_as_a_string_is_refused_naming_the_field(service) -> None:
    await service.login()
    acct = await individual_account(service)
    body = {"acctNum": acct, "symbol": "AAPL", "orderActionCode": "B", "qty": "10", "priceTypeCode": "M"}
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json={**body, "tifCode": "D"})
    assert status == 400 and answer["error"]["code"] == "VALIDATION_ERROR"
    assert [d["field"] for d in answer["error"]["details"]] == ["qty"]

    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json={**body, "qty": 10.0})
    assert status == 200, answer  # a whole number written as a decimal is still a number
    status, answer = await service.call(
        "POST", f"{API}/alerts/price-triggers", json={"symbol": "AAPL", "direction": "ABOVE", "price": "200.5"}
    )
    assert status == 400 and [d["field"] for d in answer["error"]["details"]] == ["price"]


@pytest.mark.parametrize("value", [0, 1, "true", "yes", None])
async def test_a_boolean_must_be_true_or_false(service, value: object) -> None:
    body = {"username": "trader", "password": "paper-pass", "remember": value}
    status, answer = await service.call("POST", f"{API}/auth/login", json=body)
    assert status == 400 and [d["field"] for d in answer["error"]["details"]] == ["remember"], answer
    assert service.context.session.state.value == "logged_out"


async def test_a_byte_order_mark_before_a_body_is_accepted(service) -> None:
    text = codecs.BOM_UTF8 + json.dumps({"name": "a", "qty": 2, "side": "S"}).encode()
    status, answer = await post_raw(service, f"{API}/_test/echo", text)
    assert status == 200 and answer["data"] == {"name": "a", "qty": 2.0, "side": "S"}


@pytest.mark.parametrize("value", ["0", "1", "yes", "on", "t", ""])
async def test_a_boolean_query_parameter_takes_only_true_or_false(service, value: str) -> None:
    await service.login()
    status, answer = await service.call("GET", f"{API}/market-data/chart/AAPL?bar_width=5&extended_hours={value}")
    assert status == 422 and [d["field"] for d in answer["error"]["details"]] == ["extended_hours"], answer
    for accepted in ("true", "FALSE"):
        status, answer = await service.call(
            "GET", f"{API}/market-data/chart/AAPL?bar_width=5&extended_hours={accepted}"
        )
        assert status == 200, answer


async def test_boolean_query_parameters_say_what_they_take(service) -> None:
    async with service.http.get(service.url("/docs/openapi.json")) as response:
        document = await response.json()
    (param,) = [
        p
        for p in document["paths"]["/api/v1/market-data/chart/{symbol}"]["get"]["parameters"]
        if p["name"] == "extended_hours"
    ]
    assert param["schema"]["type"] == "boolean" and "true or false" in param["description"]
    assert "Input limits" in document["info"]["description"]
    assert str(MAX_JSON_DEPTH) in document["info"]["description"]


# --- WebSocket frames ----------------------------------------------------------------------------------


async def test_ws_frames_past_the_limits_get_error_frames_and_the_connection_keeps_working(service) -> None:
    await service.login()
    ws = await open_ws(service)
    try:
        for frame, kind in [
            ('{"action": "subscribe", "symbols": ' + nested(MAX_JSON_DEPTH + 1, '"AAPL"') + "}", "json_too_deep"),
            (nested(30_000), "json_too_deep"),  # far past what the parser itself can recurse into
            ('{"action": "subscribe", "symbols": ["AAPL"], "n": ' + "9" * 5000 + "}", "number_too_large"),
            ('{"action": "ping", "n": 1e400}', "number_too_large"),
        ]:
            await ws.send_str(frame)
            error = await ws_next(ws, of_type("error"))
            assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["type"] == kind, error
        await ws.send_str('{"action": "ping", "n": NaN}')
        assert (await ws_next(ws, of_type("error")))["code"] == "MALFORMED_REQUEST"
        await ws.send_json({"action": "subscribe", "symbols": "AAPL"})  # a string, not a list
        assert (await ws_next(ws, of_type("error")))["details"][0]["field"] == "symbols"

        await ws.send_json({"action": "ping"})
        assert await ws_next(ws, lambda f: f["type"] != "status") == {"type": "pong"}
        await ws.send_json({"action": "subscribe", "symbols": ["AAPL"]})
        assert (await ws_next(ws, of_type("ack")))["subscribed"] == ["AAPL"]
        assert (await ws_next(ws, of_type("quote")))["symbol"] == "AAPL", "quotes still flow"
    finally:
        await ws.close()


async def ws_consumers(service) -> int:
    return service.context.quotes.status().consumers_by_kind.get("ws", 0)


class BuggyFrames(QuoteJson):
    """A frame encoder with a bug: it fails on the kinds of frames named, as an encoding bug would."""

    def __init__(self, fail_on: frozenset[str]) -> None:
        super().__init__()
        self.fail_on = fail_on

    def ws_reply(self, reply: BaseModel) -> str:
        if "reply-error" in self.fail_on and getattr(reply, "type", None) == "error":
            raise RuntimeError("a bug in answering frames")
        return super().ws_reply(reply)

    def ws_frame(self, item: QuoteItem) -> str:
        if "ws-quote" in self.fail_on:
            raise RuntimeError("a bug in encoding quotes")
        return super().ws_frame(item)

    def sse_frame(self, item: QuoteItem) -> tuple[str, str]:
        if "sse-quote" in self.fail_on:
            raise RuntimeError("a bug in writing quotes")
        return super().sse_frame(item)


def buggy(*fail_on: str) -> StreamingOptions:
    """Return streaming options whose frame encoder fails on the frames named."""
    return StreamingOptions(frames=lambda: BuggyFrames(frozenset(fail_on)))


async def test_an_unexpected_error_answering_a_frame_closes_the_socket_with_1011_and_is_logged_once(
    start_service, caplog: pytest.LogCaptureFixture
) -> None:
    service = await start_service(streaming=buggy("reply-error"))
    caplog.set_level(logging.INFO)
    ws = await open_ws(service)
    await ws.send_json({"action": "ping"})
    assert await ws_next(ws, lambda f: f["type"] != "status") == {"type": "pong"}
    await ws.send_json({"action": "explode"})  # answered with an error frame, which the encoder fails on
    async with asyncio.timeout(WAIT):
        while (message := await ws.receive()).type is aiohttp.WSMsgType.TEXT:
            pass
    assert message.type is aiohttp.WSMsgType.CLOSE and ws.close_code == aiohttp.WSCloseCode.INTERNAL_ERROR
    await ws.close()
    await wait_until(lambda: service.context.quotes.status().consumers_by_kind.get("ws", 0) == 0)
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(logged) == 1 and "1011" in logged[0].getMessage() and logged[0].exc_info is not None


async def test_an_unexpected_error_sending_quotes_closes_the_socket_with_1011_instead_of_going_quiet(
    start_service, caplog: pytest.LogCaptureFixture
) -> None:
    service = await start_service(streaming=buggy("ws-quote"))
    caplog.set_level(logging.INFO)
    await service.login()
    ws = await open_ws(service)
    await ws.send_json({"action": "subscribe", "symbols": ["AAPL"]})
    async with asyncio.timeout(WAIT):
        while (message := await ws.receive()).type is aiohttp.WSMsgType.TEXT:
            pass
    assert message.type is aiohttp.WSMsgType.CLOSE and ws.close_code == aiohttp.WSCloseCode.INTERNAL_ERROR
    await ws.close()
    await wait_until(lambda: service.context.quotes.status().consumers_by_kind.get("ws", 0) == 0)
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1


async def test_an_unexpected_error_in_an_sse_stream_ends_it_and_is_logged_once(
    start_service, caplog: pytest.LogCaptureFixture
) -> None:
    service = await start_service(streaming=buggy("sse-quote"))
    caplog.set_level(logging.INFO)
    await service.login()
    url = service.url(f"{API}/streaming/quotes?symbols=AAPL")
    async with asyncio.timeout(WAIT), service.http.get(url, headers=service.auth) as response:
        assert response.status == 200
        text = (await response.read()).decode()  # returns only because the server ended the stream
    assert text.startswith("retry: ") and "event: status" in text
    await wait_until(lambda: service.context.quotes.status().consumers_by_kind.get("sse", 0) == 0)
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(logged) == 1 and "SSE quote stream" in logged[0].getMessage()


# --- what reaches the log ------------------------------------------------------------------------------------


async def raw_exchange(service, request: bytes, *, close_after_send: bool = False) -> bytes:
    """Send raw bytes on a new connection and return everything the server answers until it closes."""
    host, port = service.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        if close_after_send:
            return b""
        async with asyncio.timeout(WAIT):
            return await reader.read()
    finally:
        writer.close()


def head_and_body(answer: bytes) -> tuple[str, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.decode("latin-1"), json.loads(body)


async def test_request_text_in_the_access_log_cannot_start_a_new_line(
    service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    forged = "/api/v1/x%0a2026-11-25%2012:00:00,000%20INFO%20ftdesk.access:%20GET%20/forged%0d%1b[31m"
    auth = f"Authorization: Bearer {TEST_API_KEY}"
    request = f"GET {forged} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\nConnection: close\r\n\r\n".encode()
    head, body = head_and_body(await raw_exchange(service, request))
    assert head.startswith("HTTP/1.1 404") and body["error"]["code"] == "NOT_FOUND"
    await wait_until(lambda: any(r.name == "ftdesk.access" and "/forged" in r.getMessage() for r in caplog.records))
    (line,) = [r.getMessage() for r in caplog.records if "/forged" in r.getMessage()]
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.startswith("GET /api/v1/x%0a2026-11-25") and "-> 404" in line


async def test_a_body_cut_off_mid_upload_is_an_info_line_not_an_error(
    service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    request = (
        f"POST /api/v1/_test/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TEST_API_KEY}\r\n"
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name": "half an upl'
    ).encode()
    await raw_exchange(service, request, close_after_send=True)
    await wait_until(lambda: any(r.name == "ftdesk.access" and "_test/echo" in r.getMessage() for r in caplog.records))
    (access,) = [r.getMessage() for r in caplog.records if r.name == "ftdesk.access"]
    assert "-> 400" in access
    assert any(r.levelno == logging.INFO and "did not arrive complete" in r.getMessage() for r in caplog.records)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


# --- requests aiohttp's own parser refuses --------------------------------------------------------------------

SECRET_QUERY = f"api_key={TEST_API_KEY}&note=s3cret-query-value"


@pytest.mark.parametrize(
    ("request_bytes", "fragment"),
    [
        (f"GET /api/v1/health?{SECRET_QUERY}&pad={'a' * 9000} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "8190 bytes"),
        (f"GET /api/v1/health?{SECRET_QUERY} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {'b' * 9000}\r\n\r\n", "8190"),
        (f"G\x01T /api/v1/health?{SECRET_QUERY} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "method"),
        (f"GET /api/v1/health?{SECRET_QUERY} HTTP/1.1 trailing\r\nHost: 127.0.0.1\r\n\r\n", "request line"),
        (f"GET /api/v1/health?{SECRET_QUERY} HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n", "not valid HTTP"),
    ],
    ids=["long-query", "long-header", "bad-method", "bad-request-line", "bad-header"],
)
async def test_requests_the_http_parser_refuses_answer_in_the_envelope_without_echoing_them(
    service, caplog: pytest.LogCaptureFixture, request_bytes: str, fragment: str
) -> None:
    caplog.set_level(logging.DEBUG)
    answer = await raw_exchange(service, request_bytes.encode())
    head, body = head_and_body(answer)
    assert head.startswith("HTTP/1.") and " 400 " in head.split("\r\n")[0]
    assert "Content-Type: application/json" in head and "X-Request-ID: " in head
    assert body["ok"] is False and body["data"] is None and body["error"]["code"] == "MALFORMED_REQUEST"
    assert fragment in body["error"]["message"]
    for secret in (TEST_API_KEY, "s3cret-query-value", "/api/v1/health"):
        assert secret not in answer.decode("latin-1")
        assert secret not in caplog.text
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_the_depth_parameter_of_a_quote_stream_takes_only_true_or_false(service) -> None:
    async with service.http.get(
        service.url(f"{API}/streaming/quotes?symbols=AAPL&depth=0"), headers=service.auth
    ) as response:
        answer = await response.json()
    assert response.status == 422 and [d["field"] for d in answer["error"]["details"]] == ["depth"]
