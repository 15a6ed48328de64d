"""The paper order engine: preview, place, work, fill, cancel and replace orders against the market.

Rules (the trader-visible contract of the paper brokerage):

* Preview then place: a preview validates and prices an order and stores it under a fresh
  conf_num (8 upper-case alphanumerics drawn from the seeded rng, unique in the database). A place
  must carry an unused conf_num of a preview of the same kind, account and fields; otherwise it is
  refused (``PREVIEW_NOT_FOUND``, ``PREVIEW_ALREADY_USED``, ``PREVIEW_ACCOUNT_MISMATCH``,
  ``PREVIEW_MISMATCH``) and no order is created. A place re-validates against the market and the
  account at that moment; a refusal then creates a REJECTED order and raises ``OrderRejected``.
* Fills: market orders fill at the ask (buy) or bid (sell); limit orders fill when marketable, at
  the touch (which is the limit or better); a stop triggers when the last price reaches it and then
  works as a market order (stop) or a limit order (stop-limit). One quote's displayed size is
  consumed once: a larger order fills that size now and the rest on later quotes
  (``PARTIALLY_FILLED`` then ``FILLED``); a quote showing no size counts as 100. Commission is $0
  for equities and $0.65 per option contract; sales pay the SEC fee and FINRA TAF (``ledger_money``).
* Multi-leg option orders fill all legs at once (all-or-none) at the legs' mid prices when those
  net to the limit or better (a net debit at or below the limit, a net credit at or above it); a
  market multi-leg order fills at the legs' touch prices. They need the trade agreement
  ``MULTI_LEG_OPTIONS`` accepted once per account.
* Single-leg option actions BC/SC/BP/SP buy or sell calls or puts; whether a fill opens or closes is
  decided by the position at that moment (buying against a short closes it first).
* Day orders expire at 16:00 America/New_York of their session: the day they are entered, or the
  next NYSE trading day when entered after the close, on a weekend or on a holiday (the paper market
  trades around the clock, so a day order always gets a full session). GTC orders stay until filled
  or canceled; orders on an option expire once the option has expired.
* Cancel: allowed for OPEN, PARTIALLY_FILLED and PENDING_TRIGGER orders; canceling a finished order
  raises ``Conflict``. Canceling one leg of an OCO pair cancels the pair; canceling the primary of
  an OTO/OTOCO cancels the legs waiting for it. ``action_code`` is echoed, not enforced.
* Cancel-replace: working equity orders only, conditional legs included (exactly the orders with
  ``replaceable_ind``); option and multi-leg orders are canceled and placed anew. Atomic: the old
  order becomes REPLACED (``replaced_by``) and the new one takes its place with the new quantity as
  the quantity still wanted (what the old order already filled stays on the old order). Symbol and
  action cannot change.
* Conditional orders: OTO (leg 1 waits in PENDING_TRIGGER until leg 0 is completely filled), OCO
  (both work; a fill of one reduces the other by the same quantity, a complete fill cancels it),
  OTOCO (leg 0, then legs 1 and 2 as an OCO pair). A place accepts all the preview's conf_nums (or
  the first n-1, as the upstream SDK sends them). Conditional replace swaps listed working legs.
* Buying power: each order is checked against the account's capacity (``ledger_risk``) minus what
  its working orders already use; an OCO pair uses the larger of its legs, legs waiting for a
  trigger use nothing until triggered.
"""

from __future__ import annotations

import json
import random
import sqlite3
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from ftdesk.brokers.paper.engine_model import (
    ENGINE_SCHEMA,
    EQUITY,
    MULTI_LEG,
    OPTION,
    WORKING,
    Row,
    Spec,
    canonical,
    equity_spec,
    money_text,
    multileg_spec,
    option_spec,
    row_from_db,
    status_desc,
    to_order,
)
from ftdesk.brokers.paper.ledger import Ledger
from ftdesk.brokers.paper.ledger_money import (
    cents,
    commission_cents,
    dollars,
    option_expired,
    price_float,
    price_of,
    sell_fees_cents,
    session_close,
    trading_day,
)
from ftdesk.brokers.paper.ledger_types import AccountRules, Commitment, Fill
from ftdesk.brokers.paper.ports import EventSink, Instrument, MarketView
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import invalid, iso_time, unique_id
from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import Conflict, NotFound, OrderRejected
from ftdesk.domain.events import AccountEvent, EventCategory, EventType
from ftdesk.domain.market import Quote
from ftdesk.domain.orders import (
    CancelConfirmDetail,
    CancelPreview,
    CancelPreviewDetail,
    CancelResult,
    ConditionalOrder,
    ConditionalPreview,
    ConditionalReplace,
    ConditionalType,
    EquityOrder,
    MessageDetail,
    MultiLegOptionOrder,
    OptionOrder,
    Order,
    OrderDetailResult,
    OrderPlacement,
    OrderPreview,
    OrderStatus,
    PositionIntent,
    PriceType,
    QuoteAtPreview,
    ReplaceOrder,
    StagedOrder,
    StagedOrderDraft,
    StagedOrderList,
    StagedOrderResult,
    TimeInForce,
    TradeAgreementResult,
)

__all__ = ["ENGINE_SCHEMA", "KNOWN_AGREEMENTS", "OrderEngine"]

KNOWN_AGREEMENTS = {"MULTI_LEG_OPTIONS": "Multi-leg option orders (spreads, straddles, combinations)"}
"""Trade agreements the paper brokerage knows; multi-leg option orders require MULTI_LEG_OPTIONS."""

_CONF_ALPHABET = string.ascii_uppercase + string.digits
_MAX_QTY = {EQUITY: 1_000_000, OPTION: 10_000, MULTI_LEG: 10_000}
_PRICE_BAND = 5  # a limit or stop more than 5x (or, for equities, less than 1/5 of) the last price is refused
_FAR_FROM_MARKET = Decimal("0.10")
_DEFAULT_SIZE = 100
_RECENT = timedelta(days=30)
_LEVELS = {
    1: "covered call writing",
    2: "buying calls and puts and cash-secured puts",
    3: "spreads",
    4: "uncovered (naked) option writing",
}


@dataclass
class _Priced:
    """An order priced against the market: estimates, what-if changes and warnings."""

    price: Decimal
    principal_cents: int
    commission_cents: int
    fees_cents: int
    changes: list[tuple[str, int, Decimal]]
    quote: Quote | None
    size: int = 0
    warnings: list[str] = field(default_factory=list)


def _reject(reason: str, message: str, **details: Any) -> OrderRejected:
    return OrderRejected(message, reason=reason, details=details or None)


