#!/usr/bin/env python3
"""The C99 embedding example (examples/embed/embed.c: run API + report library) writes the same results directory
as `attnmech run` with the same seed and parameters — every file name, every .npy and .svg byte for byte, and
results.json equal after removing only timings, plugin paths, thread counts and version strings.
Usage: test_embed.py EMBED_EXE ATTNMECH_EXE (run with OPENBLAS_NUM_THREADS=1 and AM_PLUGIN_PATH set)."""
import json
import os
import subprocess
import sys
import tempfile

EXCLUDED = {"plugins", "threads", "blas_threads", "attnmech_version"}  # plus every timing: a key with "time" ending in "_s"


def excluded(key):
    return key in EXCLUDED or ("time" in key and key.endswith("_s"))
CASES = [
    ("markov", None, ["P=40", "P_test=60", "widths_scan=10,100", "threads=1", "seed=3"]),
    ("potts", "pseudolikelihood", ["L=6", "C=4", "M=150", "M_test=200", "burnin=20", "equilibration_test=0",
                                   "max_iter=60", "threads=1"]),
    ("replica", None, ["nu=3", "lambda=0.01,0.1", "alpha=0.5,1,2", "threads=1"]),
]


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if not excluded(k)}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main():
    embed, cli = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, est, sets in CASES:
            a, b = os.path.join(tmp, name + "-embed"), os.path.join(tmp, name + "-cli")
            args_e = [embed, a, name] + (["--estimator", est] if est else []) + sets
            args_c = [cli, "run", name, "--quiet", "--out", b] + (["--estimator", est] if est else [])
            for s in sets:
                args_c += ["--set", s]
            for args in (args_e, args_c):
                r = subprocess.run(args, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL {name}: {' '.join(args)} exited {r.returncode}\n{r.stderr}")
                    return 1
            fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
            if fa != fb:
                print(f"FAIL {name}: file lists differ: {sorted(set(fa) ^ set(fb))}")
                failures += 1
                continue
            n_svg = sum(f.endswith(".svg") for f in fa)
            for f in fa:
                if f == "results.json":
                    ja, jb = (strip(json.load(open(os.path.join(d, f)))) for d in (a, b))
                    if ja != jb:
                        print(f"FAIL {name}: results.json differs beyond the excluded fields")
                        failures += 1
                elif open(os.path.join(a, f), "rb").read() != open(os.path.join(b, f), "rb").read():
                    print(f"FAIL {name}: {f} differs")
                    failures += 1
            print(f"{name}: {len(fa)} files equal ({n_svg} .svg)")
            if n_svg == 0:
                print(f"FAIL {name}: no plots were drawn")
                failures += 1
    print(f"[doctest] test cases: {len(CASES)} | {len(CASES) - min(failures, len(CASES))} passed | "
          f"{min(failures, len(CASES))} failed | 0 skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
