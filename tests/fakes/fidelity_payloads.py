"""Sample Fidelity account and portfolio payloads in the captured shapes.

Shapes follow the captures; numbers are mixed as JSON numbers and strings, with the occasional ``"--"``,
as the upstream sends them. Shapes never captured (features, lots, borrow, short
insights, accruals) are our assumption and are listed in docs/fidelity-gaps.md. Dates are relative to
the ``today`` the fake's clock gives (``FakeFidelity.today()``), never to the wall clock.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")

MARGIN = "Z21772945"
INDIVIDUAL = "Z25485019"
CASH_MGMT = "Z33359950"
WORKPLACE = "90295"
ACCOUNT_NUMBERS = (WORKPLACE, CASH_MGMT, INDIVIDUAL, MARGIN)


def unix(day: date) -> int:
    """Return New York midnight of a date as Unix seconds (how the upstream sends dates)."""
    return int(datetime(day.year, day.month, day.day, tzinfo=NEW_YORK).timestamp())


def ecaap(code: int, message: str) -> dict[str, Any]:
    """Return an ECAAP answer: the status envelope with its code and message."""
    return {
        "responseBaseInfo": {
            "sessionTokens": None,
            "status": {"code": code, "message": message, "requestIdentifier": "abc-123", "Context": "login"},
            "links": [],
        },
        "authenticators": [],
        "location": "/dashboard",
        "referenceId": "ref-001",
        "callbacks": [],
    }


MEMBER_ID = "ee629881ce0a8830"
SECURITY_CONTEXT: dict[str, Any] = {
    "employeeIndicator": "NON_EMPLOYEE",
    "personaReferences": [{"realm": "InstPart", "role": "FidCust"}, {"realm": "Retail", "role": "FidCust"}],
    "entitlements": [
        {"value": "true", "display": "ATP", "classification": "access"},
        {"value": "true", "display": "RTQ", "classification": "access"},
        {"value": "true", "display": "ATBT", "classification": "access"},
        {"value": "false", "display": "ProfessionalQuotes", "classification": "access"},
        {"value": "true", "display": "InternationalQuotes", "classification": "access"},
        {"value": "AP012321", "display": "ALL", "classification": "fortress"},
    ],
    "internalSystemIds": [{"type": "MID", "ID": MEMBER_ID}, {"type": "TRACKER_ID", "ID": "68f3ec43fbab51bc"}],
    "errors": [],
}

ACCOUNTS: dict[str, Any] = {
    "acctDetails": [
        {
            "acctNum": WORKPLACE,
            "acctType": "WPS",
            "acctSubType": "Defined Contributions",
            "acctSubTypeDesc": "401(k)",
            "preferenceDetail": {"name": "ACME 401(K)", "isHidden": False, "acctGroupId": "WP", "isDefaultAcct": False},
            "workplacePlanDetail": {
                "marketValue": "133784.61",
                "planTypeName": "401K",
                "planType": "401(k)",
                "vestedAcctValEOD": "133784.61",
                "clientId": "000056732",
                "isVested100Pct": True,
            },
        },
        {
            "acctNum": CASH_MGMT,
            "acctType": "Brokerage",
            "acctSubType": "Cash Management",
            "acctSubTypeDesc": "Brokerage Cash Management",
            "preferenceDetail": {
                "name": "Cash Management",
                "isHidden": False,
                "acctGroupId": "RA",
                "isDefaultAcct": False,
            },
            "acctTradeAttrDetail": {"optionLevel": 0, "mrgnEstb": False, "optionEstb": False},
            "acctLegalAttrDetail": {
                "legalConstructCode": "INDIVIDUAL",
                "offeringCode": "CASHMGMTACCT",
                "lineOfBusinessCode": "PI",
            },
        },
        {
            "acctNum": INDIVIDUAL,
            "acctType": "Brokerage",
            "acctSubType": "Brokerage",
            "acctSubTypeDesc": "Individual Brokerage",
            "preferenceDetail": {"name": "Individual", "isHidden": False, "acctGroupId": "RA", "isDefaultAcct": True},
            "acctTradeAttrDetail": {"optionLevel": "4", "mrgnEstb": False, "optionEstb": True},
            "acctLegalAttrDetail": {
                "legalConstructCode": "INDIVIDUAL",
                "offeringCode": "BROKERAGE",
                "lineOfBusinessCode": "PI",
            },
        },
        {
            "acctNum": MARGIN,
            "acctType": "Brokerage",
            "acctSubType": "Brokerage",
            "acctSubTypeDesc": "Margin Brokerage",
            "preferenceDetail": {"name": "Trading", "isHidden": False, "acctGroupId": "RA", "isDefaultAcct": False},
            "acctTradeAttrDetail": {"optionLevel": 5, "mrgnEstb": True, "optionEstb": True},
            "acctLegalAttrDetail": {
                "legalConstructCode": "INDIVIDUAL",
                "offeringCode": "BROKERAGE",
                "lineOfBusinessCode": "PI",
            },
        },
    ]
}

SPAXX = {
    "symbol": "SPAXX",
    "securityType": "Core",
    "securitySubType": "Fidelity Mutual Fund",
    "securityDescription": "FIDELITY GOVERNMENT MONEY MARKET",
    "cusip": "31617H102",
    "quantity": 4925.02,
    "holdingPct": "51.70",
    "priceDetail": {
        "lastPrice": 1.00,
        "lastPriceChg": 0.00,
        "lastPriceChgPct": "--",
        "closingPrice": 1.00,
        "prevClosePrice": 1.00,
    },
    "marketValDetail": {
        "marketVal": 4925.02,
        "previousMarketVal": 4925.02,
        "totalGainLoss": 4925.02,
        "totalGainLossPct": 0.00,
        "todaysGainLoss": 0.00,
        "todaysGainLossPct": 0.00,
    },
    "costBasisDetail": {"avgCostPerShare": 0.00, "costBasis": 0.00},
}

AAPL = {
    "symbol": "AAPL",
    "securityType": "Equity",
    "securitySubType": "Common Stock",
    "securityDescription": "APPLE INC",
    "cusip": "037833100",
    "quantity": "10.000",
    "holdingPct": 12.50,
    "priceDetail": {
        "lastPrice": "182.50",
        "lastPriceChg": 1.25,
        "lastPriceChgPct": "0.69",
        "closingPrice": 181.25,
        "prevClosePrice": "181.25",
    },
    "marketValDetail": {
        "marketVal": "1,825.00",
        "previousMarketVal": 1812.50,
        "totalGainLoss": 325.00,
        "totalGainLossPct": "21.67",
        "todaysGainLoss": 12.50,
        "todaysGainLossPct": 0.69,
    },
    "costBasisDetail": {"avgCostPerShare": "150.00", "costBasis": 1500.00},
}

UNH_CALL = {
    "symbol": "UNH260618C350",
    "securityType": "Option",
    "securitySubType": "Call Option",
    "securityDescription": "UNH JUN 18 2026 $350 CALL",
    "cusip": "9UNH35000",
    "quantity": 1.0,
    "holdingPct": 0.30,
    "priceDetail": {"lastPrice": 4.65, "lastPriceChg": "-0.35", "lastPriceChgPct": -7.0, "prevClosePrice": 5.00},
    "marketValDetail": {
        "marketVal": 465.00,
        "totalGainLoss": -135.00,
        "totalGainLossPct": -22.5,
        "todaysGainLoss": -35.0,
        "todaysGainLossPct": -7.0,
    },
    "costBasisDetail": {"avgCostPerShare": 6.00, "costBasis": 600.00},
}

LGVN = {
    "symbol": "LGVN",
    "securityType": "Equity",
    "securitySubType": "Common Stock",
    "securityDescription": "LONGEVERON CLASS A",
    "cusip": "54303L203",
    "quantity": 8.0,
    "holdingPct": "100.00",
    "priceDetail": {"lastPrice": 0.93, "lastPriceChg": "0.04", "lastPriceChgPct": 4.49, "prevClosePrice": 0.89},
    "marketValDetail": {
        "marketVal": 7.44,
        "totalGainLoss": "0.32",
        "totalGainLossPct": 4.49,
        "todaysGainLoss": 0.32,
        "todaysGainLossPct": 4.49,
    },
    "costBasisDetail": {"avgCostPerShare": 0.89, "costBasis": "7.12"},
}

POSITIONS_BY_ACCOUNT: dict[str, list[dict[str, Any]]] = {MARGIN: [SPAXX, AAPL, UNH_CALL], INDIVIDUAL: [LGVN]}


def positions(acct_nums: list[str]) -> dict[str, Any]:
    """Return the positions answer for these accounts (no ``positionDetails`` when empty)."""
    details = []
    for acct_num in acct_nums:
        held = POSITIONS_BY_ACCOUNT.get(acct_num, [])
        entry: dict[str, Any] = {
            "acctNum": acct_num,
            "accountPositionCount": len(held),
            "accountGainLossDetail": {
                "totalGainLoss": 4925.02,
                "costBasisTotal": 0.00,
                "accountMarketVal": 9525.27,
                "todaysGainLoss": 0.00,
            },
        }
        if held:
            entry["positionDetails"] = {"positionDetail": held}
        details.append(entry)
    return {
        "position": {
            "portfolioDetail": {
                "portfolioPositionCount": 13,
                "portfolioGainLossDetail": {
                    "totalGainLoss": 19160.62,
                    "totalGainLossPct": 15.05,
                    "costBasisTotal": 127281.18,
                    "portfolioTotalVal": 151042.05,
                    "todaysGainLoss": 517.72,
                    "todaysGainLossPct": 0.34,
                },
            },
            "acctDetails": {"acctDetail": details},
        }
    }


MARGIN_BALANCE: dict[str, Any] = {
    "acctNum": MARGIN,
    "brokerageAcctDetail": {
        "asOfDateTime": 1774912387,
        "addlInfoDetail": {
            "isTrustAccount": False,
            "isMarginAccount": True,
            "isLimitedMarginAccount": False,
            "isPortfolioMarginAccount": False,
            "isMultiMarginAccount": False,
            "hasIntradayActivity": True,
            "hasUnpricedOrder": True,
            "hasMarginCalls": False,
            "hasRealTimeBalances": False,
        },
        "recentBalanceDetail": {
            "asOfDateTime": 1774912387,
            "acctValDetail": {
                "netWorth": 149174.04,
                "netWorthChg": -10648.35,
                "netWorthChgPct": -6.66,
                "marketVal": "149,174.04",
                "marketValChg": -10648.35,
                "marketValChgPct": -6.66,
                "acctEqtyPct": 99.79,
                "hasUnpricedPosition": False,
                "regulatoryNetWorth": 149174.04,
                "loanedSecMktVal": 223.21,
            },
            "cashDetail": {
                "heldInCash": 0.00,
                "coreBalance": "3064.58",
                "creditDebit": -317.61,
                "settledAmt": 3064.58,
                "cshMoneyMkt": 3064.58,
            },
            "buyingPowerDetail": {
                "cash": 3382.19,
                "cashChg": -443.33,
                "margin": "11714.40",
                "marginChg": -1037.33,
                "nonMargin": 3514.32,
                "nonMarginChg": -311.20,
                "dayTrade": 116529.58,
                "regulatoryDayTrade": 116852.25,
                "withoutMarginImpact": 3064.58,
                "withoutMarginImpactChg": -317.61,
                "dayTradeCallAmt": 0.0,
                "cashCmtdToOpenOrder": "0.00",
                "cashMarginCmtdToOpenOrder": 0.0,
            },
            "availableToWithdrawDetail": {"cashOnly": 3064.58, "cashWithMargin": 3064.58, "unsettledDeposit": 0.00},
            "marginDetail": {
                "heldInMargin": 149174.04,
                "heldInMarginChg": -10648.35,
                "creditDebit": -317.61,
                "creditDebitChg": 2682.39,
                "equity": 148856.43,
                "equityPct": 99.79,
                "interestRate": 0.0,
                "interestAccruedMTD": 0.0,
                "interestAccruedDaily": 0.0,
                "isPhantomMarginCallsAddressed": True,
                "cashToCoverMarginCalls": 3382.19,
                "maintenanceDetail": {
                    "houseCallSurplus": 3521.14,
                    "houseCallSurplusChg": -304.38,
                    "exchangeCallSurplus": 114930.58,
                    "exchangeCallSurplusChg": -8303.86,
                    "federalSpecialMemorandumAmt": 133872.56,
                    "federalSpecialMemorandumAmtChg": -311.42,
                    "houseSecurityRequirement": 148774.90,
                },
            },
            "bondDetail": {
                "corporate": 14057.28,
                "corporateChg": -1244.80,
                "municipal": 17571.60,
                "municipalChg": -1556.00,
                "government": 35143.20,
                "governmentChg": -3112.00,
            },
            "shortDetail": {
                "heldInShort": 0.0,
                "heldInShortChg": 0.0,
                "creditDebit": 0.0,
                "creditDebitChg": 0.0,
                "dailyMarkToMarket": 0.0,
                "dailyMarkToMarketChg": 0.0,
            },
            "optionsDetail": {
                "heldInOption": "14575.00",
                "heldInOptionChg": -37630.00,
                "optionInTheMoney": 0.0,
                "optionRequirement": 0.0,
                "cashCoveredPutReserve": 0.0,
                "cashSpreadReserve": 0.0,
            },
            "simplifiedMarginDetail": {
                "netMarketValue": 163749.04,
                "cashAndCredits": 3064.58,
                "isMarginDebtInGoodOrder": False,
                "nigoReasonCodes": ["RESTRICTION_81"],
                "netMarketValueChg": -48278.35,
                "cashAndCreditsChg": -317.61,
            },
        },
    },
}


def cash_balance(acct_num: str) -> dict[str, Any]:
    """Return a cash account's balances entry (recent snapshot only, as captured)."""
    return {
        "acctNum": acct_num,
        "brokerageAcctDetail": {
            "asOfDateTime": 1774912387,
            "addlInfoDetail": {"isMarginAccount": False, "hasRealTimeBalances": True},
            "recentBalanceDetail": {
                "asOfDateTime": 1774912387,
                "acctValDetail": {"netWorth": "9525.27", "marketVal": 9525.27, "netWorthChg": "--"},
                "cashDetail": {"heldInCash": 4600.25, "coreBalance": 4600.25, "settledAmt": "4,600.25"},
                "buyingPowerDetail": {"cash": 4600.25, "cashChg": 0.0, "cashCmtdToOpenOrder": 0.0},
                "availableToWithdrawDetail": {"cashOnly": "4600.25", "cashWithMargin": "--"},
            },
        },
    }


