"""The aiohttp service: the front door, routes, OpenAPI, session, credentials, live gate, order journal."""
