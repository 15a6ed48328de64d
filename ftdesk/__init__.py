"""ftdesk: your brokerage account behind a local REST, SSE and WebSocket API, managed from the tray."""

from __future__ import annotations

__version__ = "0.1.0"
