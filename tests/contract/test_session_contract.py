"""The session group's contract (``broker.session``): login, logout and keep-alive on every broker."""

from __future__ import annotations

import pytest

from ftdesk.brokers.capabilities import AccountsApi, SessionApi
from ftdesk.domain import errors as e
from ftdesk.domain.session import Credentials


async def test_logged_out_calls_need_a_session_and_login_restores_them(
    session: SessionApi, accounts: AccountsApi, credentials: Credentials
) -> None:
    await session.logout()
    with pytest.raises(e.AuthRequired):
        await accounts.get_accounts()
    with pytest.raises(e.AuthRequired):
        await session.keep_alive()
    await session.logout()  # idempotent
    logged_in = await session.login(credentials)
    assert logged_in.username == credentials.username
    assert await accounts.get_accounts()
    await session.keep_alive()
