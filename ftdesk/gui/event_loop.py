"""The one event loop of the desktop app: qasync's Qt loop, running every callback as the running loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import Context
from typing import Any

import qasync

# asyncio's hooks for event loop implementations (in asyncio.__all__ though underscored: the only way to set the
# running loop for a callback qasync runs outside it), bound once: they run on every callback.
_get_running_loop = asyncio._get_running_loop
_set_running_loop = asyncio._set_running_loop


def _run_as_running(loop: asyncio.AbstractEventLoop, callback: Callable[..., object], *args: Any) -> None:
    """Run a callback with ``loop`` as asyncio's running loop, as it is whenever ``run_forever`` runs."""
    previous = _get_running_loop()
    if previous is loop:
        callback(*args)
        return
    _set_running_loop(loop)
    try:
        callback(*args)
    finally:
        _set_running_loop(previous)


def _check_callback(callback: object) -> None:
    # qasync checks what it is given, which is now _run_as_running; asyncio's own loops check the
    # callback in debug mode only, and so does this one.
    if asyncio.iscoroutine(callback) or asyncio.iscoroutinefunction(callback):
        raise TypeError("coroutines cannot be used as loop callbacks")
    if not callable(callback):
        raise TypeError(f"a callback must be callable, not {type(callback).__name__}")


class DesktopEventLoop(qasync.QEventLoop):  # type: ignore[misc]  # qasync ships no type information
    """qasync's loop, except that its callbacks always run with it as asyncio's running loop.

    qasync runs every callback from a Qt timer, so Qt runs them whenever it processes events, also when
    the loop is not running: the last pass of ``run_until_complete`` after ``run_forever`` has cleared
    the running loop, and any ``processEvents()`` made while it is stopped (pytest-qt makes one between
    the phases of every test). A task stepped there failed on its first ``create_task`` or ``sleep`` with
    "no running event loop", which is how a streaming hub's supervisor died between the phases of a test.
    qasync 0.28.0, the newest release, still does this.

    The fix uses only public API: the loop's own ``call_soon``/``call_later``/``call_at`` (every callback
    qasync schedules, from tasks, futures, socket notifiers and ``call_soon_threadsafe``, passes through
    them) schedule the callback behind ``_run_as_running``, which makes this loop the running one for the
    callback when Qt runs it outside ``run_forever``. ``asyncio._get_running_loop`` and
    ``_set_running_loop`` are in ``asyncio.__all__``, their docstrings say "intended to be used by event
    loops", and qasync itself uses them. An earlier version subclassed qasync's private ``_SimpleTimer`` instead.
    """

    # qasync's own scheduling, called directly: its call_soon and call_at go through self.call_later,
    # which would wrap a callback twice, and a super() lookup on every callback costs time.
    _schedule = qasync.QEventLoop.call_later

    def call_soon(self, callback: Callable[..., object], *args: Any, context: Context | None = None) -> Any:
        """Schedule a callback for the next pass of the loop."""
        if self.get_debug():
            _check_callback(callback)
        return self._schedule(0, _run_as_running, self, callback, *args, context=context)

    def call_later(
        self, delay: float, callback: Callable[..., object], *args: Any, context: Context | None = None
    ) -> Any:
        """Schedule a callback after ``delay`` seconds."""
        if self.get_debug():
            _check_callback(callback)
        return self._schedule(delay, _run_as_running, self, callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., object], *args: Any, context: Context | None = None) -> Any:
        """Schedule a callback at the loop time ``when``."""
        if self.get_debug():
            _check_callback(callback)
        return self._schedule(when - self.time(), _run_as_running, self, callback, *args, context=context)
