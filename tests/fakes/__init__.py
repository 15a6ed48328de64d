"""Fakes with behaviour: a manual clock, an in-memory keyring, fake upstream servers."""