class OrderEngine:
    """Orders of the paper brokerage, persisted in the paper store and filled against the market."""

    def __init__(
        self,
        store: PaperStore,
        ledger: Ledger,
        market: MarketView,
        clock: Clock,
        events: EventSink,
        rng: random.Random,
    ) -> None:
        self._store = store
        self._ledger = ledger
        self._market = market
        self._clock = clock
        self._events = events
        self._rng = rng
        self._outbox = ledger.outbox
        # Displayed size already taken per (symbol, side) at one quote time; liquidity, not state.
        self._taken: dict[tuple[str, int], tuple[str, int]] = {}
        ledger.set_commitments(self._commitment)

    # --- order status -------------------------------------------------------------------------------

    def order_status(self, acct_num: str | None) -> list[Order]:
        """Return working orders and those entered in the last 30 days, newest first."""
        if acct_num is not None:
            self._ledger.rules(acct_num)
        since = iso_time(self._clock.now() - _RECENT)
        rows = self._store.query(
            "SELECT * FROM paper_orders WHERE (? IS NULL OR acct_num = ?)"
            f" AND (status IN ({','.join('?' * len(WORKING))}) OR entry_time >= ?) ORDER BY seq DESC",
            (acct_num, acct_num, *WORKING, since),
        )
        return [to_order(row_from_db(r)) for r in rows]

    def order_detail(self, conf_num: str, acct_num: str | None) -> OrderDetailResult:
        """Return one order (and the other legs of its conditional group)."""
        row = self._owned(self._store.conn, conf_num, acct_num)
        orders = [to_order(row)]
        if row.group_id is not None:
            siblings = self._store.query(
                "SELECT * FROM paper_orders WHERE group_id = ? AND conf_num <> ? AND status <> 'REPLACED'"
                " ORDER BY leg_index, seq",
                (row.group_id, conf_num),
            )
            orders += [to_order(row_from_db(r)) for r in siblings]
        return OrderDetailResult(orders=orders, order=orders[0])

    # --- staged orders and agreements ---------------------------------------------------------------

    def staged_orders(self) -> StagedOrderList:
        """Return the saved orders, oldest first (null when there are none, as upstream)."""
        rows = self._store.query("SELECT * FROM paper_staged ORDER BY seq")
        staged = [
            StagedOrder(
                stage_id=r["stage_id"],
                acct_num=r["acct_num"],
                created=r["created"],
                description=r["description"],
                order=json.loads(r["payload"]),
            )
            for r in rows
        ]
        return StagedOrderList(staged_orders=staged or None)

    def save_staged(self, draft: StagedOrderDraft) -> StagedOrderResult:
        """Save an order for later; ``is_success`` is false when an ERROR message explains why not."""
        errors = []
        try:
            self._ledger.rules(draft.acct_num)
        except NotFound as exc:
            errors.append(MessageDetail(severity="ERROR", message=exc.message))
        if not draft.order:
            errors.append(MessageDetail(severity="ERROR", message="The staged order has no fields to save"))
        if errors:
            return StagedOrderResult(is_success=False, messages=errors)
        with self._outbox.atomic() as conn:
            stage_id = unique_id(conn, self._rng, "STG", "paper_staged", "stage_id")
            conn.execute(
                "INSERT INTO paper_staged (stage_id, acct_num, created, description, payload) VALUES (?, ?, ?, ?, ?)",
                (stage_id, draft.acct_num, iso_time(self._clock.now()), draft.description, json.dumps(draft.order)),
            )
        return StagedOrderResult(
            is_success=True, stage_id=stage_id, messages=[MessageDetail(severity="INFO", message="Order saved")]
        )

    def delete_staged(self, stage_id: str) -> StagedOrderResult:
        """Delete a saved order; ``is_success`` is false when there is no such order."""
        with self._outbox.atomic() as conn:
            deleted = conn.execute("DELETE FROM paper_staged WHERE stage_id = ?", (stage_id,)).rowcount
        if not deleted:
            message = MessageDetail(severity="ERROR", message=f"No staged order with stage_id {stage_id}")
            return StagedOrderResult(is_success=False, stage_id=stage_id, messages=[message])
        info = MessageDetail(severity="INFO", message="Staged order deleted")
        return StagedOrderResult(is_success=True, stage_id=stage_id, messages=[info])

    def accept_trade_agreement(self, acct_num: str, agreement_id: str) -> TradeAgreementResult:
        """Record that the account accepted a trade agreement (idempotent)."""
        self._ledger.rules(acct_num)
        if agreement_id not in KNOWN_AGREEMENTS:
            known = ", ".join(sorted(KNOWN_AGREEMENTS))
            raise invalid(
                f"Unknown trade agreement {agreement_id!r}; known agreements: {known}",
                [("agreement_id", f"must be one of: {known}")],
            )
        with self._outbox.atomic() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO paper_agreements VALUES (?, ?, ?)",
                (acct_num, agreement_id, iso_time(self._clock.now())),
            )
            row = conn.execute(
                "SELECT accepted_at FROM paper_agreements WHERE acct_num = ? AND agreement_id = ?",
                (acct_num, agreement_id),
            ).fetchone()
        return TradeAgreementResult(
            acct_num=acct_num, agreement_id=agreement_id, accepted=True, accepted_at=row["accepted_at"]
        )

    # --- preview and place --------------------------------------------------------------------------

    def preview_equity(self, order: EquityOrder) -> OrderPreview:
        """Validate and price an equity order."""
        return self._preview_single(equity_spec(order, order.acct_num), "EQUITY", order.model_dump(mode="json"))

    def place_equity(self, order: EquityOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed equity order."""
        self._check_previews([conf_num], "EQUITY", order.acct_num, order.model_dump(mode="json"))
        return self._place([equity_spec(order, order.acct_num)], [conf_num])

    def preview_option(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""
        return self._preview_single(option_spec(order), "OPTION", order.model_dump(mode="json"))

    def place_option(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""
        self._check_previews([conf_num], "OPTION", order.acct_num, order.model_dump(mode="json"))
        return self._place([option_spec(order)], [conf_num])

    def preview_multileg(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""
        return self._preview_single(multileg_spec(order), "MULTI_LEG", order.model_dump(mode="json"))

    def place_multileg(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""
        self._check_previews([conf_num], "MULTI_LEG", order.acct_num, order.model_dump(mode="json"))
        return self._place([multileg_spec(order)], [conf_num])

    def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate an atomic cancel-and-replace of a working equity order."""
        orig = self._replaceable(replace.orig_conf_num, replace.order)
        spec = equity_spec(replace.order, replace.order.acct_num)
        return self._preview_single(spec, "REPLACE", replace.model_dump(mode="json"), replacing=[orig])

    def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace."""
        self._check_previews([conf_num], "REPLACE", replace.order.acct_num, replace.model_dump(mode="json"))
        orig = self._owned(self._store.conn, replace.orig_conf_num, replace.order.acct_num)
        return self._place([equity_spec(replace.order, replace.order.acct_num)], [conf_num], replacing=[orig])

    def preview_conditional(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price an OTO, OCO or OTOCO order: one preview and conf_num per leg."""
        specs = [equity_spec(leg, order.acct_num) for leg in order.legs]
        priced = self._validate_group(specs, order.cond_order_type_code, [])
        confs = self._store_previews("CONDITIONAL", order.acct_num, order.model_dump(mode="json"), len(specs))
        return self._conditional_preview(order.acct_num, order.cond_order_type_code, specs, priced, confs)

    def place_conditional(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order."""
        confs = self._check_previews(conf_nums, "CONDITIONAL", order.acct_num, order.model_dump(mode="json"))
        specs = [equity_spec(leg, order.acct_num) for leg in order.legs]
        return self._place(specs, confs, cond=order.cond_order_type_code)

    def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a replacement of working legs of a conditional order."""
        origs, specs = self._conditional_replacement(replace)
        priced = self._validate_group(specs, None, origs, extras=[self._extra_position(o) for o in origs])
        payload = replace.model_dump(mode="json")
        confs = self._store_previews("CONDITIONAL_REPLACE", replace.order.acct_num, payload, len(specs))
        return self._conditional_preview(
            replace.order.acct_num, replace.order.cond_order_type_code, specs, priced, confs
        )

    def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""
        payload = replace.model_dump(mode="json")
        confs = self._check_previews(conf_nums, "CONDITIONAL_REPLACE", replace.order.acct_num, payload)
        origs, specs = self._conditional_replacement(replace, check_working=False)
        return self._place(specs, confs, replacing=origs)

    # --- cancel -----------------------------------------------------------------------------------------

    def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling an order would do, with warnings (partial fill, linked legs)."""
        conn = self._store.conn
        row = self._owned(conn, conf_num, acct_num)
        self._ensure_cancelable(row)
        dependents = self._dependents(conn, row)
        messages = []
        if row.filled_qty:
            messages.append(
                f"This order is partially filled: {row.filled_qty:,} of {row.spec.qty:,} executed; canceling"
                f" stops the remaining {row.remaining:,}. The executed part stands."
            )
        if dependents:
            linked = ", ".join(d.conf_num for d in dependents)
            messages.append(f"Canceling this order also cancels the linked conditional order(s) {linked}.")
        usage = self._row_usage(row)
        detail = CancelPreviewDetail(
            resp_type_code="A",
            conf_num=conf_num,
            acct_num=acct_num,
            action_code=row.spec.action,
            orig_qty=float(row.spec.qty),
            exec_qty=float(row.filled_qty),
            remaining_qty=float(row.remaining),
            est_proceeds=dollars(usage.value_cents),
            commission=dollars(row.commission_cents),
            order_confirm_msgs=messages,
        )
        return CancelPreview(cancel_preview_detail=[detail], is_accepted=True)

    def cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order (and the conditional legs linked to it)."""
        with self._outbox.atomic() as conn:
            row = self._owned(conn, conf_num, acct_num)
            self._ensure_cancelable(row)
            canceled = self._cancel(conn, row, None)
        details = [
            CancelConfirmDetail(
                resp_type_code="A",
                conf_num=r.conf_num,
                acct_num=acct_num,
                action_code=r.spec.action,
                orig_qty=float(r.spec.qty),
                exec_qty=float(r.filled_qty),
                remaining_qty=float(r.remaining),
            )
            for r in canceled
        ]
        return CancelResult(cancel_confirm_detail=details, is_accepted=True)

    # --- the market tick ------------------------------------------------------------------------------

    def process_market(self) -> int:
        """Work every order against the market: expiries, stop triggers, fills; return the number of fills."""
        self._ledger.settle_expired_options()
        self._ledger.post_due_income()
        now = self._clock.now()
        fills = 0
        seqs = [
            int(r["seq"])
            for r in self._store.query(
                f"SELECT seq FROM paper_orders WHERE status IN ({','.join('?' * len(WORKING))}) ORDER BY seq",
                WORKING,
            )
        ]
        for seq in seqs:
            row_db = self._store.query_one("SELECT * FROM paper_orders WHERE seq = ?", (seq,))
            if row_db is None:
                continue
            row = row_from_db(row_db)
            if not row.working:
                continue
            if self._expired(row, now):
                with self._outbox.atomic() as conn:
                    self._expire(conn, row)
                continue
            if row.status is not OrderStatus.PENDING_TRIGGER:
                fills += self._evaluate(row.conf_num)
        return fills

    # --- placement internals ----------------------------------------------------------------------------

    def _preview_single(
        self, spec: Spec, kind: str, payload: dict[str, Any], replacing: Sequence[Row] = ()
    ) -> OrderPreview:
        extras = [self._extra_position(r) for r in replacing] if replacing else None
        priced = self._validate_group([spec], None, replacing, extras=extras)[0]
        conf = self._store_previews(kind, spec.acct_num, payload, 1)[0]
        return self._preview_record(conf, spec, priced)

    def _store_previews(self, kind: str, acct_num: str, payload: dict[str, Any], count: int) -> list[str]:
        created = iso_time(self._clock.now())
        with self._outbox.atomic() as conn:
            confs: list[str] = []
            for index in range(count):
                conf = self._new_conf(conn)
                conn.execute(
                    "INSERT INTO paper_previews (conf_num, acct_num, kind, payload, group_id, leg_index, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (conf, acct_num, kind, canonical(payload), confs[0] if confs else conf, index, created),
                )
                confs.append(conf)
        return confs

    def _new_conf(self, conn: sqlite3.Connection) -> str:
        while True:
            conf = "".join(self._rng.choice(_CONF_ALPHABET) for _ in range(8))
            # A reopened world with the same seed draws the same numbers again: skip the ones in use.
            if conn.execute("SELECT 1 FROM paper_previews WHERE conf_num = ?", (conf,)).fetchone() is None:
                return conf

    def _check_previews(self, conf_nums: Sequence[str], kind: str, acct_num: str, payload: dict[str, Any]) -> list[str]:
        """Check that the conf_nums name one unused preview of this request; return all its conf_nums."""
        if not conf_nums:
            raise _reject("PREVIEW_NOT_FOUND", "A place needs the conf_num(s) of its preview")
        rows = []
        for conf in conf_nums:
            row = self._store.query_one("SELECT * FROM paper_previews WHERE conf_num = ?", (conf,))
            if row is None:
                raise _reject(
                    "PREVIEW_NOT_FOUND", f"No preview has conf_num {conf}; preview the order first", conf_num=conf
                )
            rows.append(row)
        group = rows[0]["group_id"]
        if any(r["group_id"] != group for r in rows):
            raise _reject("PREVIEW_MISMATCH", "The conf_nums belong to different previews")
        first = rows[0]
        if first["kind"] != kind:
            raise _reject(
                "PREVIEW_MISMATCH",
                f"conf_num {first['conf_num']} is the preview of a {_words(first['kind'])} order,"
                f" not of a {_words(kind)} order",
            )
        if first["acct_num"] != acct_num:
            raise _reject(
                "PREVIEW_ACCOUNT_MISMATCH",
                f"conf_num {first['conf_num']} was previewed for account {first['acct_num']}, not {acct_num}",
            )
        if any(r["used"] for r in rows):
            raise _reject(
                "PREVIEW_ALREADY_USED",
                f"conf_num {first['conf_num']} was already used to place an order; preview again for a new order",
            )
        previewed = json.loads(first["payload"])
        if previewed != json.loads(canonical(payload)):
            fields = sorted(k for k in set(previewed) | set(payload) if previewed.get(k) != payload.get(k))
            raise _reject(
                "PREVIEW_MISMATCH",
                f"The order differs from its preview in: {', '.join(fields)}; preview the changed order",
                fields=fields,
            )
        every = self._store.query("SELECT conf_num FROM paper_previews WHERE group_id = ? ORDER BY leg_index", (group,))
        return [r["conf_num"] for r in every]

    def _place(
        self,
        specs: list[Spec],
        confs: list[str],
        *,
        cond: ConditionalType | None = None,
        replacing: Sequence[Row] = (),
    ) -> OrderPlacement:
        acct = specs[0].acct_num
        try:
            with self._outbox.atomic() as conn:
                self._use_previews(conn, confs)
                fresh = [self._owned(conn, r.conf_num, acct) for r in replacing]
                for old in fresh:
                    if not old.replaceable:
                        raise _reject(
                            "ORDER_NOT_REPLACEABLE",
                            f"Order {old.conf_num} is {_words(old.status.value)} and can no longer be replaced",
                        )
                extras = [self._extra_position(r) for r in fresh] if fresh else None
                self._validate_group(specs, cond, fresh, extras=extras)
                rows = self._insert_orders(conn, specs, confs, cond, fresh)
        except OrderRejected as exc:
            with self._outbox.atomic() as conn:
                self._use_previews(conn, confs)
                for spec, conf in zip(specs, confs, strict=True):
                    self._insert_row(conn, conf, spec, OrderStatus.REJECTED, reject=exc)
            raise
        for row in rows:
            if row.status is OrderStatus.OPEN:
                self._evaluate(row.conf_num)
        first = self._owned(self._store.conn, confs[0], acct)
        return OrderPlacement(
            conf_num=first.conf_num,
            acct_num=acct,
            status=first.status,
            conf_nums=list(confs) if len(confs) > 1 else [],
            message=status_desc(first),
        )

    @staticmethod
    def _use_previews(conn: sqlite3.Connection, confs: Iterable[str]) -> None:
        conn.executemany("UPDATE paper_previews SET used = 1 WHERE conf_num = ?", [(c,) for c in confs])

    def _insert_orders(
        self,
        conn: sqlite3.Connection,
        specs: list[Spec],
        confs: list[str],
        cond: ConditionalType | None,
        replacing: Sequence[Row],
    ) -> list[Row]:
        rows = []
        for index, (spec, conf) in enumerate(zip(specs, confs, strict=True)):
            if replacing:
                old = replacing[index]
                row = self._insert_row(
                    conn,
                    conf,
                    spec,
                    old.status if old.status is OrderStatus.PENDING_TRIGGER else OrderStatus.OPEN,
                    group=(old.group_id, old.cond_type, old.leg_index, old.parent_conf_num),
                    replaces=old.conf_num,
                )
                conn.execute(
                    "UPDATE paper_orders SET status = 'REPLACED', replaced_by = ?, updated_time = ? WHERE conf_num = ?",
                    (conf, iso_time(self._clock.now()), old.conf_num),
                )
                conn.execute(
                    "UPDATE paper_orders SET parent_conf_num = ? WHERE parent_conf_num = ? AND status IN (?, ?, ?)",
                    (conf, old.conf_num, *WORKING),
                )
                self._publish_order(EventType.ORDER_UPDATE, self._load(conn, old.conf_num), replaced_by=conf)
            elif cond is None:
                row = self._insert_row(conn, conf, spec, OrderStatus.OPEN)
            else:
                triggered = index > 0 and cond is not ConditionalType.OCO
                status = OrderStatus.PENDING_TRIGGER if triggered else OrderStatus.OPEN
                parent = confs[0] if triggered else None
                row = self._insert_row(conn, conf, spec, status, group=(confs[0], cond, index, parent))
            rows.append(row)
        return rows

    def _insert_row(
        self,
        conn: sqlite3.Connection,
        conf: str,
        spec: Spec,
        status: OrderStatus,
        *,
        group: tuple[str | None, ConditionalType | None, int | None, str | None] = (None, None, None, None),
        replaces: str | None = None,
        reject: OrderRejected | None = None,
    ) -> Row:
        now = self._clock.now()
        expires = self._day_close(spec) if status is OrderStatus.OPEN else None
        legs = json.dumps([leg.__dict__ for leg in spec.legs]) if spec.legs else None
        group_id, cond, leg_index, parent = group
        conn.execute(
            "INSERT INTO paper_orders (conf_num, acct_num, kind, symbol, action, qty, price_type, limit_price,"
            " stop_price, tif, status, entry_time, expires_at, updated_time, group_id, cond_type, leg_index,"
            " parent_conf_num, replaces, legs, reject_reason, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conf,
                spec.acct_num,
                spec.kind,
                spec.symbol,
                spec.action,
                spec.qty,
                spec.price_type.value,
                _text(spec.limit),
                _text(spec.stop),
                spec.tif.value,
                status.value,
                iso_time(now),
                expires,
                iso_time(now),
                group_id,
                cond.value if cond else None,
                leg_index,
                parent,
                replaces,
                legs,
                reject.reason if reject else None,
                reject.message if reject else None,
            ),
        )
        row = self._load(conn, conf)
        extra = {"reason": reject.reason} if reject else {}
        self._publish_order(EventType.ORDER_UPDATE, row, **extra)
        return row

    def _day_close(self, spec: Spec) -> str | None:
        if spec.tif is not TimeInForce.DAY:
            return None
        return iso_time(session_close(trading_day(self._clock.now())))

    # --- validation -----------------------------------------------------------------------------------

    def _validate_group(
        self,
        specs: list[Spec],
        cond: ConditionalType | None,
        replacing: Sequence[Row],
        *,
        extras: list[int] | None = None,
    ) -> list[_Priced]:
        """Validate every order of a group and the group's buying power; return each order priced."""
        acct = specs[0].acct_num
        rules = self._ledger.rules(acct)
        priced = []
        for index, spec in enumerate(specs):
            extra = extras[index] if extras else 0
            if cond in (ConditionalType.OTO, ConditionalType.OTOCO) and index > 0 and specs[0].symbol == spec.symbol:
                # A triggered leg may sell (or cover) what the primary leg will have bought (or shorted).
                extra += specs[0].sign * specs[0].qty
            priced.append(self._validate(spec, rules, replacing, extra))
        if cond is ConditionalType.OCO:
            active = [max(range(len(specs)), key=lambda i: self._usage(specs[i], priced[i]))]
        else:
            active = [0] if cond is not None else list(range(len(specs)))
        need = sum(self._usage(specs[i], priced[i]) for i in active)
        available = self._ledger.exposure(acct).capacity_cents - self._commitment(acct, replacing).usage_cents
        if need > available:
            what = "excess margin equity" if rules.margin else "settled cash"
            cost = priced[active[0]].principal_cents
            raise _reject(
                "INSUFFICIENT_BUYING_POWER",
                f"Insufficient buying power: this order (about {money_text(Decimal(cost) / 100)}) needs"
                f" {money_text(Decimal(need) / 100)} of {what} and account {acct} has"
                f" {money_text(Decimal(max(0, available)) / 100)} available",
                needed=dollars(need),
                available=dollars(max(0, available)),
            )
        return priced

    def _validate(self, spec: Spec, rules: AccountRules, replacing: Sequence[Row], extra: int) -> _Priced:
        if spec.qty > _MAX_QTY[spec.kind]:
            unit = "shares" if spec.kind == EQUITY else "contracts"
            raise _reject(
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
                raise _reject("WRONG_SECURITY_TYPE", f"{spec.symbol} is {kind}: use {other}")
            quote = self._market.quote(spec.symbol)
            self._check_prices(spec, quote, is_option)
            priced = self._price(spec, instrument, quote, spec.qty)
            if spec.kind == EQUITY:
                self._check_equity(spec, rules, replacing, extra)
            else:
                self._check_option(spec, rules, instrument)
        priced.warnings.extend(self._warnings(spec, priced))
        return priced

    def _listed(self, symbol: str) -> Instrument:
        try:
            return self._market.instrument(symbol)
        except NotFound:
            raise _reject("UNKNOWN_SYMBOL", f"Unknown symbol {symbol}", symbol=symbol) from None

    def _check_prices(self, spec: Spec, quote: Quote, is_option: bool) -> None:
        last = price_of(quote.last) or (price_of(quote.bid) + price_of(quote.ask)) / 2
        if last <= 0:
            return
        upper = last * _PRICE_BAND + (1 if is_option else 0)
        lower = Decimal(0) if is_option else last / _PRICE_BAND
        for label, value in (("limit", spec.limit), ("stop", spec.stop)):
            if value is not None and not lower <= value <= upper:
                raise _reject(
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
                raise _reject(
                    "INVALID_STOP_PRICE",
                    f"A {'buy' if buy else 'sell'} stop must be {side} the last price ({money_text(last)});"
                    f" {money_text(spec.stop)} would trigger at once",
                )

    def _check_equity(self, spec: Spec, rules: AccountRules, replacing: Sequence[Row], extra: int) -> None:
        held = self._ledger.position_quantity(spec.acct_num, spec.symbol)
        exclude = {r.conf_num for r in replacing}
        if spec.action == "B" and held < 0:
            raise _reject(
                "POSITION_CONFLICT",
                f"You hold a short position of {-held:,} {spec.symbol}: use Buy to Cover (BC) to close it",
            )
        if spec.action == "SS":
            if not rules.short_allowed:
                raise _reject(
                    "SHORT_NOT_ALLOWED",
                    f"Short selling is not allowed in {rules.acct_type.value.lower()} account {rules.acct_num}:"
                    " it needs a margin account outside a retirement plan",
                )
            if held > 0:
                raise _reject(
                    "POSITION_CONFLICT",
                    f"You hold {held:,} {spec.symbol} long: sell them (S) before selling short",
                )
        if spec.action in ("S", "BC"):
            long_side = spec.action == "S"
            position = max(0, held if long_side else -held) + (extra if long_side else -extra)
            reserved = self._reserved(spec.acct_num, spec.symbol, spec.action, exclude)
            available = max(0, position - reserved)
            if spec.qty > available:
                verb = "sell" if long_side else "buy to cover"
                what = "long" if long_side else "short"
                held_text = f"you hold {max(0, held if long_side else -held):,} {what}"
                open_text = f" and {reserved:,} are already in open orders" if reserved else ""
                hint = " (to sell short, use SS)" if long_side and held <= 0 else ""
                raise _reject(
                    "INSUFFICIENT_POSITION",
                    f"You can {verb} at most {available:,} {spec.symbol}: {held_text}{open_text}{hint}",
                    available=available,
                )

    def _check_option(self, spec: Spec, rules: AccountRules, instrument: Instrument) -> None:
        option = instrument.option
        assert option is not None
        if option_expired(option, self._clock.now()):
            raise _reject("OPTION_EXPIRED", f"{spec.symbol} expired on {option.expiration.isoformat()}")
        kind = "C" if option.option_type.value == "CALL" else "P"
        if spec.action[1] != kind:
            raise _reject(
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
            raise _reject(
                "INSUFFICIENT_POSITION",
                f"{spec.action} {spec.qty} {spec.symbol} to close needs a {what} position of at least {spec.qty}, but"
                f" you hold {abs(held)} {'short' if held < 0 else 'long'}",
            )
        if spec.intent is PositionIntent.OPEN and held * spec.sign < 0:
            raise _reject(
                "POSITION_CONFLICT",
                f"{spec.action} {spec.symbol} to open, but you hold the opposite side ({held}): use position_intent"
                " close to close it",
            )

    def _check_multileg(self, spec: Spec, rules: AccountRules) -> _Priced:
        if not self._store.query_one(
            "SELECT 1 FROM paper_agreements WHERE acct_num = ? AND agreement_id = 'MULTI_LEG_OPTIONS'",
            (spec.acct_num,),
        ):
            raise _reject(
                "TRADE_AGREEMENT_REQUIRED",
                f"Multi-leg option orders need the trade agreement MULTI_LEG_OPTIONS; accept it for account"
                f" {spec.acct_num} first",
                agreement_id="MULTI_LEG_OPTIONS",
            )
        if len({leg.symbol for leg in spec.legs}) != len(spec.legs):
            raise _reject("INVALID_LEGS", "Each leg of a multi-leg order must be a different option")
        now = self._clock.now()
        quotes: dict[str, Quote] = {}
        for leg in spec.legs:
            option = self._listed(leg.symbol).option
            if option is None or option.underlying != spec.symbol:
                raise _reject("INVALID_LEGS", f"Leg {leg.symbol} is not an option on {spec.symbol}")
            if option_expired(option, now):
                raise _reject("OPTION_EXPIRED", f"{leg.symbol} expired on {option.expiration.isoformat()}")
            held = self._ledger.position_quantity(spec.acct_num, leg.symbol)
            if leg.closing and (held * -leg.sign) < leg.qty:
                what = "short" if leg.sign > 0 else "long"
                raise _reject(
                    "INSUFFICIENT_POSITION",
                    f"{leg.action} {leg.qty} {leg.symbol} closes a {what} position but you hold {abs(held)}"
                    f" {'short' if held < 0 else 'long'}",
                )
            if not leg.closing and held * leg.sign < 0:
                raise _reject(
                    "POSITION_CONFLICT",
                    f"{leg.action} {leg.symbol} opens a position but you hold the opposite side:"
                    f" use {'BC' if leg.sign > 0 else 'SC'} to close it",
                )
            quotes[leg.symbol] = self._market.quote(leg.symbol)
        priced = self._price_multileg(spec, quotes, spec.qty)
        gross = sum((units * price_of(quotes[leg.symbol].ask) for leg, units in spec.leg_units()), Decimal(0))
        if spec.limit is not None and spec.limit > gross * _PRICE_BAND + 1:
            raise _reject(
                "PRICE_OUT_OF_BOUNDS",
                f"The net price {money_text(spec.limit)} is too far from the market: the legs are worth about"
                f" {money_text(gross)} per spread in all",
                price=price_float(spec.limit),
            )
        self._check_level(rules, priced.changes)
        return priced

    def _check_level(self, rules: AccountRules, changes: list[tuple[str, int, Decimal]]) -> None:
        before = self._ledger.exposure(rules.acct_num).cover
        after = self._ledger.exposure(rules.acct_num, changes).cover
        need = 0
        for symbol, qty, _ in changes:
            held = self._ledger.position_quantity(rules.acct_num, symbol)
            if qty > 0 and held + qty > max(held, 0):
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
            raise _reject(
                "OPTION_LEVEL_TOO_LOW",
                f"This order needs option level {need} ({_LEVELS[need]}); account {rules.acct_num} is approved for"
                f" level {rules.option_level}.{margin}",
                required_level=need,
                account_level=rules.option_level,
            )

    def _reserved(self, acct: str, symbol: str, action: str, exclude: set[str]) -> int:
        """Return the shares that working orders with this action already claim (an OCO pair counts once)."""
        rows = self._store.query(
            "SELECT * FROM paper_orders WHERE acct_num = ? AND symbol = ? AND action = ? AND kind = 'EQUITY'"
            " AND status IN ('OPEN', 'PARTIALLY_FILLED')",
            (acct, symbol, action),
        )
        claims: dict[str, int] = {}
        for r in rows:
            row = row_from_db(r)
            if row.conf_num not in exclude:
                claims[row.oco_key] = max(claims.get(row.oco_key, 0), row.remaining)
        return sum(claims.values())

    def _extra_position(self, row: Row) -> int:
        """Shares a waiting conditional leg may use because its primary will buy (or short) them."""
        if row.status is not OrderStatus.PENDING_TRIGGER or row.parent_conf_num is None:
            return 0
        parent = self._owned(self._store.conn, row.parent_conf_num, row.spec.acct_num)
        if parent.spec.symbol != row.spec.symbol or not parent.working:
            return 0
        return parent.spec.sign * parent.remaining

    # --- pricing and buying power -----------------------------------------------------------------------

    def _price(self, spec: Spec, instrument: Instrument, quote: Quote, qty: int) -> _Priced:
        buy = spec.sign > 0
        touch = price_of(quote.ask if buy else quote.bid) or price_of(quote.last)
        if spec.price_type is PriceType.MARKET:
            est = touch
        elif spec.price_type is PriceType.STOP:
            assert spec.stop is not None
            est = max(spec.stop, touch) if buy else min(spec.stop, touch)
        else:
            assert spec.limit is not None
            est = min(spec.limit, touch) if buy else max(spec.limit, touch)
        is_option = instrument.security_type is SecurityType.OPTION
        principal = cents(est * qty * instrument.multiplier)
        return _Priced(
            price=est,
            principal_cents=principal,
            commission_cents=commission_cents(qty, is_option),
            fees_cents=0 if buy else sell_fees_cents(qty, principal, is_option),
            changes=[(spec.symbol, spec.sign * qty, est)],
            quote=quote,
            size=quote.ask_size if buy else quote.bid_size,
        )

    def _price_multileg(self, spec: Spec, quotes: dict[str, Quote], spreads: int) -> _Priced:
        touch_net = Decimal(0)
        changes = []
        commission = fees = 0
        multiplier = self._ledger.instrument(spec.legs[0].symbol).multiplier
        for leg, units in spec.leg_units():
            quote = quotes[leg.symbol]
            touch = price_of(quote.ask if leg.sign > 0 else quote.bid)
            touch_net += leg.sign * units * touch
            contracts = units * spreads
            changes.append((leg.symbol, leg.sign * contracts, touch))
            commission += commission_cents(contracts, True)
            if leg.sign < 0:
                fees += sell_fees_cents(contracts, cents(touch * contracts * multiplier), True)
        net = abs(touch_net) if spec.limit is None else spec.limit
        try:
            underlying: Quote | None = self._market.quote(spec.symbol)
        except NotFound:
            underlying = None
        return _Priced(
            price=net,
            principal_cents=cents(net * multiplier * spreads),
            commission_cents=commission,
            fees_cents=fees,
            changes=changes,
            quote=underlying,
        )

    def _usage(self, spec: Spec, priced: _Priced, capacity: int | None = None) -> int:
        """Return the buying-power capacity an order would use if it filled as priced."""
        now = self._ledger.exposure(spec.acct_num).capacity_cents if capacity is None else capacity
        after = self._ledger.exposure(spec.acct_num, priced.changes).capacity_cents
        return max(0, now - after) + (priced.commission_cents if spec.sign > 0 else 0)

    def _row_usage(self, row: Row, capacity: int | None = None) -> Commitment:
        spec = row.spec
        try:
            if spec.kind == MULTI_LEG:
                quotes = {leg.symbol: self._market.quote(leg.symbol) for leg in spec.legs}
                priced = self._price_multileg(spec, quotes, row.remaining)
            else:
                instrument = self._ledger.instrument(spec.symbol)
                priced = self._price(spec, instrument, self._market.quote(spec.symbol), row.remaining)
        except NotFound:
            return Commitment()
        value = priced.principal_cents + priced.commission_cents if spec.sign > 0 else 0
        return Commitment(self._usage(spec, priced, capacity), value)

    def _commitment(self, acct_num: str, exclude: Sequence[Row] = ()) -> Commitment:
        """Return what an account's working orders hold back (the ledger's commitment source)."""
        skip = {r.conf_num for r in exclude}
        rows = [
            row_from_db(r)
            for r in self._store.query(
                "SELECT * FROM paper_orders WHERE acct_num = ? AND status IN ('OPEN', 'PARTIALLY_FILLED')",
                (acct_num,),
            )
        ]
        rows = [r for r in rows if r.conf_num not in skip]
        if not rows:
            return Commitment()
        capacity = self._ledger.exposure(acct_num).capacity_cents
        usage: dict[str, int] = {}
        value: dict[str, int] = {}
        for row in rows:
            c = self._row_usage(row, capacity)
            usage[row.oco_key] = max(usage.get(row.oco_key, 0), c.usage_cents)
            value[row.oco_key] = max(value.get(row.oco_key, 0), c.value_cents)
        return Commitment(sum(usage.values()), sum(value.values()))

    def _warnings(self, spec: Spec, priced: _Priced) -> list[str]:
        warnings = []
        if spec.tif is TimeInForce.DAY:
            day = trading_day(self._clock.now())
            warnings.append(f"Day order: if it is not filled it expires at 4:00 PM ET on {day.isoformat()}.")
        quote = priced.quote
        if spec.kind == MULTI_LEG:
            warnings.append(
                "Multi-leg orders fill all legs at once, at the legs' mid prices, when they net to your limit"
                " or better."
            )
            return warnings
        assert quote is not None
        last = price_of(quote.last)
        if spec.limit is not None and last > 0 and abs(spec.limit - last) > last * _FAR_FROM_MARKET:
            warnings.append(
                f"The limit price {money_text(spec.limit)} is more than 10% away from the last price"
                f" {money_text(last)}."
            )
        if spec.price_type is PriceType.STOP:
            assert spec.stop is not None
            warnings.append(
                f"This stop order becomes a market order when the last price reaches {money_text(spec.stop)}."
            )
        if spec.price_type is PriceType.STOP_LIMIT:
            assert spec.stop is not None and spec.limit is not None
            warnings.append(
                f"This stop-limit order becomes a limit order at {money_text(spec.limit)} when the last price reaches"
                f" {money_text(spec.stop)}."
            )
        size = priced.size if priced.size > 0 else _DEFAULT_SIZE
        if spec.qty > size:
            side = "ask" if spec.sign > 0 else "bid"
            warnings.append(
                f"The order is larger than the {size:,} displayed at the {side}; it may fill in parts over several"
                " quotes."
            )
        if spec.action == "SS":
            warnings.append(
                "Short sale: the proceeds are held in the account and 50% of the value is required (Reg T)."
            )
        return warnings

    def _preview_record(self, conf: str, spec: Spec, priced: _Priced) -> OrderPreview:
        buy = spec.sign > 0
        quote = priced.quote
        cost = priced.principal_cents + priced.commission_cents + priced.fees_cents if buy else 0
        proceeds = 0 if buy else priced.principal_cents - priced.commission_cents - priced.fees_cents
        return OrderPreview(
            conf_num=conf,
            acct_num=spec.acct_num,
            symbol=spec.symbol,
            action=spec.action,
            action_desc=spec.action_desc,
            qty=float(spec.qty),
            price_type=spec.price_type,
            limit_price=price_float(spec.limit) if spec.limit is not None else None,
            stop_price=price_float(spec.stop) if spec.stop is not None else None,
            tif=spec.tif,
            position_intent=spec.intent,
            broker_action_code=spec.action,
            broker_action_desc=spec.action_desc,
            quote=QuoteAtPreview(price=quote.last, bid=quote.bid, ask=quote.ask, time=quote.time) if quote else None,
            est_commission=dollars(priced.commission_cents),
            est_fees=dollars(priced.fees_cents),
            est_cost=dollars(cost),
            est_proceeds=dollars(proceeds),
            warnings=priced.warnings,
        )

    def _conditional_preview(
        self, acct: str, cond: ConditionalType, specs: list[Spec], priced: list[_Priced], confs: list[str]
    ) -> ConditionalPreview:
        legs = [self._preview_record(c, s, p) for c, s, p in zip(confs, specs, priced, strict=True)]
        warnings = []
        if cond in (ConditionalType.OTO, ConditionalType.OTOCO):
            warnings.append("The triggered legs start working only once the first leg is completely filled.")
        if cond in (ConditionalType.OCO, ConditionalType.OTOCO):
            warnings.append("A fill of one OCO leg reduces the other by the same quantity; a complete fill cancels it.")
        return ConditionalPreview(
            acct_num=acct, cond_order_type_code=cond, conf_nums=confs, legs=legs, warnings=warnings
        )

    # --- replace internals ------------------------------------------------------------------------------

    def _replaceable(self, conf_num: str, order: EquityOrder) -> Row:
        row = self._owned(self._store.conn, conf_num, order.acct_num)
        if not row.replaceable:  # the rule Order.status_detail.replaceable_ind reports
            if not row.working:
                raise _reject(
                    "ORDER_NOT_REPLACEABLE",
                    f"Order {conf_num} is {_words(row.status.value)} and can no longer be replaced",
                )
            raise _reject(
                "ORDER_NOT_REPLACEABLE",
                f"Order {conf_num} is an {row.spec.kind.lower().replace('_', '-')} order: only equity orders can be"
                " replaced; cancel it and place a new one",
            )
        spec = equity_spec(order, order.acct_num)
        if (spec.symbol, spec.action) != (row.spec.symbol, row.spec.action):
            raise _reject(
                "REPLACE_MISMATCH",
                f"A replacement keeps the symbol and action of order {conf_num} ({row.spec.action} {row.spec.symbol});"
                " to change them, cancel it and place a new order",
            )
        return row

    def _conditional_replacement(
        self, replace: ConditionalReplace, *, check_working: bool = True
    ) -> tuple[list[Row], list[Spec]]:
        order = replace.order
        origs = [self._owned(self._store.conn, conf, order.acct_num) for conf in replace.orig_conf_nums]
        groups = {o.group_id for o in origs}
        if len(groups) != 1 or None in groups:
            raise _reject("REPLACE_MISMATCH", "The orders to replace must be legs of one conditional order")
        group_size = self._store.query_one(
            "SELECT COUNT(DISTINCT leg_index) AS n FROM paper_orders WHERE group_id = ?", (origs[0].group_id,)
        )
        if (
            origs[0].cond_type is not order.cond_order_type_code
            or group_size is None
            or group_size["n"] != len(order.legs)
        ):
            raise _reject(
                "REPLACE_MISMATCH",
                f"The replacement must be a {origs[0].cond_type.value if origs[0].cond_type else ''} order with the"
                " same number of legs as the original",
            )
        specs = []
        for orig in origs:
            if check_working and not orig.replaceable:
                raise _reject(
                    "ORDER_NOT_REPLACEABLE",
                    f"Leg {orig.conf_num} is {_words(orig.status.value)} and can no longer be replaced",
                )
            spec = equity_spec(order.legs[orig.leg_index or 0], order.acct_num)
            if (spec.symbol, spec.action) != (orig.spec.symbol, orig.spec.action):
                raise _reject(
                    "REPLACE_MISMATCH",
                    f"Leg {orig.leg_index} must keep its symbol and action ({orig.spec.action} {orig.spec.symbol})",
                )
            specs.append(spec)
        return origs, specs

    # --- working orders -----------------------------------------------------------------------------------

    def _evaluate(self, conf_num: str) -> int:
        """Try to fill one working order now; return 1 when something filled."""
        with self._outbox.atomic() as conn:
            row = self._load(conn, conf_num)
            if row.status not in (OrderStatus.OPEN, OrderStatus.PARTIALLY_FILLED):
                return 0
            if row.spec.kind == MULTI_LEG:
                return self._evaluate_multileg(conn, row)
            spec = row.spec
            try:
                quote = self._market.quote(spec.symbol)
            except NotFound:
                return 0
            buy = spec.sign > 0
            if spec.stop is not None and not row.triggered:
                last = price_of(quote.last)
                if not ((buy and last >= spec.stop) or (not buy and last <= spec.stop)):
                    return 0
                conn.execute("UPDATE paper_orders SET triggered = 1 WHERE conf_num = ?", (conf_num,))
                row = self._load(conn, conf_num)
                self._publish_order(EventType.ORDER_UPDATE, row, event="STOP_TRIGGERED", last=price_float(last))
            touch = price_of(quote.ask if buy else quote.bid)
            if touch <= 0:
                return 0
            limit = spec.limit
            if limit is not None and ((buy and touch > limit) or (not buy and touch < limit)):
                return 0
            wanted = self._closable(conn, row)
            if wanted == 0:
                return 0
            qty = self._take(spec.symbol, spec.sign, quote, wanted)
            if qty == 0:
                return 0
            self._fill(conn, row, qty, touch, [(spec.symbol, spec.sign * qty, touch)])
            return 1

    def _closable(self, conn: sqlite3.Connection, row: Row) -> int:
        """Return how much of an order may fill; cancel a closing order whose position is gone."""
        spec = row.spec
        if spec.kind != EQUITY or spec.action not in ("S", "BC"):
            return row.remaining
        held = self._ledger.position_quantity(spec.acct_num, spec.symbol)
        position = held if spec.action == "S" else -held
        if position <= 0:
            what = "long" if spec.action == "S" else "short"
            self._cancel(conn, row, f"no {what} position in {spec.symbol} left to close")
            return 0
        return min(row.remaining, position)

    def _take(self, symbol: str, side: int, quote: Quote, wanted: int) -> int:
        """Take up to ``wanted`` of the size displayed at the touch, once per quote."""
        shown = (quote.ask_size if side > 0 else quote.bid_size) or _DEFAULT_SIZE
        stamp, used = self._taken.get((symbol, side), ("", 0))
        if stamp != quote.time:
            used = 0
        qty = min(wanted, max(0, shown - used))
        self._taken[(symbol, side)] = (quote.time, used + qty)
        return qty

    def _evaluate_multileg(self, conn: sqlite3.Connection, row: Row) -> int:
        spec = row.spec
        try:
            quotes = {leg.symbol: self._market.quote(leg.symbol) for leg in spec.legs}
        except NotFound:
            return 0
        prices: dict[str, Decimal] = {}
        net = Decimal(0)
        for leg, units in spec.leg_units():
            q = quotes[leg.symbol]
            bid, ask = price_of(q.bid), price_of(q.ask)
            if ask <= 0:
                return 0
            touch = ask if leg.sign > 0 else bid
            price = touch if spec.price_type is PriceType.MARKET else price_of((bid + ask) / 2)
            prices[leg.symbol] = price
            net += leg.sign * units * price
        if spec.limit is not None:
            ok = {"DB": net <= spec.limit, "CR": -net >= spec.limit, "EV": net <= 0}[spec.action]
            if not ok:
                return 0
        qty = row.remaining
        changes = [(leg.symbol, leg.sign * units * qty, prices[leg.symbol]) for leg, units in spec.leg_units()]
        self._fill(conn, row, qty, abs(net), changes)
        return 1

    def _fill(
        self, conn: sqlite3.Connection, row: Row, qty: int, price: Decimal, changes: list[tuple[str, int, Decimal]]
    ) -> None:
        """Book a fill of ``qty`` at ``price`` (per share, contract or spread) with its ledger effect."""
        spec = row.spec
        fills = []
        for symbol, signed, leg_price in changes:
            instrument = self._ledger.instrument(symbol)
            is_option = instrument.security_type is SecurityType.OPTION
            size = abs(signed)
            principal = cents(leg_price * size * instrument.multiplier)
            fees = sell_fees_cents(size, principal, is_option) if signed < 0 else 0
            fills.append(
                Fill(spec.acct_num, symbol, signed, leg_price, commission_cents(size, is_option), fees, row.conf_num)
            )
        cumulative = row.filled_qty + qty
        value = row.fill_value + price * qty
        status = OrderStatus.FILLED if cumulative >= spec.qty else OrderStatus.PARTIALLY_FILLED
        self._publish(
            EventType.EXECUTION,
            row,
            status=status.value,
            fill_qty=qty,
            price=price_float(price),
            cum_qty=cumulative,
            remaining_qty=spec.qty - cumulative,
            avg_price=price_float(value / cumulative),
            partial=status is OrderStatus.PARTIALLY_FILLED,
        )
        conn.execute(
            "UPDATE paper_orders SET filled_qty = ?, fill_value = ?, commission_cents = commission_cents + ?,"
            " fees_cents = fees_cents + ?, status = ?, updated_time = ? WHERE conf_num = ?",
            (
                cumulative,
                str(value),
                sum(f.commission_cents for f in fills),
                sum(f.fees_cents for f in fills),
                status.value,
                iso_time(self._clock.now()),
                row.conf_num,
            ),
        )
        self._after_fill(conn, self._load(conn, row.conf_num), qty)
        # The ledger books last, so its balance event already sees the order (and its OCO partner) settled.
        self._ledger.apply_fills(fills)

    def _after_fill(self, conn: sqlite3.Connection, row: Row, qty: int) -> None:
        """Apply a fill's consequences to the other legs of its conditional order."""
        if row.group_id is None:
            return
        for sibling in self._group(conn, row.group_id):
            if sibling.conf_num == row.conf_num or not sibling.working:
                continue
            if sibling.oco_key == row.oco_key != row.conf_num and sibling.status is not OrderStatus.PENDING_TRIGGER:
                left = sibling.spec.qty - qty
                if row.status is OrderStatus.FILLED or left <= sibling.filled_qty:
                    self._cancel(conn, sibling, f"the other OCO leg {row.conf_num} filled", cascade=False)
                else:
                    conn.execute("UPDATE paper_orders SET qty = ? WHERE conf_num = ?", (left, sibling.conf_num))
                    reduced = self._load(conn, sibling.conf_num)
                    self._publish_order(EventType.ORDER_UPDATE, reduced, event="REDUCED_BY_OCO", by=row.conf_num)
            elif (
                row.status is OrderStatus.FILLED
                and row.leg_index == 0
                and sibling.status is OrderStatus.PENDING_TRIGGER
                and sibling.parent_conf_num == row.conf_num
            ):
                conn.execute(
                    "UPDATE paper_orders SET status = 'OPEN', expires_at = ?, updated_time = ? WHERE conf_num = ?",
                    (self._day_close(sibling.spec), iso_time(self._clock.now()), sibling.conf_num),
                )
                triggered = self._load(conn, sibling.conf_num)
                self._publish_order(EventType.ORDER_UPDATE, triggered, event="TRIGGERED", by=row.conf_num)

    def _expired(self, row: Row, now: datetime) -> bool:
        if row.expires_at is not None and row.expires_at <= iso_time(now):
            return True
        symbols = [leg.symbol for leg in row.spec.legs] if row.spec.kind == MULTI_LEG else [row.spec.symbol]
        if row.spec.kind == EQUITY:
            return False
        options = (self._ledger.instrument(symbol).option for symbol in symbols)
        return any(option is not None and option_expired(option, now) for option in options)

    def _expire(self, conn: sqlite3.Connection, row: Row) -> None:
        self._set_status(conn, row, OrderStatus.EXPIRED, None)
        self._publish_order(EventType.ORDER_UPDATE, self._load(conn, row.conf_num))
        for child in self._dependents(conn, row, siblings=False):
            self._cancel(conn, child, f"primary order {row.conf_num} expired", cascade=False)

    def _cancel(self, conn: sqlite3.Connection, row: Row, note: str | None, *, cascade: bool = True) -> list[Row]:
        """Cancel an order (and, with ``cascade``, the conditional legs that depend on it)."""
        self._set_status(conn, row, OrderStatus.CANCELED, note)
        canceled = [self._load(conn, row.conf_num)]
        self._publish(
            EventType.ORDER_CANCELED,
            canceled[0],
            canceled_qty=row.remaining,
            exec_qty=row.filled_qty,
            reason=note or "canceled by the trader",
        )
        if cascade:
            for dependent in self._dependents(conn, row):
                canceled += self._cancel(conn, dependent, f"linked order {row.conf_num} was canceled", cascade=False)
        return canceled

    def _set_status(self, conn: sqlite3.Connection, row: Row, status: OrderStatus, note: str | None) -> None:
        conn.execute(
            "UPDATE paper_orders SET status = ?, note = COALESCE(?, note), updated_time = ? WHERE conf_num = ?",
            (status.value, note, iso_time(self._clock.now()), row.conf_num),
        )

    def _dependents(self, conn: sqlite3.Connection, row: Row, *, siblings: bool = True) -> list[Row]:
        """Return the working orders a cancel of ``row`` takes along: its OCO partner and waiting children."""
        if row.group_id is None:
            return []
        result = []
        for other in self._group(conn, row.group_id):
            if other.conf_num == row.conf_num or not other.working:
                continue
            partner = siblings and other.oco_key == row.oco_key != row.conf_num
            child = other.status is OrderStatus.PENDING_TRIGGER and other.parent_conf_num == row.conf_num
            if partner or child:
                result.append(other)
        return result

    # --- small helpers ------------------------------------------------------------------------------------

    def _group(self, conn: sqlite3.Connection, group_id: str) -> list[Row]:
        rows = conn.execute("SELECT * FROM paper_orders WHERE group_id = ? ORDER BY leg_index, seq", (group_id,))
        return [row_from_db(r) for r in rows]

    @staticmethod
    def _load(conn: sqlite3.Connection, conf_num: str) -> Row:
        return row_from_db(conn.execute("SELECT * FROM paper_orders WHERE conf_num = ?", (conf_num,)).fetchone())

    def _owned(self, conn: sqlite3.Connection, conf_num: str, acct_num: str | None) -> Row:
        r = conn.execute("SELECT * FROM paper_orders WHERE conf_num = ?", (conf_num,)).fetchone()
        if r is None or (acct_num is not None and r["acct_num"] != acct_num):
            where = f" in account {acct_num}" if acct_num else ""
            raise NotFound(f"Order {conf_num} not found{where}")
        return row_from_db(r)

    @staticmethod
    def _ensure_cancelable(row: Row) -> None:
        if row.working:
            return
        if row.status is OrderStatus.REPLACED:
            raise Conflict(f"Order {row.conf_num} was replaced by {row.replaced_by}; cancel that order instead")
        state = {
            OrderStatus.FILLED: "already filled",
            OrderStatus.CANCELED: "already canceled",
            OrderStatus.EXPIRED: "expired at the close",
            OrderStatus.REJECTED: "was rejected",
        }[row.status]
        raise Conflict(f"Order {row.conf_num} is {state}; there is nothing to cancel")

    def _publish_order(self, event_type: EventType, row: Row, **extra: Any) -> None:
        self._publish(event_type, row, status=row.status.value, status_desc=status_desc(row), **extra)

    def _publish(self, event_type: EventType, row: Row, **extra: Any) -> None:
        spec = row.spec
        desc: dict[str, Any] = {
            "acct_num": spec.acct_num,
            "conf_num": row.conf_num,
            "symbol": spec.symbol,
            "action": spec.action,
            "qty": spec.qty,
            "price_type": spec.price_type.value,
            "limit_price": price_float(spec.limit) if spec.limit is not None else None,
            "stop_price": price_float(spec.stop) if spec.stop is not None else None,
            **extra,
        }
        if row.parent_conf_num:
            desc["parent_conf_num"] = row.parent_conf_num
        event = AccountEvent(
            event_type=event_type.value, category=EventCategory.ORDER, desc=desc, time=iso_time(self._clock.now())
        )
        self._outbox.publish(self._events, event)


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _words(code: str) -> str:
    """Return a code such as PARTIALLY_FILLED as words: partially filled."""
    return code.lower().replace("_", " ")