def balances(acct_nums: list[str]) -> dict[str, Any]:
    """Return the balances answer for these accounts."""
    return {"balances": [MARGIN_BALANCE if n == MARGIN else cash_balance(n) for n in acct_nums]}


def option_summary(acct_num: str) -> dict[str, Any]:
    """Return the option-summary answer (the UNH debit spread for the margin account)."""
    if acct_num != MARGIN:
        return {"optionPairing": {"acctDetails": []}}

    def leg(side: str, symbol: str, strike: float, price: float, value: float, gain: float) -> dict[str, Any]:
        return {
            "legBuySellInd": side,
            "legShares": 100.0,
            "legInTheMoneyIndex": "O",
            "legOptionSecurityTypeCode": "CALL",
            "marketValDetail": {"marketVal": value, "totalGainLoss": gain, "totalGainLossPct": "--"},
            "legSecurityDetails": {
                "legSymbol": symbol,
                "legSecurityDescription": f"UNH JUN 18 2026 ${strike:g} CALL",
                "legSymbolExpiryDate": "2026-06-18",
                "legSymbolPCIndex": "C",
                "legSymbolStrike": strike,
                "delShares": 100,
            },
            "legPriceDetail": {
                "legOptionPrice": price,
                "legOptionLastPrice": price,
                "legOptionPriceChg": -0.35,
                "legExpirationDate": "2026-06-18",
                "legExpirationDays": 80,
                "legOptionStrikePrice": strike,
            },
        }

    return {
        "optionPairing": {
            "acctDetails": [
                {
                    "acctDetail": {
                        "acctNum": MARGIN,
                        "cycleDate": "20260328",
                        "cycleTime": "033018",
                        "underlyingCount": 1,
                        "count": 2,
                        "accountGainLossDetail": {
                            "totalCostBasis": 600.0,
                            "totalGainLoss": -205.0,
                            "totalMarketValue": 395.0,
                            "totalGainLossPct": -34.17,
                        },
                        "optionGainLossDetail": {
                            "totalCostBasis": "600.00",
                            "totalGainLoss": -205.0,
                            "totalMarketValue": 395.0,
                        },
                        "underlyingDetails": {
                            "underlyingDetail": [
                                {
                                    "legExpirationDate": "2026-06-18",
                                    "legExpirationDays": 80,
                                    "pairingCount": 1,
                                    "totalGainLoss": -205.0,
                                    "totalMarketValue": 395.0,
                                    "totalCostBasis": 600.0,
                                    "pairingDetails": {
                                        "pairingDetail": [
                                            {
                                                "pairingSecurityDetails": {
                                                    "symbol": "UNH",
                                                    "securityDescription": "UNITEDHEALTH GROUP INC",
                                                    "priceDetail": {
                                                        "ulPrice": "281.20",
                                                        "lastPrice": 281.20,
                                                        "lastPriceChg": -2.1,
                                                        "lastPriceChgPct": -0.74,
                                                    },
                                                },
                                                "optionPairMatchCode": "SPREAD",
                                                "optionPairMatchCodeDescription": "Debit Spread",
                                                "totalGainLoss": -205.0,
                                                "totalMarketValue": 395.0,
                                                "totalCostBasis": 600.0,
                                                "legCount": 2,
                                                "legDetails": {
                                                    "legDetail": [
                                                        leg("B", "UNH260618C350", 350, 4.65, 465.0, -135.0),
                                                        leg("S", "UNH260618C370", 370, 0.70, -70.0, -70.0),
                                                    ]
                                                },
                                            }
                                        ]
                                    },
                                }
                            ]
                        },
                    }
                }
            ]
        }
    }


