"""The paper order engine: preview, place, cancel and replace orders; the parts it is built of do the work.

Rules (the trader-visible contract of the paper brokerage):

* Preview then place (``engine.previews``): a preview validates and prices an order and stores it
  under a fresh conf_num; a place must carry an unused conf_num of a preview of the same kind,
  account and fields. A place re-validates (``engine.checks``) against the market and the account at
  that moment; a refusal then creates a REJECTED order and raises ``OrderRejected``.
* Fills, stops and expiries are the market tick's (``engine.fills``).
* Single-leg option actions BC/SC/BP/SP buy or sell calls or puts; whether a fill opens or closes is
  decided by the position at that moment (buying against a short closes it first). Multi-leg orders
  need the trade agreement ``MULTI_LEG_OPTIONS`` accepted once per account.
* Day orders expire at 16:00 America/New_York of their session: the day they are entered, or the
  next NYSE trading day when entered after the close, on a weekend or on a holiday (the paper market
  trades around the clock, so a day order always gets a full session). GTC orders stay until filled
  or canceled.
* Cancel: allowed for OPEN, PARTIALLY_FILLED and PENDING_TRIGGER orders; canceling a finished order
  raises ``Conflict``. Linked conditional legs go along (``engine.links``). ``action_code`` is
  echoed, not enforced.
* Cancel-replace: working equity orders only, conditional legs included (exactly the orders with
  ``replaceable_ind``); option and multi-leg orders are canceled and placed anew. Atomic: the old
  order becomes REPLACED (``replaced_by``) and the new one takes its place with the new quantity as
  the quantity still wanted (what the old order already filled stays on the old order). Symbol and
  action cannot change.
* Conditional orders (OTO, OCO, OTOCO; ``engine.links``): a place accepts all the preview's
  conf_nums (or the first n-1, as the upstream SDK sends them). Conditional replace swaps listed
  working legs. Any replace of a leg (plain or conditional) keeps the order's links in one transaction:
  a replaced primary hands its waiting legs to its replacement, and a replaced OCO leg stays in the pair.
* Buying power (``engine.pricing``): each order is checked against the account's capacity
  (``ledger.risk``) minus what its working orders already use.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.paper.engine.checks import OrderChecks
from ftdesk.brokers.paper.engine.fills import Matcher
from ftdesk.brokers.paper.engine.links import OrderLinks
from ftdesk.brokers.paper.engine.model import (
    WORKING,
    Row,
    Spec,
    equity_spec,
    multileg_spec,
    option_spec,
    reject,
    row_from_db,
    status_desc,
    to_order,
    words,
)
from ftdesk.brokers.paper.engine.previews import Previews
from ftdesk.brokers.paper.engine.pricing import Pricer, conditional_preview, preview_record
from ftdesk.brokers.paper.engine.rows import OrderRows
from ftdesk.brokers.paper.ledger.ledger import Ledger
from ftdesk.brokers.paper.ledger.money import dollars
from ftdesk.brokers.paper.ports import EventSink, TradingMarket
from ftdesk.brokers.paper.quantities import number
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import invalid, iso_time, unique_id
from ftdesk.domain.cancel_codes import check_cancel_code
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import Conflict, NotFound, OrderRejected
from ftdesk.domain.events import EventType
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
    ReplaceOrder,
    StagedOrder,
    StagedOrderDraft,
    StagedOrderList,
    StagedOrderResult,
    TradeAgreementResult,
)

__all__ = ("KNOWN_AGREEMENTS", "OrderEngine")

KNOWN_AGREEMENTS = MappingProxyType({"MULTI_LEG_OPTIONS": "Multi-leg option orders (spreads, straddles, combinations)"})
"""Trade agreements the paper brokerage knows; multi-leg option orders require MULTI_LEG_OPTIONS."""

_RECENT = timedelta(days=30)


class OrderEngine:
    """Orders of the paper brokerage, persisted in the paper store and filled against the market."""

    def __init__(
        self,
        store: PaperStore,
        ledger: Ledger,
        market: TradingMarket,
        clock: Clock,
        events: EventSink,
        rng: random.Random,
    ) -> None:
        self._store = store
        self._ledger = ledger
        self._clock = clock
        self._rng = rng
        self._outbox = ledger.outbox
        self._rows = OrderRows(self._outbox, clock, events)
        self._links = OrderLinks(store, self._rows, clock)
        self._previews = Previews(store, self._outbox, clock, rng)
        self._pricer = Pricer(store, ledger, market, clock)
        self._checks = OrderChecks(store, ledger, market, clock, self._pricer)
        self._matcher = Matcher(store, self._outbox, ledger, market, clock, self._rows, self._links)
        ledger.set_commitments(self._pricer.commitment)

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
        row = self._rows.owned(self._store.conn, conf_num, acct_num)
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
        self._previews.check([conf_num], "EQUITY", order.acct_num, order.model_dump(mode="json"))
        return self._place([equity_spec(order, order.acct_num)], [conf_num])

    def preview_option(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""
        return self._preview_single(option_spec(order), "OPTION", order.model_dump(mode="json"))

    def place_option(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""
        self._previews.check([conf_num], "OPTION", order.acct_num, order.model_dump(mode="json"))
        return self._place([option_spec(order)], [conf_num])

    def preview_multileg(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""
        return self._preview_single(multileg_spec(order), "MULTI_LEG", order.model_dump(mode="json"))

    def place_multileg(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""
        self._previews.check([conf_num], "MULTI_LEG", order.acct_num, order.model_dump(mode="json"))
        return self._place([multileg_spec(order)], [conf_num])

    def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate an atomic cancel-and-replace of a working equity order."""
        orig = self._replaceable(replace.orig_conf_num, replace.order)
        spec = equity_spec(replace.order, replace.order.acct_num)
        return self._preview_single(spec, "REPLACE", replace.model_dump(mode="json"), replacing=[orig])

    def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace."""
        self._previews.check([conf_num], "REPLACE", replace.order.acct_num, replace.model_dump(mode="json"))
        orig = self._rows.owned(self._store.conn, replace.orig_conf_num, replace.order.acct_num)
        return self._place([equity_spec(replace.order, replace.order.acct_num)], [conf_num], replacing=[orig])

    def preview_conditional(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price an OTO, OCO or OTOCO order: one preview and conf_num per leg."""
        specs = [equity_spec(leg, order.acct_num) for leg in order.legs]
        priced = self._checks.validate_group(specs, order.cond_order_type_code, [])
        confs = self._previews.create("CONDITIONAL", order.acct_num, order.model_dump(mode="json"), len(specs))
        return conditional_preview(order.acct_num, order.cond_order_type_code, specs, priced, confs)

    def place_conditional(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order."""
        confs = self._previews.check(conf_nums, "CONDITIONAL", order.acct_num, order.model_dump(mode="json"))
        specs = [equity_spec(leg, order.acct_num) for leg in order.legs]
        return self._place(specs, confs, cond=order.cond_order_type_code)

    def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a replacement of working legs of a conditional order."""
        origs, specs = self._links.replacement(replace)
        priced = self._checks.validate_group(specs, None, origs, extras=[self._links.extra_position(o) for o in origs])
        payload = replace.model_dump(mode="json")
        confs = self._previews.create("CONDITIONAL_REPLACE", replace.order.acct_num, payload, len(specs))
        return conditional_preview(replace.order.acct_num, replace.order.cond_order_type_code, specs, priced, confs)

    def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""
        payload = replace.model_dump(mode="json")
        confs = self._previews.check(conf_nums, "CONDITIONAL_REPLACE", replace.order.acct_num, payload)
        origs, specs = self._links.replacement(replace, check_working=False)
        return self._place(specs, confs, replacing=origs)

    # --- cancel -----------------------------------------------------------------------------------------

    def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling an order would do, with warnings (partial fill, linked legs)."""
        conn = self._store.conn
        row = self._rows.owned(conn, conf_num, acct_num)
        self._ensure_cancelable(row)
        self._check_code(row, action_code)
        dependents = self._links.dependents(conn, row)
        messages = []
        if row.filled_qty:
            messages.append(
                f"This order is partially filled: {row.filled_qty:,} of {row.spec.qty:,} executed; canceling"
                f" stops the remaining {row.remaining:,}. The executed part stands."
            )
        if dependents:
            linked = ", ".join(d.conf_num for d in dependents)
            messages.append(f"Canceling this order also cancels the linked conditional order(s) {linked}.")
        usage = self._pricer.row_usage(row)
        detail = CancelPreviewDetail(
            resp_type_code="A",
            conf_num=conf_num,
            acct_num=acct_num,
            action_code=row.spec.action,
            orig_qty=number(row.spec.qty),
            exec_qty=number(row.filled_qty),
            remaining_qty=number(row.remaining),
            est_proceeds=dollars(usage.value_cents),
            commission=dollars(row.commission_cents),
            order_confirm_msgs=messages,
        )
        return CancelPreview(cancel_preview_detail=[detail], is_accepted=True)

    def cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order (and the conditional legs linked to it)."""
        with self._outbox.atomic() as conn:
            row = self._rows.owned(conn, conf_num, acct_num)
            self._ensure_cancelable(row)
            self._check_code(row, action_code)
            canceled = self._links.cancel(conn, row, None)
        details = [
            CancelConfirmDetail(
                resp_type_code="A",
                conf_num=r.conf_num,
                acct_num=acct_num,
                action_code=r.spec.action,
                orig_qty=number(r.spec.qty),
                exec_qty=number(r.filled_qty),
                remaining_qty=number(r.remaining),
            )
            for r in canceled
        ]
        return CancelResult(cancel_confirm_detail=details, is_accepted=True)

    # --- the market tick ------------------------------------------------------------------------------

    def process_market(self) -> int:
        """Work every order against the market: expiries, stop triggers, fills; return the number of fills."""
        return self._matcher.process_market()

    def process_symbol(self, symbol: str) -> int:
        """Work the orders on one symbol against its new quote; return the number of fills."""
        return self._matcher.process_symbol(symbol)

    def working_symbols(self) -> list[str]:
        """Return the symbols the working orders need quotes of."""
        return self._matcher.working_symbols()

    # --- placement internals ----------------------------------------------------------------------------

    def _preview_single(
        self, spec: Spec, kind: str, payload: dict[str, Any], replacing: Sequence[Row] = ()
    ) -> OrderPreview:
        extras = [self._links.extra_position(r) for r in replacing] if replacing else None
        priced = self._checks.validate_group([spec], None, replacing, extras=extras)[0]
        conf = self._previews.create(kind, spec.acct_num, payload, 1)[0]
        return preview_record(conf, spec, priced)

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
                self._previews.use(conn, confs)
                fresh = [self._rows.owned(conn, r.conf_num, acct) for r in replacing]
                for old in fresh:
                    if not old.replaceable:
                        raise reject(
                            "ORDER_NOT_REPLACEABLE",
                            f"Order {old.conf_num} is {words(old.status.value)} and can no longer be replaced",
                        )
                extras = [self._links.extra_position(r) for r in fresh] if fresh else None
                self._checks.validate_group(specs, cond, fresh, extras=extras)
                rows = self._insert_orders(conn, specs, confs, cond, fresh)
        except OrderRejected as exc:
            with self._outbox.atomic() as conn:
                self._previews.use(conn, confs)
                for spec, conf in zip(specs, confs, strict=True):
                    self._rows.insert(conn, conf, spec, OrderStatus.REJECTED, reject=exc)
            raise
        for row in rows:
            if row.status is OrderStatus.OPEN:
                self._matcher.evaluate(row.conf_num)
        first = self._rows.owned(self._store.conn, confs[0], acct)
        return OrderPlacement(
            conf_num=first.conf_num,
            acct_num=acct,
            status=first.status,
            conf_nums=list(confs) if len(confs) > 1 else [],
            message=status_desc(first),
        )

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
                # Read again: when this batch already replaced the leg's primary, the leg now waits for the new one.
                old = self._rows.load(conn, replacing[index].conf_num)
                row = self._rows.insert(
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
                self._links.hand_over(conn, old, conf)
                self._rows.publish_order(EventType.ORDER_UPDATE, self._rows.load(conn, old.conf_num), replaced_by=conf)
            elif cond is None:
                row = self._rows.insert(conn, conf, spec, OrderStatus.OPEN)
            else:
                triggered = index > 0 and cond is not ConditionalType.OCO
                status = OrderStatus.PENDING_TRIGGER if triggered else OrderStatus.OPEN
                parent = confs[0] if triggered else None
                row = self._rows.insert(conn, conf, spec, status, group=(confs[0], cond, index, parent))
            rows.append(row)
        return rows

    # --- replace internals ------------------------------------------------------------------------------

    def _replaceable(self, conf_num: str, order: EquityOrder) -> Row:
        row = self._rows.owned(self._store.conn, conf_num, order.acct_num)
        if not row.replaceable:  # the rule Order.status_detail.replaceable_ind reports
            if not row.working:
                raise reject(
                    "ORDER_NOT_REPLACEABLE",
                    f"Order {conf_num} is {words(row.status.value)} and can no longer be replaced",
                )
            raise reject(
                "ORDER_NOT_REPLACEABLE",
                f"Order {conf_num} is an {row.spec.kind.lower().replace('_', '-')} order: only equity orders can be"
                " replaced; cancel it and place a new one",
            )
        spec = equity_spec(order, order.acct_num)
        if (spec.symbol, spec.action) != (row.spec.symbol, row.spec.action):
            raise reject(
                "REPLACE_MISMATCH",
                f"A replacement keeps the symbol and action of order {conf_num} ({row.spec.action} {row.spec.symbol});"
                " to change them, cancel it and place a new order",
            )
        return row

    @staticmethod
    def _check_code(row: Row, action_code: str) -> None:
        """Refuse a cancel whose action_code is not the order's own code or side (422, nothing canceled)."""
        spec = row.spec
        check_cancel_code(row.conf_num, action_code, spec.kind, spec.action, (leg.action for leg in spec.legs))

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
