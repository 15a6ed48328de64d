"""Run the test suite with the system clock set to awkward dates, under several time zones.

    .venv/bin/python tests/date_sweep.py                      # 11 dates x 3 zones, non-GUI tests, 2 at a time
    .venv/bin/python tests/date_sweep.py --calendar           # the same with the date-sensitive tests only
    .venv/bin/python tests/date_sweep.py --points thanksgiving,nye --zones Asia/Tokyo
    .venv/bin/python tests/date_sweep.py --at "2026-11-28 10:00" --zones Asia/Tokyo   # CI's Saturday in Tokyo
    .venv/bin/python tests/date_sweep.py --gui -- -m "not slow"                        # extra pytest arguments

Each run is a separate pytest process whose wall clock is moved with time-machine (a test extra):
``tests/timetravel/sitecustomize.py``, put on ``PYTHONPATH``, travels to ``FTDESK_TEST_NOW`` at start-up in
pytest and in every Python process it starts (the ``ftdesk`` processes of the slow tests too), and time
runs on from there. Today's date, the current datetime, ``time.time()`` and ``time.localtime()`` all
move; ``time.monotonic()`` does not, so asyncio's and Qt's timers keep working. ``TZ`` sets the local
zone. What reads the time below Python (OpenSSL, SQLite's ``'now'``, Qt's ``QDateTime``) is not moved.
(libfaketime was tried first: Debian 12's 0.9.10 makes every ``time.sleep()`` fail with EINVAL once
monotonic time is left alone, and hangs timed waits when it is not.)

The built-in points are New York wall times (the market's clock), so each names the same instant in
every zone: under ``Asia/Tokyo`` Thanksgiving noon is already the 27th and New Year's Eve 23:59 is
the afternoon of the new year. ``--at`` instead takes a local wall time in each zone of the run.

Prints one line per run as it ends, then a table (dates x zones: passed/failed, seconds) and the failed
tests; exits 1 if any run failed. Each run's output is kept in ``--logs`` (a temp dir by default).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
NEW_YORK = ZoneInfo("America/New_York")
ZONES = ("America/New_York", "UTC", "Asia/Tokyo")
# label -> New York wall time at which the run starts.
POINTS: dict[str, datetime] = {
    "friday-after-close": datetime(2026, 11, 20, 17, 30),
    "saturday": datetime(2026, 11, 21, 12, 0),
    "thanksgiving": datetime(2026, 11, 26, 12, 0),
    "early-close": datetime(2026, 11, 27, 12, 59),  # the day after Thanksgiving closes at 13:00, mid-run
    "christmas-eve": datetime(2026, 12, 24, 14, 0),
    "christmas": datetime(2026, 12, 25, 10, 0),
    "third-friday": datetime(2026, 12, 18, 15, 59),  # monthly expiration, a minute before the close
    "dst-spring": datetime(2026, 3, 8, 1, 59),  # 02:00 EST becomes 03:00 EDT a minute in
    "dst-fall": datetime(2026, 11, 1, 1, 59),  # the first 01:59 (EDT); 02:00 EDT becomes 01:00 EST
    "leap-day": datetime(2028, 2, 29, 12, 0),
    "new-years-eve": datetime(2026, 12, 31, 23, 59),
}
TIMETRAVEL = ROOT / "tests" / "timetravel"
# --calendar: the tests whose answers depend on the date, on the system clock or on a fake's: the paper
# service's orders, research and user-data API (holidays, expirations, journals) on the system clock, the
# Fidelity client against its fakes, the Broker contract, the paper calendar, options, ledger and alerts.
# Slow tests and the modules without dates (streaming, OpenAPI, security, layering, install, GUI) are left
# out, so 33 runs fit in about an hour on 2 cores; the plain sweep runs everything.
CALENDAR_TESTS = (
    "tests/component",
    "--ignore=tests/component/test_paper_broker.py",
    "--ignore=tests/component/test_mdds_stream.py",
    "--ignore=tests/component/test_beps_stream.py",
    "tests/contract",
    "tests/unit/fidelity",
    "tests/unit/test_order_journal.py",
    *(f"tests/unit/paper/test_{name}.py" for name in ("calendar", "options", "dividends", "ledger", "alerts")),
    *(f"tests/unit/paper/test_{name}.py" for name in ("userdata", "session")),
    *(f"tests/api/test_{name}_api.py" for name in ("orders", "research", "user_data")),
    "-m",
    "not slow",
)


@dataclass
class Run:
    """One pytest run at one instant under one zone."""

    label: str
    zone: str
    start: datetime  # aware
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    exit_code: int | None = None
    failures: list[str] = field(default_factory=list)
    log: Path | None = None

    @property
    def ok(self) -> bool:
        """Return whether pytest exited 0."""
        return self.exit_code == 0


def check_time_machine() -> None:
    """Exit with how to install time-machine if it is missing."""
    try:
        import time_machine  # noqa: F401
    except ImportError:
        sys.exit("time-machine is missing: pip install -e '.[test]'")


def run_once(run: Run, pytest_args: list[str], logs: Path) -> Run:
    """Run pytest with the wall clock moved to ``run.start`` and ``TZ=run.zone``; fill in the counts."""
    name = f"{run.label}_{run.zone.replace('/', '-')}"
    junit = logs / f"{name}.xml"
    run.log = logs / f"{name}.log"
    env = dict(os.environ)
    env.update(
        TZ=run.zone,
        PYTHONPATH=os.pathsep.join(filter(None, [str(TIMETRAVEL), env.get("PYTHONPATH", "")])),
        FTDESK_TEST_NOW=run.start.isoformat(),
        FTDESK_TEST_NOW_SET_AT=repr(time.time()),
        QT_QPA_PLATFORM="offscreen",
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    # sitecustomize imported time-machine before pytest: pytest can no longer rewrite its plugin, and says so.
    quiet = "ignore:Module already imported so cannot be rewritten; time_machine:pytest.PytestAssertRewriteWarning"
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", quiet]
    command = [*pytest, "-q", f"--junitxml={junit}", *pytest_args]
    began = time.monotonic()
    with run.log.open("w") as out:
        run.exit_code = subprocess.call(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    run.seconds = time.monotonic() - began
    if junit.exists():
        count_results(run, junit)
    return run


def count_results(run: Run, junit: Path) -> None:
    """Read passed, failed (failures and errors) and skipped tests from a JUnit XML report."""
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = {child.tag for child in case}
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        if outcome & {"failure", "error"}:
            run.failed += 1
            run.failures.append(test)
        elif "skipped" in outcome:
            run.skipped += 1
        else:
            run.passed += 1


def table(runs: list[Run], zones: list[str]) -> str:
    """Return a Markdown table: one row per point, one column per zone (passed/failed, seconds)."""
    lines = ["| point (New York time) | " + " | ".join(zones) + " |", "|---" * (len(zones) + 1) + "|"]
    for label in dict.fromkeys(r.label for r in runs):
        cells = []
        for zone in zones:
            run = next(r for r in runs if r.label == label and r.zone == zone)
            mark = "" if run.ok else " FAIL"
            cells.append(f"{run.passed} passed / {run.failed} failed, {run.seconds:.0f} s{mark}")
        start = next(r.start for r in runs if r.label == label)
        lines.append(f"| {label} {start.astimezone(NEW_YORK):%Y-%m-%d %H:%M %Z} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    """Parse the arguments, run the sweep and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", default=",".join(POINTS), help="comma-separated labels (default: all)")
    parser.add_argument("--zones", default=",".join(ZONES), help="comma-separated TZ names (default: %(default)s)")
    parser.add_argument("--at", help="one local wall time 'YYYY-MM-DD HH:MM' in each zone, instead of --points")
    parser.add_argument("--jobs", type=int, default=2, help="pytest runs at once (default: %(default)s)")
    parser.add_argument("--gui", action="store_true", help="include tests/gui (left out by default)")
    parser.add_argument("--calendar", action="store_true", help="only the date-sensitive tests (CALENDAR_TESTS)")
    parser.add_argument("--logs", type=Path, help="folder for each run's output and JUnit XML")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments (paths, -m, -k ...)")
    args = parser.parse_args()

    check_time_machine()
    zones = [z for z in args.zones.split(",") if z]
    for zone in zones:
        ZoneInfo(zone)  # fail early on a misspelt zone
    runs: list[Run] = []
    if args.at:
        wall = datetime.strptime(args.at, "%Y-%m-%d %H:%M")
        runs = [Run(f"at-{wall:%Y%m%dT%H%M}", zone, wall.replace(tzinfo=ZoneInfo(zone))) for zone in zones]
    else:
        for label in [p for p in args.points.split(",") if p]:
            if label not in POINTS:
                parser.error(f"unknown point {label!r}; known: {', '.join(POINTS)}")
            runs += [Run(label, zone, POINTS[label].replace(tzinfo=NEW_YORK)) for zone in zones]
    pytest_args = [*(CALENDAR_TESTS if args.calendar else ()), *args.pytest_args]  # no path: all of tests/
    if not args.gui:
        pytest_args.append("--ignore=tests/gui")
    logs = args.logs or Path(tempfile.mkdtemp(prefix="ftdesk-date-sweep-"))
    logs.mkdir(parents=True, exist_ok=True)

    print(f"{len(runs)} runs, {args.jobs} at a time, pytest {' '.join(pytest_args)}; logs in {logs}", flush=True)
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_once, run, pytest_args, logs) for run in runs]
        for future in futures:
            run = future.result()
            state = "ok" if run.ok else f"FAILED (exit {run.exit_code})"
            print(
                f"{run.label:>20} {run.zone:<17} {run.passed} passed, {run.failed} failed, "
                f"{run.skipped} skipped in {run.seconds:.0f} s: {state}",
                flush=True,
            )
    print(f"\nwall time {time.monotonic() - began:.0f} s\n")
    print(table(runs, zones))
    failed = [r for r in runs if not r.ok]
    for run in failed:
        print(f"\n{run.label} {run.zone} (exit {run.exit_code}, log {run.log}):")
        for test in run.failures:
            print(f"  {test}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
