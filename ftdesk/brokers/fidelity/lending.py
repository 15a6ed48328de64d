"""Lending, borrowing and accruals on dpservice: securities on loan, hard-to-borrow rates, short
insights, and margin-interest, dividend and cash accruals.

Only the loaned-securities answer was captured; the other shapes are assumed (docs/fidelity-gaps.md), so
their records are found by the field names they carry anywhere in the answer. Every record keeps ``raw``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DATA_APP_ID, DPSERVICE, DPSERVICE_XQ1, FidelityHttp
from ftdesk.domain.accounts import (
    Account,
    AccrualDetail,
    CashAccrualDetail,
    HardToBorrowPosition,
    LoanedSecurity,
    ShortInsightDetail,
    ShortInsightSeries,
    TimeSeriesPoint,
)

DP = f"{DPSERVICE}/ftgw/dp"
# [DEC] paths whose middle the decompilation summary abbreviated ("..."): the segments are our guess.
LOANED_URL = f"{DP}/retail-am-loanedsecurities/v1/accounts/positions/rates"
HARD_TO_BORROW_URL = f"{DP}/retail-am-hardtoborrow/v1/accounts/positions/rates/borrow"
SHORT_INSIGHTS_URL = f"{DP}/retail-am-shortinsight/v1/accounts/positions/insights"
SHORT_SERIES_URL = f"{DP}/retail-am-shortinsight/api/v1/timeseries"
ACCRUALS_URL = f"{DP}/retail-am-accountaccruals/v2/accounts/accruals"
# Only the decompiled app names this host (an XQ1-looking variant of dpservice).
CASH_ACCRUALS_URL = f"{DPSERVICE_XQ1}/ftgw/dp/retail-am-accountaccruals/v1/accounts/cash/accruals"

# The app sends it to these endpoints; the upstream accepts calls without it.
CL_HEADER = MappingProxyType({"CL": "3"})
ORIGIN_HEADER = MappingProxyType({"fid-originating-app-id": DATA_APP_ID})


# --- loaned securities ----------------------------------------------------------------------------


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
