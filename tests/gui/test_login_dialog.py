"""The login dialog: inline validation, a busy state that never freezes the loop, the TOTP path, failures."""

from __future__ import annotations

import asyncio
import logging

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QCheckBox, QDialog, QLineEdit, QProgressBar, QPushButton
from pytestqt.qtbot import QtBot

from ftdesk.gui.contracts import LoginOutcome, LoginRequest, LoginResult
from ftdesk.gui.login_dialog import GENERIC_FAILURE, TOTP_EXPLANATION, LoginDialog
from tests.fakes.waiting import wait_until
from tests.gui.conftest import next_emission

PASSWORD = "correct-horse-battery-staple"


class FakeLoginService:
    """Answers each login when the test says so, like a slow upstream; an exception answer is raised."""

    def __init__(self) -> None:
        self.requests: list[LoginRequest] = []
        self.cancelled = 0
        self._pending: asyncio.Future[LoginOutcome] | None = None

    async def submit(self, request: LoginRequest) -> LoginOutcome:
        self.requests.append(request)
        self._pending = asyncio.get_running_loop().create_future()
        try:
            return await self._pending
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    @property
    def waiting(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def answer(self, outcome: LoginOutcome | Exception) -> None:
        assert self._pending is not None and not self._pending.done(), "no login is waiting for an answer"
        if isinstance(outcome, Exception):
            self._pending.set_exception(outcome)
        else:
            self._pending.set_result(outcome)


@pytest.fixture
def service() -> FakeLoginService:
    return FakeLoginService()


def make_dialog(qtbot: QtBot, service: FakeLoginService, **kwargs: object) -> LoginDialog:
    dialog = LoginDialog(service.submit, **kwargs)  # type: ignore[arg-type]
    qtbot.addWidget(dialog)
    dialog.open()
    return dialog


def field(dialog: LoginDialog, name: str) -> QLineEdit:
    widget = dialog.findChild(QLineEdit, name)
    assert widget is not None
    return widget


def button(dialog: LoginDialog, name: str) -> QPushButton:
    widget = dialog.findChild(QPushButton, name)
    assert widget is not None
    return widget


def type_credentials(qtbot: QtBot, dialog: LoginDialog, username: str = "trader", password: str = PASSWORD) -> None:
    qtbot.keyClicks(field(dialog, "username"), username)
    qtbot.keyClicks(field(dialog, "password"), password)


async def test_an_empty_username_or_password_is_reported_inline_without_submitting(
    qtbot: QtBot, service: FakeLoginService
) -> None:
    dialog = make_dialog(qtbot, service)
    button(dialog, "login_button").click()
    assert dialog.error_text == "Enter your username."
    assert dialog.focusWidget() is field(dialog, "username")

    qtbot.keyClicks(field(dialog, "username"), "trader")
    button(dialog, "login_button").click()
    assert dialog.error_text == "Enter your password."
    assert dialog.focusWidget() is field(dialog, "password")
    assert not dialog.busy and dialog.isVisible()  # a login in flight shows busy from the click on

    # With both filled in, the login goes out, and it is the first request the service ever gets.
    qtbot.keyClicks(field(dialog, "password"), PASSWORD)
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    assert [request.username for request in service.requests] == ["trader"]


async def test_a_shown_totp_field_needs_six_digits(qtbot: QtBot, service: FakeLoginService) -> None:
    dialog = make_dialog(qtbot, service, username="trader", totp_needed=True)
    assert dialog.totp_visible
    assert dialog.totp_note == TOTP_EXPLANATION
    qtbot.keyClicks(field(dialog, "password"), PASSWORD)
    qtbot.keyClicks(field(dialog, "totp"), "12ab3")  # letters never get in
    assert field(dialog, "totp").text() == "123"
    button(dialog, "login_button").click()
    assert dialog.error_text == "Enter the 6-digit code from your authenticator app."
    assert service.requests == []


async def test_a_login_in_progress_shows_busy_and_the_loop_keeps_running(
    qtbot: QtBot, service: FakeLoginService
) -> None:
    dialog = make_dialog(qtbot, service)
    type_credentials(qtbot, dialog)
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)

    assert dialog.busy
    for name in ("username", "password"):
        assert not field(dialog, name).isEnabled()
    assert not button(dialog, "login_button").isEnabled()
    assert button(dialog, "cancel_button").isEnabled()
    assert dialog.findChild(QCheckBox, "remember").isEnabled() is False  # type: ignore[union-attr]
    progress = dialog.findChild(QProgressBar)
    assert progress is not None and progress.isVisible()

    # Qt timers still fire while the login is pending: the UI is not frozen.
    ticks: list[int] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(5)
    await wait_until(lambda: len(ticks) >= 3)
    timer.stop()
    assert dialog.busy and dialog.isVisible()

    finished = next_emission(dialog.logged_in)
    service.answer(LoginOutcome(LoginResult.OK))
    await asyncio.wait_for(finished, 5)
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert not dialog.isVisible()
    assert not dialog.busy and not progress.isVisible()


