"""The order action table both ways, for every order kind and every upstream code known (captured or decompiled)."""

from __future__ import annotations

import copy
import json

import pytest
from pydantic import ValidationError

from ftdesk.brokers.fidelity import orders_mapping as m
from ftdesk.brokers.fidelity import orders_wire as w
from ftdesk.brokers.fidelity.orders import equity_intent, multileg_intent
from ftdesk.brokers.fidelity.orders_actions import Asked, Verdict, compare, read_back, understood
from ftdesk.domain.errors import ActionMismatch
from ftdesk.domain.order_actions import (
    ACTION_TABLE,
    SELL_ALL,
    SELL_SPECIFIC_SHARES,
    ActionKind,
    Side,
    describe,
    leg_intent,
    row_for,
    rows,
)
from ftdesk.domain.orders import (
    EquityAction,
    EquityOrder,
    LegAction,
    MultiLegOptionLeg,
    MultiLegOptionOrder,
    OptionAction,
    OptionOrder,
    PositionIntent,
    PriceType,
)
from ftdesk.service.orders.bodies import OptionPreviewBody
from ftdesk.service.orders.legs import MultiLegLegBody
from tests.fakes import fidelity_orders_payloads as op

OPEN, CLOSE = PositionIntent.OPEN, PositionIntent.CLOSE
REFERENCE_CODES = {"B", "S", "BO", "SO", "BC", "SC", "BH", "SH", "SA", "SS", "BP", "SP"}  # the decompiled enum


def test_the_table_covers_every_upstream_code_of_the_reference_with_its_provenance() -> None:
    assert {row.upstream for row in ACTION_TABLE} == REFERENCE_CODES
    assert all(row.tag in ("CAP", "DEC", "INF") and row.upstream_meaning for row in ACTION_TABLE)
    # Every public request code has exactly one placeable row (per intent, for single-leg options).
    for action in EquityAction:
        assert row_for(ActionKind.EQUITY, action.value).public == action.value
    for option in OptionAction:
        assert {row_for(ActionKind.OPTION, option.value, i).intent for i in (None, OPEN, CLOSE)} == {None, OPEN, CLOSE}
    for leg in LegAction:
        assert row_for(ActionKind.LEG, leg.value, leg_intent(leg)).public == leg.value
    with pytest.raises(KeyError):
        row_for(ActionKind.EQUITY, SELL_SPECIFIC_SHARES)  # read back only: never sent


@pytest.mark.parametrize("action", list(EquityAction))
def test_every_equity_action_round_trips(action: EquityAction) -> None:
    order = EquityOrder(acct_num="Z1", symbol="AAPL", action=action, qty=1, price_type=PriceType.MARKET)
    code = w.equity_parameter(order, True)["baseOrderDetail"]["orderActionCode"]
    row = row_for(ActionKind.EQUITY, action.value)
    assert code == row.upstream
    for words in (row.upstream_meaning, None):  # with the broker's words and without them
        back = read_back(ActionKind.EQUITY, code, words)
        assert (back.action, back.unrecognized) == (action.value, False)


@pytest.mark.parametrize("action", list(OptionAction))
@pytest.mark.parametrize("intent", [None, OPEN, CLOSE])
def test_every_single_leg_action_and_intent_round_trips(action: OptionAction, intent: PositionIntent | None) -> None:
    symbol = "QS270115C7" if action.value.endswith("C") else "QS270115P5"
    order = OptionOrder(acct_num="Z1", symbol=symbol, action=action, qty=1, position_intent=intent)
    code = w.option_parameter(order, True)["baseOrderDetail"]["orderActionCode"]
    row = row_for(ActionKind.OPTION, action.value, intent)
    assert (
        code == row.upstream == {None: action.value, OPEN: action.value[0] + "O", CLOSE: action.value[0] + "C"}[intent]
    )
    back = read_back(ActionKind.OPTION, code, row.upstream_meaning, "call" if symbol[-2] == "C" else "put")
    assert (back.action, back.intent, back.unrecognized) == (action.value, intent, False)


