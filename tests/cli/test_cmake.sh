#!/bin/sh
# CMake package test (README.md "Install", CMake): `meson install --destdir`, move the prefix elsewhere, then build
# examples/cmake with `cmake -DCMAKE_PREFIX_PATH=<moved prefix>` only and run what it built under `env -i`:
#   * hello (attnmech::attnmech): the library, the header and the package agree on the version; the library
#     finds its plugin dir inside the moved prefix (= the package's attnmech_PLUGIN_DIR);
#   * embed (attnmech::report): runs markov and writes results.json and its plots;
#   * am-teacher (attnmech::plugin): exports only am_plugin_entry and the moved CLI lists and runs it;
#   * find_package(attnmech 4) and find_package(attnmech 3.99) are refused with the installed version named;
#     a prefix whose library is gone fails at configure time naming the missing file.
# Usage: test_cmake.sh BUILD_ROOT SANITIZE EXAMPLES_DIR (examples). Exit 77 (skipped) in sanitizer builds and
# without cmake, nm or make/ninja.
set -eu
build=$1
sanitize=$2
examples=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/install_common.sh"
skip_unless_plain_build "$sanitize" cmake nm
make_tmp attnmech-cmake

install_to_destdir "$build"
mkdir -p "$tmp/some where"  # a space in the path: every path of the package must be quoted
mv "$tmp/root$prefix" "$tmp/some where/moved"
rm -rf "$tmp/root"
p="$tmp/some where/moved"
config=$(find "$p" -name attnmech-config.cmake | head -n 1)
[ -n "$config" ] || fail "attnmech-config.cmake not installed"
[ -f "$(dirname "$config")/attnmech-config-version.cmake" ] || fail "attnmech-config-version.cmake not installed"
lib=$(find "$p" -name 'libattnmech.so.*' -type f | head -n 1)
libdir=$(dirname "$lib")
[ "$(dirname "$config")" = "$libdir/cmake/attnmech" ] || fail "config at $config, not in $libdir/cmake/attnmech"
grep -n "$prefix" "$config" && fail "the config names the install prefix $prefix (not relocatable)"
exe=$(find "$p" -type f -path "*/bin/attnmech" | head -n 1)  # not share/bash-completion/completions/attnmech
echo "moved to $p; package ${config#"$p"/}"

# ---- configure, build and run the consumer
# Ninja, which attnmech's own build needs anyway: CMake's default generator wants make, which a minimal Debian
# (debootstrap --variant=minbase + .ci/setup) does not have.
cp -r "$examples/cmake" "$examples/embed" "$examples/plugins" "$tmp/"
cmake -S "$tmp/cmake" -B "$tmp/b" -G Ninja -DCMAKE_PREFIX_PATH="$p" >"$tmp/configure.log" 2>&1 || {
  cat "$tmp/configure.log"
  fail "cmake configure of examples/cmake"
}
grep 'attnmech 3' "$tmp/configure.log"
cmake --build "$tmp/b" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "cmake --build"; }
env -i "$tmp/b/hello" >"$tmp/hello.txt" 2>&1 || { cat "$tmp/hello.txt"; fail "hello"; }
cat "$tmp/hello.txt"
got=$(sed -n 's/.*plugins in //p' "$tmp/hello.txt")
[ "$(cd "$got" && pwd -P)" = "$(cd "$libdir"/attnmech-plugins-* && pwd -P)" ] || fail "the library looks for plugins in $got"
grep -qF "plugins in $got" "$tmp/configure.log" || fail "attnmech_PLUGIN_DIR (configure log) is not $got"
env -i OPENBLAS_NUM_THREADS=1 "$tmp/b/embed" "$tmp/out" markov P=20 P_test=20 threads=1 >"$tmp/embed.txt" 2>&1 ||
  { cat "$tmp/embed.txt"; fail "embed markov"; }
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["report"]["plots"], "no plots"' \
  "$tmp/out/results.json" || fail "embed wrote no results.json with plots"
ls "$tmp/out"/*.svg >/dev/null || fail "embed drew no SVG"
extra=$(nm -D --defined-only "$tmp/b/am-teacher.so" | awk '{print $NF}' | grep -vx am_plugin_entry || true)
[ -z "$extra" ] || fail "am-teacher.so exports more than am_plugin_entry: $extra"
env -i AM_PLUGIN_PATH="$tmp/b" "$exe" list >"$tmp/list.txt" 2>&1 || { cat "$tmp/list.txt"; fail "list"; }
grep -q "^  teacher " "$tmp/list.txt" || { cat "$tmp/list.txt"; fail "the CMake-built plugin is not listed"; }
(cd "$tmp" && env -i AM_PLUGIN_PATH="$tmp/b" "$exe" run teacher --quiet --set P=40 --set P_test=40 --out teacher) \
  >"$tmp/run.txt" 2>&1 || { cat "$tmp/run.txt"; fail "run teacher (built by CMake)"; }
echo "consumer: hello, embed (markov: $(find "$tmp/out" -type f | wc -l) files), am-teacher.so (listed, ran)"

# ---- versions the package must refuse, and a prefix with the library gone
for want in 4 3.99; do
  mkdir -p "$tmp/v$want"
  printf 'cmake_minimum_required(VERSION 3.13)\nproject(v C)\nfind_package(attnmech %s REQUIRED)\n' "$want" \
    >"$tmp/v$want/CMakeLists.txt"
  if cmake -S "$tmp/v$want" -B "$tmp/v$want/b" -G Ninja -DCMAKE_PREFIX_PATH="$p" >"$tmp/v.log" 2>&1; then
    fail "find_package(attnmech $want) accepted the installed version"
  fi
  grep -q 'version: 3\.' "$tmp/v.log" || { cat "$tmp/v.log"; fail "find_package(attnmech $want): no installed version named"; }
done
rm "$lib"
sed -i 's/find_package(attnmech 4 REQUIRED)/find_package(attnmech REQUIRED)/' "$tmp/v4/CMakeLists.txt"
if cmake -S "$tmp/v4" -B "$tmp/gone" -G Ninja -DCMAKE_PREFIX_PATH="$p" >"$tmp/gone.log" 2>&1; then
  fail "find_package(attnmech) accepted a prefix without its library"
fi
grep -q "${lib##*/}.*does not exist" "$tmp/gone.log" || { cat "$tmp/gone.log"; fail "the missing library is not named"; }
echo "refused: find_package(attnmech 4), (attnmech 3.99), a prefix without ${lib##*/}"
echo "PASS"
