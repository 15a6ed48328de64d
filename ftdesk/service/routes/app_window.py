"""The desktop app's own endpoint (an ftdesk extension): a second launch asks the running tray to show its window.

The tray app registers a ``DesktopWindow`` on the aiohttp application; a headless service has none and says
so. The handler only calls ``show``, which the tray turns into a Qt signal, so no widget is touched here.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ftdesk.service.context import DESKTOP_WINDOW, DesktopWindow
from ftdesk.service.web.routing import Call, RouteTable

__all__ = ("DESKTOP_WINDOW", "HEADLESS_REASON", "DesktopWindow", "routes")

routes = RouteTable(tag="app")

HEADLESS_REASON = "ftdesk runs headless (--headless): there is no window to show"


class WindowShown(BaseModel):
    """Whether the running app brought its window to the front."""

    shown: bool = Field(description="True when the tray app showed its status window; false when headless.")
    reason: str | None = Field(description="Why no window was shown, when none was.")


@routes.post("/app/window", summary="Show the desktop window (ftdesk extension)", response=WindowShown)
async def show_app_window(call: Call[None, None]) -> WindowShown:
    """Bring the tray app's status window to the front.

    A second launch of the tray app calls this on the running instance, then exits; it is not part of the
    service specification. A headless service answers `shown: false` with the reason.
    """
    window = call.app.get(DESKTOP_WINDOW)
    if window is None:
        return WindowShown(shown=False, reason=HEADLESS_REASON)
    window.show()
    return WindowShown(shown=True, reason=None)
