#!/usr/bin/env python3
"""attnmech sweep, end to end through the CLI. Cheap: ~5 s release (grids of 2-10 points, each well
under a second). Checks:
  1. one serial sweep (--jobs 1) = the same sweep on threads = `mpirun -np 2` = `--shard 0/2` + `--shard 1/2` +
     `--aggregate`: every point's results.json equal (timings, plugin paths, thread counts, versions excluded),
     sweep.json and sweep.csv byte for byte (the MPI part is skipped only when attnmech was built without MPI);
  2. a sweep killed (SIGKILL: a dead rank, its claim left behind) and stopped (SIGTERM: exit 143) after some
     points, then re-run, computes each point exactly once (counted from the summary lines; completed points'
     results.json untouched) and ends with the uninterrupted sweep's aggregate; under mpirun, SIGTERM to mpirun or
     to one rank stops the farm with the completed points kept and `stopped by signal 15`;
  3. a failing point is recorded (status, message) and the others finish; the exit code is 1;
  4. claims: a live claim on another host holds its point (exit 1), a stale one (dead pid, this host) is taken;
  5. keys: the directory name is the FNV-1a 64 of point.json's key_text; usage errors exit 2; a point whose results.json
     is another point's, whose directory is a symlink or whose .npy is corrupt is computed again;
  6. --warm-start along a width axis: fewer Newton iterations, the same minimum.
Usage: test_sweep.py ATTNMECH_EXE SPEC_DIR (AM_PLUGIN_PATH and OPENBLAS_NUM_THREADS=1 set by meson)."""
import csv
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

EXE, SPECS = sys.argv[1], sys.argv[2]
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def sweep(*args, env=None, mpi=0):
    cmd = [EXE, "sweep", *args]
    if mpi:
        cmd = ["mpirun", "-np", str(mpi), "--oversubscribe"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def excluded(key):
    return key in ("plugins", "threads", "attnmech_version") or ("time" in key and key.endswith("_s")) or key == "seconds"


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if not excluded(k)}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def points(d):
    out = {}
    base = os.path.join(d, "points")
    for k in sorted(os.listdir(base)):
        if re.fullmatch(r"[0-9a-f]{16}", k) and os.path.exists(os.path.join(base, k, "results.json")):
            out[k] = strip(json.load(open(os.path.join(base, k, "results.json"))))
    return out


def npy_f8(path):
    """The doubles of a little-endian float64 .npy file (format 1.0 or 2.0), without NumPy."""
    data = read(path)
    head = 10 if data[6] == 1 else 12
    n = struct.unpack("<H" if data[6] == 1 else "<I", data[8:head])[0]
    body = data[head + n:]
    return struct.unpack(f"<{len(body) // 8}d", body)


def read(path):
    return open(path, "rb").read()


def same_sweep(a, b, what):
    pa, pb = points(a), points(b)
    check(len(pa) > 0 and pa == pb, f"{what}: every point's results.json equal ({len(pa)} points)")
    for f in ("sweep.csv", "sweep.json"):
        check(read(os.path.join(a, f)) == read(os.path.join(b, f)), f"{what}: {f} byte for byte")


def counts(stderr):
    m = re.search(r"sweep: (\d+) points: (\d+) run \((\d+) ok, (\d+) warning, (\d+) failed\), (\d+) already complete", stderr)
    return tuple(int(x) for x in m.groups()) if m else None


def mpi_env():
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    # Open MPI's own allocations are not ours: no leak report for them under AddressSanitizer.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return env


