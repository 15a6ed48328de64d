"""Margin and option requirements of a set of holdings: what the buying power of an account rests on.

Rules of the paper brokerage (Reg T style, documented here once):

* Margin account: equity = cash (short-sale proceeds included) + long market value - short market
  value, options at market on both sides. Initial requirement = 50% of long and of short stock
  market value + 100% of long options (no loan value) + the short-option requirement below.
  Excess equity = equity - initial requirement; margin buying power = 2 x excess equity;
  non-margin buying power (options, withdrawals) = 1 x excess equity. Maintenance requirement =
  25% of long stock + 30% of short stock + long options + the short-option requirement.
* Cash account: buying power = settled cash (credits count once settled, debits at once) minus
  the short-option requirement; no shorting, no borrowing.
* Short options, per underlying: a short call is covered by 100 long shares (nothing required),
  else paired with a long call expiring no earlier (the strike difference is required), else
  naked. A short put is paired with a long put expiring no earlier (the strike difference), else
  naked where uncovered writing is allowed (margin account, level 4+), else cash-secured (the
  strike x 100). Naked: 20% of the underlying minus the out-of-the-money amount, at least 10% of
  the underlying (calls) or of the strike (puts), plus the option's market value; all x 100.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from ftdesk.brokers.paper.ledger.money import cents
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.domain.accounts import OptionContract, OptionType, SecurityType

_HALF = Decimal("0.5")


@dataclass(frozen=True)
class Holding:
    """One position as the risk rules see it: signed quantity, multiplier and current price."""

    symbol: str
    quantity: Decimal | int
    last: Decimal
    instrument: Instrument | None

    @property
    def multiplier(self) -> int:
        """Shares per unit."""
        return self.instrument.multiplier if self.instrument else 1

    @property
    def option(self) -> OptionContract | None:
        """The option terms, for an option holding."""
        return self.instrument.option if self.instrument else None

    @property
    def market_value_cents(self) -> int:
        """Signed market value at the last price."""
        return cents(self.last * self.quantity * self.multiplier)


@dataclass(frozen=True)
class OptionCover:
    """How an account's short options are covered, in contracts, and what they require."""

    requirement_cents: int = 0
    covered_calls: int = 0
    cash_secured_puts: int = 0
    spreads: int = 0
    naked: int = 0


@dataclass(frozen=True)
class _Short:
    strike: Decimal
    expiration: date
    premium: Decimal
    multiplier: int


def _naked_cents(kind: OptionType, short: _Short, underlying: Decimal) -> int:
    if kind is OptionType.CALL:
        otm = max(Decimal(0), short.strike - underlying)
        floor = underlying / 10
    else:
        otm = max(Decimal(0), underlying - short.strike)
        floor = short.strike / 10
    per_share = max(underlying / 5 - otm, floor) + short.premium
    return cents(per_share * short.multiplier)


def option_cover(
    holdings: Iterable[Holding], underlying_prices: dict[str, Decimal], naked_allowed: bool
) -> OptionCover:
    """Return the cover and requirement of the short options among ``holdings``."""
    shares: dict[str, Decimal] = defaultdict(Decimal)
    longs: dict[tuple[str, OptionType], list[tuple[Decimal, date]]] = defaultdict(list)
    shorts: dict[tuple[str, OptionType], list[_Short]] = defaultdict(list)
    for h in holdings:
        opt = h.option
        if opt is None:
            if h.quantity > 0:
                shares[h.symbol] += h.quantity
            continue
        key = (opt.underlying, opt.option_type)
        strike = Decimal(str(opt.strike))
        if h.quantity > 0:
            longs[key].extend([(strike, opt.expiration)] * int(h.quantity))
        elif h.quantity < 0:
            shorts[key].extend([_Short(strike, opt.expiration, h.last, opt.multiplier)] * int(-h.quantity))
    total = OptionCover()
    for (underlying, kind), contracts in shorts.items():
        price = underlying_prices.get(underlying, Decimal(0))
        free_shares = shares.get(underlying, Decimal(0)) if kind is OptionType.CALL else Decimal(0)
        # Either order of using cover can be the better one (shares on a short that a long could have
        # paired leave another short naked, and the reverse): take the one with fewer naked contracts,
        # then the lower requirement.
        best = min(
            (
                _assign(kind, contracts, longs.get((underlying, kind), []), free_shares, price, naked_allowed, order)
                for order in ("shares_first", "spreads_first")
            ),
            key=lambda cover: (cover.naked, cover.requirement_cents),
        )
        total = OptionCover(
            total.requirement_cents + best.requirement_cents,
            total.covered_calls + best.covered_calls,
            total.cash_secured_puts + best.cash_secured_puts,
            total.spreads + best.spreads,
            total.naked + best.naked,
        )
    return total


