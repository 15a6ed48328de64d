"""The Fidelity accounts group: account discovery, features, and each account's data.

The account list is listed once per ``FidelityConfig.accounts_ttl`` and reused to check account numbers
(``NotFound``) and to fill the account fields the portfolio requests carry; the per-account requests and
their mapping live in ``portfolio``, ``history`` and ``lending``. The features answer's shape was invented
by the SDK's tests: what it does not say is filled from discovery.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import date
from typing import Any

from ftdesk.brokers.fidelity import history, lending, portfolio
from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.domain.accounts import (
    Account,
    AccountFeature,
    AccountType,
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
    option_level_text,
)
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound

DP = f"{DPSERVICE}/ftgw/dp"
ACCOUNTS_URL = f"{DP}/customer-am-acctnxt/v2/accounts"
FEATURES_URL = f"{DP}/customer-am-feature/v2/accounts/features/get"


# --- account discovery --------------------------------------------------------------------------


async def fetch_accounts(http: FidelityHttp) -> list[Account]:
    """Return every account of the login."""
    body = {
        "acctCategory": "Brokerage,WorkplaceContributions",
        "filters": {
            "returnPreferenceDetail": True,
            "returnAcctTradeAttrDetail": True,
            "returnAcctTypesIndDetail": True,
            "returnAcctLegalAttrDetail": True,
            "returnWorkplacePlanDetail": True,
            "returnGroupDetail": True,
        },
    }
    payload = await http.json("POST", ACCOUNTS_URL, body=body, read=True, what="account list")
    return map_accounts(payload)


def map_accounts(payload: Any) -> list[Account]:
    """Map the account-discovery answer."""
    return [map_account(raw) for raw in v.items(payload, "acctDetails") if v.text(raw.get("acctNum"))]


def map_account(raw: dict[str, Any]) -> Account:
    """Map one account of the discovery answer."""
    kind = v.text_or(raw.get("acctType")).upper()
    sub_type = v.text_or(raw.get("acctSubType")).upper()
    legal = v.text_or(v.first(raw, "acctLegalAttrDetail.legalConstructCode")).upper()
    if kind in ("WPS", "WORKPLACE"):
        acct_type = AccountType.WORKPLACE
    elif kind == "IRA" or "IRA" in legal:
        acct_type = AccountType.ROTH_IRA if "ROTH" in sub_type or "ROTH" in legal else AccountType.IRA
    elif "JOINT" in legal:
        acct_type = AccountType.JOINT
    elif "TRUST" in legal:
        acct_type = AccountType.TRUST
    elif legal == "INDIVIDUAL" or kind == "BROKERAGE":
        acct_type = AccountType.INDIVIDUAL
    else:
        acct_type = AccountType.OTHER
    trade = v.obj(raw, "acctTradeAttrDetail")
    level = v.integer(trade.get("optionLevel")) or 0
    acct_num = v.text_or(raw.get("acctNum"))
    description = v.text(raw.get("acctSubTypeDesc")) or v.text(raw.get("acctSubType")) or kind.title() or "Account"
    return Account(
        acct_num=acct_num,
        acct_type=acct_type,
        name=v.text(v.first(raw, "preferenceDetail.name")) or description,
        description=description,
        margin_ind=v.flag_or(trade.get("mrgnEstb")),
        option_level=option_level_text(level),
        retirement_ind=acct_type in (AccountType.IRA, AccountType.ROTH_IRA, AccountType.WORKPLACE),
        is_default=v.flag_or(v.first(raw, "preferenceDetail.isDefaultAcct")),
        # Workplace plans are managed through the plan, not traded from this desk.
        tradable=acct_type is not AccountType.WORKPLACE,
        raw=raw,
    )


# --- account features (shape invented by the SDK's tests) ----------------------------------------


async def fetch_account_features(http: FidelityHttp, account: Account) -> list[AccountFeature]:
    """Return the account's trading capabilities (falling back on account discovery for unknown fields)."""
    payload = await http.json("POST", FEATURES_URL, body={"acctNums": [account.acct_num]}, read=True,
                              what="account features request")  # fmt: skip
    return [map_account_feature(payload, account)]


def map_account_feature(payload: Any, account: Account) -> AccountFeature:
    """Map the features entry of one account; discovery fills what the entry does not say."""
    entry: dict[str, Any] = {}
    for candidate in v.records_with(payload, "acctNum"):
        if v.text(candidate.get("acctNum")) == account.acct_num:
            entry = candidate
    features = v.obj(entry, "features") or entry

    def feature(*names: str, default: bool) -> bool:
        return v.flag_or(v.first(features, *names), default)

    # The API's level is one digit "0"-"5" (the upstream's own value stays in raw); anything else falls back on
    # the account's level from discovery.
    upstream_level = v.integer(v.first(features, "optionLevel", "optionsLevel", "optionApprovalLevel"))
    level = account.option_level if upstream_level is None else option_level_text(upstream_level)
    return AccountFeature(
        acct_num=account.acct_num,
        acct_type=account.acct_type.value,
        option_level=level,
        margin_ind=feature("margin", "marginInd", "isMargin", default=account.margin_ind),
        short_sell_ind=feature("shortSell", "shortSelling", "shortSellInd", default=account.margin_ind),
        options_ind=feature("options", "optionsInd", "optionTrading", default=level != "0"),
        crypto_ind=feature("crypto", "cryptoInd", default=False),
        directed_trading_ind=feature("directedTrading", "directedTradingInd", default=False),
        penny_stock_ind=feature("pennyStock", "pennyStockInd", default=False),
        raw=entry or None,
    )