async def test_remember_and_the_typed_values_reach_the_service(qtbot: QtBot, service: FakeLoginService) -> None:
    dialog = make_dialog(qtbot, service)
    type_credentials(qtbot, dialog, username="  trader  ")
    qtbot.mouseClick(dialog.findChild(QCheckBox, "remember"), Qt.MouseButton.LeftButton)
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    assert service.requests == [LoginRequest(username="trader", password=PASSWORD, totp_code=None, remember=True)]
    service.answer(LoginOutcome(LoginResult.OK))
    await wait_until(lambda: not dialog.isVisible())


async def test_an_account_with_two_step_verification_asks_for_the_code_and_logs_in(
    qtbot: QtBot, service: FakeLoginService
) -> None:
    dialog = make_dialog(qtbot, service)
    assert not dialog.totp_visible
    type_credentials(qtbot, dialog)
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    service.answer(LoginOutcome(LoginResult.TOTP_REQUIRED, "Enter the code from your authenticator app."))
    await wait_until(lambda: not dialog.busy)

    assert dialog.totp_visible
    assert dialog.totp_note == "Enter the code from your authenticator app."
    assert dialog.focusWidget() is field(dialog, "totp")
    assert dialog.isVisible() and dialog.error_text == ""
    assert field(dialog, "password").text() == PASSWORD  # kept for the second try

    qtbot.keyClicks(field(dialog, "totp"), "246810")
    logged_in = next_emission(dialog.logged_in)
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    assert service.requests[-1].totp_code == "246810"
    assert service.requests[-1].password == PASSWORD
    service.answer(LoginOutcome(LoginResult.OK))
    await asyncio.wait_for(logged_in, 5)
    assert dialog.result() == QDialog.DialogCode.Accepted


async def test_a_failed_login_shows_why_clears_the_password_and_allows_another_try(
    qtbot: QtBot, service: FakeLoginService
) -> None:
    dialog = make_dialog(qtbot, service)
    type_credentials(qtbot, dialog)
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    message = (
        "Username or password is not right. After five failures in a row the account locks for 15 minutes; "
        "the broker's website can unlock it sooner, and support can reset the password."
    )
    service.answer(LoginOutcome(LoginResult.FAILED, message))
    await wait_until(lambda: not dialog.busy)

    assert dialog.error_text == message
    # The message wraps over lines; the dialog grows instead of squeezing the fields.
    await wait_until(lambda: field(dialog, "password").height() >= field(dialog, "password").sizeHint().height())
    assert field(dialog, "password").text() == ""
    assert dialog.focusWidget() is field(dialog, "password")
    assert field(dialog, "username").text() == "trader"
    assert field(dialog, "password").isEnabled() and button(dialog, "login_button").isEnabled()
    assert dialog.isVisible()

    qtbot.keyClicks(field(dialog, "password"), "second-try-password")
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    assert dialog.error_text == ""  # the old message goes as the new attempt starts
    assert [request.password for request in service.requests] == [PASSWORD, "second-try-password"]
    service.answer(LoginOutcome(LoginResult.OK))
    await wait_until(lambda: not dialog.isVisible())


async def test_an_exception_is_a_generic_inline_failure_and_the_log_never_holds_the_password(
    qtbot: QtBot, service: FakeLoginService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dialog = make_dialog(qtbot, service, totp_needed=True)
    type_credentials(qtbot, dialog)
    qtbot.keyClicks(field(dialog, "totp"), "135790")
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)
    assert PASSWORD not in repr(service.requests[0])
    # A careless upstream error that echoes what it was sent.
    service.answer(RuntimeError(f"upstream choked on password={PASSWORD} code=135790"))
    await wait_until(lambda: not dialog.busy)

    assert dialog.error_text == GENERIC_FAILURE
    assert PASSWORD not in dialog.error_text
    assert dialog.isVisible() and field(dialog, "password").text() == ""
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "RuntimeError" in logged and "upstream choked" in logged
    assert PASSWORD not in logged and "135790" not in logged
    assert PASSWORD not in caplog.text


@pytest.mark.parametrize("how", ["cancel button", "escape key"])
async def test_cancel_closes_the_dialog_even_while_logging_in(
    qtbot: QtBot, service: FakeLoginService, how: str
) -> None:
    dialog = make_dialog(qtbot, service, username="trader")
    qtbot.keyClicks(field(dialog, "password"), PASSWORD)
    logged_in: list[bool] = []
    dialog.logged_in.connect(lambda: logged_in.append(True))
    button(dialog, "login_button").click()
    await wait_until(lambda: service.waiting)

    if how == "cancel button":
        qtbot.mouseClick(button(dialog, "cancel_button"), Qt.MouseButton.LeftButton)
    else:
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert not dialog.isVisible()
    assert dialog.result() == QDialog.DialogCode.Rejected
    await wait_until(lambda: service.cancelled == 1)  # the pending login was abandoned, not left running
    assert not dialog.busy and logged_in == []


def test_paper_on_fidelitys_market_asks_for_the_fidelity_login(qtbot: QtBot, service: FakeLoginService) -> None:
    from PySide6.QtWidgets import QLabel

    dialog = make_dialog(qtbot, service, broker="paper-fidelity")
    heading = dialog.findChild(QLabel, "heading")
    assert heading is not None
    assert heading.text() == "Log in to Fidelity (paper trading on its market: no real order)"
