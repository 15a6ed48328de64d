"""A client older than the service it talks to: fields and event names added later do not break a script.

The "newer service" is a loopback server that answers with the real paper service's answers plus what a
later version might add: a field on each record, an event name this client does not know.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ftdesk.client import AsyncClient
from ftdesk.domain.accounts import Position
from ftdesk.domain.event_names import EventName


async def _real(service: Any, path: str) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {service.api_key}"}) as http,
        http.get(f"{service.base_url}{path}") as response,
    ):
        body: dict[str, Any] = await response.json()
        return body


@pytest.fixture
async def newer_service(start_service: Callable[..., Awaitable[Any]], aiohttp_server: Any) -> tuple[str, str]:
    service = await start_service()
    async with (
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {service.api_key}"}) as http,
        http.post(
            f"{service.base_url}/api/v1/auth/login", json={"username": "trader", "password": "paper-pass"}
        ) as response,
    ):
        assert response.status == 200
    accounts = (await _real(service, "/api/v1/accounts"))["data"]
    acct = accounts[0]["acct_num"]
    positions = await _real(service, f"/api/v1/accounts/{acct}/positions")
    for record in positions["data"]:
        record["added_in_a_later_version"] = {"anything": 1}

    async def positions_handler(request: web.Request) -> web.Response:
        return web.json_response(positions)

    async def events_handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        event = {
            "event_type": "MARGIN_CALL_ISSUED",
            "category": "other",
            "desc": {"upstream_code": "MCALL"},
            "time": "2026-11-25T14:30:00+00:00",
            "source": "beps",
            "added_in_a_later_version": True,
        }
        await response.write(f"id: 1\nevent: account\ndata: {json.dumps(event)}\n\n".encode())
        return response

    app = web.Application()
    app.router.add_get(f"/api/v1/accounts/{acct}/positions", positions_handler)
    app.router.add_get("/api/v1/streaming/events", events_handler)
    server = await aiohttp_server(app)
    return str(server.make_url("")), acct


async def test_a_field_added_by_a_newer_service_is_ignored(newer_service: tuple[str, str]) -> None:
    base_url, acct = newer_service
    async with AsyncClient(base_url, "k" * 32) as api:
        positions = await api.get_positions(acct)
    assert positions and all(isinstance(p, Position) for p in positions)


async def test_an_event_name_newer_than_the_client_arrives_as_other_with_its_name(
    newer_service: tuple[str, str],
) -> None:
    base_url, _ = newer_service
    async with AsyncClient(base_url, "k" * 32) as api:
        stream = api.stream_events()
        frame = await anext(stream)
        await stream.aclose()
    assert frame.id == 1
    assert frame.event.event_type is EventName.OTHER
    assert frame.event.desc["event_name"] == "MARGIN_CALL_ISSUED"
    assert frame.event.desc["upstream_code"] == "MCALL"
