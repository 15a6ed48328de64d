"""The data dir's privacy: the dir and everything in it readable by the user alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path

DATA_DIR_MODE = 0o700
"""The data dir and its folders, on POSIX: the user alone may list or enter them."""
DATA_FILE_MODE = 0o600
"""Every file in the data dir, on POSIX: the user alone may read it (orders, credentials, logs, settings)."""


def secure_data_dir(data_dir: Path) -> list[str]:
    """Create the data dir 0700 and take group and other access off everything in it; return what changed.

    Files get 0600 and folders 0700 (POSIX only: elsewhere the per-user profile folder keeps other users
    out). Installs made before this existed had the umask's 0644/0755. The names returned are relative to
    the data dir ("." for the dir itself). Symbolic links are not followed out of the data dir.
    """
    if os.name != "posix":
        data_dir.mkdir(parents=True, exist_ok=True)
        return []
    data_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    tightened: list[str] = []

    def tighten(path: Path, wanted: int) -> None:
        try:
            status = path.lstat()
            if stat.S_ISLNK(status.st_mode) or not status.st_mode & 0o077:
                return
            os.chmod(path, wanted)
        except OSError:  # gone meanwhile, or not ours: nothing this process could do about it
            return
        tightened.append(path.relative_to(data_dir).as_posix())

    tighten(data_dir, DATA_DIR_MODE)
    for root, folders, files in os.walk(data_dir):
        for name in folders:
            tighten(Path(root, name), DATA_DIR_MODE)
        for name in files:
            tighten(Path(root, name), DATA_FILE_MODE)
    return tightened


def tightened_message(data_dir: Path, tightened: list[str], *, shown: int = 8) -> str:
    """Return the one log line saying which data-dir entries ``secure_data_dir`` made private."""
    names = ", ".join(tightened[:shown]) + (f" and {len(tightened) - shown} more" if len(tightened) > shown else "")
    return (
        f"Data dir {data_dir}: made {len(tightened)} entries readable by this user only "
        f"(files 0600, folders 0700): {names}"
    )
