"""MDDS, Fidelity's market-data WebSocket, as a ``QuoteFeed`` (docs/fidelity-protocol.md, MDDS).

One ``MddsConnection`` is one socket: the server greets with a ``SessionId`` that every command echoes;
``subscribe`` carries at most 50 comma-separated symbols; answers are ``ResponseType`` "1" (snapshot),
"0" (update: merge the fields into the symbol's state) and "-1" (error; ``ErrorCode`` 18 = unknown symbol).
Field ids follow the decompiled app's map where it disagrees with the SDK's (the SDK's names come from
fewer, market-closed captures).

Unsubscribe uses the app's form, by the ``Request`` id the server gave the subscribe, because the
symbol form is said to fail silently. A request covers a whole subscribe message, so dropping part of one
cancels the request and subscribes the rest again.

Order books: a held ``book_key`` is subscribed with ``subscribe_virtualbook`` (one symbol per command,
``IncludeArcaOnly`` true as the app sends it; its effect is unknown). Items come back as ``<SYMBOL>.VB``: a
snapshot, then updates holding only the changed levels, merged like quotes; level *i* (0-24) of the bids is
price 462+i, venue 487+i, size 512+i, time 891+i, of the asks 537+i, 562+i, 587+i, 916+i. A level without a
positive price is left out (how MDDS clears a level is not captured). Unsubscribe is by the ``Request`` id,
as for quotes; before one is known, by ``unsubscribe_virtualbook`` with the symbol (the SDK's uncaptured guess).
The app keeps one connection per book; ftdesk carries books on its one connection (untested upstream: a
refusal would show as that book's error). Reconnects, backoff, refcounts and the watchdog belong
to the streaming hub; this module only speaks the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from ftdesk.brokers.base import QuoteFeedMessage, SymbolError, book_key, book_symbol
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import AuthRequired, BrokerError, SessionExpired
from ftdesk.domain.market import BookLevel, Greeks, OrderBook, Quote

log = logging.getLogger(__name__)

MDDS_URL = "wss://mdds-i-tc.fidelity.com/?productid=atn"
MAX_SYMBOLS_PER_SUBSCRIBE = 50
UNKNOWN_SYMBOL_ERROR = "18"
GREEKS_SUFFIX = ".GK"
BOOK_SUFFIX = ".VB"

# Field ids (decimal strings on the wire), named as the decompiled map names them.
FID_STATUS = "0"
FID_SYMBOL = "6"
FID_DISPLAY_SYMBOL = "289"
FID_NET_CHANGE = "12"
FID_NET_CHANGE_PCT = "13"
FID_ASK = "18"
FID_ASK_SIZE = "19"
FID_BID = "20"
FID_BID_SIZE = "21"
FID_HIGH = "26"
FID_LOW = "27"
FID_TRADE_SIZE = "28"
FID_LAST = "29"
FID_OPEN = "31"
FID_PREV_CLOSE = "32"
FID_VOLUME = "33"
FID_CLOSE = "124"
FID_DAY_VOLUME = "166"
FID_DELTA = "187"
FID_GAMMA = "188"
FID_VEGA = "189"
FID_THETA = "190"
FID_RHO = "191"
FID_IV_MID = "196"
FID_IRREGULAR_LAST = "1162"
FID_IRREGULAR_SIZE = "1165"

BOOK_LEVELS = 25
VB_BID = (462, 487, 512, 891)  # first field id of the bid levels' price, venue, size, time
VB_ASK = (537, 562, 587, 916)

_OPTION = re.compile(r"^-?[A-Z][A-Z0-9]{0,5}\d{6}[CP]\d+(\.\d+)?$")


def to_wire_symbol(symbol: str) -> str:
    """Return the MDDS form of a symbol: options carry a leading dash, everything else is unchanged."""
    if _OPTION.match(symbol) and not symbol.startswith("-"):
        return f"-{symbol}"
    return symbol


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


@dataclass
class _SymbolState:
    """Everything MDDS said about one symbol so far (updates are merged into it)."""

    requested: str  # the symbol as the hub asked for it
    fields: dict[str, str] = field(default_factory=dict)
    greeks: dict[str, str] = field(default_factory=dict)

    def quote(self, time: str) -> Quote | None:
        """Return the symbol's quote, or None while MDDS has not sent a price yet."""
        values = self.fields
        bid = _number(values.get(FID_BID))
        ask = _number(values.get(FID_ASK))
        # 29 is the regular-session last trade; 124 (close) equals it after the close; 1162 is the
        # extended-session trade.
        last = _number(values.get(FID_LAST))
        if last is None:
            last = _number(values.get(FID_CLOSE))
        if last is None:
            last = _number(values.get(FID_IRREGULAR_LAST))
        if last is None and bid is None and ask is None:
            return None
        if last is None:
            last = ((bid or 0.0) + (ask or 0.0)) / (2 if bid is not None and ask is not None else 1)
        volume = _count(values.get(FID_VOLUME))
        if volume is None:
            volume = _count(values.get(FID_DAY_VOLUME))
        last_size = _count(values.get(FID_TRADE_SIZE))
        if last_size is None:
            last_size = _count(values.get(FID_IRREGULAR_SIZE))
        return Quote(
            symbol=self.requested,
            last=last,
            # An index has no bid or ask on MDDS; 0 says "none" in a record whose fields are required.
            bid=bid if bid is not None else 0.0,
            ask=ask if ask is not None else 0.0,
            bid_size=_count(values.get(FID_BID_SIZE)) or 0,
            ask_size=_count(values.get(FID_ASK_SIZE)) or 0,
            last_size=last_size or 0,
            volume=volume or 0,
            open=_number(values.get(FID_OPEN)),
            high=_number(values.get(FID_HIGH)),
            low=_number(values.get(FID_LOW)),
            prev_close=_number(values.get(FID_PREV_CLOSE)),
            change=_number(values.get(FID_NET_CHANGE)),
            change_pct=_number(values.get(FID_NET_CHANGE_PCT)),
            time=time,
            greeks=self._greeks(),
        )

    def _greeks(self) -> Greeks | None:
        values = self.greeks
        delta = _number(values.get(FID_DELTA))
        if delta is None:
            return None
        return Greeks(
            delta=delta,
            gamma=_number(values.get(FID_GAMMA)) or 0.0,
            theta=_number(values.get(FID_THETA)) or 0.0,
            vega=_number(values.get(FID_VEGA)) or 0.0,
            rho=_number(values.get(FID_RHO)) or 0.0,
            implied_volatility=_number(values.get(FID_IV_MID)) or 0.0,
        )


