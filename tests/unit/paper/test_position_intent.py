"""Paper holds a single-leg option order to its position_intent, as Fidelity's codes do (open or close)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ftdesk.domain.orders import OrderStatus, PositionIntent
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_engine import opt, place_option, reason_of
from tests.unit.paper.test_ledger import CALL, World, scripted_market


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    return World(tmp_path / "paper.db", clock, scripted_market(clock))


def test_close_needs_the_position_and_open_refuses_the_opposite_side(world: World) -> None:
    acct = world.account("PI1", cash="100000")
    nothing_held = reason_of(lambda: world.engine.preview_option(opt(acct, CALL, "SC", 1, position_intent="close")))
    assert nothing_held.reason == "INSUFFICIENT_POSITION" and "to close needs a long position" in nothing_held.message

    opened = opt(acct, CALL, "BC", 2, position_intent="open")
    preview = world.engine.preview_option(opened)
    assert preview.position_intent is PositionIntent.OPEN and preview.broker_action_desc == "Buy Call"
    assert place_option(world, opened).status is OrderStatus.FILLED

    # Selling to open against a long would close it instead: refused, where without an intent it closes.
    conflict = reason_of(lambda: world.engine.preview_option(opt(acct, CALL, "SC", 1, position_intent="open")))
    assert conflict.reason == "POSITION_CONFLICT"
    too_many = reason_of(lambda: world.engine.preview_option(opt(acct, CALL, "SC", 3, position_intent="close")))
    assert too_many.reason == "INSUFFICIENT_POSITION"
    place_option(world, opt(acct, CALL, "SC", 2, position_intent="close"))
    assert world.ledger.positions(acct) == []


def test_a_place_must_repeat_the_previewed_intent(world: World) -> None:
    acct = world.account("PI2", cash="100000")
    preview = world.engine.preview_option(opt(acct, CALL, "BC", 1, position_intent="open"))
    refused = reason_of(lambda: world.engine.place_option(opt(acct, CALL, "BC", 1), preview.conf_num))
    assert refused.reason == "PREVIEW_MISMATCH"
