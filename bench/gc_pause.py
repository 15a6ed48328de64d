"""The event-loop stop of a full garbage collection in the running service, with and without frozen imports.

    .venv/bin/python bench/gc_pause.py [--runs 5]

Starts the real ``ServiceRuntime`` (paper broker, every route) on a plain asyncio loop and times
``gc.collect()``, which is what a full collection costs the loop whenever the collector decides to run
one. "Frozen" first calls ``ftdesk.app.freeze_imported_objects`` after the imports, as ``main()`` does
before it builds the service. Each variant runs in its own process, alternating.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import asyncio, gc, os, sys, time
from ftdesk.app import ServiceRuntime, freeze_imported_objects
from ftdesk.config import load_settings
if sys.argv[1] == "frozen":
    freeze_imported_objects()

async def main() -> None:
    runtime = ServiceRuntime(load_settings())
    await runtime.start()
    gc.collect()
    started = time.perf_counter()
    gc.collect()
    took = time.perf_counter() - started
    print(f"{took * 1000:.2f} {len(gc.get_objects())} {gc.get_freeze_count()}")
    await runtime.stop()

asyncio.run(main())
"""


def main() -> int:
    """Run both variants and print the median pause of each."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, int, int]]] = {"as before": [], "frozen": []}
    for _ in range(args.runs):
        for variant in results:
            with tempfile.TemporaryDirectory(prefix="ftdesk-gc-") as data_dir:
                env = {
                    **os.environ,
                    "FTSERVICE_DATA_DIR": data_dir,
                    "FTSERVICE_PORT": "0",
                    "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                }
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, variant], env=env, capture_output=True, text=True, check=True
                ).stdout.split()
            results[variant].append((float(out[0]), int(out[1]), int(out[2])))
    for variant, runs in results.items():
        pauses = [pause for pause, _, _ in runs]
        _, scanned, frozen = runs[-1]
        print(
            f"{variant:>10}: full collection {statistics.median(pauses):.1f} ms (median of {args.runs}; "
            f"{min(pauses):.1f}-{max(pauses):.1f}), {scanned} objects scanned, {frozen} frozen"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