def transactions(acct_num: str, today: date) -> list[dict[str, Any]]:
    """Return the margin account's history (the captured SPXW sale and deposit, plus a buy), dated from today."""
    if acct_num != MARGIN:
        return []
    sold, deposited, bought = today - timedelta(days=3), today - timedelta(days=40), today - timedelta(days=200)
    return [
        {
            "desc": "YOU SOLD CLOSING TRANSACTION CALL (SPXW) NEW S & P 500 INDEX MAR 30 26 $6420 (100 SHS)",
            "shortDesc": "YOU SOLD CLOSING TRANSACTION",
            "quantity": -1.0,
            "dateDetail": {
                "tradedDate": unix(sold),
                "postedDate": unix(sold),
                "stlmntDate": unix(sold + timedelta(days=1)),
            },
            "securityDetail": {
                "typeCode": "O",
                "typeCodeDesc": "Option",
                "symbol": "SPXW260330C6420",
                "desc": "CALL (SPXW) NEW S & P 500 INDEX MAR 30 26 $6420 (100 SHS)",
                "cusip": "8548449BT",
                "isQuotable": True,
                "optionDetail": {
                    "contractSymbol": "SPXW260330C6420",
                    "expireDate": "2026-03-30",
                    "strikePrice": 6420,
                    "type": "C",
                },
            },
            "amtDetail": {
                "price": 0.12,
                "commission": "0.60",
                "fees": 0.02,
                "interest": 0.0,
                "net": "11.38",
                "principal": 12.0,
            },
            "brokerageDetail": {"tradeTypeCode": "2", "tradeTypeCodeDesc": "Margin", "isCancelled": False},
            "catDetail": {
                "txnTypeCode": "ST",
                "txnTypeDesc": "Security Transaction or Trade",
                "txnCatCode": "IA",
                "txnCatDesc": "Investment Activity",
                "txnSubCatCode": "SL",
                "txnSubCatDesc": "Sell",
            },
        },
        {
            "desc": "DIRECT DEPOSIT ACME CORPPAYROLL (Cash)",
            "shortDesc": "DIRECT DEPOSIT",
            "quantity": 0.0,
            "dateDetail": {"tradedDate": unix(deposited), "postedDate": unix(deposited)},
            "securityDetail": {"typeCode": "C", "typeCodeDesc": "Cash", "symbol": "", "isQuotable": False},
            "amtDetail": {
                "price": "--",
                "commission": 0.0,
                "fees": 0.0,
                "interest": 0.0,
                "net": "2,500.00",
                "principal": 0.0,
            },
            "catDetail": {
                "txnTypeCode": "CT",
                "txnTypeDesc": "Cash Transaction",
                "txnCatCode": "DD",
                "txnCatDesc": "Direct Deposit",
            },
        },
        {
            "desc": "YOU BOUGHT APPLE INC (AAPL) (Margin)",
            "shortDesc": "YOU BOUGHT",
            "quantity": "10",
            "dateDetail": {
                "tradedDate": unix(bought),
                "postedDate": unix(bought),
                "stlmntDate": unix(bought + timedelta(days=1)),
            },
            "securityDetail": {
                "typeCode": "E",
                "typeCodeDesc": "Equity",
                "symbol": "AAPL",
                "desc": "APPLE INC",
                "cusip": "037833100",
            },
            "amtDetail": {
                "price": "150.00",
                "commission": 0.0,
                "fees": 0.0,
                "interest": 0.0,
                "net": -1500.00,
                "principal": -1500.0,
            },
            "brokerageDetail": {"tradeTypeCode": "2", "tradeTypeCodeDesc": "Margin", "isCancelled": False},
            "catDetail": {
                "txnTypeCode": "ST",
                "txnTypeDesc": "Security Transaction or Trade",
                "txnCatCode": "IA",
                "txnCatDesc": "Investment Activity",
                "txnSubCatCode": "BY",
                "txnSubCatDesc": "Buy",
            },
        },
    ]


