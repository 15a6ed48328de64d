"""Accounts and portfolio on dpservice (upstream reference, sections 4.1-4.9 and the 4.0 index).

Each ``fetch_*`` sends one request and maps the answer with a pure ``map_*`` function (unit-tested on the
reference's sample payloads). Every record keeps its upstream payload in ``raw``. Shapes the reference marks
as unknown (features, open and closed lots, hard-to-borrow, short insights, accruals) are read by looking
for records carrying the expected field names anywhere in the answer; docs/fidelity-gaps.md lists them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DATA_APP_ID, DPSERVICE, DPSERVICE_XQ1, FidelityHttp
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
    OptionContract,
    OptionLegSummary,
    OptionsSummary,
    OptionType,
    OptionUnderlyingSummary,
    Position,
    SecurityType,
    ShortInsightDetail,
    ShortInsightSeries,
    Term,
    TimeSeriesPoint,
    Transaction,
)

DP = f"{DPSERVICE}/ftgw/dp"
ACCOUNTS_URL = f"{DP}/customer-am-acctnxt/v2/accounts"
FEATURES_URL = f"{DP}/customer-am-feature/v2/accounts/features/get"
POSITIONS_URL = f"{DP}/position/v2"
OPEN_LOTS_URL = f"{DP}/position/open/lots/v1"
BALANCES_URL = f"{DP}/balance/detail/v2"
OPTION_SUMMARY_URL = f"{DP}/retail-am-optionsummary/v1/accounts/positions/option-summary/get"
TRANSACTIONS_URL = f"{DP}/accountmanagement/transaction/history/v2"
CLOSED_POSITIONS_URL = f"{DP}/customer-am-position/v1/accounts/closedposition"
# [DEC] paths whose middle the decompilation summary abbreviated ("..."): the segments are our guess.
CLOSED_LOTS_URL = f"{DP}/customer-am-position/v1/accounts/closedposition/closedlots"
LOANED_URL = f"{DP}/retail-am-loanedsecurities/v1/accounts/positions/rates"
HARD_TO_BORROW_URL = f"{DP}/retail-am-hardtoborrow/v1/accounts/positions/rates/borrow"
TAX_LOTS_URL = f"{DP}/orderentry/taxlot/v1"
SHORT_INSIGHTS_URL = f"{DP}/retail-am-shortinsight/v1/accounts/positions/insights"
SHORT_SERIES_URL = f"{DP}/retail-am-shortinsight/api/v1/timeseries"
ACCRUALS_URL = f"{DP}/retail-am-accountaccruals/v2/accounts/accruals"
# Only the decompiled app names this host (an XQ1-looking variant of dpservice).
CASH_ACCRUALS_URL = f"{DPSERVICE_XQ1}/ftgw/dp/retail-am-accountaccruals/v1/accounts/cash/accruals"

CL_HEADER = {"CL": "3"}  # the app sends it to these endpoints (2.1); the upstream accepts calls without it
ORIGIN_HEADER = {"fid-originating-app-id": DATA_APP_ID}
TRANSACTIONS_DEFAULT_DAYS = 365
_OPTION_SYMBOL = re.compile(r"^-?(?P<root>[A-Z][A-Z0-9.]{0,5}?)(?P<ymd>\d{6})(?P<cp>[CP])(?P<strike>\d+(?:\.\d+)?)$")


# --- account discovery (4.1) --------------------------------------------------------------------


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
        option_level=min(max(level, 0), 5),
        retirement_ind=acct_type in (AccountType.IRA, AccountType.ROTH_IRA, AccountType.WORKPLACE),
        is_default=v.flag_or(v.first(raw, "preferenceDetail.isDefaultAcct")),
        # Workplace plans are managed through the plan, not traded from this desk.
        tradable=acct_type is not AccountType.WORKPLACE,
        raw=raw,
    )


def account_detail(account: Account) -> dict[str, Any]:
    """Return the ``acctDetail`` entry positions and balances requests carry for an account."""
    raw = account.raw or {}
    return {
        "acctNum": account.acct_num,
        "acctType": v.text(raw.get("acctType")) or "Brokerage",
        "acctSubType": v.text(raw.get("acctSubType")) or "Brokerage",
        "retirementInd": account.retirement_ind,
    }


# --- positions (4.3) ------------------------------------------------------------------------------


async def fetch_positions(http: FidelityHttp, account: Account) -> list[Position]:
    """Return an account's positions."""
    detail = account_detail(account)
    parameter = {
        "returnSecurityDetail": True,
        "returnAvailabilityStatus": False,
        "returnUnadjustedFields": True,
        "returnPositionMarketValDetail": True,
        "returnAccountGainLossDetail": True,
        "returnPortfolioGainLossDetail": True,
        "returnDistributionDetail": True,
        "externalCustomerID": None,
        "returnAdditionalPositionDetail": True,
        "returnTradingAllowedActionDetail": True,
        "returnSellToTransferEligible": False,
        "returnBasketDetail": False,
        "returnAccountBasketDetail": False,
        "acctDetails": {
            "acctDetail": [
                {
                    "retirementInd": detail["retirementInd"],
                    "tradable": False,
                    "acctNum": account.acct_num,
                    "acctType": detail["acctType"],
                    "acctSubType": detail["acctSubType"],
                    "isTradable": account.tradable,
                    "managedAcctCode": None,
                    "filiSystem": None,
                    "filiProdDesc": None,
                    "filiProdCode": None,
                }
            ]
        },
    }
    payload = await http.json("POST", POSITIONS_URL, body={"request": {"parameter": parameter}}, read=True,
                              what="positions request")  # fmt: skip
    return map_positions(payload, account.acct_num)