def _assign(
    kind: OptionType,
    shorts: list[_Short],
    longs: list[tuple[Decimal, date]],
    free_shares: Decimal,
    underlying_price: Decimal,
    naked_allowed: bool,
    order: str,
) -> OptionCover:
    """Cover one underlying's short calls or puts with shares and long options in the given order."""
    available = sorted(longs, reverse=kind is OptionType.PUT)
    # Cover goes to the shorts that would cost most to carry otherwise: the lowest call strikes first.
    pending = sorted(shorts, key=lambda s: s.strike, reverse=kind is OptionType.PUT)
    requirement = covered = secured = spreads = 0
    unpaired: list[_Short] = []

    def pair_with_long(short: _Short) -> bool:
        # A long of the same kind expiring no earlier makes a spread; the strike difference is required.
        nonlocal requirement, spreads
        pair = next((i for i, (_, exp) in enumerate(available) if exp >= short.expiration), None)
        if pair is None:
            return False
        long_strike, _ = available.pop(pair)
        width = long_strike - short.strike if kind is OptionType.CALL else short.strike - long_strike
        requirement += cents(max(Decimal(0), width) * short.multiplier)
        spreads += 1
        return True

    if order == "spreads_first":
        for short in pending:
            if not pair_with_long(short):
                unpaired.append(short)
        pending, unpaired = unpaired, []
    for short in pending:
        if free_shares >= short.multiplier:
            free_shares -= short.multiplier
            covered += 1
            continue
        if not pair_with_long(short):
            unpaired.append(short)
    naked = 0
    for short in unpaired:
        if kind is OptionType.PUT and not naked_allowed:
            requirement += cents(short.strike * short.multiplier)
            secured += 1
        else:
            requirement += _naked_cents(kind, short, underlying_price)
            naked += 1
    return OptionCover(requirement, covered, secured, spreads, naked)


@dataclass(frozen=True)
class Exposure:
    """The money figures of one account from which balances and buying power are derived."""

    margin: bool
    cash_cents: int
    unsettled_credit_cents: int
    short_proceeds_cents: int
    long_stock_cents: int
    short_stock_cents: int
    long_option_cents: int
    short_option_cents: int
    cover: OptionCover

    @property
    def equity_cents(self) -> int:
        """Net worth: cash plus long minus short market value."""
        return (
            self.cash_cents
            + self.long_stock_cents
            - self.short_stock_cents
            + self.long_option_cents
            - self.short_option_cents
        )

    @property
    def free_cash_cents(self) -> int:
        """Cash that is the account's own: short-sale proceeds are held aside."""
        return self.cash_cents - self.short_proceeds_cents

    @property
    def settled_cash_cents(self) -> int:
        """Free cash less credits that have not settled yet."""
        return self.free_cash_cents - self.unsettled_credit_cents

    @property
    def initial_requirement_cents(self) -> int:
        """Reg T initial requirement (margin accounts)."""
        stock = cents((self.long_stock_cents + self.short_stock_cents) * _HALF / 100)
        return stock + self.long_option_cents + self.cover.requirement_cents

    @property
    def maintenance_cents(self) -> int:
        """Maintenance requirement (margin) or option reserve (cash accounts)."""
        if not self.margin:
            return self.cover.requirement_cents
        stock = cents(Decimal(self.long_stock_cents) / 400 + Decimal(self.short_stock_cents) * 3 / 1000)
        return stock + self.long_option_cents + self.cover.requirement_cents

    @property
    def capacity_cents(self) -> int:
        """What orders may use: excess equity (margin) or settled cash less option reserves (cash)."""
        if self.margin:
            return self.equity_cents - self.initial_requirement_cents
        return self.settled_cash_cents - self.cover.requirement_cents


def exposure(
    holdings: Iterable[Holding],
    *,
    margin: bool,
    naked_allowed: bool,
    cash_cents: int,
    unsettled_credit_cents: int,
    short_proceeds_cents: int,
    underlying_prices: dict[str, Decimal],
) -> Exposure:
    """Return the exposure of an account holding ``holdings`` with this cash."""
    items = list(holdings)
    long_stock = short_stock = long_opt = short_opt = 0
    for h in items:
        value = h.market_value_cents
        is_option = h.instrument is not None and h.instrument.security_type is SecurityType.OPTION
        if is_option:
            long_opt += max(value, 0)
            short_opt += max(-value, 0)
        else:
            long_stock += max(value, 0)
            short_stock += max(-value, 0)
    return Exposure(
        margin=margin,
        cash_cents=cash_cents,
        unsettled_credit_cents=unsettled_credit_cents,
        short_proceeds_cents=short_proceeds_cents,
        long_stock_cents=long_stock,
        short_stock_cents=short_stock,
        long_option_cents=long_opt,
        short_option_cents=short_opt,
        cover=option_cover(items, underlying_prices, naked_allowed),
    )