def closed_positions(acct_num: str) -> dict[str, Any]:
    """Return the closed-positions answer (the SPY sale for the margin account)."""
    rows = []
    if acct_num == MARGIN:
        gain_block = {
            "realizedGain": 45.12,
            "realizedLoss": 0.0,
            "disallowedLoss": 0.0,
            "totalGainLoss": "45.12",
            "unadjustedTotalGainLoss": 45.12,
            "washUnadjustedGainLossDetail": {
                "unadjustedGain": 45.12,
                "unadjustedLoss": 0.0,
                "unadjustedTotalGainLoss": 45.12,
            },
        }
        rows.append(
            {
                "symbol": "SPY",
                "cusip": "78462F103",
                "securityDescription": "STATE STREET SPDR S&P 500 ETF TRUST",
                "securityType": "Stocks/ETFs",
                "quantity": 10.831,
                "proceedsAmt": "7045.12",
                "isAllBasisAvailable": True,
                "isWashSaleAdjusted": False,
                "intradayEligibilityCode": "SUCCESSFUL_RECALC",
                "securityDetail": {"assetId": "110769", "securityShortDescription": "STATE STRE"},
                "costBasisDetail": {"costBasis": 7000.00, "unadjustedCostBasis": 7000.00, "disallowedAmount": "0.000"},
                "longTermGainLossDetail": {**gain_block, "totalGainLoss": "--"},
                "totalGainLossDetail": gain_block,
                "todayGainLossSincePurchase": "0.000",
                "todayGainLossSincePriorClose": "0.000",
            }
        )
    return {
        "closedPosition": {
            "portfolioDetail": {
                "portfolioGainLossDetail": {
                    "shortTermTotalGainLoss": 45.12,
                    "longTermTotalGainLoss": 0.0,
                    "totalGainLoss": 45.12,
                },
                "proceedsAmtTotal": 7045.12,
                "costBasisTotal": 7000.0,
            },
            "acctDetails": {
                "acctDetail": [{"acctNum": acct_num, "closedPositionCount": len(rows), "closedPositionDetails": rows}]
            },
        }
    }


