"""Research payloads of the fake Fidelity upstream, in the captured shapes (notebooks assumed).

Numbers mix JSON numbers and strings; lone list items sometimes arrive as objects.
"""

from __future__ import annotations

import base64
import itertools
from datetime import date, timedelta
from typing import Any
from xml.sax.saxutils import quoteattr

from ftdesk.brokers.fidelity.values import option_contract

SECURITIES = {
    "AAPL": ("Common Stock", "037833100"),
    "UAL": ("Common Stock", "910047109"),
    "UNH": ("Common Stock", "91324P102"),
    "KO": ("Common Stock", "191216100"),
}


def sec_detail(symbol: str) -> dict[str, Any]:
    """Return the ``secDetail`` block of an earnings or dividends entry."""
    classification, cusip = SECURITIES[symbol]
    return {"requested": symbol, "classification": classification, "symbol": symbol, "CUSIP": cusip}


def earnings(symbols: list[str], today: date) -> dict[str, Any]:
    """Return the earnings answer: four quarters per known symbol (UAL's first is the captured one)."""
    details = []
    for symbol in symbols:
        if symbol not in SECURITIES:
            continue
        quarters: list[dict[str, Any]] = []
        for back in range(4, 0, -1):
            reported = today - timedelta(days=91 * back)
            quarter = {
                "fiscalQtr": (reported.month - 1) // 3 + 1,
                "fiscalYr": reported.year,
                "reportDate": f"{reported:%m/%d/%Y}",
                "adjustedEPS": round(1.2 + 0.1 * back, 2) if back % 2 else f"{1.2 + 0.1 * back:.2f}",
                "consensusEst": 1.25 + 0.1 * back,
            }
            quarters.append(quarter)
        if symbol == "UAL":
            quarters[0] = {
                "fiscalQtr": 1,
                "fiscalYr": 2024,
                "reportDate": "04/16/2024",
                "adjustedEPS": -0.15,
                "consensusEst": -0.575,
            }
        details.append(
            {
                "secDetail": sec_detail(symbol),
                "qtrHistDetails": {"qtrHistDetail": quarters},
                "epsPrevQtrVsPrevYrQtr": 8.13559,
            }
        )
    return {"earning": {"earningDetails": {"earningDetail": details[0] if len(details) == 1 else details}}}


def dividends(symbols: list[str]) -> dict[str, Any]:
    """Return the dividends answer; UNH carries the captured values, AAPL pays nothing."""
    details = []
    for symbol in symbols:
        if symbol == "UNH":
            details.append(
                {
                    "secDetail": sec_detail("UNH"),
                    "equityDetail": {
                        "amt": 2.21,
                        "announceDate": "02/25/26",
                        "exDivDate": "03/09/26",
                        "yldTTM": "3.412864",
                        "indicatedAnnDiv": 8.84,
                        "divHistDetails": {
                            "divHistDetail": [
                                _dividend("2.1", "06/05/24", "06/25/24", "06/17/24", "Q2", 2024),
                                _dividend(2.1, "02/28/24", "03/19/24", "03/08/24", "Q1", 2024),
                            ]
                        },
                    },
                }
            )
        elif symbol in SECURITIES:
            details.append({"secDetail": sec_detail(symbol), "equityDetail": {"amt": "--", "yldTTM": 0}})
    return {"dividend": {"dividendDetails": {"dividendDetail": details}}}


def _dividend(amount: Any, announce: str, pay: str, ex: str, quarter: str, year: int) -> dict[str, Any]:
    return {
        "amt": amount,
        "announceDate": announce,
        "freqName": "Quarterly",
        "payDate": pay,
        "exDate": ex,
        "recordDate": ex,
        "currency": "USD",
        "type": "Regular",
        "exDateCalQtr": quarter,
        "exDateCalYr": year,
    }


SUGGESTIONS: list[dict[str, Any]] = [
    {"symbol": "S", "cusip": "81730H109", "desc": "Sentinelone Class A", "type": "EQ", "subType": "COM",
     "exchange": "N", "nc": False, "intl": False, "tradeEligible": True, "options": ["Std"]},
    {"symbol": "SPAXX", "cusip": "31617H102", "desc": "FIDELITY GOVERNMENT MONEY MARKET FUND", "type": "MMF",
     "subType": "Govt", "exchange": "Q", "nc": False, "intl": False, "tradeEligible": True},
    {"symbol": ".SPX", "cusip": "648815108", "desc": "S&P 500 INDEX", "type": "IX", "subType": "",
     "exchange": "WI1", "nc": False, "intl": False, "tradeEligible": True, "options": ["Std"]},
    {"symbol": "SPY", "cusip": "78462F103", "desc": "STATE STREET SPDR S&P 500 ETF TRUST", "type": "ETP",
     "subType": "ETF", "exchange": "P", "nc": False, "intl": False, "tradeEligible": True, "options": ["Std"]},
    {"symbol": "AAPLW", "cusip": "000000000", "desc": "APPLE WARRANT (TEST)", "type": "EQ", "subType": "COM",
     "exchange": "Q", "nc": False, "intl": False, "tradeEligible": False},
    {"symbol": "AAPL", "cusip": "037833100", "desc": "APPLE INC", "type": "EQ", "subType": "COM",
     "exchange": "Q", "nc": False, "intl": False, "tradeEligible": True, "options": ["Std"]},
]  # fmt: skip


