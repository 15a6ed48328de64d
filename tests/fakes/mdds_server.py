"""A fake MDDS server on a real loopback socket, speaking MDDS (docs/fidelity-protocol.md, MDDS).

It checks the session cookie on upgrade, greets with a fresh ``SessionId``, answers ``subscribe`` with one
``ResponseType "1"`` snapshot per known symbol (plus a ``.GK`` Greeks item for options when asked) and
``"-1"``/``ErrorCode "18"`` for unknown ones, all under one 8-hex ``Request`` id per command, and accepts
``unsubscribe`` by ``Request`` or by ``Symbol``. ``subscribe_virtualbook`` (one symbol) answers a snapshot
item ``<SYMBOL>.VB`` with 25 levels a side on the 462-940 field ranges (``"-1"``/``18`` for an unknown symbol),
under its own ``Request``; ``publish_book()`` sends updates of the changed levels only, and both ``unsubscribe``
by that ``Request`` and ``unsubscribe_virtualbook`` by ``Symbol`` (the SDK's uncaptured guess) end it.
Tests push updates with ``publish()``, break the
connection with ``kill()``, refuse upgrades with ``refuse()`` and mute it with ``silent``; they observe
what each connection carries through ``sessions``.

Served both at ``/`` and at ``/mdds-i-tc.fidelity.com/`` so it also works behind the upstream router.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

MDDS_HOST_PATH = "/mdds-i-tc.fidelity.com/"

# The captured RKLB snapshot, field for field.
RKLB_SNAPSHOT = {
    "0": "success",
    "1": "Rocket Lab",
    "6": "RKLB",
    "10": "RKLB",
    "12": "-3.55",
    "13": "-5.8264",
    "14": "99.58",
    "16": "14.71",
    "18": "56.73",
    "19": "200",
    "20": "56.6",
    "21": "100",
    "23": "2969239",
    "24": "2026-03-30",
    "25": "USD",
    "26": "61.64",
    "27": "56.132",
    "29": "57.38",
    "31": "61.45",
    "32": "60.93",
    "33": "21933537",
    "57": "34694009211.24",
    "80": "ROCKET LAB CORP COM",
    "100": "ARCX",
    "124": "57.38",
    "127": "Industrials",
    "128": "EQ",
    "129": "569407668",
    "166": "23730952",
    "169": "realtime",
}


def snapshot_fields(wire: str) -> dict[str, str]:
    """Return a plausible, deterministic snapshot item for a symbol (the captured one for RKLB)."""
    if wire == "RKLB":
        return dict(RKLB_SNAPSHOT)
    seed = int.from_bytes(hashlib.sha256(wire.encode()).digest()[:4], "big")
    last = 20 + seed % 40000 / 100
    prev = round(last * 1.01, 2)
    return {
        "0": "success",
        "1": wire,
        "6": wire,
        "18": f"{last + 0.02:.2f}",
        "19": "300",
        "20": f"{last - 0.02:.2f}",
        "21": "200",
        "26": f"{last * 1.02:.2f}",
        "27": f"{last * 0.98:.2f}",
        "29": f"{last:.2f}",
        "31": f"{prev:.2f}",
        "32": f"{prev:.2f}",
        "12": f"{last - prev:.2f}",
        "13": f"{(last - prev) / prev * 100:.4f}",
        "33": str(1_000_000 + seed % 1000),
        "128": "OP" if wire.startswith("-") else "EQ",
        "169": "realtime",
    }


BOOK_LEVELS = 25
BID_PRICE, BID_VENUE, BID_SIZE, BID_TIME = 462, 487, 512, 891
ASK_PRICE, ASK_VENUE, ASK_SIZE, ASK_TIME = 537, 562, 587, 916
VENUES = ("XNYS", "XNMS", "ARCX", "BATS")


def book_fields(wire: str) -> dict[str, str]:
    """Return a virtual-book snapshot item (``<wire>.VB``): 25 levels a side around the symbol's quote."""
    quote = snapshot_fields(wire)
    bid, ask = float(quote["20"]), float(quote["18"])
    item = {"0": "success", "6": f"{wire}.VB"}
    for level in range(BOOK_LEVELS):
        venue = VENUES[level % len(VENUES)]
        stamp = f"15:00:{level:02d}.000"
        item[str(BID_PRICE + level)] = f"{bid - level * 0.01:.4f}"
        item[str(BID_VENUE + level)] = venue
        item[str(BID_SIZE + level)] = str(100 * (level + 1))
        item[str(BID_TIME + level)] = stamp
        item[str(ASK_PRICE + level)] = f"{ask + level * 0.01:.4f}"
        item[str(ASK_VENUE + level)] = venue
        item[str(ASK_SIZE + level)] = str(100 * (level + 2))
        item[str(ASK_TIME + level)] = stamp
    return item


