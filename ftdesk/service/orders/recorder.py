"""The order journal around broker calls: a ``pending`` row before each order call, its outcome after.

``OrderRecorder`` is what every order action shares, whoever asks (a route through the order desk, the kill
switch, the cockpit): it writes the row, makes the one call of the broker's orders group inside the brokerage
session it is given, and writes how it ended. If the row cannot be written the call is not made.
``PlacesInFlight`` counts the places past the desk's gate still waiting for the broker, so a halt can wait for
their answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, TypeVar

from ftdesk.brokers.capabilities import OrdersApi
from ftdesk.domain.errors import (
    Conflict,
    FtdeskError,
    InternalError,
    NotFound,
    OrderRejected,
    StorageFull,
    ValidationFailed,
)
from ftdesk.domain.orders import ConditionalPreview, OrderPlacement, OrderPreview
from ftdesk.service.orders.approvals import ApprovalRequest, Verdict
from ftdesk.service.orders.commands import Command, dispatch
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
from ftdesk.service.session import SessionManager
from ftdesk.service.web.errors import spec_for

log = logging.getLogger(__name__)

T = TypeVar("T")

# The broker answered and said no: the order action was rejected (anything else failing is an error).
_BROKER_REFUSALS = (OrderRejected, NotFound, Conflict, ValidationFailed)


@dataclass(frozen=True)
class OrderTicket:
    """Who asked for an order action and what the journal records of it (the command says what is asked)."""

    request_id: str
    endpoint: str
    facts: OrderFacts
    body_hash: str
    fields: Mapping[str, Any] = field(default_factory=dict)  # what a place must repeat from its preview
    conf_nums: tuple[str, ...] = ()  # the preview conf_num(s) a place carries
    idempotency_key: str | None = None
    client: str | None = None  # the X-Ftdesk-Client header: 'mcp' for the bundled assistant server
    approval_timeout: float | None = None  # seconds the client waits for the trader (X-Ftdesk-Approval-Timeout)

    def draft(self, command: Command[Any]) -> JournalDraft:
        """Return the journal row of this request."""
        row = dispatch(command)
        return JournalDraft(
            request_id=self.request_id,
            endpoint=self.endpoint,
            action=row.action,
            order_kind=row.kind.value if row.kind else None,
            facts=self.facts,
            body_hash=self.body_hash,
            idempotency_key=self.idempotency_key,
        )


def conf_nums_of(result: object) -> list[str]:
    """Return the conf_num(s) a broker answer names."""
    if isinstance(result, ConditionalPreview):
        return list(result.conf_nums)
    if isinstance(result, OrderPlacement):
        return list(result.conf_nums) or [result.conf_num]
    if isinstance(result, OrderPreview):
        return [result.conf_num]
    return []


def outcome_of(error: FtdeskError) -> Outcome:
    """Return how an order action that raised ended: rejected by the broker, or an error."""
    return Outcome.REJECTED if isinstance(error, _BROKER_REFUSALS) else Outcome.ERROR


class PlacesInFlight:
    """How many places passed the desk's gate and wait for the broker's answer; a halt waits for them."""

    def __init__(self) -> None:
        self._count = 0
        self._settled = asyncio.Event()
        self._settled.set()

    def enter(self) -> None:
        """Count one more place on its way to the broker."""
        self._count += 1
        self._settled.clear()

    def leave(self) -> None:
        """Count a place whose answer came (or that ended without one)."""
        self._count -= 1
        if not self._count:
            self._settled.set()

    async def settled(self) -> None:
        """Return once no counted place is still waiting for the broker's answer."""
        await self._settled.wait()


