"""Market-data payloads of the fake Fidelity upstream, in the captured shapes.

chainLite answers XML (as captured), dtmontage JSON wrapped in ``OPTIONS_MONTAGE`` (a lone ``O`` stays an
object), the chart JSONP with string values, time and sales XML (shape assumed: see docs/fidelity-gaps.md),
available markets JSON with numbers as strings and JSON numbers mixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from xml.sax.saxutils import quoteattr
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")


@dataclass(frozen=True)
class Listing:
    """A security the fake quotes."""

    symbol: str
    description: str
    last: float
    cusip: str
    strike_step: float = 0.0  # 0: no options


UNIVERSE = {
    listing.symbol: listing
    for listing in (
        Listing("AAPL", "APPLE INC", 182.50, "037833100", 5.0),
        Listing("QS", "QUANTUMSCAPE CORP CLASS A", 6.85, "74767V109", 1.0),
        Listing("SPY", "STATE STREET SPDR S&P 500 ETF TRUST", 648.56, "78462F103", 5.0),
        Listing("LGVN", "LONGEVERON CLASS A", 0.965, "54303L203"),
        Listing("UNH", "UNITEDHEALTH GROUP INC", 512.30, "91324P102", 10.0),
    )
}


def daily_close(listing: Listing, day: date) -> float:
    """Return a deterministic close that wanders around the listing's last price."""
    n = day.toordinal()
    return round(listing.last * (1 + 0.04 * math.sin(n / 9.0) + 0.01 * math.sin(n * 1.7)), 2)


def expirations(today: date) -> list[date]:
    """Return the next two Friday weeklies and the third Friday of next month."""
    friday = today + timedelta(days=(4 - today.weekday()) % 7 or 7)
    month = date(today.year + (today.month == 12), today.month % 12 + 1, 1)
    third = month + timedelta(days=(4 - month.weekday()) % 7 + 14)
    return [friday, friday + timedelta(days=7), third]


def option_code(root: str, expiration: date, kind: str, strike: float) -> str:
    """Return the compact option symbol without the dash."""
    text = f"{strike:g}"
    return f"{root}{expiration:%y%m%d}{kind}{text}"


def chain_xml(listing: Listing, today: date) -> str:
    """Return chainLite XML: calls and puts by expiration, the last expiration with a single strike."""
    sides = {"CALLS": "C", "PUTS": "P"}
    parts = [
        "<OPTIONCHAIN>",
        f'<BASE ri="{listing.symbol}" err="0" us="{listing.symbol}" fs="{listing.symbol}" st=""/>',
        "<CHAIN>",
    ]
    dates = expirations(today)
    center = round(listing.last / listing.strike_step) * listing.strike_step
    for side, kind in sides.items():
        parts.append(f"<{side}>")
        for index, expiration in enumerate(dates):
            kind_code = "M" if index == len(dates) - 1 else "W"
            strikes = [center] if index == len(dates) - 1 else [center + k * listing.strike_step for k in range(-3, 4)]
            parts.append(f'<EXP_DATE dt="{expiration.isoformat()}">')
            for strike in strikes:
                code = option_code(listing.symbol, expiration, kind, strike)
                parts.append(f'<O s="-{code}" cs="{listing.symbol}" st="{strike:g}" et="{kind_code}"/>')
            parts.append("</EXP_DATE>")
        parts.append(f"</{side}>")
    parts += ["</CHAIN>", "</OPTIONCHAIN>"]
    return "".join(parts)


def unknown_chain_xml(symbol: str) -> str:
    """Return chainLite's answer for a symbol it does not know (an ``err`` code; assumed)."""
    return f'<OPTIONCHAIN><BASE ri={quoteattr(symbol)} err="1" us="" fs="" st=""/></OPTIONCHAIN>'


