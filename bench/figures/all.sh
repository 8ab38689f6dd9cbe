#!/usr/bin/env bash
# Every figure of `attnmech figure --list`, run with its default command, and their PDFs gathered in one place:
#   bench/figures/all.sh [ATTNMECH] [OUT]     (default: build/tools/attnmech, /tmp/attnmech-figures)
# Each figure runs in OUT/<name>/ (a figure resumes there and reuses complete points: a second call only draws);
# potts-attention-maps and potts-recon draw from the sweeps of potts-loss-curves, so they share its directory.
# Afterwards OUT/pdf/ holds every figure's PDF (a build with cairo: `attnmech list` says "plots: SVG, PDF, PNG"),
# and OUT/times.tsv each figure's wall time. About 25 min on a 2-core machine (docs/figures.md: the run times);
# the first oneshot figure of a machine also renders the glyphs and trains the GD network (about 5 min more).
#   bench/figures/all.sh --smoke [ATTNMECH] [OUT]   (tests/scripts; seconds) the same loop over the list, but only
# markov-U and replica-curve run, at tiny settings (as tests/figure does); the others are listed as skipped, and a
# build without cairo gathers no PDF instead of stopping.
set -euo pipefail
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
exe=${1:-build/tools/attnmech}
out=${2:-/tmp/attnmech-figures}
mkdir -p "$out/pdf"
if ! "$exe" list | grep 'plots: SVG, PDF, PNG' >/dev/null; then  # not -q: no SIGPIPE under pipefail
  ((smoke)) || { echo "all.sh: $exe is built without cairo (no PDF)" >&2; exit 1; }
  echo "all.sh: $exe is built without cairo: no PDF to gather (--smoke goes on)" >&2
fi
# --smoke: the figures that run, and their tiny settings
smoke_sets() {
  case $1 in
    markov-U) echo "--set P=20 --set P_test=40" ;;
    replica-curve) echo "--set lambda=0.01,1 --set theory.alpha=0.5,2 --set sim.alpha=0.5,2 --set sim_L=20 \
--set sim_seeds=1 --set sim_sites=5" ;;
    *) return 1 ;;
  esac
}
printf 'figure\twall_s\n' >"$out/times.tsv"
names=$("$exe" figure --list | awk 'NR > 1 && NF > 1 && $1 !~ /^\(/ {print $1}')
[ -n "$names" ] || { echo "all.sh: \`$exe figure --list\` lists no figure" >&2; exit 1; }
for name in $names; do
  sets=()
  if ((smoke)); then
    s=$(smoke_sets "$name") || { echo "all.sh: $name skipped (--smoke)" >&2; continue; }
    read -r -a sets <<<"$s"
  fi
  case $name in potts-attention-maps|potts-recon) dir=$out/potts-loss-curves ;; *) dir=$out/$name ;; esac
  echo "all.sh: $name → $dir ($(date -u +%H:%M:%S))" >&2
  t0=$SECONDS
  # --plots all: SVG, PDF and PNG (the PNG to check a PDF's drawing by eye); SVG only in a build without cairo
  "$exe" figure "$name" --out "$dir" --plots all ${sets[@]+"${sets[@]}"} >"$out/$name.log" 2>&1 || { tail -n 20 "$out/$name.log" >&2; exit 1; }
  printf '%s\t%d\n' "$name" $((SECONDS - t0)) >>"$out/times.tsv"
  for f in "$dir/$name".pdf "$dir/$name"-*.pdf; do [ -f "$f" ] && cp "$f" "$out/pdf/"; done
done
ls "$out/pdf"