def map_positions(payload: Any, acct_num: str) -> list[Position]:
    """Map the positions answer for one account (other accounts in it are ignored)."""
    out: list[Position] = []
    for account in v.items(payload, "position", "acctDetails"):
        if v.text(account.get("acctNum")) not in (acct_num, None):
            continue
        out.extend(map_position(raw, acct_num) for raw in v.items(account, "positionDetails"))
    return out


def security_type(kind: str | None, sub_type: str | None, symbol: str) -> SecurityType:
    """Classify a security from the upstream type and subtype (and the symbol's shape)."""
    kind_u = (kind or "").upper()
    sub_u = (sub_type or "").upper()
    if kind_u == "CORE":
        return SecurityType.CORE
    if "OPTION" in kind_u or kind_u == "O" or option_contract(symbol) is not None:
        return SecurityType.OPTION
    if "ETF" in sub_u or "EXCHANGE TRADED" in sub_u or kind_u == "ETF":
        return SecurityType.ETF
    if "MUTUAL" in kind_u or "MUTUAL" in sub_u or "FUND" in kind_u:
        return SecurityType.MUTUAL_FUND
    if kind_u in ("EQUITY", "STOCK", "STOCKS/ETFS", "E") or "STOCK" in sub_u:
        return SecurityType.EQUITY
    return SecurityType.OTHER


def option_contract(symbol: str) -> OptionContract | None:
    """Parse the compact option symbol of positions and orders (``UNH260618C350``), or None."""
    match = _OPTION_SYMBOL.match(symbol.strip().upper())
    if match is None:
        return None
    ymd = match.group("ymd")
    try:
        expiration = date(2000 + int(ymd[:2]), int(ymd[2:4]), int(ymd[4:]))
    except ValueError:
        return None
    return OptionContract(
        underlying=match.group("root"),
        option_type=OptionType.CALL if match.group("cp") == "C" else OptionType.PUT,
        strike=float(match.group("strike")),
        expiration=expiration,
    )


def map_position(raw: dict[str, Any], acct_num: str) -> Position:
    """Map one ``positionDetail``."""
    symbol = v.text_or(raw.get("symbol")).lstrip("-")
    price = v.obj(raw, "priceDetail")
    market = v.obj(raw, "marketValDetail")
    basis = v.obj(raw, "costBasisDetail")
    kind = security_type(v.text(raw.get("securityType")), v.text(raw.get("securitySubType")), symbol)
    return Position(
        acct_num=acct_num,
        symbol=symbol,
        security_type=kind,
        description=v.text_or(raw.get("securityDescription"), symbol),
        cusip=v.text(raw.get("cusip")),
        quantity=v.number_or(raw.get("quantity")),
        last_price=v.number_or(price.get("lastPrice")),
        last_price_chg=v.number_or(price.get("lastPriceChg")),
        last_price_chg_pct=v.number_or(price.get("lastPriceChgPct")),
        prev_close_price=v.number_or(v.first(price, "prevClosePrice", "closingPrice")),
        market_value=v.number_or(market.get("marketVal")),
        cost_basis=v.number_or(basis.get("costBasis")),
        avg_cost_per_share=v.number_or(basis.get("avgCostPerShare")),
        total_gain_loss=v.number_or(market.get("totalGainLoss")),
        total_gain_loss_pct=v.number_or(market.get("totalGainLossPct")),
        todays_gain_loss=v.number_or(market.get("todaysGainLoss")),
        todays_gain_loss_pct=v.number_or(market.get("todaysGainLossPct")),
        holding_pct=v.number_or(raw.get("holdingPct")),
        option=option_contract(symbol) if kind is SecurityType.OPTION else None,
        raw=raw,
    )


# --- balances (4.4) -------------------------------------------------------------------------------


