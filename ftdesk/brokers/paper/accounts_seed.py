"""The starting world of the paper brokerage: three accounts with holdings, lots and history.

Seeding books every past trade through the ledger's own fill path (so lots, closed lots and the
wash sale in the joint account follow the same rules as live fills), then funds each account with
one deposit dated before its first trade, sized so today's cash lands on the plan's target. Past
prices are today's price times a plan factor with a little seeded noise. Dividends and interest
for the past are posted afterwards by ``Ledger.post_due_income``.

Accounts (numbers ``PAP`` + six seeded digits, clearly not real):

* Individual: margin, option level 3, equities over several years (LONG and SHORT lots, a past
  gain), a covered call and a long put when the market lists suitable series, 40 NVDA on loan;
* Traditional IRA: cash account, option level 2, no shorting, no margin;
* Joint WROS: margin, option level 1, a small margin debit and a QQQ wash sale in its history.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Protocol

from ftdesk.brokers.paper.calendar import new_york_datetime
from ftdesk.brokers.paper.ledger.money import cents, price_of, sell_fees_cents, trade_date
from ftdesk.brokers.paper.ledger.risk import Exposure
from ftdesk.brokers.paper.ledger.types import Fill
from ftdesk.brokers.paper.options import format_option_symbol
from ftdesk.brokers.paper.ports import MarketView
from ftdesk.domain.accounts import AccountType, OptionContract, OptionType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound


class SeedLedger(Protocol):
    """The ledger writes seeding goes through.

    ``Ledger.seed_world`` calls this module, so this module names what it needs of the ledger here
    instead of importing ``Ledger`` back (which made the two modules import each other).
    """

    def open_account(
        self,
        acct_num: str,
        acct_type: AccountType,
        name: str,
        description: str,
        *,
        margin: bool,
        option_level: int,
        retirement: bool,
        is_default: bool,
        opened: date,
    ) -> None:
        """Create an account."""

    def apply_fills(self, fills: Sequence[Fill], *, when: datetime | None = None) -> None:
        """Book executions with their cash, lots and closed lots."""

    def post_cash(self, acct_num: str, txn_type: str, amount_cents: int, description: str, *, on: date) -> str:
        """Record a cash movement and return its transaction id."""

    def exposure(self, acct_num: str) -> Exposure:
        """Return the account's exposure (its cash among it)."""

    def position_quantity(self, acct_num: str, symbol: str) -> Decimal:
        """Return the signed quantity held of a symbol."""

    def add_loan(self, acct_num: str, symbol: str, quantity: int, rate_pct: Decimal, loan_date: date) -> None:
        """Lend shares of a holding through fully-paid lending."""


@dataclass(frozen=True)
class _Trade:
    days_ago: int
    symbol: str
    quantity: int  # signed
    factor: float  # past price / today's price


@dataclass(frozen=True)
class _OptionIdea:
    days_ago: int
    underlying: str
    option_type: OptionType
    moneyness: float  # strike / underlying price
    quantity: int  # signed contracts
    factor: float  # past premium / today's mid


@dataclass(frozen=True)
class _Plan:
    acct_type: AccountType
    name: str
    description: str
    margin: bool
    option_level: int
    retirement: bool
    opened_days_ago: int
    target_cash: Decimal
    trades: tuple[_Trade, ...]
    options: tuple[_OptionIdea, ...] = ()
    loan: tuple[str, int, Decimal, int] | None = None  # symbol, shares, rate %, days ago


_PLANS = (
    _Plan(
        AccountType.INDIVIDUAL,
        "Individual",
        "Individual Margin Brokerage",
        True,
        3,
        False,
        780,
        Decimal("32000"),
        (
            _Trade(760, "AAPL", 100, 0.72),
            _Trade(700, "MSFT", 40, 0.78),
            _Trade(640, "NVDA", 200, 0.30),
            _Trade(540, "SPY", 40, 0.80),
            _Trade(420, "AAPL", 50, 0.85),
            _Trade(300, "MSFT", -15, 0.88),
            _Trade(200, "MSFT", 30, 0.92),
            _Trade(150, "NVDA", 100, 0.70),
            _Trade(90, "SPY", 20, 0.93),
            _Trade(60, "NVDA", -50, 0.85),
            _Trade(40, "AAPL", 30, 0.97),
        ),
        options=(
            _OptionIdea(12, "AAPL", OptionType.CALL, 1.08, -1, 1.3),
            _OptionIdea(20, "SPY", OptionType.PUT, 0.95, 2, 1.25),
        ),
        loan=("NVDA", 40, Decimal("0.50"), 90),
    ),
    _Plan(
        AccountType.IRA,
        "Traditional IRA",
        "Traditional IRA (cash account)",
        False,
        2,
        True,
        900,
        Decimal("9500"),
        (
            _Trade(880, "VTI", 60, 0.68),
            _Trade(820, "KO", 150, 0.85),
            _Trade(700, "JNJ", 40, 0.95),
            _Trade(500, "VTI", 30, 0.80),
            _Trade(380, "SPY", 15, 0.83),
            _Trade(120, "KO", 50, 0.97),
            _Trade(45, "VTI", 10, 0.98),
        ),
    ),
    _Plan(
        AccountType.JOINT,
        "Joint WROS",
        "Joint WROS Margin Brokerage",
        True,
        1,
        False,
        730,
        Decimal("-3800"),
        (
            _Trade(720, "MSFT", 25, 0.76),
            _Trade(650, "KO", 100, 0.88),
            _Trade(600, "JNJ", 60, 0.97),
            _Trade(520, "VTI", 50, 0.78),
            _Trade(400, "QQQ", 30, 1.00),
            _Trade(380, "QQQ", -30, 0.90),
            _Trade(372, "QQQ", 30, 0.92),
            _Trade(180, "MSFT", 10, 0.93),
        ),
    ),
)


