"""``Client``: the blocking face of ``AsyncClient``, for scripts and notebooks.

Each call runs the async client's own method (same requests, models and errors) with its request sent by the
standard library's ``http.client`` (``ftdesk.client.oneshot``): no event loop, no thread and no aiohttp, so a
script starts fast and works where an event loop is already running in the caller's thread (Jupyter). The SSE
streams run an ``AsyncClient`` on a private event loop in a daemon thread, started when the first stream opens;
the quote WebSocket uses ``websockets.sync``.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import date
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ftdesk.client.async_client import AsyncClient, print_preview
from ftdesk.client.backoff import DEFAULT_RECONNECT_DELAYS, Backoff
from ftdesk.client.iterators import StreamIterator, WsIterator, awaited
from ftdesk.client.oneshot import OneShotClient, finish

if TYPE_CHECKING:
    import asyncio

    from ftdesk.client.models import EventFrame, Health, QuotesAnswer, SessionStatus
    from ftdesk.client.orders import MultiLegPreview, OptionPreview, Show
    from ftdesk.domain.accounts import Account, Balance, Position, Transaction
    from ftdesk.domain.market import OptionChain, OrderBook, Quote
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

T = TypeVar("T")
P = TypeVar("P", bound="OrderPreview")
SyncConfirm = Callable[["OrderPreview"], bool]


class Client:
    """The ftdesk API for plain (blocking) Python. Use ``with Client() as api:`` (or call ``close()``).

    Same arguments, methods, models and exceptions as ``AsyncClient``; see its documentation.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        reconnect_delays: Sequence[float] = DEFAULT_RECONNECT_DELAYS,
    ) -> None:
        self._async = OneShotClient(base_url, api_key, timeout=timeout, reconnect_delays=reconnect_delays)
        self.base_url = self._async.base_url
        self._timeout = timeout
        self._reconnect_delays = tuple(reconnect_delays)
        self._streams: tuple[AsyncClient, asyncio.AbstractEventLoop, threading.Thread] | None = None
        self._streams_lock = threading.Lock()
        self.closed = False

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r})"  # never the key

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the streams' connections and stop their thread (one-shot requests hold no connection)."""
        if self.closed:
            return
        if self._streams is not None:
            streamer, loop, thread = self._streams
            self._on_loop(streamer.aclose())
            self._on_loop(loop.shutdown_asyncgens())  # streams left open end here, closing their connections
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()
        self.closed = True

    def _run(self, awaitable: Awaitable[T]) -> T:
        # One of the one-shot client's coroutines: its request blocks in this thread and it ends in one step.
        if self.closed:
            if isinstance(awaitable, Coroutine):
                awaitable.close()
            raise RuntimeError("The client is closed")
        return finish(awaitable)

    def _streamer(self) -> AsyncClient:
        # The streams' async client and its loop thread, made when the first stream opens.
        with self._streams_lock:
            if self._streams is None:
                import asyncio

                streamer = AsyncClient(
                    self.base_url,
                    self._async.api_key,
                    timeout=self._timeout,
                    reconnect_delays=self._reconnect_delays,
                )
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="ftdesk-client", daemon=True)
                thread.start()
                self._streams = (streamer, loop, thread)
            return self._streams[0]

    def _on_loop(self, awaitable: Awaitable[T]) -> T:
        if self.closed or self._streams is None:
            if isinstance(awaitable, Coroutine):
                awaitable.close()
            raise RuntimeError("The client is closed")
        import asyncio

        return asyncio.run_coroutine_threadsafe(awaited(awaitable), self._streams[1]).result()

    # --- service and session --------------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request to ``/api/v1<path>`` and return the envelope's ``data``; raise on an error answer."""
        return self._run(self._async.request(method, path, **kwargs))

    def get_health(self) -> Health:
        """Return whether the service is up, its broker and whether live trading is on."""
        return self._run(self._async.get_health())

    def login(
        self,
        username: str,
        password: str,
        *,
        totp_code: str | None = None,
        totp_secret: str | None = None,
        remember: bool = False,
    ) -> SessionStatus:
        """Log in to the brokerage."""
        return self._run(
            self._async.login(username, password, totp_code=totp_code, totp_secret=totp_secret, remember=remember)
        )

    def logout(self) -> SessionStatus:
        """Log out of the brokerage."""
        return self._run(self._async.logout())

    def get_auth_status(self) -> SessionStatus:
        """Return the session state."""
        return self._run(self._async.get_auth_status())

    # --- accounts ---------------------------------------------------------------------------------------------

    def list_accounts(self) -> list[Account]:
        """List the login's accounts, the default account first."""
        return self._run(self._async.list_accounts())

    def get_account(self, acct: str) -> Account:
        """Return one account."""
        return self._run(self._async.get_account(acct))

    def get_positions(self, acct: str) -> list[Position]:
        """List the account's positions."""
        return self._run(self._async.get_positions(acct))

    def get_balances(self, acct: str) -> Balance:
        """Return the account's cash, market values and buying power."""
        return self._run(self._async.get_balances(acct))

    def get_transactions(
        self, acct: str, start_date: date | None = None, end_date: date | None = None
    ) -> list[Transaction]:
        """List the account's transactions between two dates (inclusive), newest first."""
        return self._run(self._async.get_transactions(acct, start_date, end_date))

    # --- orders -----------------------------------------------------------------------------------------------

    def get_order_status(self, acct: str | None = None) -> list[Order]:
        """List working and recent orders, newest first."""
        return self._run(self._async.get_order_status(acct))

    def get_order_detail(self, conf_num: str, acct: str | None = None) -> OrderDetailResult:
        """Return one order's detail."""
        return self._run(self._async.get_order_detail(conf_num, acct))

    def preview_equity_order(
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
        return self._run(
            self._async.preview_equity_order(
                acct, symbol, action, qty, price_type, limit_price=limit_price, stop_price=stop_price, tif=tif
            )
        )

    def place_equity_order(
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
        return self._run(
            self._async.place_equity_order(
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
            )
        )

    def preview_option_order(
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
        return self._run(
            self._async.preview_option_order(
                acct,
                symbol,
                action,
                qty,
                price_type,
                limit_price=limit_price,
                stop_price=stop_price,
                tif=tif,
                position_intent=position_intent,
            )
        )

    def place_option_order(
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
        return self._run(
            self._async.place_option_order(
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
            )
        )

    def preview_multileg_order(
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
        return self._run(
            self._async.preview_multileg_order(
                acct, underlying, legs, price_type, net_price=net_price, debit_credit=debit_credit, tif=tif
            )
        )

    def place_multileg_order(
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
        return self._run(
            self._async.place_multileg_order(
                acct,
                underlying,
                legs,
                price_type,
                conf_num=conf_num,
                net_price=net_price,
                debit_credit=debit_credit,
                tif=tif,
                idempotency_key=idempotency_key,
            )
        )

    def preview_cancel_order(self, conf_num: str, acct: str, action_code: str) -> CancelPreview:
        """Say what canceling an order would do."""
        return self._run(self._async.preview_cancel_order(conf_num, acct, action_code))

    def cancel_order(self, conf_num: str, acct: str, action_code: str) -> CancelResult:
        """Cancel a working order."""
        return self._run(self._async.cancel_order(conf_num, acct, action_code))

    def preview_and_place(
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
        confirm: SyncConfirm,
        show: Show = print_preview,
        idempotency_key: str | None = None,
    ) -> OrderPlacement | None:
        """Preview an equity order, show the preview, and place it only if ``confirm(preview)`` returns True.

        ``confirm`` runs in the caller's thread (it may prompt on the terminal). Returns None when it declines
        (nothing is placed). In dry-run mode the place raises ``TradingDisabledError`` (``LIVE_TRADING_DISABLED``).
        """
        return self._confirm_then_place(
            self._async.preview_equity_order(
                acct, symbol, action, qty, price_type, limit_price=limit_price, stop_price=stop_price, tif=tif
            ),
            show,
            confirm,
            lambda conf_num: self._async.place_equity_order(
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

    def preview_and_place_option(
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
        confirm: SyncConfirm,
        show: Show = print_preview,
        idempotency_key: str | None = None,
    ) -> OrderPlacement | None:
        """Preview a single-leg option order, show it, and place it only if ``confirm(preview)`` returns True.

        Same contract as ``preview_and_place``: None when declined, ``TradingDisabledError`` in dry-run mode.
        """
        return self._confirm_then_place(
            self._async.preview_option_order(
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
            lambda conf_num: self._async.place_option_order(
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

    def preview_and_place_multileg(
        self,
        acct: str,
        underlying: str,
        legs: Sequence[MultiLegOptionLeg],
        price_type: str = "L",
        *,
        net_price: float | None = None,
        debit_credit: str | None = None,
        tif: str = "D",
        confirm: SyncConfirm,
        show: Show = print_preview,
        idempotency_key: str | None = None,
    ) -> OrderPlacement | None:
        """Preview a multi-leg option order, show it with its legs, and place it only if ``confirm`` returns True.

        Same contract as ``preview_and_place``: None when declined, ``TradingDisabledError`` in dry-run mode.
        """
        return self._confirm_then_place(
            self._async.preview_multileg_order(
                acct, underlying, legs, price_type, net_price=net_price, debit_credit=debit_credit, tif=tif
            ),
            show,
            confirm,
            lambda conf_num: self._async.place_multileg_order(
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

    def _confirm_then_place(
        self,
        preview: Awaitable[P],
        show: Show,
        confirm: SyncConfirm,
        place: Callable[[str], Awaitable[OrderPlacement]],
    ) -> OrderPlacement | None:
        # show and confirm run in the caller's thread (a terminal prompt must); the requests on the client's loop.
        # The place is bound to this preview's conf_num, and only an explicit True places.
        previewed = self._run(preview)
        show(previewed)
        if confirm(previewed) is not True:
            return None
        return self._run(place(previewed.conf_num))

    # --- safety ---------------------------------------------------------------------------------------------

    def halt(self, reason: str | None = None) -> HaltOutcome:
        """Pull the kill switch: refuse every preview and place, turn live trading off, cancel every working order."""
        return self._run(self._async.halt(reason))

    def resume(self) -> HaltState:
        """Lift the kill switch (live trading stays off)."""
        return self._run(self._async.resume())

    def get_safety(self) -> SafetyState:
        """Report the kill switch, the live switch, the risk limits and their usage."""
        return self._run(self._async.get_safety())

    # --- market data and streams --------------------------------------------------------------------------------

    def get_quotes(self, symbols: Sequence[str]) -> QuotesAnswer:
        """Return the latest quote of each symbol without opening a stream."""
        return self._run(self._async.get_quotes(symbols))

    def get_option_chain(self, symbol: str) -> OptionChain:
        """Return every listed call and put of an underlying: expirations nearest first, strikes ascending."""
        return self._run(self._async.get_option_chain(symbol))

    def search_symbols(self, text: str) -> AutosuggestResult:
        """Return symbols matching ``text`` as a symbol or name prefix, best match first."""
        return self._run(self._async.search_symbols(text))

    def stream_quotes(self, symbols: Sequence[str], *, depth: bool = False) -> StreamIterator[Quote | OrderBook]:
        """Iterate over live quotes (SSE); reconnects by itself. Use ``with`` or ``close()`` to stop."""
        source = self._streamer().stream_quotes(symbols, depth=depth)
        return StreamIterator(self._on_loop, lambda: self.closed, source)

    def stream_events(self, last_event_id: int | None = None) -> StreamIterator[EventFrame]:
        """Iterate over account events (SSE), resuming after a drop with ``Last-Event-ID``."""
        return StreamIterator(self._on_loop, lambda: self.closed, self._streamer().stream_events(last_event_id))

    def ws_quotes(self, symbols: Sequence[str], *, depth: bool = False) -> WsIterator[Quote | OrderBook]:
        """Iterate over live quotes from the WebSocket (``websockets.sync``); re-subscribes after a reconnect."""
        from ftdesk.client import ws

        source = ws.sync_ws_quotes(
            self.base_url, self._async.api_key, list(symbols), Backoff(self._reconnect_delays), depth=depth
        )
        return WsIterator(source)