async def fetch_balances(http: FidelityHttp, account: Account) -> Balance:
    """Return an account's balances."""
    detail = account_detail(account)
    requested = {
        name: True
        for name in (
            "includeAddlInfoDetail",
            "includeAcctValDetail",
            "includeAvailableToWithdrawDetail",
            "includeCashDetail",
            "includeBuyingPowerDetail",
            "includeMarginDetail",
            "includeBondDetail",
            "includeShortDetail",
            "includeOptionsDetail",
            "includeSimplifiedMarginDetail",
        )
    }
    parameter = {
        "filters": {
            "priceTiming": {"includeRecent": True, "includeIntraday": True, "includeClose": True},
            "requestedData": requested,
            "includeGrossLiquidityVal": False,
            "includeDeposits": False,
            "includeDCLoan": False,
            "includeCryptoMarketVal": False,
            "includeAvailForCryptoTransferDetail": False,
        },
        "acctDetails": {
            "acctDetail": [
                {
                    "acctType": detail["acctType"],
                    "acctNum": account.acct_num,
                    "acctSubType": detail["acctSubType"],
                    "hardToBorrow": False,
                    "multiMarginSummaryInd": False,
                    "filiSystem": None,
                    "depositsInd": False,
                    "clientID": None,
                }
            ]
        },
    }
    payload = await http.json("POST", BALANCES_URL, body={"request": {"parameter": parameter}}, read=True,
                              what="balances request")  # fmt: skip
    return map_balance(payload, account.acct_num)


def map_balance(payload: Any, acct_num: str) -> Balance:
    """Map the balances answer: the most recent snapshot (recent, else intraday, else close)."""
    entries = v.items(payload, "balances")
    entry = next((e for e in entries if v.text(e.get("acctNum")) == acct_num), entries[0] if entries else {})
    detail = v.obj(entry, "brokerageAcctDetail")
    info = v.obj(detail, "addlInfoDetail")
    snapshot = (
        v.obj(detail, "recentBalanceDetail")
        or v.obj(detail, "intradayBalanceDetail")
        or v.obj(detail, "closeBalanceDetail")
    )
    value = v.obj(snapshot, "acctValDetail")
    cash = v.obj(snapshot, "cashDetail")
    power = v.obj(snapshot, "buyingPowerDetail")
    withdraw = v.obj(snapshot, "availableToWithdrawDetail")
    margin = v.obj(snapshot, "marginDetail")
    is_margin = v.flag_or(info.get("isMarginAccount")) or bool(margin)
    core = v.number(cash.get("coreBalance"))
    as_of = v.iso_time(snapshot.get("asOfDateTime")) or v.iso_time(detail.get("asOfDateTime")) or ""
    margin_credit_debit = v.number_or(margin.get("creditDebit"))
    return Balance(
        acct_num=acct_num,
        as_of=as_of,
        net_worth=v.number_or(value.get("netWorth")),
        cash=core if core is not None else v.number_or(cash.get("heldInCash")),
        settled_cash=v.number_or(v.first(cash, "settledAmt", "coreBalance")),
        long_market_value=v.number_or(value.get("marketVal")),
        short_market_value=v.number_or(v.first(snapshot, "shortDetail.heldInShort")),
        option_market_value=v.number_or(v.first(snapshot, "optionsDetail.heldInOption")),
        margin_debt=max(0.0, -margin_credit_debit) if is_margin else 0.0,
        margin_equity=v.number(margin.get("equity")) if is_margin else None,
        margin_equity_pct=v.number(margin.get("equityPct")) if is_margin else None,
        maintenance_requirement=v.number_or(v.first(margin, "maintenanceDetail.houseSecurityRequirement")),
        cash_buying_power=v.number_or(power.get("cash")),
        margin_buying_power=v.number(power.get("margin")) if is_margin else None,
        non_margin_buying_power=v.number_or(v.first(power, "nonMargin", "cash")),
        available_to_withdraw=v.number_or(
            v.first(withdraw, "cashWithMargin", "cashOnly") if is_margin else v.first(withdraw, "cashOnly")
        ),
        cash_committed_to_open_orders=v.number_or(power.get("cashCmtdToOpenOrder")),
        raw=entry,
    )


# --- option summary (4.5) -------------------------------------------------------------------------


async def fetch_options_summary(http: FidelityHttp, account: Account) -> OptionsSummary:
    """Return an account's option positions grouped by underlying."""
    parameter = {
        "returnCostBasisDetails": True,
        "returnIntradayDetails": True,
        "view": "EXPIRATION",
        "returnUnpairedPositions": True,
        "acctDetails": {"acctDetail": [{"acctNum": account.acct_num}]},
    }
    payload = await http.json("POST", OPTION_SUMMARY_URL, body={"request": {"parameter": parameter}}, read=True,
                              what="option summary request")  # fmt: skip
    return map_options_summary(payload, account.acct_num)


_STRATEGIES = {"SPREAD": "VERTICAL", "STRADDLE": "STRADDLE", "STRANGLE": "STRANGLE", "CALENDAR": "CALENDAR"}


