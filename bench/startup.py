"""Start-up time to the first HTTP 200: the frozen bundle next to the same code run from the venv.

    .venv/bin/python bench/startup.py [--bundle dist/ftdesk/ftdesk] [--before OTHER/ftdesk/ftdesk] [--runs 5]

Each run starts ftdesk on a fresh data dir and a free port and polls ``GET /api/v1/health`` until it
answers 200, then stops it with SIGTERM. Runs alternate between the frozen app (``--headless`` and the
tray app under ``QT_QPA_PLATFORM=offscreen``) and ``python -m ftdesk`` from this venv, so both see the
same machine load. ``--before`` adds a second bundle (say, one built from the tree before a change) to the
same alternation, so a before/after comparison sees the same load too. Prints the median and the range of each,
the resident memory 2 s after the first 200, and the bundle's size. The tray's figure is its first 200, which
comes a few milliseconds before its icon or window is shown (the tray shows it once the service has started).

Run it with bytecode writing allowed (``env -u PYTHONDONTWRITEBYTECODE``), or every venv start compiles.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# packaging/ is not a package (and its name is taken by PyPI's "packaging"): import its scripts by path.
# It goes first on sys.path, so its build.py wins over PyPI's "build" package.
sys.path.insert(0, str(ROOT / "packaging"))

from build import MIB, folder_size  # noqa: E402
from smoke import free_port, wait_for_health  # noqa: E402


def rss_mib(pid: int) -> float:
    """Return a process's resident memory in MiB (0 where /proc is missing)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return kib / 1024


def start_once(command: list[str], gui: bool, scratch: Path) -> tuple[float, float]:
    """Start ``command`` on a fresh data dir; return the seconds to the first 200 and the RSS 2 s after it."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith(("FTSERVICE_", "QT_"))}
    env.update(
        FTSERVICE_DATA_DIR=str(Path(tempfile.mkdtemp(dir=scratch))),
        FTSERVICE_PORT=str(port),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )
    if gui:
        env["QT_QPA_PLATFORM"] = "offscreen"
    started = time.perf_counter()
    process = subprocess.Popen(
        command if gui else [*command, "--headless"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        first = wait_for_health(process, f"http://127.0.0.1:{port}", started)
        time.sleep(2)  # idle: the paper world is open and nothing is asked
        return first, rss_mib(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)


def main() -> int:
    """Run the comparison and print it."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "ftdesk" / "ftdesk")
    parser.add_argument("--before", type=Path, help="a second bundle to alternate with the first (before a change)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    frozen = args.bundle.is_file()
    if not frozen:
        print(f"no bundle at {args.bundle} (packaging/build.py makes one): measuring the venv only")
    if args.before is not None and not args.before.is_file():
        parser.error(f"no bundle at {args.before}")
    variants = {
        "frozen, headless": ([str(args.bundle)], False),
        "frozen before, headless": ([str(args.before)], False),
        "venv, headless": ([sys.executable, "-m", "ftdesk"], False),
        "frozen, tray (offscreen)": ([str(args.bundle)], True),
        "frozen before, tray (offscreen)": ([str(args.before)], True),
        "venv, tray (offscreen)": ([sys.executable, "-m", "ftdesk"], True),
    }
    variants = {
        name: variant
        for name, variant in variants.items()
        if (frozen or not name.startswith("frozen")) and (args.before is not None or "before" not in name)
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    memory: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="ftdesk-startup-") as scratch:
        for _ in range(args.runs):
            for name, (command, gui) in variants.items():
                first, rss = start_once(command, gui, Path(scratch))
                times[name].append(first)
                memory[name].append(rss)
    print(f"load average after the runs: {os.getloadavg()[0]:.2f}; {args.runs} runs each, alternating")
    for name, seconds in times.items():
        low, high = min(seconds), max(seconds)
        median = statistics.median(seconds)
        print(
            f"{name:>33}: first 200 after {median * 1000:.0f} ms (median; {low * 1000:.0f}-{high * 1000:.0f} ms), "
            f"idle RSS {statistics.median(memory[name]):.0f} MiB"
        )
    imports = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t = time.perf_counter(); import ftdesk.app; print(time.perf_counter() - t)",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    print(f"import ftdesk.app from the venv: {float(imports) * 1000:.0f} ms (python -X importtime for the detail)")
    for bundle in (args.bundle, args.before) if frozen else ():
        if bundle is not None:
            size, files = folder_size(bundle.parent)
            print(f"bundle {bundle.parent}: {size / MIB:.1f} MiB, {files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
