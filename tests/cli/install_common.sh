# Sourced by the install tests (test_install.sh, test_cmake.sh; POSIX sh). Provides:
#   skip_unless_plain_build SANITIZE TOOL...   exit 77 (skipped) in a sanitizer build or when a tool is missing
#   make_tmp NAME                              $tmp: a fresh directory, removed on exit
#   fail MESSAGE                               FAIL line, exit 1
#   install_to_destdir BUILD                   `meson install --destdir $tmp/root`; sets $prefix
skip_unless_plain_build() {
  if [ "$1" != "none" ]; then
    echo "skipped: built with -fsanitize=$1 (the installed tree would need the sanitizer runtime)"
    exit 77
  fi
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool not found"; exit 77; }
  done
}

make_tmp() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT INT TERM
}

fail() {
  echo "FAIL: $*"
  exit 1
}

install_to_destdir() {
  meson install -C "$1" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 || {
    cat "$tmp/install.log"
    fail "meson install"
  }
  prefix=$(meson introspect "$1" --buildoptions |
    python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
}
