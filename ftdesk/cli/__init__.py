"""The ``ftdesk`` command's subcommands: the running service from a terminal, through ``ftdesk.client``.

Importing this package (or running a subcommand) never imports Qt, the server or a broker; the app itself
(``ftdesk --headless``, the tray) is imported only when no subcommand is given.
"""
