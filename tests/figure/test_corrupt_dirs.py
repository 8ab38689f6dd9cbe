#!/usr/bin/env python3
"""Figure and sweep directories corrupted between runs (issue 37 items 7 and 8): a property harness.

1. The named cases: a truncated, a mis-shaped (another array of the point, another shape) and a symlinked `.npy` of
   the point a heat map draws. `figure --plot-only` refuses the point (exit 1, the file and the reader's reason on
   stderr, no 1x1 NaN panel: the panel says "no data"); `figure --out` computes it again and draws the clean
   figure.json. `--plot-only` of a missing directory is an error that creates nothing.
2. Random rounds: a clean tiny figure (tests/figure/tiny.json, 8 Markov points) and a clean sweep (tests/sweep/
   grid.json, 8 points) are corrupted with 1-3 random damages per round, drawn from: truncation, garbage bytes,
   deletion of a file or a point directory, a point directory or an .npy replaced by a symlink to another point's,
   another point's results.json, an .npy replaced by another of the point's arrays (another shape), a FIFO or a
   directory at a file's name, a stray file at a point's name, empty / garbage / future-dated / dead claims, a dead
   writer's .tmp- directory. Then:
   * `figure --plot-only` / `sweep --aggregate` end by themselves (no signal, no hang) with exit 0, 1 or 2, and a
     figure drawn with exit 0 that says no point is missing is the clean one (a corrupt point is never drawn);
   * `figure --out` / `sweep --out` exit 0 and give the clean figure.json / sweep.csv and sweep.json byte for byte
     (the damaged points are computed again, with the same seeds), no claim and no dead writer's .tmp- is left.
   Not covered, by design: bytes changed in place inside an array or a number (no checksums: such a file reads as
   valid data).
AM_CORRUPT_ROUNDS (default 6 per directory) and AM_CORRUPT_SEED (default: from the clock) repeat a failure; the
seed is printed with every failure.
Usage: test_corrupt_dirs.py ATTNMECH_EXE SOURCE_DIR (AM_PLUGIN_PATH, OPENBLAS_NUM_THREADS=1, AM_PLOT_FORMATS=svg)."""
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

EXE, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
FIGURE = os.path.join(SRC, "tests", "figure", "tiny.json")
GRID = os.path.join(SRC, "tests", "sweep", "grid.json")
SEED = int(os.environ.get("AM_CORRUPT_SEED", str(int(time.time()) % 100000)))
ROUNDS = int(os.environ.get("AM_CORRUPT_ROUNDS", "6"))
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def am(*args, timeout=180):
    t0 = time.monotonic()
    try:
        r = subprocess.run([EXE, *args], capture_output=True, text=True, errors="replace", timeout=timeout)
        return r.returncode, r.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return None, "timed out", timeout


def figure_json(d):
    try:
        return re.sub(r'"attnmech_version": "[^"]*"', "", open(os.path.join(d, "figure.json")).read())
    except OSError as e:
        return str(e)


def read(path):
    try:
        return open(path, "rb").read()
    except OSError as e:
        return str(e).encode()


def point_dirs(sweep_dir):
    base = os.path.join(sweep_dir, "points")
    return sorted(os.path.join(base, k) for k in os.listdir(base) if re.fullmatch(r"[0-9a-f]{16}", k))


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def host_tag():
    h = 0xcbf29ce484222325
    for b in socket.gethostname().encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"[:8]


def heat_point(sweep_dir):
    """The point the tiny figure's first heat-map panel draws (config all, seed 0, width 10)."""
    for d in point_dirs(sweep_dir):
        axes = json.load(open(os.path.join(d, "point.json")))["axes"]
        if axes.get("config") == "all" and axes.get("seed") == 0 and axes.get("width") == 10:
            return d
    raise RuntimeError("no heat-map point in " + sweep_dir)


