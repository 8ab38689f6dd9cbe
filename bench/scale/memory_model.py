#!/usr/bin/env python3
"""The theory estimator's memory estimate against the measured peak RSS of `attnmech run` (docs/scale.md).

    python3 bench/scale/memory_model.py build/tools/attnmech 1000 2000 4000 [--task markov] [--set key=value]...

For each P: the estimate the run checks against its budget ("the run (P = ...) needs X GB"), found without running
the solve by bisecting AM_MEMORY_LIMIT (a run the budget refuses exits at its memory check; one it allows reaches the
Newton solve, whose first progress line stops it); then the whole run under /usr/bin/time -v (peak RSS, CPU and wall
time, size of results.json). Prints one row per P with estimate / measured. Kernels are off (kernels_at and prune_at
empty), the alignment as the default; other settings with --set (e.g. --set threads=2).

    python3 bench/scale/memory_model.py build/tools/attnmech --smoke     # tests/scripts: P = 40, tiny sequences,
                                                                         # the estimate to 10 %: seconds
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def command(cli, task, P, sets, out):
    cmd = [cli, "run", task, "--set", f"P={P}", "--width", "10", "--set", "kernels_at=", "--set", "prune_at="]
    for s in sets:
        cmd += ["--set", s]
    return cmd + ["--out", out]


def allowed(cli, task, P, sets, limit, workdir):
    """True if a budget of `limit` bytes lets the run past its memory check (the solve starts), False if refused."""
    env = dict(os.environ, AM_MEMORY_LIMIT=str(int(limit)), AM_PROGRESS_SECONDS="0.05")
    proc = subprocess.Popen(command(cli, task, P, sets, os.path.join(workdir, "probe")), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = []
    for line in proc.stderr:
        err.append(line)
        if "] newton " in line:  # past the check: the solve has started
            proc.kill()
            proc.wait()
            return True
    code = proc.wait()
    text = "".join(err)
    if code == 1 and "needs" in text:
        return False
    if code == 0:
        return True
    sys.exit(f"probe at AM_MEMORY_LIMIT={int(limit)} failed (exit {code}): {text[-400:]}")


def estimate(cli, task, P, sets, workdir, rel=0.005):
    """The smallest budget the run accepts, to `rel`: the run's estimate (the largest of the checks on its way)."""
    lo, hi = 0.0, 2.0 ** 28
    while not allowed(cli, task, P, sets, hi, workdir):
        lo, hi = hi, hi * 4
    while hi - lo > rel * hi:
        mid = 0.5 * (lo + hi)
        if allowed(cli, task, P, sets, mid, workdir):
            hi = mid
        else:
            lo = mid
    return hi


def estimate_once(cli, task, P, sets, workdir, limit):
    """The run's estimate from one refusal at a budget between the task's own checks and the run's ("needs X GB",
    0.05 GB resolution): for large P, where each probe costs minutes."""
    env = dict(os.environ, AM_MEMORY_LIMIT=limit)
    r = subprocess.run(command(cli, task, P, sets, os.path.join(workdir, "probe")), env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    m = re.search(r"the run \(P = [^)]*\) needs ([0-9.]+) GB", r.stderr)
    if r.returncode != 1 or not m:
        sys.exit(f"no refusal by the run's check at AM_MEMORY_LIMIT={limit} (exit {r.returncode}): {r.stderr[-400:]}")
    return float(m.group(1)) * 1e9


def measure(cli, task, P, sets, workdir):
    out = os.path.join(workdir, f"run{P}")
    t0 = time.time()
    r = subprocess.run(["/usr/bin/time", "-v"] + command(cli, task, P, sets, out), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0

    def field(name):
        m = re.search(rf"{name}: ([0-9.]+)", r.stderr)
        return float(m.group(1)) if m else float("nan")

    if r.returncode != 0:
        sys.exit(f"run at P = {P} failed (exit {r.returncode}): {r.stderr[-400:]}")
    with open(os.path.join(out, "results.json")) as f:
        status = json.load(f).get("status")
    return {"peak": field("Maximum resident set size \\(kbytes\\)") * 1024, "cpu": field("User time \\(seconds\\)") +
            field("System time \\(seconds\\)"), "wall": wall, "doc": os.path.getsize(os.path.join(out, "results.json")),
            "status": status}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("P", type=int, nargs="*", help="training set sizes (--smoke: 40)")
    ap.add_argument("--task", default="markov")
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--no-run", action="store_true", help="the estimate only")
    ap.add_argument("--probe-limit", help="one refusal at this AM_MEMORY_LIMIT (e.g. 3G) instead of the bisection")
    ap.add_argument("--smoke", action="store_true", help="P = 40 (unless given), P_test = 40, seq_len = 8, "
                    "feature_dim = 20, the estimate to 10 %%: seconds")
    a = ap.parse_args()
    rel = 0.005
    if a.smoke:
        a.P = a.P or [40]
        a.sets = ["P_test=40", "seq_len=8", "feature_dim=20"] + a.sets
        rel = 0.1
    if not a.P:
        ap.error("give at least one P")
    print(f"# {a.task}, theory, --width 10, kernels off; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
          f"; load {os.getloadavg()[0]:.1f}; sets {a.sets}")
    print("| P | estimate GB | peak RSS GB | estimate / peak | CPU s | wall s | results.json KB | status |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="am-memory-") as workdir:
        for P in a.P:
            est = (estimate_once(a.cli, a.task, P, a.sets, workdir, a.probe_limit) if a.probe_limit else
                   estimate(a.cli, a.task, P, a.sets, workdir, rel))
            if a.no_run:
                print(f"| {P} | {est / 1e9:.3f} | | | | | | |", flush=True)
                continue
            print(f"# P = {P}: estimate {est / 1e9:.3f} GB; running", flush=True)
            m = measure(a.cli, a.task, P, a.sets, workdir)
            print(f"| {P} | {est / 1e9:.3f} | {m['peak'] / 1e9:.3f} | {est / m['peak']:.2f} | {m['cpu']:.1f} | "
                  f"{m['wall']:.1f} | {m['doc'] / 1e3:.0f} | {m['status']} |", flush=True)


if __name__ == "__main__":
    main()
