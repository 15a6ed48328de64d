"""Pure domain: the spec's records, enums and the error tree (stdlib and pydantic only)."""