def named_cases(tmp, clean, ref):
    """Item 7: a truncated, mis-shaped or symlinked point .npy: refused with its reason, then computed again."""
    for kind in ("truncated", "mis-shaped", "symlinked"):
        d = os.path.join(tmp, "named-" + kind)
        shutil.copytree(clean, d, symlinks=True)
        p = heat_point(os.path.join(d, "theory"))
        u = os.path.join(p, "runs.0.U.0.npy")
        if kind == "truncated":
            with open(u, "r+b") as f:
                f.truncate(os.path.getsize(u) - 40)
            words = "truncated data"
        elif kind == "mis-shaped":
            other = next(f for f in sorted(os.listdir(p)) if f.endswith(".npy") and "test.mean" in f)
            shutil.copy(os.path.join(p, other), u)
            words = "the reference says <f8 [4, 4]"
        else:
            os.remove(u)
            os.symlink(os.path.join(heat_point(os.path.join(clean, "theory")), "runs.0.U.0.npy"), u)
            words = "is a symbolic link"
        code, err, _ = am("figure", FIGURE, "--plot-only", d)
        check(code == 1 and p in err and os.path.basename(u) in err and words in err and "a corrupt point, not drawn" in err,
              f"named ({kind}): --plot-only exits 1 naming {os.path.basename(u)} and '{words}' ({code}) {err[-400:]}")
        fig = json.load(open(os.path.join(d, "figure.json")))
        mats = [x["matrix"] for x in fig["data"] if "matrix" in x]
        check(all(len(m) == 4 and len(m[0]) == 4 for m in mats) and len(mats) == 1,
              f"named ({kind}): no 1x1 NaN panel, the point is left out ({[len(m) for m in mats]} matrices)")
        code, err, _ = am("figure", FIGURE, "--out", d, "--quiet")
        check(code == 0 and "it is run again" in err and figure_json(d) == ref,
              f"named ({kind}): figure --out computes the point again, the clean figure.json ({code}) {err[-300:]}")
    missing = os.path.join(tmp, "no-such-figure-dir")
    code, err, _ = am("figure", FIGURE, "--plot-only", missing)
    check(code == 1 and "no such directory" in err and not os.path.exists(missing),
          f"named: --plot-only of a missing directory exits 1 and creates nothing ({code}) {err.strip()[-200:]}")


class Damage:
    """Random damages to a sweep directory (a figure's sweep or a plain one)."""

    def __init__(self, rng, sweep_dir):
        self.rng, self.dir = rng, sweep_dir

    def files(self, pattern=None):
        out = []
        for p in point_dirs(self.dir):
            if os.path.isdir(p) and not os.path.islink(p):
                out += [os.path.join(p, f) for f in os.listdir(p)
                        if (pattern is None or re.search(pattern, f)) and os.path.isfile(os.path.join(p, f))]
        return sorted(out)

    def pick(self, items):
        return self.rng.choice(items) if items else None

    def apply(self):
        name = self.rng.choice([m for m in dir(self) if m.startswith("do_")])
        what = getattr(self, name)()
        return f"{name[3:]}: {what}" if what else None

    def do_truncate(self):
        f = self.pick(self.files())
        if f:
            with open(f, "r+b") as h:
                h.truncate(self.rng.randrange(max(1, os.path.getsize(f))))
        return f

    def do_garbage(self):
        f = self.pick(self.files())
        if f:
            open(f, "wb").write(bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(300))))
        return f

    def do_delete_file(self):
        f = self.pick(self.files())
        if f:
            os.remove(f)
        return f

    def do_delete_point(self):
        p = self.pick(point_dirs(self.dir))
        if p:
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
        return p

    def do_symlink_point(self):
        ps = [p for p in point_dirs(self.dir) if os.path.isdir(p) and not os.path.islink(p)]
        if len(ps) < 2:
            return None
        a, b = self.rng.sample(ps, 2)
        shutil.rmtree(a)
        os.symlink(b, a)
        return f"{a} -> {b}"

    def do_symlink_npy(self):
        f = self.pick(self.files(r"\.npy$"))
        others = [g for g in self.files(r"\.npy$") if os.path.basename(g) == os.path.basename(f or "") and g != f]
        if not f or not others:
            return None
        os.remove(f)
        os.symlink(self.pick(others), f)
        return f

    def do_foreign_results(self):
        fs_ = self.files(r"^results\.json$")
        if len(fs_) < 2:
            return None
        a, b = self.rng.sample(fs_, 2)
        shutil.copy(b, a)
        return f"{a} <- {b}"

    def do_reshape_npy(self):
        f = self.pick(self.files(r"\.npy$"))
        if not f:
            return None
        sizes = {g: os.path.getsize(g) for g in self.files(r"\.npy$") if os.path.dirname(g) == os.path.dirname(f)}
        other = [g for g, n in sizes.items() if n != sizes[f]]
        if not other:
            return None
        shutil.copy(self.pick(other), f)
        return f

    def do_fifo(self):
        f = self.pick(self.files(r"(\.npy|results\.json)$"))
        if f:
            os.remove(f)
            os.mkfifo(f)
        return f

    def do_dir_at_file(self):
        f = self.pick(self.files(r"\.npy$"))
        if f:
            os.remove(f)
            os.mkdir(f)
        return f

    def do_file_at_point(self):
        p = self.pick([p for p in point_dirs(self.dir) if not os.path.islink(p)])
        if p:
            shutil.rmtree(p)
            open(p, "w").write("not a point\n")
        return p

    def do_claim(self):
        p = self.pick(point_dirs(self.dir))
        if not p:
            return None
        c = os.path.join(self.dir, "claims", os.path.basename(p))
        os.makedirs(os.path.dirname(c), exist_ok=True)
        kind = self.rng.choice(["empty", "garbage", "future", "dead"])
        open(c, "w").write({"empty": "", "garbage": "\x00\xffnot a claim", "future": "x",
                            "dead": f"{dead_pid()} {socket.gethostname()}\n"}[kind])
        t = time.time() + (86400 if kind == "future" else -10)
        os.utime(c, (t, t))
        return f"{kind} claim {c}"

    def do_stale_tmp(self):
        p = self.pick(point_dirs(self.dir))
        if not p:
            return None
        t = f"{p}.tmp-{dead_pid()}.{host_tag()}-AbC{self.rng.randrange(100, 999)}"
        os.makedirs(os.path.join(t, "sub"))
        open(os.path.join(t, "results.json"), "w").write("{")
        return t