def greeks_fields(wire: str) -> dict[str, str]:
    """Return a Greeks item for an option (symbol with the ``.GK`` suffix)."""
    return {
        "0": "success",
        "6": f"{wire}.GK",
        "128": "OP",
        "187": "0.0863",
        "188": "0.12568",
        "189": "0.00236",
        "190": "-0.00033",
        "191": "0.00083",
        "195": "1.55945",
        "196": "1.25337",
        "290": "0.8291",
    }


@dataclass
class FakeMddsSession:
    """One accepted connection: what it was told and what it carries."""

    session_id: str
    ws: web.WebSocketResponse
    requests: dict[str, list[str]] = field(default_factory=dict)  # Request id -> wire symbols
    books: dict[str, str] = field(default_factory=dict)  # Request id -> wire symbol of a virtual book
    commands: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False

    @property
    def subscribed(self) -> set[str]:
        """Return the wire symbols this connection carries now."""
        return {symbol for symbols in self.requests.values() for symbol in symbols}

    @property
    def books_subscribed(self) -> set[str]:
        """Return the wire symbols whose virtual book this connection carries now."""
        return set(self.books.values())

    def commands_named(self, name: str) -> list[dict[str, Any]]:
        """Return the commands with this ``Command`` value, in arrival order."""
        return [command for command in self.commands if command.get("Command") == name]


