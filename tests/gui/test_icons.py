"""The artwork: every tray look and the app icon load with all their sizes, and the looks differ at a glance."""

from __future__ import annotations

import configparser
import glob
import struct
import sys
import tomllib
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QIcon, QImage, QImageReader

from ftdesk.gui import resources
from ftdesk.gui.icons import APP_SIZES, TRAY_SIZES, IconSet, TrayLook

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def icons() -> IconSet:
    return IconSet()


def dominant_colour(icon: QIcon, size: int) -> tuple[float, float, float]:
    """Return (hue in degrees, saturation 0-1, share of the square covered) of an icon rendered at size."""
    image = icon.pixmap(size, size).toImage().convertToFormat(QImage.Format.Format_ARGB32)
    hues: Counter[int] = Counter()
    saturations: list[float] = []
    covered = 0
    for y in range(image.height()):
        for x in range(image.width()):
            colour = QColor.fromRgba(image.pixel(x, y))
            if colour.alphaF() < 0.5:
                continue
            covered += 1
            saturations.append(colour.hsvSaturationF())
            if colour.hsvSaturationF() > 0.35 and colour.valueF() > 0.3:
                hues[int(colour.hsvHueF() * 360) // 10] += 1  # 10-degree buckets
    if not hues:
        return -1.0, sorted(saturations)[len(saturations) // 2], covered / (size * size)
    bucket, _ = hues.most_common(1)[0]
    return bucket * 10 + 5.0, sorted(saturations)[len(saturations) // 2], covered / (size * size)


def hue_distance(a: float, b: float) -> float:
    difference = abs(a - b) % 360
    return min(difference, 360 - difference)


@pytest.mark.parametrize("look", list(TrayLook))
def test_each_tray_look_loads_every_size(icons: IconSet, look: TrayLook) -> None:
    icon = icons.tray_icon(look)
    assert not icon.isNull()
    assert sorted(size.width() for size in icon.availableSizes()) == list(TRAY_SIZES)
    # A 16 px tray slot gets pixels drawn for 16 px, not a scaled-down 64.
    assert icon.pixmap(16, 16).size().width() == 16


def test_the_app_icon_loads_every_size(icons: IconSet) -> None:
    icon = icons.app_icon()
    assert not icon.isNull()
    assert sorted(size.width() for size in icon.availableSizes()) == list(APP_SIZES)


def test_an_icon_set_hands_out_the_same_icon_for_a_look(icons: IconSet) -> None:
    assert icons.tray_icon(TrayLook.LIVE).cacheKey() == icons.tray_icon(TrayLook.LIVE).cacheKey()
    assert icons.tray_icon(TrayLook.LIVE).cacheKey() != icons.tray_icon(TrayLook.DRY_RUN).cacheKey()


@pytest.mark.parametrize("size", [16, 22, 32])
def test_live_is_unmistakably_red_and_filled_while_dry_run_is_calm_blue(icons: IconSet, size: int) -> None:
    live_hue, live_saturation, live_cover = dominant_colour(icons.tray_icon(TrayLook.LIVE), size)
    dry_hue, _, dry_cover = dominant_colour(icons.tray_icon(TrayLook.DRY_RUN), size)
    assert hue_distance(live_hue, 0) <= 20, f"LIVE hue {live_hue} is not red"
    assert 180 <= dry_hue <= 230, f"DRY_RUN hue {dry_hue} is not blue/teal"
    assert hue_distance(live_hue, dry_hue) >= 120
    assert live_saturation > 0.6
    # Solid disc versus a dashed ring: LIVE covers much more of the slot.
    assert live_cover > dry_cover + 0.25


def test_logged_out_is_grey_paper_green_and_error_amber(icons: IconSet) -> None:
    _, logged_out_saturation, _ = dominant_colour(icons.tray_icon(TrayLook.LOGGED_OUT), 22)
    paper_hue, _, _ = dominant_colour(icons.tray_icon(TrayLook.PAPER), 22)
    error_hue, _, _ = dominant_colour(icons.tray_icon(TrayLook.ERROR), 22)
    assert logged_out_saturation < 0.15, "logged out should carry no colour"
    assert 140 <= paper_hue <= 175, f"PAPER hue {paper_hue} is not green"
    assert 25 <= error_hue <= 55, f"ERROR hue {error_hue} is not amber"


@pytest.mark.parametrize("size", [16, 22])
def test_halted_is_a_purple_octagon_unlike_live_red_disc(icons: IconSet, size: int) -> None:
    hue, saturation, _ = dominant_colour(icons.tray_icon(TrayLook.HALTED), size)
    live_hue, _, _ = dominant_colour(icons.tray_icon(TrayLook.LIVE), size)
    assert 270 <= hue <= 310, f"HALTED hue {hue} is not purple"
    assert hue_distance(hue, live_hue) >= 60 and saturation > 0.5

    def edge_run(look: TrayLook) -> int:
        """Return how many pixels of the top row are covered: a flat side runs along it, a round one touches it."""
        image = icons.tray_icon(look).pixmap(size, size).toImage()
        return sum(QColor.fromRgba(image.pixel(x, 0)).alphaF() > 0.5 for x in range(size))

    assert edge_run(TrayLook.HALTED) >= 0.45 * size
    assert all(
        edge_run(look) < 0.4 * size
        for look in TrayLook
        if look not in (TrayLook.HALTED, TrayLook.PAPER, TrayLook.PAPER_FIDELITY)
    )
    image = icons.tray_icon(TrayLook.HALTED).pixmap(size, size).toImage()
    assert QColor.fromRgba(image.pixel(0, 0)).alphaF() < 0.5  # its corners are cut: not the paper sheet


def greys(icon: QIcon, size: int, background: float) -> list[float]:
    """Return the luminance (0-1) of each pixel of an icon drawn on a grey level, as colour-blind eyes see shape."""
    image = icon.pixmap(size, size).toImage().convertToFormat(QImage.Format.Format_ARGB32)
    values = []
    for y in range(size):
        for x in range(size):
            colour = QColor.fromRgba(image.pixel(x, y))
            luminance = 0.2126 * colour.redF() + 0.7152 * colour.greenF() + 0.0722 * colour.blueF()
            values.append(luminance * colour.alphaF() + background * (1 - colour.alphaF()))
    return values


@pytest.mark.parametrize("size", [16, 22])
@pytest.mark.parametrize("background", [1.0, 0.15], ids=["light-panel", "dark-panel"])
def test_every_two_looks_differ_without_colour(icons: IconSet, size: int, background: float) -> None:
    for first, second in combinations(list(TrayLook), 2):
        a, b = greys(icons.tray_icon(first), size, background), greys(icons.tray_icon(second), size, background)
        differing = sum(abs(x - y) > 0.25 for x, y in zip(a, b, strict=True)) / len(a)
        # The closest pair (logged out's thin plain ring, dry run's thick dashed ring) differs in ~8% at 16 px.
        assert differing >= 0.06, f"{first.value} and {second.value} look alike in grey at {size} px"


def test_the_paper_sheets_are_the_only_square_looks(icons: IconSet) -> None:
    def corner_covered(look: TrayLook) -> bool:
        image = icons.tray_icon(look).pixmap(22, 22).toImage()
        return QColor.fromRgba(image.pixel(2, 19)).alphaF() > 0.5  # bottom-left corner, outside any circle

    assert [look for look in TrayLook if corner_covered(look)] == [TrayLook.PAPER, TrayLook.PAPER_FIDELITY]


def test_paper_on_fidelity_is_the_paper_sheet_with_a_blue_mark(icons: IconSet) -> None:
    """Same green sheet (simulated money), its own mark: a blue disc where paper has green candles."""
    image = icons.tray_icon(TrayLook.PAPER_FIDELITY).pixmap(22, 22).toImage()
    centre = QColor.fromRgba(image.pixel(7, 13))  # in the disc, beside its white candle
    assert 200 <= centre.hsvHue() <= 230 and centre.hsvSaturationF() > 0.5, centre.name()  # the blue mark
    edge = QColor.fromRgba(image.pixel(2, 19))
    assert 140 <= edge.hsvHue() <= 175, edge.name()  # the paper sheet's green edge


@pytest.mark.parametrize(
    ("stem", "sizes"),
    [("ftdesk", APP_SIZES)] + [(f"tray-{look.value}", TRAY_SIZES) for look in TrayLook],
)
def test_every_rendered_png_has_its_named_size(stem: str, sizes: tuple[int, ...]) -> None:
    assert resources.icon_path(f"{stem}.svg").is_file()
    for size in sizes:
        image = QImage(str(resources.icon_path(f"png/{stem}-{size}.png")))
        assert (image.width(), image.height()) == (size, size)
        assert image.hasAlphaChannel()


def test_the_windows_icon_holds_16_to_256_px() -> None:
    reader = QImageReader(str(resources.icon_path("ftdesk.ico")))
    sizes = set()
    for index in range(reader.imageCount()):
        reader.jumpToImage(index)
        sizes.add(reader.read().width())
    assert {16, 24, 32, 48, 64, 128, 256} <= sizes


def test_the_macos_icon_holds_the_retina_sizes() -> None:
    data = resources.icon_path("ftdesk.icns").read_bytes()
    assert data[:4] == b"icns"
    assert struct.unpack(">I", data[4:8])[0] == len(data)
    kinds, offset = set(), 8
    while offset < len(data):
        kind, length = data[offset : offset + 4], struct.unpack(">I", data[offset + 4 : offset + 8])[0]
        kinds.add(kind)
        offset += length
    # ic07..ic10 = 128, 256, 512, 1024 px; ic11..ic14 = their @2x variants of 16..512.
    assert {b"ic07", b"ic08", b"ic09", b"ic10", b"ic11", b"ic12", b"ic13", b"ic14"} <= kinds


def test_the_desktop_entry_launches_ftdesk_with_its_icon() -> None:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]
    entry.read(resources.resources_dir() / "ftdesk.desktop", encoding="utf-8")
    section = entry["Desktop Entry"]
    assert (section["Type"], section["Name"], section["Exec"], section["Icon"]) == (
        "Application",
        "ftdesk",
        "ftdesk",
        "ftdesk",
    )
    assert {"Office", "Finance"} <= set(filter(None, section["Categories"].split(";")))
    assert section["Comment"]


def test_resources_are_found_inside_a_pyinstaller_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = tmp_path / "resources"
    (bundled / "icons").mkdir(parents=True)
    (bundled / "icons" / "ftdesk.svg").write_text("<svg/>")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resources.resources_dir() == bundled
    assert resources.icon_path("ftdesk.svg") == bundled / "icons" / "ftdesk.svg"


def test_an_incomplete_bundle_falls_back_to_the_source_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resources.resources_dir() == Path(resources.__file__).resolve().parents[2] / "resources"


def test_resources_are_found_where_a_wheel_installs_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install .` leaves no source tree beside the package: the artwork comes from <prefix>/share/ftdesk."""
    site_packages = tmp_path / "lib" / "site-packages" / "ftdesk" / "gui"
    site_packages.mkdir(parents=True)
    installed = tmp_path / "share" / "ftdesk"
    (installed / "icons").mkdir(parents=True)
    (installed / "icons" / "ftdesk.svg").write_text("<svg/>")
    monkeypatch.setattr(resources, "__file__", str(site_packages / "resources.py"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert resources.resources_dir() == installed


def test_a_wheel_carries_every_file_of_resources(tmp_path: Path) -> None:
    """pyproject's data-files globs match every file the app loads from resources/, into the folder it searches."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data_files: dict[str, list[str]] = project["tool"]["setuptools"]["data-files"]
    shipped = {
        Path(target) / Path(source).name
        for target, patterns in data_files.items()
        for pattern in patterns
        for source in glob.glob(pattern, root_dir=ROOT)
    }
    needed = {
        resources.INSTALLED_RESOURCES / path.relative_to(ROOT / "resources")
        for path in (ROOT / "resources").rglob("*")
        if path.is_file() and (path.parent.name in ("icons", "png") or path.suffix == ".desktop")
    }
    assert needed and needed == shipped


def test_a_missing_icon_is_named_in_the_error() -> None:
    with pytest.raises(FileNotFoundError, match=r"no-such-icon\.png"):
        resources.icon_path("no-such-icon.png")
