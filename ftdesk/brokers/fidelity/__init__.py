"""The Fidelity Trader+ upstream adapter (``FTSERVICE_BROKER=fidelity``); see the upstream reference."""
