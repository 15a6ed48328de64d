"""The order desk: the trading-safety rules every order endpoint goes through.

* Live gate: a place is refused with ``LIVE_TRADING_DISABLED`` while live trading is off, before anything
  else touches the broker. Previews and cancels are never gated.
* Bound previews (``orders.previews``): a place carries the conf_num(s) of an unexpired, unused preview
  this service made of the same order; otherwise ``PREVIEW_REQUIRED`` / ``PREVIEW_MISMATCH``.
* Idempotency-Key: the first answer of a place that reached the broker is kept in the journal database; the
  same key and body get that answer again (no second broker call, also after a restart); the key with
  another endpoint or body is ``IDEMPOTENCY_KEY_REUSED``; while the first request runs it is ``CONFLICT``.
* Journal (``orders.journal``): each preview, place and cancel is written before the broker call and
  updated after it; refusals are written too. If the journal cannot be written the order is not sent.
* No retries: the desk calls the broker once; the route passes a runner with ``retry_on_expiry=False``.
* Safety guard (``safety``): while the kill switch is on, previews and places are refused with
  ``TRADING_HALTED`` (journaled as refused) before anything else reaches the broker; cancels never ask. The desk
  counts the places past the gate so a halt can wait for their answers before it cancels the open orders.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, TypeVar

from aiohttp import web

from ftdesk.brokers.capabilities import OrdersApi
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import (
    Conflict,
    FtdeskError,
    IdempotencyKeyReused,
    InternalError,
    LiveTradingDisabled,
    NotFound,
    OrderRejected,
    ValidationFailed,
)
from ftdesk.domain.orders import ConditionalPreview, OrderPlacement, OrderPreview
from ftdesk.service.orders.journal import (
    JournalAction,
    JournalDraft,
    JournalEntry,
    KeyClaim,
    OrderFacts,
    OrderJournal,
    Outcome,
    StoredResponse,
)
from ftdesk.service.orders.previews import BoundPreview, OrderKind, PreviewBook
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.web.envelope import error_response, ok_response
from ftdesk.service.web.errors import spec_for

log = logging.getLogger(__name__)

T = TypeVar("T")
P = TypeVar("P", OrderPreview, ConditionalPreview)

Operation = Callable[[OrdersApi], Awaitable[T]]
Runner = Callable[[Operation[T]], Awaitable[T]]

REPLAY_HEADER = "Idempotent-Replayed"

# The broker answered and said no: the order action was rejected (anything else failing is an error).
_BROKER_REFUSALS = (OrderRejected, NotFound, Conflict, ValidationFailed)

LIVE_TRADING_OFF = (
    "Live trading is off (dry-run mode): place operations are refused before they reach the broker. "
    "Previews and cancels still work. Turn live trading on in the tray or with FTSERVICE_LIVE_TRADING=true."
)


@dataclass(frozen=True)
class OrderTicket:
    """One order request as the desk sees it: who asked, for what, and what the journal records."""

    request_id: str
    endpoint: str
    action: JournalAction
    kind: OrderKind | None
    facts: OrderFacts
    body_hash: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    conf_nums: tuple[str, ...] = ()
    idempotency_key: str | None = None
    live_trading: bool = False
    preview_ttl: float = 300.0
    order: object | None = None  # the domain order of a preview or place, for the risk limits

    def draft(self) -> JournalDraft:
        """Return the journal row of this request."""
        return JournalDraft(
            request_id=self.request_id,
            endpoint=self.endpoint,
            action=self.action,
            order_kind=self.kind.value if self.kind else None,
            facts=self.facts,
            body_hash=self.body_hash,
            idempotency_key=self.idempotency_key,
        )


def _no_slot() -> None:
    return None


def _conf_nums_of(result: object) -> list[str]:
    if isinstance(result, ConditionalPreview):
        return list(result.conf_nums)
    if isinstance(result, OrderPlacement):
        return list(result.conf_nums) or [result.conf_num]
    if isinstance(result, OrderPreview):
        return [result.conf_num]
    return []


def _outcome(error: FtdeskError) -> Outcome:
    return Outcome.REJECTED if isinstance(error, _BROKER_REFUSALS) else Outcome.ERROR


def _stored(error: FtdeskError) -> StoredResponse:
    response = error_response(error)
    return StoredResponse(status=response.status, body=response.text or "")


def _key_error(claim: KeyClaim, key: str) -> FtdeskError:
    details = {"idempotency_key": key, "state": claim.state}
    if claim.state == "reused":
        return IdempotencyKeyReused(
            f"The Idempotency-Key {key!r} was used before with another endpoint or body; use a new key for a new order",
            details=details,
        )
    if claim.state == "unknown":
        return Conflict(
            f"The service stopped while the place with Idempotency-Key {key!r} was at the broker, so its outcome is "
            "unknown: check GET /api/v1/orders/status and GET /api/v1/orders/journal before placing again",
            details=details,
        )
    return Conflict(
        f"A place with Idempotency-Key {key!r} is still in flight; wait for its answer "
        "(sending the same key again afterwards returns it)",
        details=details,
    )


class OrderDesk:
    """Gate, preview binding, Idempotency-Key and journal around the order calls of the broker."""

    def __init__(self, journal: OrderJournal, clock: Clock) -> None:
        self.journal = journal
        self.previews = PreviewBook(clock)
        self.guard: SafetyGuard | None = None  # set by the composition root once the safety file is read
        # The live switch as it is now (set by the composition root): the gate's broker reads take time, and a
        # switch turned off meanwhile must refuse the place, not the request's earlier reading of it.
        self.live_now: Callable[[], bool] | None = None
        self._late_writes: set[asyncio.Task[None]] = set()
        self._places_in_flight = 0
        self._settled = asyncio.Event()
        self._settled.set()

    async def settled(self) -> None:
        """Return once no place that passed the gate is still waiting for the broker's answer."""
        await self._settled.wait()

    async def _gate(self, ticket: OrderTicket, *, place: bool = False) -> Callable[[], None]:
        """Ask the safety guard whether this preview or place may go on: halt, risk limits (raise the refusal).

        A place gets back the release of its open-order slot, to call once the broker answered.
        """
        if self.guard is not None:
            return await self.guard.admit(ticket.order, place_conf_nums=ticket.conf_nums if place else None)
        return _no_slot

    async def start(self) -> int:
        """Open the journal; return how many actions a previous run left in flight (now ``unknown``)."""
        return await asyncio.to_thread(self.journal.open)

    async def close(self) -> None:
        """Finish outstanding journal writes and close the journal; idempotent."""
        if self._late_writes:
            await asyncio.gather(*self._late_writes, return_exceptions=True)
        await asyncio.to_thread(self.journal.close)

    async def entries(self, *, limit: int, start: date | None, end: date | None) -> list[JournalEntry]:
        """Return journal entries newest first."""
        return await asyncio.to_thread(self.journal.entries, limit=limit, start=start, end=end)

    # --- previews, cancels ----------------------------------------------------------------------------

    async def preview(self, ticket: OrderTicket, run: Runner[P], operation: Operation[P]) -> P:
        """Journal and run a preview (refused while halted); remember its conf_num(s) for the place."""
        try:
            await self._gate(ticket)
        except FtdeskError as exc:
            await self._refuse(ticket.draft(), exc, None)
            raise
        result = await self.journaled(ticket, run, operation)
        assert ticket.kind is not None
        self.previews.register(ticket.kind, _conf_nums_of(result), ticket.fields)
        return result

    async def journaled(self, ticket: OrderTicket, run: Runner[T], operation: Operation[T]) -> T:
        """Run a broker call between a ``pending`` journal row and its outcome (previews, cancels)."""
        entry_id = await self._begin(ticket)
        try:
            result = await run(operation)
        except asyncio.CancelledError:
            self._finish_later(entry_id, Outcome.UNKNOWN, None)
            raise
        except FtdeskError as exc:
            await self._finish(entry_id, _outcome(exc), exc)
            raise
        except Exception:  # the middleware logs it and answers INTERNAL_ERROR with this message
            message = f"Internal error; the service log has the details under request id {ticket.request_id}"
            await self._finish(entry_id, Outcome.ERROR, InternalError(message))
            raise
        accepted = getattr(result, "is_accepted", True) is not False
        await self._finish(
            entry_id, Outcome.ACCEPTED if accepted else Outcome.REJECTED, None, conf_nums=_conf_nums_of(result)
        )
        return result

    # --- place ------------------------------------------------------------------------------------------

    async def place(
        self, ticket: OrderTicket, run: Runner[OrderPlacement], operation: Operation[OrderPlacement]
    ) -> OrderPlacement | web.Response:
        """Place an order under every safety rule; a replayed Idempotency-Key returns the stored response."""
        draft = ticket.draft()
        key = ticket.idempotency_key
        if key is not None:
            claim = await asyncio.to_thread(self.journal.claim_key, key, ticket.endpoint, ticket.body_hash)
            if claim.state == "replay" and claim.response is not None:
                return web.Response(
                    text=claim.response.body,
                    status=claim.response.status,
                    content_type="application/json",
                    headers={REPLAY_HEADER: "true"},
                )
            if claim.state != "new":
                error = _key_error(claim, key)
                await self._refuse(draft, error, None)
                raise error
        try:
            preview, release_slot = await self._admit(ticket)
        except FtdeskError as exc:
            await self._refuse(draft, exc, key)
            raise
        self._places_in_flight += 1  # no await since the gate: a halt now waits for this place's answer
        self._settled.clear()
        try:
            return await self._send(ticket, preview, run, operation)
        finally:
            release_slot()  # the broker answered (or the place stopped): its order, if any, is now listed
            self._places_in_flight -= 1
            if not self._places_in_flight:
                self._settled.set()

    async def _send(
        self,
        ticket: OrderTicket,
        preview: BoundPreview,
        run: Runner[OrderPlacement],
        operation: Operation[OrderPlacement],
    ) -> OrderPlacement:
        key = ticket.idempotency_key
        entry_id = await self._begin(ticket, preview=preview)
        late = self._late_refusal()
        if late is not None:
            self.previews.release(preview)
            await self._finish(entry_id, Outcome.REFUSED, late, key=key, response=None)
            raise late

        reached = False

        async def tracked(orders: OrdersApi) -> OrderPlacement:
            nonlocal reached
            reached = True
            return await operation(orders)

        try:
            placement = await run(tracked)
        except asyncio.CancelledError:
            if reached:
                self.previews.consume(preview)
            else:
                self.previews.release(preview)
            self._finish_later(entry_id, Outcome.UNKNOWN if reached else Outcome.ERROR, key)
            raise
        except Exception as exc:
            error = exc if isinstance(exc, FtdeskError) else self._unexpected(ticket, exc)
            if reached:
                self.previews.consume(preview)
            else:
                self.previews.release(preview)
            outcome = _outcome(error) if reached else Outcome.ERROR
            response = _stored(error) if reached and key is not None else None
            await self._finish(entry_id, outcome, error, key=key, response=response)
            if error is exc:
                raise
            raise error from None
        self.previews.consume(preview)
        response = StoredResponse(200, ok_response(placement).text or "") if key is not None else None
        await self._finish(
            entry_id,
            Outcome.ACCEPTED,
            None,
            conf_nums=_conf_nums_of(placement),
            message=placement.message or None,
            key=key,
            response=response,
        )
        return placement

    def _late_refusal(self) -> FtdeskError | None:
        """Return the refusal of a place whose row is written: a halt or a live switch turned off since the request.

        The gate's broker reads and the journal write take time; no place whose row is newer than a halt or a
        switch to dry-run goes out.
        """
        if self.guard is not None and self.guard.halted:
            return self.guard.halted_error()
        if self.live_now is not None and not self.live_now():
            return LiveTradingDisabled(LIVE_TRADING_OFF)
        return None

    async def _admit(self, ticket: OrderTicket) -> tuple[BoundPreview, Callable[[], None]]:
        """Apply the safety guard and the live gate, then claim the bound preview (all before any broker call).

        Return the preview and the release of the open-order slot the place holds until the broker answers.
        """
        release_slot = await self._gate(ticket, place=True)
        try:
            if not ticket.live_trading:
                raise LiveTradingDisabled(LIVE_TRADING_OFF)
            assert ticket.kind is not None
            claimed = self.previews.claim(ticket.kind, ticket.conf_nums, ticket.fields, ticket.preview_ttl)
        except BaseException:
            release_slot()
            raise
        if self.guard is not None:
            self.guard.limits.count_place()  # it passed every check: it counts toward the places per minute
        return claimed, release_slot

    def _unexpected(self, ticket: OrderTicket, exc: Exception) -> InternalError:
        log.error(
            "Unexpected failure placing an order (request %s): %s",
            ticket.request_id,
            type(exc).__name__,
            exc_info=exc,
        )
        return InternalError(
            "The place failed unexpectedly and its outcome is uncertain: check GET /api/v1/orders/status before "
            f"placing again; the service log has the details under request id {ticket.request_id}"
        )

    # --- journal writes -----------------------------------------------------------------------------------

    async def _begin(self, ticket: OrderTicket, *, preview: BoundPreview | None = None) -> int:
        """Write the ``pending`` row; if that fails, nothing is sent to the broker."""
        try:
            return await asyncio.to_thread(self.journal.begin, ticket.draft())
        except Exception:
            log.exception("The order journal could not be written (request %s)", ticket.request_id)
            if preview is not None:
                self.previews.release(preview)
            if ticket.idempotency_key is not None:
                try:
                    await asyncio.to_thread(self.journal.release_key, ticket.idempotency_key)
                except Exception:
                    log.exception("Could not free Idempotency-Key of request %s", ticket.request_id)
            raise InternalError(
                "The order journal could not be written, so nothing was sent to the broker; "
                f"the service log has the details under request id {ticket.request_id}"
            ) from None

    async def _refuse(self, draft: JournalDraft, error: FtdeskError, release_key: str | None) -> None:
        try:
            await asyncio.to_thread(
                self.journal.record,
                draft,
                Outcome.REFUSED,
                error_code=spec_for(error).code,
                message=error.message,
                release_key=release_key,
            )
        except Exception:  # the refusal stands even when it cannot be written down
            log.exception("Could not journal a refused order request (request %s)", draft.request_id)

    async def _finish(
        self,
        entry_id: int,
        outcome: Outcome,
        error: FtdeskError | None,
        *,
        conf_nums: list[str] | None = None,
        message: str | None = None,
        key: str | None = None,
        response: StoredResponse | None = None,
    ) -> None:
        try:
            await asyncio.to_thread(
                self.journal.finish,
                entry_id,
                outcome,
                conf_nums=conf_nums,
                error_code=spec_for(error).code if error else None,
                message=error.message if error else message,
                key=key,
                response=response,
            )
        except Exception:  # the broker's answer must still reach the client; the row stays 'pending'
            log.exception("Could not journal the outcome of order journal entry %d", entry_id)

    def _finish_later(self, entry_id: int, outcome: Outcome, key: str | None) -> None:
        """Record the outcome of a request cancelled mid-call (shutdown) without awaiting in the cancelled task."""
        message = "The request was cancelled while the broker call was in flight: check GET /api/v1/orders/status"
        task = asyncio.get_running_loop().create_task(
            self._finish(entry_id, outcome, None, message=message, key=key, response=None)
        )
        self._late_writes.add(task)
        task.add_done_callback(self._late_writes.discard)
