"""Fidelity's market as the paper engine's ``TradingMarket``: live MDDS quotes, snapshots, the real session.

Quotes come from two places, both Fidelity's: the live stream (the service's one MDDS connection, through
the quote hub: the composition root attaches a ``LiveQuotes`` once the hub exists) and snapshots through the
Fidelity quote feed. A symbol the open stream carries is current whatever its age: MDDS sends every change,
so a quiet symbol has simply not moved. ``prepare`` holds the symbols on the stream and takes one snapshot
of those the stream does not carry (not yet subscribed, or the connection is down) and that have no quote
younger than ``stale_after`` seconds, so nothing is priced on a quote older than that unless the stream
stands by it. A symbol Fidelity gives no quote for cannot be priced: ``quote`` raises ``NotFound`` saying
so, and the engine refuses the order (``NO_QUOTE``) rather than price it from the simulation.

Symbols are held on the stream only while something needs them: a holding, a working order or watched
alert (``keep_needed`` says which), or a read within the last ``linger`` seconds. A sweep on the injected
clock every ``linger`` seconds lets go of the rest through the hub's refcount, so a client stream that holds
the same symbol keeps it, and the MDDS subscription set does not grow over a session with every symbol an
order was once priced or refused on.

Each streamed quote is handed to the engine's listener at once, so a resting order fills on the quote that
crosses it, not on the next tick. Option symbols are kept in the compact form the paper ledger uses
(``AAPL260417C200``); MDDS's leading dash is dropped on the way in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from ftdesk.brokers.base import QuoteFeed
from ftdesk.brokers.paper.options import option_description, parse_option_symbol
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.brokers.paper_on_fidelity.hours import session_open
from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import Quote

log = logging.getLogger(__name__)

DEFAULT_STALE_AFTER = 5.0
"""Seconds without a streamed update after which a symbol's quote is refreshed by a snapshot before pricing."""

DEFAULT_LINGER = 30.0
"""Seconds a symbol nothing needs any more stays held after its last read (a quick re-read does not resubscribe)."""

_EQUITY = re.compile(r"[A-Z][A-Z0-9./]{0,9}")


class LiveQuotes(Protocol):
    """The service's live quote stream as the market sees it (the quote hub, attached by the composition root)."""

    def hold(self, symbols: Sequence[str]) -> None:
        """Keep these symbols on the stream."""

    def release(self, symbols: Sequence[str]) -> None:
        """Stop keeping these symbols on the stream (others holding them keep them)."""

    def start(self, receive: Callable[[Quote], None]) -> None:
        """Hand every streamed quote of a held symbol to ``receive``."""

    def latest(self, symbol: str) -> Quote | None:
        """Return the stream's latest quote of a symbol while the open connection carries it, else None."""


def canonical(symbol: str) -> str:
    """Return the form the paper ledger keys a symbol by: upper case, an option without MDDS's dash."""
    return symbol.strip().upper().lstrip("-")


