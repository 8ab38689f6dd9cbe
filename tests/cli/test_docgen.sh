#!/bin/bash
# The generated man page and bash completion, as a user meets them:
#   * `groff -man -Tutf8 -ww` renders attnmech.1 with no warning (skipped without groff); `man -l` too when man
#     is installed; the rendered page shows NAME, every command and a known option with its help;
#   * the completion script is valid bash (bash -n; shellcheck clean when shellcheck is installed) and, sourced in
#     bash (no bash-completion package needed), completes `attnmech ru<TAB>` → run, `attnmech run --o<TAB>` → --out, `attnmech run <TAB>` → the task names that
#     `attnmech list` shows and the estimators that need no task (replica), `run m<TAB>` → markov and msa, `sweep
#     <TAB>` → the shipped specs of `sweep --list`, `run markov --estimator <TAB>` → the estimators,
#     `figure <TAB>` → the shipped figures (and .json specs), `run --out <TAB>` → directories only;
#   * docs/cli.md's synopsis, option lists and environment variables are the CLI's help (check_cli_md.py).
# Usage: test_docgen.sh MAN_PAGE COMPLETION ATTNMECH_EXE DOCS_CLI_MD (AM_PLUGIN_PATH set to the build tree's plugins)
set -euo pipefail
man_page=$1
completion=$2
exe=$3
cli_md=$4
fail() {
  echo "FAIL: $*"
  exit 1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnmech-docgen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---- docs/cli.md: the help as the CLI prints it
python3 "$(dirname "$0")/check_cli_md.py" "$exe" "$cli_md" || fail "docs/cli.md has drifted from the CLI's help"

# ---- the man page
if command -v groff >/dev/null 2>&1; then
  LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$man_page" 2>"$tmp/groff.err" || fail "groff failed"
  [ ! -s "$tmp/groff.err" ] || { cat "$tmp/groff.err"; fail "groff warns about $man_page"; }
  LC_ALL=C.UTF-8 groff -man -Tutf8 "$man_page" 2>/dev/null | sed 's/.\x08//g' >"$tmp/man.txt"
  for want in 'attnmech - statistical mechanics of attention networks' 'attnmech figure NAME' \
    'PLUGIN PARAMETERS' '--no-warm-start' 'no warm starts, whatever SPEC' 'AM_PLUGIN_PATH' 'AM_PLOT_FORMATS' \
    'AM_PROGRESS_SECONDS' 'AM_SIMD' '--font-size'; do
    grep -qF -- "$want" "$tmp/man.txt" || fail "the rendered page lacks '$want'"
  done
  echo "man page: groff -ww renders $(wc -l <"$tmp/man.txt") lines, no warnings"
  if command -v man >/dev/null 2>&1; then
    MANWIDTH=100 LC_ALL=C.UTF-8 man -l "$man_page" >"$tmp/man-l.txt" 2>"$tmp/man-l.err" || fail "man -l"
    [ ! -s "$tmp/man-l.err" ] || { cat "$tmp/man-l.err"; fail "man -l warns"; }
    echo "man -l: $(wc -l <"$tmp/man-l.txt") lines, no warnings"
  fi
else
  echo "groff not found: rendering not checked"
fi

# ---- the completion: what bash offers for a command line ending in the cursor
complete_line() {  # words...; the last one is the word under the cursor
  # shellcheck disable=SC1090
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _attnmech
           printf "%s\n" "${COMPREPLY[@]}" | sort -u' _ "$completion" "$exe" "$@"
}
expect() {  # expected (space-separated, sorted) -- words...
  local want=$1
  shift
  got=$(complete_line "$@" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$want" ] || fail "attnmech $* <TAB>: got '$got', expected '$want'"
  echo "attnmech $* <TAB> → $got"
}
bash -n "$completion" || fail "the completion script is not valid bash"
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck "$completion" || fail "shellcheck finds problems in the completion script"
  echo "completion: shellcheck clean"
fi
mkdir -p "$tmp/empty" && cd "$tmp/empty"  # operands also complete files and directories: none here
expect run ru
expect --out run --o
expect "figure" fig
tasks=$("$exe" list | awk '/^tasks:$/ {k = 1; next} /^[^ ]/ {k = 0} k {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
[ -n "$tasks" ] || fail "attnmech list shows no tasks"
# after `run`: the tasks and the estimators that need no task (data kind none: replica), as `run NAME` accepts them
standalone=$("$exe" list | awk '/^estimators:$/ {k = 1; next} /^[^ ]/ {k = 0} k && /none \(runs without a task\)/ {print $1}')
[ -n "$standalone" ] || fail "attnmech list shows no estimator that runs without a task"
runnable=$(printf '%s\n' $tasks $standalone | sort | tr '\n' ' ' | sed 's/ $//')
expect "$runnable" run ""
expect "markov msa" run m
expect "replica" run r
# after `sweep`: the shipped specs by name (and .json files, directories), as `attnmech sweep --list` shows them
specs=$("$exe" sweep --list | awk 'NR > 1 && !/^\(/ {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
[ -n "$specs" ] || fail "attnmech sweep --list shows no shipped spec"
expect "$specs" sweep ""
expect "markov-paper markov-small" sweep markov
estimators=$("$exe" list | awk '/^estimators:$/ {k = 1; next} /^[^ ]/ {k = 0} k {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
expect "$estimators" run markov --estimator ""
figures=$("$exe" figure --list | awk 'NR > 1 && !/^\(/ {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
expect "$figures" figure ""
touch my-figure.json
expect "markov-U markov-accuracy markov-alignment my-figure.json" figure m
rm my-figure.json
mkdir -p "$tmp/cwd/outdir" && touch "$tmp/cwd/outfile"
(cd "$tmp/cwd" && expect outdir run --out out) || exit 1
(cd "$tmp/cwd" && expect "" run --set "") || exit 1

# ---- a shell the CLI cannot write completion for: a usage error naming the option, the choice and the value
rc=0
"$exe" help --completion zsh >"$tmp/zsh.out" 2>"$tmp/zsh.err" || rc=$?
[ "$rc" -eq 2 ] || fail "help --completion zsh exited $rc (expected 2)"
[ ! -s "$tmp/zsh.out" ] || fail "help --completion zsh wrote to stdout"
grep -q "usage error: --completion: expected a shell, bash; got 'zsh'" "$tmp/zsh.err" || { cat "$tmp/zsh.err"; fail "help --completion zsh: unclear message"; }
echo "help --completion zsh: $(head -n 1 "$tmp/zsh.err")"
echo "PASS"
