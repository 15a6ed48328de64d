"""Quotes made current before the paper brokerage prices anything: what each call needs, asked of the market.

A market that streams (Fidelity's) subscribes the symbols and takes a snapshot of those whose stream is stale
or absent; the simulated market has nothing to do. The symbols come from the request (an order's symbols,
legs included) and the world (an account's holdings, the working orders), never from the engine's insides.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ftdesk.brokers.paper.engine.engine import OrderEngine
from ftdesk.brokers.paper.ports import TradingMarket
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.base import Record


def symbols_in(request: Record) -> list[str]:
    """Return every ``symbol`` a request names (its legs' included), in order, without repeats."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            symbol = value.get("symbol")
            if isinstance(symbol, str) and symbol.strip():
                found[symbol.strip().upper()] = None
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(request.model_dump())
    return list(found)


class MarketReadiness:
    """Asks the market to make current the quotes a paper call is about to price."""

    def __init__(self, market: TradingMarket, store: PaperStore, engine: OrderEngine) -> None:
        self._market = market
        self._store = store
        self._engine = engine
        # The last answer of held_symbols, with the ledger's stamp it was read at.
        self._held: tuple[int, str | None, list[str]] | None = None

    async def for_symbols(self, symbols: Iterable[str]) -> None:
        """Make these symbols' quotes current."""
        wanted = list(dict.fromkeys(symbols))
        if wanted:
            await self._market.prepare(wanted)

    async def for_order(self, request: Record, *, working: bool = False) -> None:
        """Make current the quotes an order request prices and its account's buying power is checked on.

        That is the order's symbols (legs included), the account's holdings and the working orders: a check
        of buying power values them all, so none may be priced on a quote the market no longer stands by.
        ``working`` is kept for the callers that replace a working order (its symbols are among them).
        """
        acct_num = getattr(request, "acct_num", None)
        held = self.held_symbols(acct_num) if isinstance(acct_num, str) else []
        await self.for_symbols([*symbols_in(request), *held, *self._engine.working_symbols()])

    async def for_account(self, acct_num: str | None) -> None:
        """Make current the quotes an account's valuation needs: its holdings and the working orders."""
        await self.for_symbols([*self.held_symbols(acct_num), *self._engine.working_symbols()])

    def held_symbols(self, acct_num: str | None) -> list[str]:
        """Return the symbols an account (every account, for None) holds (read again when the ledger changed)."""
        version = self._store.version()
        if version is not None and self._held is not None and self._held[:2] == (version, acct_num):
            return list(self._held[2])
        rows = self._store.query(
            "SELECT DISTINCT symbol FROM paper_lots WHERE (? IS NULL OR acct_num = ?) ORDER BY symbol",
            (acct_num, acct_num),
        )
        symbols = [str(r["symbol"]) for r in rows]
        if version is not None:
            self._held = (version, acct_num, symbols)
        return list(symbols)
