"""Portfolio on dpservice: positions, balances, option summary, tax and open lots.

Each ``fetch_*`` sends one request and maps the answer with a pure ``map_*`` function (unit-tested on the
captured sample payloads). Every record keeps its upstream payload in ``raw``. The open-lots shapes are
unknown (docs/fidelity-gaps.md): lots are read by looking for records carrying the expected field names.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.brokers.fidelity.values import option_contract
from ftdesk.domain.accounts import (
    Account,
    Balance,
    LotDetail,
    OptionLegSummary,
    OptionsSummary,
    OptionType,
    OptionUnderlyingSummary,
    Position,
    SecurityType,
    Term,
)
from ftdesk.domain.base import SharedList

DP = f"{DPSERVICE}/ftgw/dp"
POSITIONS_URL = f"{DP}/position/v2"
OPEN_LOTS_URL = f"{DP}/position/open/lots/v1"
BALANCES_URL = f"{DP}/balance/detail/v2"
OPTION_SUMMARY_URL = f"{DP}/retail-am-optionsummary/v1/accounts/positions/option-summary/get"
TAX_LOTS_URL = f"{DP}/orderentry/taxlot/v1"


def account_detail(account: Account) -> dict[str, Any]:
    """Return the ``acctDetail`` entry positions and balances requests carry for an account."""
    raw = account.raw or {}
    return {
        "acctNum": account.acct_num,
        "acctType": v.text(raw.get("acctType")) or "Brokerage",
        "acctSubType": v.text(raw.get("acctSubType")) or "Brokerage",
        "retirementInd": account.retirement_ind,
    }


# --- positions ------------------------------------------------------------------------------------


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
    # Callers sharing one answer share its mapping, and the web edge serialises the SharedList once for all.
    return await http.mapped_json(
        "POST",
        POSITIONS_URL,
        body={"request": {"parameter": parameter}},
        read=True,
        what="positions request",
        key=("positions", account.acct_num),
        build=lambda payload: SharedList(map_positions(payload, account.acct_num)),
    )


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


# --- balances -------------------------------------------------------------------------------------


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


# --- option summary -------------------------------------------------------------------------------


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


_STRATEGIES = MappingProxyType(
    {"SPREAD": "VERTICAL", "STRADDLE": "STRADDLE", "STRANGLE": "STRANGLE", "CALENDAR": "CALENDAR"}
)


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


# --- lots (tax lots, and the [DEC] lot endpoints) -------------------------------------------------


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
    """Map one lot: the captured tax-lot shape, or the same names at the top level."""
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
