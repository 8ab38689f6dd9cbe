#!/usr/bin/env python3
"""`mpirun -np 2 attnmech run` (the theory's solve on ScaLAPACK) against the serial run, end to end:
  1. results.json and every .npy of `run markov` equal to the serial run's within 1e-9 relative (each array against
     its largest entry; see test_distributed.cpp for the bound), written once, by rank 0, with one summary on stdout;
  2. a usage error and a run that ends in error (max_iter=1: not converged) are told once, with the serial exit code,
     and no rank is left waiting;
  3. `--version` and `list` say `scalapack: yes (...)`;
  4. stops (issue 37 item 5): SIGTERM to mpirun (what `timeout`, `kill` and a scheduler send) or to one rank during
     a distributed run: every rank stops at the same checkpoint, rank 0 writes the runs so far (`status`
     `cancelled`) and says `stopped by SIGTERM; partial results written` once, within seconds; a memory limit met by
     one rank alone stops the others at their next checkpoint: its message named by rank, rank 0's partial results,
     no 60 s wait and no MPI_Abort.
Usage: test_cli.py ATTNMECH_EXE (AM_PLUGIN_PATH, OPENBLAS_NUM_THREADS=1 and the root variables set by meson)."""
import ast
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

EXE = os.path.abspath(sys.argv[1])  # the MPI run starts in another directory
FAILURES = []
REL = 1e-9
RUN = ["run", "markov", "--set", "P=300", "--set", "P_test=200", "--width", "10", "--set", "widths_scan=10,30"]


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def attnmech(*args, ranks=0, timeout=300, cwd=None):
    cmd = [EXE, *args]
    if ranks:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def excluded(key):
    """Run facts, and the solve's residuals at its end (max|G|, |g|, the decrement: round-off, ~1e-12 of their
    start, so not equal in relative terms; U and the action at the solution are compared instead)."""
    return (key in ("plugins", "threads", "attnmech_version", "grad_max", "grad_vech_norm", "decrement")
            or "time" in key or key == "seconds")


def numbers(node, path, out):
    """Every number of a JSON document, grouped by the list (or object) that holds it."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not excluded(k):
                numbers(v, path + "." + k, out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.setdefault(path, []).append(float(v))
            else:
                numbers(v, f"{path}.{i}", out)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        out.setdefault(path, []).append(float(node))
    return out


def load_npy(path):
    """The numbers of a .npy file (the report library writes little-endian float64 or int64)."""
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 + hlen if data[6] == 1 else 12 + hlen
    header = ast.literal_eval(data[start - hlen:start].decode("latin1"))
    code = {"<f8": "d", "<i8": "q", "|u1": "B", "<f4": "f", "<i4": "i"}[header["descr"]]
    n = math.prod(header["shape"])
    return list(struct.unpack(f"<{n}{code}", data[start:start + n * struct.calcsize(code)]))


def close(a, b):
    if len(a) != len(b):
        return False
    if not b:
        return True
    scale = max(max(abs(x) for x in b if math.isfinite(x)) if any(math.isfinite(x) for x in b) else 0, 1e-300)
    for x, y in zip(a, b):
        if math.isfinite(x) != math.isfinite(y) or (math.isfinite(y) and abs(x - y) > REL * scale):
            return False
    return True


def same_results(serial, mpi):
    a = numbers(json.load(open(os.path.join(mpi, "results.json"))), "", {})
    b = numbers(json.load(open(os.path.join(serial, "results.json"))), "", {})
    check(sorted(a) == sorted(b), "results.json: the same keys")
    bad = [k for k in b if k in a and not close(a[k], b[k])]
    check(not bad, f"results.json: {len(b)} number groups within {REL} relative {bad[:5]}")
    npys = sorted(f for f in os.listdir(serial) if f.endswith(".npy"))
    check(npys == sorted(f for f in os.listdir(mpi) if f.endswith(".npy")), f"the same {len(npys)} .npy files")
    bad = [f for f in npys if not close(load_npy(os.path.join(mpi, f)), load_npy(os.path.join(serial, f)))]
    check(not bad, f".npy arrays within {REL} relative {bad[:5]}")


def test_run(tmp, extra=(), what="kernels as blocks (the default)"):
    """The kernels' phase is distributed by default (blocks, minima, pdsyevr alignment); kernels=full is made by
    rank 0 alone. Both must equal the serial run."""
    print(f"-- {what}")
    serial, mpi = os.path.join(tmp, "serial"), os.path.join(tmp, "mpi")
    r = attnmech(*RUN, *extra, "--out", serial)
    check(r.returncode == 0, f"serial run exits 0 {r.stderr[-300:]}")
    r = attnmech(*RUN, *extra, "--out", mpi, ranks=2, cwd=tmp)
    check(r.returncode == 0, f"mpirun -np 2 run exits 0 {r.stderr[-1500:]}")
    check(r.stdout.count("results written to") == 1, "one summary on stdout (rank 0's)")
    check(sorted(os.listdir(tmp)) == ["mpi", "serial"], f"nothing written but --out {sorted(os.listdir(tmp))}")
    if r.returncode == 0:
        same_results(serial, mpi)


def test_errors():
    r = attnmech("run", "markov", "--set", "P=0", ranks=2, timeout=120)
    s = attnmech("run", "markov", "--set", "P=0")
    check(r.returncode == s.returncode == 2, f"usage error: exit 2 as the serial run ({r.returncode}, {s.returncode})")
    check(r.stderr.count("attnmech: usage error") == 1 and "rank" not in r.stderr,
          f"usage error told once, by rank 0: {r.stderr.strip()[:300]}")
    r = attnmech(*RUN, "--set", "max_iter=1", ranks=2, timeout=120)
    s = attnmech(*RUN, "--set", "max_iter=1")
    check(r.returncode == s.returncode != 0, f"max_iter=1 (not converged): the serial run's exit code ({r.returncode}, {s.returncode})")
    told = [line for line in r.stderr.splitlines() if line.startswith("attnmech")]
    check(told == [line for line in s.stderr.splitlines() if line.startswith("attnmech")],
          f"max_iter=1 (not converged): told once, as the serial run tells it: {told}")


def write_npy(path, shape, values):
    """A little-endian float64 .npy file (C order)."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{n}, " for n in shape)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}d", *values))


