#!/bin/sh
# A build without ScaLAPACK started by an MPI launcher (its variables, faked here: no MPI is needed) refuses
# `attnmech run` rather than run the whole problem on every rank: exit 2 on every rank, the reason told by rank 0
# alone, nothing computed or written. Usage: test_no_scalapack.sh ATTNMECH_EXE
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for launcher in "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK" "PMI_SIZE=3 PMI_RANK"; do
  for r in 0 1; do
    env $launcher=$r "$exe" run markov --set P=40 --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    if [ $rc -ne 2 ]; then echo "FAIL $launcher=$r: exit $rc, expected 2"; fail=1; fi
    if [ -e "$tmp/out" ]; then echo "FAIL $launcher=$r: wrote $tmp/out"; fail=1; fi
    if [ $r = 0 ] && ! grep -q "built without ScaLAPACK: under mpirun or srun each of the" "$tmp/stderr"; then
      echo "FAIL $launcher=0: no reason on stderr: $(cat "$tmp/stderr")"; fail=1
    fi
    if [ $r = 1 ] && [ -s "$tmp/stderr" ]; then echo "FAIL $launcher=1: rank 1 spoke: $(cat "$tmp/stderr")"; fail=1; fi
  done
done
# one process under no launcher, or a launcher of one rank, runs as always
env OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_RANK=0 "$exe" run markov --set P=40 --set P_test=20 --width 10 \
  --set widths_scan=10 --out "$tmp/one" >/dev/null 2>"$tmp/stderr" || { echo "FAIL one rank: $(tail -n 2 "$tmp/stderr")"; fail=1; }
[ -f "$tmp/one/results.json" ] || { echo "FAIL one rank: no results.json"; fail=1; }
[ $fail = 0 ] && echo "ok: refused on 2 and 3 ranks, told once; one rank runs"
exit $fail
