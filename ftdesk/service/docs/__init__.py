"""The served descriptions: OpenAPI, AsyncAPI and the /docs pages, generated from the route table."""
