"""What the client prints a trader reads at a glance: money and quantities with thousands separators."""

from __future__ import annotations

from ftdesk.client import describe_preview
from ftdesk.domain.orders import OrderPreview


def preview(**fields: object) -> OrderPreview:
    base: dict[str, object] = {
        "conf_num": "C1",
        "acct_num": "X12345678",
        "symbol": "TSLA",
        "action": "B",
        "action_desc": "Buy",
        "qty": 1500,
        "price_type": "L",
        "limit_price": 1168.25,
        "tif": "D",
        "quote": {"price": 1167.5, "bid": 1167.4, "ask": 1167.6, "time": "2026-11-16T15:00:00+00:00"},
        "est_commission": 0.0,
        "est_fees": 0.0,
        "est_cost": 1752375.0,
        "est_proceeds": 0.0,
    }
    return OrderPreview.model_validate({**base, **fields})


def test_a_preview_prints_money_prices_and_quantities_with_thousands_separators() -> None:
    text = describe_preview(preview())
    assert "Buy 1,500 TSLA limit 1,168.25, D" in text
    assert "quote: last 1,167.5 bid 1,167.4 ask 1,167.6" in text
    assert "est. cost 1,752,375.00, commission 0.00, fees 0.00" in text


def test_small_figures_keep_their_digits() -> None:
    text = describe_preview(preview(qty=2.5, limit_price=0.0525, est_cost=1752.0))
    assert "Buy 2.5 TSLA limit 0.0525" in text and "est. cost 1,752.00" in text
