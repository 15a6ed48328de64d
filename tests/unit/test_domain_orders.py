"""Order records refuse what no broker should ever see."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ftdesk.domain.orders import MAX_PRICE, EquityAction, EquityOrder, PriceType


def test_absurd_prices_are_refused_before_any_broker() -> None:
    with pytest.raises(ValidationError, match="limit_price"):
        EquityOrder(
            acct_num="A", symbol="AAPL", action=EquityAction.BUY, qty=1, price_type=PriceType.LIMIT, limit_price=1e300
        )
    with pytest.raises(ValidationError, match="stop_price"):
        EquityOrder(
            acct_num="A",
            symbol="AAPL",
            action=EquityAction.SELL,
            qty=1,
            price_type=PriceType.STOP,
            stop_price=MAX_PRICE * 2,
        )
    assert (
        EquityOrder(
            acct_num="A",
            symbol="BRK.A",
            action=EquityAction.BUY,
            qty=1,
            price_type=PriceType.LIMIT,
            limit_price=750_000.0,
        ).limit_price
        == 750_000.0
    )


def test_a_limit_order_needs_its_price() -> None:
    with pytest.raises(ValidationError, match="limit_price is required"):
        EquityOrder(acct_num="A", symbol="AAPL", action=EquityAction.BUY, qty=1, price_type=PriceType.LIMIT)