def npy_problem(d, P):
    """A problem of one's own where the P×P matrices dominate: P examples of 3 tokens of dimension 2, one layer of
    two heads (the data is 0.3 MB, each P×P matrix 8·P² bytes)."""
    os.makedirs(d)
    x = [math.sin(0.37 * i) + 0.1 * (i % 7) for i in range(P * 3 * 2)]
    write_npy(os.path.join(d, "X_train.npy"), (P, 3, 2), x)
    write_npy(os.path.join(d, "y_train.npy"), (P,), [1.0 if (i * 7919) % 13 < 6 else -1.0 for i in range(P)])
    for h in (1, 2):
        write_npy(os.path.join(d, f"W_l1_h{h}.npy"), (2, 2), [1.0, 0.3 * h, -0.2, 0.5])
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump({"readout": "last", "heads": [2], "widths": [4, 4], "variances": [1, 1, 1],
                   "temperature": 0.1}, f)


def needs_gb(stderr, what):
    """The X of "<what> needs X GB" in a refusal, or None."""
    for line in stderr.splitlines():
        if what in line and " needs " in line:
            return float(line.split(" needs ")[1].split(" GB")[0])
    return None


def test_memory(tmp):
    """The memory check of a distributed run is per rank: with a budget below what a rank needs, every rank stops
    before the solve, told once, with the serial run's exit code; what a rank is said to need is its share — below
    the serial run's need by about half of the P×P matrices (the kernels' phase: 2·8·P² = 0.58 GB at P = 6000,
    half of it per rank on 2 ranks)."""
    d = os.path.join(tmp, "prob")
    npy_problem(d, 6000)
    env = dict(os.environ, AM_MEMORY_LIMIT="10M")  # the data fits; no run of P = 6000 does
    args = ["run", "npy", "--set", "dir=" + d]
    s = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120, env=env)
    r = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "-x", "AM_MEMORY_LIMIT", EXE, *args],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
    check(s.returncode == r.returncode == 1, f"refused: the serial run's exit code ({r.returncode}, {s.returncode})")
    told = [line for line in r.stderr.splitlines() if line.startswith("attnmech")]
    check(len(told) == 1 and "this rank's share of 2 ranks" in told[0] and "AM_MEMORY_LIMIT allows" in told[0],
          f"told once, as one rank's share: {told}")
    whole, share = needs_gb(s.stderr, "the run (P = 6000"), needs_gb(r.stderr, "this rank's share of 2 ranks")
    check(whole is not None and share is not None and 0.2 <= whole - share <= 0.4,
          f"a rank needs its share: {share} GB against the serial run's {whole} GB (0.29 GB less expected)")