@pytest.mark.parametrize("action", list(LegAction))
def test_every_leg_action_round_trips_and_an_answers_bare_bc_names_only_the_side(action: LegAction) -> None:
    code = w.leg_action_code(action)
    row = row_for(ActionKind.LEG, action.value, leg_intent(action))
    assert code == action.value == row.upstream
    back = read_back(ActionKind.LEG, code, row.upstream_meaning)
    assert (back.action, back.intent) == (action.value, leg_intent(action))
    bare = read_back(ActionKind.LEG, code, None)
    if action in (LegAction.BUY_TO_OPEN, LegAction.SELL_TO_OPEN):
        assert (bare.action, bare.intent) == (action.value, OPEN)
    else:  # captured answers echo opening legs as BC/SC: a bare BC is a buy of unknown intent, never "buy to close"
        assert (bare.action, bare.intent) == ("buy" if code == "BC" else "sell", None)


UPSTREAM_BACK = [
    # (kind, code, broker words, contract) -> public action, intent, flagged
    (ActionKind.EQUITY, "B", "Buy", None, "B", None, False),
    (ActionKind.EQUITY, "S", "Sell", None, "S", None, False),
    (ActionKind.EQUITY, "SH", "Sell Short", None, "SS", None, False),
    (ActionKind.EQUITY, "BH", "Buy to Cover", None, "BC", None, False),
    (ActionKind.EQUITY, "SA", "Sell All", None, SELL_ALL, None, False),
    (ActionKind.EQUITY, "SS", None, None, SELL_SPECIFIC_SHARES, None, False),  # specific shares, not sell short
    (ActionKind.EQUITY, "SS", "Sell Short", None, "SS", None, True),  # code and words disagree: flagged, as itself
    (ActionKind.EQUITY, "BC", "Buy Call", None, "BC", None, True),  # an option code on an equity: flagged
    (ActionKind.EQUITY, "XY", "Exchange", None, "XY", None, True),
    (ActionKind.OPTION, "BC", "Buy Call", "call", "BC", None, False),
    (ActionKind.OPTION, "BC", "Buy To Close", "call", "BC", CLOSE, False),
    (ActionKind.OPTION, "BC", "Buy To Close", "put", "BP", CLOSE, False),
    (ActionKind.OPTION, "BC", None, "put", "BP", CLOSE, False),  # on a put BC can only be "to close"
    (ActionKind.OPTION, "BC", "Buy Call", "put", "BC", None, True),  # contradicts the contract: flagged
    (ActionKind.OPTION, "SC", "Sell To Close", "put", "SP", CLOSE, False),
    (ActionKind.OPTION, "BO", "Buy To Open", "put", "BP", OPEN, False),
    (ActionKind.OPTION, "SO", None, "call", "SC", OPEN, False),
    (ActionKind.OPTION, "BP", "Buy Put", "put", "BP", None, False),
    (ActionKind.OPTION, "SP", "Sell Put", "put", "SP", None, False),
    (ActionKind.OPTION, "SH", "Sell Short", "call", "SH", None, True),
    (ActionKind.LEG, "BC", "Buy To Close", None, "BC", CLOSE, False),
    (ActionKind.LEG, "SC", None, None, "sell", None, False),
    (ActionKind.LEG, "BO", None, None, "BO", OPEN, False),
    (ActionKind.LEG, "B", "Buy", None, "B", None, True),
]


@pytest.mark.parametrize(("kind", "code", "words", "contract", "public", "intent", "flagged"), UPSTREAM_BACK)
def test_every_upstream_code_reads_back_as_the_public_action_it_is(
    kind: ActionKind,
    code: str,
    words: str | None,
    contract: str | None,
    public: str,
    intent: PositionIntent | None,
    flagged: bool,
) -> None:
    back = read_back(kind, code, words, contract)
    assert (back.action, back.intent, back.unrecognized) == (public, intent, flagged)
    if flagged:
        assert back.desc == (words or code)  # reported with the broker's own words


