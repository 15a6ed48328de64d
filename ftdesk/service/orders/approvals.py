"""The trader's approval of a place: held by the service until the trader answers in the tray, or it times out.

A place needs approval when it comes from the bundled MCP server (the assistant's client sends
``X-Ftdesk-Client: mcp``) or when the setting ``require_approval`` is on (every API key's places). The desk
asks this book; the book shows the request to every attached approver (the tray's approval window, through
the control surface) and waits for the first answer, the timeout, or a withdrawal (a halt, or the preview
expiring meanwhile). With no approver attached the place is refused at once: approval needs the tray.

The rule is enforced here, in the service: the client only says who it is; it cannot approve anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import ApprovalRejected, ApprovalTimedOut, ApprovalUnavailable, FtdeskError, PreviewRequired
from ftdesk.domain.orders import OrderPreview

MCP_CLIENT = "mcp"
"""The ``X-Ftdesk-Client`` value of the bundled MCP server (``ftdesk mcp``): its places always need approval."""
CLIENT_HEADER = "X-Ftdesk-Client"
TIMEOUT_HEADER = "X-Ftdesk-Approval-Timeout"
MAX_TIMEOUT = 600.0
EXPIRED_WHILE_WAITING = "the preview expired while it waited for approval"


class Verdict(StrEnum):
    """How an approval request ended."""

    APPROVED = "approved"
    REJECTED = "rejected"  # by the trader
    TIMED_OUT = "timed_out"
    WITHDRAWN = "withdrawn"  # the service took it back: trading halted, or the preview expired meanwhile


@dataclass
class ApprovalRequest:
    """One place waiting for the trader: the order as the broker understood it, and who asks."""

    request_id: str
    client: str  # who asks, in words: 'the assistant (ftdesk mcp)'
    preview: OrderPreview | None
    summary: str
    timeout: float
    number: int = 0
    verdict: Verdict | None = None
    why: str = ""


class Approver(Protocol):
    """What the tray attaches: told of each new request and of each request's end."""

    def asked(self, request: ApprovalRequest) -> None:
        """Show a new request."""

    def settled(self, request: ApprovalRequest) -> None:
        """The request ended (``request.verdict``, ``request.why``): close or update what shows it."""


class ApprovalBook:
    """The places waiting for the trader, and the approvers that can answer them."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._approvers: list[Approver] = []
        self._waiting: dict[int, tuple[ApprovalRequest, asyncio.Future[Verdict]]] = {}
        self._numbers = itertools.count(1)

    @property
    def available(self) -> bool:
        """Say whether anyone can answer (the tray is attached)."""
        return bool(self._approvers)

    def attach(self, approver: Approver) -> Callable[[], None]:
        """Let ``approver`` see and answer requests; return the detach (its open requests then time out)."""
        self._approvers.append(approver)
        return lambda: self.detach(approver)

    def detach(self, approver: Approver) -> None:
        """Stop showing requests to ``approver`` (idempotent)."""
        if approver in self._approvers:
            self._approvers.remove(approver)

    def waiting(self) -> list[ApprovalRequest]:
        """Return the requests still waiting, oldest first."""
        return [request for request, _ in self._waiting.values()]

    def answer(self, number: int, approve: bool) -> bool:
        """Approve or reject a waiting request; False when it is no longer waiting."""
        found = self._waiting.get(number)
        if found is None or found[1].done():
            return False
        found[1].set_result(Verdict.APPROVED if approve else Verdict.REJECTED)
        return True

    def withdraw_all(self, why: str) -> None:
        """Take back every waiting request (trading halted): none of them can be approved any more."""
        for request, future in self._waiting.values():
            if not future.done():
                request.why = why
                future.set_result(Verdict.WITHDRAWN)

    async def ask(self, request: ApprovalRequest, *, expires_in: float | None = None) -> ApprovalRequest:
        """Show ``request`` to the approvers and wait for the verdict (set on the request, which is returned).

        ``expires_in``: seconds the order's preview stays usable; a wait longer than that ends withdrawn.
        """
        request.number = next(self._numbers)
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._waiting[request.number] = (request, future)
        limit = request.timeout if expires_in is None else min(request.timeout, max(expires_in, 0.0))
        expiry_first = expires_in is not None and expires_in < request.timeout
        timer: asyncio.Future[None] = asyncio.ensure_future(self._clock.sleep(limit))
        try:
            for approver in list(self._approvers):
                approver.asked(request)
            waits: list[asyncio.Future[Any]] = [future, timer]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if future.done():
                request.verdict = future.result()
            elif expiry_first:
                request.verdict, request.why = Verdict.WITHDRAWN, EXPIRED_WHILE_WAITING
            else:
                request.verdict = Verdict.TIMED_OUT
        finally:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
            self._waiting.pop(request.number, None)
            if request.verdict is None:  # the request itself was cancelled (service stopping, client gone)
                request.verdict, request.why = Verdict.WITHDRAWN, request.why or "the request ended"
            for approver in list(self._approvers):
                approver.settled(request)
        return request


def needs_approval(client: str | None, require_approval: bool) -> bool:
    """Say whether a place waits for the trader: always from the MCP server, from anyone under require_approval."""
    return require_approval or client == MCP_CLIENT


def client_words(client: str | None) -> str:
    """Return who asks, as the tray and the journal say it."""
    if client == MCP_CLIENT:
        return "the assistant (ftdesk mcp)"
    return f"a client calling itself {client!r}" if client else "a script with the API key"


def describe(preview: OrderPreview | None, fallback: str) -> str:
    """Return the order as the broker understood it, in one line."""
    if preview is None:
        return fallback
    words = preview.broker_action_desc or preview.action_desc
    limit, stop = preview.limit_price, preview.stop_price
    price = {
        "M": "at market",
        "L": f"limit {limit or 0:,.2f}",
        "S": f"stop {stop or 0:,.2f}",
        "SL": f"stop {stop or 0:,.2f} limit {limit or 0:,.2f}",
    }.get(preview.price_type.value, preview.price_type.value)
    intent = f" to {preview.position_intent.value}" if preview.position_intent is not None else ""
    return f"{words}{intent} {preview.qty:,g} {preview.symbol} {price}, account {preview.acct_num}"


def refusal(request: ApprovalRequest, conf_num: str, halted: Callable[[], FtdeskError | None]) -> FtdeskError | None:
    """Return what a place that was not approved answers (None once approved)."""
    details = {"client": request.client, "timeout_seconds": request.timeout, "conf_num": conf_num}
    if request.verdict is Verdict.APPROVED:
        return None
    if request.verdict is Verdict.REJECTED:
        return ApprovalRejected(f"The trader rejected this order in the tray: {request.summary}", details=details)
    if request.verdict is Verdict.TIMED_OUT:
        return ApprovalTimedOut(
            f"The trader did not answer within {request.timeout:g} s, so the order was not placed: {request.summary}",
            details=details,
        )
    stopped = halted()
    if stopped is not None:
        return stopped
    return PreviewRequired(
        f"The preview {conf_num} can no longer be placed: {request.why}; preview again",
        details={"reason": "expired", "conf_num": conf_num, "client": request.client},
    )


def unavailable(client: str) -> ApprovalUnavailable:
    """Return the refusal of a place that needs approval while no tray is running."""
    return ApprovalUnavailable(
        f"This order needs the trader's approval (asked by {client}) and approval needs the ftdesk tray: no tray is "
        "running, so nothing was placed. Start the tray (`ftdesk`) and place again.",
        details={"client": client},
    )
