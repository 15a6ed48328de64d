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
    notify "$icon_root/256x256/apps/ftdesk.png" "Installed. Start ftdesk from your app menu."
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