def loaned_securities(acct_num: str) -> dict[str, Any]:
    """Return the loaned-securities answer (strings for numbers, as captured)."""
    contracts = []
    collateral = []
    if acct_num == INDIVIDUAL:
        contracts.append(
            {
                "symbol": "LGVN",
                "cusip": "54303L203",
                "securityDescription": "LONGEVERON CLASS A",
                "rate": "3.735",
                "contractVal": "21",
                "contractQty": 5,
                "priorDayAccrual": "0.01",
                "monthToDateAccrual": "0.03",
            }
        )
        collateral.append({"cusip": "L0C990063", "cusipDesc": "Collateral Deliv to US Bank", "amount": "10142"})
    return {
        "loanedSecurities": {
            "acctDetails": {
                "acctDetail": [
                    {
                        "acctNum": acct_num,
                        "priorDayAccruals": "10.95",
                        "monthToDateAccruals": "1127.28",
                        "priorMonthAccruals": "2.59",
                        "contractDataDetails": {"contractDataDetail": contracts},
                        "collateralDetails": {"collateralDetail": collateral},
                    }
                ]
            }
        }
    }


# Lots per (account, symbol): (lot sequence, quantity, price per share, days held, unrealised gain).
LOTS: dict[tuple[str, str], list[tuple[int, float, float, int, float]]] = {
    (MARGIN, "AAPL"): [(1, 6.0, 140.00, 500, 255.0), (2, 4.0, 165.00, 200, 70.0)],
    (INDIVIDUAL, "LGVN"): [(1, 8.0, 0.89, 20, 0.323)],
}


