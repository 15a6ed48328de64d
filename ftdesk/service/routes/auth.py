"""Auth and session: login, logout, status and the stored credentials.

These endpoints need the API key like every other: the key is what keeps other local programs from
logging your brokerage account in or out.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field, SecretStr

from ftdesk.domain import errors as e
from ftdesk.domain.session import Credentials
from ftdesk.service.routes.common import context
from ftdesk.service.session import SessionStatus
from ftdesk.service.web.routing import BodyModel, Call, RouteTable

routes = RouteTable(tag="auth")


class LoginBody(BodyModel):
    """Brokerage credentials, with an optional second factor."""

    username: str = Field(min_length=1, max_length=128)
    password: SecretStr = Field(min_length=1, max_length=256)
    totp_code: str | None = Field(
        default=None, pattern=r"^\d{6,8}$", description="The current code from the authenticator app."
    )
    totp_secret: SecretStr | None = Field(
        default=None, description="The base32 TOTP secret; ftdesk computes the code (and can re-authenticate alone)."
    )
    remember: bool = Field(
        default=False, description="Also store these credentials, encrypted, for auto re-auth and start-up login."
    )

    def credentials(self) -> Credentials:
        """Return the domain credentials."""
        return Credentials(
            username=self.username, password=self.password, totp_code=self.totp_code, totp_secret=self.totp_secret
        )


class CredentialsBody(BodyModel):
    """Credentials to store, encrypted, for auto re-auth and login at start-up."""

    username: str = Field(min_length=1, max_length=128)
    password: SecretStr = Field(min_length=1, max_length=256)
    totp_secret: SecretStr | None = Field(default=None, description="Base32 TOTP secret, for 2FA accounts.")


class CredentialsState(BaseModel):
    """Whether credentials are stored (the credentials themselves are never returned)."""

    credentials_stored: bool
    removed: bool | None = Field(default=None, description="On DELETE: whether there were credentials to remove.")


async def _store(call: Call[Any, Any], credentials: Credentials) -> None:
    ctx = context(call)
    await asyncio.to_thread(ctx.credentials.save, credentials)
    await ctx.session.refresh_credentials_flag()


@routes.post(
    "/auth/login",
    summary="Log in to the brokerage",
    body=LoginBody,
    response=SessionStatus,
    errors=(e.LoginFailed, e.TotpRequired, e.BrokerError, e.CredentialStoreUnavailable),
)
async def login(call: Call[LoginBody, None]) -> SessionStatus:
    """Log in with username and password (and `totp_code` or `totp_secret` for a 2FA account).

    Without a second factor a 2FA account answers `TOTP_REQUIRED`. A failed login leaves the session
    logged out. Concurrent logins are serialised. With `remember: true` the credentials are also stored.
    """
    ctx = context(call)
    status = await ctx.session.login(call.body.credentials())
    if call.body.remember:
        await _store(call, call.body.credentials())
        status = ctx.session.status()
    return status


@routes.post("/auth/logout", summary="Log out", response=SessionStatus)
async def logout(call: Call[None, None]) -> SessionStatus:
    """End the brokerage session (idempotent). Stored credentials stay stored."""
    return await context(call).session.logout()


@routes.get("/auth/status", summary="Session status", response=SessionStatus, operation_id="get_auth_status")
async def status(call: Call[None, None]) -> SessionStatus:
    """Report the session state, broker, masked username, times, auto re-auth and live-trading mode."""
    return context(call).session.status()


@routes.post(
    "/auth/credentials",
    summary="Store credentials, encrypted",
    body=CredentialsBody,
    response=CredentialsState,
    errors=(e.CredentialStoreUnavailable,),
)
async def store_credentials(call: Call[CredentialsBody, None]) -> CredentialsState:
    """Encrypt credentials with Fernet (FTSERVICE_ENCRYPTION_KEY, or a key kept in the OS keychain) and store them.

    They are used for auto re-auth and for FTSERVICE_LOGIN_AT_STARTUP; no endpoint ever returns them.
    """
    body = call.body
    await _store(call, Credentials(username=body.username, password=body.password, totp_secret=body.totp_secret))
    return CredentialsState(credentials_stored=True)


@routes.delete("/auth/credentials", summary="Remove stored credentials", response=CredentialsState)
async def delete_credentials(call: Call[None, None]) -> CredentialsState:
    """Delete the stored credentials (idempotent)."""
    ctx = context(call)
    removed = await asyncio.to_thread(ctx.credentials.delete)
    await ctx.session.refresh_credentials_flag()
    return CredentialsState(credentials_stored=False, removed=removed)
