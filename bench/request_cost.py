"""The cost of a request: ftdesk as users run it next to a bare aiohttp app serving the same bytes, with wrk.

    .venv/bin/python bench/request_cost.py [--rounds 3] [--seconds 3] [--connections 4]

ftdesk runs as ``python -m ftdesk --headless`` on a fresh data dir at the default log level (INFO: every
request writes its access line to the log file and to stderr, here a file), logged in to the paper broker;
the access lines on stderr and in the log files (which keep the newest 30 MiB) are counted next to the requests
wrk saw answered.
The bare app is a second process: plain aiohttp, no middleware, no access log, answering
``/api/v1/health`` and ``/api/v1/accounts/{acct}/positions`` with the bytes ftdesk served just before. wrk
drives one endpoint of one server at a time, and the rounds alternate bare and ftdesk, so both see the
same machine load; the load average is printed with every figure. Prints requests/s per run and the ratio
ftdesk/bare of the rounds' medians, and each server's CPU time per request (from /proc, so Linux only):
on a machine busy with other work the CPU ratio is the steadier figure. Needs ``wrk`` on the PATH (Debian:
``apt-get install wrk``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "b" * 32

BARE = r"""
import json, sys
from aiohttp import web
answers = json.loads(sys.argv[2])

def handler(body):
    data = body.encode()
    async def serve(_request):
        return web.Response(body=data, content_type="application/json")
    return serve

app = web.Application()
for path, body in answers.items():
    app.router.add_get(path, handler(body))
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None, handle_signals=True)
"""


def free_port() -> int:
    """Return a port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call(url: str, body: dict | None = None) -> tuple[int, bytes]:
    """Send one request with the API key; return the status and the body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {API_KEY}"})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_up(url: str, process: subprocess.Popen) -> None:
    """Poll ``url`` until it answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            call(url)
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not answer in 60 s")


def cpu_seconds(pid: int) -> float:
    """Return the CPU time (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url: str, seconds: int, connections: int) -> tuple[float, int]:
    """Run wrk against ``url``; return requests/s and requests (non-2xx answers abort the bench)."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-H", f"Authorization: Bearer {API_KEY}", url],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"wrk saw errors from {url}:\n{out}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if match is None or total is None:
        raise SystemExit(f"no figure in wrk's output:\n{out}")
    return float(match.group(1)), int(total.group(1))


def main() -> int:
    """Run the comparison and print it."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--log-level", default=None, help="FTSERVICE_LOG_LEVEL for ftdesk (default: its default, INFO)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not on the PATH (Debian: apt-get install wrk)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="ftdesk-request-cost-") as scratch:
        port, bare_port = free_port(), free_port()
        env = {name: value for name, value in os.environ.items() if not name.startswith(("FTSERVICE_", "QT_"))}
        env.update(
            FTSERVICE_DATA_DIR=str(Path(scratch) / "data"),
            FTSERVICE_PORT=str(port),
            FTSERVICE_API_KEY=API_KEY,
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        )
        if args.log_level:
            env["FTSERVICE_LOG_LEVEL"] = args.log_level
        stderr = open(Path(scratch) / "stderr.log", "wb")  # noqa: SIM115 - open for the server's lifetime
        ours = subprocess.Popen([sys.executable, "-m", "ftdesk", "--headless"], env=env, stderr=stderr, cwd=ROOT)
        bare: subprocess.Popen | None = None
        try:
            base = f"http://127.0.0.1:{port}/api/v1"
            wait_up(f"{base}/health", ours)
            status, _ = call(f"{base}/auth/login", {"username": "bench", "password": "bench-pass"})
            assert status == 200, status
            accounts = json.loads(call(f"{base}/accounts")[1])["data"]
            paths = {"health": "/api/v1/health", "positions": f"/api/v1/accounts/{accounts[0]['acct_num']}/positions"}
            answers = {path: call(f"http://127.0.0.1:{port}{path}")[1].decode() for path in paths.values()}
            bare = subprocess.Popen([sys.executable, "-c", BARE, str(bare_port), json.dumps(answers)], cwd=ROOT)
            wait_up(f"http://127.0.0.1:{bare_port}/api/v1/health", bare)
            servers = (("bare", bare, bare_port), ("ftdesk", ours, port))
            rates: dict[tuple[str, str], list[float]] = {}
            costs: dict[tuple[str, str], list[float]] = {}
            loads: list[float] = []
            answered = 0  # requests wrk counted from ftdesk (a run's last few unanswered ones are not counted)
            for round_number in range(args.rounds):
                for name, path in paths.items():
                    for server, process, server_port in servers:
                        load = os.getloadavg()[0]
                        loads.append(load)
                        before = cpu_seconds(process.pid)
                        rate, total = wrk(f"http://127.0.0.1:{server_port}{path}", args.seconds, args.connections)
                        cost = (cpu_seconds(process.pid) - before) / total * 1e6
                        rates.setdefault((name, server), []).append(rate)
                        if server == "ftdesk":
                            answered += total
                        costs.setdefault((name, server), []).append(cost)
                        print(
                            f"round {round_number + 1} {name:>9} {server:>6}: {rate:8.0f} req/s, "
                            f"server CPU {cost:5.0f} us/request (load {load:.2f})"
                        )
        finally:
            for process in (ours, bare):
                if process is not None:
                    process.send_signal(signal.SIGTERM)
                    process.wait(timeout=15)
            stderr.close()
        # Every request ftdesk answered has its access line on stderr (here a file); the log files keep the newest
        # 30 MiB of them (5 MiB and five rotated copies), about 240,000 lines.
        access = " INFO ftdesk.access: "
        stderr_lines = (Path(scratch) / "stderr.log").read_text(encoding="utf-8", errors="replace").count(access)
        log_files = sorted((Path(scratch) / "data" / "logs").glob("ftdesk.log*"))
        log_lines = sum(path.read_text(encoding="utf-8").count(access) for path in log_files)
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"wrk -t1 -c{args.connections} -d{args.seconds}s, {args.rounds} alternating rounds; "
        f"load average {min(loads):.2f}-{max(loads):.2f}; ftdesk answered {answered} requests to wrk; access lines "
        f"(the setup's requests too): {stderr_lines} on stderr, {log_lines} in {len(log_files)} log files"
    )
    print("ratio: ftdesk/bare requests/s (medians of the rounds); by CPU: bare/ftdesk server CPU per request")
    for name in paths:
        bare_rate, our_rate = statistics.median(rates[(name, "bare")]), statistics.median(rates[(name, "ftdesk")])
        bare_cost, our_cost = statistics.median(costs[(name, "bare")]), statistics.median(costs[(name, "ftdesk")])
        print(
            f"{name:>9}: ftdesk {our_rate:6.0f} req/s ({our_cost:4.0f} us CPU), bare {bare_rate:6.0f} req/s "
            f"({bare_cost:4.0f} us CPU); ratio {our_rate / bare_rate:.2f}, by CPU {bare_cost / our_cost:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
