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
#   * the plugin guide's examples (docs/writing-a-plugin.md), built out of tree with the guide's commands and
#     the moved prefix's pkg-config only (attnmech-plugin.pc; centroid.cpp also with attnmech.pc's
#     plugin_cflags / plugin_libs): at most 40 lines of ceremony each (ceremony.py), only am_plugin_entry
#     exported, listed by the moved CLI, their parameters in `help`, and `run teacher --estimator centroid`
#     draws the plots both plugins declare;
#   * a moved prefix without plugins and an empty AM_PLUGIN_PATH dir: `list` warns on stderr, names the
#     directories it searched and exits 1; `run markov` says no plugins were found and where it looked.
# Usage: test_install.sh BUILD_ROOT SANITIZE CC CXX EXAMPLES_DIR (examples/plugins)
# Exit 77 (= skipped for meson) in sanitizer builds and when pkg-config/readelf/nm is missing.
set -eu
build=$1
sanitize=$2
cc=$3
cxx=$4
examples=$5
here=$(cd "$(dirname "$0")" && pwd)
. "$here/install_common.sh"
skip_unless_plain_build "$sanitize" pkg-config readelf nm python3
make_tmp attnmech-install

# ---- install into a destdir, then move the prefix elsewhere (another depth, another name)
install_to_destdir "$build"
[ -d "$tmp/root$prefix" ] || fail "nothing installed under the prefix $prefix"
echo "installed (prefix $prefix):"
(cd "$tmp/root$prefix" && find . | sort | sed 's/^/  /')
mkdir -p "$tmp/else/where"
mv "$tmp/root$prefix" "$tmp/else/where/moved"
rm -rf "$tmp/root"
p="$tmp/else/where/moved"
echo "moved to $p"

exe=$(find "$p" -type f -path "*/bin/attnmech" | head -n 1)  # not share/bash-completion/completions/attnmech
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
[ "$n_mod" -ge 11 ] || fail "expected 11 plugin modules, found $n_mod"

# ---- the moved CLI with no environment at all
cd "$tmp"
env -i "$exe" --version || fail "env -i attnmech --version (library not found through RUNPATH?)"
env -i "$exe" list >"$tmp/list.txt" 2>"$tmp/list.err" || { cat "$tmp/list.txt" "$tmp/list.err"; fail "env -i attnmech list"; }
cat "$tmp/list.txt"
for name in markov npy potts oneshot msa theory posterior pseudolikelihood meanfield vanilla replica; do
  grep -q "^  $name " "$tmp/list.txt" || fail "installed plugin '$name' not listed"
done
grep -q "attnmech-plugins-.*install dir, 11 plugins" "$tmp/list.txt" || fail "list does not show the install dir it searched"
# An installed CLI has no build tree beside it: `searched:` must not name <prefix>/bin/../plugins as one (missing).
! grep -q "build tree" "$tmp/list.txt" || fail "an installed list names a build-tree location"
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
  am_registry_summary s = {sizeof s, 0, 0, 0, NULL};
  if (am_registry_info(NULL, &s) != AM_OK) return 1;
  printf("am_version() = %s, ABI %u, soname %d, plugins in %s\n", am_version(), (unsigned)am_abi_version(),
         AM_SOVERSION, s.install_dir);
  return strcmp(am_version(), AM_VERSION_STRING) != 0 || am_abi_version() != AM_ABI_VERSION;
}
CEOF
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -pedantic-errors -Werror "$tmp/t.c" -o "$tmp/t" $flags "-Wl,-rpath,$pc_libdir" ||
  fail "compile against the moved prefix"
env -i "$tmp/t" >"$tmp/t.txt" || { cat "$tmp/t.txt"; fail "program"; }
cat "$tmp/t.txt"
got=$(sed -n 's/.*plugins in //p' "$tmp/t.txt")
[ "$(cd "$got" && pwd -P)" = "$(cd "$plugdir" && pwd -P)" ] || fail "am_registry_info install_dir = $got, not $plugdir"
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

# ---- the embedding example (docs/embedding.md), built with the moved prefix's pkg-config only, writes the same
# results directories as the moved CLI (tests/embed/test_embed.py: markov/theory, potts/pseudolikelihood, replica;
# every file, .npy and .svg byte for byte; results.json but timings, plugin paths, thread counts, versions).
# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -pedantic-errors -Werror "$examples/../embed/embed.c" -o "$tmp/embed" \
  $(pc --cflags --libs attnmech-report) "-Wl,-rpath,$pc_libdir" || fail "embed.c against the moved prefix"
