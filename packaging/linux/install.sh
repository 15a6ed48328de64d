#!/bin/sh
# Install ftdesk for the current user (no root needed), or remove it again.
#
#   ./install.sh                 install into ~/.local and add ftdesk to the app menu
#   ./install.sh --autostart     the same, and start ftdesk at login
#   ./install.sh --uninstall     remove the app, its menu entry, icons and login entry (your data stays)
#
# Files: the app in ~/.local/lib/ftdesk, a command in ~/.local/bin/ftdesk, the menu entry in
# ~/.local/share/applications/ftdesk.desktop, icons in ~/.local/share/icons/hicolor. The login entry is
# ~/.config/autostart/ftdesk.desktop, written by ftdesk itself (the same one its Settings dialog writes).
# Set PREFIX to install somewhere other than ~/.local.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-"$HOME/.local"}
app_dir="$prefix/lib/ftdesk"
bin_link="$prefix/bin/ftdesk"
menu_entry="$prefix/share/applications/ftdesk.desktop"
icon_root="$prefix/share/icons/hicolor"
data_dir="${XDG_DATA_HOME:-$HOME/.local/share}/ftdesk"
icon_sizes="16 22 24 32 48 64 128 256 512"

say() { printf '%s\n' "$*"; }
# Started by a double-click there is no terminal to read: say the outcome as a desktop notification too.
notify() {
    if [ ! -t 1 ] && command -v notify-send >/dev/null 2>&1; then
        notify-send --app-name=ftdesk --icon="$1" "ftdesk" "$2" 2>/dev/null || true
    fi
}
fail() {
    printf 'install.sh: %s\n' "$*" >&2
    notify dialog-error "Not installed: $*"
    exit 1
}

usage() {
    sed -n '2,12s/^# \{0,1\}//p' "$0"
}

refresh_menus() {
    # Desktops pick up new entries and icons by themselves; these only make it immediate where they exist.
    if command -v update-desktop-database >/dev/null 2>&1; then
        update-desktop-database -q "$prefix/share/applications" 2>/dev/null || true
    fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$icon_root/index.theme" ]; then
        gtk-update-icon-cache -q -t "$icon_root" 2>/dev/null || true
    fi
}

refuse_while_running() {
    # Replacing or removing the files of a running ftdesk would break what it loads later (Qt plugins).
    if command -v pgrep >/dev/null 2>&1 && pgrep -u "$(id -u)" -f -- "$app_dir/ftdesk" >/dev/null 2>&1; then
        fail "ftdesk is running: quit it first (tray menu > Quit), then run install.sh${1:+ $1} again"
    fi
}

uninstall() {
    refuse_while_running --uninstall
    if [ -x "$app_dir/ftdesk" ]; then
        "$app_dir/ftdesk" --autostart off >/dev/null 2>&1 || true
    fi
    autostart_entry="${XDG_CONFIG_HOME:-$HOME/.config}/autostart/ftdesk.desktop"
    rm -f "$autostart_entry"
    rm -rf "$app_dir"
    if [ -L "$bin_link" ]; then rm -f "$bin_link"; fi
    rm -f "$menu_entry"
    rm -f "$icon_root/scalable/apps/ftdesk.svg"
    for size in $icon_sizes; do
        rm -f "$icon_root/${size}x${size}/apps/ftdesk.png"
    done
    refresh_menus
    say "ftdesk is removed."
    notify user-trash "Removed. Your data stays in $data_dir."
    say "Your settings, paper accounts, order journal and logs stay in $data_dir; delete that folder to remove them too."
    say "The API key and stored credentials stay in your keychain under the service name ftdesk; remove them there."
}

check_glibc() {
    # The bundled Qt needs glibc 2.34 or newer (Debian 12, Ubuntu 22.04, Fedora 35 and later).
    version=$(ldd --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9]*\.[0-9][0-9]*\)$/\1/p')
    [ -n "$version" ] || return 0  # not glibc (musl?): let the app itself say what is missing
    major=${version%%.*}
    minor=${version#*.}
    if [ "$major" -lt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -lt 34 ]; }; then
        fail "this system has glibc $version; ftdesk needs 2.34 or newer (Debian 12, Ubuntu 22.04, Fedora 35 or later)"
    fi
}

