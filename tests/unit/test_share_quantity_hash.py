"""An equity body's hash keeps whole shares as integers, so Idempotency-Keys journaled before fractions still replay."""

from __future__ import annotations

import hashlib
import json

from ftdesk.service.orders.bodies import EquityPlaceBody

BODY = {"acctNum": "A1", "symbol": "AAPL", "orderActionCode": "B", "priceTypeCode": "M", "confNum": "X1"}


def body(qty: float) -> EquityPlaceBody:
    return EquityPlaceBody.model_validate_json(json.dumps({**BODY, "qty": qty}))


def test_a_whole_quantity_hashes_as_the_integer_it_was_before_fractions() -> None:
    # What the whole-share version hashed: the validated body with qty an integer, keys sorted, compact.
    before = {**BODY, "qty": 10, "limitPrice": None, "stopPrice": None, "tifCode": "D"}
    expected = hashlib.sha256(json.dumps(before, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert body(10).body_hash() == body(10.0).body_hash() == expected
    assert body(10).previewed_fields()["qty"] == 10


def test_a_fraction_hashes_as_itself() -> None:
    assert body(2.5).previewed_fields()["qty"] == 2.5
    assert body(2.5).body_hash() not in (body(2).body_hash(), body(3).body_hash())
