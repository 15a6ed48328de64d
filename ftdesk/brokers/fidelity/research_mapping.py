"""Pure mappers of the research answers (earnings, dividends, autosuggest, analytics, screener, notebooks)."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.values import option_contract
from ftdesk.domain.market import Greeks
from ftdesk.domain.research import (
    AnalyticsLeg,
    AnalyticsResult,
    AutosuggestResult,
    DividendEvent,
    EarningsEvent,
    LegAnalytics,
    NoteDetail,
    ScanDefinition,
    ScreenerResult,
    ScreenerRow,
    Suggestion,
)

CONTRACT_SIZE = 100
_SECURITY_TYPES = MappingProxyType(
    {
        "EQ": "EQUITY",
        "ETP": "ETF",
        "ETF": "ETF",
        "MMF": "MONEY_MARKET",
        "IX": "INDEX",
        "MF": "MUTUAL_FUND",
    }
)


# --- earnings and dividends ---------------------------------------------------------------------


def _sec_symbol(detail: dict[str, Any]) -> str:
    security = v.obj(detail, "secDetail")
    return (v.text(security.get("symbol")) or v.text_or(security.get("requested"))).upper()


def map_earnings(payload: Any, symbols: Sequence[str]) -> list[EarningsEvent]:
    """Map the earnings answer: one event per reported quarter of each asked symbol, oldest first."""
    wanted = set(symbols)
    out: list[EarningsEvent] = []
    for detail in v.items(payload, "earning", "earningDetails"):
        symbol = _sec_symbol(detail)
        if symbol not in wanted:
            continue
        for quarter in v.items(detail, "qtrHistDetails"):
            reported = v.iso_day(quarter.get("reportDate"))
            if reported is None:
                continue
            estimate = v.number(quarter.get("consensusEst"))
            actual = v.number(quarter.get("adjustedEPS"))
            surprise = round((actual - estimate) / abs(estimate) * 100, 2) if estimate and actual is not None else None
            out.append(
                EarningsEvent(
                    symbol=symbol,
                    report_date=reported,
                    fiscal_period=_fiscal_period(quarter),
                    timing=v.text_or(v.first(quarter, "timing", "reportTime")).upper(),
                    eps_estimate=estimate,
                    eps_actual=actual,
                    surprise_pct=surprise,
                    raw=quarter,
                )
            )
    out.sort(key=lambda event: (event.symbol, event.report_date))
    return out


def _fiscal_period(quarter: dict[str, Any]) -> str:
    return f"Q{v.text_or(quarter.get('fiscalQtr'), '?')} {v.text_or(quarter.get('fiscalYr'))}".strip()


def map_dividends(payload: Any, symbols: Sequence[str]) -> list[DividendEvent]:
    """Map the dividends answer: the declared dividend and the history of each asked symbol, newest first."""
    wanted = set(symbols)
    out: list[DividendEvent] = []
    for detail in v.items(payload, "dividend", "dividendDetails"):
        symbol = _sec_symbol(detail)
        if symbol not in wanted:
            continue
        equity = v.obj(detail, "equityDetail")
        yield_pct = v.number_or(equity.get("yldTTM"))
        seen: set[str] = set()
        history = v.items(equity, "divHistDetails")
        frequency = next((v.text(h.get("freqName")) for h in history if v.text(h.get("freqName"))), None)
        declared = {
            "amt": equity.get("amt"),
            "exDate": equity.get("exDivDate"),
            "announceDate": equity.get("announceDate"),
            "freqName": frequency,
        }
        for record in [declared, *history]:
            ex_date = v.iso_day(record.get("exDate"))
            amount = v.number(record.get("amt"))
            if ex_date is None or amount is None or ex_date in seen:
                continue
            seen.add(ex_date)
            out.append(
                DividendEvent(
                    symbol=symbol,
                    ex_date=ex_date,
                    record_date=v.iso_day(record.get("recordDate")) or "",
                    pay_date=v.iso_day(record.get("payDate")) or "",
                    amount=amount,
                    frequency=v.text_or(record.get("freqName")).upper(),
                    yield_pct=yield_pct,
                    raw=record if record is not declared else equity,
                )
            )
    out.sort(key=lambda event: (event.symbol, event.ex_date), reverse=True)
    return out


# --- autosuggest --------------------------------------------------------------------------------


def map_suggestions(payload: Any, query: str) -> AutosuggestResult:
    """Map autosuggest hits in upstream order, an exact symbol match first."""
    wanted = query.strip().upper()
    hits = [
        Suggestion(
            symbol=v.text_or(row.get("symbol")).upper(),
            description=v.text_or(row.get("desc")),
            exchange=v.text_or(row.get("exchange")),
            security_type=_SECURITY_TYPES.get(v.text_or(row.get("type")).upper(), v.text(row.get("type")) or "OTHER"),
        )
        for row in v.items(payload, "quotes", "suggestions")
        if v.text(row.get("symbol"))
    ]
    hits.sort(key=lambda hit: hit.symbol != wanted)  # stable: the upstream's ranking otherwise
    return AutosuggestResult(suggestions=hits)


# --- option position analytics ------------------------------------------------------------------


def analytics_body(symbol: str, legs: Sequence[AnalyticsLeg], prices: Sequence[float]) -> dict[str, Any]:
    """Return the style-D request: one position whose legs carry signed quantities and entry prices."""
    return {
        "underlyingSymbol": symbol,
        "posDetails": [
            [
                {
                    "symbol": leg.symbol.lstrip("-"),
                    "qty": leg.quantity,
                    "price": price,
                    "equity": option_contract(leg.symbol) is None,
                }
                for leg, price in zip(legs, prices, strict=True)
            ]
        ],
        "hvDetail": {"volatilityPeriod": "90"},
        "evalDaysDetail": {"evalAtExpiry": True},
    }


def _greeks(block: dict[str, Any]) -> Greeks | None:
    delta = v.number(block.get("delta"))
    if delta is None:
        return None
    iv = v.number(block.get("iv")) or 0.0
    return Greeks(
        delta=delta,
        gamma=v.number_or(block.get("gamma")),
        theta=v.number_or(block.get("theta")),
        vega=v.number_or(block.get("vega")),
        rho=v.number_or(block.get("rho")),
        implied_volatility=iv / 100 if iv > 3 else iv,  # a percentage (35.2) or a fraction (0.352)
    )


def unbounded(value: Any) -> float | None:
    """Return a bound, or None for ``"Infinity"``/``"-Infinity"`` (unbounded) and missing values."""
    return v.number(value)  # non-finite numbers read as None


def map_analytics(
    payload: Any,
    symbol: str,
    legs: Sequence[AnalyticsLeg],
    prices: Sequence[float],
    underlying_price: float | None,
) -> AnalyticsResult:
    """Map the analytics answer (the last evaluation, at expiry) and the legs it was asked about."""
    evaluations = v.items(payload, "positionsAnalyticsDataDetails")
    evaluation = evaluations[-1] if evaluations else {}
    position = (v.items(evaluation, "positionDetails") or [{}])[0]
    total = v.obj(position, "positionDetail")
    leg_blocks = v.items(position, "legDetails")
    mapped_legs: list[LegAnalytics] = []
    for index, (leg, price) in enumerate(zip(legs, prices, strict=True)):
        contract = option_contract(leg.symbol)
        block = leg_blocks[index] if index < len(leg_blocks) else {}
        mapped_legs.append(
            LegAnalytics(
                symbol=leg.symbol.lstrip("-").upper(),
                quantity=leg.quantity,
                option_type=contract.option_type if contract else None,
                strike=contract.strike if contract else None,
                expiration=contract.expiration.isoformat() if contract else None,
                price=price,
                greeks=_greeks(block),
            )
        )
    net_cost = sum(
        leg.quantity * price * (CONTRACT_SIZE if option_contract(leg.symbol) else 1)
        for leg, price in zip(legs, prices, strict=True)
    )
    breakevens = [b for b in (v.number(x) for x in _as_list(total.get("breakEven"))) if b is not None]
    return AnalyticsResult(
        symbol=symbol,
        underlying_price=underlying_price or 0.0,
        net_cost=round(net_cost, 2),
        legs=mapped_legs,
        pnl_curve=[],
        breakevens=sorted(breakevens),
        max_profit=unbounded(total.get("maxProfit")),
        max_loss=unbounded(total.get("maxLoss")),
        delta=v.number_or(total.get("delta")),
        gamma=v.number_or(total.get("gamma")),
        theta=v.number_or(total.get("theta")),
        vega=v.number_or(total.get("vega")),
        raw=payload if isinstance(payload, dict) else None,
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


# --- screener -----------------------------------------------------------------------------------

# LiveVol display names of the fields a ScreenerRow holds (the call-volume scan's are captured).
_FIELD_NAMES = MappingProxyType(
    {
        "symbol": ("Symbol",),
        "description": ("Company Name", "Name"),
        "price": ("Last", "Price"),
        "change": ("Last Change", "Change"),
        "change_pct": ("Percent Change", "Change %", "% Change"),
        "volume": ("Call Volume", "Volume", "Total Volume", "Put Volume"),
        "iv": ("IV30", "IV", "Implied Volatility"),
        "hv": ("HV30", "HV", "Historical Volatility"),
        "iv_rank": ("IV Rank", "IV30 Rank", "IV Percentile"),
    }
)


def scan_rows(payload: Any) -> list[dict[str, str]]:
    """Return each ``Row`` of an ExecuteScan answer as ``{displayName: value}``."""
    rows: list[dict[str, str]] = []
    for row in v.records_with(payload, "Fields"):
        fields = {
            v.text_or(field.get("displayName")): v.text_or(field.get("value"))
            for field in v.items(row, "Fields", "Field")
        }
        if fields:
            rows.append(fields)
    return rows


def _field(fields: dict[str, str], name: str) -> str | None:
    for display in _FIELD_NAMES[name]:
        if display in fields:
            return fields[display]
    return None


def map_screener_row(fields: dict[str, str]) -> ScreenerRow | None:
    """Map one scan row; None without a symbol. Volatility fields the scan lacks read as 0."""
    symbol = v.text(_field(fields, "symbol"))
    if symbol is None:
        return None
    price = v.number_or(_field(fields, "price"))
    change_pct = v.number(_field(fields, "change_pct"))
    change = v.number(_field(fields, "change"))
    if change_pct is None and change is not None and price - change:
        change_pct = round(change / (price - change) * 100, 4)
    iv = v.number_or(_field(fields, "iv"))
    hv = v.number_or(_field(fields, "hv"))
    return ScreenerRow(
        symbol=symbol.upper(),
        description=v.text_or(_field(fields, "description")),
        price=price,
        change_pct=change_pct or 0.0,
        volume=v.integer(_field(fields, "volume")) or 0,
        iv=iv,
        hv=hv,
        iv_rank=v.number_or(_field(fields, "iv_rank")),
        iv_hv_ratio=round(iv / hv, 4) if hv else 0.0,
    )


def map_screener(payload: Any, scan: ScanDefinition) -> ScreenerResult:
    """Map a scan answer, then apply the definition's criteria, sort and limit (LiveVol scans are fixed)."""
    rows = [row for row in (map_screener_row(fields) for fields in scan_rows(payload)) if row is not None]
    for criterion in scan.criteria:
        if criterion.field not in ScreenerRow.model_fields:
            continue
        rows = [
            row
            for row in rows
            if (criterion.min is None or getattr(row, criterion.field) >= criterion.min)
            and (criterion.max is None or getattr(row, criterion.field) <= criterion.max)
        ]
    if scan.sort_by in ScreenerRow.model_fields:
        rows.sort(key=lambda row: getattr(row, scan.sort_by), reverse=scan.descending)
    return ScreenerResult(
        rows=rows[: scan.limit], total_matches=len(rows), raw=payload if isinstance(payload, dict) else None
    )


# --- notebook (shape assumed) -------------------------------------------------------------------


def map_note(raw: dict[str, Any]) -> NoteDetail | None:
    """Map one note record; None without an id."""
    note_id = v.text(v.first(raw, "noteId", "noteID", "id"))
    if note_id is None:
        return None
    created = v.iso_time(v.first(raw, "createDate", "createTime", "createdDate")) or ""
    return NoteDetail(
        note_id=note_id,
        symbol=v.text_or(raw.get("symbol")).upper(),
        title=v.text_or(raw.get("title")),
        note=v.text_or(v.first(raw, "note", "noteText", "text")),
        channel=v.text(raw.get("channel")) or "ATN",
        create_date=created,
        update_date=v.iso_time(v.first(raw, "updateDate", "updateTime", "modifiedDate")) or created,
        raw=raw,
    )


def map_notes(payload: Any) -> list[NoteDetail]:
    """Map every note in an answer ("no notes" answers carry none)."""
    notes = [map_note(raw) for raw in v.records_with(payload, "noteId", "noteID")]
    return [note for note in notes if note is not None]
