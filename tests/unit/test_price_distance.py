"""The price-distance limit measures from the bid/ask midpoint of a two-sided quote, else from the last trade."""

from __future__ import annotations

import pytest

from ftdesk.domain.orders import EquityOrder, OptionOrder
from ftdesk.domain.safety import RiskLimitExceeded
from ftdesk.service.safety.limits import LimitChecker, QuotePrices
from tests.fakes.clock import ManualClock

CALL = "AAPL261218C270"


def checker(make_settings) -> LimitChecker:
    settings = make_settings(max_price_distance_pct="10")
    return LimitChecker(ManualClock(), lambda: settings)


def reader(prices: QuotePrices | None):
    async def quote(_symbol: str) -> QuotePrices | None:
        return prices

    return quote


async def no_orders() -> list[str]:
    return []


def option_buy(limit: float) -> OptionOrder:
    return OptionOrder.model_validate(
        {"acct_num": "X1", "symbol": CALL, "action": "BC", "qty": 1, "price_type": "L", "limit_price": limit}
    )


def equity_buy(limit: float) -> EquityOrder:
    return EquityOrder.model_validate(
        {"acct_num": "X1", "symbol": "AAPL", "action": "B", "qty": 1, "price_type": "L", "limit_price": limit}
    )


async def test_an_option_limit_at_the_mid_passes_though_the_last_trade_is_stale(make_settings) -> None:
    # Last traded at 2.00 this morning; the market is now 2.90 x 3.10: a limit at the mid is ordinary.
    stale = QuotePrices(last=2.00, bid=2.90, ask=3.10)
    await checker(make_settings).check(option_buy(3.00), reader(stale), no_orders)


async def test_a_refusal_names_the_midpoint_with_the_bid_and_ask(make_settings) -> None:
    quote = QuotePrices(last=2.00, bid=2.90, ask=3.10)
    with pytest.raises(RiskLimitExceeded) as refused:
        await checker(make_settings).check(option_buy(3.40), reader(quote), no_orders)
    details = refused.value.details
    assert details["quote"] == 3.0 and details["quote_basis"] == "bid/ask midpoint"
    assert details["order_value"] == pytest.approx(13.3333, abs=1e-4)
    assert "from the bid/ask midpoint 3 (bid 2.9, ask 3.1)" in refused.value.message


@pytest.mark.parametrize(
    "quote",
    [QuotePrices(last=100.0), QuotePrices(last=100.0, bid=0.0, ask=101.0), QuotePrices(last=100.0, bid=102, ask=101)],
    ids=["no-bid-ask", "no-bid", "crossed"],
)
async def test_a_one_sided_quote_falls_back_to_the_last_trade(make_settings, quote: QuotePrices) -> None:
    limits = checker(make_settings)
    await limits.check(equity_buy(90.5), reader(quote), no_orders)  # 9.5 % under the last
    with pytest.raises(RiskLimitExceeded) as refused:
        await limits.check(equity_buy(89.0), reader(quote), no_orders)
    assert refused.value.details["quote"] == 100.0 and refused.value.details["quote_basis"] == "last trade"
    assert "from the last trade 100" in refused.value.message


async def test_no_quote_at_all_checks_nothing(make_settings) -> None:
    await checker(make_settings).check(equity_buy(1.0), reader(None), no_orders)