def map_options_summary(payload: Any, acct_num: str) -> OptionsSummary:
    """Map the option-summary answer (its ``acctDetails`` is a list of ``{"acctDetail": {...}}``)."""
    detail: dict[str, Any] = {}
    for wrapper in v.items(payload, "optionPairing", "acctDetails"):
        candidate = v.obj(wrapper, "acctDetail") or wrapper
        if v.text(candidate.get("acctNum")) == acct_num:
            detail = candidate
    underlyings: list[OptionUnderlyingSummary] = []
    for group in v.items(detail, "underlyingDetails"):
        for pairing in v.items(group, "pairingDetails"):
            underlyings.append(_map_pairing(pairing, group))
    totals = v.obj(detail, "optionGainLossDetail")
    market = v.number(totals.get("totalMarketValue"))
    return OptionsSummary(
        acct_num=acct_num,
        underlyings=underlyings,
        total_market_value=market if market is not None else sum(u.total_market_value for u in underlyings),
        total_cost_basis=v.number_or(totals.get("totalCostBasis")),
        total_gain_loss=v.number_or(totals.get("totalGainLoss")),
        raw=detail or None,
    )


def _map_pairing(pairing: dict[str, Any], group: dict[str, Any]) -> OptionUnderlyingSummary:
    security = v.obj(pairing, "pairingSecurityDetails")
    legs = [_map_leg(leg, group) for leg in v.items(pairing, "legDetails")]
    code = v.text_or(pairing.get("optionPairMatchCode")).upper()
    strategy = _STRATEGIES.get(code) or ("SINGLE" if len(legs) == 1 else "CUSTOM")
    market = v.number(pairing.get("totalMarketValue"))
    return OptionUnderlyingSummary(
        underlying=v.text_or(security.get("symbol")),
        underlying_price=v.number_or(v.first(security, "priceDetail.ulPrice", "ulPrice", "priceDetail.lastPrice")),
        strategy=strategy,
        legs=legs,
        total_market_value=market if market is not None else sum(leg.market_value for leg in legs),
        total_cost_basis=v.number_or(pairing.get("totalCostBasis")),
        total_gain_loss=v.number_or(pairing.get("totalGainLoss")),
    )


def _map_leg(leg: dict[str, Any], group: dict[str, Any]) -> OptionLegSummary:
    security = v.obj(leg, "legSecurityDetails")
    price = v.obj(leg, "legPriceDetail")
    market = v.obj(leg, "marketValDetail")
    symbol = v.text_or(security.get("legSymbol")).lstrip("-")
    contract = option_contract(symbol)
    kind = v.text_or(v.first(leg, "legOptionSecurityTypeCode", "legSecurityDetails.legSymbolPCIndex")).upper()
    option_type = OptionType.PUT if kind.startswith("P") else OptionType.CALL
    shares = v.number_or(leg.get("legShares"))
    per_contract = v.number(security.get("delShares")) or 100.0
    sign = -1.0 if v.text_or(leg.get("legBuySellInd")).upper().startswith("S") else 1.0
    value = v.number_or(market.get("marketVal"))
    gain = v.number_or(market.get("totalGainLoss"))
    expiration = v.iso_day(v.first(price, "legExpirationDate") or v.first(group, "legExpirationDate"))
    return OptionLegSummary(
        symbol=symbol,
        description=v.text_or(security.get("legSecurityDescription"), symbol),
        option_type=option_type,
        strike=v.number_or(
            v.first(security, "legSymbolStrike") or price.get("legOptionStrikePrice"),
            contract.strike if contract else 0.0,
        ),
        expiration=expiration or (contract.expiration.isoformat() if contract else ""),
        days_to_expiration=v.integer(v.first(price, "legExpirationDays") or group.get("legExpirationDays")) or 0,
        # legShares counts shares (100 per contract); the record counts contracts, negative when short.
        quantity=sign * abs(shares) / per_contract,
        last_price=v.number_or(v.first(price, "legOptionLastPrice", "legOptionPrice")),
        market_value=value,
        # Per-leg cost basis is not sent; value minus gain is what the upstream's own figures imply.
        cost_basis=value - gain,
        gain_loss=gain,
        gain_loss_pct=v.number_or(market.get("totalGainLossPct")),
        in_the_money=v.text_or(leg.get("legInTheMoneyIndex")).upper() == "I",
    )


# --- transactions (4.6) ---------------------------------------------------------------------------


async def fetch_transactions(
    http: FidelityHttp, account: Account, start: date | None, end: date | None, today: date
) -> list[Transaction]:
    """Return an account's history between two dates (default: the last year), newest first."""
    end = end or today
    start = start or end - timedelta(days=TRANSACTIONS_DEFAULT_DAYS)
    raw = account.raw or {}
    body = {
        "acctDetails": [
            {"acctType": v.text_or(raw.get("acctType"), "brokerage").lower(), "acctNum": account.acct_num,
             "sysOfRcd": None}
        ],
        "searchCriteriaDetail": {
            "txnType": None,
            "txnCat": None,
            "txnSubCat": None,
            "txnFromDate": v.unix_seconds(start),
            "txnToDate": v.unix_seconds(end + timedelta(days=1)) - 1,
            "securityDetail": None,
            "filterCriteriaDetail": {
                "hasCoreStlmnt": False,
                "hasFrgnTxn": False,
                "hasPortfolioRetirementIncDetail": True,
                "hasOnlyPortfolioRetirementIncDetail": True,
                "hasAcctRetirementIncDetail": True,
                "hasOnlyAcctRetirementIncDetail": True,
                "hasIntradayTxn": False,
                "hasJournaledTxn": False,
                "hasOnlyContributionTxn": True,
                "hasBasketName": True,
            },
        },
    }  # fmt: skip
    payload = await http.json("POST", TRANSACTIONS_URL, body=body, read=True, what="history request")
    rows = map_transactions(payload, account.acct_num)
    # The upstream filters by date already; filtering again keeps the contract if it widens the window.
    return [t for t in rows if start.isoformat() <= t.date[:10] <= end.isoformat()]


