#!/usr/bin/env python3
"""attnmech's alignment fit beside plmc on plmc's own example alignments, in one run.

For each family: plmc at its documented settings (CPU seconds of the child process, its couplings file), then
`attnmech run msa` with its defaults and a list of head counts (CPU seconds, D/couplings.txt), and the overlap of the
top-L, top-L/2 and top-L/5 pairs (|i - j| >= 6, by plmc's site numbers) of both rankings.

plmc is a peer, never a dependency: clone https://github.com/debbiemarkslab/plmc anywhere, `make all` in it, and
pass its folder with --plmc (or $PLMC_DIR); without it the script says so and stops (exit 0). Usage:

    python3 bench/msa/compare.py --attnmech build/tools/attnmech --plmc PLMC_DIR [--heads 1,8,32,64,128,256]
        [--family dhfr|rna|both] [--meanfield] [--out bench-msa-out]

--meanfield adds a row for the estimator meanfield (mean-field DCA, the cheap baseline; docs/msa.md) on the same
alignment and task settings; --heads none leaves out the alignment fit's rows.

The CPU time is user + system time of the child (both cores count), read from getrusage after it exits.

--smoke (tests/scripts): attnmech's half on the repository's 5-sequence fixture (tests/data/msa/focus.a2m), each
head count's top pairs against the first's instead of plmc's (no plmc needed): seconds.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# --smoke: attnmech's alignment fit on a fixture of the test suite, without plmc
SMOKE = {"file": os.path.join(REPO, "tests", "data", "msa", "focus.a2m"), "attnmech": ["--set", "focus=FOC_HUMAN"],
         "task": ["--set", "focus=FOC_HUMAN"]}
FAMILIES = {
    # plmc's test settings for the protein example (its README) and its README's RNA example.
    "dhfr": {
        "file": "example/protein/DHFR.a2m",
        "plmc": ["-le", "16.0", "-lh", "0.01", "-m", "100", "-g", "-f", "DYR_ECOLI"],
        "attnmech": ["--set", "focus=DYR_ECOLI"],
        "task": ["--set", "focus=DYR_ECOLI"],  # the task's settings alone (the meanfield row)
    },
    "rna": {
        "file": "example/RNA/RF00162.fasta",
        "plmc": ["-a", ".ACGU", "-le", "20.0", "-lh", "0.01", "-m", "50"],
        "attnmech": ["--set", "alphabet=rna", "--set", "gaps=state", "--set", "lambda_e=20"],
        "task": ["--set", "alphabet=rna"],
    },
}


def timed(cmd, log):
    """Runs cmd (output to log); returns (CPU seconds of the child, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit(f"compare.py: {cmd[0]} failed (exit {rc}); see {log}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def read_couplings(path):
    """plmc's -c format: i res_i j res_j 0 score, one pair per line."""
    pairs = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 6:
                pairs.append((int(p[0]), int(p[2]), float(p[5])))
    return pairs


def top(pairs, n, min_sep=6):
    kept = [p for p in pairs if abs(p[1] - p[0]) >= min_sep]
    kept.sort(key=lambda p: (-p[2], p[0], p[1]))
    return {(p[0], p[1]) for p in kept[:n]}


def overlaps(ours, ref, L):
    return {name: len(top(ours, n) & top(ref, n)) / n for name, n in (("L", L), ("L/2", L // 2), ("L/5", L // 5))}


def sites(pairs):
    return len({p[0] for p in pairs} | {p[1] for p in pairs})


def run_family(args, name, heads):
    fam = FAMILIES[name] if name != "smoke" else SMOKE
    ali = os.path.join(args.plmc, fam["file"]) if name != "smoke" else fam["file"]
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    ref_pairs, cpu = None, None
    if name != "smoke":
        ref = os.path.join(out, "plmc.couplings")
        cpu, wall = timed([os.path.join(args.plmc, "bin", "plmc"), "-c", ref] + fam["plmc"] + [ali],
                          os.path.join(out, "plmc.log"))
        ref_pairs = read_couplings(ref)
        L = sites(ref_pairs)
        print(f"{name}: L = {L}; plmc {' '.join(fam['plmc'])}: CPU {cpu:.1f} s, wall {wall:.1f} s", flush=True)
    else:
        print(f"smoke: {fam['file']} without plmc: each head count's top pairs against the first's", flush=True)
    print(f"  {'heads':>6} {'CPU s':>8} {'wall s':>8} {'CPU/plmc':>9} {'top-L':>6} {'top-L/2':>8} {'top-L/5':>8}")
    rows = [(str(h) if h else "default", f"heads{h}", ["--set", f"heads={h}"] if h else [], fam["attnmech"])
            for h in heads]
    if args.meanfield:
        rows.append(("meanfield", "meanfield", ["--estimator", "meanfield"], fam["task"]))
    for label, folder, extra, settings in rows:
        d = os.path.join(out, folder)
        cmd = [args.attnmech, "run", "msa", "--set", "file=" + ali] + settings + ["--out", d, "--quiet"] + extra
        c, w = timed(cmd, d + ".log")
        pairs = read_couplings(os.path.join(d, "couplings.txt"))
        if ref_pairs is None:  # --smoke: the first row is the reference
            ref_pairs, L = pairs, sites(pairs)
        ov = overlaps(pairs, ref_pairs, L)
        ratio = f"{c / cpu:9.2f}" if cpu else f"{'-':>9}"
        print(f"  {label:>6} {c:8.1f} {w:8.1f} {ratio} {ov['L']:6.3f} {ov['L/2']:8.3f} {ov['L/5']:8.3f}",
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attnmech", default="build/tools/attnmech")
    ap.add_argument("--plmc", default=os.environ.get("PLMC_DIR"),
                    help="plmc's folder (a clone of debbiemarkslab/plmc built with make all); default $PLMC_DIR")
    ap.add_argument("--heads", default="0", help="comma-separated head counts; 0 = attnmech's default; none = no "
                    "alignment-fit rows")
    ap.add_argument("--meanfield", action="store_true", help="also the estimator meanfield (mean-field DCA)")
    ap.add_argument("--family", default="both", choices=["dhfr", "rna", "both"])
    ap.add_argument("--out", default="bench-msa-out")
    ap.add_argument("--smoke", action="store_true", help="attnmech's half on a 5-sequence fixture, heads 0,1,2, no "
                    "plmc: seconds")
    args = ap.parse_args()
    if args.smoke:
        run_family(args, "smoke", [0, 1, 2])
        return 0
    if not args.plmc:
        print("compare.py: no plmc folder (--plmc PLMC_DIR or $PLMC_DIR; see the header); skipped")
        return 0
    if not os.path.exists(os.path.join(args.plmc, "bin", "plmc")):
        print(f"compare.py: plmc not found at {args.plmc}/bin/plmc (clone and build it; see the header); skipped")
        return 0
    heads = [] if args.heads == "none" else [int(h) for h in args.heads.split(",")]
    for name in (["dhfr", "rna"] if args.family == "both" else [args.family]):
        run_family(args, name, heads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
