"""Tricky research mappings: Infinity bounds, lifted dividend fields, scan rows, notes."""

from __future__ import annotations

from ftdesk.brokers.fidelity import research_mapping as rm
from ftdesk.brokers.fidelity.market_data_parsing import xml_tree
from ftdesk.domain.research import AnalyticsLeg, ScanDefinition

CAPTURED_ANALYTICS = {"positionsAnalyticsDataDetails": [{"evalDate": "1/21/2028", "positionDetails": [{
    "positionDetail": {"delta": 0.1, "gamma": "0.02", "theta": -0.01, "vega": 0.05, "breakEven": [7.08],
                       "maxProfit": "Infinity", "maxLoss": -8.0},
    "legDetails": [{"delta": 0.4, "iv": 0.61}, {"delta": "-0.3"}]}]}]}  # fmt: skip


def test_infinity_means_unbounded_and_legs_are_parsed_from_symbols() -> None:
    legs = [AnalyticsLeg(symbol="QS280121C7", quantity=1, price=0.08), AnalyticsLeg(symbol="QS280121C7", quantity=-1)]
    result = rm.map_analytics(CAPTURED_ANALYTICS, "QS", legs, [0.08, 0.0], 6.85)
    assert result.max_profit is None and result.max_loss == -8.0 and result.breakevens == [7.08]
    assert result.legs[0].strike == 7.0 and result.legs[0].expiration == "2028-01-21"
    assert result.legs[0].greeks is not None and result.legs[0].greeks.implied_volatility == 0.61
    assert result.net_cost == 8.0 and result.gamma == 0.02


def test_captured_scan_xml_rows() -> None:
    xml = ('<Livevol><ExecuteScanResult><ScanResult><Row><Fields>'
           '<Field displayName="Symbol" value="PRMB" descriptionId=""/>'
           '<Field displayName="Company Name" value="Primo Brands Corporation" descriptionId=""/>'
           '<Field displayName="Last" value="18.65" descriptionId=""/>'
           '<Field displayName="Last Change" value="-0.22" descriptionId=""/>'
           '<Field displayName="Call Volume" value="16427" descriptionId=""/>'
           '</Fields></Row></ScanResult></ExecuteScanResult></Livevol>')  # fmt: skip
    result = rm.map_screener(xml_tree(xml), ScanDefinition())
    row = result.rows[0]
    assert (row.symbol, row.description, row.volume, row.iv) == ("PRMB", "Primo Brands Corporation", 16427, 0.0)
    empty = rm.map_screener(xml_tree("<Livevol><ExecuteScanResult><ScanResult/></ExecuteScanResult></Livevol>"),
                            ScanDefinition())  # fmt: skip
    assert empty.rows == [] and empty.total_matches == 0


def test_dividend_equity_detail_is_lifted_and_history_deduplicated() -> None:
    payload = {"dividend": {"dividendDetails": {"dividendDetail": {"secDetail": {"symbol": "KO"}, "equityDetail": {
        "amt": "0.51", "exDivDate": "03/14/26", "yldTTM": 2.9,
        "divHistDetails": {"divHistDetail": {"amt": 0.51, "exDate": "03/14/26", "payDate": "04/01/26",
                                             "freqName": "Quarterly"}}}}}}}  # fmt: skip
    events = rm.map_dividends(payload, ["KO"])
    assert [(e.ex_date, e.amount, e.frequency) for e in events] == [("2026-03-14", 0.51, "QUARTERLY")]


def test_notes_are_found_wherever_they_sit() -> None:
    notes = rm.map_notes({"data": {"noteDetails": [{"noteId": 7, "symbol": "spy", "note": "x", "createDate": 0}]}})
    assert [(n.note_id, n.symbol, n.create_date) for n in notes] == [("7", "SPY", "1970-01-01T00:00:00+00:00")]
    assert rm.map_notes({"messages": [{"message": "no notes"}]}) == []
