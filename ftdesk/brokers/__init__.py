"""Brokerages behind one protocol: ``paper`` (simulated, the default) and ``fidelity``."""