def test_words_and_codes_that_disagree_are_a_conflict() -> None:
    assert understood(ActionKind.OPTION, "BO", "Buy To Close").conflicts
    assert understood(ActionKind.OPTION, "BP", "Buy Call").conflicts
    assert understood(ActionKind.EQUITY, "SH", "Sell").conflicts
    agreed = understood(ActionKind.OPTION, "BC", "Buy Call")
    assert (agreed.side, agreed.intent, agreed.option_type, agreed.conflicts) == (Side.BUY, None, "call", ())


def _verdict(asked: Asked, code: str, words: str | None) -> Verdict:
    verdict = Verdict()
    compare(asked, {"code": code, "desc": words, "symbol": asked.symbol, "qty": asked.qty}, verdict)
    return verdict


def test_an_intent_the_request_did_not_state_is_a_problem_and_an_unconfirmed_one_a_warning() -> None:
    plain = Asked(ActionKind.OPTION, row_for(ActionKind.OPTION, "BC"), "QS270115C7", 1, option_type="call")
    assert "did not state" in _verdict(plain, "BC", "Buy To Close").problems[0]
    assert _verdict(plain, "BC", "Buy Call").problems == []
    closing = Asked(
        ActionKind.OPTION, row_for(ActionKind.OPTION, "BC", CLOSE), "QS270115C7", 1, option_type="call", intent=CLOSE
    )
    unconfirmed = _verdict(closing, "BC", "Buy Call")
    assert unconfirmed.problems == [] and "do not say whether" in unconfirmed.warnings[0]
    assert "asked to close" in _verdict(closing, "BO", "Buy To Open").problems[0]
    assert _verdict(closing, "BC", None).warnings  # no words at all: still only unconfirmed
    nothing = _verdict(closing, "", None)
    assert nothing.problems == ["the answer names no action the adapter can read (nothing)"]


def test_the_action_table_is_in_the_openapi_descriptions() -> None:
    described = OptionPreviewBody.model_json_schema()["properties"]["orderActionCode"]["description"]
    assert describe(ActionKind.OPTION) in described
    assert "`BC` + position_intent close: buy call to close (sent as Fidelity `BC` 'Buy to Close' [DEC])" in described
    schema = MultiLegLegBody.model_json_schema()
    action = schema["properties"]["action"]
    words = schema["$defs"][action["$ref"].rsplit("/", 1)[-1]]["enum"]  # a named enum: LegActionWord
    for row in rows(ActionKind.LEG):
        assert f"`{row.public}`" in action["description"] and row.public in words
    assert {"buy_to_open", "sell_to_close"} <= set(words)


@pytest.mark.parametrize(
    ("sent", "action"),
    [
        ({"action": "buy_to_open"}, "BO"),
        ({"action": "sell_to_close"}, "SC"),
        ({"action": "BC"}, "BC"),
        ({"action": "buy", "position_intent": "close"}, "BC"),
        ({"action": "sell", "positionIntent": "open"}, "SO"),
        ({"action": "SO", "position_intent": "open"}, "SO"),
    ],
)
def test_a_leg_accepts_codes_words_and_buy_or_sell_with_an_intent(sent: dict[str, str], action: str) -> None:
    leg = MultiLegLegBody.model_validate_json(json.dumps({"symbol": "QS280121C7", "qty": 1, **sent}))
    assert leg.action.value == action and leg.position_intent is leg_intent(LegAction(action))


