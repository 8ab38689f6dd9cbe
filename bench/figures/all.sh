#!/usr/bin/env bash
# Every figure of `attnmech figure --list`, run with its default command, and their PDFs gathered in one place:
#   bench/figures/all.sh [ATTNMECH] [OUT]     (default: build/tools/attnmech, /tmp/attnmech-figures)
# Each figure runs in OUT/<name>/ (a figure resumes there and reuses complete points: a second call only draws);
# potts-attention-maps and potts-recon draw from the sweeps of potts-loss-curves, so they share its directory.
# Afterwards OUT/pdf/ holds every figure's PDF (a build with cairo: `attnmech list` says "plots: SVG, PDF, PNG"),
# and OUT/times.tsv each figure's wall time. About 25 min on a 2-core machine (docs/figures.md: the run times);
# the first oneshot figure of a machine also renders the glyphs and trains the GD network (about 5 min more).
set -euo pipefail
exe=${1:-build/tools/attnmech}
out=${2:-/tmp/attnmech-figures}
mkdir -p "$out/pdf"
"$exe" list | grep -q 'plots: SVG, PDF, PNG' || { echo "all.sh: $exe is built without cairo (no PDF)" >&2; exit 1; }
printf 'figure\twall_s\n' >"$out/times.tsv"
for name in $("$exe" figure --list | awk 'NR > 1 && NF > 1 && $1 !~ /^\(/ {print $1}'); do
  case $name in potts-attention-maps|potts-recon) dir=$out/potts-loss-curves ;; *) dir=$out/$name ;; esac
  echo "all.sh: $name → $dir ($(date -u +%H:%M:%S))" >&2
  t0=$SECONDS
  "$exe" figure "$name" --out "$dir" >"$out/$name.log" 2>&1 || { tail -n 20 "$out/$name.log" >&2; exit 1; }
  printf '%s\t%d\n' "$name" $((SECONDS - t0)) >>"$out/times.tsv"
  for f in "$dir/$name".pdf "$dir/$name"-*.pdf; do [ -f "$f" ] && cp "$f" "$out/pdf/"; done
done
ls "$out/pdf"
