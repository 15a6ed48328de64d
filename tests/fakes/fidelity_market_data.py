"""The fake Fidelity upstream's market-data REST.

fastquote routes read their query like the real host (``symbols``, ``productid=atn``; the chart's
``callback``, dates and ``barWidth``); an unknown symbol answers with an ``err`` code. ``montage_refusal``
makes dtmontage answer the bare "Delayed quotes not supported" text (as without a security context).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ftdesk.brokers.fidelity.values import option_contract
from tests.fakes import fidelity_market_data_payloads as mp
from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity

FQ = "fastquote.fidelity.com"
DP = "dpservice.fidelity.com"
CHAIN_PATH = "/service/quote/chainLite"
MONTAGE_PATH = "/service/quote/dtmontage"
CHART_PATH = "/service/marketdata/historical/chart/json"
TIME_AND_SALES_PATH = "/service/timeandsales/v2"
MARKETS_PATH = "/ftgw/dp/reference/security/stock/availablemarket/v1"


class FakeMarketData:
    """State and routes of this group; routes() maps (host, path) to a handler."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream
        self.montage_refusal = False

    def routes(self) -> GroupRoutes:
        """Return this group's handlers by (host, path)."""
        return {
            (FQ, CHAIN_PATH): self._chain,
            (FQ, MONTAGE_PATH): self._montage,
            (FQ, CHART_PATH): self._chart,
            (FQ, TIME_AND_SALES_PATH): self._time_and_sales,
            (DP, MARKETS_PATH): self._markets,
        }

    @staticmethod
    def _product_checked(request: web.Request) -> web.Response | None:
        if request.query.get("productid") != "atn":
            return web.Response(status=400, text="productid missing")
        return None

    async def _chain(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        refused = self._product_checked(request)
        if refused is not None:
            return refused
        symbol = request.query.get("symbols", "")
        listing = mp.UNIVERSE.get(symbol)
        if listing is None or not listing.strike_step:
            return web.Response(text=mp.unknown_chain_xml(symbol), content_type="text/xml")
        return web.Response(text=mp.chain_xml(listing, upstream.today()), content_type="text/xml")

    async def _montage(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        refused = self._product_checked(request)
        if refused is not None:
            return refused
        if self.montage_refusal:
            return web.Response(text="Delayed quotes not supported", content_type="text/plain")
        symbol = request.query.get("symbols", "")
        contract = option_contract(symbol) if symbol.startswith("-") else None
        if contract is not None:
            listing = mp.UNIVERSE.get(contract.underlying)
            if listing is None:
                return web.json_response(mp.unknown_montage(symbol))
            kind = "C" if contract.option_type.value == "CALL" else "P"
            price = mp.option_price(listing, kind, contract.strike)
            option = (contract.underlying, contract.expiration, kind, contract.strike)
            return web.json_response(mp.montage(symbol, price, option))
        listing = mp.UNIVERSE.get(symbol)
        if listing is None:
            return web.json_response(mp.unknown_montage(symbol))
        return web.json_response(mp.montage(symbol, listing.last, None))

    async def _chart(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        refused = self._product_checked(request)
        if refused is not None:
            return refused
        query = request.query
        callback = query.get("callback", "")
        start = datetime.strptime(query["startDate"], "%Y/%m/%d-%H:%M:%S").date()
        end = datetime.strptime(query["endDate"], "%Y/%m/%d-%H:%M:%S").date()
        listing = mp.UNIVERSE.get(query.get("symbols", ""))
        payload: dict[str, Any] = {"Symbol": []}
        if listing is not None:
            payload = mp.chart_json(listing, start, end, query["barWidth"])
        return web.Response(text=f"{callback}({json.dumps(payload)});", content_type="application/javascript")

    async def _time_and_sales(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        refused = self._product_checked(request)
        if refused is not None:
            return refused
        symbol = request.query.get("symbols", "")
        listing = mp.UNIVERSE.get(symbol)
        if listing is None:
            return web.Response(text=mp.unknown_time_and_sales_xml(symbol), content_type="text/xml")
        rows = min(int(request.query.get("maxRows", "100")), 500)
        return web.Response(text=mp.time_and_sales_xml(listing, upstream.now(), rows), content_type="text/xml")

    async def _markets(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        request_body = body or {}
        if not request_body.get("accounts"):
            return web.json_response({"message": "accounts is required"}, status=400)
        symbol = str(request_body.get("symbol", ""))
        listing = mp.UNIVERSE.get(symbol)
        return web.json_response(mp.available_markets(listing) if listing else mp.no_markets(symbol))
