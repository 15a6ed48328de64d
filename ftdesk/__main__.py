"""Start ftdesk with ``python -m ftdesk`` (what a login item runs from a source install)."""

from __future__ import annotations

import sys

from ftdesk.cli.entry import main

sys.exit(main())
