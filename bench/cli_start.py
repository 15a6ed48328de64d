"""What an `ftdesk` subcommand costs besides the service's own time: ours next to a bare interpreter.

    .venv/bin/python bench/cli_start.py [--runs 9] [--before DIR]

Starts a headless paper service on a free port and a fresh data dir, logs in, then alternates, in one run so
all see the same load: a bare ``python -c pass``; importing what a subcommand imports
(``ftdesk.cli.commands``); a whole ``ftdesk quote AAPL`` process (piped, so a table without colour); and the
service's own time for the same request (``GET /market-data/quotes`` from a warm client). ``--before DIR``
adds, in the same alternation, the same subcommand run from another checkout (an older commit: a before/after
in one run). Prints the median and range of each, wall and CPU (user + system), the subcommand's cost besides
the service's time, and the machine's load. Run it with bytecode cached (``python -m compileall -q ftdesk`` in
each tree, and without ``PYTHONDONTWRITEBYTECODE``), as an installed ftdesk runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packaging"))

from ftdesk.client import Client  # noqa: E402

from smoke import free_port, wait_for_health  # noqa: E402

KEY = "bench-cli-key-0123456789abcdef0123456789"


def timed(label: str, argv: list[str], env: dict[str, str], cpu_times: dict[str, list[float]]) -> float:
    """Run a process; return its wall time and keep its CPU time (user + system) under ``label``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # Not from a checkout: `python -m` puts the working directory first on sys.path, which would shadow PYTHONPATH.
    cwd = env["FTSERVICE_DATA_DIR"]
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu_times.setdefault(label, []).append(cpu)
    return wall


def summary(name: str, seconds: list[float]) -> str:
    low, high = min(seconds) * 1000, max(seconds) * 1000
    return f"{name:<44} median {statistics.median(seconds) * 1000:7.0f} ms  (range {low:.0f}-{high:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", type=Path, help="another checkout whose `ftdesk quote` runs alongside")
    options = parser.parse_args()
    runs, before = options.runs, options.before
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        env = {
            **os.environ,
            "FTSERVICE_DATA_DIR": data,
            "FTSERVICE_PORT": str(port),
            "FTSERVICE_API_KEY": KEY,
            "PYTHONPATH": str(ROOT),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        service = subprocess.Popen(
            [sys.executable, "-m", "ftdesk", "--headless"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_health(service, f"http://127.0.0.1:{port}", time.perf_counter())
            url = f"http://127.0.0.1:{port}"
            quote = [sys.executable, "-m", "ftdesk", "quote", "AAPL", "--url", url]
            walls: dict[str, list[float]] = {}
            served: list[float] = []
            cpu_times: dict[str, list[float]] = {}
            runs_of = {
                "python -c pass (bare interpreter)": ([sys.executable, "-c", "pass"], env),
                "import ftdesk.cli.commands (whole process)": (
                    [sys.executable, "-c", "import ftdesk.cli.commands"],
                    env,
                ),
                "ftdesk quote AAPL (whole process)": (quote, env),
            }
            if before is not None:
                runs_of["ftdesk quote AAPL, before (whole process)"] = (quote, {**env, "PYTHONPATH": str(before)})
            with Client(url, KEY) as api:
                api.login("trader", "paper-pass")
                for _ in range(runs):
                    for label, (argv, run_env) in runs_of.items():
                        walls.setdefault(label, []).append(timed(label, argv, run_env, cpu_times))
                    started = time.perf_counter()
                    api.get_quotes(["AAPL"])
                    served.append(time.perf_counter() - started)
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(30)
    for label, seconds in walls.items():
        print(summary(label, seconds))
    print(summary("GET /market-data/quotes, warm client", served))
    bare = statistics.median(walls["python -c pass (bare interpreter)"])
    for label in [name for name in walls if name.startswith("ftdesk quote")]:
        besides = statistics.median(walls[label]) - statistics.median(served)
        print(
            f"{label.removesuffix(' (whole process)')} besides the service's time: {besides * 1000:.0f} ms wall; "
            f"above a bare interpreter: {(besides - bare) * 1000:.0f} ms"
        )
    for label, seconds in cpu_times.items():
        print(summary(f"CPU of: {label.removesuffix(' (whole process)')}", seconds))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