class FidelityMarket:
    """Fidelity's quotes and session as the paper engine's market (see the module docstring)."""

    def __init__(
        self,
        feed: QuoteFeed,
        clock: Clock,
        *,
        stale_after: float = DEFAULT_STALE_AFTER,
        linger: float = DEFAULT_LINGER,
    ) -> None:
        if linger <= 0:
            raise ValueError(f"linger must be positive, got {linger}")
        self._feed = feed
        self._clock = clock
        self._stale_after = stale_after
        self._linger = linger
        self._live: LiveQuotes | None = None
        self._needed: Callable[[], Iterable[str]] = tuple
        self._held: set[str] = set()
        self._read_at: dict[str, float] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._streamed: dict[str, tuple[Quote, float]] = {}
        self._snapped: dict[str, tuple[Quote, float]] = {}
        self._listeners: list[Callable[[str], None]] = []
        self.snapshots_taken = 0

    def attach(self, live: LiveQuotes) -> None:
        """Take streamed quotes from the service's live stream from now on."""
        self._live = live
        live.start(self.receive)
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(), name="paper-market-release")

    def keep_needed(self, needed: Callable[[], Iterable[str]]) -> None:
        """Keep on the stream, whatever their last read, the symbols ``needed()`` names (holdings, working orders)."""
        self._needed = needed

    def release_unneeded(self) -> list[str]:
        """Let go of the held symbols nothing needs and nobody read in the last ``linger`` seconds; return them."""
        now = self._clock.monotonic()
        for symbol, read in list(self._read_at.items()):
            if now - read > self._linger:
                del self._read_at[symbol]
        try:
            needed = self._with_underlyings(self._needed())
        except Exception:  # the ledger cannot say now: keep everything, the next sweep retries
            log.exception("The paper market could not list the symbols it needs")
            return []
        unneeded = sorted(symbol for symbol in self._held if symbol not in needed and symbol not in self._read_at)
        if not unneeded:
            return []
        self._held.difference_update(unneeded)
        for symbol in unneeded:
            self._streamed.pop(symbol, None)
            self._snapped.pop(symbol, None)
        if self._live is not None:
            self._live.release(unneeded)
        log.debug("The paper market released %d symbols from the stream", len(unneeded))
        return unneeded

    async def close(self) -> None:
        """Stop the release sweep; idempotent (the tap lets go of everything when it closes)."""
        task, self._sweeper = self._sweeper, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _sweep_forever(self) -> None:
        while True:
            await self._clock.sleep(self._linger)
            self.release_unneeded()

    def receive(self, quote: Quote) -> None:
        """Keep a streamed quote and tell the engine its symbol moved."""
        symbol = canonical(quote.symbol)
        self._streamed[symbol] = (quote, self._clock.monotonic())
        for listener in self._listeners:
            listener(symbol)

    # --- TradingMarket ------------------------------------------------------------------------

    def now(self) -> datetime:
        """Return the injected clock's time."""
        return self._clock.now()

    def is_open(self) -> bool:
        """Return True during the regular session (NYSE days and hours, New York time)."""
        return session_open(self._clock.now())

    def on_quote(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(symbol)`` on each streamed quote."""
        self._listeners.append(listener)

    async def prepare(self, symbols: Sequence[str]) -> None:
        """Hold the symbols (and options' underlyings) on the stream; snapshot those not fresh from it."""
        wanted = self._with_underlyings(symbols)
        now = self._clock.monotonic()
        for symbol in wanted:
            self._read_at[symbol] = now
        if self._live is not None:
            self._live.hold(list(wanted))
            self._held.update(wanted)
        stale = [symbol for symbol in wanted if self._fresh(symbol) is None]
        if not stale:
            return
        self.snapshots_taken += 1
        taken = self._clock.monotonic()
        for quote in await self._feed.snapshot(stale):
            self._snapped[canonical(quote.symbol)] = (quote, taken)

    def quote(self, symbol: str) -> Quote:
        """Return Fidelity's current quote of a symbol; raise ``NotFound`` when none can be had."""
        text = canonical(symbol)
        quote = self._fresh(text)
        if quote is None:
            raise NotFound(
                f"No real quote for {text} from Fidelity's market (none streamed or snapshotted in the last"
                f" {self._stale_after:g} seconds): a paper order on Fidelity's market is never priced from the"
                " simulation"
            )
        return quote

    def instrument(self, symbol: str) -> Instrument:
        """Return reference data: an option's terms from its symbol; any other well-formed symbol is an equity."""
        text = canonical(symbol)
        try:
            contract = parse_option_symbol(text)
        except ValueError:
            if not _EQUITY.fullmatch(text):
                raise NotFound(f"Unknown symbol {symbol!r}") from None
            return Instrument(text, text, SecurityType.EQUITY, "", "")
        return Instrument(text, option_description(contract), SecurityType.OPTION, "OPRA", "", contract)

    # --- internals -------------------------------------------------------------------------------

    @staticmethod
    def _with_underlyings(symbols: Iterable[str]) -> dict[str, None]:
        """Return the symbols in the ledger's form with each option's underlying after it, without repeats."""
        wanted: dict[str, None] = {}
        for symbol in symbols:
            text = canonical(symbol)
            wanted[text] = None
            option = _option(text)
            if option is not None:
                wanted[option] = None
        return wanted

    def _fresh(self, symbol: str) -> Quote | None:
        """Return the stream's quote while it carries the symbol, else the newest not older than ``stale_after``."""
        carried = self._live.latest(symbol) if self._live is not None else None
        if carried is not None:
            return carried
        now = self._clock.monotonic()
        best: tuple[Quote, float] | None = None
        for kept in (self._streamed.get(symbol), self._snapped.get(symbol)):
            if kept is not None and now - kept[1] <= self._stale_after and (best is None or kept[1] > best[1]):
                best = kept
        return None if best is None else best[0]


def _option(symbol: str) -> str | None:
    """Return an option symbol's underlying, or None for a symbol that is not an option."""
    try:
        return parse_option_symbol(symbol).underlying
    except ValueError:
        return None