def tax_lots(acct_num: str, symbol: str, today: date) -> dict[str, Any]:
    """Return the tax-lot answer."""
    details = []
    for seq, qty, price, days, gain in LOTS.get((acct_num, symbol), []):
        details.append(
            {
                "lotSeq": seq,
                "lotQty": qty,
                "specificShrTaxLotAccountingDetail": {
                    "qty": 0.0,
                    "term": "Long" if days > 365 else "Short",
                    "acquisitionPrice": price,
                    "costBasis": round(qty * price, 2),
                    "unrealizedGainLoss": gain,
                    "source": "Fidelity",
                    "washSaleInd": False,
                    "disqualifiedDisplayTypeCode": "0",
                    "eventIdOrig": "",
                    "localTLABasisPerShare": "0.0000",
                    "localTLATotalBasis": "0.0000",
                    "localUnrealizedGainLoss": "0.0000",
                    "eventId": f"1147035522{seq:02d}",
                    "acquisitionDate": unix(today - timedelta(days=days)),
                    "avgCostPerShare": price,
                },
            }
        )
    return {
        "securityDetail": {"symbol": symbol},
        "execQty": 0.0,
        "specificShrTaxLotDetail": {
            "specificShrTaxLotDetails": details,
            "numOfLots": 0,
            "summary": {"numOfLotsTotal": len(details), "numOfLots": 0},
        },
        "acctNum": acct_num,
        "acctTypeCode": 1,
        "lotCurrInd": "false",
    }


