"""What ``DesktopEventLoop`` costs per callback and per task switch, next to stock qasync and plain asyncio.

    .venv/bin/python bench/loop_callbacks.py [--callbacks 100000] [--switches 50000] [--rounds 5]

``DesktopEventLoop`` runs every callback through one more Python call that makes it the running loop
(``ftdesk/gui/event_loop.py``). Three loops run the same two workloads in this process, round-robin, so
the ratios survive a noisy machine: a chain of ``call_soon`` callbacks (each schedules the next), and a
task that yields with ``asyncio.sleep(0)``. The figures are medians of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import platform
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


async def callback_chain(count: int) -> float:
    """Return the seconds a chain of ``count`` call_soon callbacks takes."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    remaining = count

    def step() -> None:
        nonlocal remaining
        remaining -= 1
        if remaining:
            loop.call_soon(step)
        else:
            done.set_result(None)

    started = time.perf_counter()
    loop.call_soon(step)
    await done
    return time.perf_counter() - started


async def task_switches(count: int) -> float:
    """Return the seconds ``count`` task switches (``asyncio.sleep(0)``) take."""
    started = time.perf_counter()
    for _ in range(count):
        await asyncio.sleep(0)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callbacks", type=int, default=100_000)
    parser.add_argument("--switches", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import PySide6
    import qasync
    from PySide6.QtWidgets import QApplication

    from ftdesk.gui.event_loop import DesktopEventLoop

    app = QApplication.instance() or QApplication([])
    loops: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
        "asyncio (selector)": asyncio.SelectorEventLoop,
        "qasync.QEventLoop": lambda: qasync.QEventLoop(app),
        "DesktopEventLoop": lambda: DesktopEventLoop(app),
    }
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"PySide6 {PySide6.__version__}, qasync {importlib.metadata.version('qasync')}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    per_callback: dict[str, list[float]] = {name: [] for name in loops}
    per_switch: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, factory in loops.items():
            with asyncio.Runner(loop_factory=factory) as runner:
                per_callback[name].append(runner.run(callback_chain(args.callbacks)) / args.callbacks)
                per_switch[name].append(runner.run(task_switches(args.switches)) / args.switches)
    for name in loops:
        print(
            f"  {name:<19} callback {statistics.median(per_callback[name]) * 1e6:6.2f} us   "
            f"task switch {statistics.median(per_switch[name]) * 1e6:6.2f} us"
        )
    stock, ours = (
        statistics.median(per_callback["qasync.QEventLoop"]),
        statistics.median(per_callback["DesktopEventLoop"]),
    )
    switch_stock = statistics.median(per_switch["qasync.QEventLoop"])
    switch_ours = statistics.median(per_switch["DesktopEventLoop"])
    print(
        f"  ratio DesktopEventLoop / qasync: callback {ours / stock:.2f}, task switch {switch_ours / switch_stock:.2f}"
    )


if __name__ == "__main__":
    main()