env -i PATH="$PATH" OPENBLAS_NUM_THREADS=1 python3 "$here/../embed/test_embed.py" "$tmp/embed" "$exe" ||
  fail "the installed embedding example and the installed CLI disagree"

# ---- the guide's two examples (docs/writing-a-plugin.md), out of tree, with only the moved prefix's pkg-config:
# exactly the guide's commands (cc/c++ are the configured compilers; attnmech is the moved CLI under env -i)
mkdir -p "$tmp/myplugins"
cp "$examples/teacher.c" "$examples/centroid.cpp" "$tmp/myplugins/" || fail "copy the examples from $examples"
for f in teacher.c centroid.cpp; do  # ceremony: non-blank, non-comment lines outside the science fences
  python3 "$here/ceremony.py" "$tmp/myplugins/$f" 40 || fail "$f: more than 40 lines of ceremony"
done
(
  cd "$tmp/myplugins"
  export PKG_CONFIG_PATH="$pcdir"
  # shellcheck disable=SC2046
  "$cc" -std=c99 -O2 -shared -fPIC teacher.c -o am-teacher.so $(pkg-config --cflags --libs attnmech-plugin) ||
    fail "teacher.c (attnmech-plugin.pc)"
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -O2 -shared -fPIC centroid.cpp -o am-centroid.so $(pkg-config --cflags --libs attnmech-plugin) ||
    fail "centroid.cpp (attnmech-plugin.pc)"
  # shellcheck disable=SC2046
  "$cxx" -std=c++17 -O2 -shared -fPIC $(pkg-config --cflags attnmech) $(pkg-config --variable=plugin_cflags attnmech) \
    centroid.cpp -o "$tmp/am-centroid2.so" $(pkg-config --libs attnmech) $(pkg-config --variable=plugin_libs attnmech) ||
    fail "centroid.cpp (plugin_cflags / plugin_libs of attnmech.pc)"
) || exit 1
for m in "$tmp/myplugins/am-teacher.so" "$tmp/myplugins/am-centroid.so" "$tmp/am-centroid2.so"; do
  exports_only_entry "$m"
done
am() { env -i AM_PLUGIN_PATH="$tmp/myplugins" "$exe" "$@"; }
am list >"$tmp/list2.txt" 2>&1 || { cat "$tmp/list2.txt"; fail "list with AM_PLUGIN_PATH"; }
for name in teacher centroid markov; do
  grep -q "^  $name " "$tmp/list2.txt" || { cat "$tmp/list2.txt"; fail "'$name' not listed with AM_PLUGIN_PATH"; }
done
am help teacher >"$tmp/help-teacher.txt" || fail "help teacher"
am help centroid >"$tmp/help-centroid.txt" || fail "help centroid"
for p in P P_test tokens dim beta; do
  grep -q "^  $p " "$tmp/help-teacher.txt" || { cat "$tmp/help-teacher.txt"; fail "help teacher: no parameter $p"; }
done
grep -q "^  shrink " "$tmp/help-centroid.txt" || { cat "$tmp/help-centroid.txt"; fail "help centroid: no parameter shrink"; }
(cd "$tmp/myplugins" && am run teacher --estimator centroid --out teacher-out) >"$tmp/run2.txt" 2>&1 ||
  { cat "$tmp/run2.txt"; fail "run teacher --estimator centroid"; }
cat "$tmp/run2.txt"
plots=$(python3 -c 'import json, sys; print(" ".join(p["file"] for p in json.load(open(sys.argv[1]))["report"]["plots"]))' \
  "$tmp/myplugins/teacher-out/results.json") || fail "results.json has no report"
for f in teacher_accuracy centroid_accuracy; do
  case " $plots " in *" $f "*) ;; *) fail "report does not declare $f (plots: $plots)" ;; esac
done
for f in $plots; do
  grep -q '<svg' "$tmp/myplugins/teacher-out/$f.svg" 2>/dev/null || fail "plot $f.svg not drawn"
done
echo "examples: teacher.c (C99) and centroid.cpp (C++17) built with pkg-config only, export only am_plugin_entry,"
echo "  listed, their parameters in help, run teacher --estimator centroid drew: $plots"

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
