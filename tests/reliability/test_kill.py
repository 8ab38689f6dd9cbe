#!/usr/bin/env python3
"""Kill test: SIGKILL `attnmech run` at many moments of its write phase.

A small markov job writes ~110 files (results.json, .npy arrays, SVG plots) into --out D. The report library
writes them into a fresh sibling D.tmp-XXXXXX, fsyncs, and swaps it in with one rename. This test starts the
job TRIES times into the same D with a new seed each time, waits until the sibling appears (the write phase
has begun), sleeps a random fraction of the write phase's measured length and SIGKILLs it. After every try:

  * D/results.json is valid JSON of a complete run (status "ok", every run present), and
  * it is either the previous complete run, byte for byte, with exactly its files (nothing added, nothing
    stale), or the new run with exactly the file set of a complete run;
  * the first try kills a job whose D does not exist yet: D is then absent or complete.

Usage: test_kill.py ATTNMECH [TRIES]. Prints the tally (kills that landed inside the write phase, kills after
the swap) and exits 1 on the first violation.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ARGS = ["run", "markov", "--set", "P=40", "--set", "P_test=100", "--set", "feature_dim=20", "--set", "seq_len=10"]


def state(d):
    """(results.json text, sorted file names) of a results directory, or None when it does not exist."""
    if not os.path.isdir(d):
        return None
    with open(os.path.join(d, "results.json"), "rb") as f:
        text = f.read()
    return text, sorted(os.listdir(d))


def check_complete(text, where):
    doc = json.loads(text)  # raises on a truncated or empty file
    if doc.get("status") != "ok":
        raise AssertionError(f"{where}: status {doc.get('status')!r}, expected 'ok'")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs or any(r.get("run_status") != "ok" for r in runs):
        raise AssertionError(f"{where}: runs incomplete")


def run_to_end(exe, out, seed):
    subprocess.run([exe, *ARGS, "--set", f"seed={seed}", "--out", out], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def kill_in_write_phase(exe, out, seed, delay):
    """Start a run, wait for its temporary sibling, sleep `delay` s, SIGKILL. True if it was still running."""
    parent, base = os.path.split(out)
    p = subprocess.Popen([exe, *ARGS, "--set", f"seed={seed}", "--out", out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    while p.poll() is None and not any(n.startswith(base + ".tmp-") for n in os.listdir(parent)):
        time.sleep(0.0002)
    time.sleep(delay)
    alive = p.poll() is None
    if alive:
        p.send_signal(signal.SIGKILL)
    p.wait()
    return alive


def write_phase_length(exe, out, seed):
    """Seconds from the sibling's appearance to the end of the process (one calibration run)."""
    parent, base = os.path.split(out)
    p = subprocess.Popen([exe, *ARGS, "--set", f"seed={seed}", "--out", out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    while p.poll() is None and not any(n.startswith(base + ".tmp-") for n in os.listdir(parent)):
        time.sleep(0.0002)
    t0 = time.monotonic()
    p.wait()
    return time.monotonic() - t0


def main():
    exe = sys.argv[1]
    tries = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rng = random.Random(12345)
    work = tempfile.mkdtemp(prefix="am_kill_")
    try:
        out = os.path.join(work, "D")
        # A kill before the first complete run: D absent or complete.
        kill_in_write_phase(exe, out, 1, 0.0)
        first = state(out)
        if first is not None:
            check_complete(first[0], "first try")
        run_to_end(exe, out, 1)
        prev = state(out)
        check_complete(prev[0], "reference run")
        files_of_complete_run = prev[1]
        span = max(write_phase_length(exe, os.path.join(work, "calib"), 2), 0.002)
        inside = after = 0
        for k in range(tries):
            seed = 100 + k
            kill_in_write_phase(exe, out, seed, rng.uniform(0.0, 1.2 * span))
            cur = state(out)
            if cur is None:
                raise AssertionError(f"try {k}: the previous complete run in D is gone")
            check_complete(cur[0], f"try {k}")
            if cur[0] == prev[0]:
                if cur[1] != prev[1]:
                    raise AssertionError(f"try {k}: old results.json beside another file set: "
                                         f"{sorted(set(cur[1]) ^ set(prev[1]))[:5]}")
                inside += 1
            else:
                if json.loads(cur[0]).get("seed") != seed:
                    raise AssertionError(f"try {k}: results.json of neither the old nor the new run")
                if cur[1] != files_of_complete_run:
                    raise AssertionError(f"try {k}: new results.json beside another file set: "
                                         f"{sorted(set(cur[1]) ^ set(files_of_complete_run))[:5]}")
                after += 1
            prev = cur
            for n in os.listdir(work):  # a killed write leaves its sibling; the next run does not need it gone
                if n.startswith("D.tmp-"):
                    shutil.rmtree(os.path.join(work, n), ignore_errors=True)
        print(f"kill test: {tries} tries, write phase ~{span * 1000:.1f} ms; old run intact after {inside} kills, "
              f"new complete run after {after}; empty or invalid results.json seen: 0")
        if inside == 0:
            raise AssertionError("no kill landed inside the write phase: the test did not test anything")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, json.JSONDecodeError, subprocess.CalledProcessError) as e:
        print(f"FAIL: {e}")
        sys.exit(1)
