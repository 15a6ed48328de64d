"""The order desk: every order command goes through it, and its place rules are the one statement of their order.

``OrderDesk`` is built once by the composition root with everything it needs: the journal recorder, the book of
bound previews, the safety guard, the kill switch, the live-trading switch, the brokerage session, the places in
flight and the settings. A route hands it a typed command (``PlaceEquity(order, conf_num)``, ``CancelOrder``...,
``orders.commands``) and a ticket (who asked, what the journal records); the desk looks the command up in the
dispatch table and makes the one broker call itself, inside the session.

* Previews: refused while halted or over a risk limit (journaled as refused); journaled; their conf_num(s)
  remembered for the place.
* Cancels and cancel previews: journaled, never gated (not by dry-run mode, not by a halt), never repeated.
* Places: ``OrderDesk.PLACE_RULES``, in order. The served description of every place operation is generated from
  that table (``place_rules``), so what API users read is what the desk does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar, TypeVar

from aiohttp import web

from ftdesk.domain.errors import (
    ApprovalRejected,
    ApprovalTimedOut,
    ApprovalUnavailable,
    Conflict,
    FtdeskError,
    IdempotencyKeyReused,
    InternalError,
    LiveTradingDisabled,
    OrderRejected,
    PreviewMismatch,
    PreviewRequired,
    SessionExpired,
    StorageFull,
)
from ftdesk.domain.orders import ConditionalPreview, OrderPlacement, OrderPreview
from ftdesk.domain.safety import RiskLimitExceeded, TradingHalted
from ftdesk.service.orders.approvals import (
    EXPIRED_WHILE_WAITING,
    ApprovalBook,
    ApprovalRequest,
    Verdict,
    client_words,
    describe,
    needs_approval,
    refusal,
    unavailable,
)
from ftdesk.service.orders.commands import Command, Dispatch, dispatch, order_of
from ftdesk.service.orders.journal import (
    JournalAction,
    JournalEntry,
    KeyClaim,
    OrderJournal,
    Outcome,
    StoredResponse,
)
from ftdesk.service.orders.previews import BoundPreview, PreviewBook
from ftdesk.service.orders.recorder import (
    OrderRecorder,
    OrderTicket,
    PlacesInFlight,
    conf_nums_of,
    outcome_of,
    send,
)
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.safety.sweep import KillSwitch
from ftdesk.service.session import SessionManager
from ftdesk.service.switches import LiveTradingSwitch, SettingsHolder
from ftdesk.service.web.envelope import error_response, ok_response
from ftdesk.service.web.errors import ERROR_TABLE

log = logging.getLogger(__name__)

T = TypeVar("T")
P = TypeVar("P", OrderPreview, ConditionalPreview)

REPLAY_HEADER = "Idempotent-Replayed"

LIVE_TRADING_OFF = (
    "Live trading is off (dry-run mode): place operations are refused before they reach the broker. "
    "Previews and cancels still work. Turn live trading on in the tray or with FTSERVICE_LIVE_TRADING=true."
)


def _no_slot() -> None:
    return None


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


class _Attempt:
    """One place as it goes through the rules: what it holds so far (key, preview, journal row, answer)."""

    def __init__(self, command: Command[OrderPlacement], ticket: OrderTicket) -> None:
        self.command = command
        self.ticket = ticket
        self.row: Dispatch = dispatch(command)
        self.owns_key = False  # the Idempotency-Key was claimed by this request (a refusal frees it)
        self.preview: BoundPreview | None = None
        self.in_flight = False
        self.entry_id: int | None = None
        self.recorded = False  # the outcome is in the journal already (nothing more to write on the way out)
        self.answer: OrderPlacement | web.Response | None = None
        self.release_slot: Callable[[], None] = _no_slot  # the open-order slot the risk step took, if any


Step = Callable[["OrderDesk", _Attempt], Awaitable[None]]


@dataclass(frozen=True)
class PlaceRule:
    """One step of a place: its name, what it refuses with, what the served description says, and the step."""

    name: str
    refusals: tuple[type[FtdeskError], ...]
    text: str
    step: Step

    def describe(self) -> str:
        """Return the rule as one item of the served description."""
        codes = ", ".join(f"`{ERROR_TABLE[cls].code}` ({ERROR_TABLE[cls].status})" for cls in self.refusals)
        return f"**{self.name}**: {self.text}" + (f" Refused with {codes}." if codes else "")


class OrderDesk:
    """Previews, places and cancels under the trading-safety rules, each journaled, each sent once."""

    def __init__(
        self,
        recorder: OrderRecorder,
        previews: PreviewBook,
        guard: SafetyGuard,
        kill_switch: KillSwitch,
        live: LiveTradingSwitch,
        session: SessionManager,
        in_flight: PlacesInFlight,
        settings: SettingsHolder,
        approvals: ApprovalBook,
    ) -> None:
        self._recorder = recorder
        self.previews = previews
        self._guard = guard
        self._kill_switch = kill_switch
        self._live = live
        self._session = session
        self._in_flight = in_flight
        self._settings = settings
        self.approvals = approvals

    @property
    def journal(self) -> OrderJournal:
        """Return the order journal the desk writes."""
        return self._recorder.journal

    async def entries(self, *, limit: int, start: date | None, end: date | None) -> list[JournalEntry]:
        """Return journal entries newest first."""
        return await self._recorder.entries(limit=limit, start=start, end=end)

    # --- previews, cancels ----------------------------------------------------------------------------

    async def preview(self, command: Command[P], ticket: OrderTicket) -> P:
        """Journal and make a preview (refused while halted or over a limit); remember its conf_num(s)."""
        row = dispatch(command)
        assert row.action is JournalAction.PREVIEW and row.kind is not None
        try:
            await self._check_risk(order_of(command))
        except FtdeskError as exc:
            await self._recorder.refuse(ticket.draft(command), exc, None)
            raise
        result = await self._recorder.run(command, ticket, self._session)
        self.previews.register(row.kind, conf_nums_of(result), ticket.fields, answer=result)
        return result

    async def cancel(self, command: Command[T], ticket: OrderTicket, *, resend_after_reauth: bool = True) -> T:
        """Journal and make a cancel or cancel preview: never gated, never refused by the desk.

        ``resend_after_reauth=False`` (the kill switch, the cockpit) reports a session expiry instead of sending
        the cancel again after re-authenticating.
        """
        assert dispatch(command).action in (JournalAction.CANCEL, JournalAction.CANCEL_PREVIEW)
        return await self._recorder.run(command, ticket, self._session, retry_on_expiry=resend_after_reauth)

    async def _check_risk(
        self, order: object | None, *, place_conf_nums: tuple[str, ...] | None = None
    ) -> Callable[[], None]:
        """Refuse while halted or when the order crosses a risk limit; a daily-loss crossing halts trading first.

        The halt is checked again after the limits' broker reads: a halt that arrived meanwhile wins. A place
        (``place_conf_nums``) gets back the release of its open-order slot, to call once the broker answered.
        """
        self._guard.check_not_halted()
        release_slot = await self._guard.check_limits(order, place_conf_nums=place_conf_nums)
        try:
            crossed = await self._guard.loss_crossed(order)
            if crossed is not None:
                await self._kill_switch.halt("daily-loss-limit", crossed.reason)
                raise crossed.refusal()
            self._guard.check_not_halted()
        except BaseException:
            release_slot()
            raise
        return release_slot

    # --- place ------------------------------------------------------------------------------------------

    async def place(self, command: Command[OrderPlacement], ticket: OrderTicket) -> OrderPlacement | web.Response:
        """Place an order through ``PLACE_RULES`` in order; a replayed Idempotency-Key returns the stored answer."""
        attempt = _Attempt(command, ticket)
        assert attempt.row.action is JournalAction.PLACE
        try:
            for rule in self.PLACE_RULES:
                await rule.step(self, attempt)
                if attempt.answer is not None:
                    return attempt.answer
        except FtdeskError as exc:
            await self._refused(attempt, exc)
            raise
        finally:
            attempt.release_slot()  # the broker answered (or the place stopped): its order, if any, is now listed
            if attempt.in_flight:
                self._in_flight.leave()
        raise AssertionError("the last place rule sends the order")  # pragma: no cover

    async def _refused(self, attempt: _Attempt, error: FtdeskError) -> None:
        """Journal a place a rule refused and free what it held (its preview, its Idempotency-Key)."""
        if attempt.recorded:
            return
        if attempt.preview is not None:
            self.previews.release(attempt.preview)
        key = attempt.ticket.idempotency_key
        if attempt.entry_id is None:
            await self._recorder.refuse(attempt.ticket.draft(attempt.command), error, key if attempt.owns_key else None)
        else:
            await self._recorder.finish(attempt.entry_id, Outcome.REFUSED, error, key=key, response=None)

    # The steps of a place, in the order of PLACE_RULES below. Each raises its refusal or lets the place go on.

    async def _idempotency_key(self, attempt: _Attempt) -> None:
        key = attempt.ticket.idempotency_key
        if key is None:
            return
        claim = await self._recorder.claim_key(key, attempt.ticket.endpoint, attempt.ticket.body_hash)
        if claim.state == "replay" and claim.response is not None:
            attempt.answer = web.Response(
                text=claim.response.body,
                status=claim.response.status,
                content_type="application/json",
                headers={REPLAY_HEADER: "true"},
            )
            return
        if claim.state != "new":
            raise _key_error(claim, key)
        attempt.owns_key = True

    async def _kill_switch_off(self, attempt: _Attempt) -> None:
        self._guard.check_not_halted()

    async def _risk_limits(self, attempt: _Attempt) -> None:
        attempt.release_slot = await self._check_risk(
            order_of(attempt.command), place_conf_nums=attempt.ticket.conf_nums
        )

    async def _live_gate(self, attempt: _Attempt) -> None:
        if not self._live.enabled:
            raise LiveTradingDisabled(LIVE_TRADING_OFF)

    async def _bound_preview(self, attempt: _Attempt) -> None:
        assert attempt.row.kind is not None
        ticket = attempt.ticket
        ttl = self._settings.current.preview_ttl  # read per place: the tray may change it while running
        attempt.preview = self.previews.claim(attempt.row.kind, ticket.conf_nums, ticket.fields, ttl)

    async def _approval(self, attempt: _Attempt) -> None:
        settings = self._settings.current
        if needs_approval(attempt.ticket.client, settings.require_approval):
            await self._held_for_the_trader(attempt, settings.preview_ttl, settings.approval_timeout)
        self._guard.limits.count_place()  # it passed every check: it counts toward the places per minute
        # No await since the last halt check (the risk step's, or the approval's): a halt from now on waits for
        # this place's answer.
        self._in_flight.enter()
        attempt.in_flight = True

    async def _held_for_the_trader(self, attempt: _Attempt, ttl: float, default_timeout: float) -> None:
        ticket, preview = attempt.ticket, attempt.preview
        assert preview is not None
        client = client_words(ticket.client)
        if not self.approvals.available:
            raise unavailable(client)
        answer = preview.answer if isinstance(preview.answer, OrderPreview) else None
        timeout = ticket.approval_timeout or default_timeout
        request = ApprovalRequest(ticket.request_id, client, answer, describe(answer, str(ticket.facts)), timeout)
        guard = self._guard
        on_halt = guard.add_listener(
            lambda: self.approvals.withdraw_all("trading was halted") if guard.halted else None
        )
        try:
            await self.approvals.ask(request, expires_in=self.previews.seconds_left(preview, ttl))
        finally:
            on_halt()
        if request.verdict is Verdict.APPROVED and self.previews.seconds_left(preview, ttl) < 0:
            request.verdict, request.why = Verdict.WITHDRAWN, EXPIRED_WHILE_WAITING  # approved in its last instant
        await self._recorder.approval(attempt.command, ticket, request)
        refused = refusal(request, preview.conf_nums[0], lambda: guard.halted_error() if guard.halted else None)
        if refused is not None:
            raise refused
        guard.check_not_halted()
        if not self._live.enabled:
            raise LiveTradingDisabled(LIVE_TRADING_OFF)

    async def _journal_row(self, attempt: _Attempt) -> None:
        try:
            attempt.entry_id = await self._recorder.begin(attempt.command, attempt.ticket)
        except InternalError:
            assert attempt.preview is not None
            self.previews.release(attempt.preview)
            attempt.recorded = True  # nothing to record in a journal that cannot be written; the key is freed
            raise

    async def _last_look(self, attempt: _Attempt) -> None:
        # The risk step's broker reads and the journal write take time; no place whose row is newer than a halt
        # or a switch to dry-run goes out.
        if self._guard.halted:
            raise self._guard.halted_error()
        if not self._live.enabled:
            raise LiveTradingDisabled(LIVE_TRADING_OFF)

    async def _broker_once(self, attempt: _Attempt) -> None:
        attempt.recorded = True  # from here this step writes the outcome itself, whatever happens
        assert attempt.preview is not None and attempt.entry_id is not None
        preview, entry_id, key = attempt.preview, attempt.entry_id, attempt.ticket.idempotency_key
        reached = False

        def sent(broker: Any) -> Awaitable[OrderPlacement]:
            nonlocal reached
            reached = True
            return send(broker.orders, attempt.command)

        try:
            placement = await self._session.run(sent, retry_on_expiry=False)
        except asyncio.CancelledError:
            (self.previews.consume if reached else self.previews.release)(preview)
            self._recorder.finish_later(entry_id, Outcome.UNKNOWN if reached else Outcome.ERROR, key)
            raise
        except Exception as exc:
            error = exc if isinstance(exc, FtdeskError) else self._unexpected(attempt.ticket, exc)
            (self.previews.consume if reached else self.previews.release)(preview)
            outcome = outcome_of(error) if reached else Outcome.ERROR
            response = _stored(error) if reached and key is not None else None
            await self._recorder.finish(entry_id, outcome, error, key=key, response=response)
            if error is exc:
                raise
            raise error from None
        self.previews.consume(preview)
        response = StoredResponse(200, ok_response(placement).text or "") if key is not None else None
        await self._recorder.finish(
            entry_id,
            Outcome.ACCEPTED,
            None,
            conf_nums=conf_nums_of(placement),
            message=placement.message or None,
            key=key,
            response=response,
        )
        attempt.answer = placement

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

    # The one statement of the place rules, in the order they apply; the served description is made from it.
    # A new step (say, holding a place for the trader's approval) is one more PlaceRule at its place in this
    # table, with its step method above and its collaborator in the constructor.
    PLACE_RULES: ClassVar[tuple[PlaceRule, ...]] = (
        PlaceRule(
            "Idempotency-Key",
            (IdempotencyKeyReused, Conflict),
            "(optional header) the same key and body return the first answer without a second order (also after a "
            "restart, with `Idempotent-Replayed: true`); another body with the key is refused, and so is the key "
            "while its first request is in flight.",
            _idempotency_key,
        ),
        PlaceRule(
            "Kill switch",
            (TradingHalted,),
            "while trading is halted (tray, or POST /api/v1/safety/halt) every place is refused.",
            _kill_switch_off,
        ),
        PlaceRule(
            "Risk limits",
            (RiskLimitExceeded,),
            "the order is checked against the local limits (size, notional, price distance, places per minute, "
            "open orders, symbol list, daily loss; GET /api/v1/safety/limits). An account past the daily loss limit "
            "halts trading and cancels the open orders first.",
            _risk_limits,
        ),
        PlaceRule(
            "Live gate",
            (LiveTradingDisabled,),
            "while live trading is off (dry-run, FTSERVICE_LIVE_TRADING=false, the default, or switched off in the "
            "tray) the place is refused.",
            _live_gate,
        ),
        PlaceRule(
            "Bound preview",
            (PreviewRequired, PreviewMismatch),
            "the body must carry the conf_num{s} of a preview this service made at {preview} within "
            "FTSERVICE_PREVIEW_TTL seconds (default 300), not used before, with the same fields "
            "(`details.reason` is missing, unknown, expired, already_used or in_use; on a mismatch `details.fields` "
            "lists each differing field with the previewed and the given value). Previews do not survive a restart.",
            _bound_preview,
        ),
        PlaceRule(
            "Trader's approval",
            (ApprovalUnavailable, ApprovalRejected, ApprovalTimedOut),
            "a place from the bundled MCP server (`X-Ftdesk-Client: mcp`), or any place while the setting "
            "require_approval is on, waits until the trader approves it in the tray, which shows the order as the "
            "broker understood it and who asks; it waits up to `X-Ftdesk-Approval-Timeout` seconds (default the "
            "approval_timeout setting, 60). No tray running, a rejection or no answer in time refuses it; a halt or "
            "the preview expiring meanwhile refuses it as the kill switch or the bound preview do. Each answer is "
            "journaled (action `approval`) with who asked.",
            _approval,
        ),
        PlaceRule(
            "Journal",
            (StorageFull, InternalError),
            "the place is written to the order journal (GET /api/v1/orders/journal) before the broker is called; "
            "if it cannot be written, nothing is sent (a full disk answers STORAGE_FULL, 507, naming the data dir "
            "and its free space).",
            _journal_row,
        ),
        PlaceRule(
            "Last look",
            (TradingHalted, LiveTradingDisabled),
            "a halt or a switch to dry-run that came while the checks above ran still stops the place.",
            _last_look,
        ),
        PlaceRule(
            "Broker, once",
            (OrderRejected, SessionExpired),
            "the order is sent once and never retried; the answer is written to the journal. The preview is used "
            "up by the first place that reaches the broker, even if the broker rejects the order (`details.reason`, "
            "`details.broker_code`, `details.broker_message`): preview again to try again. An expired session "
            "answers SESSION_EXPIRED: preview and place again once the session is back.",
            _broker_once,
        ),
    )


def place_rules(preview: str, plural: bool = False) -> str:
    """Return the served description of a place's safety rules, made from ``OrderDesk.PLACE_RULES``."""
    items = "\n".join(f"{n}. {rule.describe()}" for n, rule in enumerate(OrderDesk.PLACE_RULES, start=1))
    text = (
        "\n\nSafety, in this order (the first rule that refuses ends the request; every attempt, refused ones "
        f"included, is in the order journal):\n{items}"
    )
    return text.replace("{preview}", preview).replace("{s}", "s" if plural else "")


PLACE_ERRORS: tuple[type[FtdeskError], ...] = tuple(
    dict.fromkeys(cls for rule in OrderDesk.PLACE_RULES for cls in rule.refusals if cls is not InternalError)
)
"""Every refusal a place rule can answer with (the error responses each place operation documents)."""
