"""What the trader must know about the data dir (a damaged file, a full disk, a halt not saved) is in the tray."""

from __future__ import annotations

from dataclasses import replace

from ftdesk.gui.icons import TrayLook
from ftdesk.gui.status_text import tooltip, tray_look
from tests.gui.test_events_status_line import BASE

FINE = BASE  # logged in to Fidelity, both streams connected, no problem
FULL = (
    "The disk of the data dir /home/t/.local/share/ftdesk is full (0 KiB free): previews and places are refused "
    "(STORAGE_FULL). Free some space on that disk; cancels and the kill switch still work"
)


def test_a_problem_turns_the_tray_to_its_error_look_and_is_in_the_tooltip() -> None:
    assert tray_look(FINE) is not TrayLook.ERROR and FULL not in tooltip(FINE)
    troubled = replace(FINE, problems=(FULL,))
    assert tray_look(troubled) is TrayLook.ERROR
    assert tooltip(troubled).splitlines()[-1] == FULL
