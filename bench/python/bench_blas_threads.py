#!/usr/bin/env python3
"""`attnmech.run("markov")` from Python against `attnmech run markov` (the CLI), wall and CPU time, in one run:
the CLI, Python with the package's BLAS-thread rule (one OpenBLAS thread inside library calls unless
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS is set, as the CLI does), and Python with the rule switched off (the
package before it: OpenBLAS's default pool, one thread per core). Run against a build tree WITHOUT those
variables, or the comparison is void (the script refuses):

    env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS meson devenv -C build \\
        python3 bench/python/bench_blas_threads.py [--repeat 1] [--cli build/tools/attnmech]

The three are alternated `--repeat` times; each line is one call. CPU is the process's user + system time
(the CLI's: its child rusage), so CPU/wall > 1 means more than one core was busy. The machine may be shared:
compare the ratios within one run.
--smoke (tests/scripts): the markov task at tiny sizes (P = P_test = 40), one round, and the variables tolerated
(their effect noted): seconds, a check that the script runs, not a measurement."""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

import attnmech as am
from attnmech import _core

SETTINGS = {}  # --smoke: the markov task's tiny sizes, for the CLI and attnmech.run alike
SMOKE = {"P": 40, "P_test": 40, "seq_len": 8, "feature_dim": 20}


def cli_markov(cli):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    sets = [a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")]
    subprocess.run([cli, "run", "markov"] + sets, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def python_markov(rule):
    _core.BLAS_RULE = rule
    try:
        c, t = time.process_time(), time.perf_counter()
        am.run("markov", progress=False, **SETTINGS)
        return time.perf_counter() - t, time.process_time() - c
    finally:
        _core.BLAS_RULE = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cli", default=os.environ.get("ATTNMECH_CLI") or shutil.which("attnmech"))
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one round, the variables tolerated")
    a = ap.parse_args()
    if a.smoke:
        a.repeat = 1
        SETTINGS.update(SMOKE)
    if "OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ:
        if not a.smoke:
            sys.exit("unset OPENBLAS_NUM_THREADS and OMP_NUM_THREADS: they turn the rule off (see the docstring)")
        print("(--smoke with OPENBLAS_NUM_THREADS/OMP_NUM_THREADS set: the rule is off, the comparison void)")
    if not a.cli:
        sys.exit("no attnmech CLI: pass --cli build/tools/attnmech")
    print(f"attnmech {am.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"OpenBLAS threads at start {am._lib.core.am_blas_threads_set(0)}")
    cases = [("CLI", lambda: cli_markov(a.cli)), ("python, rule", lambda: python_markov(True)),
             ("python, no rule", lambda: python_markov(False))]
    for i in range(a.repeat):
        for name, fn in cases:
            wall, cpu = fn()
            print(f"{i}  {name:16s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  cpu/wall {cpu / wall:4.2f}", flush=True)


if __name__ == "__main__":
    main()
