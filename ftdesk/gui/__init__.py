"""The only package that imports PySide6 or qasync: tray, dialogs, status window and the bridge."""
