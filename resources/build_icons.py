"""Render the SVG artwork in resources/icons/ to the PNG, ICO and ICNS files the platforms need.

After changing an SVG, run it (from the repository root) and commit the SVGs and everything it wrote:

    .venv/bin/pip install -e '.[package]'     # Pillow, for ICO and ICNS
    .venv/bin/python resources/build_icons.py

SVGs are rendered by Qt's own renderer (QtSvg, shipped with PySide6). Each size is
rendered from the vector at that size (never scaled down from a big bitmap), which keeps the tray icons
crisp at 16-22 px. Writes, under resources/icons/:

- png/ftdesk-<size>.png for 16, 22, 24, 32, 48, 64, 128, 256 and 512 px;
- png/tray-<state>-<size>.png for 16, 22, 24, 32, 48 and 64 px;
- ftdesk.ico (16-256 px, Windows) and ftdesk.icns (32-1024 px, macOS).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Rendering needs no display; set before Qt is imported.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS_DIR = Path(__file__).resolve().parent / "icons"
APP_ICON = "ftdesk"
TRAY_ICONS = (
    "tray-logged-out",
    "tray-paper",
    "tray-paper-fidelity",
    "tray-dry-run",
    "tray-live",
    "tray-error",
    "tray-halted",
)
APP_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
TRAY_SIZES = (16, 22, 24, 32, 48, 64)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICNS_SIZES = (32, 64, 128, 256, 512, 1024)


def render(svg: Path, size: int) -> QImage:
    """Render an SVG into a transparent square image of the given size."""
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg}: not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    return image.convertToFormat(QImage.Format.Format_ARGB32)


def to_pillow(image: QImage) -> Image.Image:
    """Convert a Qt image to a Pillow RGBA image (both straight, not premultiplied, alpha)."""
    rgba = image.convertToFormat(QImage.Format.Format_RGBA8888)
    size = (rgba.width(), rgba.height())
    return Image.frombytes("RGBA", size, bytes(rgba.constBits()), "raw", "RGBA", rgba.bytesPerLine())


def write_pngs(stem: str, sizes: tuple[int, ...], out_dir: Path) -> list[Path]:
    """Write one PNG per size for an SVG and return their paths."""
    written = []
    for size in sizes:
        path = out_dir / f"{stem}-{size}.png"
        if not render(ICONS_DIR / f"{stem}.svg", size).save(str(path)):
            raise SystemExit(f"{path}: could not be written")
        written.append(path)
    return written


def write_ico(svg: Path, path: Path) -> None:
    """Write a Windows .ico holding every ICO size, each rendered from the vector."""
    frames = [to_pillow(render(svg, size)) for size in ICO_SIZES]
    largest = frames[-1]
    largest.save(path, format="ICO", sizes=[(s, s) for s in ICO_SIZES], append_images=frames[:-1])


def write_icns(svg: Path, path: Path) -> None:
    """Write a macOS .icns holding every ICNS size, each rendered from the vector."""
    frames = [to_pillow(render(svg, size)) for size in ICNS_SIZES]
    largest = frames[-1]
    largest.save(path, format="ICNS", append_images=frames[:-1])


def main(argv: list[str] | None = None) -> int:
    """Render every icon and report what was written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    # QtSvg and QPainter need a GUI application object, even offscreen.
    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    png_dir = ICONS_DIR / "png"
    png_dir.mkdir(parents=True, exist_ok=True)
    written = write_pngs(APP_ICON, APP_SIZES, png_dir)
    for stem in TRAY_ICONS:
        written += write_pngs(stem, TRAY_SIZES, png_dir)
    app_svg = ICONS_DIR / f"{APP_ICON}.svg"
    write_ico(app_svg, ICONS_DIR / f"{APP_ICON}.ico")
    write_icns(app_svg, ICONS_DIR / f"{APP_ICON}.icns")
    written += [ICONS_DIR / f"{APP_ICON}.ico", ICONS_DIR / f"{APP_ICON}.icns"]
    root = ICONS_DIR.parent.parent
    for path in written:
        print(f"wrote {path.relative_to(root)} ({path.stat().st_size} bytes)")
    app.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
