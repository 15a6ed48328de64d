"""Build ftdesk's double-click app with PyInstaller, then this platform's installable artefact.

    python packaging/build.py            # from a venv with the package extra: pip install -e '.[package]'

- Linux: ``dist/ftdesk/`` (one folder) and ``dist/ftdesk-<version>-linux-<arch>.tar.gz`` holding it with
  ``install.sh`` (installs into ~/.local with a menu entry and optional autostart). Every shared library
  in the bundle is checked with ldd, so a library the bundle lacks fails the build, not the trader's start.
- macOS: ``dist/ftdesk.app`` (a menu-bar app: ``LSUIElement``) and ``dist/ftdesk-<version>-macos.dmg``.
- Windows: ``dist\\ftdesk\\`` and, where Inno Setup's ``iscc`` is on PATH,
  ``dist\\ftdesk-<version>-windows-setup.exe`` from ``packaging/windows/ftdesk.iss``.

Prints the bundle's size and file count, the artefact's size and the build time.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "packaging" / "ftdesk.spec"
MIB = 1024 * 1024


def version() -> str:
    """Return ftdesk's version from the source tree."""
    sys.path.insert(0, str(ROOT))
    from ftdesk import __version__

    return __version__


def folder_size(path: Path) -> tuple[int, int]:
    """Return the bytes and the number of files under ``path`` (symlinks counted once, not followed)."""
    total = count = 0
    for entry in path.rglob("*"):
        if entry.is_file() and not entry.is_symlink():
            total += entry.stat().st_size
            count += 1
    return total, count


def run_pyinstaller(dist: Path, work: Path) -> float:
    """Run the spec; return the seconds it took."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN"]
    command += ["--distpath", str(dist), "--workpath", str(work), str(SPEC)]
    subprocess.run(command, check=True, cwd=ROOT)
    return time.perf_counter() - started


def unresolved_libraries(bundle: Path) -> list[str]:
    """Return the shared libraries the bundle's own libraries need but neither it nor the system has."""
    internal = bundle / "_internal"
    folders = {str(path.parent) for path in internal.rglob("*.so*")}
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(sorted(folders))}
    missing: set[str] = set()
    for library in internal.rglob("*.so*"):
        if library.is_symlink() or not library.is_file():
            continue
        result = subprocess.run(["ldd", str(library)], capture_output=True, text=True, env=env, check=False)
        for line in result.stdout.splitlines():
            if "not found" in line:
                missing.add(f"{line.split()[0]} (needed by {library.relative_to(bundle)})")
    return sorted(missing)


def linux_tarball(bundle: Path, dist: Path, release: str) -> Path:
    """Pack the bundle and install.sh into ``ftdesk-<version>-linux-<arch>.tar.gz``."""
    name = f"ftdesk-{release}-linux-{platform.machine()}"
    tarball = dist / f"{name}.tar.gz"
    with tarfile.open(tarball, "w:gz", compresslevel=6) as archive:
        archive.add(bundle, arcname=f"{name}/ftdesk")
        archive.add(ROOT / "packaging" / "linux" / "install.sh", arcname=f"{name}/install.sh")
        archive.add(ROOT / "packaging" / "linux" / "README.txt", arcname=f"{name}/README.txt")
    return tarball


def macos_dmg(dist: Path, release: str) -> Path:
    """Put ftdesk.app into a compressed disk image, to drag into Applications."""
    image = dist / f"ftdesk-{release}-macos.dmg"
    image.unlink(missing_ok=True)
    source = str(dist / "ftdesk.app")
    command = ["hdiutil", "create", "-volname", "ftdesk", "-srcfolder", source, "-ov", "-format", "UDZO", str(image)]
    subprocess.run(command, check=True)
    return image


def windows_installer(dist: Path, release: str) -> Path | None:
    """Compile the Inno Setup script where ``iscc`` is installed; return the setup program, or None."""
    iscc = shutil.which("iscc") or shutil.which("ISCC")
    if iscc is None:
        print("Inno Setup's iscc is not on PATH: skipped the installer (see packaging/README.md)")
        return None
    script = ROOT / "packaging" / "windows" / "ftdesk.iss"
    subprocess.run([iscc, f"/DAppVersion={release}", f"/O{dist}", str(script)], check=True)
    return dist / f"ftdesk-{release}-windows-setup.exe"


def main(argv: list[str] | None = None) -> int:
    """Build the bundle and the artefact; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the results go (default: dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller", help="PyInstaller's work folder")
    args = parser.parse_args(argv)
    dist: Path = args.dist.resolve()
    release = version()

    seconds = run_pyinstaller(dist, args.work.resolve())
    bundle = dist / "ftdesk"
    size, files = folder_size(bundle)
    print(f"bundle: {bundle} ({size / MIB:.1f} MiB, {files} files), built in {seconds:.1f} s")

    artefact: Path | None = None
    if sys.platform.startswith("linux"):
        missing = unresolved_libraries(bundle)
        if missing:
            print("libraries the bundle needs but does not have:", *missing, sep="\n  ", file=sys.stderr)
            return 1
        print("libraries: every dependency of the bundled libraries resolves")
        artefact = linux_tarball(bundle, dist, release)
    elif sys.platform == "darwin":
        artefact = macos_dmg(dist, release)
    elif sys.platform == "win32":
        artefact = windows_installer(dist, release)
    if artefact is not None:
        print(f"artefact: {artefact} ({artefact.stat().st_size / MIB:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
