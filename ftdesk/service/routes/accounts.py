"""Accounts and portfolio: accounts, positions, balances, history, lots, borrow and short data, accruals.

Every path names an account by its number (`{acct}`); an account this login cannot see is `NOT_FOUND`.
Symbols in paths and queries are upper-cased before they reach the brokerage.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ftdesk.domain import errors as e
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
from ftdesk.service.docs.cache_headers import REUSED_ACCOUNT_READ_OPENAPI
from ftdesk.service.routes.common import DateRangeQuery, IsoDate, SymbolsQuery, in_accounts, path_symbol
from ftdesk.service.web.routing import Call, RouteTable

routes = RouteTable(tag="accounts")

_ACCOUNT_ERRORS: tuple[type[e.FtdeskError], ...] = (e.NotFound,)
# Borrow and short figures: CONFLICT (reason SIMULATED_ONLY) while paper trades on Fidelity's market.
_LENDING_ERRORS: tuple[type[e.FtdeskError], ...] = (e.NotFound, e.Conflict)


class TimeseriesQuery(DateRangeQuery):
    """Which short-insight metric, over which dates."""

    metric: str = Field(
        default="shortInterest",
        min_length=1,
        max_length=40,
        description="The series to return: shortInterest (default), daysToCover, shortPctOfFloat, borrowRate or "
        "sharesShort on the paper broker (case-insensitive); the brokerage names the allowed metrics when "
        "it refuses one.",
    )
    start_date: IsoDate | None = Field(
        default=None, description="First settlement date to include, YYYY-MM-DD. Omitted: one year before end_date."
    )


def _acct(call: Call[Any, Any]) -> str:
    return call.path["acct"]


@routes.get("/accounts", summary="All accounts", response=list[Account], needs_session=True)
async def list_accounts(call: Call[None, None]) -> list[Account]:
    """List every account of the login, the default account first.

    Each has `acct_num` (use it in the other `/accounts/{acct}` paths), type, nickname, margin and
    option level.
    """
    return await in_accounts(call, lambda accounts: accounts.get_accounts())


@routes.get("/accounts/{acct}", summary="One account", response=Account, needs_session=True, errors=_ACCOUNT_ERRORS)
async def get_account(call: Call[None, None]) -> Account:
    """Return one account by number."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_account(acct))


@routes.get(
    "/accounts/{acct}/positions",
    summary="Positions",
    response=list[Position],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_positions(call: Call[None, None]) -> list[Position]:
    """List the account's holdings, stocks first then options; `quantity` is negative for a short position.

    Market values sum to the balance's `long_market_value` minus `short_market_value`. In Fidelity mode, while
    account events are live, an identical read within a second may get the same answer, marked with `Age`;
    any fill, order event or order drops it, so it never lacks what the event stream has said.
    """
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_positions(acct))


