#!/usr/bin/env bash
# usage: run.sh NAME key=value...   (vanilla estimator on the default potts task, M=3000 unless M=..., M_test=2000)
set -u
# Run from anywhere: the source tree is two levels above this script (its build/ is used); the runs go to
# $VANILLA_RUNS (default: vanilla-runs beside the source tree). $ATTNMECH picks another binary (e.g. an installed
# copy, so that rebuilding the tree cannot disturb a long queue); default build/tools/attnmech.
cd "$(dirname "$(readlink -f "$0")")/../.."
R=${VANILLA_RUNS:-$(dirname "$PWD")/vanilla-runs}
name=$1; shift
M=3000
sets=()
for kv in "$@"; do case "$kv" in M=*) M=${kv#M=};; *) sets+=(--set "$kv");; esac; done
mkdir -p $R/meta/$name
echo "$*" > $R/meta/$name/args
export OPENBLAS_NUM_THREADS=1
/usr/bin/time -f "%U %S %e" -o $R/meta/$name/time nice -n 15 ${ATTNMECH:-build/tools/attnmech} run potts --estimator vanilla \
  --set threads=1 --set M=$M --set M_test=2000 --set equilibration_test=0 --set batch=128 \
  --set eval_sequences=500 "${sets[@]}" --out $R/$name -q > $R/meta/$name/log 2>&1
echo "rc=$?" >> $R/meta/$name/log
