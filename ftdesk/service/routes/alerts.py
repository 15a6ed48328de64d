"""Alerts: activate alert delivery and manage price triggers (price alerts)."""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from ftdesk.domain import errors as e
from ftdesk.domain.user_data import (
    AlertSubscription,
    PriceTrigger,
    PriceTriggerDraft,
    TriggerBasis,
    TriggerDirection,
)
from ftdesk.service.routes.common import Symbol, in_user_data
from ftdesk.service.web.routing import BodyModel, Call, RouteTable

routes = RouteTable(tag="alerts")

MAX_PRICE = 10_000_000


class PriceTriggerBody(BodyModel):
    """A price alert: fire once when `symbol` trades at or beyond `price` in `direction`.

    With `basis` PERCENT, `price` is a percent move from the previous close: `BELOW` 4 fires when the
    price is 4% under the previous close.
    """

    symbol: Symbol = Field(description="A stock, ETF or option symbol (upper-cased).")
    direction: TriggerDirection = Field(
        description="ABOVE fires when the last price rises to `price` or higher, BELOW when it falls to it or lower."
    )
    price: float = Field(
        gt=0,
        le=MAX_PRICE,
        allow_inf_nan=False,
        description="The trigger level (with basis PERCENT, the percent move); it must not be reached already.",
    )
    basis: TriggerBasis = Field(
        default=TriggerBasis.PRICE,
        description="PRICE (default): `price` is a price level. PERCENT: `price` is a percent move from the "
        "previous close (under 100 for BELOW).",
    )
    note: str = Field(default="", max_length=500, description="Your reminder, delivered with the alert.")

    @model_validator(mode="after")
    def _percent_below_under_100(self) -> PriceTriggerBody:
        if self.basis is TriggerBasis.PERCENT and self.direction is TriggerDirection.BELOW and self.price >= 100:
            raise ValueError("a price cannot fall 100% or more: a BELOW percent must be under 100")
        return self

    def draft(self) -> PriceTriggerDraft:
        """Return the domain draft."""
        return PriceTriggerDraft(
            symbol=self.symbol, direction=self.direction, price=self.price, basis=self.basis, note=self.note
        )


class TriggerDeleted(BaseModel):
    """The outcome of deleting a price trigger."""

    deleted: bool = Field(description="Always true: a trigger that does not exist is NOT_FOUND instead.")
    trigger_id: str


@routes.post("/alerts/subscribe", summary="Activate alert delivery", response=AlertSubscription, needs_session=True)
async def subscribe_alerts(call: Call[None, None]) -> AlertSubscription:
    """Turn on delivery of alerts (fired price triggers and account alerts) and say where they arrive.

    Alerts are account events: read them from `delivery` (the `/api/v1/streaming/events` SSE stream).
    Idempotent. The answer never carries upstream tokens or credentials.
    """
    return await in_user_data(call, lambda user_data: user_data.subscribe_alerts())


@routes.get("/alerts/price-triggers", summary="Price triggers", response=list[PriceTrigger], needs_session=True)
async def list_price_triggers(call: Call[None, None]) -> list[PriceTrigger]:
    """List price alerts, active and fired, in the order they were created."""
    return await in_user_data(call, lambda user_data: user_data.get_price_triggers())


@routes.post(
    "/alerts/price-triggers",
    summary="Create a price trigger",
    body=PriceTriggerBody,
    response=PriceTrigger,
    status=201,
    needs_session=True,
)
async def create_price_trigger(call: Call[PriceTriggerBody, None]) -> PriceTrigger:
    """Create an active price alert and return it with its `trigger_id` (201).

    A level the last price has already reached (it would fire at once) or an unknown symbol is a
    `VALIDATION_ERROR`.
    """
    draft = call.body.draft()
    return await in_user_data(call, lambda user_data: user_data.create_price_trigger(draft))


@routes.delete(
    "/alerts/price-triggers/{trigger_id}",
    summary="Delete a price trigger",
    response=TriggerDeleted,
    needs_session=True,
    errors=(e.NotFound,),
)
async def delete_price_trigger(call: Call[None, None]) -> TriggerDeleted:
    """Delete a price alert, active or fired; an unknown `trigger_id` is `NOT_FOUND`."""
    trigger_id = call.path["trigger_id"]
    await in_user_data(call, lambda user_data: user_data.delete_price_trigger(trigger_id))
    return TriggerDeleted(deleted=True, trigger_id=trigger_id)
