"""Paper trading on Fidelity's market: a ``Broker`` whose money is the paper ledger's and whose market is Fidelity's.

Assembled from the two brokerages without either knowing of the other (the layer rules forbid it):

* the Fidelity side is a ``FidelityBroker`` built with ``order_entry=False``: its login session (Fidelity
  credentials, the 6-digit code, keep-alive, re-auth, SESSION_EXPIRED as in Fidelity mode), its MDDS quote
  feed, its market-data and research reads and its politeness budgets. Its orders group is never built, so
  no order, preview, replace or cancel can reach Fidelity;
* the paper side is a ``PaperBroker`` given ``FidelityMarket`` as its market and the Fidelity login as the
  session its calls check: accounts, balances, positions, orders, previews, fills, notes, watchlists, price
  alerts and the account-event stream come from the paper world.

The quote hub of the service (one MDDS connection) is attached by the composition root once it exists
(``attach_live_quotes``), so resting paper orders fill on the streamed quote that crosses them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ftdesk.brokers.base import AccountEventFeed, QuoteFeed
from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.market_data import FidelityMarketData
from ftdesk.brokers.fidelity.research import FidelityResearch
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.brokers.paper.broker import PaperBroker
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.brokers.paper.groups import PaperAccountsApi, PaperOrdersApi, PaperResearchApi, PaperUserDataApi
from ftdesk.brokers.paper_on_fidelity.market import DEFAULT_STALE_AFTER, FidelityMarket, LiveQuotes
from ftdesk.domain.errors import InternalError
from ftdesk.domain.research import (
    AnalyticsRequest,
    AnalyticsResult,
    AutosuggestResult,
    DividendEvent,
    EarningsEvent,
    NoteDetail,
    NoteDraft,
    NoteUpdate,
    ScanDefinition,
    ScreenerResult,
)


class FidelityLoginGate:
    """The Fidelity login as the session every paper call checks first."""

    def __init__(self, session: FidelitySession) -> None:
        self._session = session

    def require_active(self) -> None:
        """Raise ``AuthRequired`` unless logged in to Fidelity (an expiry surfaces on Fidelity's own calls)."""
        self._session.require()


class PaperOnFidelityResearch:
    """Research reads from Fidelity; the notebook from the paper world."""

    def __init__(self, fidelity: FidelityResearch, paper: PaperResearchApi) -> None:
        self._fidelity = fidelity
        self._paper = paper

    async def get_earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return earnings from Fidelity."""
        return await self._fidelity.get_earnings(symbols)

    async def get_dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return dividends from Fidelity."""
        return await self._fidelity.get_dividends(symbols)

    async def search_symbols(self, query: str) -> AutosuggestResult:
        """Search Fidelity's symbols."""
        return await self._fidelity.search_symbols(query)

    async def analyze_position(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Analyse option legs with Fidelity's analytics."""
        return await self._fidelity.analyze_position(request)

    async def run_screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run Fidelity's screener."""
        return await self._fidelity.run_screener(scan)

    async def get_notes(self) -> list[NoteDetail]:
        """Return the paper world's notes."""
        return await self._paper.get_notes()

    async def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a note in the paper world."""
        return await self._paper.create_note(draft)

    async def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Update a note in the paper world."""
        return await self._paper.update_note(note_id, update)

    async def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a note in the paper world."""
        await self._paper.delete_note(note_id, symbol)


class PaperOnFidelityBroker:
    """The paper ledger trading on Fidelity's market (see the module docstring)."""

    name = "paper"

    def __init__(
        self, paper_config: PaperConfig, fidelity: FidelityBroker, *, stale_after: float = DEFAULT_STALE_AFTER
    ) -> None:
        if fidelity.has_order_entry:
            raise InternalError("Paper on Fidelity's market needs a Fidelity connection built without order entry")
        self.fidelity = fidelity
        self.market = FidelityMarket(fidelity.quote_feed, fidelity.clock, stale_after=stale_after)
        self.paper = PaperBroker(
            paper_config, fidelity.clock, market=self.market, gate=FidelityLoginGate(fidelity.session)
        )
        self._research: PaperOnFidelityResearch | None = None

    def attach_live_quotes(self, live: LiveQuotes) -> None:
        """Let resting paper orders fill on the service's streamed quotes (called once the quote hub exists)."""
        self.market.keep_needed(self._needed_symbols)
        self.market.attach(live)

    def _needed_symbols(self) -> list[str]:
        """Return what the paper world prices without being asked: holdings, working orders, watched alerts."""
        paper = self.paper
        if not paper.started:
            return []
        return [*paper.readiness.held_symbols(None), *paper.engine.working_symbols(), *paper.alerts.watched_symbols()]

    # --- the capability groups -----------------------------------------------------------------

    @property
    def session(self) -> FidelitySession:
        """Return Fidelity's login session."""
        return self.fidelity.session

    @property
    def accounts(self) -> PaperAccountsApi:
        """Return the paper accounts, valued on Fidelity's quotes."""
        return self.paper.accounts

    @property
    def orders(self) -> PaperOrdersApi:
        """Return the paper orders, filled on Fidelity's quotes."""
        return self.paper.orders

    @property
    def market_data(self) -> FidelityMarketData:
        """Return Fidelity's market data."""
        return self.fidelity.market_data

    @property
    def research(self) -> PaperOnFidelityResearch:
        """Return Fidelity's research with the paper notebook."""
        if self._research is None:
            self._research = PaperOnFidelityResearch(self.fidelity.research, self.paper.research)
        return self._research

    @property
    def user_data(self) -> PaperUserDataApi:
        """Return the paper world's watchlists, price alerts and preferences."""
        return self.paper.user_data

    # --- streams and lifecycle -----------------------------------------------------------------

    @property
    def quote_feed(self) -> QuoteFeed:
        """Return Fidelity's MDDS quote feed."""
        return self.fidelity.quote_feed

    @property
    def account_events(self) -> AccountEventFeed:
        """Return the paper ledger's account events."""
        return self.paper.account_events

    @property
    def event_fallback(self) -> None:
        """Return None: the paper ledger's event feed never goes down."""
        return None

    async def start(self) -> None:
        """Open the paper world (Fidelity opens nothing before a login)."""
        await self.fidelity.start()
        await self.paper.start()
        self._research = None

    async def close(self) -> None:
        """Close the paper world and the Fidelity HTTP session; idempotent."""
        try:
            await self.market.close()
            await self.paper.close()
        finally:
            await self.fidelity.close()
