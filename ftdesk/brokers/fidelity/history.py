"""Account history on dpservice: transactions, closed positions and closed lots ([DEC]).

Each ``fetch_*`` sends one request and maps the answer; every record keeps its upstream payload in ``raw``.
The closed-lots shapes are unknown (docs/fidelity-gaps.md): its records are found by the field names they carry.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import date, timedelta
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.domain.accounts import (
    Account,
    ClosedLotDetail,
    ClosedPosition,
    Term,
    Transaction,
)

DP = f"{DPSERVICE}/ftgw/dp"
TRANSACTIONS_URL = f"{DP}/accountmanagement/transaction/history/v2"
CLOSED_POSITIONS_URL = f"{DP}/customer-am-position/v1/accounts/closedposition"
# [DEC] a path whose middle the decompilation summary abbreviated ("..."): the segments are our guess.
CLOSED_LOTS_URL = f"{DP}/customer-am-position/v1/accounts/closedposition/closedlots"
TRANSACTIONS_DEFAULT_DAYS = 365


# --- transactions ---------------------------------------------------------------------------------


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


# --- closed positions -----------------------------------------------------------------------------


async def fetch_closed_positions(
    http: FidelityHttp, account: Account, start: date | None, end: date | None, today: date
) -> list[ClosedPosition]:
    """Return realised gain and loss per symbol (default: this year to date)."""
    end = end or today
    start = start or date(end.year, 1, 1)
    parameters = {
        "acctDetails": [{"acctNum": account.acct_num, "isRetirementAcct": account.retirement_ind}],
        # MM/DD/YYYY is the date form seen to work live (YYYY-MM-DD appears only in the SDK's docstring).
        "startDate": start.strftime("%m/%d/%Y"),
        "endDate": end.strftime("%m/%d/%Y"),
        "taxYear": None,
        # The only captured date type is YTD (with the dates beside it); another range is its explicit dates
        # alone, dateType null as the app sends unset fields, rather than an invented code.
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


# --- closed lots ([DEC]: shapes assumed) ---------------------------------------------------------


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
