"""``AsyncClient``: the service's REST API and streams over aiohttp, answers validated into ftdesk's models."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from datetime import date
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar
from urllib.parse import quote

from ftdesk.client.answers import parse_answer
from ftdesk.client.backoff import DEFAULT_RECONNECT_DELAYS, Backoff
from ftdesk.client.discovery import find_api_key, find_base_url
from ftdesk.client.errors import envelope_data, unreachable
from ftdesk.client.models import Health, QuotesAnswer, SessionStatus
from ftdesk.domain.accounts import Account, Balance, Position, Transaction
from ftdesk.domain.market import OptionChain, OrderBook, Quote

if TYPE_CHECKING:
    import aiohttp

    from ftdesk.client import sse
    from ftdesk.client.models import EventFrame
    from ftdesk.client.orders import Confirm, MultiLegPreview, OptionPreview, Show
    from ftdesk.domain.orders import (
        CancelPreview,
        CancelResult,
        MultiLegOptionLeg,
        Order,
        OrderDetailResult,
        OrderPlacement,
        OrderPreview,
    )
    from ftdesk.domain.research import AutosuggestResult
    from ftdesk.domain.safety import HaltOutcome, HaltState, SafetyState

# aiohttp, the streams and the models of orders, safety and research answers are imported where first used: the
# blocking ``Client`` sends its one-shot requests without aiohttp, and a quote read never builds the order models.

T = TypeVar("T")
P = TypeVar("P", bound="OrderPreview")
API_PREFIX = "/api/v1"


def print_preview(preview: OrderPreview) -> None:
    """Print the preview to stdout (the default way the ``preview_and_place`` helpers show it)."""
    from ftdesk.client.orders import print_preview as print_it

    print_it(preview)


class AsyncClient:
    """The ftdesk API for asyncio code. Use ``async with AsyncClient() as api:`` (or call ``aclose()``).

    ``base_url`` defaults to the local service's (``FTSERVICE_PORT``, settings.json, else
    http://127.0.0.1:8787); ``api_key`` to the one the service keeps on this machine (``FTSERVICE_API_KEY``,
    the OS keychain, or the data dir's ``api-key`` file). Every method returns ftdesk's own models and raises a
    ``FtdeskApiError`` subclass carrying the error envelope's ``code``, ``message`` and ``details``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        reconnect_delays: Sequence[float] = DEFAULT_RECONNECT_DELAYS,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = (base_url or find_base_url()).rstrip("/")
        self._headers = dict(headers or {})  # sent with every request (ftdesk mcp: X-Ftdesk-Client)
        self._api_key = api_key or find_api_key()
        self._timeout = timeout
        self._reconnect_delays = tuple(reconnect_delays)
        self._http: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"AsyncClient(base_url={self.base_url!r})"  # never the key

    @property
    def api_key(self) -> str:
        """Return the API key this client sends."""
        return self._api_key

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections (open stream iterators end with them)."""
        if self._http is not None:
            await self._http.close()
            self._http = None

    def _session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(
                headers={**self._headers, "Authorization": f"Bearer {self._api_key}"},
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                trust_env=False,
            )
        return self._http

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request to ``/api/v1<path>`` and return the envelope's ``data``; raise on an error answer."""
        import aiohttp

        url = self.base_url + API_PREFIX + path
        try:
            async with self._session().request(method, url, params=params, json=json, headers=headers) as response:
                request_id = response.headers.get("X-Request-ID")
                try:
                    body: Any = await response.json(content_type=None)
                except ValueError:
                    body = None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise unreachable(method, url, headers, exc) from None
        return envelope_data(response.status, body, request_id)

    # --- service and session --------------------------------------------------------------------------------

    async def get_health(self) -> Health:
        """Return whether the service is up, its broker and whether live trading is on."""
        return parse_answer(Health, await self.request("GET", "/health"))

    async def login(
        self,
        username: str,
        password: str,
        *,
        totp_code: str | None = None,
        totp_secret: str | None = None,
        remember: bool = False,
    ) -> SessionStatus:
        """Log in to the brokerage (paper accepts any username and non-empty password by default)."""
        body: dict[str, Any] = {"username": username, "password": password, "remember": remember}
        if totp_code is not None:
            body["totp_code"] = totp_code
        if totp_secret is not None:
            body["totp_secret"] = totp_secret
        return parse_answer(SessionStatus, await self.request("POST", "/auth/login", json=body))

    async def logout(self) -> SessionStatus:
        """Log out of the brokerage."""
        return parse_answer(SessionStatus, await self.request("POST", "/auth/logout"))

    async def get_auth_status(self) -> SessionStatus:
        """Return the session state (``GET /auth/status``)."""
        return parse_answer(SessionStatus, await self.request("GET", "/auth/status"))

    # --- accounts ---------------------------------------------------------------------------------------------

    async def list_accounts(self) -> list[Account]:
        """List the login's accounts, the default account first."""
        return parse_answer(list[Account], await self.request("GET", "/accounts"))

    async def get_account(self, acct: str) -> Account:
        """Return one account."""
        return parse_answer(Account, await self.request("GET", f"/accounts/{acct}"))

    async def get_positions(self, acct: str) -> list[Position]:
        """List the account's positions."""
        return parse_answer(list[Position], await self.request("GET", f"/accounts/{acct}/positions"))

    async def get_balances(self, acct: str) -> Balance:
        """Return the account's cash, market values and buying power."""
        return parse_answer(Balance, await self.request("GET", f"/accounts/{acct}/balances"))

    async def get_transactions(
        self, acct: str, start_date: date | None = None, end_date: date | None = None
    ) -> list[Transaction]:
        """List the account's transactions between two dates (inclusive), newest first."""
        params = {k: v.isoformat() for k, v in (("start_date", start_date), ("end_date", end_date)) if v}
        return parse_answer(
            list[Transaction], await self.request("GET", f"/accounts/{acct}/transactions", params=params)
        )

    # --- orders -----------------------------------------------------------------------------------------------

    async def get_order_status(self, acct: str | None = None) -> list[Order]:
        """List working and recent orders, newest first, of one account or all."""
        params = {"acct": acct} if acct else None
        from ftdesk.domain.orders import Order

        return parse_answer(list[Order], await self.request("GET", "/orders/status", params=params))

    async def get_order_detail(self, conf_num: str, acct: str | None = None) -> OrderDetailResult:
        """Return one order's detail (and its conditional relatives)."""
        params = {"acct": acct} if acct else None
        from ftdesk.domain.orders import OrderDetailResult

        return parse_answer(OrderDetailResult, await self.request("GET", f"/orders/{conf_num}/detail", params=params))

    async def preview_equity_order(
        self,
        acct: str,
        symbol: str,
        action: str,
        qty: float,
        price_type: str = "M",
        *,
        limit_price: float | None = None,
        stop_price: float | None = None,
        tif: str = "D",
    ) -> OrderPreview:
        """Preview an equity order (B buy, S sell, SS sell short, BC buy to cover); nothing is sent."""
        from ftdesk.client.orders import equity_body

        body = equity_body(acct, symbol, action, qty, price_type, limit_price, stop_price, tif)
        from ftdesk.domain.orders import OrderPreview

        return parse_answer(OrderPreview, await self.request("POST", "/orders/equity/preview", json=body))

    async def place_equity_order(
        self,
        acct: str,
        symbol: str,
        action: str,
        qty: float,
        price_type: str = "M",
        *,
        conf_num: str,
        limit_price: float | None = None,
        stop_price: float | None = None,
        tif: str = "D",
        idempotency_key: str | None = None,
    ) -> OrderPlacement:
        """Place a previewed equity order: the preview's fields, unchanged, and its ``conf_num``."""
        from ftdesk.client.orders import equity_body

        body = equity_body(acct, symbol, action, qty, price_type, limit_price, stop_price, tif, conf_num=conf_num)
        return await self._place("/orders/equity/place", body, idempotency_key)

    async def preview_option_order(
        self,
        acct: str,
        symbol: str,
        action: str,
        qty: int,
        price_type: str = "M",
        *,
        limit_price: float | None = None,
        stop_price: float | None = None,
        tif: str = "D",
        position_intent: str | None = None,
    ) -> OptionPreview:
        """Preview a single-leg option order (BC buy call, SC sell call, BP buy put, SP sell put)."""
        from ftdesk.client.orders import option_body

        body = option_body(acct, symbol, action, qty, price_type, limit_price, stop_price, tif, position_intent)
        from ftdesk.client.orders import OptionPreview

        return parse_answer(OptionPreview, await self.request("POST", "/orders/option/preview", json=body))

    async def place_option_order(
        self,
        acct: str,
        symbol: str,
        action: str,
        qty: int,
        price_type: str = "M",
        *,
        conf_num: str,
        limit_price: float | None = None,
        stop_price: float | None = None,
        tif: str = "D",
        position_intent: str | None = None,
        idempotency_key: str | None = None,
    ) -> OrderPlacement:
        """Place a previewed single-leg option order with the preview's ``conf_num``."""
        from ftdesk.client.orders import option_body

        body = option_body(
            acct, symbol, action, qty, price_type, limit_price, stop_price, tif, position_intent, conf_num=conf_num
        )
        return await self._place("/orders/option/place", body, idempotency_key)

    async def preview_multileg_order(
        self,
        acct: str,
        underlying: str,
        legs: Sequence[MultiLegOptionLeg],
        price_type: str = "L",
        *,
        net_price: float | None = None,
        debit_credit: str | None = None,
        tif: str = "D",
    ) -> MultiLegPreview:
        """Preview a multi-leg option order (2 to 4 legs on one underlying); the preview lists each leg."""
        from ftdesk.client.orders import multi_leg_body

        body = multi_leg_body(acct, underlying, legs, price_type, net_price, debit_credit, tif)
        answer = await self.request("POST", "/orders/options/preview", json=body)
        # The service lists each leg as the broker understood it, and that wins; the legs sent stand in only for
        # an older service whose answer named just the underlying.
        from ftdesk.client.orders import MultiLegPreview

        return parse_answer(MultiLegPreview, {"legs": body["legs"], **answer} if isinstance(answer, dict) else answer)

    async def place_multileg_order(
        self,
        acct: str,
        underlying: str,
        legs: Sequence[MultiLegOptionLeg],
        price_type: str = "L",
        *,
        conf_num: str,
        net_price: float | None = None,
        debit_credit: str | None = None,
        tif: str = "D",
        idempotency_key: str | None = None,
    ) -> OrderPlacement:
        """Place a previewed multi-leg option order with the preview's ``conf_num``."""
        from ftdesk.client.orders import multi_leg_body

        body = multi_leg_body(acct, underlying, legs, price_type, net_price, debit_credit, tif, conf_num=conf_num)
        return await self._place("/orders/options/place", body, idempotency_key)

    async def _place(self, path: str, body: dict[str, Any], idempotency_key: str | None) -> OrderPlacement:
        # A fresh Idempotency-Key per place: a retry by the caller with the same key never places twice.
        headers = {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}
        from ftdesk.domain.orders import OrderPlacement

        return parse_answer(OrderPlacement, await self.request("POST", path, json=body, headers=headers))

    async def preview_cancel_order(self, conf_num: str, acct: str, action_code: str) -> CancelPreview:
        """Say what canceling an order would do (never required before a cancel)."""
        from ftdesk.client.orders import cancel_body

        body = cancel_body(acct, action_code)
        from ftdesk.domain.orders import CancelPreview

        return parse_answer(CancelPreview, await self.request("POST", f"/orders/{conf_num}/cancel/preview", json=body))

    async def cancel_order(self, conf_num: str, acct: str, action_code: str) -> CancelResult:
        """Cancel a working order; ``action_code`` is its side (B or S) or its own action code."""
        from ftdesk.client.orders import cancel_body

        body = cancel_body(acct, action_code)
        from ftdesk.domain.orders import CancelResult

        return parse_answer(CancelResult, await self.request("POST", f"/orders/{conf_num}/cancel", json=body))

    async def preview_and_place(
        self,
        acct: str,
        symbol: str,
        action: str,
        qty: float,
        price_type: str = "M",
        *,
        limit_price: float | None = None,
        stop_price: float | None = None,
        tif: str = "D",
        confirm: Confirm,
        show: Show = print_preview,
        idempotency_key: str | None = None,
    ) -> OrderPlacement | None:
        """Preview an equity order, show the preview, and place it only if ``confirm(preview)`` says True.

        Returns None when ``confirm`` declines (nothing is placed). In dry-run mode the place raises
        ``TradingDisabledError`` (code ``LIVE_TRADING_DISABLED``).
        """
        return await self._confirm_then_place(
            self.preview_equity_order(
                acct, symbol, action, qty, price_type, limit_price=limit_price, stop_price=stop_price, tif=tif
            ),
            show,
            confirm,
            lambda conf_num: self.place_equity_order(
                acct,
                symbol,
                action,
                qty,
                price_type,
                conf_num=conf_num,
                limit_price=limit_price,
                stop_price=stop_price,
                tif=tif,
                idempotency_key=idempotency_key,
            ),
        )

    async def preview_and_place_option(
        self,
        acct: str,
        symbol: str,
        action: str,
        qty: int,
        price_type: str = "M",
        *,
        limit_price: float | None = None,
        stop_price: float | None = None,
        tif: str = "D",
        position_intent: str | None = None,
        confirm: Confirm,
        show: Show = print_preview,
        idempotency_key: str | None = None,
    ) -> OrderPlacement | None:
        """Preview a single-leg option order, show it, and place it only if ``confirm(preview)`` says True.

        Same contract as ``preview_and_place``: None when declined, ``TradingDisabledError`` in dry-run mode.
        """
        return await self._confirm_then_place(
            self.preview_option_order(
                acct,
                symbol,
                action,
                qty,
                price_type,
                limit_price=limit_price,
                stop_price=stop_price,
                tif=tif,
                position_intent=position_intent,
            ),
            show,
            confirm,
            lambda conf_num: self.place_option_order(
                acct,
                symbol,
                action,
                qty,
                price_type,
                conf_num=conf_num,
                limit_price=limit_price,
                stop_price=stop_price,
                tif=tif,
                position_intent=position_intent,
                idempotency_key=idempotency_key,
            ),
        )

    async def preview_and_place_multileg(
        self,
        acct: str,
        underlying: str,
        legs: Sequence[MultiLegOptionLeg],
        price_type: str = "L",
        *,
        net_price: float | None = None,
        debit_credit: str | None = None,
        tif: str = "D",
        confirm: Confirm,
        show: Show = print_preview,
        idempotency_key: str | None = None,
    ) -> OrderPlacement | None:
        """Preview a multi-leg option order, show it with its legs, and place it only if ``confirm`` says True.

        Same contract as ``preview_and_place``: None when declined, ``TradingDisabledError`` in dry-run mode.
        """
        return await self._confirm_then_place(
            self.preview_multileg_order(
                acct, underlying, legs, price_type, net_price=net_price, debit_credit=debit_credit, tif=tif
            ),
            show,
            confirm,
            lambda conf_num: self.place_multileg_order(
                acct,
                underlying,
                legs,
                price_type,
                conf_num=conf_num,
                net_price=net_price,
                debit_credit=debit_credit,
                tif=tif,
                idempotency_key=idempotency_key,
            ),
        )

    async def _confirm_then_place(
        self,
        preview: Awaitable[P],
        show: Show,
        confirm: Confirm,
        place: Callable[[str], Awaitable[OrderPlacement]],
    ) -> OrderPlacement | None:
        # The place is bound to this preview's conf_num (the service places nothing unpreviewed), and only an
        # explicit True places: a truthy non-bool from a sloppy confirm is a decline.
        previewed = await preview
        show(previewed)
        decision = confirm(previewed)
        if inspect.isawaitable(decision):
            decision = await decision
        if decision is not True:
            return None
        return await place(previewed.conf_num)

    # --- safety ---------------------------------------------------------------------------------------------

    async def halt(self, reason: str | None = None) -> HaltOutcome:
        """Pull the kill switch: refuse every preview and place, turn live trading off, cancel every working order."""
        body = {"reason": reason} if reason is not None else None
        from ftdesk.domain.safety import HaltOutcome

        return parse_answer(HaltOutcome, await self.request("POST", "/safety/halt", json=body))

    async def resume(self) -> HaltState:
        """Lift the kill switch (live trading stays off until the trader turns it on in the tray)."""
        from ftdesk.domain.safety import HaltState

        return parse_answer(HaltState, await self.request("POST", "/safety/resume"))

    async def get_safety(self) -> SafetyState:
        """Report the kill switch, the live switch and its last change, the risk limits and their usage."""
        from ftdesk.domain.safety import SafetyState

        return parse_answer(SafetyState, await self.request("GET", "/safety"))

    # --- market data ------------------------------------------------------------------------------------------

    async def get_quotes(self, symbols: Sequence[str]) -> QuotesAnswer:
        """Return the latest quote of each symbol without opening a stream (unknown symbols listed apart)."""
        params = {"symbols": ",".join(symbols)}
        return parse_answer(QuotesAnswer, await self.request("GET", "/market-data/quotes", params=params))

    # --- streams ----------------------------------------------------------------------------------------------

    async def get_option_chain(self, symbol: str) -> OptionChain:
        """Return every listed call and put of an underlying: expirations nearest first, strikes ascending."""
        return parse_answer(OptionChain, await self.request("GET", f"/market-data/chain/{quote(symbol, safe='')}"))

    async def search_symbols(self, text: str) -> AutosuggestResult:
        """Return symbols matching ``text`` as a symbol or name prefix, best match first."""
        from ftdesk.domain.research import AutosuggestResult

        return parse_answer(AutosuggestResult, await self.request("GET", "/research/search", params={"q": text}))

    def _backoff(self) -> Backoff:
        return Backoff(self._reconnect_delays)

    def _sse_opener(self, path: str, params: Mapping[str, str]) -> sse.Opener:
        import aiohttp

        from ftdesk.client import sse

        url = self.base_url + API_PREFIX + path
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=sse.READ_TIMEOUT)

        async def open_stream(headers: dict[str, str]) -> aiohttp.ClientResponse:
            return await self._session().get(
                url, params=params, headers={"Accept": "text/event-stream", **headers}, timeout=timeout
            )

        return open_stream

    def stream_quotes(self, symbols: Sequence[str], *, depth: bool = False) -> AsyncGenerator[Quote | OrderBook, None]:
        """Iterate over live quotes (SSE ``/streaming/quotes``) forever; reconnects by itself after a drop.

        Stop with ``break`` or ``await iterator.aclose()``. With ``depth=True`` order books come too.
        """
        from ftdesk.client import sse

        params = {"symbols": ",".join(symbols), **({"depth": "true"} if depth else {})}
        return sse.quote_frames(self._sse_opener("/streaming/quotes", params), self._backoff(), depth=depth)

    def stream_events(self, last_event_id: int | None = None) -> AsyncGenerator[EventFrame, None]:
        """Iterate over account events (SSE ``/streaming/events``) forever, resuming after a drop without gaps.

        Pass ``last_event_id`` (an earlier ``EventFrame.id``) to replay what the service still buffers after it.
        """
        from ftdesk.client import sse

        return sse.event_frames(self._sse_opener("/streaming/events", {}), self._backoff(), last_event_id)

    def ws_quotes(self, symbols: Sequence[str], *, depth: bool = False) -> AsyncGenerator[Quote | OrderBook, None]:
        """Iterate over live quotes from the WebSocket ``/api/v1/ws/quotes``; re-subscribes after a reconnect."""
        from ftdesk.client import ws

        return ws.async_ws_quotes(self.base_url, self._api_key, list(symbols), self._backoff(), depth=depth)
