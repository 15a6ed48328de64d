"""Where BEPS gets its token, host, stream URL and member id when no FTSERVICE_BEPS_* variable says.

What is known (docs/fidelity-protocol.md, BEPS), and how sure it is:

- The token comes from ``GET .../security/token/authz/generate/1.0`` on dpservice (the app's
  ``ILwcAuthTokenApi``; decompiled). The summary abbreviated the start of the path: ``/ftgw/dp`` is inferred
  from the captured dpservice paths, so ``FTSERVICE_BEPS_TOKEN_URL`` can replace the whole URL, and a 404 says
  so. The answer's shape was never captured: a JWT as text, or a JSON object carrying it under one of a few
  usual names, is accepted; any other shape is refused with the names of the keys it had (never their values),
  never guessed at.
- The token's lifetime is read from ``expiresIn``/``expiresAt``-style fields when present, else from the JWT's
  own ``exp`` claim (the later SDK calls it a "BEPS JWT auth token"). When neither is there, the token is
  renewed every ``DEFAULT_TOKEN_LIFETIME`` seconds, and the status says the lifetime is unknown.
- The member id (``subscribeId``) is the security context's ``internalSystemIds[type=MID]`` (inferred: the
  later SDK's ``BEPS_MID`` is a "member identifier"); without one, BEPS cannot start and the reason says so.
- Host and URL: the decompiled URL is ``wss://spservice.fidelity.com/graphql/realtime`` with the auth object
  "as a URL query parameter". The parameter names ``header`` (plus ``payload=e30=``, an empty object) are the
  AppSync real-time convention, and the auth object's ``host`` is taken to be that URL's host; both are
  inferred, so both stay overridable (FTSERVICE_BEPS_STREAM_URL, FTSERVICE_BEPS_HOST).

The token never reaches a log line, an exception message or the status page.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, SessionExpired

TOKEN_URL = f"{DPSERVICE}/ftgw/dp/security/token/authz/generate/1.0"
DEFAULT_HOST = "spservice.fidelity.com"
DEFAULT_STREAM_URL = f"wss://{DEFAULT_HOST}/graphql/realtime?header={{0}}&payload=e30="
DEFAULT_TOKEN_LIFETIME = 600.0
"""Seconds a token is used when its answer says nothing about its lifetime."""
MIN_RENEWAL = 30.0
"""Seconds a token is used at least before the next is fetched, whatever its stated expiry."""

TOKEN_KEYS = ("token", "accesstoken", "access_token", "authtoken", "auth_token", "jwt", "idtoken", "id_token")
EXPIRES_IN_KEYS = ("expiresin", "expires_in", "ttl")
EXPIRES_AT_KEYS = ("expiresat", "expires_at", "expiration", "expiry", "exp")
_JWT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class BepsToken:
    """A BEPS token and when it stops working (monotonic seconds of the clock; None: not said)."""

    value: str = field(repr=False)
    expires_at: float | None
    lifetime_source: str
    """Where the lifetime came from: "expiresIn", "expiresAt", "JWT exp" or "unknown"."""

    def renew_at(self, now: float) -> float:
        """Return when to fetch the next token: well before expiry, or after the default lifetime."""
        if self.expires_at is None:
            return now + DEFAULT_TOKEN_LIFETIME
        remaining = self.expires_at - now
        margin = max(min(60.0, remaining / 2), remaining / 10)
        # A token that already looks expired (a clock ahead of the upstream's) must not start a fetch loop:
        # it is used until AppSync refuses it, and the hub's backoff spaces the reconnects from there.
        return now + max(remaining - margin, MIN_RENEWAL)


async def fetch_token(http: FidelityHttp, clock: Clock, url: str = TOKEN_URL) -> BepsToken:
    """Ask the token endpoint for a BEPS token; raise ``BrokerError`` (or ``SessionExpired``) saying why not."""
    # A read for the politeness layer: a new token changes nothing a trader owns, so a 503 is retried within the
    # read budget, and fetching one neither spends the order budget nor ends the sharing of read answers.
    response = await http.call("GET", url, read=True)
    if response.status in (401, 403):
        raise SessionExpired(f"The BEPS token endpoint refused the session (HTTP {response.status}): log in again")
    if response.status == 404:
        raise BrokerError(
            "The BEPS token endpoint answered 404: its path is only partly known "
            "(.../security/token/authz/generate/1.0); set FTSERVICE_BEPS_TOKEN_URL to the right URL, "
            "or FTSERVICE_BEPS_TOKEN to a token"
        )
    if not response.ok:
        raise BrokerError(f"The BEPS token endpoint answered HTTP {response.status}")
    return parse_token(response.text(), clock)


def parse_token(text: str, clock: Clock) -> BepsToken:
    """Read a token answer: a JWT as text, a JSON string, or a JSON object naming it; raise ``BrokerError``."""
    stripped = text.strip()
    payload: Any = stripped
    if stripped.startswith(("{", '"', "[")):
        try:
            payload = json.loads(stripped)
        except ValueError:
            raise BrokerError("The BEPS token endpoint answered with broken JSON") from None
    if isinstance(payload, str):
        value = payload.strip()
        if not value or any(c.isspace() for c in value) or len(value) > 16_384:
            raise BrokerError("The BEPS token endpoint answered with text that is not a token")
        return _with_lifetime(value, {}, clock)
    container = _token_container(payload)
    if container is None:
        keys = sorted(payload) if isinstance(payload, dict) else []
        raise BrokerError(
            "The BEPS token endpoint answered in a shape ftdesk does not know (keys: "
            f"{', '.join(map(str, keys)) or 'none'}); set FTSERVICE_BEPS_TOKEN to use BEPS meanwhile"
        )
    value, fields = container
    return _with_lifetime(value, fields, clock)


def _token_container(payload: Any) -> tuple[str, dict[str, Any]] | None:
    """Find the token in an object or one level down (``data``, ``response``...); return it and its siblings."""
    if not isinstance(payload, dict):
        return None
    lowered = {str(key).lower(): value for key, value in payload.items()}
    for key in TOKEN_KEYS:
        value = lowered.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip(), lowered
    for value in payload.values():
        if isinstance(value, dict):
            found = _token_container(value)
            if found is not None:
                return found
    return None


def _with_lifetime(value: str, fields: dict[str, Any], clock: Clock) -> BepsToken:
    now_mono = clock.monotonic()
    now_epoch = clock.now().timestamp()
    for key in EXPIRES_IN_KEYS:
        seconds = _number(fields.get(key))
        if seconds is not None and seconds > 0:
            return BepsToken(value, now_mono + seconds, "expiresIn")
    for key in EXPIRES_AT_KEYS:
        epoch = _epoch(fields.get(key))
        if epoch is not None:
            return BepsToken(value, now_mono + (epoch - now_epoch), "expiresAt")
    claim = _jwt_exp(value)
    if claim is not None:
        return BepsToken(value, now_mono + (claim - now_epoch), "JWT exp")
    return BepsToken(value, None, "unknown")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return float(value.strip())
    return None


def _epoch(value: Any) -> float | None:
    """Return epoch seconds of a time given as epoch seconds or milliseconds, or as ISO 8601 text."""
    number = _number(value)
    if number is not None and number > 0:
        return number / 1000 if number > 1e11 else number  # 1e11 s is the year 5138: that is ms
    if isinstance(value, str) and value.strip():
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(value.strip())
            if when.tzinfo is not None:
                return when.timestamp()
    return None


def _jwt_exp(value: str) -> float | None:
    """Return the ``exp`` claim of a JWT (read, not verified: the upstream verifies it), or None."""
    if not _JWT.match(value):
        return None
    segment = value.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError):
        return None
    return _epoch(claims.get("exp")) if isinstance(claims, dict) else None
