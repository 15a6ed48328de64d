"""Canary for the PySide6 6.12.0 + CPython 3.11 crash: killTimer must not leak None refs.

qasync calls killTimer for every loop callback; on an affected pair each call drops one reference to
None until the interpreter aborts with `none_dealloc` after ~16,000 callbacks. pyproject pins PySide6 on
3.11 to avoid it; this test fails if an install ever gets the bad pair again.
"""

from __future__ import annotations

import sys

import pytest

QtCore = pytest.importorskip("PySide6.QtCore")


def test_starting_and_killing_timers_keeps_the_refcount_of_none() -> None:
    app = QtCore.QCoreApplication.instance() or QtCore.QCoreApplication([])
    holder = QtCore.QObject()
    before = sys.getrefcount(None)
    for _ in range(1000):
        timer_id = holder.startTimer(1000)
        holder.killTimer(timer_id)
    after = sys.getrefcount(None)
    # Immortal None (3.12+) keeps a constant count; on 3.11 normal churn moves it by a handful, the bug by ~1000.
    assert before - after < 500, f"refcount of None fell by {before - after}: PySide6 {QtCore.__version__} leaks"
    del app
