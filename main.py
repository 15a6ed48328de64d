"""Start ftdesk: ``python main.py`` (tray) or ``python main.py --headless`` (service only)."""

from __future__ import annotations

import sys

from ftdesk.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