class FidelityAccounts:
    """The accounts group: the account list reused for ``ttl`` seconds, and each account's data."""

    def __init__(self, session: FidelitySession, clock: Clock, *, ttl: float) -> None:
        self._session = session
        self._clock = clock
        self._ttl = ttl
        # The list belongs to the login session that listed it: another login lists afresh.
        self._listed: tuple[FidelityHttp, list[Account], float] | None = None
        self._lock = asyncio.Lock()

    def _today(self) -> date:
        return v.new_york_date(self._clock.now())

    async def get_accounts(self) -> list[Account]:
        """Return all accounts (listed at most once per ``ttl``)."""
        http = self._session.require()
        async with self._lock:
            listed = self._listed
            if listed is None or listed[0] is not http or self._clock.monotonic() - listed[2] >= self._ttl:
                listed = (http, await fetch_accounts(http), self._clock.monotonic())
                self._listed = listed
            return list(listed[1])

    async def get_account(self, acct_num: str) -> Account:
        """Return one account; raise ``NotFound`` for a number the login does not hold."""
        for account in await self.get_accounts():
            if account.acct_num == acct_num:
                return account
        raise NotFound(f"No Fidelity account {acct_num!r} in this login")

    async def get_positions(self, acct_num: str) -> list[Position]:
        """Return an account's positions."""
        return await portfolio.fetch_positions(self._session.require(), await self.get_account(acct_num))

    async def get_balances(self, acct_num: str) -> Balance:
        """Return an account's balances."""
        return await portfolio.fetch_balances(self._session.require(), await self.get_account(acct_num))

    async def get_transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return an account's history between two dates (default: the last year), newest first."""
        account = await self.get_account(acct_num)
        return await history.fetch_transactions(self._session.require(), account, start, end, self._today())

    async def get_options_summary(self, acct_num: str) -> OptionsSummary:
        """Return an account's option positions grouped by underlying."""
        return await portfolio.fetch_options_summary(self._session.require(), await self.get_account(acct_num))

    async def get_closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol (default: this year to date)."""
        account = await self.get_account(acct_num)
        return await history.fetch_closed_positions(self._session.require(), account, start, end, self._today())

    async def get_loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return securities on loan."""
        return await lending.fetch_loaned_securities(self._session.require(), await self.get_account(acct_num))

    async def get_tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots a sale of this symbol could draw from."""
        account = await self.get_account(acct_num)
        return await portfolio.fetch_tax_lots(self._session.require(), account, symbol.upper())

    async def get_account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's trading capabilities."""
        return await fetch_account_features(self._session.require(), await self.get_account(acct_num))

    async def get_hard_to_borrow(self, acct_num: str, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return borrow rates and availability."""
        account = await self.get_account(acct_num)
        return await lending.fetch_hard_to_borrow(self._session.require(), account, [s.upper() for s in symbols])

    async def get_open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position."""
        account = await self.get_account(acct_num)
        return await portfolio.fetch_open_lots(self._session.require(), account, symbol.upper())

    async def get_short_insights(self, acct_num: str, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return short-interest data."""
        account = await self.get_account(acct_num)
        return await lending.fetch_short_insights(self._session.require(), account, [s.upper() for s in symbols])

    async def get_short_insight_series(
        self, acct_num: str, symbol: str, metric: str, start: date | None, end: date | None
    ) -> ShortInsightSeries:
        """Return the history of one short-insight metric."""
        account = await self.get_account(acct_num)
        return await lending.fetch_short_insight_series(
            self._session.require(), account, symbol.upper(), metric, start, end, self._today()
        )

    async def get_accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return margin-interest and dividend accruals."""
        return await lending.fetch_accruals(self._session.require(), await self.get_account(acct_num))

    async def get_cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return cash-sweep accruals."""
        return await lending.fetch_cash_accruals(self._session.require(), await self.get_account(acct_num))

    async def get_closed_lots(
        self, acct_num: str, symbol: str, start: date | None, end: date | None
    ) -> list[ClosedLotDetail]:
        """Return closed lots with realised gain and loss."""
        account = await self.get_account(acct_num)
        return await history.fetch_closed_lots(
            self._session.require(), account, symbol.upper(), start, end, self._today()
        )
