#!/usr/bin/env python3
"""attnmech sweep with bad SPEC files, through the CLI, each a repro of a defect:
a spec nested 10^5 deep (stack overflow), a FIFO / /dev/zero / a directory as SPEC (hang, "unexpected end of
input"), a seed range of 10^7 (10.9 GB before it was killed, --list included), a range past 2^63 (wrapped to
-9.2e18), a NUL in the task name (ran markov), and a FIFO as a point's results.json (hung the resume and the
aggregate). Every case must end at once with its exit code and a message naming the problem; peak RSS is read
with wait4. ~1 s release (nothing is computed).
Usage: test_bad_specs.py ATTNMECH_EXE (AM_PLUGIN_PATH and OPENBLAS_NUM_THREADS=1 set by meson)."""
import json
import os
import subprocess
import sys
import tempfile
import time

EXE = sys.argv[1]
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def run(*args, env=None, timeout=60):
    """(exit code, stderr, peak RSS in MB, seconds) of `attnmech ARGS`; killed after `timeout` s (= a hang)."""
    t0 = time.monotonic()
    p = subprocess.Popen([EXE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})))
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return -1, "hung (killed after %d s)" % timeout, 0, timeout
    return p.returncode, err, 0.0, time.monotonic() - t0  # the peak RSS: run_rss


def run_rss(*args, env=None, timeout=60):
    """Like run() with the child's own peak RSS (wait4), for the cases that used to eat the machine."""
    t0 = time.monotonic()
    p = subprocess.Popen([EXE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})))
    deadline = t0 + timeout
    err = ""
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            return -1, "hung", 0, timeout
        time.sleep(0.02)
    err = p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err, ru.ru_maxrss / 1024.0, time.monotonic() - t0


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def test_deep_nesting(tmp):
    # 10^5 levels in the ignored "plot" block: 200 KB; the reader stops at level 128 before anything recurses.
    spec = write(tmp, "deep.json", '{"task": "markov", "plot": ' + "[" * 100000 + "]" * 100000 + "}")
    code, err, _, _ = run("sweep", spec, "--list")
    check(code == 2 and "nested deeper than 128 levels" in err,
          f"deep nesting: a sweep spec nested 10^5 deep is refused, exit 2 ({code}: {err.strip()[:120]})")
    spec = write(tmp, "deep2.json", '{"task": "markov", "axes": {"P": ' + "[" * 129 + "]" * 129 + "}}")
    code, err, _, _ = run("sweep", spec, "--list")
    check(code == 2 and "nested deeper than 128 levels" in err, f"deep nesting: 129 levels under axes, exit 2 ({code})")


_rss_bound = []


def rss_bound():
    """Peak RSS (MB) a refusal may reach: the CLI's own footprint (`--version`: ~10 MB in a release build, ~90 MB
    under ASan's shadow memory) plus 100 MB. Expanding any grid below would take ≥ 0.4 GB (10^5 points of 4.1 KB
    measured), so a process under the bound did not build it."""
    if not _rss_bound:
        _rss_bound.append(run_rss("--version")[2] + 100.0)
    return _rss_bound[0]


def test_not_regular(tmp):
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    # Before: open() blocked for ever waiting for a writer. A hang shows as exit -1 after 20 s.
    code, err, _, sec = run("sweep", fifo, "--list", timeout=20)
    check(code == 2 and "is a FIFO, not a sweep spec" in err and sec < 10,
          f"not a file: a FIFO as SPEC is refused at once, exit 2 ({code}, {sec:.1f} s: {err.strip()[:100]})")
    code, err, _, sec = run("sweep", "/dev/zero", "--out", os.path.join(tmp, "o"), timeout=20)
    check(code == 2 and "/dev/zero: is a character device, not a sweep spec" in err,
          f"not a file: /dev/zero as SPEC is refused, exit 2 ({code}: {err.strip()[:100]})")
    code, err, _, _ = run("sweep", tmp + "/", "--list")
    check(code == 2 and "is a directory, not a sweep spec" in err,
          f"not a file: a directory as SPEC says so, exit 2 ({code}: {err.strip()[:100]})")
    big = os.path.join(tmp, "big.json")
    with open(big, "wb") as f:
        f.truncate(17 << 20)  # sparse: 17 MB of zeros, over the 16 MB a spec may have; refused before reading
    code, err, rss, _ = run_rss("sweep", big, "--list")
    check(code == 2 and "larger than 16 MB, too large for a sweep spec" in err and rss < rss_bound(),
          f"too large: a 17 MB SPEC is refused before it is read, exit 2 ({code}, {rss:.0f} MB: {err.strip()[:100]})")
    code, err, _, _ = run("sweep", os.path.join(tmp, "missing.json"), "--list")
    check(code == 1 and "cannot open: No such file or directory" in err, f"not a file: a missing SPEC, exit 1 ({code})")


