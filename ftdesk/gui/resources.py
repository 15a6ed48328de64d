"""Find the bundled artwork: resources/ inside a PyInstaller bundle, beside the source tree, or where a wheel put it."""

from __future__ import annotations

import site
import sys
from pathlib import Path

# A file every complete resources/ folder holds; a folder without it is not the one we want.
_MARKER = Path("icons") / "ftdesk.svg"
INSTALLED_RESOURCES = Path("share") / "ftdesk"
"""Where a wheel installs resources/, relative to the environment's prefix (pyproject's data-files)."""


def _candidates() -> list[Path]:
    found: list[Path] = []
    # PyInstaller unpacks data files under sys._MEIPASS (one-folder: the _internal dir); the spec must
    # add resources/ there as ("resources", "resources").
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        found.append(Path(bundle) / "resources")
    # From a source checkout or an editable install: <repo>/ftdesk/gui/resources.py -> <repo>/resources.
    found.append(Path(__file__).resolve().parents[2] / "resources")
    # From a wheel (`pip install .`, the README's first command): pyproject's data-files put resources/ under
    # <prefix>/share/ftdesk, in the environment's prefix or, for `pip install --user`, the user base.
    found.append(Path(sys.prefix) / INSTALLED_RESOURCES)
    found.append(Path(site.getuserbase()) / INSTALLED_RESOURCES)
    return found


def resources_dir() -> Path:
    """Return the folder holding icons/ and the desktop entry; raise FileNotFoundError if absent."""
    candidates = _candidates()
    for candidate in candidates:
        if (candidate / _MARKER).is_file():
            return candidate
    searched = ", ".join(str(path) for path in candidates)
    raise FileNotFoundError(f"ftdesk's resources folder was not found (looked in {searched})")


def icon_path(name: str) -> Path:
    """Return the path of a file under resources/icons/ (e.g. ``ftdesk.svg`` or ``png/ftdesk-32.png``)."""
    path = resources_dir() / "icons" / name
    if not path.is_file():
        raise FileNotFoundError(f"icon {name!r} is missing from {path.parent}")
    return path
