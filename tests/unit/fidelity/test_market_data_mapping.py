"""Tricky market-data mappings: JSONP, XML-or-JSON trees, lone objects, the chain's Greeks model."""

from __future__ import annotations

from datetime import date

import pytest

from ftdesk.brokers.fidelity import market_data_mapping as m
from ftdesk.brokers.fidelity.market_data_parsing import strip_jsonp, xml_tree
from ftdesk.domain.accounts import OptionType
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import BarWidth

CAPTURED_CHAIN = """<OPTIONCHAIN><BASE ri="QS" err="0" us="QS" fs="QS" st=""/><CHAIN>
<CALLS><EXP_DATE dt="2026-04-02"><O s="-QS260402C3" cs="QS" st="3" et="W"/></EXP_DATE>
<EXP_DATE dt="2026-04-17"><O s="-QS260417C1" cs="QS" st="1" et="M"/></EXP_DATE></CALLS>
<PUTS><EXP_DATE dt="2026-04-02"><O s="-QS260402P3" cs="QS" st="3" et="W"/></EXP_DATE></PUTS>
</CHAIN></OPTIONCHAIN>"""


@pytest.mark.parametrize(
    ("body", "inner"),
    [('jsonp_1_1({"a": 1})', '{"a": 1}'), ('  cb ( {"a": "(x)"} ) ;\n', ' {"a": "(x)"} '), ('{"a": 1}', '{"a": 1}')],
)
def test_jsonp_wrapper_is_stripped_when_present(body: str, inner: str) -> None:
    assert strip_jsonp(body) == inner


def test_captured_chain_xml_and_its_json_form_map_alike() -> None:
    tree = xml_tree(CAPTURED_CHAIN)
    from_xml = m.chain_contracts(tree, "QS")
    as_json = {"BASE": {"ri": "QS", "err": "0"}, "CHAIN": {"CALLS": {"EXP_DATE": {"dt": "2026-04-02",
               "O": {"s": "-QS260402C3", "cs": "QS", "st": "3", "et": "W"}}}}}  # fmt: skip
    assert from_xml[0] == (OptionType.CALL, date(2026, 4, 2), 3.0, "QS260402C3")
    assert m.chain_contracts(as_json, "QS") == from_xml[:1]
    assert [c[0] for c in from_xml] == [OptionType.CALL, OptionType.CALL, OptionType.PUT]


def test_chain_pairs_sides_and_drops_past_expirations() -> None:
    chain = m.map_chain(xml_tree(CAPTURED_CHAIN), "QS", date(2026, 4, 3), 3.2, 0.6)
    assert [x.expiration for x in chain.expirations] == ["2026-04-17"]
    only = chain.expirations[0].strikes[0]
    assert only.put is None and only.call is not None and only.call.greeks.delta > 0.9


def test_an_err_code_is_not_found() -> None:
    with pytest.raises(NotFound):
        m.chain_contracts(xml_tree('<OPTIONCHAIN><BASE ri="ZZZ" err="1"/></OPTIONCHAIN>'), "ZZZ")


def test_model_greeks_obey_put_call_parity_of_delta_and_share_gamma() -> None:
    call = m.black_scholes_greeks(OptionType.CALL, 100, 105, 0.25, 0.3, 0.04)
    put = m.black_scholes_greeks(OptionType.PUT, 100, 105, 0.25, 0.3, 0.04)
    assert call.delta - put.delta == pytest.approx(1.0, abs=1e-5)
    assert call.gamma == put.gamma and call.vega == put.vega and call.theta < 0
    assert m.black_scholes_greeks(OptionType.CALL, 0, 105, 0.25, 0.3, 0.04).delta == 0.0


def test_historical_volatility_falls_back_with_few_closes() -> None:
    assert m.historical_volatility([100, 101]) == m.DEFAULT_VOLATILITY
    assert m.historical_volatility([100, 101, 100, 101, 100, 101, 100]) > 0.1


def test_captured_chart_maps_one_string_bar_and_daily_dates() -> None:
    payload = {"Symbol": [{"Identifier": "SPY", "Description": "SPDR", "LastTrade": "648.56", "PreviousClose": "631.97",
               "BarList": {"BarRecord": {"lt": "2026/03/30-04:00:00", "op": "636.88", "cl": "636.82",
                                         "hi": "637.07", "lo": "634.1", "v": "112744"}}}]}  # fmt: skip
    daily = m.map_chart(payload, "SPY", BarWidth.DAY)
    assert [(b.date, b.open, b.volume) for b in daily.bars] == [("2026-03-30", 636.88, 112744)]
    intraday = m.map_chart(payload, "SPY", BarWidth.MIN5)
    assert intraday.bars[0].date == "2026-03-30T08:00:00+00:00"  # 04:00 New York
    assert m.last_trade(payload, "SPY") == 648.56


def test_montage_json_with_a_lone_quote() -> None:
    payload = {"OPTIONS_MONTAGE": {"BASE": {"S": "-QS280121C7", "err": "0"}, "EXCH_QUOTES": {"O": {
        "se": "-QS280121C7.A", "en": "NYSE Amex Options Market", "ec": "AM", "b": "2.50", "bs": "168", "a": 2.59,
        "as": "44"}}}}  # fmt: skip
    from datetime import UTC, datetime

    montage = m.map_montage(payload, "QS280121C7", datetime(2026, 4, 1, tzinfo=UTC))
    assert [(q.exchange, q.bid, q.bid_size, q.ask, q.ask_size) for q in montage.quotes] == [("AM", 2.5, 168, 2.59, 44)]
    assert m.best_mid(montage) == 2.545
