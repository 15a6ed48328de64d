"""``ftdesk mcp``: the Model Context Protocol server through which an AI assistant reads and trades, with approval.

It is a client of the running service (``ftdesk.client``); its places carry ``X-Ftdesk-Client: mcp``, so the
service holds each one for the trader's approval in the tray. Never imports Qt, the server or a broker.
"""