@pytest.mark.parametrize(
    ("sent", "problem"),
    [
        ({"action": "buy"}, "needs position_intent open or close"),
        ({"action": "BO", "position_intent": "close"}, "contradicts action BO"),
        ({"action": "buy_to_cover"}, "action"),
        ({"action": "bc"}, "action"),
    ],
)
def test_a_leg_refuses_a_missing_or_contradicting_intent(sent: dict[str, str], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        MultiLegLegBody.model_validate_json(json.dumps({"symbol": "QS280121C7", "qty": 1, **sent}))


def test_sides_of_the_table() -> None:
    assert {row.side for row in rows(ActionKind.EQUITY) if row.upstream.startswith("S")} == {Side.SELL}
    assert {row.side for row in rows(ActionKind.OPTION) if row.public.startswith("B")} == {Side.BUY}


def test_the_captured_answers_bind_against_the_requests_they_answered() -> None:
    """The captured equity preview and multi-leg preview (legs BO/SO echoed as BC/SC) pass the check."""
    equity = EquityOrder(
        acct_num="Z21772945", symbol="LGVN", action=EquityAction.BUY, qty=1, price_type=PriceType.LIMIT, limit_price=1.0
    )
    preview = m.map_preview(op.EQUITY_PREVIEW_SAMPLE, equity_intent(equity))
    assert (preview.broker_action_code, preview.broker_action_desc, preview.action) == ("B", "Buy", "B")
    spread = MultiLegOptionOrder(
        acct_num="Z21772945",
        underlying="QS",
        legs=[
            MultiLegOptionLeg(symbol="QS280121C7", action=LegAction.BUY_TO_OPEN, qty=1),
            MultiLegOptionLeg(symbol="QS280121C12", action=LegAction.SELL_TO_OPEN, qty=1),
        ],
        net_price=0.92,
    )
    multi = m.map_preview(op.MULTILEG_PREVIEW_SAMPLE, multileg_intent(spread))
    assert (multi.broker_action_code, multi.broker_action_desc) == ("DB", "BC QS280121C7, SC QS280121C12")
    # The same captured answer for a closing request contradicts nothing it can read but the side.
    selling = spread.model_copy(
        update={"legs": [MultiLegOptionLeg(symbol="QS280121C7", action=LegAction.SELL_TO_CLOSE, qty=1), spread.legs[1]]}
    )
    with pytest.raises(ActionMismatch, match="QS280121C7: asked to sell"):
        m.map_preview(op.MULTILEG_PREVIEW_SAMPLE, multileg_intent(selling))


@pytest.mark.parametrize(
    ("avg", "dbcr", "action", "price"),
    [("2.96", None, "BP", 2.96), ("-1.20", None, "CR", 1.20), ("1.20", "CR", "CR", 1.20), ("0.85", "DB", "DB", 0.85)],
)
def test_a_spread_fill_read_back_keeps_debit_or_credit(avg: str, dbcr: str | None, action: str, price: float) -> None:
    """The captured condor reads back as its own "Buy Put"; a credit is never reported as a debit."""
    sample = copy.deepcopy(op.ORDER_STATUS_SAMPLE)
    raw = sample["order"]["orderDetails"]["orderDetail"][0]
    raw["statusDetail"]["amountDetail"]["avgExecPrice"] = avg
    if dbcr:
        raw["tradableSecOrderDetail"]["dbCrEvenCode"] = dbcr
    (order,) = m.map_orders(sample)
    assert order.order_detail.security_type == "MULTI_LEG"
    assert (order.order_detail.action, order.status_detail.avg_exec_price) == (action, price)
    assert order.order_detail.action_unrecognized is False


def test_a_spread_answer_with_another_limit_or_debit_credit_is_refused() -> None:
    spread = MultiLegOptionOrder(
        acct_num="Z21772945",
        underlying="QS",
        legs=[
            MultiLegOptionLeg(symbol="QS280121C7", action=LegAction.BUY_TO_OPEN, qty=1),
            MultiLegOptionLeg(symbol="QS280121C12", action=LegAction.SELL_TO_OPEN, qty=1),
        ],
        net_price=0.92,
    )
    answer = copy.deepcopy(op.MULTILEG_PREVIEW_SAMPLE)
    detail = answer["multiLegOptionResponse"]["orderConfirmDetail"]
    detail["netAmount"] = "1.92"
    with pytest.raises(ActionMismatch, match=r"net limit of 0\.92, the broker understood 1\.92"):
        m.map_preview(answer, multileg_intent(spread))
    detail["netAmount"] = "-0.92"  # the size is what counts: the sign convention of the answer is unknown
    detail["orderDetail"]["tradableSecOrderDetail"]["dbCrEvenCode"] = "CR"
    with pytest.raises(ActionMismatch, match="asked for a net DB, the broker understood CR"):
        m.map_preview(answer, multileg_intent(spread))