def test_huge_grid(tmp):
    # Before: 10.9 GB before it was killed (10^7 points made by --list). Now counted from the axes, nothing expanded:
    # the bound on the peak RSS (100 MB) is the executable with its plugins loaded, with room for allocator noise.
    spec = write(tmp, "huge.json", '{"task": "markov", "axes": {"seed": {"range": [0, 1e7]}}}')
    code, err, rss, sec = run_rss("sweep", spec, "--list")
    check(code == 2 and "axis 'seed': range [0,10000000.0] has more than 100000 values" in err and rss < rss_bound(),
          f"huge grid: a seed range of 10^7 is refused before expanding, exit 2 ({code}, {rss:.0f} MB, {sec:.2f} s: "
          f"{err.strip()[:120]})")
    axes = ", ".join(f'"a{i}": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]' for i in range(6))
    spec = write(tmp, "product.json", '{"task": "markov", "axes": {' + axes + "}}")
    code, err, rss, sec = run_rss("sweep", spec, "--list")
    check(code == 2 and "the grid has more than 100000 points" in err and rss < rss_bound(),
          f"huge grid: six axes of 10 values (10^6 points) are refused, exit 2 ({code}, {rss:.0f} MB: {err.strip()[:100]})")
    # Within the cap but beyond the memory budget: am_memory_check's message, exit 1.
    # 10^5 points of 21 settings: 0.5 GB estimated (600 + 200 x 21 bytes a point; 4.1 KB measured), over 0.1 GB.
    fixed = ", ".join(f'"k{i}": {i}' for i in range(20))
    spec = write(tmp, "budget.json", '{"task": "markov", "fixed": {' + fixed + '}, "axes": {"seed": {"range": [0, 100000]}}}')
    code, err, rss, sec = run_rss("sweep", spec, "--list", env={"AM_MEMORY_LIMIT": "100M"})
    check(code == 1 and "a grid of 100000 points needs 0.5 GB; AM_MEMORY_LIMIT allows 0.1 GB" in err and rss < rss_bound(),
          f"huge grid: the grid's memory is checked against AM_MEMORY_LIMIT, exit 1 ({code}: {err.strip()[:140]})")


def test_range_checks(tmp):
    cases = [
        ('{"range": [1e19, 1.1e19, 1e18]}', "does not fit a 64-bit integer", "range overflow: 1e19 is an error naming"),
        ('{"range": [-1e19, -9e18, 1e17]}', "does not fit a 64-bit integer", "range overflow: -1e19 too"),
        ('{"range": [1e16, 1.0000000000000010e16, 0.5]}', "values repeat", "range: a step below the resolution"),
        ('{"range": [0, 1, 0]}', "step must be positive", "range: a zero step"),
        ('{"range": [5, 1]}', "empty range [5,1]", "range: stop below start"),
    ]
    for i, (rng, words, what) in enumerate(cases):
        spec = write(tmp, f"range{i}.json", '{"task": "markov", "axes": {"seed": ' + rng + "}}")
        code, err, _, _ = run("sweep", spec, "--list")
        check(code == 2 and "axis 'seed'" in err and words in err, f"{what} the key, exit 2 ({code}: {err.strip()[:120]})")


def test_nul(tmp):
    # Before: "markov\u0000x" became the C string "markov" and ran the markov task.
    for key, spec in (("task", '{"task": "markov\\u0000x"}'), ("fixed", '{"task": "markov", "fixed": {"P\\u0000": 3}}'),
                      ("value", '{"task": "markov", "axes": {"P": ["10\\u00001"]}}')):
        code, err, _, _ = run("sweep", write(tmp, f"nul_{key}.json", spec), "--list")
        check(code == 2 and "holds a NUL character" in err,
              f"NUL in names: a NUL in the {key} is refused, exit 2 ({code}: {err.strip()[:120]})")


def test_point_fifo(tmp):
    # A FIFO in place of a point's results.json (a sweep DIR others can write): the resume check and the
    # aggregate read it with the same reader, see no complete point, and go on.
    spec = write(tmp, "one.json", json.dumps({"task": "markov", "fixed": {"P": 20},
                                              "axes": {"seed": [0]}}))
    out = os.path.join(tmp, "out")
    listed = subprocess.run([EXE, "sweep", spec, "--list"], capture_output=True, text=True, timeout=60).stdout
    keys = [w for w in listed.split() if len(w) == 16 and all(c in "0123456789abcdef" for c in w)]
    if not keys:
        check(False, f"point FIFO: --list shows the point's key ({listed[:200]})")
        return
    os.makedirs(os.path.join(out, "points", keys[0]))
    os.mkfifo(os.path.join(out, "points", keys[0], "results.json"))
    write(out, "spec.json", open(spec).read())
    code, err, _, sec = run("sweep", "--aggregate", out, timeout=20)
    check(code != -1 and sec < 10, f"point FIFO: sweep --aggregate reads a FIFO results.json without hanging ({code}, {sec:.1f} s)")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for t in (test_deep_nesting, test_not_regular, test_huge_grid, test_range_checks, test_nul, test_point_fifo):
            d = os.path.join(tmp, t.__name__)
            os.makedirs(d)
            t(d)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