# The shared libraries the tray's Qt (its xcb platform plugin) loads from the system, and the package that
# provides each: soname, Debian/Ubuntu, Fedora, Arch. ftdesk/gui/platform_probe.py holds the same table.
tray_library_packages() {
    cat <<'TABLE'
libxcb.so.1 libxcb1 libxcb libxcb
libxcb-cursor.so.0 libxcb-cursor0 xcb-util-cursor xcb-util-cursor
libxcb-icccm.so.4 libxcb-icccm4 xcb-util-wm xcb-util-wm
libxcb-keysyms.so.1 libxcb-keysyms1 xcb-util-keysyms xcb-util-keysyms
libxcb-image.so.0 libxcb-image0 xcb-util-image xcb-util-image
libxcb-util.so.1 libxcb-util1 xcb-util xcb-util
libxcb-render-util.so.0 libxcb-render-util0 xcb-util-renderutil xcb-util-renderutil
libxcb-randr.so.0 libxcb-randr0 libxcb libxcb
libxcb-render.so.0 libxcb-render0 libxcb libxcb
libxcb-shape.so.0 libxcb-shape0 libxcb libxcb
libxcb-shm.so.0 libxcb-shm0 libxcb libxcb
libxcb-sync.so.1 libxcb-sync1 libxcb libxcb
libxcb-xfixes.so.0 libxcb-xfixes0 libxcb libxcb
libxcb-xkb.so.1 libxcb-xkb1 libxcb libxcb
libxkbcommon.so.0 libxkbcommon0 libxkbcommon libxkbcommon
libxkbcommon-x11.so.0 libxkbcommon-x11-0 libxkbcommon-x11 libxkbcommon-x11
libX11.so.6 libx11-6 libX11 libx11
libX11-xcb.so.1 libx11-xcb1 libX11-xcb libx11
libGL.so.1 libgl1 libglvnd-glx libglvnd
libEGL.so.1 libegl1 libglvnd-egl libglvnd
libfontconfig.so.1 libfontconfig1 fontconfig fontconfig
libfreetype.so.6 libfreetype6 freetype freetype2
libglib-2.0.so.0 libglib2.0-0 glib2 glib2
libgthread-2.0.so.0 libglib2.0-0 glib2 glib2
libdbus-1.so.3 libdbus-1-3 dbus-libs dbus
libwayland-client.so.0 libwayland-client0 libwayland-client wayland
libwayland-cursor.so.0 libwayland-cursor0 libwayland-cursor wayland
TABLE
}

os_family() {
    # debian, fedora or arch, from ID and ID_LIKE in os-release (as ftdesk reads them); nothing if none fits
    release=/etc/os-release
    [ -r "$release" ] || release=/usr/lib/os-release
    [ -r "$release" ] || return 0
    for id in $(sed -n -e 's/^ID=//p' -e 's/^ID_LIKE=//p' "$release" | tr -d "\"'" | tr '[:upper:]' '[:lower:]'); do
        case "$id" in
            debian|ubuntu|linuxmint|pop|elementary|raspbian|kali|neon) echo debian; return 0 ;;
            fedora|rhel|centos|rocky|almalinux|nobara) echo fedora; return 0 ;;
            arch|manjaro|endeavouros|cachyos|garuda) echo arch; return 0 ;;
        esac
    done
}

install_command() {
    # $1: the family, $2: the table column (2 Debian, 3 Fedora, 4 Arch), $3...: the missing sonames
    family=$1 column=$2
    shift 2
    packages=""
    for soname in "$@"; do
        package=$(tray_library_packages | awk -v soname="$soname" -v column="$column" '$1 == soname { print $column }')
        case " $packages " in *" $package "*) ;; *) packages="${packages:+$packages }$package" ;; esac
    done
    case "$family" in
        debian) printf 'sudo apt install %s' "$packages" ;;
        fedora) printf 'sudo dnf install %s' "$packages" ;;
        arch) printf 'sudo pacman -S %s' "$packages" ;;
    esac
}