def leftovers(sweep_dir):
    """Claims and dead writers' temporaries a finished run must not leave."""
    claims = os.path.join(sweep_dir, "claims")
    left = sorted(os.listdir(claims)) if os.path.isdir(claims) else []
    left += [n for n in os.listdir(os.path.join(sweep_dir, "points")) if ".tmp-" in n]
    return left


def random_rounds(tmp, what, clean, run_args, probe_args, compare, sweep_of):
    rng = random.Random(f"{SEED}-{what}")
    d = os.path.join(tmp, "rounds-" + what)
    shutil.copytree(clean, d, symlinks=True)
    for k in range(ROUNDS):
        damage = Damage(rng, sweep_of(d))
        done = [x for x in (damage.apply() for _ in range(rng.randint(1, 3))) if x]
        tag = f"{what} round {k} (AM_CORRUPT_SEED={SEED})"
        code, err, secs = am(*probe_args(d), timeout=120)
        check(code in (0, 1, 2), f"{tag}: {probe_args(d)[0]} {probe_args(d)[-2]} ends by itself, exit {code} "
                                 f"in {secs:.1f} s; damages {done}; {err.strip()[-300:]}")
        if what == "figure" and code == 0 and "are not drawn" not in err:
            check(compare(d), f"{tag}: a figure drawn with exit 0 and every point is the clean one; damages {done}")
        code, err, secs = am(*run_args(d))
        check(code == 0 and compare(d), f"{tag}: the run repairs it (exit {code}, {secs:.1f} s, clean output "
                                        f"{compare(d)}); damages {done}; {err.strip()[-400:]}")
        check(not leftovers(sweep_of(d)), f"{tag}: no claim or dead .tmp- left {leftovers(sweep_of(d))}")


def main():
    print(f"AM_CORRUPT_SEED={SEED} AM_CORRUPT_ROUNDS={ROUNDS}")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        clean_fig, clean_sweep = os.path.join(tmp, "clean-figure"), os.path.join(tmp, "clean-sweep")
        code, err, _ = am("figure", FIGURE, "--out", clean_fig, "--quiet")
        check(code == 0, f"clean tiny figure exits 0 {err[-300:]}")
        code, err, _ = am("sweep", GRID, "--out", clean_sweep, "--quiet")
        check(code == 0, f"clean sweep exits 0 {err[-300:]}")
        if FAILURES:
            return 1
        ref_fig = figure_json(clean_fig)
        ref_tables = [read(os.path.join(clean_sweep, f)) for f in ("sweep.csv", "sweep.json")]
        named_cases(tmp, clean_fig, ref_fig)
        random_rounds(tmp, "figure", clean_fig,
                      run_args=lambda d: ("figure", FIGURE, "--out", d, "--quiet"),
                      probe_args=lambda d: ("figure", FIGURE, "--plot-only", d),
                      compare=lambda d: figure_json(d) == ref_fig,
                      sweep_of=lambda d: os.path.join(d, "theory"))
        random_rounds(tmp, "sweep", clean_sweep,
                      run_args=lambda d: ("sweep", GRID, "--out", d, "--quiet"),
                      probe_args=lambda d: ("sweep", "--aggregate", d),
                      compare=lambda d: [read(os.path.join(d, f)) for f in ("sweep.csv", "sweep.json")] == ref_tables,
                      sweep_of=lambda d: d)
    print(f"{len(FAILURES)} failed ({time.monotonic() - t0:.1f} s, AM_CORRUPT_SEED={SEED})")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
