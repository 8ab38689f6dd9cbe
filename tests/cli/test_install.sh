#!/bin/sh
# Install test: `meson install --destdir` into a temporary directory, then build a tiny C program against
# the installed headers and library through pkg-config and run it; also run the installed CLI with the
# installed plugins. Usage: test_install.sh BUILD_ROOT SANITIZE CC
# Exit 77 (= skipped for meson) in sanitizer builds and when pkg-config is missing.
set -eu
build=$1
sanitize=$2
cc=$3
if [ "$sanitize" != "none" ]; then
  echo "skipped: built with -fsanitize=$sanitize"
  exit 77
fi
if ! command -v pkg-config >/dev/null 2>&1; then
  echo "skipped: pkg-config not found"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnmech-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
root="$tmp/root"

meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"
  echo "FAIL: meson install"
  exit 1
}

pc=$(find "$root" -name attnmech.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: attnmech.pc not installed"; exit 1; }
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
[ -f "$(find "$root" -path '*/include/attnmech/attnmech.h' | head -n 1)" ] || { echo "FAIL: headers not installed"; exit 1; }

cat >"$tmp/t.c" <<'CEOF'
#include <attnmech/attnmech.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  char expect[32];
  snprintf(expect, sizeof expect, "%d.%d.%d", AM_VERSION_MAJOR, AM_VERSION_MINOR, AM_VERSION_PATCH);
  printf("am_version() = %s, ABI %u\n", am_version(), (unsigned)am_abi_version());
  return strcmp(am_version(), expect) != 0 || am_abi_version() != AM_ABI_VERSION;
}
CEOF

# The .pc file names the final prefix; PKG_CONFIG_SYSROOT_DIR maps it into the destdir.
flags=$(PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags --libs attnmech) || {
  echo "FAIL: pkg-config --cflags --libs attnmech"
  exit 1
}
echo "pkg-config: $flags"
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Werror "$tmp/t.c" -o "$tmp/t" $flags "-Wl,-rpath,$libdir" || { echo "FAIL: compile"; exit 1; }
"$tmp/t" || { echo "FAIL: program"; exit 1; }

# The installed CLI with the installed plugins (the ABI-named plugin dir).
plugdir=$(find "$root" -type d -name 'attnmech-plugins-*' | head -n 1)
[ -n "$plugdir" ] || { echo "FAIL: plugin dir not installed"; exit 1; }
exe=$(find "$root" -type f -name attnmech -perm -u+x | head -n 1)
[ -n "$exe" ] || { echo "FAIL: attnmech not installed"; exit 1; }
LD_LIBRARY_PATH="$libdir" "$exe" --version || { echo "FAIL: attnmech --version"; exit 1; }
LD_LIBRARY_PATH="$libdir" AM_PLUGIN_PATH="$plugdir" "$exe" list >"$tmp/list.txt" 2>&1 || {
  cat "$tmp/list.txt"
  echo "FAIL: attnmech list"
  exit 1
}
cat "$tmp/list.txt"
grep -q '^  theory ' "$tmp/list.txt" || { echo "FAIL: installed theory plugin not listed"; exit 1; }
echo "PASS"
