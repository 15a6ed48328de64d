"""The HTTP floor: the aiohttp app, its socket, the front door, envelope, JSON input, route table and error codes."""
