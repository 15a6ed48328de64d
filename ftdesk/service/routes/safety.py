"""Safety: the kill switch (halt, resume), its state with the live switch's last change, and the risk limits."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import Field

from ftdesk.domain.base import Record
from ftdesk.domain.safety import HaltOutcome, HaltState, LimitUsage, RiskLimits, SafetyState
from ftdesk.service.routes.common import context
from ftdesk.service.web.routing import BodyModel, Call, RouteTable, read_json_body, validate_json

routes = RouteTable(tag="safety")

MAX_REASON_CHARS = 200


class HaltBody(BodyModel):
    """Why trading is halted (optional; the body itself may be left out)."""

    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS, description="Kept in the journal.")


class SafetyLimits(Record):
    """The local risk limits in force and how much of them is used now."""

    limits: RiskLimits
    usage: LimitUsage


_OPTIONAL_BODY: Mapping[str, Any] = MappingProxyType(
    {
        "requestBody": {
            "required": False,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "reason": {
                                "type": ["string", "null"],
                                "maxLength": MAX_REASON_CHARS,
                                "description": "Why trading is halted; kept in the journal.",
                            }
                        },
                    }
                }
            },
        }
    }
)


@routes.post("/safety/halt", summary="Halt trading (kill switch)", response=HaltOutcome, extra_openapi=_OPTIONAL_BODY)
async def halt(call: Call[None, None]) -> HaltOutcome:
    """Pull the kill switch: from this moment every preview and place is refused with 409 `TRADING_HALTED`;
    live trading is switched off; every working order on every account is canceled (one cancel call per
    order, never retried), and each cancel that failed is listed with its error code and message.

    The body is optional: `{"reason": "..."}` is kept in the journal. Cancels still work while halted. The
    halt is kept in the data dir, so a restart comes back halted, and is journaled (action `halt`, endpoint
    `safety (api)`) with what it canceled and what it could not. Halting while halted cancels again and keeps
    the first halt's time. Not logged in: the halt still holds, and `failures` says the orders could not be
    listed. Lift it with `POST /api/v1/safety/resume` or in the tray.
    """
    reason: str | None = None
    if call.request.can_read_body and call.request.content_length != 0:
        body = validate_json(HaltBody, await read_json_body(call.request), "body")
        assert isinstance(body, HaltBody)
        reason = body.reason
    return await context(call).kill_switch.halt("api", reason)


@routes.post("/safety/resume", summary="Resume trading", response=HaltState)
async def resume(call: Call[None, None]) -> HaltState:
    """Lift the kill switch and return the halt that was lifted (`halted` false: there was none).

    Previews work again at once. Live trading stays OFF: a resume never turns it back on, so a script that
    resumes still cannot place until the trader turns live trading on in the tray (the same confirmation as
    ever). That is why this endpoint asks for no further confirmation. Journaled (action `resume`).
    """
    return await context(call).kill_switch.resume("api")


@routes.get("/safety", summary="Safety state", response=SafetyState)
async def get_safety(call: Call[None, None]) -> SafetyState:
    """Report the kill switch (halted, since, by whom, why), whether live trading is on and its last change
    (on or off, by whom: tray, settings, halt, startup; when), the risk limits and today's usage of them.
    """
    return context(call).kill_switch.state()


@routes.get("/safety/limits", summary="Risk limits and usage", response=SafetyLimits)
async def get_limits(call: Call[None, None]) -> SafetyLimits:
    """Report the local risk limits in force (null: off) and their usage: places in the last minute, open
    orders (as last read), today's P&L per account (as last read) and the accounts whose loss limit halted
    trading today. The limits are set in the settings (tray) or `FTSERVICE_*`; the API cannot change them.
    """
    state = context(call).kill_switch.state()
    return SafetyLimits(limits=state.limits, usage=state.usage)
