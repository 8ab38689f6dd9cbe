#!/usr/bin/env python3
"""bench/plots (issue 41 item 2): what the plots of the default `attnmech run` cost against the same run with SVG plots
only, measured in one run on this machine as CPU time (user + system of each child, from the kernel: wait4), for
  1. the main job: `attnmech run --out DIR` (the built-in Markov experiment, 15 plots);
  2. a small case: `attnmech run markov --set P=20 --set P_test=40 --set seq_len=3 --set feature_dim=8 --width 10`
     (11 plots in a run of milliseconds: the plots are most of what a small run costs).
Three settings alternate, AM_BENCH_REPEAT times (default 5), so that a change of the machine's load falls on all:
the default (no --plots, AM_PLOT_FORMATS unset), `--plots svg`, and `--plots all` (SVG, PDF and PNG: the default
before 3.7). It prints min and median of each, the ratios default / SVG only (target: <= 1.15, docs/cli.md "Plot
formats") and all / SVG only, and the CPU a plot's PDF and PNG cost. CPU, not wall: a shared machine stretches
wall time, much less a process's own CPU time.
Usage: bench_plots.py ATTNMECH_EXE SOURCE_ROOT [--smoke]
--smoke (tests/scripts): the small case once each: a check that the script runs, not a measurement."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
SMOKE = "--smoke" in sys.argv[3:]
REPEAT = 1 if SMOKE else int(os.environ.get("AM_BENCH_REPEAT", "5"))
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")
ENV.pop("AM_PLOT_FORMATS", None)  # the default is what is measured
SETTINGS = (("default", []), ("svg", ["--plots", "svg"]), ("all", ["--plots", "all"]))
SMALL = ["run", "markov", "--set", "P=20", "--set", "P_test=40", "--set", "seq_len=3", "--set", "feature_dim=8",
         "--width", "10"]


def cpu_of(args, out):
    """CPU seconds (user + system) of one run, and the names of the files it wrote."""
    shutil.rmtree(out, ignore_errors=True)
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen([EXE, *args, "--out", out, "--quiet"], env=ENV, stdout=null, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: attnmech {' '.join(args)}\n{err[-2000:]}")
    return ru.ru_utime + ru.ru_stime, sorted(os.listdir(out))


def formats_of(files):
    return ", ".join(e[1:].upper() for e in (".svg", ".pdf", ".png") if any(f.endswith(e) for f in files)) or "none"


def measure(name, args, tmp):
    times = {s: [] for s, _ in SETTINGS}
    files = {}
    for _ in range(REPEAT):
        for s, extra in SETTINGS:
            t, files[s] = cpu_of(args + extra, os.path.join(tmp, "out"))
            times[s].append(t)
    plots = sum(f.endswith(".svg") for f in files["svg"])
    lo = {s: min(v) for s, v in times.items()}
    med = {s: statistics.median(v) for s, v in times.items()}
    print(f"{name}: {plots} plots")
    for s, extra in SETTINGS:
        print(f"  {s:8s} ({formats_of(files[s])}): CPU min {lo[s]:.3f} s, median {med[s]:.3f} s")
    print(f"  ratio default / SVG only: {lo['default'] / lo['svg']:.3f} (mins), "
          f"{med['default'] / med['svg']:.3f} (medians)")
    print(f"  ratio all / SVG only:     {lo['all'] / lo['svg']:.3f} (mins), {med['all'] / med['svg']:.3f} (medians); "
          f"a plot's PDF and PNG: {1000 * (med['all'] - med['svg']) / max(plots, 1):.1f} ms of CPU (medians)")
    return med["default"] / med["svg"]


def main():
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {REPEAT} repeats"
          + ("; --smoke: the small case once, not a measurement" if SMOKE else ""))
    with tempfile.TemporaryDirectory() as tmp:
        ratios = []
        if not SMOKE:
            ratios.append(measure("main job (attnmech run)", ["run"], tmp))
        ratios.append(measure("small case (" + " ".join(SMALL[:2]) + " P=20 seq_len=3 feature_dim=8 --width 10)",
                              SMALL, tmp))
        if not SMOKE:
            worst = max(ratios)
            print(f"target: default <= 1.15x SVG only: {'met' if worst <= 1.15 else 'NOT met'} "
                  f"(largest ratio of medians {worst:.3f})")


if __name__ == "__main__":
    main()
