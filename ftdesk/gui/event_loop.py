"""The one event loop of the desktop app: qasync's Qt loop, running every callback as the running loop."""

from __future__ import annotations

import asyncio
from typing import Any

import qasync
from PySide6.QtCore import QTimerEvent


class _RunningLoopTimer(qasync._SimpleTimer):  # type: ignore[misc]  # qasync ships no type information
    """qasync's callback timer, running each callback with its loop set as asyncio's running loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop

    def timerEvent(self, event: QTimerEvent) -> None:
        """Run the callback of a due timer inside its loop."""
        previous = asyncio._get_running_loop()
        if previous is self._loop:
            super().timerEvent(event)
            return
        asyncio._set_running_loop(self._loop)
        try:
            super().timerEvent(event)
        finally:
            asyncio._set_running_loop(previous)


class DesktopEventLoop(qasync.QEventLoop):  # type: ignore[misc]  # qasync ships no type information
    """qasync's loop, except that its callbacks always run with it as asyncio's running loop.

    qasync runs every callback from a Qt timer, so Qt runs them whenever it processes events, also when
    the loop is not running: the last pass of ``run_until_complete`` after ``run_forever`` has cleared
    the running loop (qasync issue #121), and any ``processEvents()`` made while it is stopped (pytest-qt
    makes one between the phases of every test). A task stepped there failed on its first ``create_task``
    or ``sleep`` with "no running event loop", which is how a streaming hub's supervisor died between the
    phases of a test. qasync is pinned to 0.28.x, whose loop keeps its timer in ``_timer``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer = _RunningLoopTimer(self)
