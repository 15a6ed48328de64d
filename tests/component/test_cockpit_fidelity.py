"""The cockpit's reads and cancel on the fake Fidelity upstream: the same calls the status window makes."""

from __future__ import annotations

from typing import Any

import pytest

from ftdesk.domain.errors import FtdeskError
from ftdesk.service.cockpit_access import CockpitAccess
from tests.component import test_fidelity_service
from tests.component.test_fidelity_service import API, StartFidelity, login
from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads

start_fidelity = test_fidelity_service.start_fidelity  # the fixture: a service fronting the fake upstream


async def place_resting_buy(service: RunningService) -> dict[str, Any]:
    """Preview and place a good-till-canceled AAPL buy far under the market; return the place's answer."""
    order = {
        "acctNum": payloads.MARGIN,
        "symbol": "AAPL",
        "orderActionCode": "B",
        "qty": 2,
        "priceTypeCode": "L",
        "limitPrice": 150.0,
        "tifCode": "G",
    }
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=order)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/equity/place", json={**order, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    return placed


async def test_positions_the_order_book_and_a_cancel_on_fidelity(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity(live_trading="true")
    await login(service)
    cockpit = CockpitAccess(lambda: service.context)
    placed = await place_resting_buy(service)
    conf = placed["data"]["conf_num"]

    assert payloads.MARGIN in [account.acct_num for account in await cockpit.accounts()]
    assert {"SPAXX", "AAPL"} <= {position.symbol for position in await cockpit.positions(payloads.MARGIN)}
    book = await cockpit.order_book()
    (listed,) = [o for o in book.open if o.id_detail.conf_num == conf]
    assert listed.acct_num == payloads.MARGIN and listed.order_detail.symbol == "AAPL"

    result = await cockpit.cancel(listed, source="status window")
    assert result.is_accepted
    assert upstream.fidelity.hits_for("/orderentry/cancel/place/v1") == 1  # one upstream cancel, no retry
    assert conf not in [o.id_detail.conf_num for o in (await cockpit.order_book()).open]
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert status == 200, journal
    (entry,) = [e for e in journal["data"] if e["action"] == "cancel"]
    assert entry["endpoint"] == "DESKTOP cancel (status window)" and entry["outcome"] == "accepted"


async def test_a_cockpit_cancel_that_meets_an_expired_session_is_not_sent_twice(start_fidelity: StartFidelity) -> None:
    service, upstream = await start_fidelity(live_trading="true")
    await login(service, remember=True)
    cockpit = CockpitAccess(lambda: service.context)
    placed = await place_resting_buy(service)
    (listed,) = [o for o in (await cockpit.order_book()).open if o.id_detail.conf_num == placed["data"]["conf_num"]]

    upstream.fidelity.expire()  # the cancel reaches the upstream on a session that has just expired
    with pytest.raises(FtdeskError):
        await cockpit.cancel(listed, source="status window")

    # The session is renewed for what comes next, but the cancel is not sent again on its own: the trader sees the
    # failure and decides, as with a cancel through the API.
    assert upstream.fidelity.hits_for("/orderentry/cancel/place/v1") <= 1
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert status == 200, journal
    (entry,) = [e for e in journal["data"] if e["action"] == "cancel"]
    assert entry["outcome"] != "accepted"
