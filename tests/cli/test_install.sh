#!/bin/sh
# Install test (README.md "Install"): `meson install --destdir`, then move the whole prefix somewhere else
# and check that everything still works where it landed, with no environment:
#   * the moved CLI runs under `env -i` (RUNPATH $ORIGIN/../<libdir>), lists all the plugins (found next
#     to the library, <libdir>/attnmech-plugins-<ABI>) and runs a small markov job;
#   * readelf: RUNPATH with $ORIGIN on the CLI and on every plugin; nm -D: each plugin exports only
#     am_plugin_entry;
#   * the moved attnmech.pc (PKG_CONFIG_PATH only, no sysroot trick) compiles and runs a C99 program and
#     every installed header alone; the program's run-time library path is the .pc's `libdir` variable
#     (-Wl,-rpath,$(pkg-config --variable=libdir attnmech)) — the one thing a prefix outside the loader's
#     search path needs; the program also checks that the library finds its plugin dir next to itself;
#   * an out-of-tree plugin built with the pkg-config recipe (plugin_cflags / plugin_libs, and
#     attnmech-plugin.pc) exports only am_plugin_entry and is listed by the moved CLI;
#   * a moved prefix without plugins and an empty AM_PLUGIN_PATH dir: `list` warns on stderr, names the
#     directories it searched and exits 1; `run markov` says no plugins were found and where it looked.
# Usage: test_install.sh BUILD_ROOT SANITIZE CC CXX EXAMPLE_PLUGIN_SOURCE
# Exit 77 (= skipped for meson) in sanitizer builds and when pkg-config/readelf/nm is missing.
set -eu
build=$1
sanitize=$2
cc=$3
cxx=$4
example_src=$5
if [ "$sanitize" != "none" ]; then
  echo "skipped: built with -fsanitize=$sanitize (the installed tree would need the sanitizer runtime)"
  exit 77
fi
for tool in pkg-config readelf nm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool not found"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnmech-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() {
  echo "FAIL: $*"
  exit 1
}

# ---- install into a destdir, then move the prefix elsewhere (another depth, another name)
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"
  fail "meson install"
}
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
[ -d "$tmp/root$prefix" ] || fail "nothing installed under the prefix $prefix"
echo "installed (prefix $prefix):"
(cd "$tmp/root$prefix" && find . | sort | sed 's/^/  /')
mkdir -p "$tmp/else/where"
mv "$tmp/root$prefix" "$tmp/else/where/moved"
rm -rf "$tmp/root"
p="$tmp/else/where/moved"
echo "moved to $p"

exe=$(find "$p" -type f -name attnmech | head -n 1)
[ -n "$exe" ] || fail "attnmech not installed"
lib=$(find "$p" -name 'libattnmech.so.*' -type f | head -n 1)
[ -n "$lib" ] || fail "libattnmech not installed"
libdir=$(dirname "$lib")
plugdir=$(find "$p" -type d -name 'attnmech-plugins-*' | head -n 1)
[ -n "$plugdir" ] || fail "plugin dir not installed"
[ "$(dirname "$plugdir")" = "$libdir" ] || fail "plugin dir $plugdir is not next to the library ($libdir)"
pc=$(find "$p" -name attnmech.pc | head -n 1)
[ -n "$pc" ] || fail "attnmech.pc not installed"
pcdir=$(dirname "$pc")
[ -f "$pcdir/attnmech-plugin.pc" ] || fail "attnmech-plugin.pc not installed"
[ -f "$libdir/attnmech/plugin.map" ] || fail "plugin.map not installed in $libdir/attnmech"
readelf -d "$lib" | grep -q 'SONAME.*libattnmech\.so\.[0-9]' || fail "no soname on $lib"

