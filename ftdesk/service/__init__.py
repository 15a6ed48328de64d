"""The aiohttp service: middleware, routes, OpenAPI, session, credentials, live gate, order journal."""
