"""The Fidelity brokerage behind the ``Broker`` protocol: one object per capability group, and the two streams.

The groups share what they are given at construction: the login session (``FidelitySession``: the
logged-in HTTP client with its answer sharing and reference cache, per login; account answers are reused
only while the account-event feed, watched by ``EventWatch``, proves them current), the clock, and the accounts
group (orders and market data check account numbers against its list). The politeness budgets and the
upstream router belong to the broker, so a re-login loop never resets them. The broker itself keeps the
lifecycle, the MDDS quote feed, the BEPS account-event feed (configured from each login) with its fills
fallback, and the Fidelity-only extras the feeds and diagnostics use.

Built with ``order_entry=False`` (paper trading on Fidelity's market), the orders group is never constructed:
no code path of that broker can preview, place, replace or cancel an order at Fidelity.
"""

from __future__ import annotations

from ftdesk.brokers.base import AccountEventFeed, QuoteFeed
from ftdesk.brokers.fidelity.accounts import FidelityAccounts
from ftdesk.brokers.fidelity.answer_reuse import EventWatch, WatchedFeed
from ftdesk.brokers.fidelity.beps import BepsConfig
from ftdesk.brokers.fidelity.beps_auth import TOKEN_URL, BepsToken, fetch_token
from ftdesk.brokers.fidelity.beps_feed import BepsAccountEventFeed
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.fills_fallback import DEFAULT_INTERVAL, FillsFallback
from ftdesk.brokers.fidelity.market_data import FidelityMarketData
from ftdesk.brokers.fidelity.mdds import MddsQuoteFeed
from ftdesk.brokers.fidelity.orders import FidelityOrders
from ftdesk.brokers.fidelity.politeness import Politeness
from ftdesk.brokers.fidelity.research import FidelityResearch
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.brokers.fidelity.user_data import FidelityUserData
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import InternalError


class FidelityBroker:
    """The Fidelity Trader+ upstream (see the module docstring)."""

    name = "fidelity"

    def __init__(
        self,
        config: FidelityConfig,
        clock: Clock,
        account_events: AccountEventFeed | None = None,
        *,
        beps: BepsConfig | None = None,
        fallback_interval: float = DEFAULT_INTERVAL,
        order_entry: bool = True,
    ) -> None:
        self.config = config
        self.clock = clock
        self.router = UpstreamRouter(config.upstream)
        self.beps = beps or BepsConfig()
        # One set of budgets for the broker, not per login: a re-login loop must not reset them.
        self.politeness = Politeness(
            clock,
            read_rate=config.read_rate,
            read_concurrency=config.read_concurrency,
            order_rate=config.order_rate,
            login_per_minute=config.login_per_minute,
        )
        # Live account events prove kept account answers current (answer_reuse): the feed tells the watch.
        self.event_watch = EventWatch()
        self._session = FidelitySession(config, self.router, clock, self.politeness, self.event_watch)
        # BEPS configures itself from each login (token endpoint, security context); FTSERVICE_BEPS_* override.
        feed = account_events or BepsAccountEventFeed(self.beps, router=self.router, clock=clock, login=self)
        self._account_events: AccountEventFeed = WatchedFeed(feed, self.event_watch)
        # Fills and cancels from the alert history while BEPS is down (the account-event hub polls it).
        self._event_fallback = FillsFallback(self._session.require, clock, interval=fallback_interval)
        self._quote_feed: QuoteFeed = MddsQuoteFeed(cookies=self._session.cookies, router=self.router, clock=clock)
        self._accounts = FidelityAccounts(self._session, clock, ttl=config.accounts_ttl)
        self._orders: FidelityOrders | None = None
        if order_entry:
            self._orders = FidelityOrders(
                self._session,
                clock,
                self._accounts,
                self._quote_feed,
                cancel_lookup_timeout=config.cancel_lookup_timeout,
            )
        self._market_data = FidelityMarketData(self._session, clock, self._accounts)
        self._research = FidelityResearch(self._session, clock)
        self._user_data = FidelityUserData(self._session, clock)

    # --- the capability groups -----------------------------------------------------------------

    @property
    def session(self) -> FidelitySession:
        """Return the session group: login, logout, keep-alive."""
        return self._session

    @property
    def accounts(self) -> FidelityAccounts:
        """Return the accounts and portfolio group."""
        return self._accounts

    @property
    def has_order_entry(self) -> bool:
        """Return whether this broker was built able to send orders (False for paper on Fidelity's market)."""
        return self._orders is not None

    @property
    def orders(self) -> FidelityOrders:
        """Return the orders group; raise ``InternalError`` when this broker was built without order entry."""
        if self._orders is None:
            raise InternalError("This Fidelity connection was built without order entry: it cannot send orders")
        return self._orders

    @property
    def market_data(self) -> FidelityMarketData:
        """Return the market-data group (REST)."""
        return self._market_data

    @property
    def research(self) -> FidelityResearch:
        """Return the research group."""
        return self._research

    @property
    def user_data(self) -> FidelityUserData:
        """Return the user-data group."""
        return self._user_data

    # --- streams and lifecycle -----------------------------------------------------------------

    @property
    def quote_feed(self) -> QuoteFeed:
        """Return the MDDS quote feed (it authenticates with the session cookies)."""
        return self._quote_feed

    @property
    def account_events(self) -> AccountEventFeed:
        """Return the account-event feed (BEPS unless another was given)."""
        return self._account_events

    @property
    def event_fallback(self) -> FillsFallback:
        """Return where fills come from while the account-event stream is down: the alert history."""
        return self._event_fallback

    async def start(self) -> None:
        """Nothing to open before a login: the HTTP session belongs to the login."""

    async def close(self) -> None:
        """Close the HTTP session (without logging out upstream); idempotent."""
        await self._session.close()

    # --- Fidelity-only extras ------------------------------------------------------------------

    def cookies(self) -> dict[str, str]:
        """Return the session cookies by name (empty when logged out): what MDDS and BEPS authenticate with."""
        return self._session.cookies()

    @property
    def upstream_calls(self) -> int:
        """Return how many HTTP calls the current login session has sent (for diagnostics and tests)."""
        return self._session.upstream_calls

    def beps_member_id(self) -> str | None:
        """Return the member id (MID) of this login's security context, or None."""
        return self._session.security.member_id

    async def fetch_beps_token(self) -> BepsToken:
        """Fetch a BEPS token for this login from the token endpoint (or FTSERVICE_BEPS_TOKEN_URL)."""
        return await fetch_token(self._session.require(), self.clock, self.beps.token_url or TOKEN_URL)