@routes.get(
    "/accounts/{acct}/balances",
    summary="Balances",
    response=Balance,
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_balances(call: Call[None, None]) -> Balance:
    """Return cash, market values and buying power of the account (margin fields are null on cash accounts)."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_balances(acct))


@routes.get(
    "/accounts/{acct}/transactions",
    summary="Transaction history",
    query=DateRangeQuery,
    response=list[Transaction],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_transactions(call: Call[None, DateRangeQuery]) -> list[Transaction]:
    """List the account's history between `start_date` and `end_date` (trade dates, inclusive), newest first.

    `amount` is the cash effect: positive credit, negative debit. `end_date` before `start_date` is a
    `VALIDATION_ERROR`.
    """
    acct, q = _acct(call), call.query
    return await in_accounts(call, lambda accounts: accounts.get_transactions(acct, q.start_date, q.end_date))


@routes.get(
    "/accounts/{acct}/options-summary",
    summary="Option positions",
    response=OptionsSummary,
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_options_summary(call: Call[None, None]) -> OptionsSummary:
    """Return the account's option positions grouped by underlying, with the strategy each group forms."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_options_summary(acct))


@routes.get(
    "/accounts/{acct}/closed-positions",
    summary="Closed positions",
    query=DateRangeQuery,
    response=list[ClosedPosition],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_closed_positions(call: Call[None, DateRangeQuery]) -> list[ClosedPosition]:
    """Return realised gain and loss per symbol for lots closed between `start_date` and `end_date` (inclusive)."""
    acct, q = _acct(call), call.query
    return await in_accounts(call, lambda accounts: accounts.get_closed_positions(acct, q.start_date, q.end_date))


@routes.get(
    "/accounts/{acct}/loaned-securities",
    summary="Loaned securities",
    response=list[LoanedSecurity],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
)
async def get_loaned_securities(call: Call[None, None]) -> list[LoanedSecurity]:
    """List shares out on loan through fully-paid lending, with rate and month-to-date income."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_loaned_securities(acct))


@routes.get(
    "/accounts/{acct}/tax-lots/{symbol}",
    summary="Tax lots",
    response=list[LotDetail],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_tax_lots(call: Call[None, None]) -> list[LotDetail]:
    """List the lots a sale of this symbol could draw from, oldest first (empty when nothing is held)."""
    acct, symbol = _acct(call), path_symbol(call)
    return await in_accounts(call, lambda accounts: accounts.get_tax_lots(acct, symbol))


@routes.get(
    "/accounts/{acct}/features",
    summary="Account capabilities",
    response=list[AccountFeature],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
)
async def get_account_features(call: Call[None, None]) -> list[AccountFeature]:
    """Return what the account may trade: option level, margin, short selling, options, crypto, penny stocks."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_account_features(acct))


@routes.get(
    "/accounts/{acct}/hard-to-borrow",
    summary="Borrow rates",
    query=SymbolsQuery,
    response=list[HardToBorrowPosition],
    needs_session=True,
    errors=_LENDING_ERRORS,
)
async def get_hard_to_borrow(call: Call[None, SymbolsQuery]) -> list[HardToBorrowPosition]:
    """Return today's borrow rate and shares available to borrow for each of `symbols` (1 to 50), in order.

    `htb_ind` marks hard-to-borrow names and `locate_required_ind` those that need a locate before a
    short sale. An unknown symbol is `NOT_FOUND`.

    With the paper broker on Fidelity's market (`paper_market` `fidelity`) this is refused with `CONFLICT`
    (details `reason` `SIMULATED_ONLY`): the paper world has only the simulation's figures, not Fidelity's.
    """
    acct, symbols = _acct(call), call.query.symbols
    return await in_accounts(call, lambda accounts: accounts.get_hard_to_borrow(acct, symbols))


@routes.get(
    "/accounts/{acct}/lots/{symbol}",
    summary="Open lots of a position",
    response=list[LotDetail],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_open_lots(call: Call[None, None]) -> list[LotDetail]:
    """List the open lots of a position, oldest first; their quantities add up to the position's.

    `term` is `LONG` for lots held over a year. Empty when the account holds none of the symbol.
    """
    acct, symbol = _acct(call), path_symbol(call)
    return await in_accounts(call, lambda accounts: accounts.get_open_lots(acct, symbol))


@routes.get(
    "/accounts/{acct}/short-insights",
    summary="Short interest",
    query=SymbolsQuery,
    response=list[ShortInsightDetail],
    needs_session=True,
    errors=_LENDING_ERRORS,
)
async def get_short_insights(call: Call[None, SymbolsQuery]) -> list[ShortInsightDetail]:
    """Return the latest published short-interest figures for each of `symbols` (1 to 50), in order.

    With the paper broker on Fidelity's market (`paper_market` `fidelity`) this is refused with `CONFLICT`
    (details `reason` `SIMULATED_ONLY`): the paper world has only the simulation's figures, not Fidelity's.
    """
    acct, symbols = _acct(call), call.query.symbols
    return await in_accounts(call, lambda accounts: accounts.get_short_insights(acct, symbols))


@routes.get(
    "/accounts/{acct}/short-insights/{sym}/timeseries",
    summary="Short-insight history",
    query=TimeseriesQuery,
    response=ShortInsightSeries,
    needs_session=True,
    errors=_LENDING_ERRORS,
)
async def get_short_insight_series(call: Call[None, TimeseriesQuery]) -> ShortInsightSeries:
    """Return one short-insight `metric` at each published settlement date between `start_date` and `end_date`.

    The default range is the last year. A metric the brokerage does not know is a `VALIDATION_ERROR`
    whose details list the allowed names.

    With the paper broker on Fidelity's market (`paper_market` `fidelity`) this is refused with `CONFLICT`
    (details `reason` `SIMULATED_ONLY`): the paper world has only the simulation's figures, not Fidelity's.
    """
    acct, symbol, q = _acct(call), path_symbol(call, "sym"), call.query
    return await in_accounts(
        call, lambda accounts: accounts.get_short_insight_series(acct, symbol, q.metric, q.start_date, q.end_date)
    )


@routes.get(
    "/accounts/{acct}/accruals",
    summary="Margin and dividend accruals",
    response=list[AccrualDetail],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
)
async def get_accruals(call: Call[None, None]) -> list[AccrualDetail]:
    """List month-to-date margin interest and dividends declared on shares held (`accrual_type` says which)."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_accruals(acct))


@routes.get(
    "/accounts/{acct}/cash-accruals",
    summary="Cash sweep accruals",
    response=list[CashAccrualDetail],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
)
async def get_cash_accruals(call: Call[None, None]) -> list[CashAccrualDetail]:
    """List this month's daily interest accruals on the cash sweep (core) balance, oldest first."""
    acct = _acct(call)
    return await in_accounts(call, lambda accounts: accounts.get_cash_accruals(acct))


@routes.get(
    "/accounts/{acct}/closed-lots/{symbol}",
    summary="Closed lots",
    query=DateRangeQuery,
    response=list[ClosedLotDetail],
    needs_session=True,
    errors=_ACCOUNT_ERRORS,
)
async def get_closed_lots(call: Call[None, DateRangeQuery]) -> list[ClosedLotDetail]:
    """List the symbol's lots sold between `start_date` and `end_date` (sale dates, inclusive), newest first.

    Each has proceeds, cost basis, realised gain or loss, `term` and the wash-sale flag.
    """
    acct, symbol, q = _acct(call), path_symbol(call), call.query
    return await in_accounts(call, lambda accounts: accounts.get_closed_lots(acct, symbol, q.start_date, q.end_date))