@dataclass
class _BookState:
    """Everything MDDS said about one symbol's virtual book so far."""

    requested: str  # the symbol as the hub asked for its book
    fields: dict[str, str] = field(default_factory=dict)
    request: str | None = None

    def book(self, time: str) -> OrderBook:
        """Return the merged book, best level first on each side."""
        return OrderBook(
            symbol=self.requested,
            bids=self._side(*VB_BID),
            asks=self._side(*VB_ASK),
            time=time,
        )

    def _side(self, price_fid: int, venue_fid: int, size_fid: int, time_fid: int) -> list[BookLevel]:
        values = self.fields
        levels: list[BookLevel] = []
        for level in range(BOOK_LEVELS):
            price = _number(values.get(str(price_fid + level)))
            if price is None or price <= 0:
                continue
            levels.append(
                BookLevel(
                    price=price,
                    size=_count(values.get(str(size_fid + level))) or 0,
                    venue=values.get(str(venue_fid + level)) or None,
                    time=values.get(str(time_fid + level)) or None,
                )
            )
        return levels


class MddsConnection:
    """One open MDDS socket (see the module docstring)."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        ws: aiohttp.ClientWebSocketResponse,
        session_id: str,
        clock: Clock,
        conflation_rate_ms: int,
    ) -> None:
        self.session_id = session_id
        self._http = http
        self._ws = ws
        self._clock = clock
        self._conflation_rate_ms = conflation_rate_ms
        self._states: dict[str, _SymbolState] = {}  # wire symbol -> state, for every symbol we want
        # wire symbol -> the Request ids carrying it (more than one after a watchdog probe re-subscribed it)
        self._requests_of: dict[str, set[str]] = {}
        self._members: dict[str, set[str]] = {}  # Request id -> the wanted wire symbols it carries
        self._books: dict[str, _BookState] = {}  # wire symbol -> its virtual book, for every book we want
        self._closed = False

    async def subscribe(self, symbols: Sequence[str]) -> None:
        """Send one subscribe command for these symbols (at most 50)."""
        if len(symbols) > MAX_SYMBOLS_PER_SUBSCRIBE:
            raise ValueError(f"MDDS takes at most {MAX_SYMBOLS_PER_SUBSCRIBE} symbols per subscribe")
        wires: list[str] = []
        for symbol in symbols:
            booked = book_symbol(symbol)
            if booked is not None:
                await self._subscribe_book(booked)
                continue
            wire = to_wire_symbol(symbol)
            self._states.setdefault(wire, _SymbolState(symbol))
            wires.append(wire)
        if wires:
            await self._send_subscribe(wires)

    async def unsubscribe(self, symbols: Sequence[str]) -> None:
        """Stop these symbols: cancel their requests and subscribe again what those requests also carried."""
        by_request: dict[str, set[str]] = {}
        unanswered: list[str] = []
        for symbol in symbols:
            booked = book_symbol(symbol)
            if booked is not None:
                await self._unsubscribe_book(booked)
                continue
            wire = to_wire_symbol(symbol)
            if self._states.pop(wire, None) is None:
                continue
            requests = self._requests_of.pop(wire, set())
            if not requests:
                unanswered.append(wire)
            for request in requests:
                by_request.setdefault(request, set()).add(wire)
        survivors: set[str] = set()
        for request, gone in by_request.items():
            await self._send({"Command": "unsubscribe", "Request": request})
            survivors |= self._members.pop(request, set()) - gone
        for wire in survivors:
            # Cancelling a request cancelled these too: drop their other requests and subscribe them afresh.
            for request in self._requests_of.pop(wire, set()):
                if request not in by_request:
                    await self._send({"Command": "unsubscribe", "Request": request})
                    self._members.pop(request, None)
        ordered = sorted(survivors)
        for start in range(0, len(ordered), MAX_SYMBOLS_PER_SUBSCRIBE):
            await self._send_subscribe(ordered[start : start + MAX_SYMBOLS_PER_SUBSCRIBE])
        if unanswered:
            # No answer (hence no Request id) yet: the symbol form is the only handle there is.
            await self._send({"Command": "unsubscribe", "Symbol": ",".join(unanswered)})

    async def messages(self) -> AsyncIterator[QuoteFeedMessage]:
        """Yield quotes and per-symbol errors until the socket closes."""
        async for frame in self._ws:
            if frame.type is aiohttp.WSMsgType.TEXT:
                for message in self._parse(frame.data):
                    yield message
            elif frame.type is aiohttp.WSMsgType.ERROR:
                raise BrokerError(f"MDDS connection error: {self._ws.exception()}")

    async def close(self) -> None:
        """Close the socket; idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self._ws.close()
        await self._http.close()

    async def _subscribe_book(self, symbol: str) -> None:
        wire = to_wire_symbol(symbol)
        self._books[wire] = _BookState(symbol)
        command = {
            "Command": "subscribe_virtualbook",
            "Symbol": wire,
            "ConflationRate": self._conflation_rate_ms,
            "IncludeArcaOnly": True,
        }
        await self._send(command)

    async def _unsubscribe_book(self, symbol: str) -> None:
        state = self._books.pop(to_wire_symbol(symbol), None)
        if state is None:
            return
        if state.request is not None:
            await self._send({"Command": "unsubscribe", "Request": state.request})
        else:
            await self._send({"Command": "unsubscribe_virtualbook", "Symbol": to_wire_symbol(symbol)})

    def _book_item(
        self, wire: str, item: dict[str, Any], response_type: str, request: object, error_code: object, now: str
    ) -> QuoteFeedMessage | None:
        state = self._books.get(wire)
        if state is None:
            return None  # a late frame for a book already unsubscribed
        if isinstance(request, str) and request:
            state.request = request
        if response_type == "-1":
            del self._books[wire]
            text = str(item.get(FID_STATUS) or "error")
            code = f" (MDDS error {error_code})" if error_code else ""
            return SymbolError(book_key(state.requested), f"{text}{code}")
        state.fields.update({str(k): str(v) for k, v in item.items() if v is not None})
        return state.book(now)

    # --- wire -----------------------------------------------------------------------------------

    async def _send_subscribe(self, wires: Sequence[str]) -> None:
        command: dict[str, Any] = {
            "Command": "subscribe",
            "Symbol": ",".join(wires),
            "ConflationRate": self._conflation_rate_ms,
        }
        # Always in the command, as captured: true when the batch holds options (the app's rule), else false.
        command["IncludeGreeks"] = any(wire.startswith("-") for wire in wires)
        await self._send(command)

    async def _send(self, command: dict[str, Any]) -> None:
        await self._ws.send_str(json.dumps({"SessionId": self.session_id, **command}, separators=(",", ":")))

    def _parse(self, text: str) -> list[QuoteFeedMessage]:
        try:
            envelope = json.loads(text)
        except ValueError:
            log.warning("MDDS sent a frame that is not JSON; ignored")
            return []
        if not isinstance(envelope, dict):
            return []
        response_type = str(envelope.get("ResponseType", ""))
        items = envelope.get("Data")
        if response_type not in ("1", "0", "-1") or not isinstance(items, list):
            return []  # greetings, acknowledgements and unknown types carry no quotes
        request = envelope.get("Request")
        now = self._clock.now().isoformat()
        out: list[QuoteFeedMessage] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            message = self._item(item, response_type, request, envelope.get("ErrorCode"), now)
            if message is not None:
                out.append(message)
        return out

    def _item(
        self, item: dict[str, Any], response_type: str, request: object, error_code: object, now: str
    ) -> QuoteFeedMessage | None:
        wire = str(item.get(FID_SYMBOL) or item.get(FID_DISPLAY_SYMBOL) or "")
        if wire.endswith(BOOK_SUFFIX):
            return self._book_item(wire[: -len(BOOK_SUFFIX)], item, response_type, request, error_code, now)
        greeks = wire.endswith(GREEKS_SUFFIX)
        if greeks:
            wire = wire[: -len(GREEKS_SUFFIX)]
        state = self._states.get(wire)
        if state is None:
            return None  # a late frame for a symbol already unsubscribed
        if isinstance(request, str) and request:
            self._requests_of.setdefault(wire, set()).add(request)
            self._members.setdefault(request, set()).add(wire)
        if response_type == "-1":
            del self._states[wire]
            self._forget_request(wire)
            text = str(item.get(FID_STATUS) or "error")
            code = f" (MDDS error {error_code})" if error_code else ""
            return SymbolError(state.requested, f"{text}{code}")
        values = {str(k): str(v) for k, v in item.items() if v is not None}
        (state.greeks if greeks else state.fields).update(values)
        return state.quote(now)

    def _forget_request(self, wire: str) -> None:
        for request in self._requests_of.pop(wire, set()):
            members = self._members.get(request)
            if members is not None:
                members.discard(wire)


