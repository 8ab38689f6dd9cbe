#!/bin/sh
# Build the API reference (docs/api/Doxyfile) into OUT/html; any Doxygen warning fails (exit 1, warnings shown).
# Usage: build.sh SOURCE_ROOT BUILD_ROOT VERSION [OUT] — OUT defaults to BUILD_ROOT/docs/api. Exit 77 (skipped
# for meson test) without doxygen (Debian: apt-get install doxygen).
set -eu
src=$1
build=$2
version=$3
out=${4:-$build/docs/api}
command -v doxygen >/dev/null 2>&1 || { echo "skipped: doxygen not found (Debian: apt-get install doxygen)"; exit 77; }
inc=$build/libcore/include/attnmech
[ -f "$inc/version.h" ] || { echo "FAIL: $inc/version.h not generated (configure the build first)"; exit 1; }
mkdir -p "$out"
log=$out/doxygen-warnings.log
rc=0
ATTNMECH_SOURCE=$src ATTNMECH_BUILD_INCLUDE=$inc ATTNMECH_API_OUT=$out ATTNMECH_VERSION=$version \
  doxygen "$src/docs/api/Doxyfile" >"$out/doxygen.log" 2>"$log" || rc=$?
if [ "$rc" -ne 0 ] || [ -s "$log" ]; then
  cat "$log"
  echo "FAIL: doxygen exited $rc with $(wc -l <"$log") warning lines (docs/api/Doxyfile; the header comments)"
  exit 1
fi
n=$(find "$out/html" -name '*.html' | wc -l)
echo "API reference: $out/html/index.html ($n pages), no warnings"
