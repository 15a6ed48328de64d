"""Session records: login input, session state and what a broker reports about a login."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field, SecretStr

from ftdesk.domain.base import Record


class SessionState(StrEnum):
    """State of the brokerage session as the service reports it."""

    LOGGED_OUT = "logged_out"
    LOGGED_IN = "logged_in"
    EXPIRED = "expired"


class Credentials(Record):
    """What a login needs; secrets are SecretStr so they never print."""

    username: str = Field(min_length=1)
    password: SecretStr
    totp_code: str | None = Field(default=None, description="A current 6-digit code from the authenticator app.")
    totp_secret: SecretStr | None = Field(
        default=None, description="The base32 TOTP secret; the code is computed from it."
    )


class BrokerSession(Record):
    """What a broker reports after a successful login."""

    username: str
    logged_in_at: datetime
    expires_at: datetime | None = Field(
        default=None, description="When the upstream session lapses without keep-alive, if known."
    )
    member_id: str | None = Field(default=None, description="Upstream member identifier, if the broker has one.")