class OrderRecorder:
    """Journal rows around the order calls of the broker, made inside the brokerage session."""

    def __init__(self, journal: OrderJournal) -> None:
        self.journal = journal
        self._late_writes: set[asyncio.Task[None]] = set()

    async def open(self) -> int:
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

    async def run(
        self, command: Command[T], ticket: OrderTicket, session: SessionManager, *, retry_on_expiry: bool = True
    ) -> T:
        """Make a command's broker call in the session between a ``pending`` journal row and its outcome."""
        entry_id = await self.begin(command, ticket)
        try:
            result = await session.run(lambda broker: send(broker.orders, command), retry_on_expiry=retry_on_expiry)
        except asyncio.CancelledError:
            self.finish_later(entry_id, Outcome.UNKNOWN, None)
            raise
        except FtdeskError as exc:
            await self.finish(entry_id, outcome_of(exc), exc)
            raise
        except Exception:  # the front door logs it and answers INTERNAL_ERROR with this message
            message = f"Internal error; the service log has the details under request id {ticket.request_id}"
            await self.finish(entry_id, Outcome.ERROR, InternalError(message))
            raise
        accepted = getattr(result, "is_accepted", True) is not False
        await self.finish(
            entry_id, Outcome.ACCEPTED if accepted else Outcome.REJECTED, None, conf_nums=conf_nums_of(result)
        )
        return result

    async def claim_key(self, key: str, endpoint: str, body_hash: str) -> KeyClaim:
        """Claim an Idempotency-Key for a place (or find the answer it already has)."""
        return await asyncio.to_thread(self.journal.claim_key, key, endpoint, body_hash)

    async def begin(self, command: Command[Any], ticket: OrderTicket) -> int:
        """Write the ``pending`` row; if that fails, free the key, and nothing is sent to the broker."""
        try:
            return await asyncio.to_thread(self.journal.begin, ticket.draft(command))
        except Exception as exc:
            full = isinstance(exc, StorageFull)  # said in one line by the journal, and to the client as it is
            if not full:
                log.exception("The order journal could not be written (request %s)", ticket.request_id)
            if ticket.idempotency_key is not None:
                try:
                    await asyncio.to_thread(self.journal.release_key, ticket.idempotency_key)
                except Exception:
                    log.exception("Could not free Idempotency-Key of request %s", ticket.request_id)
            if full:
                raise
            raise InternalError(
                "The order journal could not be written, so nothing was sent to the broker; "
                f"the service log has the details under request id {ticket.request_id}"
            ) from None

    async def approval(self, command: Command[Any], ticket: OrderTicket, request: ApprovalRequest) -> None:
        """Record the trader's answer to a held place, and who asked (a failure is logged: the answer stands)."""
        verdict = request.verdict.value if request.verdict is not None else "unknown"
        why = f" ({request.why})" if request.why else ""
        draft = replace(ticket.draft(command), action=JournalAction.APPROVAL, idempotency_key=None)
        outcome = Outcome.ACCEPTED if request.verdict is Verdict.APPROVED else Outcome.REFUSED
        message = f"Approval {verdict}{why}; asked by {request.client}: {request.summary}"
        try:
            await asyncio.to_thread(self.journal.record, draft, outcome, message=message[:4000])
        except Exception:
            log.exception("Could not journal the approval of request %s", ticket.request_id)

    async def refuse(self, draft: JournalDraft, error: FtdeskError, release_key: str | None) -> None:
        """Record a request refused before any row was written (and free its key when it owned one)."""
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

    async def finish(
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
        """Write how a journaled action ended (a failure is logged: the broker's answer still goes out)."""
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

    def finish_later(self, entry_id: int, outcome: Outcome, key: str | None) -> None:
        """Record the outcome of a request cancelled mid-call (shutdown) without awaiting in the cancelled task."""
        message = "The request was cancelled while the broker call was in flight: check GET /api/v1/orders/status"
        task = asyncio.get_running_loop().create_task(
            self.finish(entry_id, outcome, None, message=message, key=key, response=None)
        )
        self._late_writes.add(task)
        task.add_done_callback(self._late_writes.discard)


def send(orders: OrdersApi, command: Command[T]) -> Awaitable[T]:
    """Return the broker's orders-group call the dispatch table names for a command."""
    result: Awaitable[T] = dispatch(command).send(orders, command)
    return result