def map_transactions(payload: Any, acct_num: str) -> list[Transaction]:
    """Map the history answer, newest first."""
    rows: list[Transaction] = []
    for account in v.items(payload, "acctDetails"):
        if v.text(account.get("acctNum")) not in (acct_num, None):
            continue
        rows.extend(map_transaction(raw, acct_num) for raw in v.items(account, "transactionDetails"))
    rows.sort(key=lambda t: t.date, reverse=True)
    return rows


def _txn_type(raw: dict[str, Any]) -> str:
    category = v.obj(raw, "catDetail")
    sub = v.text_or(category.get("txnSubCatCode")).upper()
    kind = v.text_or(category.get("txnTypeCode")).upper()
    desc = v.text_or(raw.get("desc")).upper()
    option = v.text_or(v.first(raw, "securityDetail.typeCode")).upper() == "O"
    if sub in ("SL", "SELL") or desc.startswith("YOU SOLD"):
        if "SHORT" in desc and not option:
            return "SELL_SHORT"
        return "OPTION_SELL" if option else "SELL"
    if sub in ("BY", "BU", "BUY") or desc.startswith("YOU BOUGHT"):
        if "COVER" in desc and not option:
            return "BUY_TO_COVER"
        return "OPTION_BUY" if option else "BUY"
    for word, name in (("DIVIDEND", "DIVIDEND"), ("INTEREST", "INTEREST"), ("FEE", "FEE")):
        if word in desc:
            return name
    if sub == "DD" or "DEPOSIT" in desc or "CONTRIBUTION" in desc:
        return "DEPOSIT"
    if "WITHDRAWAL" in desc:
        return "WITHDRAWAL"
    label = v.text(category.get("txnSubCatDesc")) or v.text(category.get("txnTypeDesc")) or kind or "OTHER"
    return re.sub(r"[^A-Z0-9]+", "_", label.upper()).strip("_") or "OTHER"


def map_transaction(raw: dict[str, Any], acct_num: str) -> Transaction:
    """Map one history entry; its id is a digest of the entry, as the upstream sends none."""
    dates = v.obj(raw, "dateDetail")
    amounts = v.obj(raw, "amtDetail")
    security = v.obj(raw, "securityDetail")
    digest = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]
    symbol = v.text(security.get("symbol"))
    return Transaction(
        txn_id=f"F{digest}",
        acct_num=acct_num,
        date=v.iso_day(v.first(dates, "tradedDate", "postedDate")) or "",
        settle_date=v.iso_day(dates.get("stlmntDate")),
        txn_type=_txn_type(raw),
        description=v.text_or(v.first(raw, "desc", "shortDesc")),
        symbol=symbol.lstrip("-") if symbol else None,
        quantity=v.number(raw.get("quantity")),
        price=v.number(amounts.get("price")),
        amount=v.number_or(amounts.get("net")),
        commission=v.number_or(amounts.get("commission")),
        fees=v.number_or(amounts.get("fees")),
        raw=raw,
    )


# --- closed positions (4.7) -----------------------------------------------------------------------


async def fetch_closed_positions(
    http: FidelityHttp, account: Account, start: date | None, end: date | None, today: date
) -> list[ClosedPosition]:
    """Return realised gain and loss per symbol (default: this year to date)."""
    end = end or today
    start = start or date(end.year, 1, 1)
    parameters = {
        "acctDetails": [{"acctNum": account.acct_num, "isRetirementAcct": account.retirement_ind}],
        # MM/DD/YYYY is the form the reference saw work live (4.7).
        "startDate": start.strftime("%m/%d/%Y"),
        "endDate": end.strftime("%m/%d/%Y"),
        "taxYear": None,
        # The only captured date type is YTD (with the dates beside it); another range is its explicit dates
        # alone, dateType null as the app sends unset fields, rather than an invented code (4.7).
        "dateType": "YTD" if start == date(end.year, 1, 1) and end == today else None,
        "isExcludeWashSales": False,
    }
    payload = await http.json("POST", CLOSED_POSITIONS_URL, body={"request": {"parameters": parameters}}, read=True,
                              what="closed positions request")  # fmt: skip
    return map_closed_positions(payload, account.acct_num)


