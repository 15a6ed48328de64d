"""The paper ledger: seeding, exact cash, lots (FIFO, term, wash sales), buying power and income."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from ftdesk.brokers.paper.calendar import new_york_datetime
from ftdesk.brokers.paper.dividends import DividendSchedule
from ftdesk.brokers.paper.engine.engine import OrderEngine
from ftdesk.brokers.paper.engine.model import ENGINE_SCHEMA
from ftdesk.brokers.paper.ledger.income import Dividend, DividendSource
from ftdesk.brokers.paper.ledger.ledger import LEDGER_SCHEMA, Ledger
from ftdesk.brokers.paper.ledger.money import sell_fees_cents
from ftdesk.brokers.paper.ledger.types import Fill
from ftdesk.brokers.paper.market.listings import expiration_time
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.options import format_option_symbol
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.accounts import AccountType, OptionContract, OptionType, SecurityType, Term
from ftdesk.domain.errors import NotFound
from ftdesk.domain.events import AccountEvent
from tests.fakes.clock import ManualClock
from tests.fakes.paper_market import ScriptedMarket

CALL = "AAPL261218C110"
PUT = "AAPL261218P90"
EXPIRY = date(2026, 12, 18)


def scripted_market(clock: ManualClock) -> ScriptedMarket:
    """Return the market most tests use: AAPL at 100.00 (99.99 x 100.01, 500 shown) and a few more."""
    market = ScriptedMarket(clock)
    market.add_equity("AAPL", 100.0, prev_close=98.0)
    market.add_equity("MSFT", 400.0)
    market.add_equity("KO", 60.0)
    market.add_equity("SPY", 600.0, security_type=SecurityType.ETF)
    market.add_option(CALL, "AAPL", OptionType.CALL, 110, EXPIRY, 2.0)
    market.add_option("AAPL261218C120", "AAPL", OptionType.CALL, 120, EXPIRY, 1.0)
    market.add_option(PUT, "AAPL", OptionType.PUT, 90, EXPIRY, 1.5)
    market.add_option("AAPL261218P100", "AAPL", OptionType.PUT, 100, EXPIRY, 4.0)
    return market


def ko_dividends(symbol: str, start: date, end: date) -> Iterator[Dividend]:
    """A test schedule: KO pays $0.51 a share, ex-date the 1st, paid the 15th of March, June, September, December."""
    if symbol != "KO":
        return
    for year in range(start.year, end.year + 1):
        for month in (3, 6, 9, 12):
            if start <= date(year, month, 15) <= end:
                yield Dividend("KO", Decimal("0.51"), date(year, month, 1), date(year, month, 15))


@dataclass
class World:
    """A paper store with ledger and engine over a scripted market and a manual clock."""

    path: Path
    clock: ManualClock
    market: ScriptedMarket
    seed: int = 7
    events: list[AccountEvent] = field(default_factory=list)
    dividends: DividendSource = ko_dividends

    def __post_init__(self) -> None:
        self.store = PaperStore(self.path, schemas=[LEDGER_SCHEMA, ENGINE_SCHEMA])
        self.store.open()
        self.ledger = Ledger(self.store, self.market, self.clock, self.events.append, dividends=self.dividends)
        self.engine = OrderEngine(
            self.store, self.ledger, self.market, self.clock, self.events.append, random.Random(self.seed)
        )

    def reopen(self) -> World:
        """Close the store and open the same file again in a fresh world."""
        self.store.close()
        return World(self.path, self.clock, self.market, self.seed, dividends=self.dividends)

    def account(
        self,
        acct: str,
        *,
        margin: bool = True,
        level: int = 3,
        retirement: bool = False,
        cash: str = "0",
        opened: date = date(2026, 1, 2),
    ) -> str:
        """Open an account funded (and settled) on its opening date; return its number."""
        kind = AccountType.IRA if retirement else AccountType.INDIVIDUAL
        self.ledger.open_account(
            acct,
            kind,
            acct,
            f"{acct} test account",
            margin=margin,
            option_level=level,
            retirement=retirement,
            is_default=False,
            opened=opened,
        )
        if Decimal(cash):
            self.ledger.post_cash(acct, "DEPOSIT", int(Decimal(cash) * 100), "DEPOSIT", on=opened)
        return acct

    def fill(
        self,
        acct: str,
        symbol: str,
        qty: int | Decimal,
        price: str,
        on: date | None = None,
        *,
        commission_cents: int = 0,
        fees_cents: int = 0,
    ) -> None:
        """Book a fill directly in the ledger (at noon New York on ``on``, default today)."""
        when = new_york_datetime(on, 12) if on else None
        fill = Fill(acct, symbol, qty, Decimal(price), commission_cents=commission_cents, fees_cents=fees_cents)
        self.ledger.apply_fills([fill], when=when)

    def types(self) -> list[str]:
        """Return the event types published so far."""
        return [e.event_type for e in self.events]


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    return World(tmp_path / "paper.db", clock, scripted_market(clock))


def seeded_market(clock: ManualClock) -> ScriptedMarket:
    market = ScriptedMarket(clock)
    for symbol, price in (
        ("AAPL", 230.0),
        ("MSFT", 500.0),
        ("NVDA", 180.0),
        ("SPY", 650.0),
        ("KO", 70.0),
        ("JNJ", 160.0),
        ("QQQ", 580.0),
        ("VTI", 320.0),
    ):
        market.add_equity(symbol, price)
    market.add_option("AAPL261218C250", "AAPL", OptionType.CALL, 250, EXPIRY, 3.10)
    market.add_option("SPY261218P620", "SPY", OptionType.PUT, 620, EXPIRY, 6.50)
    return market


def universe_dividends() -> DividendSource:
    """Return the paper brokerage's own schedule: the shipped universe's dividends."""
    return DividendSchedule(Universe.load(), 7)


def cash_of(world: World, acct: str) -> float:
    return sum(t.amount for t in world.ledger.transactions(acct, None, None))


# --- seeding ----------------------------------------------------------------------------------------------


def test_seed_world_creates_three_realistic_accounts(tmp_path: Path) -> None:
    clock = ManualClock()
    world = World(tmp_path / "seed.db", clock, seeded_market(clock), dividends=universe_dividends())
    world.ledger.seed_world(random.Random(3))
    accounts = world.ledger.accounts()
    assert [a.acct_type for a in accounts] == [AccountType.INDIVIDUAL, AccountType.IRA, AccountType.JOINT]
    assert all(re.fullmatch(r"PAP\d{6}", a.acct_num) for a in accounts)
    individual, ira, joint = accounts
    assert (individual.margin_ind, individual.option_level, individual.is_default) == (True, "3", True)
    assert (ira.margin_ind, ira.retirement_ind, ira.option_level) == (False, True, "2")
    assert joint.margin_ind and int(joint.option_level) <= 1
    ira_features = world.ledger.account_features(ira.acct_num)[0]
    assert not ira_features.short_sell_ind and not ira_features.margin_ind

    for acct in accounts:
        positions = world.ledger.positions(acct.acct_num)
        assert positions, acct.acct_num
        assert sum(p.holding_pct for p in positions) == pytest.approx(100, abs=0.05)
        txn_types = {t.txn_type for t in world.ledger.transactions(acct.acct_num, None, None)}
        assert {"DEPOSIT", "BUY", "DIVIDEND"} <= txn_types
        # Cash is exactly the sum of the history, and net worth is cash plus positions.
        bal = world.ledger.balances(acct.acct_num)
        assert bal.cash == pytest.approx(cash_of(world, acct.acct_num), abs=0.001)
        assert bal.net_worth == pytest.approx(bal.cash + sum(p.market_value for p in positions), abs=0.02)

    aapl_terms = {lot.term for lot in world.ledger.open_lots(individual.acct_num, "AAPL")}
    assert aapl_terms == {Term.LONG, Term.SHORT}
    assert len(world.ledger.open_lots(individual.acct_num, "AAPL")) >= 3
    assert {u.strategy for u in world.ledger.options_summary(individual.acct_num).underlyings} == {
        "COVERED_CALL",
        "SINGLE",
    }
    assert world.ledger.loaned_securities(individual.acct_num)[0].income_mtd > 0
    assert world.ledger.closed_positions(individual.acct_num, None, None)
    assert world.ledger.balances(joint.acct_num).margin_debt > 0
    assert any(a.accrual_type == "MARGIN_INTEREST" for a in world.ledger.accruals(joint.acct_num))
    assert any(lot.wash_sale_ind for lot in world.ledger.closed_lots(joint.acct_num, "QQQ", None, None))
    assert world.ledger.cash_accruals(ira.acct_num)
    assert {"INTEREST"} <= {t.txn_type for t in world.ledger.transactions(ira.acct_num, None, None)}


def test_seed_world_is_idempotent_and_deterministic(tmp_path: Path) -> None:
    def seeded(name: str) -> tuple[World, list[object]]:
        clock = ManualClock()
        world = World(tmp_path / name, clock, seeded_market(clock), dividends=universe_dividends())
        world.ledger.seed_world(random.Random(11))
        snapshot: list[object] = [
            (a.acct_num, [t.model_dump() for t in world.ledger.transactions(a.acct_num, None, None)])
            for a in world.ledger.accounts()
        ]
        return world, snapshot

    world, first = seeded("a.db")
    world.ledger.seed_world(random.Random(99))
    again = [
        (a.acct_num, [t.model_dump() for t in world.ledger.transactions(a.acct_num, None, None)])
        for a in world.ledger.accounts()
    ]
    assert again == first
    assert seeded("b.db")[1] == first
    assert world.events == []  # seeding history is quiet


def test_unknown_account_is_not_found(world: World) -> None:
    with pytest.raises(NotFound, match="NOPE"):
        world.ledger.balances("NOPE")
    with pytest.raises(NotFound):
        world.ledger.positions("NOPE")


# --- cash and positions -------------------------------------------------------------------------------------


def test_cash_follows_fills_to_the_cent(world: World) -> None:
    acct = world.account("C1", margin=False, level=2, cash="10000")
    world.fill(acct, "AAPL", 10, "123.45")
    world.fill(acct, "AAPL", -4, "130.01", fees_cents=3)
    world.fill(acct, CALL, 2, "1.23", commission_cents=130)
    world.fill(acct, CALL, -1, "1.50", commission_cents=65, fees_cents=2)
    # 10000 - 1234.50 + (520.04 - 0.03) - (246 + 1.30) + (150 - 0.65 - 0.02)
    assert world.ledger.balances(acct).cash == 9187.54
    amounts = [t.amount for t in world.ledger.transactions(acct, None, None)]
    assert amounts == [149.33, -247.3, 520.01, -1234.5, 10000.0]
    positions = {p.symbol: p for p in world.ledger.positions(acct)}
    assert positions["AAPL"].quantity == 6
    assert positions["AAPL"].cost_basis == 740.7  # 6/10 of 1234.50
    assert positions[CALL].quantity == 1
    assert positions[CALL].market_value == 200.0  # 1 contract x 100 x 2.00
    assert positions[CALL].cost_basis == 123.65  # half of 246 + 1.30


def test_regulatory_fees_round_up_per_fill() -> None:
    # SEC 27.80/M on 15,000.00 = 0.417 -> 0.42; TAF 100 x 0.000166 = 0.0166 -> 0.02
    assert sell_fees_cents(100, 1_500_000, False) == 44
    # 100,000 shares for 1,000.00: SEC 0.0278 -> 0.03, TAF capped at 8.30
    assert sell_fees_cents(100_000, 100_000, False) == 3 + 830


def test_position_values_gains_and_todays_change(world: World) -> None:
    acct = world.account("P1", cash="50000")
    world.fill(acct, "AAPL", 100, "90")
    world.fill(acct, "KO", 50, "50")
    aapl = next(p for p in world.ledger.positions(acct) if p.symbol == "AAPL")
    assert (aapl.market_value, aapl.cost_basis, aapl.total_gain_loss) == (10000.0, 9000.0, 1000.0)
    assert aapl.total_gain_loss_pct == 11.11
    assert aapl.avg_cost_per_share == 90.0
    # Bought today: the day's gain counts from the fill (90), not from the previous close (98).
    assert (aapl.prev_close_price, aapl.last_price_chg, aapl.todays_gain_loss) == (98.0, 2.0, 1000.0)
    assert aapl.holding_pct == pytest.approx(10000 / 13000 * 100, abs=0.01)


def test_fill_publishes_position_balance_and_cost_basis_events(world: World) -> None:
    acct = world.account("E1", cash="5000")
    world.events.clear()
    world.fill(acct, "AAPL", 10, "100")
    assert world.types() == ["POSITION_CHANGED", "BALANCE_UPDATED", "COST_BASIS_UPDATED"]
    position, balance, basis = (e.desc for e in world.events)
    assert (position["acct_num"], position["symbol"], position["quantity"], position["change"]) == (
        acct,
        "AAPL",
        10,
        10,
    )
    assert balance["cash"] == 4000.0
    assert (basis["cost_basis"], basis["lot_changes"]) == (1000.0, 1)


# --- lots -----------------------------------------------------------------------------------------------------


def test_sales_close_lots_fifo_with_realised_gain(world: World) -> None:
    acct = world.account("F1", cash="100000")
    world.fill(acct, "AAPL", 10, "100", on=date(2026, 3, 2))
    world.fill(acct, "AAPL", 10, "110", on=date(2026, 4, 1))
    world.fill(acct, "AAPL", -15, "120", on=date(2026, 5, 1))
    closed = world.ledger.closed_lots(acct, "AAPL", None, None)
    assert [(c.acquired_date, c.quantity, c.cost_basis, c.proceeds, c.gain_loss) for c in reversed(closed)] == [
        ("2026-03-02", 10, 1000.0, 1200.0, 200.0),
        ("2026-04-01", 5, 550.0, 600.0, 50.0),
    ]
    (left,) = world.ledger.open_lots(acct, "AAPL")
    assert (left.acquired_date, left.quantity, left.cost_basis) == ("2026-04-01", 5, 550.0)
    (summary,) = world.ledger.closed_positions(acct, date(2026, 5, 1), date(2026, 5, 1))
    assert (summary.proceeds, summary.cost_basis, summary.gain_loss, summary.short_term_gain_loss) == (
        1800.0,
        1550.0,
        250.0,
        250.0,
    )
    assert world.ledger.closed_positions(acct, date(2026, 5, 2), None) == []


def test_lot_term_is_long_only_after_more_than_a_year(world: World) -> None:
    acct = world.account("T1", cash="100000")
    world.fill(acct, "AAPL", 10, "100", on=date(2025, 3, 3))
    world.fill(acct, "AAPL", 10, "100", on=date(2025, 3, 4))
    world.fill(acct, "AAPL", -10, "100", on=date(2026, 3, 3))  # exactly one year: SHORT
    world.fill(acct, "AAPL", -10, "100", on=date(2026, 3, 5))  # one year and a day: LONG
    terms = [(c.acquired_date, c.term) for c in reversed(world.ledger.closed_lots(acct, "AAPL", None, None))]
    assert terms == [("2025-03-03", Term.SHORT), ("2025-03-04", Term.LONG)]
    world.fill(acct, "AAPL", 5, "100", on=date(2025, 11, 16))
    world.fill(acct, "AAPL", 5, "100", on=date(2025, 11, 13))
    open_terms = {lot.acquired_date: lot.term for lot in world.ledger.open_lots(acct, "AAPL")}
    assert open_terms == {"2025-11-13": Term.LONG, "2025-11-16": Term.SHORT}  # today is 2026-11-16


def test_wash_sale_when_shares_were_bought_within_30_days_before(world: World) -> None:
    acct = world.account("W1", cash="100000")
    world.fill(acct, "AAPL", 10, "100", on=date(2026, 6, 1))
    world.fill(acct, "AAPL", 10, "90", on=date(2026, 6, 20))
    world.fill(acct, "AAPL", -10, "80", on=date(2026, 6, 25))  # FIFO: the 100 lot, a 200 loss
    (closed,) = world.ledger.closed_lots(acct, "AAPL", None, None)
    assert closed.gain_loss == -200.0 and closed.wash_sale_ind
    (replacement,) = world.ledger.open_lots(acct, "AAPL")
    assert replacement.cost_basis == 1100.0  # 900 + the disallowed 200
    (summary,) = world.ledger.closed_positions(acct, None, None)
    assert summary.wash_sale_disallowed == 200.0


def test_wash_sale_when_shares_are_bought_back_within_30_days_after(world: World) -> None:
    acct = world.account("W2", cash="100000")
    world.fill(acct, "AAPL", 10, "100", on=date(2026, 6, 1))
    world.fill(acct, "AAPL", -10, "80", on=date(2026, 6, 10))
    assert not world.ledger.closed_lots(acct, "AAPL", None, None)[0].wash_sale_ind
    world.events.clear()
    world.fill(acct, "AAPL", 4, "85", on=date(2026, 7, 10))  # 30 days later: washes 4 of the 10 shares
    (closed,) = world.ledger.closed_lots(acct, "AAPL", None, None)
    assert closed.wash_sale_ind
    (replacement,) = world.ledger.open_lots(acct, "AAPL")
    assert replacement.cost_basis == 340.0 + 80.0  # 4/10 of the 200 loss
    assert world.events[-1].event_type == "COST_BASIS_UPDATED" and world.events[-1].desc["wash_sale"] is True
    world.fill(acct, "AAPL", 10, "85", on=date(2026, 7, 11))  # 31 days later: no wash
    assert sorted(lot.cost_basis for lot in world.ledger.open_lots(acct, "AAPL")) == [420.0, 850.0]


def test_a_wash_sale_of_a_fraction_of_a_share_is_flagged(world: World) -> None:
    acct = world.account("W4", cash="100000")
    world.fill(acct, "AAPL", Decimal("2.5"), "100", on=date(2026, 6, 1))
    world.fill(acct, "AAPL", Decimal("-2.5"), "80", on=date(2026, 6, 10))
    world.fill(acct, "AAPL", Decimal("0.5"), "85", on=date(2026, 6, 11))  # washes 0.5 of the 2.5 shares
    (closed,) = world.ledger.closed_lots(acct, "AAPL", None, None)
    assert closed.gain_loss == -50.0 and closed.wash_sale_ind
    (replacement,) = world.ledger.open_lots(acct, "AAPL")
    assert replacement.cost_basis == 42.5 + 10.0  # 0.5/2.5 of the 50 loss


def test_no_wash_sale_in_a_retirement_account(world: World) -> None:
    acct = world.account("W3", margin=False, level=2, retirement=True, cash="100000")
    world.fill(acct, "AAPL", 10, "100", on=date(2026, 6, 1))
    world.fill(acct, "AAPL", -10, "80", on=date(2026, 6, 10))
    world.fill(acct, "AAPL", 10, "85", on=date(2026, 6, 11))
    assert not world.ledger.closed_lots(acct, "AAPL", None, None)[0].wash_sale_ind
    assert world.ledger.open_lots(acct, "AAPL")[0].cost_basis == 850.0


def test_short_sale_opens_a_short_lot_and_cover_closes_it(world: World) -> None:
    acct = world.account("S1", cash="10000")
    world.fill(acct, "AAPL", -10, "100", fees_cents=3)
    bal = world.ledger.balances(acct)
    assert (bal.short_proceeds_held, bal.cash, bal.short_market_value) == (999.97, 10000.0, 1000.0)
    (pos,) = world.ledger.positions(acct)
    assert (pos.quantity, pos.cost_basis, pos.market_value, pos.total_gain_loss) == (-10, -999.97, -1000.0, -0.03)
    world.market.set_price("AAPL", 90.0)
    world.fill(acct, "AAPL", 10, "90")
    (closed,) = world.ledger.closed_lots(acct, "AAPL", None, None)
    assert (closed.proceeds, closed.cost_basis, closed.gain_loss, closed.term) == (999.97, 900.0, 99.97, Term.SHORT)
    assert world.ledger.balances(acct).cash == 10099.97
    assert [t.txn_type for t in world.ledger.transactions(acct, None, None)][:2] == ["BUY_TO_COVER", "SELL_SHORT"]


# --- buying power -------------------------------------------------------------------------------------------------


def test_margin_buying_power_follows_reg_t(world: World) -> None:
    acct = world.account("M1", cash="10000")
    bal = world.ledger.balances(acct)
    assert (bal.margin_buying_power, bal.non_margin_buying_power, bal.cash_buying_power) == (20000.0, 10000.0, 10000.0)
    world.fill(acct, "AAPL", 150, "100")  # 15,000: 5,000 borrowed
    bal = world.ledger.balances(acct)
    assert (bal.cash, bal.margin_debt, bal.net_worth) == (-5000.0, 5000.0, 10000.0)
    # excess equity = 10,000 - 50% x 15,000 = 2,500
    assert (bal.non_margin_buying_power, bal.margin_buying_power, bal.cash_buying_power) == (2500.0, 5000.0, 0.0)
    assert bal.maintenance_requirement == 3750.0  # 25% of 15,000
    assert bal.margin_equity_pct == pytest.approx(66.67)


def test_cash_account_buying_power_waits_for_settlement(world: World) -> None:
    acct = world.account("K1", margin=False, level=2, cash="10000")
    world.fill(acct, "AAPL", 100, "100")
    assert world.ledger.balances(acct).cash_buying_power == 0.0
    world.fill(acct, "AAPL", -50, "100")  # proceeds settle T+1 (Tuesday)
    bal = world.ledger.balances(acct)
    assert (bal.cash, bal.settled_cash, bal.cash_buying_power, bal.margin_buying_power) == (5000.0, 0.0, 0.0, None)
    world.clock.set_wall(datetime(2026, 11, 17, 15, 0, tzinfo=UTC))
    assert world.ledger.balances(acct).cash_buying_power == 5000.0


def test_short_options_hold_cash_or_shares(world: World) -> None:
    acct = world.account("O1", margin=False, level=2, cash="20000")
    world.fill(acct, PUT, -2, "1.50")  # cash-secured: 2 x 90 x 100 held back
    bal = world.ledger.balances(acct)
    assert bal.cash == 20300.0
    assert bal.cash_buying_power == 20000.0 - 18000.0  # the premium settles T+1
    margin = world.account("O2", cash="20000")
    world.fill(margin, "AAPL", 100, "100")
    before = world.ledger.balances(margin).non_margin_buying_power
    world.fill(margin, CALL, -1, "2.00")  # covered by the 100 shares: no requirement
    # The premium comes in as cash and goes out as the option's market value: buying power is unchanged.
    assert world.ledger.balances(margin).non_margin_buying_power == before
    assert world.ledger.options_summary(margin).underlyings[0].strategy == "COVERED_CALL"


def test_options_summary_names_strategies(world: World) -> None:
    acct = world.account("O3", cash="50000")
    world.fill(acct, CALL, 1, "2.00")
    world.fill(acct, "AAPL261218C120", -1, "1.00")
    summary = world.ledger.options_summary(acct)
    (aapl,) = summary.underlyings
    assert aapl.strategy == "VERTICAL"
    assert aapl.total_market_value == 100.0 and aapl.total_cost_basis == 100.0
    assert {leg.symbol: leg.in_the_money for leg in aapl.legs} == {CALL: False, "AAPL261218C120": False}
    assert aapl.legs[0].days_to_expiration == 32
    other = world.account("O4", cash="50000")
    world.fill(other, "AAPL261218P100", 1, "4.00")
    world.fill(other, "AAPL261218C120", 1, "1.00")
    assert world.ledger.options_summary(other).underlyings[0].strategy == "STRANGLE"


# --- income, accruals, expirations -----------------------------------------------------------------------------


def test_accruals_and_month_end_interest_agree(world: World) -> None:
    november = date(2026, 11, 1)
    debit = world.account("I1", cash="1000", opened=november)
    world.fill(debit, "KO", 100, "60", on=date(2026, 11, 2))  # 6,000: a 5,000 debit
    credit = world.account("I2", margin=False, level=0, cash="36500", opened=november)
    (margin,) = (a for a in world.ledger.accruals(debit) if a.accrual_type == "MARGIN_INTEREST")
    # 5,000 x 11.825% / 360 = 1.64 a day, for the 15 days 2-16 November (the 1st still had a credit)
    assert (margin.accrual_amount, margin.rate) == (24.6, 11.825)
    daily = [a.cash_accrual_amount for a in world.ledger.cash_accruals(credit)]
    assert daily == [2.5] * 16  # 36,500 x 2.5% / 365
    ko = next(a for a in world.ledger.accruals(debit) if a.accrual_type == "DIVIDEND")
    assert (ko.symbol, ko.accrual_amount, ko.accrual_date) == ("KO", 51.0, "2026-12-15")

    world.clock.set_wall(datetime(2026, 12, 1, 15, 0, tzinfo=UTC))
    assert world.ledger.post_due_income() >= 2
    interest = [t for t in world.ledger.transactions(credit, date(2026, 11, 30), None) if t.txn_type == "INTEREST"]
    assert [t.amount for t in interest] == [75.0]  # 30 days x 2.50
    charged = [t.amount for t in world.ledger.transactions(debit, None, None) if t.txn_type == "MARGIN_INTEREST"]
    assert charged == [-47.56]  # 29 days x 1.64
    assert world.ledger.post_due_income() == 0  # nothing twice

    world.clock.set_wall(datetime(2026, 12, 16, 15, 0, tzinfo=UTC))
    world.ledger.post_due_income()
    dividends = [t for t in world.ledger.transactions(debit, None, None) if t.txn_type == "DIVIDEND"]
    assert [(d.symbol, d.amount, d.date) for d in dividends] == [("KO", 51.0, "2026-12-15")]


def test_expired_options_settle_at_the_markets_settlement_price(world: World) -> None:
    acct = world.account("X1", cash="10000")
    world.fill(acct, CALL, 2, "2.00")
    world.fill(acct, PUT, 1, "1.00")
    # After expiry the market quotes each series at its settlement value (intrinsic at the underlying's
    # 16:00 price on expiration day, 115 here) while the underlying trades on (130 the next day).
    world.market.set_price(CALL, 5.0)
    world.market.set_price(PUT, 0.0, bid=0.0, ask=0.05)
    world.market.set_price("AAPL", 130.0)
    world.clock.set_wall(datetime(2026, 12, 19, 15, 0, tzinfo=UTC))
    assert world.ledger.settle_expired_options() == 2
    assert world.ledger.positions(acct) == []
    # call: 2 x 5.00 x 100 = 1,000 in (not 2 x (130 - 110) x 100 at today's price); put expires worthless
    assert world.ledger.balances(acct).cash == 10000 - 400 - 100 + 1000
    settled = {t.symbol: (t.txn_type, t.amount) for t in world.ledger.transactions(acct, date(2026, 12, 19), None)}
    assert settled == {CALL: ("OPTION_CASH_SETTLED", 1000.0), PUT: ("OPTION_EXPIRED", 0.0)}


def test_the_ledger_settles_an_expired_option_when_and_at_the_price_the_market_settles_it(tmp_path: Path) -> None:
    universe = Universe.load()
    clock = ManualClock()
    market = MarketSimulator(universe, 11, clock)
    expiration = market.listed_expirations("AAPL")[0]
    strike = max(k for k in market.listed_strikes("AAPL", expiration) if k <= market.quote("AAPL").last * 0.95)
    symbol = format_option_symbol(
        OptionContract(underlying="AAPL", option_type=OptionType.CALL, strike=strike, expiration=expiration)
    )
    world = World(tmp_path / "paper.db", clock, market)  # type: ignore[arg-type]  # a real MarketView
    acct = world.account("X2", cash="100000", opened=date(2026, 11, 2))
    world.fill(acct, symbol, 2, str(market.quote(symbol).ask))

    clock.set_wall(expiration_time(expiration) - timedelta(seconds=1))  # 15:59:59 on expiration day
    assert world.ledger.settle_expired_options() == 0
    clock.set_wall(expiration_time(expiration))
    spot_at_expiry = market.quote("AAPL").last
    clock.set_wall(expiration_time(expiration) + timedelta(hours=18))  # 10:00 the next day
    settlement = market.quote(symbol).last
    assert settlement == round(spot_at_expiry - strike, 2) > 0  # intrinsic at the 16:00 price
    assert market.quote("AAPL").last != spot_at_expiry  # the underlying moved on since
    assert world.ledger.settle_expired_options() == 1
    (settled,) = (t for t in world.ledger.transactions(acct, None, None) if t.txn_type == "OPTION_CASH_SETTLED")
    assert (settled.symbol, settled.quantity, settled.price) == (symbol, -2, settlement)
    assert settled.amount == pytest.approx(2 * 100 * settlement, abs=0.005)
    assert world.ledger.positions(acct) == []


def test_the_scripted_markets_option_cusips_are_the_same_in_every_process(world: World) -> None:
    # A fixed value: a CUSIP built from hash() would change with the interpreter's hash seed.
    assert world.market.instrument(CALL).cusip == "O31387306"


def test_transactions_are_newest_first_within_dates(world: World) -> None:
    acct = world.account("H1", cash="100000")
    world.fill(acct, "AAPL", 1, "100", on=date(2026, 5, 4))
    world.fill(acct, "KO", 1, "60", on=date(2026, 5, 5))
    world.fill(acct, "MSFT", 1, "400", on=date(2026, 5, 6))
    window = world.ledger.transactions(acct, date(2026, 5, 5), date(2026, 5, 6))
    assert [t.symbol for t in window] == ["MSFT", "KO"]
    assert window[0].settle_date == "2026-05-07"
    assert world.ledger.transactions(acct, None, date(2026, 1, 2))[0].txn_type == "DEPOSIT"


def test_fully_paid_lending_accrues_on_held_shares(world: World) -> None:
    acct = world.account("L1", cash="100000")
    world.fill(acct, "MSFT", 100, "400", on=date(2026, 10, 1))
    world.ledger.add_loan(acct, "MSFT", 40, Decimal("1.825"), date(2026, 10, 1))
    (loan,) = world.ledger.loaned_securities(acct)
    # 40 x 400 x 1.825% / 365 = 0.80 a day, 16 days this month
    assert (loan.quantity, loan.market_value, loan.income_mtd) == (40, 16000.0, 12.8)
    world.fill(acct, "MSFT", -80, "400")
    assert world.ledger.loaned_securities(acct)[0].quantity == 20  # never more than is held


def test_trade_date_after_the_close_is_still_the_calendar_day(world: World) -> None:
    acct = world.account("D1", cash="1000")
    world.clock.set_wall(datetime(2026, 11, 17, 2, 0, tzinfo=UTC))  # 21:00 New York on the 16th
    world.fill(acct, "KO", 1, "60")
    assert world.ledger.transactions(acct, None, None)[0].date == "2026-11-16"
    assert world.ledger.transactions(acct, None, None)[0].settle_date == "2026-11-17"
