"""Login, security context, keep-alive and logout (docs/fidelity-protocol.md, Login and session).

The login is the app's multi-step handshake on ECAAP: only the password step and the session step
are checked; the session step answers 1201 when a second factor is needed, which is a TOTP code (given,
or computed from the base32 secret) sent to the TOTP factor before the session step is repeated. The
security context follows; its failures are ignored, as the app ignores them, but its member id
(MID) is kept because the BEPS subscription may need it.

Nothing here logs or echoes the password, the TOTP secret or code, or cookie values.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pyotp

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DIGITAL, ECAAP, FidelityHttp, Profile
from ftdesk.brokers.fidelity.upstream_answer import raise_for_status
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, LoginFailed, SessionExpired, TotpRequired
from ftdesk.domain.session import Credentials

log = logging.getLogger(__name__)

EXTEND_SESSION_URL = f"{DIGITAL}/ftgw/digital/portfolio/extendsession"
LOGIN_PAGE_URL = f"{DIGITAL}/prgw/digital/login/atp?exp=new&AuthRedUrl={quote(EXTEND_SESSION_URL, safe='')}"
SESSION_URL = f"{ECAAP}/user/session/login"
REMEMBER_URL = f"{ECAAP}/user/identity/remember/username"
PASSWORD_URL = f"{ECAAP}/user/factor/password/authentication"
TOTP_URL = f"{ECAAP}/user/factor/totp/authentication"
SECURITY_CONTEXT_URL = f"{DIGITAL}/ftgw/digital/pico/api/v1/context/security"

CODE_OK = 1200
CODE_SECOND_FACTOR = 1201


@dataclass(frozen=True)
class EcaapStatus:
    """The status of an ECAAP envelope."""

    code: int | None
    message: str

    @classmethod
    def parse(cls, payload: Any) -> EcaapStatus:
        """Read ``responseBaseInfo.status`` leniently."""
        status = v.obj(payload, "responseBaseInfo", "status")
        return cls(v.integer(status.get("code")), v.text_or(status.get("message")))


@dataclass(frozen=True)
class SecurityContext:
    """What the security context says about the login."""

    member_id: str | None = None
    entitlements: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] | None = None

    @property
    def real_time_quotes(self) -> bool:
        """Say whether the RTQ entitlement is on."""
        return self.entitlements.get("RTQ", "").lower() == "true"

    @classmethod
    def parse(cls, payload: Any) -> SecurityContext:
        """Read entitlements and the MID leniently."""
        if not isinstance(payload, dict):
            return cls()
        entitlements = {
            v.text_or(item.get("display")): v.text_or(item.get("value")) for item in v.items(payload, "entitlements")
        }
        member_id = None
        for item in v.items(payload, "internalSystemIds"):
            if v.text(item.get("type")) == "MID":
                member_id = v.text(item.get("ID") or item.get("id"))
        return cls(member_id=member_id, entitlements=entitlements, raw=payload)


def totp_code(credentials: Credentials, clock: Clock) -> str | None:
    """Return the code to send: the one given, or one computed from the secret at the clock's time."""
    if credentials.totp_code:
        return credentials.totp_code.strip()
    if credentials.totp_secret is not None:
        secret = credentials.totp_secret.get_secret_value().replace(" ", "").upper()
        try:
            return pyotp.TOTP(secret).at(clock.now())
        except (ValueError, TypeError):  # binascii.Error is a ValueError
            raise TotpRequired("The TOTP secret is not valid base32") from None
    return None


async def log_in(http: FidelityHttp, credentials: Credentials, clock: Clock) -> SecurityContext:
    """Run the login handshake on a fresh client; raise ``LoginFailed``/``TotpRequired``/``BrokerError``."""
    # Steps 1-4 prime cookies and the ET token; their answers are not checked (as in the app).
    await http.call("GET", LOGIN_PAGE_URL, profile=Profile.LOGIN, request_id=False, read=False)
    await http.call("DELETE", SESSION_URL, profile=Profile.LOGIN, body={}, headers={"Accept-Token-Type": "FAC"})
    await http.call("GET", REMEMBER_URL, profile=Profile.LOGIN, read=False)
    await http.call("POST", f"{REMEMBER_URL}/1", profile=Profile.LOGIN, body={})

    password = credentials.password.get_secret_value()
    answer = await _ecaap(http, "POST", PASSWORD_URL, {"username": credentials.username, "password": password})
    if answer.code != CODE_OK:
        raise LoginFailed(f"Fidelity refused the login: {answer.message or 'authentication failed'}")

    await http.call("PUT", REMEMBER_URL, profile=Profile.LOGIN, body={})
    answer = await _create_session(http)
    if answer.code == CODE_SECOND_FACTOR:
        code = totp_code(credentials, clock)
        if code is None:
            raise TotpRequired("This Fidelity account needs a second factor: send totp_code or totp_secret")
        factor = await _ecaap(http, "POST", TOTP_URL, {"securityCode": code})
        if factor.code != CODE_OK:
            raise TotpRequired(f"2FA failed: {factor.message or 'the code was not accepted'}")
        answer = await _create_session(http)
    if answer.code != CODE_OK:
        raise LoginFailed(f"Fidelity did not create a session: {answer.message or f'code {answer.code}'}")
    return await security_context(http)


async def security_context(http: FidelityHttp) -> SecurityContext:
    """Fetch the security context; any failure yields an empty one (the app ignores them too)."""
    try:
        response = await http.call("POST", SECURITY_CONTEXT_URL, body={}, read=False)
        if not response.ok:
            log.info("Fidelity security context unavailable (HTTP %s); continuing", response.status)
            return SecurityContext()
        return SecurityContext.parse(response.json())
    except (BrokerError, SessionExpired) as exc:
        log.info("Fidelity security context unavailable (%s); continuing", type(exc).__name__)
        return SecurityContext()


async def extend_session(http: FidelityHttp) -> None:
    """Extend the session; raise ``SessionExpired`` unless the upstream answers 2xx."""
    response = await http.call("GET", EXTEND_SESSION_URL, read=False)
    if not response.ok:
        raise SessionExpired(f"Fidelity did not extend the session (HTTP {response.status}): log in again")
    if "html" in response.content_type:
        raise SessionExpired("Fidelity answered the keep-alive with a web page: the session has expired")


async def log_out(http: FidelityHttp) -> None:
    """End the upstream session; the answer is not checked."""
    await http.call("DELETE", SESSION_URL, profile=Profile.LOGIN, body={}, headers={"Accept-Token-Type": "FAC"})


async def _create_session(http: FidelityHttp) -> EcaapStatus:
    return await _ecaap(http, "POST", SESSION_URL, {}, headers={"eventtype": "LOGIN", "sub_eventtype": "rt_login"})


async def _ecaap(
    http: FidelityHttp, method: str, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> EcaapStatus:
    response = await http.call(method, url, profile=Profile.LOGIN, body=body, headers=headers)
    # A refusal may come as a 4xx with the envelope: its message says more than the status.
    try:
        payload = response.json()
    except (BrokerError, SessionExpired):
        payload = None
    if isinstance(payload, dict) and "responseBaseInfo" in payload:
        return EcaapStatus.parse(payload)
    if response.status in (401, 403):
        raise LoginFailed(f"Fidelity refused the login (HTTP {response.status})")
    raise_for_status(response, "login step")
    raise BrokerError(f"Fidelity login step answered without a status (HTTP {response.status})")
