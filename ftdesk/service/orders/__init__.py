"""The order path inside the service: request bodies, the desk's rules, bound previews and the journal."""
