"""A held position and a filled order as brokers report them: the records the day-P&L tests are built of."""

from __future__ import annotations

from ftdesk.domain.accounts import Position
from ftdesk.domain.orders import Order


def held_position(
    qty: float,
    last: float,
    prev: float,
    *,
    acct: str,
    symbol: str,
    kind: str = "EQUITY",
    cost: float | None = None,
    broker_day_gain: float | None = None,
) -> Position:
    """Return a position (no ``cost``: cost fields 0; no ``broker_day_gain``: the held shares from the close)."""
    return Position.model_validate(
        {
            "acct_num": acct,
            "symbol": symbol,
            "security_type": kind,
            "description": symbol,
            "quantity": qty,
            "last_price": last,
            "last_price_chg": last - prev,
            "last_price_chg_pct": 0.0,
            "prev_close_price": prev,
            "market_value": qty * last,
            "cost_basis": 0.0 if cost is None else qty * cost,
            "avg_cost_per_share": 0.0 if cost is None else cost,
            "total_gain_loss": 0.0 if cost is None else qty * (last - cost),
            "total_gain_loss_pct": 0.0,
            "todays_gain_loss": qty * (last - prev) if broker_day_gain is None else broker_day_gain,
            "todays_gain_loss_pct": 0.0,
            "holding_pct": 100.0,
        }
    )


def filled_order(
    action: str, qty: float, price: float | None, *, acct: str, symbol: str, conf_num: str, entered: str
) -> Order:
    """Return a wholly filled market order at ``price`` (None: the broker gave no fill price)."""
    return Order.model_validate(
        {
            "acct_num": acct,
            "id_detail": {"conf_num": conf_num},
            "status_detail": {
                "status": "FILLED",
                "status_desc": "Filled",
                "cancelable_ind": False,
                "replaceable_ind": False,
                "qty": qty,
                "qty_exec": qty,
                "qty_remaining": 0,
                "avg_exec_price": price,
            },
            "order_detail": {
                "symbol": symbol,
                "action": action,
                "action_desc": action,
                "qty": qty,
                "price_type": "M",
                "tif": "D",
                "security_type": "EQUITY",
                "entry_time": entered,
            },
        }
    )
