"""Request bodies of the order endpoints, the option previews' kinds, and how ``preview_and_place`` shows one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from pydantic import Field, model_validator

from ftdesk.domain.order_actions import leg_intent
from ftdesk.domain.orders import LegAction, MultiLegOptionLeg, OrderPreview, PreviewLeg

Show: TypeAlias = Callable[[OrderPreview], None]
Confirm: TypeAlias = Callable[[OrderPreview], bool | Awaitable[bool]]


class OptionPreview(OrderPreview):
    """A single-leg option order's preview: ``qty`` counts contracts, prices are per share of the contract."""


class MultiLegPreview(OrderPreview):
    """A multi-leg option order's preview: the service's answer (net price, cost, underlying's quote) and its legs."""

    legs: list[PreviewLeg] = Field(
        description="Each leg as the broker understood it, from the service's answer; from a service that does not "
        "list them, the legs this client sent (with no broker words)."
    )

    @model_validator(mode="before")
    @classmethod
    def _sent_legs_state_their_intent(cls, data: Any) -> Any:
        # Legs as sent carry only symbol, action and qty; their intent follows from the action.
        if isinstance(data, dict) and isinstance(data.get("legs"), list):
            data = {
                **data,
                "legs": [
                    {"position_intent": leg_intent(LegAction(leg["action"])).value, **leg}
                    if isinstance(leg, dict) and "position_intent" not in leg and leg.get("action") in set(LegAction)
                    else leg
                    for leg in data["legs"]
                ],
            }
        return data


def _without_none(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if value is not None}


def equity_body(
    acct: str,
    symbol: str,
    action: str,
    qty: float,
    price_type: str,
    limit_price: float | None,
    stop_price: float | None,
    tif: str,
    *,
    conf_num: str | None = None,
) -> dict[str, Any]:
    """Return the camelCase body of an equity preview or place."""
    return _without_none(
        {
            "acctNum": acct,
            "symbol": symbol,
            "orderActionCode": action,
            "qty": qty,
            "priceTypeCode": price_type,
            "limitPrice": limit_price,
            "stopPrice": stop_price,
            "tifCode": tif,
            "confNum": conf_num,
        }
    )


def option_body(
    acct: str,
    symbol: str,
    action: str,
    qty: int,
    price_type: str,
    limit_price: float | None,
    stop_price: float | None,
    tif: str,
    position_intent: str | None,
    *,
    conf_num: str | None = None,
) -> dict[str, Any]:
    """Return the camelCase body of a single-leg option preview or place."""
    body = equity_body(acct, symbol, action, qty, price_type, limit_price, stop_price, tif, conf_num=conf_num)
    if position_intent is not None:
        body["positionIntent"] = position_intent
    return body


def multi_leg_body(
    acct: str,
    underlying: str,
    legs: Sequence[MultiLegOptionLeg],
    price_type: str,
    net_price: float | None,
    debit_credit: str | None,
    tif: str,
    *,
    conf_num: str | None = None,
) -> dict[str, Any]:
    """Return the body of a multi-leg option preview or place."""
    return _without_none(
        {
            "acct_num": acct,
            "underlying": underlying,
            "legs": [{"symbol": leg.symbol, "action": leg.action.value, "qty": leg.qty} for leg in legs],
            "price_type": price_type,
            "net_price": net_price,
            "debit_credit": debit_credit,
            "tif": tif,
            "conf_num": conf_num,
        }
    )


def cancel_body(acct: str, action_code: str) -> dict[str, Any]:
    """Return the body of a cancel or cancel preview."""
    return {"acct_num": acct, "action_code": action_code}


def money(value: float | None) -> str:
    """Return dollars as a trader reads them: thousands separators, cents ("1,752.00"); a dash when unknown."""
    return "-" if value is None else f"{value:,.2f}"


def price(value: float | None) -> str:
    """Return a per-share price with thousands separators, keeping sub-penny digits ("1,234.5", "0.0525")."""
    return "-" if value is None else f"{value:,.4f}".rstrip("0").rstrip(".")


def quantity(value: float) -> str:
    """Return shares or contracts with thousands separators ("1,500", "2.5")."""
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def _price_words(preview: OrderPreview) -> str:
    return {
        "M": "at market",
        "L": f"limit {price(preview.limit_price)}",
        "S": f"stop {price(preview.stop_price)}",
        "SL": f"stop {price(preview.stop_price)} limit {price(preview.limit_price)}",
    }.get(preview.price_type.value, preview.price_type.value)


def _broker_words(leg: PreviewLeg) -> str:
    said = " ".join(word for word in (leg.broker_action_code, leg.broker_action_desc) if word)
    return f" (broker understood: {said})" if said else ""


def _order_lines(preview: OrderPreview) -> tuple[list[str], str]:
    # The order as the broker understood it, and what the preview's quote is a quote of.
    words, at, tif = preview.broker_action_desc or preview.action_desc, _price_words(preview), preview.tif.value
    head = f"Preview {preview.conf_num} for account {preview.acct_num}: "
    if isinstance(preview, MultiLegPreview):
        legs = [
            f"  leg {number}: {leg.action.name.lower().replace('_', ' ')} {quantity(leg.qty)} {leg.symbol}"
            f"{_broker_words(leg)}"
            for number, leg in enumerate(preview.legs, start=1)
        ]
        net = " net" if preview.price_type.value != "M" else ""
        return [f"{head}{preview.symbol} {len(preview.legs)}-leg option order, {words} {at}{net}, {tif}", *legs], (
            f"underlying {preview.symbol}"
        )
    if isinstance(preview, OptionPreview):
        intent = f" to {preview.position_intent.value}" if preview.position_intent is not None else ""
        contracts = "contract" if preview.qty == 1 else "contracts"
        per_share = " per share" if preview.price_type.value != "M" else ""
        return [
            f"{head}{words}{intent} {quantity(preview.qty)} {contracts} {preview.symbol} {at}{per_share}, {tif}"
        ], "option"
    return [f"{head}{words} {quantity(preview.qty)} {preview.symbol} {at}, {tif}"], ""


def describe_preview(preview: OrderPreview) -> str:
    """Return the preview as a trader reads it: what the broker understood, the price, the cost and warnings.

    An option preview counts contracts; a multi-leg one lists each leg and labels its quote as the underlying's.
    """
    lines, quoted = _order_lines(preview)
    if preview.quote is not None:
        label = f"{quoted} quote" if quoted else "quote"
        quote = preview.quote
        lines.append(f"  {label}: last {price(quote.price)} bid {price(quote.bid)} ask {price(quote.ask)}")
    if preview.est_cost:
        amount = f"  est. cost {money(preview.est_cost)}"
    else:
        amount = f"  est. proceeds {money(preview.est_proceeds)}"
    lines.append(f"{amount}, commission {money(preview.est_commission)}, fees {money(preview.est_fees)}")
    lines.extend(f"  warning: {warning}" for warning in preview.warnings)
    return "\n".join(lines)


def print_preview(preview: OrderPreview) -> None:
    """Print the preview to stdout (the default way the ``preview_and_place`` helpers show it)."""
    print(describe_preview(preview), flush=True)