OPTION_EXCHANGES = [
    ("AM", "NYSE Amex Options Market", "AMEX"),
    ("CB", "Chicago Board Options Exchange", "CBOE"),
    ("PH", "NASDAQ OMX PHLX", "PHLX"),
]
EQUITY_EXCHANGES = [("NQ", "NASDAQ", "NSDQ"), ("NY", "New York Stock Exchange", "NYSE")]


def option_price(listing: Listing, kind: str, strike: float) -> float:
    """Return an intrinsic-plus-time price for an option of the fake."""
    intrinsic = max(0.0, listing.last - strike) if kind == "C" else max(0.0, strike - listing.last)
    return round(intrinsic + listing.last * 0.03 + 0.05, 2)


def montage(symbol: str, price: float, option: tuple[str, date, str, float] | None) -> dict[str, Any]:
    """Return dtmontage JSON: per-exchange quotes around ``price`` (one exchange for equities: a lone ``O``)."""
    exchanges = OPTION_EXCHANGES if option else EQUITY_EXCHANGES[:1]
    rows = []
    for index, (code, name, short) in enumerate(exchanges):
        bid = round(price - 0.04 - 0.02 * index, 2)
        rows.append(
            {
                "se": f"{symbol}.{short[0]}",
                "en": name,
                "ec": code,
                "es": short,
                "b": f"{bid:.2f}",
                "bs": str(100 + 10 * index),
                "a": round(price + 0.05 + 0.01 * index, 2),  # a JSON number beside the strings
                "as": 40 + index,
            }
        )
    base: dict[str, Any] = {"S": symbol, "err": "0", "cs": symbol.lstrip("-"), "fs": symbol.lstrip("-")}
    if option is not None:
        root, expiration, kind, strike = option
        base.update({"cs": root, "fs": root, "ex": expiration.isoformat(), "st": f"{strike:.2f}", "cp": kind})
    return {"OPTIONS_MONTAGE": {"BASE": base, "EXCH_QUOTES": {"O": rows[0] if len(rows) == 1 else rows}}}


def unknown_montage(symbol: str) -> dict[str, Any]:
    """Return dtmontage's answer for an unknown symbol (assumed: an ``err`` code and no quotes)."""
    return {"OPTIONS_MONTAGE": {"BASE": {"S": symbol, "err": "1"}, "EXCH_QUOTES": {}}}


def chart_json(listing: Listing, start: date, end: date, width: str) -> dict[str, Any]:
    """Return the chart's inner JSON (all values strings): daily bars or one day of intraday bars."""
    bars: list[dict[str, str]] = []
    if width in ("D", "W", "M"):
        day = start
        while day <= end:
            if day.weekday() < 5:
                close = daily_close(listing, day)
                previous = daily_close(listing, day - timedelta(days=1))
                bars.append(_bar(f"{day:%Y/%m/%d}-09:30:00", previous, close, 1_000_000 + day.day * 1000))
            day += timedelta(days=1)
    else:
        minutes = int(width)
        moment = datetime(end.year, end.month, end.day, 9, 30)
        price = daily_close(listing, end - timedelta(days=1))
        while moment.hour < 16:
            close = round(price * (1 + 0.001 * math.sin(moment.minute + moment.hour)), 2)
            bars.append(_bar(f"{moment:%Y/%m/%d-%H:%M:%S}", price, close, 10_000))
            price = close
            moment += timedelta(minutes=minutes)
    previous_close = daily_close(listing, end - timedelta(days=1))
    return {
        "Symbol": [
            {
                "Identifier": listing.symbol,
                "Description": listing.description,
                "LastTrade": f"{listing.last:.2f}",
                "TradeDate": f"{end:%m/%d/%Y}",
                "DayOpen": f"{previous_close:.2f}",
                "DayHigh": f"{max(previous_close, listing.last) + 0.5:.2f}",
                "DayLow": f"{min(previous_close, listing.last) - 0.5:.2f}",
                "NetChange": f"{listing.last - previous_close:.2f}",
                "NetChangePercent": f"{(listing.last / previous_close - 1) * 100:.4f}",
                "PreviousClose": f"{previous_close:.2f}",
                "BarList": {"BarRecord": bars[0] if len(bars) == 1 else bars},
            }
        ]
    }