def results_status(d):
    try:
        doc = json.load(open(os.path.join(d, "results.json")))
        return doc["status"], [r["run_status"] for r in doc["runs"]]
    except (OSError, ValueError, KeyError):
        return None, []


def stop_after_first_run(tmp, name, target):
    """A distributed width scan stopped by SIGTERM once its first run has finished (rank 0 logs it): to mpirun
    (target "mpirun") or to rank 1 alone (target "rank")."""
    import signal
    import time
    out = os.path.join(tmp, name)
    cmd = ["mpirun", "-np", "2", "--oversubscribe", EXE, "run", "markov", "--set", "P=300", "--set", "P_test=200", "--width",
           "10,30,50,100,300,500,1000", "--out", out]
    err = open(os.path.join(tmp, name + ".err"), "w+")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True, cwd=tmp)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 240 and p.poll() is None:
        err.seek(0)
        if "[run 1/7 N=10] ok" in err.read():
            break
        time.sleep(0.05)
    pid = p.pid
    if target == "rank":  # mpirun starts the local ranks itself; the second child is rank 1 (or 0: both stop alike)
        kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p.pid)], capture_output=True, text=True).stdout.split()
        pid = int(kids[-1]) if kids else p.pid
    sent = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    try:
        code = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        code = None
    took = time.monotonic() - sent
    err.seek(0)
    text = err.read()
    return out, code, took, text


def test_stops(tmp):
    """Issue 37 item 5: a distributed run stopped by a signal writes its partial results; a one-rank failure is
    told at once. mpirun sends SIGTERM to the ranks odls_base_sigkill_timeout (1 s) after it got one, and SIGKILL
    as long after that: rank 0 must have written by then."""
    for target in ("mpirun", "rank"):
        out, code, took, err = stop_after_first_run(tmp, "stop-" + target, target)
        status, runs = results_status(out)
        check(status == "cancelled" and runs[:1] == ["ok"] and len(runs) < 7,
              f"stops: SIGTERM to {target}: results.json written with the first run ok, status cancelled ({status}, {runs})")
        check(err.count("stopped by SIGTERM; partial results written") == 1,
              f"stops: SIGTERM to {target}: 'stopped by SIGTERM' told once {err[-600:]}")
        check(code is not None and code != 0 and took < 30, f"stops: SIGTERM to {target}: ended in {took:.1f} s, exit {code}")
        check("MPI_ABORT" not in err and "Data unpack" not in err, f"stops: SIGTERM to {target}: no MPI_Abort")
        if target == "rank":
            check(code == 143, f"stops: SIGTERM to one rank: mpirun's exit code is the ranks' 143 ({code})")
    # A memory limit on rank 1 alone (a wrapper sets it): rank 1 fails in the task, rank 0 stops at its next checkpoint.
    import time
    wrap = os.path.join(tmp, "rank1-limit.sh")
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export AM_MEMORY_LIMIT=100K; fi\nexec "$@"\n')
    os.chmod(wrap, 0o755)
    out = os.path.join(tmp, "limit1")
    t0 = time.monotonic()
    r = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", wrap, EXE, *RUN, "--out", out], capture_output=True,
                       text=True, timeout=120, cwd=tmp)
    took = time.monotonic() - t0
    told = [line for line in r.stderr.splitlines() if line.startswith("attnmech")]
    check(r.returncode == 1 and took < 30, f"stops: a memory limit on rank 1: exit 1 in {took:.1f} s ({r.returncode})")
    check(any(line.startswith("attnmech (rank 1): error: ") and "AM_MEMORY_LIMIT allows" in line for line in told),
          f"stops: rank 1's refusal told, named: {told}")
    check(any(line.startswith("attnmech: stopped: rank 1 failed; partial results written to ") for line in told),
          f"stops: rank 0 says why it stopped: {told}")
    check(results_status(out)[0] == "cancelled", f"stops: rank 0 wrote its partial results {results_status(out)}")
    check("MPI_ABORT" not in r.stderr and "Data unpack" not in r.stderr, "stops: a one-rank failure needs no MPI_Abort")


def test_version():
    v = attnmech("--version").stdout
    check("scalapack: yes (" in v, f"--version: {v.strip()}")
    lst = attnmech("list").stdout
    check("scalapack: yes (" in lst, "list: scalapack: yes (...)")


def main():
    test_version()
    with tempfile.TemporaryDirectory() as tmp:
        test_run(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        test_run(tmp, ("--set", "kernels=full"), "kernels=full (whole kernels, by rank 0)")
    test_errors()
    with tempfile.TemporaryDirectory() as tmp:
        test_memory(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        test_stops(tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
