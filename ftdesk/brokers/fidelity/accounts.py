"""Account discovery (4.1) and account features (4.2) on dpservice.

The account list is what every account-scoped request checks its number against and takes its account
fields from. The features answer's shape was invented by the SDK's tests: what it does not say is filled
from discovery.
"""

from __future__ import annotations

from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.domain.accounts import (
    Account,
    AccountFeature,
    AccountType,
)

DP = f"{DPSERVICE}/ftgw/dp"
ACCOUNTS_URL = f"{DP}/customer-am-acctnxt/v2/accounts"
FEATURES_URL = f"{DP}/customer-am-feature/v2/accounts/features/get"


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