check_tray_libraries() {
    # Qt's xcb plugin cannot load without these, and the tray would not start: ftdesk then serves its API
    # headless and says why at every start. Name the packages now; the install itself does not need them.
    tray_fix=""
    plugin=$(find "$app_dir/_internal" -name libqxcb.so 2>/dev/null | head -n 1)
    if [ -z "$plugin" ] || ! command -v ldd >/dev/null 2>&1; then
        return 0
    fi
    # The bundle's own libraries are found through the bundle (as the app finds them), so only the system's
    # are reported; ldd stops at a library that exists but does not load, naming it.
    report=$(LD_LIBRARY_PATH="$app_dir/_internal${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$plugin" 2>&1) || true
    missing=$(printf '%s\n' "$report" | sed -n \
        -e 's/^[[:space:]]*\([^[:space:]]*\) => not found.*/\1/p' \
        -e 's/.*error while loading shared libraries: \([^:]*\): .*/\1/p' \
        | sed 's|.*/||' | grep -v -E '^lib(Qt6|icu|pyside6|shiboken6)' | sort -u | tr '\n' ' ')
    [ -n "$missing" ] || return 0
    known="" unknown=""
    for soname in $missing; do
        if tray_library_packages | awk -v soname="$soname" '$1 == soname { found = 1 } END { exit !found }'; then
            known="$known $soname"
        else
            unknown="$unknown $soname"
        fi
    done
    say "Note: the tray needs libraries this system lacks:${known}${unknown}. Until they are installed, ftdesk"
    say "serves its API without the tray (and says why when it starts)."
    if [ -n "$known" ]; then
        family=$(os_family)
        # shellcheck disable=SC2086  # one argument per soname
        case "$family" in
            debian) tray_fix=$(install_command debian 2 $known) ;;
            fedora) tray_fix=$(install_command fedora 3 $known) ;;
            arch) tray_fix=$(install_command arch 4 $known) ;;
        esac
        if [ -n "$tray_fix" ]; then
            say "  Install them with: $tray_fix"
        else
            tray_fix="the packages that provide${known}"
            say "  Debian/Ubuntu: $(install_command debian 2 $known)"
            say "  Fedora: $(install_command fedora 3 $known)"
            say "  Arch: $(install_command arch 4 $known)"
        fi
    fi
    if [ -n "$unknown" ]; then
        say "  Install the package that provides${unknown}."
        tray_fix="${tray_fix:+$tray_fix; }the package that provides${unknown}"
    fi
}

desktop_exec() {
    # Quote the path as the Desktop Entry spec asks: inside quotes, " ` $ \ take a backslash, and the
    # value as a whole doubles every backslash; a literal % is written %%.
    printf '"%s"' "$(printf '%s' "$1" | sed -e 's/[\\"`$]/\\\\&/g' -e 's/%/%%/g')"
}

install_app() {
    [ -x "$here/ftdesk/ftdesk" ] || fail "no ftdesk/ftdesk next to this script: run it from the unpacked archive"
    check_glibc
    refuse_while_running ""
    mkdir -p "$prefix/lib" "$prefix/bin" "$prefix/share/applications"

    # Copy beside the old version, then swap, so a failed copy never leaves half an app behind.
    rm -rf "$app_dir.new"
    cp -R "$here/ftdesk" "$app_dir.new"
    rm -rf "$app_dir"
    mv "$app_dir.new" "$app_dir"
    ln -sfn "$app_dir/ftdesk" "$bin_link"

    resources="$app_dir/_internal/resources"
    for size in $icon_sizes; do
        mkdir -p "$icon_root/${size}x${size}/apps"
        cp "$resources/icons/png/ftdesk-$size.png" "$icon_root/${size}x${size}/apps/ftdesk.png"
    done
    mkdir -p "$icon_root/scalable/apps"
    cp "$resources/icons/ftdesk.svg" "$icon_root/scalable/apps/ftdesk.svg"

    # Line by line rather than sed: the path may hold characters a sed replacement would interpret (& \ |).
    exec_value=$(desktop_exec "$app_dir/ftdesk")
    while IFS= read -r line; do
        case "$line" in
            Exec=*) printf 'Exec=%s\n' "$exec_value" ;;
            *) printf '%s\n' "$line" ;;
        esac
    done < "$resources/ftdesk.desktop" > "$menu_entry.tmp"
    mv "$menu_entry.tmp" "$menu_entry"
    chmod 644 "$menu_entry"
    refresh_menus

    if [ "$autostart" = yes ]; then
        "$app_dir/ftdesk" --autostart on
    elif "$app_dir/ftdesk" --autostart status 2>/dev/null | grep -q ': on '; then
        "$app_dir/ftdesk" --autostart on >/dev/null  # an earlier install's entry: point it at this one
    fi

    say "ftdesk $("$app_dir/ftdesk" --version | sed 's/^ftdesk //') is installed in $app_dir."
    check_tray_libraries
    if [ -n "$tray_fix" ]; then
        notify "$icon_root/256x256/apps/ftdesk.png" "Installed. For the tray, install: $tray_fix"
    else
        notify "$icon_root/256x256/apps/ftdesk.png" "Installed. Start ftdesk from your app menu."
    fi
    say "Start it from your app menu (ftdesk), or run: $bin_link"
    case ":$PATH:" in
        *":$prefix/bin:"*) ;;
        *) say "($prefix/bin is not on your PATH; the menu entry works regardless.)" ;;
    esac
    if [ "$autostart" != yes ]; then
        say "To start it at login: tick Settings > Start ftdesk when I log in, or run: $bin_link --autostart on"
    fi
}

autostart=no
action=install
for argument in "$@"; do
    case "$argument" in
        --autostart) autostart=yes ;;
        --uninstall) action=uninstall ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; fail "unknown option: $argument" ;;
    esac
done

if [ "$action" = uninstall ]; then
    uninstall
else
    install_app
fi
