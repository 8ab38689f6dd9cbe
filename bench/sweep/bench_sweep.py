#!/usr/bin/env python3
"""bench/sweep (issue 14): the sweep's figures, measured in one run on this machine.
  1. speed-up: the 32-point Markov grid (examples/sweeps/markov-small.json, threads=1 per point) with
     `mpirun -np 2` against `mpirun -np 1` (= one process, --jobs 1); target >= 1.8x on 2 free cores;
  2. scheduler overhead: 200 near-empty replica points, `mpirun -np 2 --dispatcher-only`: the time a worker
     waits for its next point (AM_SWEEP_TIMING=1 prints it) and rank 0's idle time per point; target < 1 ms;
  3. warm starts: Newton iterations summed over a width axis (7 widths x 4 seeds, Markov P = 100), cold vs warm.
Each timing is repeated AM_BENCH_REPEAT times (default 3); min and median are printed. A shared machine
inflates every number: read the ratios, and the load average printed first.
Usage: bench_sweep.py ATTNMECH_EXE SOURCE_ROOT [--smoke]
--smoke (tests/scripts): one repeat of each on tiny grids (4 Markov points at P = 40, 20 replica points, 2 widths x
1 seed, P = 40): seconds, a check that the script runs, not a measurement; without mpirun the MPI parts are skipped."""
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

EXE, ROOT = sys.argv[1], sys.argv[2]
SMOKE = "--smoke" in sys.argv[3:]
REPEAT = 1 if SMOKE else int(os.environ.get("AM_BENCH_REPEAT", "3"))
# --smoke: the same three measurements on tiny grids
SMOKE_GRID = ('{"task": "markov", "fixed": {"P": 40, "P_test": 40, "seq_len": 8, "feature_dim": 20, "threads": 1},'
              ' "axes": {"width": [10, 100], "seed": {"range": [0, 2]}}}')
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OPENBLAS_NUM_THREADS="1")


def timed(args, env=ENV):
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(args)}\n{r.stderr[-2000:]}")
    return time.monotonic() - t0, r.stderr


def repeat(make_args):
    times = []
    for k in range(REPEAT):
        with tempfile.TemporaryDirectory() as tmp:
            t, _ = timed(make_args(os.path.join(tmp, "out")))
            times.append(t)
    return min(times), statistics.median(times)


def main():
    mpi_ok = shutil.which("mpirun") is not None
    if not mpi_ok and not SMOKE:
        sys.exit("bench/sweep needs mpirun (openmpi-bin)")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {REPEAT} repeats"
          + ("; --smoke: tiny grids, not a measurement" if SMOKE else ""))
    with tempfile.TemporaryDirectory() as tmp:
        if mpi_ok:
            speed_up(tmp)
            scheduler(tmp)
        else:
            print("speed-up and scheduler: skipped (no mpirun; --smoke)")
        warm_starts(tmp)


def speed_up(tmp):
    grid = os.path.join(ROOT, "examples", "sweeps", "markov-small.json")
    if SMOKE:
        grid = os.path.join(tmp, "grid.json")
        with open(grid, "w") as f:
            f.write(SMOKE_GRID)
    mpi = ["mpirun", "--oversubscribe", "-np"]
    one = repeat(lambda out: mpi + ["1", EXE, "sweep", grid, "--out", out, "--jobs", "1", "--quiet", "--no-aggregate"])
    two = repeat(lambda out: mpi + ["2", EXE, "sweep", grid, "--out", out, "--quiet", "--no-aggregate"])
    print(f"{'4-point' if SMOKE else '32-point'} Markov grid, threads=1 per point: 1 rank {one[0]:.2f} s (median "
          f"{one[1]:.2f}), 2 ranks {two[0]:.2f} s (median {two[1]:.2f}); speed-up {one[0] / two[0]:.2f}x (min), "
          f"{one[1] / two[1]:.2f}x (median); target >= 1.8x")


def scheduler(tmp):
    mpi = ["mpirun", "--oversubscribe", "-np"]
    tiny = os.path.join(tmp, "tiny.json")
    with open(tiny, "w") as f:
        f.write('{"estimator": "replica", "fixed": {"alpha": [1], "lambda": [0.1], "optimal": false, "threads": 1},'
                ' "axes": {"nu": {"range": [3, %s, 0.01]}}}' % ("3.2" if SMOKE else "5"))
    waits, idles = [], []
    for k in range(REPEAT):
        _, err = timed(mpi + ["2", EXE, "sweep", tiny, "--out", os.path.join(tmp, f"t{k}"), "--dispatcher-only",
                              "--no-aggregate"], env=dict(ENV, AM_SWEEP_TIMING="1"))
        waits += [float(x) for x in re.findall(r"waited ([\d.]+) ms per point", err)]
        idles += [float(x) for x in re.findall(r"idle ([\d.]+) ms per point", err)]
    print(f"scheduler, {20 if SMOKE else 200} points on 1 worker rank: wait for the next point {min(waits):.3f} ms "
          f"(median {statistics.median(waits):.3f}); rank-0 idle incl. tail {min(idles):.3f} ms "
          f"(median {statistics.median(idles):.3f}); target < 1 ms")


def warm_starts(tmp):
    spec = os.path.join(tmp, "warm.json")
    with open(spec, "w") as f:
        sizes = '"P": 40, "P_test": 40, "seq_len": 8, "feature_dim": 20' if SMOKE else '"P": 100, "P_test": 100'
        f.write('{"task": "markov", "fixed": {%s, "threads": 1},'
                ' "axes": {"seed": {"range": [0, %d]}, "width": %s},'
                ' "metrics": ["runs.0.solver.iterations", "runs.0.test.accuracy"]}'
                % ((sizes, 1, "[10, 100]") if SMOKE else (sizes, 4, "[10, 30, 50, 100, 300, 500, 1000]")))
    its = {}
    for mode in ("--no-warm-start", "--warm-start"):
        out = os.path.join(tmp, mode)
        t, _ = timed([EXE, "sweep", spec, "--out", out, "--jobs", "1", "--quiet", mode])
        rows = list(csv.DictReader(open(os.path.join(out, "sweep.csv"))))
        its[mode] = (sum(int(float(r["runs.0.solver.iterations"])) for r in rows), t,
                     [r["runs.0.test.accuracy"] for r in rows])
    cold, warm = its["--no-warm-start"], its["--warm-start"]
    same = sum(a == b for a, b in zip(cold[2], warm[2]))
    print(f"warm starts along width ({'2 widths x 1 seed' if SMOKE else '7 widths x 4 seeds'}): Newton iterations "
          f"cold {cold[0]}, warm {warm[0]} "
          f"({warm[0] / cold[0]:.2f}x); wall {cold[1]:.2f} s vs {warm[1]:.2f} s; "
          f"test accuracy identical at {same}/{len(cold[2])} points")


if __name__ == "__main__":
    main()
