"""How the order routes hand a call to the order desk: tickets, the preview and place runners, shared docs.

Trading safety, in the order the service applies it to a place:

1. Idempotency-Key (optional header on the six place endpoints): a retried place with the same key and
   body returns the first answer (status and envelope, with ``Idempotent-Replayed: true``) without a second
   broker call, also after a restart; the key with another body is ``IDEMPOTENCY_KEY_REUSED`` (422); while
   the first request is in flight it is ``CONFLICT`` (409).
2. Live gate: while live trading is off (dry-run, the default) a place is ``LIVE_TRADING_DISABLED`` (403)
   before any broker call. Previews, cancel previews and cancels are never gated.
3. Bound preview: a place carries the conf_num(s) of an unexpired (FTSERVICE_PREVIEW_TTL), unused preview
   this service made of the same kind of order with the same fields; otherwise ``PREVIEW_REQUIRED`` or
   ``PREVIEW_MISMATCH`` (409), before any broker call.
4. Journal: each preview, place, cancel preview and cancel is written to the order journal before the broker
   call and updated after it (GET /orders/journal).
5. No retries: a place is sent to the broker once; if the session expired it answers SESSION_EXPIRED.
"""

from __future__ import annotations

import functools
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
from ftdesk.service.orders.bodies import OrderBodyMixin
from ftdesk.service.orders.desk import Operation, OrderTicket, P
from ftdesk.service.orders.journal import JournalAction
from ftdesk.service.orders.previews import OrderKind
from ftdesk.service.routes.common import context, in_orders
from ftdesk.service.web.routing import Call

H = TypeVar("H", bound=Callable[..., Any])

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
PLACE_ERRORS: tuple[type[e.FtdeskError], ...] = (
    TradingHalted,
    RiskLimitExceeded,
    e.OrderRejected,
    e.LiveTradingDisabled,
    e.PreviewRequired,
    e.PreviewMismatch,
    e.Conflict,
    e.IdempotencyKeyReused,
    e.NotFound,
)
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
            }
        ]
    }
)

_PLACE_RULES = """

Safety, in this order, all before the broker is called:
1. `Idempotency-Key` (optional header): the same key and body return the first answer without a second
   order (also after a restart); another body with the key is `IDEMPOTENCY_KEY_REUSED` (422); while the
   first request is in flight, `CONFLICT` (409).
2. Live gate: while live trading is off (dry-run, FTSERVICE_LIVE_TRADING=false, the default, or switched
   off in the tray) the place is refused with `LIVE_TRADING_DISABLED` (403).
3. Bound preview: the body must carry the conf_num{s} of a preview this service made at {preview} within
   FTSERVICE_PREVIEW_TTL seconds (default 300), not used before, with the same fields. Otherwise
   `PREVIEW_REQUIRED` (409; `details.reason` is missing, unknown, expired, already_used or in_use) or
   `PREVIEW_MISMATCH` (409; `details.fields` lists each differing field with the previewed and the given
   value). Previews do not survive a restart of the service.

The preview is used up by the first place that reaches the broker, even if the broker rejects the order
(`ORDER_REJECTED`, 422, with `details.reason` and the broker's `details.broker_code` and
`details.broker_message`): preview again to try again. The place is sent
once and never retried: when the broker reports an expired session it answers `SESSION_EXPIRED` (preview
and place again once the session is back).
Every attempt, refused ones included, is in the order journal (GET /api/v1/orders/journal)."""


def place_rules(preview: str, plural: bool = False) -> str:
    """Return the safety rules of a place endpoint, naming the preview endpoint it binds to."""
    return _PLACE_RULES.replace("{preview}", preview).replace("{s}", "s" if plural else "")


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


def order_ticket(
    call: Call[Any, Any], action: JournalAction, kind: OrderKind | None, *, conf_nums: tuple[str, ...] = ()
) -> OrderTicket:
    """Describe an order action for the desk: what is asked, its journal facts and the safety inputs."""
    ctx = context(call)
    body: OrderBodyMixin = call.body
    given = conf_nums or body.given_conf_nums()
    facts = body.journal_facts()
    if given:
        facts = replace(facts, conf_nums=given)
    return OrderTicket(
        request_id=call.request_id,
        endpoint=f"{call.request.method} {call.request.path}",
        action=action,
        kind=kind,
        facts=facts,
        body_hash=body.body_hash(),
        fields=body.previewed_fields() if kind is not None else {},
        conf_nums=given,
        idempotency_key=_idempotency_key(call) if action is JournalAction.PLACE else None,
        # Read per request: the tray flips live trading and may change the preview lifetime at runtime.
        live_trading=ctx.live.enabled,
        preview_ttl=ctx.settings.preview_ttl,
        order=body.to_domain() if kind is not None and hasattr(body, "to_domain") else None,
    )


async def preview(call: Call[Any, Any], kind: OrderKind, operation: Operation[P]) -> P:
    """Journal a preview, run it in the session, and remember its conf_num(s) for the place."""
    run = functools.partial(in_orders, call)
    return await context(call).orders.preview(order_ticket(call, JournalAction.PREVIEW, kind), run, operation)


async def place(
    call: Call[Any, Any], kind: OrderKind, operation: Operation[OrderPlacement]
) -> OrderPlacement | web.Response:
    """Place through the desk: Idempotency-Key, live gate, bound preview, journal, one broker call."""
    run = functools.partial(in_orders, call, retry_on_expiry=False)
    return await context(call).orders.place(order_ticket(call, JournalAction.PLACE, kind), run, operation)
