#!/usr/bin/env bash
# Two ranks against one process (docs/scale.md "Each rank makes its part of the data"): `attnmech run markov --set
# P=<P> --width 10` serially, then under `mpirun -np K` (bench/scale/run_markov.sh, one BLAS thread per rank), and
# the ratios the issue asks for: each rank's CPU time (user + sys, wait4 through /usr/bin/time) and peak RSS over the
# serial run's, in the same invocation. Run by hand; nothing in CI runs it.
#
#   bench/scale/ranks_vs_serial.sh [BUILD_DIR] [P ...]        default: build 2000 4000; AM_BENCH_RANKS (default 2)
#   bench/scale/ranks_vs_serial.sh --smoke [BUILD_DIR] [P ...]  tests/scripts: run_markov.sh's smoke sizes (P = 40)
#
# Under root, set OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 as for any mpirun.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
smoke=()
if [ "${1:-}" = --smoke ]; then
  smoke=(--smoke)
  shift
fi
build=${1:-build}
shift || true
sizes=("$@")
((${#sizes[@]})) || { if ((${#smoke[@]})); then sizes=(40); else sizes=(2000 4000); fi; }
ranks=${AM_BENCH_RANKS:-2}
printf '%-6s %9s %9s %15s %13s %10s %10s %5s\n' P serial_s serial_MB "rank_cpu_s" "rank_MB" cpu_ratio rss_ratio load
for P in "${sizes[@]}"; do
  one=$(AM_BENCH_RANKS=1 bash "$here/run_markov.sh" ${smoke[@]+"${smoke[@]}"} "$build" "$P" | tail -n 1)
  two=$(AM_BENCH_RANKS=$ranks bash "$here/run_markov.sh" ${smoke[@]+"${smoke[@]}"} "$build" "$P" | tail -n 1)
  load=$(cut -d' ' -f1 /proc/loadavg)
  awk -v P="$P" -v one="$one" -v two="$two" -v load="$load" 'BEGIN {
    split(one, a, " +"); split(two, b, " +");
    n = split(b[2], c, "/"); split(b[3], r, "/"); mc = 0; mr = 0;
    for (i = 1; i <= n; ++i) { if (c[i] > mc) mc = c[i]; if (r[i] > mr) mr = r[i]; }
    printf "%-6s %9.2f %9d %15s %13s %10.2f %10.2f %5s\n", P, a[2], a[3], b[2], b[3], mc / a[2], mr / a[3], load }'
done
