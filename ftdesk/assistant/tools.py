"""What each MCP tool does, over ``ftdesk.client``: reads, previews, place (held for approval), cancel, halt.

Answers are JSON-able dicts an assistant can relay; a refusal raises ``ToolError`` with the service's own
error code and words (the SDK turns it into a tool result marked as an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from ftdesk.client import AsyncClient, FtdeskApiError, ServiceUnreachable, describe_preview
from ftdesk.client.answers import parse_answer
from ftdesk.client.orders import equity_body, option_body
from ftdesk.domain.orders import OrderPlacement, OrderPreview

MCP_CLIENT_HEADER = MappingProxyType({"X-Ftdesk-Client": "mcp"})
"""Sent with every request: the service holds this client's places for the trader's approval."""

EQUITY_ACTIONS = MappingProxyType({"buy": "B", "sell": "S", "sell_short": "SS", "buy_to_cover": "BC"})
ORDER_TYPES = MappingProxyType({"market": "M", "limit": "L", "stop": "S", "stop_limit": "SL"})
TIFS = MappingProxyType({"day": "D", "good_till_canceled": "G"})

NOT_RUNNING = (
    "The ftdesk service is not running (or not on this machine's settings' port). Ask the trader to start it: "
    "`ftdesk` (the tray, which also shows order approvals) or `ftdesk --headless` (reads and previews only)."
)

NEEDS_APPROVAL = "Every order placed through this assistant also needs the trader's approval in the ftdesk tray."

APPROVAL_WORDS = MappingProxyType(
    {
        "APPROVAL_REJECTED": "The trader rejected this order in the ftdesk tray; nothing was placed.",
        "APPROVAL_TIMEOUT": "The trader did not answer in time, so nothing was placed. Ask them before trying again.",
        "APPROVAL_UNAVAILABLE": "This order needs the trader's approval, and approval needs the ftdesk tray running; "
        "nothing was placed. Ask the trader to start the tray (`ftdesk`).",
    }
)


class ToolRefusal(Exception):
    """A tool's refusal in words an assistant can relay (the server raises it as the SDK's ToolError)."""


def plain(value: Any) -> Any:
    """Return models as JSON values."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def refusal(exc: Exception) -> ToolRefusal:
    """Return the words of a failure: the service's code and message, or how to start the service."""
    if isinstance(exc, ServiceUnreachable):
        return ToolRefusal(NOT_RUNNING)
    if isinstance(exc, FtdeskApiError):
        lead = APPROVAL_WORDS.get(exc.code, "The ftdesk service refused this.")
        return ToolRefusal(f"{lead} {exc.code}: {exc.message}")
    return ToolRefusal(str(exc))


@dataclass
class Previewed:
    """A preview this server made, kept so that a place needs only its conf_num."""

    kind: str
    acct: str
    fields: dict[str, Any]


@dataclass
class Desk:
    """The assistant's side of the service: one client and the previews it made."""

    api: AsyncClient
    approval_timeout: float
    previews: dict[str, Previewed] = field(default_factory=dict)

    async def account(self, given: str | None) -> str:
        """Return the account asked for, else the login's default account."""
        return given or (await self.api.list_accounts())[0].acct_num

    async def quotes(self, symbols: list[str]) -> dict[str, Any]:
        """Return the latest quotes."""
        answer = await self.api.get_quotes([symbol.upper() for symbol in symbols])
        return plain(answer)  # type: ignore[no-any-return]

    async def preview(self, kind: str, acct: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Preview an order, remember it, and say how the broker understood it."""
        made: OrderPreview
        if kind == "option":
            made = await self.api.preview_option_order(acct, **fields)
        else:
            made = await self.api.preview_equity_order(acct, **fields)
        self.previews[made.conf_num] = Previewed(kind, acct, fields)
        return {
            "conf_num": made.conf_num,
            "as_the_broker_understood_it": describe_preview(made),
            "preview": plain(made),
            "next": "To place it, call place_order with this conf_num. The trader approves or rejects it in the "
            "ftdesk tray; nothing is placed without their approval.",
        }

    async def place(self, conf_num: str, wait_seconds: float | None) -> dict[str, Any]:
        """Place a preview this server made; the service holds it until the trader answers."""
        made = self.previews.get(conf_num)
        if made is None:
            raise ToolRefusal(
                f"conf_num {conf_num} is not a preview made in this session: call preview_equity_order or "
                "preview_option_order first and place with the conf_num it returns."
            )
        wait = wait_seconds or self.approval_timeout
        if made.kind == "option":
            body = option_body(made.acct, **_option_args(made.fields), conf_num=conf_num)
            path = "/orders/option/place"
        else:
            body = equity_body(made.acct, **_equity_args(made.fields), conf_num=conf_num)
            path = "/orders/equity/place"
        headers = {"X-Ftdesk-Approval-Timeout": f"{wait:g}", "Idempotency-Key": f"mcp-{conf_num}"}
        try:
            data = await self.api.request("POST", path, json=body, headers=headers)
        except FtdeskApiError as exc:
            if exc.code in APPROVAL_WORDS:
                raise
            # Refused before the trader was asked (dry-run, halt, a risk limit, the preview): say what still follows.
            raise ToolRefusal(f"{refusal(exc)} Nothing was placed. {NEEDS_APPROVAL}") from None
        placement: OrderPlacement = parse_answer(OrderPlacement, data)
        del self.previews[conf_num]
        said = f" ({placement.message})" if placement.message else ""
        return {
            "result": f"Placed: the trader approved it. conf_num {placement.conf_num}, status "
            f"{placement.status.value}{said}.",
            "placement": plain(placement),
        }


def _equity_args(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "symbol": fields["symbol"],
        "action": fields["action"],
        "qty": fields["qty"],
        "price_type": fields["price_type"],
        "limit_price": fields.get("limit_price"),
        "stop_price": fields.get("stop_price"),
        "tif": fields["tif"],
    }


def _option_args(fields: dict[str, Any]) -> dict[str, Any]:
    return {**_equity_args(fields), "position_intent": fields.get("position_intent")}
