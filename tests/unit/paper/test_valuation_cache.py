"""A portfolio read answers from positions priced earlier only while nothing they were made of has changed.

Each check reads through the world's ledger (which keeps its priced positions) and through a fresh ledger on
the same store and market (which has nothing kept): the answers must be identical, read after read, across a
price move inside one second, a fill, a new second and a new day.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from ftdesk.brokers.paper.ledger.ledger import Ledger
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.accounts import Position
from ftdesk.service.web.envelope import ok_response
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import (
    CALL,
    World,
    ko_dividends,
    scripted_market,
    universe_dividends,
)


def shown(positions: list[Position]) -> list[dict]:
    return [p.model_dump(mode="json") for p in positions]


def fresh(world: World, acct: str) -> list[dict]:
    """Return the positions as a ledger that has priced nothing yet values them."""
    ledger = Ledger(world.store, world.market, world.clock, [].append, dividends=world.dividends)
    return shown(ledger.positions(acct))


def served(positions: list[Position]) -> bytes:
    """Return the body the web edge serves for an answer."""
    body = ok_response(positions).body
    assert isinstance(body, bytes)
    return body


def kept_and_fresh(world: World, acct: str) -> list[dict]:
    first, again = world.ledger.positions(acct), world.ledger.positions(acct)
    assert shown(first) == shown(again) == fresh(world, acct)
    # Served from its JSON text made once, the body is byte for byte what serialising a plain list makes.
    unshared = Ledger(world.store, world.market, world.clock, [].append, dividends=world.dividends).positions(acct)
    assert served(first) == served(again) == served(list(unshared))
    return shown(first)


def test_a_price_move_a_fill_and_a_new_day_each_show_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    world = World(tmp_path / "paper.db", clock, scripted_market(clock), dividends=ko_dividends)
    acct = world.account("V1", cash="100000")
    world.fill(acct, "AAPL", 10, "95")
    world.fill(acct, CALL, 2, "1.80")
    before = kept_and_fresh(world, acct)

    world.market.set_price("AAPL", 104.0)  # the same second: a market may move between its ticks
    moved = kept_and_fresh(world, acct)
    assert moved != before and moved[0]["last_price"] == 104.0

    world.fill(acct, "MSFT", 3, "399")  # the same second and prices: only the ledger changed
    bought = kept_and_fresh(world, acct)
    assert [p["symbol"] for p in bought] == ["AAPL", "MSFT", CALL]

    clock.set_wall(clock.now() + timedelta(days=1))  # AAPL bought yesterday now counts from the close
    next_day = kept_and_fresh(world, acct)
    assert next_day != bought
    assert world.ledger.positions(acct)[0].todays_gain_loss == 10 * (104.0 - 98.0)


def test_the_simulated_market_values_the_seeded_world_alike_second_after_second(tmp_path: Path) -> None:
    clock = ManualClock()
    universe = Universe.load()
    world = World(tmp_path / "seed.db", clock, MarketSimulator(universe, 7, clock), dividends=universe_dividends())
    world.ledger.seed_world(random.Random(3))
    accounts = [a.acct_num for a in world.ledger.accounts()]
    answers = []
    for _ in range(4):
        answers.append([kept_and_fresh(world, acct) for acct in accounts])
        clock.set_wall(clock.now() + timedelta(seconds=1))
    assert all(answers[0]), "every seeded account holds something"
    assert answers[0] != answers[1], "a new second moves the simulated prices"
