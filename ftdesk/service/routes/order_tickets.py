"""How the order routes hand a command to the order desk: tickets, the Idempotency-Key header, shared docs.

The trading-safety rules of a place, in the order they apply, are ``OrderDesk.PLACE_RULES``
(``ftdesk.service.orders.desk``); each place operation's served description is generated from that table.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, TypeVar

from aiohttp import web

from ftdesk.domain import errors as e
from ftdesk.domain.orders import OrderPlacement
from ftdesk.domain.safety import RiskLimitExceeded, TradingHalted
from ftdesk.service.orders.approvals import CLIENT_HEADER, MAX_TIMEOUT, TIMEOUT_HEADER
from ftdesk.service.orders.bodies import OrderBodyMixin
from ftdesk.service.orders.commands import Command
from ftdesk.service.orders.desk import PLACE_ERRORS as DESK_REFUSALS
from ftdesk.service.orders.desk import P, place_rules
from ftdesk.service.orders.recorder import OrderTicket
from ftdesk.service.routes.common import context
from ftdesk.service.web.routing import Call

H = TypeVar("H", bound=Callable[..., Any])
T = TypeVar("T")

IDEMPOTENCY_HEADER = "Idempotency-Key"
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_PATH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

PREVIEW_ERRORS: tuple[type[e.FtdeskError], ...] = (
    e.NotFound,
    e.OrderRejected,
    e.ActionMismatch,
    TradingHalted,
    RiskLimitExceeded,
)
PLACE_ERRORS: tuple[type[e.FtdeskError], ...] = (*DESK_REFUSALS, e.NotFound)
PLACE_OPENAPI: Mapping[str, Any] = MappingProxyType(
    {
        "parameters": [
            {
                "name": IDEMPOTENCY_HEADER,
                "in": "header",
                "required": False,
                "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x21-\\x7e]+$"},
                "description": "Any unique string (a UUID) per intended order. A retry with the same key and body "
                "returns the first answer (with `Idempotent-Replayed: true`) instead of placing a second order, "
                "also after a restart; the same key with another body is IDEMPOTENCY_KEY_REUSED; while the first "
                "request is in flight, CONFLICT. Only answers from the broker are remembered: a refusal before the "
                "broker (LIVE_TRADING_DISABLED, PREVIEW_*, VALIDATION_ERROR, AUTH_REQUIRED) can be retried with the "
                "same key. Keys are kept 30 days.",
            },
            {
                "name": CLIENT_HEADER,
                "in": "header",
                "required": False,
                "schema": {"type": "string", "maxLength": 64},
                "description": "Who the client is. `mcp` (what `ftdesk mcp` sends) holds the place until the trader "
                "approves it in the tray (see the Trader's approval rule). A declaration, not a credential: the "
                "setting require_approval holds every place, whoever sends it.",
            },
            {
                "name": TIMEOUT_HEADER,
                "in": "header",
                "required": False,
                "schema": {"type": "number", "minimum": 1, "maximum": MAX_TIMEOUT},
                "description": "Seconds a held place waits for the trader's approval before APPROVAL_TIMEOUT "
                "(default: the approval_timeout setting, 60). Ignored for a place that is not held.",
            },
        ]
    }
)

__all__ = ("PLACE_ERRORS", "PLACE_OPENAPI", "PREVIEW_ERRORS", "document", "path_id", "place_rules")


def document(extra: str) -> Callable[[H], H]:
    """Append shared text to a handler's docstring (the OpenAPI description)."""

    def decorate(handler: H) -> H:
        handler.__doc__ = inspect.cleandoc(handler.__doc__ or "") + extra
        return handler

    return decorate


# --- request plumbing --------------------------------------------------------------------------------------


def _idempotency_key(call: Call[Any, Any]) -> str | None:
    value = call.request.headers.get(IDEMPOTENCY_HEADER)
    if value is None:
        return None
    value = value.strip()
    if not _IDEMPOTENCY_KEY.fullmatch(value):
        problem = "must be 1 to 255 visible ASCII characters (a UUID works)"
        raise e.ValidationFailed.for_fields(
            f"Invalid {IDEMPOTENCY_HEADER} header: {problem}", [(IDEMPOTENCY_HEADER, problem)], location="header"
        )
    return value


def path_id(call: Call[Any, Any], name: str) -> str:
    """Return an order or stage id from the path; a malformed one is a 422 naming the path parameter."""
    value = call.path[name]
    if not _PATH_ID.fullmatch(value):
        problem = "must be 1 to 64 letters, digits, '-' or '_'"
        raise e.ValidationFailed.for_fields(f"Invalid path: {name} {problem}", [(name, problem)], location="path")
    return value


def order_ticket(call: Call[Any, Any], *, conf_nums: tuple[str, ...] = (), place: bool = False) -> OrderTicket:
    """Describe an order request for the desk: who asked, its journal facts and what a place must match."""
    body: OrderBodyMixin = call.body
    given = conf_nums or body.given_conf_nums()
    facts = body.journal_facts()
    if given:
        facts = replace(facts, conf_nums=given)
    return OrderTicket(
        request_id=call.request_id,
        endpoint=f"{call.request.method} {call.request.path}",
        facts=facts,
        body_hash=body.body_hash(),
        fields=body.previewed_fields(),
        conf_nums=given,
        idempotency_key=_idempotency_key(call) if place else None,
        client=call.request.headers.get(CLIENT_HEADER) if place else None,
        approval_timeout=_approval_timeout(call) if place else None,
    )


def _approval_timeout(call: Call[Any, Any]) -> float | None:
    """Return the seconds the client waits for the trader's approval (X-Ftdesk-Approval-Timeout), capped."""
    raw = call.request.headers.get(TIMEOUT_HEADER)
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        raise e.ValidationFailed.for_fields(
            f"Invalid {TIMEOUT_HEADER} header", [(TIMEOUT_HEADER, "a number of seconds")], location="header"
        ) from None
    if not 1 <= seconds <= MAX_TIMEOUT:
        problem = f"between 1 and {MAX_TIMEOUT:g} seconds"
        raise e.ValidationFailed.for_fields(
            f"Invalid {TIMEOUT_HEADER} header: {problem}", [(TIMEOUT_HEADER, problem)], location="header"
        )
    return seconds


async def preview(call: Call[Any, Any], command: Command[P]) -> P:
    """Hand a preview to the order desk."""
    return await context(call).orders.preview(command, order_ticket(call))


async def place(call: Call[Any, Any], command: Command[OrderPlacement]) -> OrderPlacement | web.Response:
    """Hand a place to the order desk (its rules: ``OrderDesk.PLACE_RULES``)."""
    return await context(call).orders.place(command, order_ticket(call, place=True))


async def cancel(call: Call[Any, Any], command: Command[T], conf_num: str) -> T:
    """Hand a cancel or cancel preview of the order in the path to the order desk (never gated)."""
    return await context(call).orders.cancel(command, order_ticket(call, conf_nums=(conf_num,)))
