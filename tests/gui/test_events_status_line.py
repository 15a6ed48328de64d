"""The status line says whether account events are live, and why not when they should be."""

from __future__ import annotations

from dataclasses import replace

from ftdesk.domain.session import SessionState
from ftdesk.gui.bridge import AppStatus
from ftdesk.gui.status_text import WHY_NOT_LIMIT, status_lines
from ftdesk.streaming.models import HubState

BASE = AppStatus(
    running=True,
    session=SessionState.LOGGED_IN,
    username="t***r",
    broker="fidelity",
    live=False,
    api_url="http://127.0.0.1:8787/api/v1",
    docs_url="http://127.0.0.1:8787/docs",
    quotes=HubState.CONNECTED,
    events=HubState.CONNECTED,
    clients={},
    last_error=None,
    reauth_count=0,
    auto_reauth=False,
    credentials_stored=False,
)


def test_connected_account_events_read_live() -> None:
    assert status_lines(BASE).streaming == "Streaming: market data connected, account events live"


def test_account_events_down_say_why_and_what_stands_in() -> None:
    why = (
        "Could not open the account-event connection: BrokerError: BEPS refused the connection (HTTP 503); reconnecting"
    )
    status = replace(BASE, events=HubState.RECONNECTING, events_why_not=why)

    line = status_lines(status).streaming

    assert line.startswith("Streaming: market data connected, account events not live: Could not open")
    assert len(line) < len("Streaming: market data connected, account events not live: ") + WHY_NOT_LIMIT + 1


def test_before_login_the_line_just_says_it_waits() -> None:
    status = replace(
        BASE,
        session=SessionState.LOGGED_OUT,
        quotes=HubState.WAITING_FOR_SESSION,
        events=HubState.WAITING_FOR_SESSION,
        events_why_not="No brokerage session: account events start after login",
    )
    assert status_lines(status).streaming == (
        "Streaming: market data waiting for session, account events waiting for session"
    )


def test_paper_on_fidelitys_market_has_its_own_look_and_says_no_real_order_is_possible() -> None:
    from ftdesk.gui.icons import TrayLook
    from ftdesk.gui.status_text import tooltip, tray_look

    paper = replace(BASE, broker="paper", live=True)
    on_fidelity = replace(paper, paper_market="fidelity")
    assert (tray_look(paper), tray_look(on_fidelity)) == (TrayLook.PAPER, TrayLook.PAPER_FIDELITY)
    assert tooltip(on_fidelity).splitlines()[:2] == [
        "ftdesk: paper on Fidelity's market, LIVE, logged in as t***r",
        "Paper money on Fidelity's quotes: no real order is possible",
    ]
    assert status_lines(on_fidelity).broker == "Broker: paper on Fidelity's market"
    assert "no real order" not in tooltip(paper)


def test_the_welcome_window_says_paper_on_fidelitys_market_allows_no_real_order() -> None:
    from ftdesk.gui.welcome import mode_sentence

    sentence = mode_sentence(replace(BASE, broker="paper", paper_market="fidelity"))
    assert "<b>Fidelity's market</b>" in sentence and "no real order possible" in sentence
    assert "Fidelity's market" not in mode_sentence(replace(BASE, broker="paper"))