def test_equal_everywhere(tmp):
    for spec in ("grid.json", "replica.json"):
        s = os.path.join(SPECS, spec)
        serial, threads, shards, mpi = (os.path.join(tmp, spec + x) for x in ("-serial", "-threads", "-shards", "-mpi"))
        r = sweep(s, "--out", serial, "--jobs", "1")
        check(r.returncode == 0, f"{spec}: serial sweep exits 0 ({r.returncode}) {r.stderr[-300:] if r.returncode else ''}")
        n = counts(r.stderr)
        check(n is not None and n[0] == n[1] == n[2], f"{spec}: serial sweep ran every point ok {n}")
        r = sweep(s, "--out", threads, "--jobs", "2")
        check(r.returncode == 0, f"{spec}: sweep on 2 threads exits 0")
        same_sweep(serial, threads, f"{spec}: serial vs 2 threads")
        for k in (0, 1):
            r = sweep(s, "--out", shards, "--shard", f"{k}/2", "--jobs", "1")
            check(r.returncode == 0, f"{spec}: --shard {k}/2 exits 0")
        r = sweep("--aggregate", shards)
        check(r.returncode == 0, f"{spec}: --aggregate of the two shards exits 0 {r.stdout.strip()}")
        same_sweep(serial, shards, f"{spec}: serial vs shards 0/2 + 1/2 + aggregate")
        version = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout
        if "MPI" not in version.replace("without MPI", "") or not shutil.which("mpirun"):
            print(f"skip  {spec}: mpirun -np 2 (attnmech built without MPI or no mpirun): {version.strip()}")
            continue
        r = sweep(s, "--out", mpi, mpi=2, env=mpi_env())
        check(r.returncode == 0 and "on 2 MPI ranks" in r.stderr,
              f"{spec}: mpirun -np 2 sweep exits 0 on 2 ranks ({r.returncode}) {r.stderr[-400:] if r.returncode else ''}")
        same_sweep(serial, mpi, f"{spec}: serial vs mpirun -np 2")


def wait_for_points(d, n, proc, limit=60):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit and proc.poll() is None:
        base = os.path.join(d, "points")
        done = 0
        if os.path.isdir(base):
            done = sum(os.path.exists(os.path.join(base, k, "point.json")) for k in os.listdir(base)
                       if re.fullmatch(r"[0-9a-f]{16}", k))
        if done >= n:
            return done
        time.sleep(0.005)
    return -1


