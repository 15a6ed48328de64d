"""Start at login: the XDG autostart file, the Windows Run value and the macOS LaunchAgent."""

from __future__ import annotations

import configparser
import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

from ftdesk import __version__
from ftdesk.app import main
from ftdesk.autostart import (
    RUN_KEY,
    STARTUP_APPROVED_KEY,
    MacLaunchAgent,
    WindowsRunKey,
    XdgAutostart,
    desktop_exec,
    launch_command,
    login_item_for_platform,
)
from tests.fakes.winreg import FakeRegistry

REPO = Path(__file__).resolve().parents[2]


def read_entry(path: Path) -> configparser.SectionProxy:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]
    entry.read_string(path.read_text(encoding="utf-8"))
    return entry["Desktop Entry"]


def test_xdg_entry_is_written_read_back_and_removed(tmp_path: Path) -> None:
    item = XdgAutostart(tmp_path / "config", ["/opt/ftdesk/ftdesk"])
    assert not item.is_enabled()

    item.enable()

    assert item.is_enabled()
    assert item.path == tmp_path / "config" / "autostart" / "ftdesk.desktop"
    entry = read_entry(item.path)
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "/opt/ftdesk/ftdesk"
    assert entry["Icon"] == "ftdesk"

    item.disable()
    assert not item.path.exists()
    assert not item.is_enabled()
    item.disable()  # nothing there: still fine


def test_xdg_exec_quotes_paths_with_spaces_and_reserved_characters() -> None:
    assert desktop_exec(["/home/a b/ftdesk", "--x"]) == '"/home/a b/ftdesk" --x'
    # Inside quotes ", `, $ and \ take a backslash; the value then escapes every backslash once more.
    assert desktop_exec(["/tmp/$HOME/f`d"]) == '"/tmp/\\\\$HOME/f\\\\`d"'
    assert desktop_exec(["/opt/100%/ftdesk"]) == "/opt/100%%/ftdesk"


@pytest.mark.parametrize("mark", ["Hidden=true", "X-GNOME-Autostart-enabled=false", "X-GNOME-Autostart-enabled=False"])
def test_an_entry_the_desktop_disabled_counts_as_off_and_turning_it_on_clears_the_mark(
    tmp_path: Path, mark: str
) -> None:
    item = XdgAutostart(tmp_path, ["/opt/ftdesk/ftdesk"])
    item.enable()
    item.path.write_text(item.path.read_text() + mark + "\n")
    assert not item.is_enabled()

    item.enable()

    assert item.is_enabled()
    assert mark not in item.path.read_text()


def test_a_broken_xdg_entry_counts_as_off(tmp_path: Path) -> None:
    item = XdgAutostart(tmp_path, ["ftdesk"])
    item.path.parent.mkdir(parents=True)
    item.path.write_text("not a desktop entry\n")
    assert not item.is_enabled()


def test_xdg_config_home_is_honoured_and_a_relative_one_ignored(tmp_path: Path) -> None:
    chosen = login_item_for_platform("linux", home=tmp_path, environ={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert isinstance(chosen, XdgAutostart)
    assert chosen.path == tmp_path / "cfg" / "autostart" / "ftdesk.desktop"
    relative = login_item_for_platform("linux", home=tmp_path, environ={"XDG_CONFIG_HOME": "cfg"})
    assert isinstance(relative, XdgAutostart)
    assert relative.path == tmp_path / ".config" / "autostart" / "ftdesk.desktop"


def test_windows_run_value_holds_the_quoted_command_and_task_manager_can_disable_it() -> None:
    registry = FakeRegistry()
    item = WindowsRunKey([r"C:\Users\Ann Lee\AppData\Local\Programs\ftdesk\ftdesk.exe"], registry)
    assert not item.is_enabled()

    item.enable()
    assert registry.value(RUN_KEY, "ftdesk") == r'"C:\Users\Ann Lee\AppData\Local\Programs\ftdesk\ftdesk.exe"'
    assert item.is_enabled()

    # Task Manager's Startup tab: "Disabled" is an odd first byte; the Run value stays.
    with registry.CreateKeyEx(registry.HKEY_CURRENT_USER, STARTUP_APPROVED_KEY, 0, registry.KEY_SET_VALUE) as key:
        registry.SetValueEx(key, "ftdesk", 0, registry.REG_BINARY, bytes([3]) + bytes(11))
    assert not item.is_enabled()

    item.enable()  # the trader ticks the box again: the mark goes, the entry counts
    assert registry.value(STARTUP_APPROVED_KEY, "ftdesk") is None
    assert item.is_enabled()

    item.disable()
    assert registry.value(RUN_KEY, "ftdesk") is None
    assert not item.is_enabled()
    item.disable()


def test_mac_launch_agent_runs_the_app_at_login(tmp_path: Path) -> None:
    item = MacLaunchAgent(tmp_path, ["/Applications/ftdesk.app/Contents/MacOS/ftdesk"])
    assert not item.is_enabled()

    item.enable()

    agent = plistlib.loads(item.path.read_bytes())
    assert item.path == tmp_path / "Library" / "LaunchAgents" / "io.ftdesk.app.plist"
    assert agent["Label"] == "io.ftdesk.app"
    assert agent["ProgramArguments"] == ["/Applications/ftdesk.app/Contents/MacOS/ftdesk"]
    assert agent["RunAtLoad"] is True
    assert item.is_enabled()
    item.disable()
    assert not item.is_enabled()


def test_there_is_no_login_item_on_an_unknown_platform(tmp_path: Path) -> None:
    assert login_item_for_platform("emscripten", home=tmp_path, environ={}) is None


def test_the_login_command_of_a_source_install_really_starts_ftdesk() -> None:
    command = launch_command()
    assert command[0] == sys.executable
    result = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ftdesk {__version__}"


def test_the_command_line_turns_start_at_login_on_and_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG entry is the Linux login item")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    entry = tmp_path / "autostart" / "ftdesk.desktop"

    assert main(["--autostart", "on"]) == 0
    assert entry.is_file()
    assert capsys.readouterr().out.strip() == f"Start at login: on ({entry})"

    assert main(["--autostart", "status"]) == 0
    assert "Start at login: on" in capsys.readouterr().out

    assert main(["--autostart", "off"]) == 0
    assert not entry.exists()
    assert capsys.readouterr().out.strip() == f"Start at login: off ({entry})"


def test_the_command_line_says_why_the_entry_could_not_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG entry is the Linux login item")
    (tmp_path / "autostart").write_text("a file where the folder should be")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))

    assert main(["--autostart", "on"]) == 1

    err = capsys.readouterr().err
    assert "could not change" in err
    assert str(tmp_path / "autostart" / "ftdesk.desktop") in err