def map_closed_positions(payload: Any, acct_num: str) -> list[ClosedPosition]:
    """Map the closed-positions answer."""
    out: list[ClosedPosition] = []
    for account in v.items(payload, "closedPosition", "acctDetails"):
        if v.text(account.get("acctNum")) not in (acct_num, None):
            continue
        for raw in v.items(account, "closedPositionDetails"):
            basis = v.obj(raw, "costBasisDetail")
            total = v.number_or(v.first(raw, "totalGainLossDetail.totalGainLoss"))
            long_term = v.number_or(v.first(raw, "longTermGainLossDetail.totalGainLoss"))
            cost = v.number_or(basis.get("costBasis"))
            symbol = v.text_or(raw.get("symbol"))
            out.append(
                ClosedPosition(
                    acct_num=acct_num,
                    symbol=symbol,
                    description=v.text_or(raw.get("securityDescription"), symbol),
                    quantity=v.number_or(raw.get("quantity")),
                    proceeds=v.number_or(raw.get("proceedsAmt")),
                    cost_basis=cost,
                    gain_loss=total,
                    gain_loss_pct=round(total / cost * 100, 4) if cost else 0.0,
                    # Only total and long-term blocks are sent per position; short term is the rest.
                    short_term_gain_loss=total - long_term,
                    long_term_gain_loss=long_term,
                    wash_sale_disallowed=v.number_or(basis.get("disallowedAmount")),
                    last_closed_date=v.iso_day(v.first(raw, "closedDate", "lastClosedDate", "soldDate")) or "",
                    raw=raw,
                )
            )
    return out


# --- loaned securities (4.8) ----------------------------------------------------------------------


async def fetch_loaned_securities(http: FidelityHttp, account: Account) -> list[LoanedSecurity]:
    """Return securities on loan."""
    body = {"request": {"parameters": {"acctDetails": [{"acctNum": account.acct_num}]}}}
    payload = await http.json("POST", LOANED_URL, body=body, headers=CL_HEADER, read=True, what="loans request")
    return map_loaned_securities(payload, account.acct_num)


def map_loaned_securities(payload: Any, acct_num: str) -> list[LoanedSecurity]:
    """Map the loaned-securities answer."""
    out: list[LoanedSecurity] = []
    for account in v.items(payload, "loanedSecurities", "acctDetails"):
        if v.text(account.get("acctNum")) not in (acct_num, None):
            continue
        for raw in v.items(account, "contractDataDetails"):
            out.append(
                LoanedSecurity(
                    acct_num=acct_num,
                    symbol=v.text_or(raw.get("symbol")),
                    quantity=v.number_or(raw.get("contractQty")),
                    rate=v.number_or(raw.get("rate")),
                    market_value=v.number_or(raw.get("contractVal")),
                    loan_date=v.iso_day(v.first(raw, "loanDate", "contractDate")) or "",
                    income_mtd=v.number_or(raw.get("monthToDateAccrual")),
                    raw=raw,
                )
            )
    return out


# --- lots (4.9 and the [DEC] lot endpoints) -------------------------------------------------------


async def fetch_tax_lots(http: FidelityHttp, account: Account, symbol: str) -> list[LotDetail]:
    """Return the lots a sale of ``symbol`` could draw from."""
    body = {"holdingTypeCode": "_1", "acctNum": account.acct_num, "securityDetail": {"symbol": symbol}}
    payload = await http.json("POST", TAX_LOTS_URL, body=body, read=True, what="tax lots request")
    rows = v.items(payload, "specificShrTaxLotDetail", "specificShrTaxLotDetails")
    return [map_lot(raw, symbol) for raw in rows]


async def fetch_open_lots(http: FidelityHttp, account: Account, symbol: str) -> list[LotDetail]:
    """Return the open lots of a position (request and answer shapes assumed: docs/fidelity-gaps.md)."""
    body = {"acctNum": account.acct_num, "securityDetail": {"symbol": symbol}}
    payload = await http.json("POST", OPEN_LOTS_URL, body=body, read=True, what="open lots request")
    return [map_lot(raw, symbol) for raw in v.records_with(payload, "lotQty", "lotSeq", "lotId")]


def map_lot(raw: dict[str, Any], symbol: str | None) -> LotDetail:
    """Map one lot: the tax-lot shape of 4.9, or the same names at the top level."""
    accounting = v.obj(raw, "specificShrTaxLotAccountingDetail") or raw
    quantity = v.number_or(v.first(raw, "lotQty", "quantity", "qty"))
    cost = v.number_or(v.first(accounting, "costBasis", "totalCost"))
    per_share = v.number(v.first(accounting, "avgCostPerShare", "acquisitionPrice", "costPerShare"))
    if per_share is None:
        per_share = cost / quantity if quantity else 0.0
    gain = v.number_or(v.first(accounting, "unrealizedGainLoss", "gainLoss"))
    market = v.number(v.first(accounting, "marketVal", "marketValue"))
    term = v.text_or(v.first(accounting, "term", "termCode")).upper()
    return LotDetail(
        lot_id=v.text_or(v.first(accounting, "eventId", "lotId") or raw.get("lotSeq"), "0"),
        acquired_date=v.iso_day(v.first(accounting, "acquisitionDate", "acquiredDate")) or "",
        quantity=quantity,
        cost_basis=cost,
        cost_per_share=per_share,
        market_value=market if market is not None else cost + gain,
        gain_loss=gain,
        gain_loss_pct=round(gain / cost * 100, 4) if cost else 0.0,
        term=Term.LONG if term.startswith("L") else Term.SHORT,
        symbol=v.text(v.first(raw, "symbol", "securityDetail.symbol")) or symbol,
        raw=raw,
    )