def test_kill_and_resume(tmp):
    s = os.path.join(SPECS, "slow.json")
    ref, d = os.path.join(tmp, "slow-ref"), os.path.join(tmp, "slow")
    r = sweep(s, "--out", ref, "--jobs", "1", "--quiet")
    check(r.returncode == 0, "slow: uninterrupted reference sweep exits 0")
    total = counts(r.stderr)[0]
    runs = 0
    # 1: SIGKILL after 2 points (a dead rank: its claim stays behind, stale)
    p = subprocess.Popen([EXE, "sweep", s, "--out", d, "--jobs", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_points(d, 2, p)
    p.send_signal(signal.SIGKILL)
    p.wait()
    before = points(d)
    stamps = {k: os.stat(os.path.join(d, "points", k, "results.json")).st_mtime_ns for k in before}
    check(2 <= len(before) < total, f"slow: SIGKILL left {len(before)} complete points of {total}")
    runs += len(before)
    # 2: SIGTERM after 2 more: exit 143, the point in flight is not written
    p = subprocess.Popen([EXE, "sweep", s, "--out", d, "--jobs", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_points(d, len(before) + 2, p)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate()
    c = counts(err)
    check(p.returncode == 143, f"slow: SIGTERM exits 143 ({p.returncode})")
    check(c is not None and c[5] == len(before), f"slow: the re-run after SIGKILL found {len(before)} complete ({c})")
    runs += c[1] if c else 0
    mid = points(d)
    check(all(stamps[k] == os.stat(os.path.join(d, "points", k, "results.json")).st_mtime_ns for k in stamps),
          "slow: points completed before the kill were not recomputed (results.json untouched)")
    # 3: to the end
    r = sweep(s, "--out", d, "--jobs", "1")
    c = counts(r.stderr)
    check(r.returncode == 0, "slow: the resumed sweep exits 0")
    check(c is not None and c[5] == len(mid) and c[1] == total - len(mid),
          f"slow: resumed sweep ran only the {total - len(mid)} missing points ({c})")
    runs += c[1] if c else 0
    check(runs == total, f"slow: {total} points computed exactly once over the three runs ({runs} runs)")
    check(not os.listdir(os.path.join(d, "claims")), "slow: no claim file left")
    same_sweep(ref, d, "slow: interrupted twice + resumed vs uninterrupted")
    r = sweep(s, "--out", d)
    c = counts(r.stderr)
    check(r.returncode == 0 and c is not None and c[1] == 0 and c[5] == total, f"slow: a third run computes nothing ({c})")


def test_mpi_stop(tmp):
    """Issue 37 item 5: SIGTERM to mpirun (mpirun passes it on to the ranks after odls_base_sigkill_timeout, 1 s) or
    to one rank stops the whole farm: the points completed are kept, rank 0 says `stopped by signal 15`, no claim
    is left behind, and the same command resumes with the missing points only."""
    version = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout
    if "MPI" not in version.replace("without MPI", "") or not shutil.which("mpirun"):
        print("skip  mpi stop: attnmech built without MPI or no mpirun")
        return
    spec = os.path.join(tmp, "mpi-stop.json")
    with open(spec, "w") as f:
        json.dump({"task": "markov", "fixed": {"P": 400, "P_test": 40, "threads": 1},
                   "axes": {"width": [10, 100, 1000], "seed": {"range": [0, 4]}}}, f)
    for target in ("mpirun", "rank"):
        d = os.path.join(tmp, "mpi-stop-" + target)
        p = subprocess.Popen(["mpirun", "-np", "2", "--oversubscribe", EXE, "sweep", spec, "--out", d],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=mpi_env())
        wait_for_points(d, 2, p, limit=120)
        pid = p.pid
        if target == "rank":
            kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p.pid)], capture_output=True, text=True).stdout.split()
            pid = int(kids[-1]) if kids else p.pid
        os.kill(pid, signal.SIGTERM)
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        done = len(points(d))
        check("stopped by signal 15; completed points are kept" in err,
              f"mpi stop ({target}): rank 0 says it was stopped {err[-500:]}")
        check(2 <= done < 12, f"mpi stop ({target}): {done} of 12 points complete and kept")
        check(p.returncode == (143 if target == "rank" else 1),
              f"mpi stop ({target}): exit {p.returncode} (mpirun's: 1 after a signal to it, else the ranks' 143)")
        check(not os.listdir(os.path.join(d, "claims")), f"mpi stop ({target}): no claim left behind")
        r = sweep(spec, "--out", d, "--quiet")
        c = counts(r.stderr)
        check(r.returncode == 0 and c is not None and c[5] == done and c[1] == 12 - done,
              f"mpi stop ({target}): the re-run computes only the {12 - done} missing points ({c})")


def test_warm_start(tmp):
    """--warm-start along width: fewer Newton iterations, the same minimum (action within 1e-7 relative: Newton
    stops at a gradient of ~1e-10, so two starting points agree far below that; accuracies exactly)."""
    s = os.path.join(SPECS, "slow.json")
    rows = {}
    for mode in ("--no-warm-start", "--warm-start"):
        d = os.path.join(tmp, "warm" + mode)
        r = sweep(s, "--out", d, "--jobs", "1", "--quiet", mode)
        check(r.returncode == 0, f"warm: {mode} sweep exits 0")
        rows[mode] = list(csv.DictReader(open(os.path.join(d, "sweep.csv"))))
    cold, warm = rows["--no-warm-start"], rows["--warm-start"]
    it = [sum(int(x["runs.0.solver.iterations"]) for x in rows[m]) for m in ("--no-warm-start", "--warm-start")]
    check(it[1] < it[0], f"warm: fewer Newton iterations along width ({it[1]} < {it[0]})")
    # Accuracies are counts, equal when no test mean is near a sign flip: the two starts stop within the stopping
    # rule of the same minimum (the means ~1e-7 apart at most), so the premise is a margin far above that
    base = os.path.join(tmp, "warm--no-warm-start", "points")
    margin = min(min(abs(m) for m in npy_f8(os.path.join(base, k, p["runs"][0]["test"]["mean"]["npy_file"])))
                 for k, p in points(os.path.join(tmp, "warm--no-warm-start")).items())
    check(margin >= 1e-5, f"warm: every test mean at least 1e-5 from a sign flip (smallest {margin:.3g})")
    check(all(a["runs.0.test.accuracy"] == b["runs.0.test.accuracy"] for a, b in zip(cold, warm)), "warm: same test accuracies")
    check(all(abs(float(a["runs.0.action"]) - float(b["runs.0.action"])) <= 1e-7 * abs(float(a["runs.0.action"]))
              for a, b in zip(cold, warm)), "warm: same action at the minimum (1e-7 relative)")


def test_failing_point(tmp):
    d = os.path.join(tmp, "failing")
    r = sweep(os.path.join(SPECS, "failing.json"), "--out", d)
    c = counts(r.stderr)
    check(r.returncode == 1, f"failing: exit code 1 ({r.returncode})")
    check(c is not None and c[1:5] == (3, 2, 0, 1), f"failing: 3 run, 2 ok, 1 failed ({c})")
    check("FAILED: parameter 'P'" in r.stderr, "failing: the progress line names the failure")
    j = json.load(open(os.path.join(d, "sweep.json")))
    st = {p["axes"]["P"]: (p["status"], p.get("message", "")) for p in j["points"]}
    check(st[30][0] == "ok" and st[40][0] == "ok", "failing: P=30 and P=40 complete")
    check(st[1][0] == "error" and "out of range" in st[1][1], f"failing: P=1 recorded as error with its message {st[1]}")
    check(j["counts"] == {"points": 3, "complete": 2, "failed": 1, "missing": 0}, f"failing: counts {j['counts']}")
    rows = open(os.path.join(d, "sweep.csv")).read().splitlines()
    check(len(rows) == 4 and rows[0].startswith("key,P,status,"), "failing: sweep.csv has a header and 3 rows")
    r = sweep(os.path.join(SPECS, "failing.json"), "--out", d)
    c = counts(r.stderr)
    check(r.returncode == 1 and c is not None and c[1] == 1 and c[5] == 2, f"failing: a re-run retries only the failed point ({c})")


def test_point_progress(tmp):
    # A long point reports its own progress between the per-point lines (every 30 s; here every report), also
    # when stderr is a pipe; --quiet keeps it silent. One tiny Markov point (data generation and Newton report).
    spec = os.path.join(tmp, "one.json")
    with open(spec, "w") as f:
        f.write('{"task": "markov", "fixed": {"P": 40, "P_test": 40, "seq_len": 10, "feature_dim": 20, '
                '"threads": 1}, "axes": {"width": [10]}}')
    env = dict(os.environ, AM_SWEEP_PROGRESS_SECONDS="0")
    r = sweep(spec, "--out", os.path.join(tmp, "progress"), "--jobs", "1", env=env)
    lines = [l for l in r.stderr.splitlines() if l.startswith("[sweep] ") and " running " in l]
    check(r.returncode == 0 and len(lines) > 0, f"progress: a running point reports its progress ({len(lines)} lines)")
    check(all(re.match(r"\[sweep\] [0-9a-f]{16} running [0-9]+ s: ", l) for l in lines),
          f"progress: lines name the point and the time ({lines[:1]})")
    r = sweep(spec, "--out", os.path.join(tmp, "progress-quiet"), "--jobs", "1", "--quiet", env=env)
    check(r.returncode == 0 and " running " not in r.stderr, "progress: --quiet keeps a running point silent")


def test_claims_and_keys(tmp):
    s = os.path.join(SPECS, "failing.json")
    d = os.path.join(tmp, "claims")
    listing = subprocess.run([EXE, "sweep", s, "--list"], capture_output=True, text=True).stdout
    keys = re.findall(r"^([0-9a-f]{16})\s", listing, re.M)
    check(len(keys) == 3, f"keys: --list shows 3 points ({len(keys)})")
    os.makedirs(os.path.join(d, "claims"))
    with open(os.path.join(d, "claims", keys[0]), "w") as f:
        f.write("1 some-other-host.example\n")  # a live claim elsewhere: held
    with open(os.path.join(d, "claims", keys[1]), "w") as f:
        dead = subprocess.Popen(["true"])
        dead.wait()
        f.write(f"{dead.pid} {socket.gethostname()}\n")  # a dead process here: stale
    r = sweep(s, "--out", d)
    c = counts(r.stderr)
    check(r.returncode == 1 and "held" in r.stderr and "some-other-host.example" in r.stderr,
          f"claims: a live claim holds its point (exit {r.returncode})")
    check(c is not None and c[1] == 2, f"claims: the stale claim was taken over, 2 points run ({c})")
    check(os.path.exists(os.path.join(d, "claims", keys[0])), "claims: the foreign claim is left alone")
    pj = json.load(open(os.path.join(d, "points", keys[1], "point.json")))
    h = 0xcbf29ce484222325
    for b in pj["key_text"].encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    check(f"{h:016x}" == keys[1] == pj["key"], "keys: the directory name is FNV-1a 64 of point.json key_text")
    check(pj["settings"]["P"] in ("1", "30", "40") and pj["attnmech_version"], "keys: point.json holds the settings in clear and the version")
    for args, what in (([s], "missing --out"), ([s, "--out", d, "--shard", "2/2"], "bad --shard"),
                       ([os.path.join(SPECS, "test_sweep.py"), "--out", d], "SPEC not JSON")):
        r = sweep(*args)
        check(r.returncode == 2, f"usage: {what} exits 2 ({r.returncode})")
    bad = os.path.join(tmp, "bad.json")
    for spec, needle in (({"task": "markov", "fixed": {"no_such_key": 1}, "axes": {"seed": [0, 1]}}, "no_such_key"),
                         ({"task": "markov", "zip": [{"P": [10, 20], "P_test": [5]}]}, "zip group 0"),
                         ({"task": "markov", "fixed": {"P": 10}, "axes": {"P": [10, 20]}}, "both a fixed setting and an axis"),
                         ({"task": "markov", "axis": {"P": [10]}}, "unknown SPEC key 'axis'"),
                         ({"task": "markov", "axes": {"seed": {"range": [3, 3]}}}, "empty range")):
        with open(bad, "w") as f:
            json.dump(spec, f)
        r = sweep(bad, "--out", os.path.join(tmp, "bad"))
        check(r.returncode == 2 and needle in r.stderr, f"usage: SPEC error '{needle}' exits 2 ({r.returncode})")
    with open(bad, "w") as f:  # grid order and keys: ranges, zip groups, the product (first axis slowest)
        json.dump({"task": "markov", "fixed": {"P_test": 10}, "axes": {"seed": {"range": [0, 1, 0.5]}},
                   "zip": [{"P": [10, 20], "stay_prob_pos": [0.7, 0.8]}], "cost": {"P": 1}}, f)
    listing = subprocess.run([EXE, "sweep", bad, "--list"], capture_output=True, text=True).stdout
    rows = re.findall(r"^[0-9a-f]{16}  cost (\S+)\s+(.*)$", listing, re.M)
    check([r[1] for r in rows] == ["seed=0 P=20 stay_prob_pos=0.8", "seed=0.5 P=20 stay_prob_pos=0.8",
                                   "seed=0 P=10 stay_prob_pos=0.7", "seed=0.5 P=10 stay_prob_pos=0.7"],
          f"spec: range with a step, zip group, costliest (P) first, then grid order ({rows})")


def test_point_json_and_stale_temps(tmp):
    """Issue 23 item 8: a complete point whose point.json went missing gets it back on the next run; a .tmp-
    directory left in points/ by a killed writer (its pid dead on this host) is removed; a live one is kept."""
    s = os.path.join(SPECS, "grid.json")
    d = os.path.join(tmp, "pointjson")
    r = sweep(s, "--out", d, "--quiet")
    check(r.returncode == 0, f"point.json: first sweep exits 0 ({r.returncode}) {r.stderr[-300:]}")
    keys = sorted(k for k in os.listdir(os.path.join(d, "points")) if re.fullmatch(r"[0-9a-f]{16}", k))
    pj = os.path.join(d, "points", keys[0], "point.json")
    before = read(pj)
    os.remove(pj)
    h = 0xcbf29ce484222325
    for b in socket.gethostname().encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = os.path.join(d, "points", f"{keys[1]}.tmp-{dead.pid}.{h:016x}"[:-8] + "-AbC123")
    live = os.path.join(d, "points", f"{keys[1]}.tmp-{os.getpid()}.{h:016x}"[:-8] + "-LiVe12")
    for x in (stale, live):
        os.makedirs(os.path.join(x, "sub"))
    r = sweep(s, "--out", d, "--quiet")
    check(r.returncode == 0 and os.path.exists(pj), f"point.json: rewritten when missing (exit {r.returncode})")
    if os.path.exists(pj):
        check(read(pj) == before, "point.json: the rewritten file equals the first one")
    check(not os.path.exists(stale), "stale .tmp-: a dead writer's directory in points/ is removed")
    check(os.path.exists(live), "stale .tmp-: a live writer's directory is kept")


def test_point_identity(tmp):
    """Issue 37 items 7-8: a point counts as complete only when its directory is its own: a results.json copied from
    another point, a point directory that is a symlink, or a truncated / mis-shaped / symlinked .npy of the point
    make it incomplete: it is computed again (a warning says why), and the aggregate equals the clean one. A
    results.json of an older attnmech (no sweep_point) is still complete when its point.json names the point."""
    s = os.path.join(SPECS, "grid.json")
    ref, d = os.path.join(tmp, "ident-ref"), os.path.join(tmp, "ident")
    r = sweep(s, "--out", ref, "--quiet")
    check(r.returncode == 0, f"identity: reference sweep exits 0 {r.stderr[-300:]}")
    shutil.copytree(ref, d, symlinks=True)
    keys = sorted(k for k in os.listdir(os.path.join(d, "points")) if re.fullmatch(r"[0-9a-f]{16}", k))
    pdir = lambda k: os.path.join(d, "points", k)
    doc = json.load(open(os.path.join(pdir(keys[0]), "results.json")))
    check(doc.get("sweep_point", {}).get("key") == keys[0], f"identity: results.json names its point {doc.get('sweep_point')}")
    npys = sorted(f for f in os.listdir(pdir(keys[2])) if f.endswith(".npy") and f != "runs.0.U.0.npy")
    # 0: another point's results; 1: the directory a symlink to another point's; 2: a truncated .npy;
    # 3: an .npy of another shape; 4: an .npy that is a symlink; 5: an older attnmech's document (kept)
    shutil.copy(os.path.join(pdir(keys[7]), "results.json"), os.path.join(pdir(keys[0]), "results.json"))
    shutil.rmtree(pdir(keys[1]))
    os.symlink(pdir(keys[6]), pdir(keys[1]))
    with open(os.path.join(pdir(keys[2]), npys[0]), "r+b") as f:
        f.truncate(90)
    shutil.copy(os.path.join(pdir(keys[3]), "runs.0.U.0.npy"), os.path.join(pdir(keys[3]), npys[0]))
    os.remove(os.path.join(pdir(keys[4]), npys[0]))
    os.symlink(os.path.join(pdir(keys[6]), npys[0]), os.path.join(pdir(keys[4]), npys[0]))
    legacy = os.path.join(pdir(keys[5]), "results.json")
    old = json.load(open(legacy))
    del old["sweep_point"]
    json.dump(old, open(legacy, "w"))
    stamp = os.stat(legacy).st_mtime_ns
    r = sweep(s, "--out", d)
    c = counts(r.stderr)
    check(r.returncode == 0 and c is not None and c[1] == 5 and c[5] == 3,
          f"identity: the 5 corrupted points are run again, the others kept ({c}) {r.stderr[-600:]}")
    for k, words in ((keys[0], f"is point {keys[7]}'s, not this one's"), (keys[1], "is a symbolic link"),
                     (keys[2], "truncated"), (keys[3], "the reference says"), (keys[4], "is a symbolic link")):
        check(f"warning: point {k}: " in r.stderr and words in r.stderr, f"identity: {k} said why: '{words}'")
    check(not os.path.islink(pdir(keys[1])) and os.path.isdir(pdir(keys[1])), "identity: the symlinked point is a directory again")
    check(os.stat(legacy).st_mtime_ns == stamp, "identity: an older attnmech's point (point.json names it) is kept")
    old["sweep_point"] = json.load(open(os.path.join(ref, "points", keys[5], "results.json")))["sweep_point"]
    json.dump(old, open(legacy, "w"))  # as the clean sweep wrote it, for the comparison
    same_sweep(ref, d, "identity: corrupted + re-run vs clean")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        test_equal_everywhere(tmp)
        test_kill_and_resume(tmp)
        test_mpi_stop(tmp)
        test_warm_start(tmp)
        test_failing_point(tmp)
        test_point_progress(tmp)
        test_claims_and_keys(tmp)
        test_point_json_and_stale_temps(tmp)
        test_point_identity(tmp)
        print(f"{len(FAILURES)} failed ({time.monotonic() - t0:.1f} s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
