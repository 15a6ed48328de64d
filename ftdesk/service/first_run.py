"""Whether this is ftdesk's very first start, and the durable mark that the welcome window was shown.

A first start is one whose data dir holds none of: the settings file (the trader saved a setting), the
order journal (a tray or headless run has served from here before: an install that predates the
welcome, or a server set up by the environment) and the welcome mark. Settings fixed only by FTSERVICE_*
variables leave no file behind, so the mark is what keeps the welcome from coming back on every start of
such a setup. The check runs before the service starts, because starting creates the journal.

A headless run has no window to welcome with: when it is the first start it leaves a "welcome pending" mark,
so the first tray start after it still shows the welcome (the journal it created does not count as an earlier
install).
"""

from __future__ import annotations

from pathlib import Path

from ftdesk.config import SETTINGS_FILE_NAME
from ftdesk.service.keys import write_private_file
from ftdesk.service.orders.journal import JOURNAL_FILE_NAME

WELCOME_MARK_NAME = "welcome-shown"
WELCOME_PENDING_NAME = "welcome-pending"
WELCOME_PENDING_TEXT = (
    "ftdesk's first start here was headless: the first start of the tray shows the welcome window, then deletes\n"
    "this file.\n"
)
WELCOME_MARK_TEXT = (
    "ftdesk showed its welcome window for this data dir. Delete this file to see it again at the next start,\n"
    "or open it any time with Getting started... in the tray menu or the status window.\n"
)


def welcome_mark(data_dir: Path) -> Path:
    """Return where the 'welcome shown' mark of a data dir lives."""
    return data_dir / WELCOME_MARK_NAME


def is_first_start(data_dir: Path) -> bool:
    """Say whether the tray starts here for the first time (see the module docstring); call before serving."""
    if welcome_mark(data_dir).exists():
        return False
    if (data_dir / WELCOME_PENDING_NAME).exists():
        return True
    traces = (SETTINGS_FILE_NAME, JOURNAL_FILE_NAME)
    return not any((data_dir / name).exists() for name in traces)


def note_headless_start(data_dir: Path) -> None:
    """Leave the welcome pending for the tray when a headless run is the first start here; call before it serves."""
    if is_first_start(data_dir):
        write_private_file(data_dir / WELCOME_PENDING_NAME, WELCOME_PENDING_TEXT)


def record_welcome_shown(data_dir: Path) -> None:
    """Write the welcome mark (mode 0600, atomically) unless it is there already; the welcome is no longer pending."""
    mark = welcome_mark(data_dir)
    if not mark.exists():
        write_private_file(mark, WELCOME_MARK_TEXT)
    (data_dir / WELCOME_PENDING_NAME).unlink(missing_ok=True)