async def fetch_closed_lots(
    http: FidelityHttp, account: Account, symbol: str, start: date | None, end: date | None, today: date
) -> list[ClosedLotDetail]:
    """Return closed lots with realised gain and loss (shapes assumed: docs/fidelity-gaps.md)."""
    end = end or today
    start = start or date(end.year, 1, 1)
    parameters = {
        "acctDetails": [{"acctNum": account.acct_num, "isRetirementAcct": account.retirement_ind}],
        "securityDetail": {"symbol": symbol},
        "startDate": start.strftime("%m/%d/%Y"),
        "endDate": end.strftime("%m/%d/%Y"),
    }
    payload = await http.json("POST", CLOSED_LOTS_URL, body={"request": {"parameters": parameters}}, read=True,
                              what="closed lots request")  # fmt: skip
    out: list[ClosedLotDetail] = []
    for raw in v.records_with(payload, "lotQty", "proceedsAmt", "soldDate"):
        cost = v.number_or(v.first(raw, "costBasis", "costBasisDetail.costBasis"))
        proceeds = v.number_or(v.first(raw, "proceedsAmt", "proceeds"))
        gain = v.number(v.first(raw, "gainLoss", "totalGainLoss", "totalGainLossDetail.totalGainLoss"))
        gain = proceeds - cost if gain is None else gain
        term = v.text_or(v.first(raw, "term", "termCode")).upper()
        out.append(
            ClosedLotDetail(
                lot_id=v.text_or(v.first(raw, "lotId", "eventId", "lotSeq"), "0"),
                symbol=v.text(raw.get("symbol")) or symbol,
                quantity=v.number_or(v.first(raw, "lotQty", "quantity")),
                acquired_date=v.iso_day(v.first(raw, "acquisitionDate", "acquiredDate")) or "",
                sold_date=v.iso_day(v.first(raw, "soldDate", "closedDate")) or "",
                cost_basis=cost,
                proceeds=proceeds,
                gain_loss=gain,
                gain_loss_pct=round(gain / cost * 100, 4) if cost else 0.0,
                term=Term.LONG if term.startswith("L") else Term.SHORT,
                wash_sale_ind=v.flag_or(v.first(raw, "washSaleInd", "isWashSaleAdjusted")),
                raw=raw,
            )
        )
    return out


# --- borrow, short insights ([DEC]: shapes assumed) -----------------------------------------------


async def fetch_hard_to_borrow(
    http: FidelityHttp, account: Account, symbols: Sequence[str]
) -> list[HardToBorrowPosition]:
    """Return borrow rates and availability per symbol."""
    parameters = {"acctNum": account.acct_num, "securityDetails": [{"symbol": s} for s in symbols]}
    payload = await http.json("POST", HARD_TO_BORROW_URL, body={"request": {"parameters": parameters}},
                              headers=CL_HEADER, read=True, what="hard-to-borrow request")  # fmt: skip
    out: list[HardToBorrowPosition] = []
    for raw in v.records_with(payload, "symbol"):
        htb = v.flag(v.first(raw, "htbInd", "hardToBorrowInd", "isHardToBorrow"))
        out.append(
            HardToBorrowPosition(
                symbol=v.text_or(raw.get("symbol")),
                cusip=v.text_or(raw.get("cusip")),
                borrow_rate=v.number_or(v.first(raw, "borrowRate", "rate")),
                available_qty=v.number_or(v.first(raw, "availableQty", "availQty", "quantity")),
                htb_ind=bool(htb),
                locate_required_ind=v.flag_or(v.first(raw, "locateRequiredInd", "locateRequired")),
                status=v.text_or(v.first(raw, "status", "statusCode")),
                status_desc=v.text_or(v.first(raw, "statusDesc", "statusDescription")),
                raw=raw,
            )
        )
    return out


async def fetch_short_insights(
    http: FidelityHttp, account: Account, symbols: Sequence[str]
) -> list[ShortInsightDetail]:
    """Return short-interest figures per symbol."""
    body = {"acctNum": account.acct_num, "symbols": list(symbols)}
    payload = await http.json("POST", SHORT_INSIGHTS_URL, body=body, headers=ORIGIN_HEADER, read=True,
                              what="short insights request")  # fmt: skip
    out: list[ShortInsightDetail] = []
    for raw in v.records_with(payload, "symbol"):
        out.append(
            ShortInsightDetail(
                symbol=v.text_or(raw.get("symbol")),
                short_interest=v.number_or(v.first(raw, "shortInterest")),
                short_interest_ratio=v.number_or(v.first(raw, "shortInterestRatio")),
                days_to_cover=v.number_or(v.first(raw, "daysToCover")),
                short_pct_of_float=v.number_or(v.first(raw, "shortPctOfFloat", "shortInterestPctFloat")),
                shares_short=v.number_or(v.first(raw, "sharesShort")),
                prior_shares_short=v.number_or(v.first(raw, "priorSharesShort")),
                settlement_date=v.iso_day(v.first(raw, "settlementDate")) or "",
                borrow_rate=v.number_or(v.first(raw, "borrowRate")),
                lending_supply=v.number_or(v.first(raw, "lendingSupply")),
                raw=raw,
            )
        )
    return out


