"""The live-trading question: Cancel is the default and the safe answer; only the named button enables."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from ftdesk.gui.live_confirm import LiveTradingConfirmDialog
from tests.gui.conftest import next_emission


def open_dialog(qtbot: QtBot, broker: str = "fidelity") -> LiveTradingConfirmDialog:
    dialog = LiveTradingConfirmDialog(broker)
    qtbot.addWidget(dialog)
    dialog.open()  # as the tray does: never exec()
    return dialog


def shown_text(dialog: LiveTradingConfirmDialog) -> str:
    return " ".join(label.text() for label in dialog.findChildren(QLabel))


async def test_the_confirm_button_enables_live_trading(qtbot: QtBot) -> None:
    dialog = open_dialog(qtbot)
    assert dialog.confirm_button.text() == "Enable live trading"
    accepted = next_emission(dialog.accepted)
    qtbot.mouseClick(dialog.confirm_button, Qt.MouseButton.LeftButton)
    await asyncio.wait_for(accepted, 5)
    assert not dialog.isVisible()


@pytest.mark.parametrize("how", ["cancel button", "escape key", "enter key"])
async def test_cancel_escape_and_enter_keep_dry_run(qtbot: QtBot, how: str) -> None:
    dialog = open_dialog(qtbot)
    outcomes: list[str] = []
    dialog.accepted.connect(lambda: outcomes.append("accepted"))
    dialog.rejected.connect(lambda: outcomes.append("rejected"))
    if how == "cancel button":
        qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    elif how == "escape key":
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    else:
        # Cancel is the default button: a reflexive Enter must not turn on real orders.
        qtbot.keyClick(dialog, Qt.Key.Key_Return)
    await asyncio.sleep(0)
    assert outcomes == ["rejected"]
    assert not dialog.isVisible()


def test_cancel_is_the_default_button(qtbot: QtBot) -> None:
    dialog = open_dialog(qtbot)
    assert dialog.cancel_button.isDefault()
    assert not dialog.confirm_button.isDefault()


def test_the_text_names_the_broker_and_says_it_trades_real_money(qtbot: QtBot) -> None:
    dialog = open_dialog(qtbot, "fidelity")
    text = shown_text(dialog)
    assert "Fidelity" in text
    assert "real money" in text
    assert "preview" in text.lower()
    assert "switch live trading off at any time" in text
    assert dialog.message.startswith("Turn on live trading with Fidelity?")


def test_the_paper_broker_is_named_and_never_claims_real_money(qtbot: QtBot) -> None:
    text = shown_text(open_dialog(qtbot, "paper"))
    assert "Paper" in text
    assert "No real money" in text
    assert "trade real money" not in text


def test_paper_on_fidelitys_market_says_no_real_order_is_possible(qtbot: QtBot) -> None:
    dialog = LiveTradingConfirmDialog("paper", paper_market="fidelity")
    qtbot.addWidget(dialog)
    dialog.open()
    text = shown_text(dialog)
    assert "Turn on live trading with Paper on Fidelity's market?" in text
    assert "No real order is possible" in text and "nothing is ever sent to Fidelity" in text
    assert "real money in your" not in text