def _bar(stamp: str, opened: float, closed: float, volume: int) -> dict[str, str]:
    return {
        "lt": stamp,
        "op": f"{opened:.2f}",
        "cl": f"{closed:.2f}",
        "hi": f"{max(opened, closed) + 0.3:.2f}",
        "lo": f"{min(opened, closed) - 0.3:.2f}",
        "v": str(volume),
    }


def time_and_sales_xml(listing: Listing, now: datetime, rows: int) -> str:
    """Return time-and-sales XML, oldest first (the adapter sorts): shape assumed, see docs/fidelity-gaps.md."""
    local = now.astimezone(NEW_YORK).replace(tzinfo=None, microsecond=0)
    trades = []
    for index in range(rows, 0, -1):
        moment = local - timedelta(seconds=7 * index)
        price = round(listing.last + 0.01 * ((index * 7) % 11 - 5), 2)
        size = 100 * (1 + index % 5) if index % 4 else 37
        condition = "I" if size < 100 else "F"
        trades.append(
            f'<T tm="{moment:%Y-%m-%d %H:%M:%S}" p="{price:.2f}" sz="{size}" ex="{"QN"[index % 2]}" c="{condition}"/>'
        )
    return f'<TIMEANDSALES><BASE S="{listing.symbol}" err="0"/><TRADES>{"".join(trades)}</TRADES></TIMEANDSALES>'


def unknown_time_and_sales_xml(symbol: str) -> str:
    """Return time and sales for an unknown symbol (assumed like chainLite's ``err``)."""
    return f'<TIMEANDSALES><BASE S={quoteattr(symbol)} err="1"/></TIMEANDSALES>'


_HOURS = {
    "marketOpeningHours": "93000",
    "marketClosingHours": "160000",
    "shortSellOpeningHours": "93000",
    "shortSellClosingHours": "160000",
    "marketOrderOpeningHours": "0",
    "marketOrderClosingHours": "0",
    "marketOrderAcceptFromHours": "0",
    "marketOrderAcceptToHours": "0",
}
_SUPPORTED = {
    "fillOrKillInd": True,
    "immediateOrCancelInd": True,
    "allOrNoneInd": True,
    "limitInd": True,
    "marketInd": True,
    "stopLimitInd": True,
    "shortSellInd": True,
    "cancelReplaceInd": True,
    "peggedInd": False,
    "hiddenInd": False,
}


def available_markets(listing: Listing) -> dict[str, Any]:
    """Return the available-markets answer: AUTO and IEX, with the captured hours and capability flags."""
    return {
        "security": {"symbol": listing.symbol, "availMktCnt": "2", "availShares": None, "cusip": listing.cusip},
        "availableMarkets": [
            {
                "marketplace": "AUTO",
                "routingCode": "#O",
                "name": "AUTO",
                "exchangeSymbol": None,
                "marketHours": _HOURS,
                "orderTypeSupported": _SUPPORTED,
                "displayQuantityMin": "0.00000",
            },
            {
                "marketplace": "IEX",
                "routingCode": "QV",
                "name": "IEX",
                "exchangeSymbol": "IEXG",
                "marketHours": {**_HOURS, "marketOpeningHours": "80000", "marketClosingHours": "155959"},
                "orderTypeSupported": {**_SUPPORTED, "marketInd": False},
                "displayQuantityMin": 0,
            },
        ],
    }


def no_markets(symbol: str) -> dict[str, Any]:
    """Return the answer for a symbol with no destinations (assumed: an empty list)."""
    return {
        "security": {"symbol": symbol, "availMktCnt": 0, "availShares": None, "cusip": None},
        "availableMarkets": [],
    }
