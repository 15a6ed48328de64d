"""``ftdesk mcp``: an MCP server on stdio (the official ``mcp`` SDK) whose tools are clients of the running service.

Reads and previews run freely. ``place_order`` sends the place with ``X-Ftdesk-Client: mcp``: the service
holds it until the trader approves or rejects it in the tray (or the wait times out) and the tool answers
with what happened, in words the assistant can relay. docs/assistant.md lists the tools and how to register
the server with an MCP client.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field

from ftdesk.assistant.tools import (
    EQUITY_ACTIONS,
    MCP_CLIENT_HEADER,
    ORDER_TYPES,
    TIFS,
    Desk,
    ToolRefusal,
    plain,
    refusal,
)
from ftdesk.client import AsyncClient, FtdeskClientError

T = TypeVar("T")

Account = Annotated[str | None, Field(description="Account number; leave it out for the login's default account.")]
Symbol = Annotated[str, Field(description="A stock or ETF symbol, e.g. AAPL.")]
OrderType = Annotated[Literal["market", "limit", "stop", "stop_limit"], Field(description="How the order is priced.")]
LimitPrice = Annotated[
    float | None, Field(description="Limit price in US dollars per share (limit and stop_limit orders).", gt=0)
]
StopPrice = Annotated[
    float | None, Field(description="Stop price in US dollars per share (stop and stop_limit orders).", gt=0)
]
TimeInForce = Annotated[Literal["day", "good_till_canceled"], Field(description="How long the order works.")]

INSTRUCTIONS = (
    "ftdesk puts the trader's brokerage account behind a local service. Read quotes, positions, balances, orders "
    "and option chains freely; preview an order to see how the broker understood it. place_order never places on "
    "its own: the trader approves or rejects each order in the ftdesk tray, and the tool says which (or that the "
    "wait timed out). Relay that answer to the trader as it is. A halt stops all trading."
)


def build_server(desk: Desk) -> Any:
    """Return the MCP server with ftdesk's tools bound to ``desk``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("ftdesk", instructions=INSTRUCTIONS)

    async def answer(work: Callable[[], Awaitable[T]]) -> T:
        try:
            return await work()
        except ToolRefusal as exc:
            raise ToolError(str(exc)) from None
        except FtdeskClientError as exc:
            raise ToolError(str(refusal(exc))) from None

    @server.tool(description="Latest quote (last, bid, ask, change, volume) of each symbol; unknown ones are listed.")
    async def get_quotes(
        symbols: Annotated[list[str], Field(description="Symbols to quote, e.g. ['AAPL', 'MSFT'].", min_length=1)],
    ) -> dict[str, Any]:
        return await answer(lambda: desk.quotes(symbols))

    @server.tool(description="The account's positions: quantity (negative when short), price, value, gains.")
    async def get_positions(account: Account = None) -> list[dict[str, Any]]:
        async def work() -> list[dict[str, Any]]:
            return plain(await desk.api.get_positions(await desk.account(account)))  # type: ignore[no-any-return]

        return await answer(work)

    @server.tool(description="The account's balances: net worth, cash, market values, buying power (US dollars).")
    async def get_balances(account: Account = None) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            return plain(await desk.api.get_balances(await desk.account(account)))  # type: ignore[no-any-return]

        return await answer(work)

    @server.tool(description="Working and recent orders of the account, newest first.")
    async def get_orders(
        account: Account = None,
        open_only: Annotated[bool, Field(description="Only orders still working (open or partly filled).")] = False,
    ) -> list[dict[str, Any]]:
        async def work() -> list[dict[str, Any]]:
            orders = await desk.api.get_order_status(await desk.account(account))
            working = {"OPEN", "PARTIALLY_FILLED", "PENDING_TRIGGER"}
            return [plain(o) for o in orders if not open_only or o.status_detail.status.value in working]

        return await answer(work)

    @server.tool(description="Option chain of an underlying: calls and puts by strike, with Greeks, per expiration.")
    async def get_option_chain(
        symbol: Symbol,
        expiration: Annotated[
            str | None, Field(description="One expiration as YYYY-MM-DD; leave it out for the nearest one.")
        ] = None,
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            chain = await desk.api.get_option_chain(symbol.upper())
            kept = [e for e in chain.expirations if str(e.expiration) == expiration] if expiration else []
            if expiration and not kept:
                listed = ", ".join(str(e.expiration) for e in chain.expirations[:12])
                raise ToolRefusal(f"{chain.symbol} has no expiration on {expiration}; listed: {listed}")
            chosen = kept or chain.expirations[:1]
            return plain(chain.model_copy(update={"expirations": chosen}))  # type: ignore[no-any-return]

        return await answer(work)

    @server.tool(description="Find symbols by symbol or company-name prefix, best match first.")
    async def search_symbols(
        query: Annotated[str, Field(description="Text to search, e.g. 'micro' or 'MSF'.", min_length=1)],
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            return plain(await desk.api.search_symbols(query))  # type: ignore[no-any-return]

        return await answer(work)

    @server.tool(
        description="Preview a stock order (nothing is sent): returns its conf_num and the order as the broker "
        "understood it, with the quote, estimated cost and warnings. Place it with place_order."
    )
    async def preview_equity_order(
        symbol: Symbol,
        action: Annotated[
            Literal["buy", "sell", "sell_short", "buy_to_cover"], Field(description="What the order does.")
        ],
        quantity: Annotated[float, Field(description="Number of shares.", gt=0)],
        order_type: OrderType = "market",
        limit_price: LimitPrice = None,
        stop_price: StopPrice = None,
        time_in_force: TimeInForce = "day",
        account: Account = None,
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            fields = {
                "symbol": symbol.upper(),
                "action": EQUITY_ACTIONS[action],
                "qty": quantity,
                "price_type": ORDER_TYPES[order_type],
                "limit_price": limit_price,
                "stop_price": stop_price,
                "tif": TIFS[time_in_force],
            }
            return await desk.preview("equity", await desk.account(account), fields)

        return await answer(work)

    @server.tool(
        description="Preview a single-leg option order (nothing is sent): returns its conf_num and the order as the "
        "broker understood it (contracts, per-share price). Place it with place_order."
    )
    async def preview_option_order(
        symbol: Annotated[str, Field(description="Option symbol: root, YYMMDD, C or P, strike (AAPL271217C200).")],
        side: Annotated[Literal["buy", "sell"], Field(description="Buy or sell the contracts.")],
        quantity: Annotated[int, Field(description="Number of contracts.", gt=0)],
        position_intent: Annotated[
            Literal["open", "close"], Field(description="Whether the order opens a position or closes one held.")
        ],
        order_type: OrderType = "limit",
        limit_price: LimitPrice = None,
        stop_price: StopPrice = None,
        time_in_force: TimeInForce = "day",
        account: Account = None,
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            upper = symbol.upper()
            kind = "C" if upper.rstrip("0123456789.")[-1:] == "C" else "P"
            fields = {
                "symbol": upper,
                "action": ("B" if side == "buy" else "S") + kind,
                "qty": quantity,
                "price_type": ORDER_TYPES[order_type],
                "limit_price": limit_price,
                "stop_price": stop_price,
                "tif": TIFS[time_in_force],
                "position_intent": position_intent,
            }
            return await desk.preview("option", await desk.account(account), fields)

        return await answer(work)

    @server.tool(
        description="Place an order previewed in this session, by its conf_num. The ftdesk service holds it until "
        "the trader approves or rejects it in the tray; the answer says placed, rejected by the trader, or timed "
        "out. Halt and risk limits apply. Without the tray running nothing can be approved or placed."
    )
    async def place_order(
        conf_num: Annotated[str, Field(description="The conf_num a preview tool returned.")],
        approval_timeout_seconds: Annotated[
            float | None,
            Field(description="How long to wait for the trader (default: the server's, 60 s).", ge=5, le=600),
        ] = None,
    ) -> dict[str, Any]:
        return await answer(lambda: desk.place(conf_num, approval_timeout_seconds))

    @server.tool(description="Cancel a working order by its conf_num (cancels are never blocked).")
    async def cancel_order(
        conf_num: Annotated[str, Field(description="The order's conf_num.")],
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            detail = await desk.api.get_order_detail(conf_num)
            order = detail.order or (detail.orders[0] if detail.orders else None)
            if order is None:
                raise ToolRefusal(f"No order {conf_num}.")
            result = await desk.api.cancel_order(conf_num, order.acct_num, order.order_detail.action)
            return plain(result)  # type: ignore[no-any-return]

        return await answer(work)

    @server.tool(
        description="Halt all trading (kill switch): refuse every preview and place, turn live trading off, cancel "
        "every working order. Only the trader can resume, in the tray or with `ftdesk resume`."
    )
    async def halt_trading(
        reason: Annotated[str | None, Field(description="Why, kept with the halt.")] = None,
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            return plain(await desk.api.halt(reason))  # type: ignore[no-any-return]

        return await answer(work)

    return server


def run_mcp(argv: Sequence[str]) -> int:
    """Serve MCP on stdin/stdout until the client closes it; return the exit code."""
    import anyio

    parser = argparse.ArgumentParser(
        prog="ftdesk mcp", description="Serve ftdesk's tools to an AI assistant (MCP, stdio)."
    )
    parser.add_argument("--url", help="the service's URL (default: found from its settings)")
    parser.add_argument(
        "--approval-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long place_order waits for the trader's approval (5-600, default 60)",
    )
    args = parser.parse_args(list(argv))
    if not 5 <= args.approval_timeout <= 600:
        parser.error("--approval-timeout is between 5 and 600 seconds")

    async def serve() -> None:
        try:
            api = AsyncClient(args.url, headers=MCP_CLIENT_HEADER, timeout=args.approval_timeout + 30)
        except FtdeskClientError as exc:
            print(f"ftdesk mcp: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(3) from None
        async with api:
            await build_server(Desk(api, args.approval_timeout)).run_stdio_async()

    anyio.run(serve)
    return 0