def autosuggest(query: str) -> dict[str, Any]:
    """Return hits whose symbol starts with, or description contains, the query (the upstream's order)."""
    text = query.upper()
    hits = [s for s in SUGGESTIONS if s["symbol"].startswith(text) or text in s["desc"].upper()]
    return {"quotes": {"count": len(hits), "suggestions": hits}}


def analytics(legs: list[dict[str, Any]], underlying_price: float) -> dict[str, Any]:
    """Return the analytics answer for one position: bounds and breakevens at expiry from the legs' payoffs."""
    calls_long = sum(float(leg["qty"]) for leg in legs if _kind(leg) == "C")
    cost = sum(float(leg["qty"]) * float(leg["price"]) * (1 if leg["equity"] else 100) for leg in legs)
    strikes = sorted({_strike(leg) for leg in legs if not leg["equity"]})
    grid = [0.0, *strikes, (strikes[-1] if strikes else underlying_price) * 3]

    def payoff(price: float) -> float:
        value = 0.0
        for leg in legs:
            qty = float(leg["qty"])
            if leg["equity"]:
                value += qty * price
            elif _kind(leg) == "C":
                value += qty * 100 * max(0.0, price - _strike(leg))
            else:
                value += qty * 100 * max(0.0, _strike(leg) - price)
        return value - cost

    values = [payoff(p) for p in grid]
    unbounded_up = calls_long > 0
    breakevens = []
    for low, high in itertools.pairwise(grid):
        a, b = payoff(low), payoff(high)
        if (a < 0 <= b) or (a >= 0 > b):
            breakevens.append(round(low + (high - low) * (-a) / (b - a), 2))
    greeks = {"delta": 0.55 * calls_long, "theta": "-0.0123", "gamma": 0.021, "vega": "0.154", "rho": 0.03}
    position = {
        "price": underlying_price,
        "profit": 0,
        **greeks,
        "prem": cost,
        "totalValue": cost,
        "probProfit": "0.31",
        "breakEven": breakevens,
        "maxProfit": "Infinity" if unbounded_up else round(max(values), 2),
        "maxLoss": "-Infinity" if calls_long < 0 else round(min(values), 2),
        "maxProfit1sd": [round(max(values) / 2, 2)],
        "maxLoss1sd": [round(min(values) / 2, 2)],
    }
    leg_details = [{"price": leg["price"], **greeks, "iv": "35.2"} for leg in legs]
    return {
        "positionsAnalyticsDataDetails": [
            {"evalDate": "1/21/2028", "positionDetails": [{"positionDetail": position, "legDetails": leg_details}]}
        ]
    }


def _kind(leg: dict[str, Any]) -> str:
    contract = option_contract(leg["symbol"])
    return "" if contract is None else contract.option_type.value[0]


def _strike(leg: dict[str, Any]) -> float:
    contract = option_contract(leg["symbol"])
    return 0.0 if contract is None else contract.strike


def saml_assertion(nonce: str) -> str:
    """Return a base64 SAML assertion (text/plain on digital)."""
    return base64.b64encode(f'<saml:Assertion ID="{nonce}"/>'.encode()).decode()


SCAN_ROWS = [
    ("PRMB", "Primo Brands Corporation", "18.65", "-0.22", "16427", "442", "3717"),
    ("SCO", "ProShares UltraShort Bloomberg Crude Oil", "21.40", "0.85", "12990", "1105", "1175"),
    ("AAPL", "Apple Inc.", "182.50", "1.25", "402115", "380220", "106"),
    ("QS", "QuantumScape Corporation", "6.85", "-0.10", "55012", "30110", "183"),
    ("SPY", "SPDR S&P 500 ETF Trust", "648.56", "16.59", "1201554", "1100230", "109"),
    ("UNH", "UnitedHealth Group Incorporated", "512.30", "-3.10", "60120", "52200", "115"),
]


def scan_xml() -> str:
    """Return the call-volume scan (SCANID 2) as LiveVol's XML."""
    names = ("Symbol", "Company Name", "Last", "Last Change", "Call Volume", "Average Call Volume",
             "Percent Average Call Volume")  # fmt: skip
    rows = []
    for row in SCAN_ROWS:
        fields = "".join(
            f'<Field displayName="{name}" value={quoteattr(value)} descriptionId="{16 + i if i >= 5 else ""}"/>'
            for i, (name, value) in enumerate(zip(names, row, strict=True))
        )
        rows.append(f"<Row><Fields>{fields}</Fields></Row>")
    return f"<Livevol><ExecuteScanResult><ScanResult>{''.join(rows)}</ScanResult></ExecuteScanResult></Livevol>"