def open_lots(acct_num: str, symbol: str, today: date) -> dict[str, Any]:
    """Return an open-lots answer: ASSUMED shape (the tax-lot detail under a position wrapper)."""
    lots = tax_lots(acct_num, symbol, today)["specificShrTaxLotDetail"]["specificShrTaxLotDetails"]
    return {"positionLots": {"acctNum": acct_num, "symbol": symbol, "lotDetails": {"lotDetail": lots}}}


def closed_lots(acct_num: str, symbol: str, today: date) -> dict[str, Any]:
    """Return a closed-lots answer: ASSUMED shape."""
    rows = []
    if (acct_num, symbol) == (MARGIN, "AAPL"):
        rows.append(
            {
                "lotId": "CL1",
                "symbol": "AAPL",
                "lotQty": "2",
                "acquisitionDate": unix(today - timedelta(days=700)),
                "soldDate": unix(today - timedelta(days=30)),
                "costBasis": 260.0,
                "proceedsAmt": "360.00",
                "term": "Long",
                "washSaleInd": False,
            }
        )
    return {"closedLots": {"acctNum": acct_num, "closedLotDetails": rows}}


def hard_to_borrow(symbols: list[str]) -> dict[str, Any]:
    """Return a hard-to-borrow answer: ASSUMED shape."""
    rows = [
        {
            "symbol": s,
            "cusip": "037833100" if s == "AAPL" else "--",
            "borrowRate": "0.25" if s == "AAPL" else 48.5,
            "availableQty": "1,000,000" if s == "AAPL" else 1200,
            "htbInd": s != "AAPL",
            "locateRequiredInd": s != "AAPL",
            "status": "E" if s == "AAPL" else "H",
            "statusDesc": "Easy to borrow" if s == "AAPL" else "Hard to borrow",
        }
        for s in symbols
    ]
    return {"borrowRates": {"securityDetails": rows}}


