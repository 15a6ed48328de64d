"""The HTTP floor: the aiohttp app, its socket, middleware, envelope, JSON input, route table and error codes."""