def seed_accounts(ledger: SeedLedger, market: MarketView, clock: Clock, rng: random.Random) -> None:
    """Create the plan's accounts with their trades, deposits and loans (inside the caller's transaction)."""
    today = trade_date(clock.now())
    used: set[str] = set()
    for index, plan in enumerate(_PLANS):
        acct = _account_number(rng, used)
        opened = _weekday(today - timedelta(days=plan.opened_days_ago))
        ledger.open_account(
            acct,
            plan.acct_type,
            plan.name,
            plan.description,
            margin=plan.margin,
            option_level=plan.option_level,
            retirement=plan.retirement,
            is_default=index == 0,
            opened=opened,
        )
        for day, fill in sorted(_fills(acct, plan, market, today, rng), key=lambda item: item[0]):
            ledger.apply_fills([fill], when=new_york_datetime(day, 12))
        # The trades left the account short of cash; one earlier deposit brings it to the target.
        traded = ledger.exposure(acct).cash_cents
        what = "CONTRIBUTION" if plan.retirement else "ELECTRONIC FUNDS TRANSFER RECEIVED"
        ledger.post_cash(acct, "DEPOSIT", cents(plan.target_cash) - traded, what, on=opened)
        if plan.loan is not None:
            symbol, shares, rate, days_ago = plan.loan
            if ledger.position_quantity(acct, symbol) >= shares:
                ledger.add_loan(acct, symbol, shares, rate, _weekday(today - timedelta(days=days_ago)))


def _fills(acct: str, plan: _Plan, market: MarketView, today: date, rng: random.Random) -> list[tuple[date, Fill]]:
    fills = []
    skipped: set[str] = set()
    for trade in plan.trades:
        last = _last(market, trade.symbol)
        if last is None or trade.symbol in skipped:
            skipped.add(trade.symbol)
            continue
        price = price_of(round(float(last) * trade.factor * rng.uniform(0.98, 1.02), 2))
        fees = sell_fees_cents(-trade.quantity, cents(price * -trade.quantity), False) if trade.quantity < 0 else 0
        day = _weekday(today - timedelta(days=trade.days_ago))
        fills.append((day, Fill(acct, trade.symbol, trade.quantity, price, fees_cents=fees)))
    for idea in plan.options:
        found = _find_option(market, idea, today)
        if found is None:
            continue
        symbol, mid = found
        price = price_of(max(0.05, round(float(mid) * idea.factor, 2)))
        commission = 65 * abs(idea.quantity)
        fees = sell_fees_cents(-idea.quantity, cents(price * 100 * -idea.quantity), True) if idea.quantity < 0 else 0
        day = _weekday(today - timedelta(days=idea.days_ago))
        fills.append((day, Fill(acct, symbol, idea.quantity, price, commission_cents=commission, fees_cents=fees)))
    return fills


def _find_option(market: MarketView, idea: _OptionIdea, today: date) -> tuple[str, Decimal] | None:
    """Return a listed option near the idea's strike expiring in one to three months, with its mid."""
    spot = _last(market, idea.underlying)
    if spot is None:
        return None
    target = float(spot) * idea.moneyness
    for months in (1, 2, 3):
        expiry = _third_friday(today, months)
        for step in (5.0, 10.0, 2.5, 1.0):
            strike = round(target / step) * step
            contract = OptionContract(
                underlying=idea.underlying, option_type=idea.option_type, strike=strike, expiration=expiry
            )
            symbol = format_option_symbol(contract)
            try:
                quote = market.quote(symbol)
            except NotFound:
                continue
            if quote.bid > 0 and quote.ask > 0:
                return symbol, (price_of(quote.bid) + price_of(quote.ask)) / 2
    return None


def _third_friday(today: date, months_ahead: int) -> date:
    month = today.month - 1 + months_ahead
    first = date(today.year + month // 12, month % 12 + 1, 1)
    return first + timedelta(days=(4 - first.weekday()) % 7 + 14)


def _last(market: MarketView, symbol: str) -> Decimal | None:
    try:
        last = market.quote(symbol).last
    except NotFound:
        return None
    return price_of(last) if last > 0 else None


def _weekday(day: date) -> date:
    while day.weekday() >= 5:
        day -= timedelta(days=1)
    return day


def _account_number(rng: random.Random, used: set[str]) -> str:
    while True:
        candidate = f"PAP{rng.randrange(100_000, 1_000_000)}"
        if candidate not in used:
            used.add(candidate)
            return candidate