class FakeMdds:
    """The fake server (see the module docstring)."""

    def __init__(
        self,
        *,
        cookie: tuple[str, str] = ("ATC", "session-token"),
        unknown: Iterable[str] = (),
    ) -> None:
        self.cookie = cookie
        self.unknown = set(unknown)
        self.silent = False
        self.attempts = 0
        self.sessions: list[FakeMddsSession] = []
        self._refusals: list[int] = []
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._commanded = asyncio.Event()  # set whenever a command arrives

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on a free loopback port."""
        app = web.Application()
        app.router.add_get("/", self._handle)
        app.router.add_get(MDDS_HOST_PATH, self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        """Close every connection and stop listening."""
        await self.kill()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        """Return the http base URL (for the upstream router)."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        """Return the ws URL of the data channel."""
        return f"ws://127.0.0.1:{self._port}/?productid=atn"

    # --- what tests do --------------------------------------------------------------------------

    def refuse(self, count: int, status: int = 503) -> None:
        """Answer the next ``count`` upgrades with this HTTP status instead of a WebSocket."""
        self._refusals.extend([status] * count)

    async def commanded(self, name: str, *, count: int = 1) -> None:
        """Return once ``count`` commands of this name have arrived on the current connection."""
        while self.current is None or len(self.current.commands_named(name)) < count:
            self._commanded.clear()
            await self._commanded.wait()

    async def kill(self) -> None:
        """Drop every open connection without a close handshake (like a network failure)."""
        for session in self.open_sessions():
            session.closed = True
            transport = session.ws._req.transport if session.ws._req is not None else None
            if transport is not None:
                transport.abort()

    async def publish(self, wire: str, fields: Mapping[str, str]) -> int:
        """Send an update item for a symbol to every connection carrying it; return how many got it."""
        sent = 0
        for session in self.open_sessions():
            if wire in session.subscribed and not self.silent:
                item = {"6": wire, **fields}
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await session.ws.send_str(json.dumps({"Command": "subscribe", "ResponseType": "0", "Data": [item]}))
                    sent += 1
        return sent

    async def publish_book(self, wire: str, fields: Mapping[str, str]) -> int:
        """Send a virtual-book update (changed levels only) to every connection carrying it; return how many."""
        sent = 0
        for session in self.open_sessions():
            if wire in session.books_subscribed and not self.silent:
                item = {"6": f"{wire}.VB", **fields}
                envelope = {"Command": "subscribe_virtualbook", "ResponseType": "0", "Data": [item]}
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await session.ws.send_str(json.dumps(envelope))
                    sent += 1
        return sent

    def open_sessions(self) -> list[FakeMddsSession]:
        """Return the connections still open."""
        return [session for session in self.sessions if not session.closed]

    @property
    def current(self) -> FakeMddsSession | None:
        """Return the newest open connection, if any."""
        sessions = self.open_sessions()
        return sessions[-1] if sessions else None

    # --- protocol -------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.attempts += 1
        if self._refusals:
            return web.Response(status=self._refusals.pop(0), text="refused by the fake")
        name, value = self.cookie
        if request.cookies.get(name) != value:
            return web.Response(status=401, text="no valid session cookie")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session = FakeMddsSession(session_id=str(uuid.uuid4()), ws=ws)
        self.sessions.append(session)
        greeting = {
            "Message": "success",
            "SessionId": session.session_id,
            "Status": "Ok",
            "host": "fake.us-east-2a",
            "productid": "atn",
        }
        await ws.send_str(json.dumps(greeting))
        try:
            async for frame in ws:
                if frame.type is WSMsgType.TEXT:
                    await self._command(session, json.loads(frame.data))
        finally:
            session.closed = True
        return ws

    async def _command(self, session: FakeMddsSession, command: dict[str, Any]) -> None:
        session.commands.append(command)
        self._commanded.set()
        if command.get("SessionId") != session.session_id:
            await session.ws.send_str(json.dumps({"ResponseType": "-1", "ErrorCode": "1", "Data": []}))
        elif command.get("Command") == "subscribe":
            await self._subscribe(session, command)
        elif command.get("Command") == "subscribe_virtualbook":
            await self._subscribe_book(session, command)
        elif command.get("Command") == "unsubscribe_virtualbook":
            book = str(command.get("Symbol", ""))
            session.books = {request: wire for request, wire in session.books.items() if wire != book}
        elif command.get("Command") == "unsubscribe":
            if "Request" in command:
                session.requests.pop(str(command["Request"]), None)
                session.books.pop(str(command["Request"]), None)
            else:
                gone = set(str(command.get("Symbol", "")).split(","))
                for request, symbols in list(session.requests.items()):
                    session.requests[request] = [s for s in symbols if s not in gone]

    async def _subscribe(self, session: FakeMddsSession, command: dict[str, Any]) -> None:
        request = secrets.token_hex(4)
        wires = [s for s in str(command.get("Symbol", "")).split(",") if s]
        known = [wire for wire in wires if wire not in self.unknown]
        session.requests[request] = known
        if self.silent:
            return
        for wire in wires:
            if wire in self.unknown:
                envelope: dict[str, Any] = {
                    "Command": "subscribe",
                    "ResponseType": "-1",
                    "ErrorCode": "18",
                    "Data": [{"0": "Source not found", "6": wire}],
                }
                await self._send(session, envelope, request)
                continue
            await self._send(
                session, {"Command": "subscribe", "ResponseType": "1", "Data": [snapshot_fields(wire)]}, request
            )
            if wire.startswith("-") and command.get("IncludeGreeks"):
                # As captured: the Greeks come as their own item, keyed <option>.GK.
                greeks = {"Command": "subscribe", "ResponseType": "1", "Data": [greeks_fields(wire)]}
                await self._send(session, greeks, request)

    async def _subscribe_book(self, session: FakeMddsSession, command: dict[str, Any]) -> None:
        request = secrets.token_hex(4)
        wire = str(command.get("Symbol", ""))
        if wire in self.unknown or not wire or "," in wire:
            envelope: dict[str, Any] = {
                "Command": "subscribe_virtualbook",
                "ResponseType": "-1",
                "ErrorCode": "18",
                "Data": [{"0": "Source not found", "6": f"{wire}.VB"}],
            }
            await self._send(session, envelope, request)
            return
        session.books[request] = wire
        if not self.silent:
            envelope = {"Command": "subscribe_virtualbook", "ResponseType": "1", "Data": [book_fields(wire)]}
            await self._send(session, envelope, request)

    @staticmethod
    async def _send(session: FakeMddsSession, envelope: dict[str, Any], request: str) -> None:
        envelope.update({"Delay": "0.5ms", "Request": request})
        await session.ws.send_str(json.dumps(envelope))