# ---- where the library went: on a /usr/local install it must be on the loader's and pkg-config's paths
rel_libdir=${libdir#"$p"/}
if [ "$prefix" = /usr/local ]; then
  cat /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null | grep -qx "/usr/local/$rel_libdir" ||
    fail "/usr/local/$rel_libdir is not on the loader's path (/etc/ld.so.conf.d)"
  echo ":$(pkg-config --variable pc_path pkg-config):" | grep -q ":/usr/local/$rel_libdir/pkgconfig:" ||
    fail "/usr/local/$rel_libdir/pkgconfig is not on pkg-config's default path"
  echo "libdir /usr/local/$rel_libdir: on the loader's and pkg-config's default paths"
fi

# ---- RUNPATH and exports
readelf -d "$exe" | grep -E 'RUNPATH|RPATH' | grep -q '\$ORIGIN' || { readelf -d "$exe"; fail "no \$ORIGIN RUNPATH on $exe"; }
echo "CLI: $(readelf -d "$exe" | grep -E 'RUNPATH|RPATH' | sed 's/.*\[/[/')"
exports_only_entry() {
  extra=$(nm -D --defined-only "$1" | awk '{print $NF}' | grep -vx am_plugin_entry || true)
  [ -z "$extra" ] || fail "$1 exports more than am_plugin_entry: $(echo "$extra" | head -n 5 | tr '\n' ' ')"
  nm -D --defined-only "$1" | grep -q ' T am_plugin_entry$' || fail "$1 does not export am_plugin_entry"
}
n_mod=0
for m in "$plugdir"/*.so; do
  readelf -d "$m" | grep -E 'RUNPATH|RPATH' | grep -q '\$ORIGIN' || fail "no \$ORIGIN RUNPATH on $m"
  exports_only_entry "$m"
  n_mod=$((n_mod + 1))
done
echo "plugins: $n_mod modules, each with \$ORIGIN RUNPATH and only am_plugin_entry exported"
[ "$n_mod" -ge 9 ] || fail "expected 9 plugin modules, found $n_mod"

# ---- the moved CLI with no environment at all
cd "$tmp"
env -i "$exe" --version || fail "env -i attnmech --version (library not found through RUNPATH?)"
env -i "$exe" list >"$tmp/list.txt" 2>"$tmp/list.err" || { cat "$tmp/list.txt" "$tmp/list.err"; fail "env -i attnmech list"; }
cat "$tmp/list.txt"
for name in markov npy potts oneshot theory posterior pseudolikelihood vanilla replica; do
  grep -q "^  $name " "$tmp/list.txt" || fail "installed plugin '$name' not listed"
done
grep -q "attnmech-plugins-.*install dir, 9 plugins" "$tmp/list.txt" || fail "list does not show the install dir it searched"
[ ! -s "$tmp/list.err" ] || { cat "$tmp/list.err"; fail "list wrote to stderr"; }
env -i "$exe" run markov --width 10 --set P=20 --set P_test=20 >"$tmp/run.txt" 2>&1 || {
  cat "$tmp/run.txt"
  fail "env -i attnmech run markov"
}
tail -n 3 "$tmp/run.txt"

# ---- pkg-config from the moved .pc: a C99 program, the headers alone
pc() { PKG_CONFIG_PATH="$pcdir" pkg-config "$@"; }
flags=$(pc --cflags --libs attnmech) || fail "pkg-config --cflags --libs attnmech"
pc_libdir=$(pc --variable=libdir attnmech)
echo "pkg-config --cflags --libs attnmech: $flags"
echo "pkg-config --variable=libdir attnmech: $pc_libdir"
[ "$(cd "$pc_libdir" && pwd -P)" = "$(cd "$libdir" && pwd -P)" ] || fail "the moved .pc names libdir $pc_libdir, not $libdir"
cat >"$tmp/t.c" <<'CEOF'
#include <attnmech/attnmech.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  printf("am_version() = %s, ABI %u, soname %d, plugins in %s\n", am_version(), (unsigned)am_abi_version(),
         AM_SOVERSION, am_registry_install_dir());
  return strcmp(am_version(), AM_VERSION_STRING) != 0 || am_abi_version() != AM_ABI_VERSION;
}
CEOF
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -pedantic-errors -Werror "$tmp/t.c" -o "$tmp/t" $flags "-Wl,-rpath,$pc_libdir" ||
  fail "compile against the moved prefix"
env -i "$tmp/t" >"$tmp/t.txt" || { cat "$tmp/t.txt"; fail "program"; }
cat "$tmp/t.txt"
got=$(sed -n 's/.*plugins in //p' "$tmp/t.txt")
[ "$(cd "$got" && pwd -P)" = "$(cd "$plugdir" && pwd -P)" ] || fail "am_registry_install_dir() = $got, not $plugdir"
n_hdr=0
for h in "$(pc --variable=includedir attnmech)"/attnmech/*.h; do
  printf '#include <attnmech/%s>\nint header_test_dummy(void);\nint header_test_dummy(void) { return 0; }\n' \
    "$(basename "$h")" >"$tmp/h.c"
  # shellcheck disable=SC2046
  "$cc" -std=c99 -pedantic-errors -Werror -c "$tmp/h.c" -o "$tmp/h.o" $(pc --cflags attnmech) || fail "installed $h alone (C99)"
  cp "$tmp/h.c" "$tmp/h.cpp"
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -pedantic-errors -Werror -c "$tmp/h.cpp" -o "$tmp/h.o" $(pc --cflags attnmech) || fail "installed $h alone (C++17)"
  n_hdr=$((n_hdr + 1))
done
echo "installed headers compiled alone (C99 and C++17): $n_hdr"

# ---- an out-of-tree plugin through pkg-config: the variables of attnmech.pc, and attnmech-plugin.pc
mkdir -p "$tmp/myplugins"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -O1 -shared -fPIC $(pc --cflags attnmech) $(pc --variable=plugin_cflags attnmech) "$example_src" \
  -o "$tmp/myplugins/am-example.so" $(pc --libs attnmech) $(pc --variable=plugin_libs attnmech) ||
  fail "out-of-tree plugin (plugin_cflags/plugin_libs)"
exports_only_entry "$tmp/myplugins/am-example.so"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -O1 -shared -fPIC "$example_src" -o "$tmp/am-example2.so" $(pc --cflags --libs attnmech-plugin) ||
  fail "out-of-tree plugin (attnmech-plugin.pc)"
exports_only_entry "$tmp/am-example2.so"
env -i AM_PLUGIN_PATH="$tmp/myplugins" "$exe" list >"$tmp/list2.txt" 2>&1 || { cat "$tmp/list2.txt"; fail "list with AM_PLUGIN_PATH"; }
grep -q '^  example ' "$tmp/list2.txt" || { cat "$tmp/list2.txt"; fail "out-of-tree plugin not listed"; }
grep -q '^  markov ' "$tmp/list2.txt" || fail "AM_PLUGIN_PATH hid the installed plugins"
echo "out-of-tree plugin: built with the pkg-config recipe, exports only am_plugin_entry, listed"

# ---- a moved prefix without plugins, an empty AM_PLUGIN_PATH dir: list warns and exits 1
mv "$plugdir" "$tmp/plugins-away"
mkdir -p "$tmp/empty"
rc=0
env -i AM_PLUGIN_PATH="$tmp/empty" "$exe" list >"$tmp/list3.txt" 2>"$tmp/list3.err" || rc=$?
cat "$tmp/list3.err"
[ "$rc" -eq 1 ] || fail "list with no plugins anywhere exited $rc (expected 1)"
grep -q 'warning: no plugins found' "$tmp/list3.err" || fail "no warning on stderr"
grep -qF "$tmp/empty (AM_PLUGIN_PATH, no plugins)" "$tmp/list3.err" || fail "the warning does not name the AM_PLUGIN_PATH dir"
grep -q 'attnmech-plugins-[0-9]* (install dir, missing)' "$tmp/list3.err" || fail "the warning does not name the install dir"
rc=0
env -i AM_PLUGIN_PATH="$tmp/empty" "$exe" run markov >"$tmp/run3.txt" 2>&1 || rc=$?
cat "$tmp/run3.txt"
[ "$rc" -ne 0 ] || fail "run markov without plugins succeeded"
grep -q 'no plugins were found at all' "$tmp/run3.txt" || fail "run does not say that no plugins were found"
grep -qF "$tmp/empty" "$tmp/run3.txt" || fail "run does not say where it looked"
echo "PASS"
