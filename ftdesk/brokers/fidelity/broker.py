"""The Fidelity brokerage behind the ``Broker`` protocol.

A login builds a fresh ``FidelityHttp`` (fresh cookie jar) and runs the handshake of section 3; the
session lives in that client's cookies, which the MDDS feed also reads through ``cookies()``. Accounts
are listed once per ``FidelityConfig.accounts_ttl`` and reused to check account numbers (``NotFound``)
and to fill the account fields the portfolio requests carry. The account and portfolio group is
implemented here; orders, market-data REST, research and user data are mixins, one module per group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Sequence
from datetime import date
from typing import Any

from ftdesk.brokers.base import AccountEventFeed, QuoteFeed
from ftdesk.brokers.fidelity import accounts as acct
from ftdesk.brokers.fidelity import history, lending, portfolio
from ftdesk.brokers.fidelity.auth import SecurityContext, extend_session, log_in, log_out
from ftdesk.brokers.fidelity.beps import BepsConfig
from ftdesk.brokers.fidelity.beps_auth import TOKEN_URL, BepsToken, fetch_token
from ftdesk.brokers.fidelity.beps_feed import BepsAccountEventFeed
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.fills_fallback import DEFAULT_INTERVAL, FillsFallback
from ftdesk.brokers.fidelity.http import FidelityHttp
from ftdesk.brokers.fidelity.market_data import MarketDataModule
from ftdesk.brokers.fidelity.mdds import MddsQuoteFeed
from ftdesk.brokers.fidelity.module import FidelityModule
from ftdesk.brokers.fidelity.orders import OrdersModule
from ftdesk.brokers.fidelity.politeness import Politeness
from ftdesk.brokers.fidelity.research import ResearchModule
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.brokers.fidelity.user_data import UserDataModule
from ftdesk.brokers.fidelity.values import NEW_YORK
from ftdesk.domain.accounts import (
    Account,
    AccountFeature,
    AccrualDetail,
    Balance,
    CashAccrualDetail,
    ClosedLotDetail,
    ClosedPosition,
    HardToBorrowPosition,
    LoanedSecurity,
    LotDetail,
    OptionsSummary,
    Position,
    ShortInsightDetail,
    ShortInsightSeries,
    Transaction,
)
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import AuthRequired, NotFound
from ftdesk.domain.session import BrokerSession, Credentials

log = logging.getLogger(__name__)


class FidelityBroker(OrdersModule, MarketDataModule, ResearchModule, UserDataModule, FidelityModule):
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
    ) -> None:
        self.config = config
        self.clock = clock
        self.router = UpstreamRouter(config.upstream)
        self.beps = beps or BepsConfig()
        # BEPS configures itself from each login (token endpoint, security context); FTSERVICE_BEPS_* override.
        self.account_events: AccountEventFeed = account_events or BepsAccountEventFeed(
            self.beps, router=self.router, clock=clock, login=self
        )
        # Fills and cancels from the alert history while BEPS is down (the account-event hub polls it).
        self.event_fallback = FillsFallback(self._require, clock, interval=fallback_interval)
        self.quote_feed: QuoteFeed = MddsQuoteFeed(cookies=self.cookies, router=self.router, clock=clock)
        self.security = SecurityContext()
        # One set of budgets for the broker, not per login: a re-login loop must not reset them.
        self.politeness = Politeness(
            clock,
            read_rate=config.read_rate,
            read_concurrency=config.read_concurrency,
            order_rate=config.order_rate,
            login_per_minute=config.login_per_minute,
        )
        self._http: FidelityHttp | None = None
        self._login_lock = asyncio.Lock()
        self._accounts: list[Account] | None = None
        self._accounts_at = 0.0
        self._accounts_lock = asyncio.Lock()
        self._preview_leg_prices: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    # --- lifecycle and session ----------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to open before a login: the HTTP session belongs to the login."""

    async def close(self) -> None:
        """Close the HTTP session (without logging out upstream); idempotent."""
        await self._drop_session()

    def cookies(self) -> dict[str, str]:
        """Return the session cookies by name (empty when logged out): what MDDS and BEPS authenticate with."""
        http = self._http
        return {} if http is None or http.closed else http.cookies()

    @property
    def upstream_calls(self) -> int:
        """Return how many HTTP calls the current login session has sent (for diagnostics and tests)."""
        return 0 if self._http is None else self._http.upstream_calls

    async def login(self, credentials: Credentials) -> BrokerSession:
        """Log in from scratch with a fresh cookie jar; raise ``LoginFailed``/``TotpRequired``/``BrokerError``."""
        async with self._login_lock:
            self.politeness.logins.take()  # refused at once when over budget: never a hang
            await self._drop_session()
            http = FidelityHttp(self.config, self.router, self.clock, self.politeness)
            try:
                self.security = await log_in(http, credentials, self.clock)
            except BaseException:
                # A half-finished login is thrown away, as the app does (3.1): the next try starts clean.
                await http.close()
                raise
            self._http = http
            log.info("Logged in to Fidelity (security context %s)", "loaded" if self.security.raw else "unavailable")
            return BrokerSession(
                username=credentials.username, logged_in_at=self.clock.now(), member_id=self.security.member_id
            )

    async def logout(self) -> None:
        """End the upstream session and drop the cookies; idempotent, and never fails on upstream errors."""
        async with self._login_lock:
            http = self._http
            if http is not None and not http.closed:
                with contextlib.suppress(Exception):
                    await log_out(http)
            await self._drop_session()

    def beps_member_id(self) -> str | None:
        """Return the member id (MID) of this login's security context, or None."""
        return self.security.member_id

    async def fetch_beps_token(self) -> BepsToken:
        """Fetch a BEPS token for this login from the token endpoint (or FTSERVICE_BEPS_TOKEN_URL)."""
        return await fetch_token(self._require(), self.clock, self.beps.token_url or TOKEN_URL)

    async def keep_alive(self) -> None:
        """Extend the session; raise ``SessionExpired`` when Fidelity refuses, ``AuthRequired`` when logged out."""
        await extend_session(self._require())

    async def _drop_session(self) -> None:
        http, self._http = self._http, None
        self._accounts = None
        self.security = SecurityContext()
        if http is not None:
            await http.close()

    def _require(self) -> FidelityHttp:
        http = self._http
        if http is None or http.closed:
            raise AuthRequired("Not logged in to Fidelity: log in first")
        return http

    def _today(self) -> date:
        return self.clock.now().astimezone(NEW_YORK).date()

    # --- accounts and portfolio ---------------------------------------------------------------

    async def get_accounts(self) -> list[Account]:
        """Return all accounts (listed at most once per ``accounts_ttl``)."""
        http = self._require()
        async with self._accounts_lock:
            fresh = self.clock.monotonic() - self._accounts_at < self.config.accounts_ttl
            if self._accounts is None or not fresh:
                self._accounts = await acct.fetch_accounts(http)
                self._accounts_at = self.clock.monotonic()
            return list(self._accounts)

    async def get_account(self, acct_num: str) -> Account:
        """Return one account; raise ``NotFound`` for a number the login does not hold."""
        for account in await self.get_accounts():
            if account.acct_num == acct_num:
                return account
        raise NotFound(f"No Fidelity account {acct_num!r} in this login")

    async def get_positions(self, acct_num: str) -> list[Position]:
        """Return an account's positions."""
        return await portfolio.fetch_positions(self._require(), await self.get_account(acct_num))

    async def get_balances(self, acct_num: str) -> Balance:
        """Return an account's balances."""
        return await portfolio.fetch_balances(self._require(), await self.get_account(acct_num))

    async def get_transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return an account's history between two dates (default: the last year), newest first."""
        account = await self.get_account(acct_num)
        return await history.fetch_transactions(self._require(), account, start, end, self._today())

    async def get_options_summary(self, acct_num: str) -> OptionsSummary:
        """Return an account's option positions grouped by underlying."""
        return await portfolio.fetch_options_summary(self._require(), await self.get_account(acct_num))

    async def get_closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol (default: this year to date)."""
        account = await self.get_account(acct_num)
        return await history.fetch_closed_positions(self._require(), account, start, end, self._today())

    async def get_loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return securities on loan."""
        return await lending.fetch_loaned_securities(self._require(), await self.get_account(acct_num))

    async def get_tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots a sale of this symbol could draw from."""
        return await portfolio.fetch_tax_lots(self._require(), await self.get_account(acct_num), symbol.upper())

    async def get_account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's trading capabilities."""
        return await acct.fetch_account_features(self._require(), await self.get_account(acct_num))

    async def get_hard_to_borrow(self, acct_num: str, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return borrow rates and availability."""
        account = await self.get_account(acct_num)
        return await lending.fetch_hard_to_borrow(self._require(), account, [s.upper() for s in symbols])

    async def get_open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position."""
        return await portfolio.fetch_open_lots(self._require(), await self.get_account(acct_num), symbol.upper())

    async def get_short_insights(self, acct_num: str, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return short-interest data."""
        account = await self.get_account(acct_num)
        return await lending.fetch_short_insights(self._require(), account, [s.upper() for s in symbols])

    async def get_short_insight_series(
        self, acct_num: str, symbol: str, metric: str, start: date | None, end: date | None
    ) -> ShortInsightSeries:
        """Return the history of one short-insight metric."""
        account = await self.get_account(acct_num)
        return await lending.fetch_short_insight_series(
            self._require(), account, symbol.upper(), metric, start, end, self._today()
        )

    async def get_accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return margin-interest and dividend accruals."""
        return await lending.fetch_accruals(self._require(), await self.get_account(acct_num))

    async def get_cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return cash-sweep accruals."""
        return await lending.fetch_cash_accruals(self._require(), await self.get_account(acct_num))

    async def get_closed_lots(
        self, acct_num: str, symbol: str, start: date | None, end: date | None
    ) -> list[ClosedLotDetail]:
        """Return closed lots with realised gain and loss."""
        account = await self.get_account(acct_num)
        return await history.fetch_closed_lots(self._require(), account, symbol.upper(), start, end, self._today())