def short_insights(symbols: list[str]) -> dict[str, Any]:
    """Return a short-insights answer: ASSUMED shape."""
    rows = [
        {
            "symbol": s,
            "shortInterest": "120,500,000",
            "shortInterestRatio": 1.8,
            "daysToCover": "1.6",
            "shortPctOfFloat": 0.79,
            "sharesShort": 120500000,
            "priorSharesShort": "118,200,000",
            "settlementDate": "2026-10-31",
            "borrowRate": 0.25,
            "lendingSupply": "--",
        }
        for s in symbols
    ]
    return {"shortInsights": rows}


def short_series(symbol: str, metric: str, start: date, end: date) -> dict[str, Any]:
    """Return a short-insight time series: ASSUMED shape (twice-monthly points, newest first)."""
    points = []
    day = end
    while day >= start:
        points.append({"date": day.isoformat(), "value": f"{100_000_000 + (end - day).days * 10_000}"})
        day -= timedelta(days=15)
    return {"symbol": symbol, "metric": metric, "timeSeries": {"dataPoints": points}}


def accruals(acct_num: str, today: date) -> dict[str, Any]:
    """Return an accruals answer: ASSUMED shape."""
    rows = []
    if acct_num == MARGIN:
        rows.append(
            {
                "acctNum": acct_num,
                "accrualType": "Margin Interest",
                "accrualAmount": "-3.17",
                "accrualDate": today.isoformat(),
                "description": "MARGIN INTEREST ACCRUED MTD",
                "rate": "12.575",
            }
        )
    return {"accruals": {"acctNum": acct_num, "accrualDetails": rows}}


def cash_accruals(acct_num: str, today: date) -> dict[str, Any]:
    """Return a cash-accruals answer: ASSUMED shape."""
    rows = [
        {
            "acctNum": acct_num,
            "cashAccrualAmount": 1.42,
            "accrualDate": today.isoformat(),
            "description": "SPAXX DIVIDEND ACCRUED MTD",
        }
    ]
    return {"cashAccruals": {"cashAccrualDetails": rows if acct_num != WORKPLACE else []}}


def account_features(acct_nums: list[str]) -> dict[str, Any]:
    """Return the features answer the SDK's tests invented, extended with a few flags."""
    return {
        "accountFeatures": [
            {
                "acctNum": n,
                "features": {
                    "fractionalShares": True,
                    "margin": n == MARGIN,
                    "shortSell": n == MARGIN,
                    "crypto": False,
                },
            }
            for n in acct_nums
        ]
    }
