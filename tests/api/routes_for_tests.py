"""Endpoints that exist only in tests: a body to validate, a query with lists, a crash and a WebSocket."""

from __future__ import annotations

from typing import Literal

from aiohttp import web
from pydantic import BaseModel, Field

from ftdesk.service.context import CONTEXT
from ftdesk.service.web.routing import BodyModel, Call, QueryModel, RouteTable

routes = RouteTable(tag="testing")


class EchoBody(BodyModel):
    """A body with the kinds of constraints order requests have."""

    name: str = Field(min_length=1)
    qty: float = Field(gt=0)
    side: Literal["B", "S"]


class ItemsQuery(QueryModel):
    """A query with a list parameter and a bounded integer."""

    symbols: list[str] = Field(min_length=1)
    limit: int = Field(default=10, ge=1, le=500)


class Echo(BaseModel):
    """What the echo endpoint returns."""

    name: str
    qty: float
    side: str


@routes.post("/_test/echo", summary="Echo a validated body", body=EchoBody, response=Echo)
async def echo(call: Call[EchoBody, None]) -> Echo:
    """Return the body."""
    return Echo(**call.body.model_dump())


@routes.get("/_test/items", summary="Echo a validated query", query=ItemsQuery, response=ItemsQuery)
async def items(call: Call[None, ItemsQuery]) -> ItemsQuery:
    """Return the query."""
    return call.query


@routes.get("/_test/boom", summary="Fail unexpectedly", response=None)
async def boom(call: Call[None, None]) -> None:
    """Raise an exception whose text must never reach the client."""
    raise RuntimeError("database password is hunter2 at /secret/path")


@routes.get("/_test/ws", summary="Echo WebSocket", kind="websocket", query_api_key=True)
async def websocket(call: Call[None, None]) -> web.WebSocketResponse:
    """Echo text frames."""
    ws = web.WebSocketResponse()
    await ws.prepare(call.request)
    with call.app[CONTEXT].streams.track(ws):
        async for message in ws:
            await ws.send_str(message.data)
    return ws
