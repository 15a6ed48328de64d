#!/usr/bin/env bash
# Take the README screenshots on a headless Linux box: Xvfb, a tray host (trayer) and a D-Bus session.
# Needs: xvfb trayer dbus libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxkbcommon-x11-0 (Debian names).
set -euo pipefail
cd "$(dirname "$0")/../.."
export QT_QPA_PLATFORM=xcb PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring
exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
    trayer --edge top --align right --widthtype request --height 24 --transparent false &
    sleep 1
    ${PYTHON:-.venv/bin/python} docs/screenshots/take_screenshots.py
'
