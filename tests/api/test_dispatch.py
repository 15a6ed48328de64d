"""A JSON endpoint found by the front door answers as it does when aiohttp's application routes to it."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from ftdesk.service.web.dispatch import EndpointDispatch
from ftdesk.service.web.routing import Call, RouteTable, add_routes
from tests.conftest import TEST_API_KEY


@pytest.fixture
async def service(start_service):
    running = await start_service()
    await running.login()
    return running


async def test_a_remembered_path_answers_as_the_first_time(service) -> None:
    _, accounts = await service.call("GET", "/api/v1/accounts")
    acct = accounts["data"][0]["acct_num"]
    answers = [await service.call("GET", f"/api/v1/accounts/{acct}/positions") for _ in range(3)]
    assert answers[0][0] == 200 and answers[0][1]["data"]
    assert answers[1] == answers[0] and answers[2] == answers[0]
    # Each account's path is its own: the accounts' holdings, as the broker holds them.
    for account in accounts["data"]:
        status, body = await service.call("GET", f"/api/v1/accounts/{account['acct_num']}/positions")
        held = await service.context.broker.accounts.get_positions(account["acct_num"])
        assert status == 200 and sorted(p["symbol"] for p in body["data"]) == sorted(p.symbol for p in held)


async def test_paths_mean_what_they_mean_to_aiohttp(service) -> None:
    status, body = await service.call("GET", "/api/v1/%68ealth")  # percent-escapes decode before matching
    assert status == 200 and body["data"]["status"] == "ok"
    for _ in range(2):  # a path parameter is decoded, the first time and from memory alike
        status, body = await service.call("GET", f"/api/v1/accounts/{quote('Z 9')}/positions")
        assert status == 404 and "Z 9" in body["error"]["message"], body
    status, body = await service.call("GET", "/api/v1/health/")
    assert status == 404 and body["error"]["code"] == "NOT_FOUND"
    async with service.http.head(service.url("/api/v1/health"), headers=service.auth) as r:
        assert r.status == 405 and r.headers["Allow"] == "GET"


async def test_a_body_sent_after_100_continue_is_read(service) -> None:
    host, port = service.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    body = b'{"username": "trader", "password": "paper-pass"}'
    writer.write(
        (
            "POST /api/v1/auth/login HTTP/1.1\r\n"
            f"Host: {host}:{port}\r\nAuthorization: Bearer {TEST_API_KEY}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
        ).encode()
    )
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100 Continue")
    writer.write(body)
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    writer.close()
    assert head.startswith("HTTP/1.1 200 OK") and "X-Request-ID: " in head


def _routed_app() -> tuple[web.Application, EndpointDispatch]:
    routes = RouteTable(tag="test")

    @routes.get("/items/{item}", summary="One item")
    async def item(call: Call[None, None]) -> dict[str, str]:
        """Echo the item."""
        return {"item": call.path["item"]}

    app = web.Application()
    routed = add_routes(app, [routes], lambda **_: lambda _request: None)

    class SmallMemory(EndpointDispatch):
        REMEMBERED = 2

    return app, SmallMemory(app.router, routed.direct)


async def test_dispatch_finds_what_the_router_finds_and_remembers_only_so_many() -> None:
    app, dispatch = _routed_app()
    app.freeze()
    for name in ("a", "b", "c%20d", "e"):
        request = make_mocked_request("GET", f"/api/v1/items/{name}", app=app)
        found = await dispatch.find(request)
        assert found is not None and found[1] == {"item": name.replace("%20", " ")}
    remembered = [make_mocked_request("GET", f"/api/v1/items/{name}", app=app) for name in ("a", "b", "e")]
    assert [dispatch.remembered(r) is not None for r in remembered] == [True, True, False]
    assert await dispatch.find(make_mocked_request("GET", "/api/v1/nothing", app=app)) is None
    assert await dispatch.find(make_mocked_request("POST", "/api/v1/items/a", app=app)) is None
