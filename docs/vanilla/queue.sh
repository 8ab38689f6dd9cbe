#!/usr/bin/env bash
# Runs the lines of queue.txt one after another (NAME key=value ...); a line is done when meta/NAME/time exists.
# Lines may be appended while it runs. Stops when no undone line is left or when the file STOP exists.
# The runs directory: $VANILLA_RUNS (default: vanilla-runs beside the source tree); queue.txt lives there.
here=$(dirname "$(readlink -f "$0")")
R=${VANILLA_RUNS:-$(dirname "$(readlink -f "$here/../..")")/vanilla-runs}
mkdir -p "$R" && cd "$R" || exit 1
while [ ! -e STOP ]; do
  line=""
  while read -r n rest; do
    [ -z "$n" ] && continue
    case "$n" in \#*) continue;; esac
    if [ ! -e meta/$n/time ] && [ ! -e meta/$n/started ]; then line="$n $rest"; break; fi
  done < queue.txt
  [ -z "$line" ] && break
  set -- $line
  mkdir -p meta/$1 && date -u +%FT%TZ > meta/$1/started
  "$here/run.sh" "$@"
done
