"""The desktop loop runs every callback as asyncio's running loop, even when Qt runs it outside ``run_forever``."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtWidgets import QApplication

from ftdesk.gui.event_loop import DesktopEventLoop


async def _follow_up() -> str:
    await asyncio.sleep(0)
    return "done"


async def _woken_then_spawns(event: asyncio.Event) -> str:
    await event.wait()
    # Creating a task needs a running loop: the step after the wake-up must run inside one.
    return await asyncio.create_task(_follow_up())


@pytest.fixture
def loop(qapp: QApplication):
    made = DesktopEventLoop(qapp)
    yield made
    made.close()


def test_a_task_woken_as_a_run_ends_can_still_create_tasks(loop: DesktopEventLoop) -> None:
    async def first_run() -> asyncio.Task[str]:
        event = asyncio.Event()
        task = asyncio.create_task(_woken_then_spawns(event))
        await asyncio.sleep(0)  # the task now waits on the event
        # The wake-up comes from a callback that runs next to this run's end: the task's next step is
        # scheduled after the loop's stop, in qasync's last pass of Qt events.
        asyncio.get_running_loop().call_soon(event.set)
        return task

    task = loop.run_until_complete(first_run())
    assert loop.run_until_complete(task) == "done"


def test_a_callback_run_by_a_process_events_call_outside_the_loop_sees_its_loop(
    loop: DesktopEventLoop, qapp: QApplication
) -> None:
    seen: list[asyncio.AbstractEventLoop] = []
    loop.call_soon(lambda: seen.append(asyncio.get_running_loop()))
    qapp.processEvents()  # as pytest-qt does between the phases of a test, with the loop stopped
    assert seen == [loop]
    assert asyncio._get_running_loop() is None, "the running loop is restored afterwards"


def test_a_delayed_callback_run_outside_the_loop_sees_its_loop_too(loop: DesktopEventLoop, qapp: QApplication) -> None:
    seen: list[asyncio.AbstractEventLoop] = []
    loop.call_at(loop.time(), lambda: seen.append(asyncio.get_running_loop()))
    loop.call_later(0, lambda: seen.append(asyncio.get_running_loop()))
    qapp.processEvents()
    assert seen == [loop, loop]


def test_in_debug_mode_a_coroutine_function_is_refused_as_a_callback(loop: DesktopEventLoop) -> None:
    loop.set_debug(True)
    with pytest.raises(TypeError, match="coroutines cannot be used"):
        loop.call_soon(_follow_up)