class MddsQuoteFeed:
    """Opens MDDS connections with the login session's cookies."""

    max_symbols_per_message = MAX_SYMBOLS_PER_SUBSCRIBE

    def __init__(
        self,
        *,
        cookies: Callable[[], Mapping[str, str]],
        router: UpstreamRouter,
        clock: Clock,
        url: str = MDDS_URL,
        conflation_rate_ms: int = 250,
        connect_timeout: float = 10.0,
        heartbeat: float = 20.0,
        snapshot_timeout: float = 5.0,
    ) -> None:
        self._cookies = cookies
        self._router = router
        self._clock = clock
        self._url = url
        self._conflation_rate_ms = conflation_rate_ms
        self._connect_timeout = connect_timeout
        self._heartbeat = heartbeat
        self._snapshot_timeout = snapshot_timeout

    async def connect(self) -> MddsConnection:
        """Open a socket, read the greeting and return the connection."""
        cookies = self._cookies()
        if not cookies:
            raise AuthRequired("Market data needs a brokerage session: log in first")
        # The Cookie header is sent as is: the jar would not match .fidelity.com cookies to a routed host.
        headers = {"Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items())}
        http = aiohttp.ClientSession(
            connector=self._router.connector(),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout),
        )
        try:
            ws = await asyncio.wait_for(
                http.ws_connect(self._router.url(self._url), headers=headers, heartbeat=self._heartbeat),
                self._connect_timeout,
            )
            session_id = await self._greeting(ws)
        except BaseException as exc:
            await http.close()
            if isinstance(exc, aiohttp.WSServerHandshakeError) and exc.status in (401, 403):
                raise SessionExpired(f"MDDS refused the session (HTTP {exc.status}); log in again") from None
            if isinstance(exc, aiohttp.WSServerHandshakeError):
                raise BrokerError(f"MDDS refused the connection (HTTP {exc.status})") from None
            if isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
                raise BrokerError(f"Cannot reach MDDS: {type(exc).__name__}: {exc}") from None
            raise
        return MddsConnection(http, ws, session_id, self._clock, self._conflation_rate_ms)

    async def snapshot(self, symbols: Sequence[str]) -> list[Quote]:
        """Return the current quote of each known symbol through a short-lived connection."""
        wanted = list(dict.fromkeys(symbols))
        if not wanted:
            return []
        connection = await self.connect()
        answered: dict[str, Quote | None] = {}
        try:
            for start in range(0, len(wanted), MAX_SYMBOLS_PER_SUBSCRIBE):
                await connection.subscribe(wanted[start : start + MAX_SYMBOLS_PER_SUBSCRIBE])
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._snapshot_timeout):
                    async for message in connection.messages():
                        answered[message.symbol] = message if isinstance(message, Quote) else None
                        if len(answered) >= len(wanted):
                            break
        finally:
            await connection.close()
        return [quote for symbol in wanted if (quote := answered.get(symbol)) is not None]

    async def _greeting(self, ws: aiohttp.ClientWebSocketResponse) -> str:
        frame = await ws.receive(timeout=self._connect_timeout)
        if frame.type is not aiohttp.WSMsgType.TEXT:
            raise BrokerError("MDDS closed the connection before its greeting")
        try:
            greeting = json.loads(frame.data)
        except ValueError:
            raise BrokerError("MDDS sent a greeting that is not JSON") from None
        session_id = greeting.get("SessionId") if isinstance(greeting, dict) else None
        # The SDK checks Status == "Ok", the app only that SessionId and ProductId are there: accept either.
        if not isinstance(session_id, str) or not session_id:
            raise BrokerError(f"MDDS greeting without a SessionId: {str(frame.data)[:200]}")
        status = str(greeting.get("Status", "Ok"))
        product = greeting.get("productid") or greeting.get("ProductId")
        if status.lower() != "ok" and not product:
            raise BrokerError(f"MDDS refused the session: {greeting.get('Message') or status}")
        return session_id
