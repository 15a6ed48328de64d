"""The Fidelity Trader+ upstream adapter (``FTSERVICE_BROKER=fidelity``); see docs/fidelity-protocol.md."""
