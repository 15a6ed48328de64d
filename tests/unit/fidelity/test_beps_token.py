"""Reading the BEPS token answer, whose shape was never captured: accepted shapes, lifetimes, and refusals."""

from __future__ import annotations

import base64
import json

import pytest

from ftdesk.brokers.fidelity.beps_auth import DEFAULT_TOKEN_LIFETIME, MIN_RENEWAL, parse_token
from ftdesk.domain.errors import BrokerError
from tests.fakes.clock import ANCHOR, ManualClock


def jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


NOW = ANCHOR.timestamp()


@pytest.mark.parametrize(
    ("answer", "source", "lives"),
    [
        (jwt({"exp": NOW + 900}), "JWT exp", 900.0),
        (json.dumps(jwt({"exp": NOW + 900})), "JWT exp", 900.0),  # a JSON string
        (json.dumps({"token": jwt({"exp": NOW + 900})}), "JWT exp", 900.0),
        (json.dumps({"accessToken": "opaque", "expiresIn": 1200}), "expiresIn", 1200.0),
        (json.dumps({"data": {"authToken": "opaque", "expiresAt": (NOW + 300) * 1000}}), "expiresAt", 300.0),
        (json.dumps({"jwt": "opaque", "expiration": "2026-11-16T15:10:00+00:00"}), "expiresAt", 600.0),
    ],
)
def test_a_token_and_its_lifetime_are_read_from_the_usual_shapes(answer: str, source: str, lives: float) -> None:
    clock = ManualClock()

    token = parse_token(answer, clock)

    assert token.lifetime_source == source
    assert token.expires_at is not None and token.expires_at - clock.monotonic() == pytest.approx(lives)
    # Renewed a tenth of the lifetime (at least a minute, at most half) before it ends.
    margin = max(min(60.0, lives / 2), lives / 10)
    assert token.renew_at(clock.monotonic()) == pytest.approx(clock.monotonic() + lives - margin)


def test_a_token_that_says_nothing_of_its_lifetime_is_renewed_on_the_default_period() -> None:
    clock = ManualClock()
    token = parse_token("opaque-token-value", clock)
    assert token.expires_at is None and token.lifetime_source == "unknown"
    assert token.renew_at(clock.monotonic()) == clock.monotonic() + DEFAULT_TOKEN_LIFETIME


def test_a_token_that_already_looks_expired_is_not_renewed_at_once() -> None:
    clock = ManualClock()  # this machine's clock runs ahead of the token endpoint's: exp is already past
    token = parse_token(jwt({"exp": NOW - 3600}), clock)
    # Renewing "now" would fetch token after token in a loop (one fetch and one connection each time).
    assert token.renew_at(clock.monotonic()) == clock.monotonic() + MIN_RENEWAL


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (json.dumps({"status": "OK", "grant": {"value": 3}}), "keys: grant, status"),
        ("{broken", "broken JSON"),
        ("<html><body>Log in</body></html>", "not a token"),
        (json.dumps([1, 2]), "keys: none"),
    ],
)
def test_other_answers_are_refused_with_what_they_were_never_guessed(answer: str, says: str) -> None:
    with pytest.raises(BrokerError) as caught:
        parse_token(answer, ManualClock())
    assert says in caught.value.message