async def fetch_short_insight_series(
    http: FidelityHttp, account: Account, symbol: str, metric: str, start: date | None, end: date | None, today: date
) -> ShortInsightSeries:
    """Return the history of one short-insight metric, oldest first."""
    end = end or today
    start = start or end - timedelta(days=365)
    body = {"acctNum": account.acct_num, "symbol": symbol, "metric": metric,
            "startDate": start.isoformat(), "endDate": end.isoformat()}  # fmt: skip
    payload = await http.json("POST", SHORT_SERIES_URL, body=body, headers=ORIGIN_HEADER, read=True,
                              what="short insight series request")  # fmt: skip
    points: list[TimeSeriesPoint] = []
    for raw in v.records_with(payload, "date", "asOfDate"):
        when = v.iso_day(v.first(raw, "date", "asOfDate"))
        value = v.number(v.first(raw, "value", metric))
        if when is not None and value is not None and start.isoformat() <= when <= end.isoformat():
            points.append(TimeSeriesPoint(date=when, value=value))
    points.sort(key=lambda p: p.date)
    return ShortInsightSeries(symbol=symbol, metric=metric, points=points,
                              raw=payload if isinstance(payload, dict) else None)  # fmt: skip


# --- accruals ([DEC]: shapes assumed) -------------------------------------------------------------


async def fetch_accruals(http: FidelityHttp, account: Account) -> list[AccrualDetail]:
    """Return margin-interest and dividend accruals."""
    body = {"acctNums": [account.acct_num]}
    payload = await http.json("POST", ACCRUALS_URL, body=body, headers=ORIGIN_HEADER, read=True,
                              what="accruals request")  # fmt: skip
    out: list[AccrualDetail] = []
    for raw in v.records_with(payload, "accrualAmount", "accrualAmt", "amount"):
        if v.text(raw.get("acctNum")) not in (account.acct_num, None):
            continue
        symbol = v.text(raw.get("symbol"))
        out.append(
            AccrualDetail(
                acct_num=account.acct_num,
                accrual_type=v.text_or(v.first(raw, "accrualType", "type"), "OTHER").upper(),
                accrual_amount=v.number_or(v.first(raw, "accrualAmount", "accrualAmt", "amount")),
                accrual_date=v.iso_day(v.first(raw, "accrualDate", "date")) or "",
                description=v.text_or(v.first(raw, "description", "desc")),
                symbol=symbol,
                rate=v.number_or(v.first(raw, "rate", "interestRate")),
                raw=raw,
            )
        )
    return out


async def fetch_cash_accruals(http: FidelityHttp, account: Account) -> list[CashAccrualDetail]:
    """Return cash-sweep accruals."""
    body = {"acctNums": [account.acct_num]}
    payload = await http.json("POST", CASH_ACCRUALS_URL, body=body, headers=ORIGIN_HEADER, read=True,
                              what="cash accruals request")  # fmt: skip
    out: list[CashAccrualDetail] = []
    for raw in v.records_with(payload, "cashAccrualAmount", "accrualAmount", "amount"):
        if v.text(raw.get("acctNum")) not in (account.acct_num, None):
            continue
        out.append(
            CashAccrualDetail(
                acct_num=account.acct_num,
                cash_accrual_amount=v.number_or(v.first(raw, "cashAccrualAmount", "accrualAmount", "amount")),
                accrual_date=v.iso_day(v.first(raw, "accrualDate", "date")) or "",
                description=v.text_or(v.first(raw, "description", "desc")),
                raw=raw,
            )
        )
    return out


# --- account features (4.2: shape invented by the SDK's tests) -----------------------------------


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

    level = v.text(v.first(features, "optionLevel", "optionsLevel", "optionApprovalLevel"))
    return AccountFeature(
        acct_num=account.acct_num,
        acct_type=account.acct_type.value,
        option_level=level or str(account.option_level),
        margin_ind=feature("margin", "marginInd", "isMargin", default=account.margin_ind),
        short_sell_ind=feature("shortSell", "shortSelling", "shortSellInd", default=account.margin_ind),
        options_ind=feature("options", "optionsInd", "optionTrading", default=account.option_level > 0),
        crypto_ind=feature("crypto", "cryptoInd", default=False),
        directed_trading_ind=feature("directedTrading", "directedTradingInd", default=False),
        penny_stock_ind=feature("pennyStock", "pennyStockInd", default=False),
        raw=entry or None,
    )
