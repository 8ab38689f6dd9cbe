#!/usr/bin/env bash
# `attnmech run markov --set P=<P> --width 10` as a user runs it: CPU time (user + sys), peak RSS (/usr/bin/time -v),
# the size of results.json and of the whole results directory. Run by hand (docs/scale.md, "The results
# document"); nothing in CI runs it.
#
#   bench/scale/run_markov.sh [BUILD_DIR] [P ...]      default: build 2000 8000
#   bench/scale/run_markov.sh --smoke [BUILD_DIR] [P ...]   tests/scripts: P = 40 (default), P_test = 40, seq_len = 8,
#                                                          feature_dim = 20 (seconds)
#
# Extra settings go in AM_BENCH_SET ("kernels=full"). One run per P; the output directory is removed afterwards. Exits 1
# after the table when a run failed (its row says why).
# AM_BENCH_RANKS=K (a build with ScaLAPACK): the run under `mpirun -np K --oversubscribe`, CPU time and peak RSS of
# each rank (rank 0 / rank 1 / ...), the per-rank memory a distributed run holds (docs/scale.md).
set -euo pipefail
smoke=()
if [ "${1:-}" = --smoke ]; then
  shift
  smoke=(--set P_test=40 --set seq_len=8 --set feature_dim=20)
  (($# > 1)) || set -- "${1:-build}" 40
fi
build=${1:-build}
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(2000 8000)
exe=$build/tools/attnmech
[ -x "$exe" ] || { echo "no $exe (build first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
extra=()
for s in ${AM_BENCH_SET:-}; do extra+=(--set "$s"); done
printf '%-6s %10s %12s %16s %14s %s\n' P cpu_s peak_rss_MB results_json_KB dir_MB status
failed=0
for P in "${sizes[@]}"; do
  out=$work/m$P
  st=ok
  ranks=${AM_BENCH_RANKS:-1}
  if [ "$ranks" -gt 1 ]; then
    OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMPI_MCA_mpi_yield_when_idle=1 \
      mpirun -np "$ranks" --oversubscribe sh -c 'exec /usr/bin/time -v -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$work/time" \
      "$exe" run markov --set "P=$P" --width 10 ${extra[@]+"${extra[@]}"} ${smoke[@]+"${smoke[@]}"} --out "$out" >"$work/log" 2>&1 || st="failed ($(tail -n 1 "$work/log"))"
  else
    OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} /usr/bin/time -v -o "$work/time.0" \
      "$exe" run markov --set "P=$P" --width 10 ${extra[@]+"${extra[@]}"} ${smoke[@]+"${smoke[@]}"} --out "$out" >"$work/log" 2>&1 || st="failed ($(tail -n 1 "$work/log"))"
  fi
  cpu=$(for ((r = 0; r < ranks; ++r)); do awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f\n", u + s}' "$work/time.$r"; done | paste -sd/)
  rss=$(for ((r = 0; r < ranks; ++r)); do awk -F': ' '/Maximum resident/ {printf "%.0f\n", $2 / 1024}' "$work/time.$r"; done | paste -sd/)
  js=$( [ -f "$out/results.json" ] && stat -c %s "$out/results.json" || echo 0)
  ds=$( [ -d "$out" ] && du -sb "$out" | cut -f1 || echo 0)
  printf '%-6s %10s %12s %16.1f %14.1f %s\n' "$P" "$cpu" "$rss" "$(echo "$js / 1024" | bc -l)" "$(echo "$ds / 1048576" | bc -l)" "$st"
  rm -rf "$out"
  [ "$st" = ok ] || failed=1
done
exit $failed
