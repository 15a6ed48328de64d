"""Validation of paper orders: what the market, the account and its positions allow, priced as they go.

A preview and a place both run these checks; a place runs them again against the market and the
account at that moment. Each refusal is an ``OrderRejected`` with a machine-readable reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from types import MappingProxyType

from ftdesk.brokers.paper.engine.model import EQUITY, MULTI_LEG, OPTION, Row, Spec, money_text, reject, row_from_db
from ftdesk.brokers.paper.engine.pricing import Priced, Pricer
from ftdesk.brokers.paper.ledger.ledger import Ledger
from ftdesk.brokers.paper.ledger.money import dollars, option_expired, price_float, price_of
from ftdesk.brokers.paper.ledger.types import AccountRules
from ftdesk.brokers.paper.ports import Instrument, MarketView
from ftdesk.brokers.paper.quantities import ZERO, number
from ftdesk.brokers.paper.quantities import text as quantity_text
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import Quote
from ftdesk.domain.orders import ConditionalType, PositionIntent

_MAX_QTY = MappingProxyType({EQUITY: 1_000_000, OPTION: 10_000, MULTI_LEG: 10_000})
_PRICE_BAND = 5  # a limit or stop more than 5x (or, for equities, less than 1/5 of) the last price is refused
_LEVELS = MappingProxyType(
    {
        1: "covered call writing",
        2: "buying calls and puts and cash-secured puts",
        3: "spreads",
        4: "uncovered (naked) option writing",
    }
)


class OrderChecks:
    """Checks an order (or a conditional group) before it is previewed or placed, and prices it."""

    def __init__(self, store: PaperStore, ledger: Ledger, market: MarketView, clock: Clock, pricer: Pricer) -> None:
        self._store = store
        self._ledger = ledger
        self._market = market
        self._clock = clock
        self._pricer = pricer

    def validate_group(
        self,
        specs: list[Spec],
        cond: ConditionalType | None,
        replacing: Sequence[Row],
        *,
        extras: list[Decimal] | None = None,
    ) -> list[Priced]:
        """Validate every order of a group and the group's buying power; return each order priced."""
        acct = specs[0].acct_num
        rules = self._ledger.rules(acct)
        priced = []
        for index, spec in enumerate(specs):
            extra = extras[index] if extras else Decimal(0)
            if cond in (ConditionalType.OTO, ConditionalType.OTOCO) and index > 0 and specs[0].symbol == spec.symbol:
                # A triggered leg may sell (or cover) what the primary leg will have bought (or shorted).
                extra += specs[0].sign * specs[0].qty
            priced.append(self._validate(spec, rules, replacing, extra))
        if cond is ConditionalType.OCO:
            active = [max(range(len(specs)), key=lambda i: self._pricer.usage(specs[i], priced[i]))]
        else:
            active = [0] if cond is not None else list(range(len(specs)))
        need = sum(self._pricer.usage(specs[i], priced[i]) for i in active)
        available = self._ledger.exposure(acct).capacity_cents - self._pricer.commitment(acct, replacing).usage_cents
        if need > available:
            what = "excess margin equity" if rules.margin else "settled cash"
            cost = priced[active[0]].principal_cents
            raise reject(
                "INSUFFICIENT_BUYING_POWER",
                f"Insufficient buying power: this order (about {money_text(Decimal(cost) / 100)}) needs"
                f" {money_text(Decimal(need) / 100)} of {what} and account {acct} has"
                f" {money_text(Decimal(max(0, available)) / 100)} available",
                needed=dollars(need),
                available=dollars(max(0, available)),
            )
        return priced

    def _validate(self, spec: Spec, rules: AccountRules, replacing: Sequence[Row], extra: Decimal) -> Priced:
        if spec.qty > _MAX_QTY[spec.kind]:
            unit = "shares" if spec.kind == EQUITY else "contracts"
            raise reject(
                "INVALID_QUANTITY",
                f"Quantity {spec.qty:,} is above the {_MAX_QTY[spec.kind]:,} {unit} an order may have",
            )
        if spec.kind == MULTI_LEG:
            priced = self._check_multileg(spec, rules)
        else:
            instrument = self._listed(spec.symbol)
            is_option = instrument.security_type is SecurityType.OPTION
            if is_option != (spec.kind == OPTION):
                kind = "an option" if is_option else "not an option"
                other = "a single-leg option order" if is_option else "an equity order"
                raise reject("WRONG_SECURITY_TYPE", f"{spec.symbol} is {kind}: use {other}")
            quote = self._quote(spec.symbol)
            self._check_prices(spec, quote, is_option)
            priced = self._pricer.price(spec, instrument, quote, spec.qty)
            if spec.kind == EQUITY:
                self._check_equity(spec, rules, replacing, extra)
            else:
                self._check_option(spec, rules, instrument)
        priced.warnings.extend(self._pricer.warnings(spec, priced))
        return priced

    def _quote(self, symbol: str) -> Quote:
        """Return the market's quote; a market that has none for a listed symbol refuses the order, saying why."""
        try:
            return self._market.quote(symbol)
        except NotFound as exc:
            raise reject("NO_QUOTE", exc.message, symbol=symbol) from None

    def _listed(self, symbol: str) -> Instrument:
        try:
            return self._market.instrument(symbol)
        except NotFound:
            raise reject("UNKNOWN_SYMBOL", f"Unknown symbol {symbol}", symbol=symbol) from None

    def _check_prices(self, spec: Spec, quote: Quote, is_option: bool) -> None:
        last = price_of(quote.last) or (price_of(quote.bid) + price_of(quote.ask)) / 2
        if last <= 0:
            return
        upper = last * _PRICE_BAND + (1 if is_option else 0)
        lower = Decimal(0) if is_option else last / _PRICE_BAND
        for label, value in (("limit", spec.limit), ("stop", spec.stop)):
            if value is not None and not lower <= value <= upper:
                raise reject(
                    "PRICE_OUT_OF_BOUNDS",
                    f"The {label} price {money_text(value)} is too far from the market (last {money_text(last)}):"
                    f" it must be between {money_text(lower.quantize(Decimal('0.01')))} and"
                    f" {money_text(upper.quantize(Decimal('0.01')))}",
                    price=price_float(value),
                    last=price_float(last),
                )
        if spec.stop is not None:
            buy = spec.sign > 0
            if (buy and spec.stop <= last) or (not buy and spec.stop >= last):
                side = "above" if buy else "below"
                raise reject(
                    "INVALID_STOP_PRICE",
                    f"A {'buy' if buy else 'sell'} stop must be {side} the last price ({money_text(last)});"
                    f" {money_text(spec.stop)} would trigger at once",
                )

    def _check_equity(self, spec: Spec, rules: AccountRules, replacing: Sequence[Row], extra: Decimal) -> None:
        held = self._ledger.position_quantity(spec.acct_num, spec.symbol)
        exclude = {r.conf_num for r in replacing}
        if spec.action == "B" and held < 0:
            raise reject(
                "POSITION_CONFLICT",
                f"You hold a short position of {-held:,} {spec.symbol}: use Buy to Cover (BC) to close it",
            )
        if spec.action == "SS":
            if not rules.short_allowed:
                raise reject(
                    "SHORT_NOT_ALLOWED",
                    f"Short selling is not allowed in {rules.acct_type.value.lower()} account {rules.acct_num}:"
                    " it needs a margin account outside a retirement plan",
                )
            if held > 0:
                raise reject(
                    "POSITION_CONFLICT",
                    f"You hold {held:,} {spec.symbol} long: sell them (S) before selling short",
                )
        if spec.action in ("S", "BC"):
            long_side = spec.action == "S"
            position = max(ZERO, held if long_side else -held) + (extra if long_side else -extra)
            reserved = self._reserved(spec.acct_num, spec.symbol, spec.action, exclude)
            available = max(ZERO, position - reserved)
            if spec.qty > available:
                verb = "sell" if long_side else "buy to cover"
                what = "long" if long_side else "short"
                held_text = f"you hold {quantity_text(max(ZERO, held if long_side else -held), grouped=True)} {what}"
                open_text = (
                    f" and {quantity_text(reserved, grouped=True)} are already in open orders" if reserved else ""
                )
                hint = " (to sell short, use SS)" if long_side and held <= 0 else ""
                most = quantity_text(available, grouped=True)
                raise reject(
                    "INSUFFICIENT_POSITION",
                    f"You can {verb} at most {most} {spec.symbol}: {held_text}{open_text}{hint}",
                    available=number(available),
                )

    def _check_option(self, spec: Spec, rules: AccountRules, instrument: Instrument) -> None:
        option = instrument.option
        assert option is not None
        if option_expired(option, self._clock.now()):
            raise reject("OPTION_EXPIRED", f"{spec.symbol} expired on {option.expiration.isoformat()}")
        kind = "C" if option.option_type.value == "CALL" else "P"
        if spec.action[1] != kind:
            raise reject(
                "INVALID_ACTION",
                f"{spec.action} ({spec.action_desc}) does not match {spec.symbol}, which is a"
                f" {option.option_type.value.lower()}",
            )
        if spec.intent is not None:
            self._check_intent(spec)
        self._check_level(rules, [(spec.symbol, spec.sign * spec.qty, Decimal(0))])

    def _check_intent(self, spec: Spec) -> None:
        """Hold a single-leg option order to its stated position intent, as a multi-leg leg is held to BC/SC/BO/SO."""
        held = self._ledger.position_quantity(spec.acct_num, spec.symbol)
        if spec.intent is PositionIntent.CLOSE and held * -spec.sign < spec.qty:
            what = "short" if spec.sign > 0 else "long"
            raise reject(
                "INSUFFICIENT_POSITION",
                f"{spec.action} {spec.qty} {spec.symbol} to close needs a {what} position of at least {spec.qty}, but"
                f" you hold {abs(held)} {'short' if held < 0 else 'long'}",
            )
        if spec.intent is PositionIntent.OPEN and held * spec.sign < 0:
            raise reject(
                "POSITION_CONFLICT",
                f"{spec.action} {spec.symbol} to open, but you hold the opposite side ({held}): use position_intent"
                " close to close it",
            )

    def _check_multileg(self, spec: Spec, rules: AccountRules) -> Priced:
        if not self._store.query_one(
            "SELECT 1 FROM paper_agreements WHERE acct_num = ? AND agreement_id = 'MULTI_LEG_OPTIONS'",
            (spec.acct_num,),
        ):
            raise reject(
                "TRADE_AGREEMENT_REQUIRED",
                f"Multi-leg option orders need the trade agreement MULTI_LEG_OPTIONS; accept it for account"
                f" {spec.acct_num} first",
                agreement_id="MULTI_LEG_OPTIONS",
            )
        if len({leg.symbol for leg in spec.legs}) != len(spec.legs):
            raise reject("INVALID_LEGS", "Each leg of a multi-leg order must be a different option")
        now = self._clock.now()
        quotes: dict[str, Quote] = {}
        for leg in spec.legs:
            option = self._listed(leg.symbol).option
            if option is None or option.underlying != spec.symbol:
                raise reject("INVALID_LEGS", f"Leg {leg.symbol} is not an option on {spec.symbol}")
            if option_expired(option, now):
                raise reject("OPTION_EXPIRED", f"{leg.symbol} expired on {option.expiration.isoformat()}")
            held = self._ledger.position_quantity(spec.acct_num, leg.symbol)
            if leg.closing and (held * -leg.sign) < leg.qty:
                what = "short" if leg.sign > 0 else "long"
                raise reject(
                    "INSUFFICIENT_POSITION",
                    f"{leg.action} {leg.qty} {leg.symbol} closes a {what} position but you hold {abs(held)}"
                    f" {'short' if held < 0 else 'long'}",
                )
            if not leg.closing and held * leg.sign < 0:
                raise reject(
                    "POSITION_CONFLICT",
                    f"{leg.action} {leg.symbol} opens a position but you hold the opposite side:"
                    f" use {'BC' if leg.sign > 0 else 'SC'} to close it",
                )
            quotes[leg.symbol] = self._quote(leg.symbol)
        priced = self._pricer.price_multileg(spec, quotes, spec.qty)
        gross = sum((units * price_of(quotes[leg.symbol].ask) for leg, units in spec.leg_units()), Decimal(0))
        if spec.limit is not None and spec.limit > gross * _PRICE_BAND + 1:
            raise reject(
                "PRICE_OUT_OF_BOUNDS",
                f"The net price {money_text(spec.limit)} is too far from the market: the legs are worth about"
                f" {money_text(gross)} per spread in all",
                price=price_float(spec.limit),
            )
        self._check_level(rules, priced.changes)
        return priced

    def _check_level(self, rules: AccountRules, changes: list[tuple[str, Decimal, Decimal]]) -> None:
        before = self._ledger.exposure(rules.acct_num).cover
        after = self._ledger.exposure(rules.acct_num, changes).cover
        need = 0
        for symbol, qty, _ in changes:
            held = self._ledger.position_quantity(rules.acct_num, symbol)
            if qty > 0 and held + qty > max(held, ZERO):
                need = 2
        for level, grew in (
            (1, after.covered_calls > before.covered_calls),
            (2, after.cash_secured_puts > before.cash_secured_puts),
            (3, after.spreads > before.spreads),
            (4, after.naked > before.naked),
        ):
            if grew:
                need = max(need, level)
        if need > rules.option_level or (need >= 4 and not rules.margin):
            margin = " Uncovered writing also needs a margin account." if need >= 4 and not rules.margin else ""
            raise reject(
                "OPTION_LEVEL_TOO_LOW",
                f"This order needs option level {need} ({_LEVELS[need]}); account {rules.acct_num} is approved for"
                f" level {rules.option_level}.{margin}",
                required_level=need,
                account_level=rules.option_level,
            )

    def _reserved(self, acct: str, symbol: str, action: str, exclude: set[str]) -> Decimal:
        """Return the shares that working orders with this action already claim (an OCO pair counts once)."""
        rows = self._store.query(
            "SELECT * FROM paper_orders WHERE acct_num = ? AND symbol = ? AND action = ? AND kind = 'EQUITY'"
            " AND status IN ('OPEN', 'PARTIALLY_FILLED')",
            (acct, symbol, action),
        )
        claims: dict[str, Decimal] = {}
        for r in rows:
            row = row_from_db(r)
            if row.conf_num not in exclude:
                claims[row.oco_key] = max(claims.get(row.oco_key, Decimal(0)), row.remaining)
        return sum(claims.values(), Decimal(0))
