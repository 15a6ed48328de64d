"""GUI tests: one QApplication for the session and a qasync loop for every async test in this folder.

pytest-asyncio asks ``pytest_asyncio_loop_factories`` for the loop of each async test under tests/gui/, so
a coroutine test, the widgets it drives (through qtbot) and any aiohttp client share one qasync loop, as
in the app. Inside such a test, wait on Qt signals with a future and ``asyncio.wait_for``, never with
``qtbot.wait*`` or a modal ``exec()``: the nested Qt loop they start loses asyncio tasks, and the test's
teardown then hangs forever.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator, Mapping

import pytest
from PySide6.QtWidgets import QApplication

from ftdesk.gui.event_loop import DesktopEventLoop


def _qasync_loop() -> asyncio.AbstractEventLoop:
    app = QApplication.instance()
    # The autouse `_gui_application` fixture below creates it first; a plain QCoreApplication cannot host widgets.
    assert isinstance(app, QApplication), f"GUI tests need a QApplication, found {app!r}"
    app.setQuitOnLastWindowClosed(False)
    return DesktopEventLoop(app)


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Run every async GUI test on a qasync loop, as the app does."""
    return {"qasync": _qasync_loop}


@pytest.fixture(scope="session", autouse=True)
def _gui_application(qapp: QApplication) -> QApplication:
    """Create the QApplication before any test here can create a bare QCoreApplication (the canary would)."""
    return qapp


def next_emission(signal: object) -> asyncio.Future[tuple[object, ...]]:
    """Connect to a Qt signal now; the future gets the arguments of its next emission.

    Call it before the action that emits (a click emits synchronously), then
    ``await asyncio.wait_for(future, 5)``.
    """
    future: asyncio.Future[tuple[object, ...]] = asyncio.get_running_loop().create_future()

    def fire(*args: object) -> None:
        signal.disconnect(fire)  # type: ignore[attr-defined]
        if not future.done():
            future.set_result(args)

    signal.connect(fire)  # type: ignore[attr-defined]
    return future


# --- the desktop app on a real service (tray, status window, bridge tests) --------------------------------


@pytest.fixture
async def make_desktop(tmp_path, memory_keyring):
    """Build and start the desktop app on a real paper service; everything built is stopped afterwards."""
    from tests.gui.desktop_rig import DesktopRig

    rig = DesktopRig(tmp_path, memory_keyring)
    yield rig.build
    await rig.close()


@pytest.fixture
async def fidelity_upstream():
    """Run the fake Fidelity upstream (login, accounts, the MDDS quote socket and BEPS) on loopback ports."""
    from tests.fakes.appsync_server import FakeAppSync
    from tests.fakes.fidelity_server import FakeFidelity
    from tests.fakes.mdds_server import FakeMdds

    mdds = FakeMdds()
    appsync = FakeAppSync(token="no-static-token")  # BEPS configures itself at login (token endpoint)
    fidelity = FakeFidelity(mdds=mdds, appsync=appsync)
    await mdds.start()
    await appsync.start()
    await fidelity.start()
    yield fidelity
    await fidelity.close()
    await appsync.close()
    await mdds.close()


@pytest.fixture
def opened_urls():
    """Record the URLs the app asks the desktop to open (browser, file manager) instead of opening them."""
    from tests.gui.desktop_rig import UrlRecorder

    recorder = UrlRecorder()
    recorder.install()
    yield recorder.urls
    recorder.uninstall()


@pytest.fixture(autouse=True)
def _qt_garbage_on_the_main_thread():
    """Collect garbage only on the main thread while a GUI test runs.

    An automatic collection can start in any thread that allocates, such as the qasync executor's workers
    that run ``asyncio.to_thread``. If it frees a QObject left from an earlier test (a qasync loop's timer
    object, a bridge's QTimer), Qt cannot unregister that object's timers from the wrong thread. A timer
    then fires on freed memory and the process segfaults. So automatic collection is off during each test;
    between tests, when only the main thread runs, it is on again and collects the leftovers.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Collect a GUI test's leftovers on the main thread as soon as its fixtures are finalized.

    Left to an automatic collection, they would go whenever one starts: during the next test, maybe in one of
    its worker threads (a test outside tests/gui runs with automatic collection on), with the segfault the
    fixture above describes. The desktop app's objects hold each other in cycles (subscriptions, bound-method
    connections), so only a collection frees them.
    """
    yield
    gc.collect()
