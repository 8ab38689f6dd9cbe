#!/usr/bin/python3
"""attnmech vs the authors' reference code on the SAME problem files, in one run (docs/reference-check.md).

    /usr/bin/python3 bench/reference/compare.py --ref-tree DIR [--build BUILD] [--work DIR]
                                                [--reps 3] [--ref-reps 1] [--seed 0] [--width 10]

1. BUILD/bench/reference/bench_reference_make_problem writes the Markov all-paths problem (P 100,
   P_test 1000, T 0.01, N 10; drawn by attnmech's markov task) as an `npy` task directory WORK/problem,
   and times attnmech's phases in process (ξ, theory create + Newton solve to 1e-10, predict).
2. Times the whole process `BUILD/tools/attnmech run npy --set dir=WORK/problem --out WORK/attnmech-out`
   (start-up, plugin loading, reading the files, ξ, solve, GP baseline, alignment, predictions, results.json,
   .npy and SVG output) with time.perf_counter around the subprocess, `--reps` times.
3. Times the whole process of run_reference.py (the reference library's model class on the same files,
   Adam lr 0.1 until max|grad| < 1e-5 as its driver does), `--ref-reps` times.
4. Prints the table (times, ratios, iterations, gradients, |ΔS_code|, max|ΔU|, max|Δ test mean|,
   accuracies) and writes WORK/compare.json.

The reference code is never part of the project: --ref-tree (required) is a work tree of
https://github.com/tiberilor/attention-paths-interplay (commit 915ca41) anywhere outside the repository. It needs
Debian's python3-torch, and the modules the reference library imports at module level: einops, jax, numpyro and
arviz installed for --python, or stand-ins for them in a directory given with --shim (put first on PYTHONPATH);
imports the theory path never uses (torchvision, matplotlib) get empty stand-ins in WORK/import-stubs when
they are not installed.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from attnmech_import import attnmech_for  # noqa: E402

STUBS = {
    "torchvision/__init__.py": "datasets = None\n",
    "torchvision/transforms/__init__.py": "ToTensor = None\n",
    "matplotlib/__init__.py": "",
    "matplotlib/pyplot.py": "",
    "mpl_toolkits/__init__.py": "",
    "mpl_toolkits/axes_grid1/__init__.py": "ImageGrid = None\n",
}


def loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(cmd, env=None, reps=1, label=""):
    """Wall times of `reps` runs (perf_counter around the subprocess) and their CPU times (user + sys)."""
    times, cpus = [], []
    for r in range(reps):
        c0 = children_cpu()
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t0
        cpus.append(children_cpu() - c0)
        if p.returncode != 0:
            sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
            sys.exit(f"compare: {label} failed (exit {p.returncode}): {' '.join(cmd)}")
        times.append(dt)
        print(f"  {label} run {r + 1}/{reps}: {dt:.3f} s wall, {cpus[-1]:.3f} s CPU", flush=True)
    return times, cpus, p


def python_env(shim, work, python):
    env = dict(os.environ)
    paths = [shim] if shim else []
    probe_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    if paths:
        probe_env["PYTHONPATH"] = os.pathsep.join(paths)
    probe = subprocess.run([python, "-c", "import torchvision, matplotlib.pyplot, mpl_toolkits.axes_grid1"],
                           env=probe_env, capture_output=True)
    if probe.returncode != 0:
        stub_dir = os.path.join(work, "import-stubs")
        for rel, text in STUBS.items():
            path = os.path.join(stub_dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        paths.append(stub_dir)
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def max_abs_diff(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch {a.shape} vs {b.shape}")
    return float(np.abs(a - b).max(initial=0.0))


def max_abs(a):
    return float(np.abs(np.asarray(a, dtype=float)).max(initial=0.0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build-refbench"),
                    help="meson build dir with tools/attnmech, the npy/theory plugins and bench_reference_make_problem")
    ap.add_argument("--attnmech", default=None, help="attnmech executable (default BUILD/tools/attnmech)")
    ap.add_argument("--ref-tree",
                    help="a work tree of https://github.com/tiberilor/attention-paths-interplay (commit 915ca41); "
                         "required unless --smoke")
    ap.add_argument("--shim", default=None,
                    help="a directory put first on PYTHONPATH (stand-ins for einops, jax, numpyro, arviz when they "
                         "are not installed); default: none")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--work", default="/tmp/attnmech-refbench")
    ap.add_argument("--reps", type=int, default=3, help="attnmech whole-process repetitions")
    ap.add_argument("--ref-reps", type=int, default=1, help="reference whole-process repetitions")
    ap.add_argument("--phase-reps", type=int, default=10, help="repetitions of attnmech's in-process phases")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--width", type=float, default=10)
    ap.add_argument("--torch-threads", type=int, default=0, help="0 = torch's default")
    ap.add_argument("--am-threads", type=int, default=None,
                    help="append --set threads=N to the attnmech command (default: the CLI's default, all cores)")
    ap.add_argument("--smoke", action="store_true",
                    help="one repetition of each timing (tests/scripts); without --ref-tree, attnmech's half only")
    args = ap.parse_args()
    if args.smoke:
        args.reps, args.ref_reps, args.phase_reps = 1, 1, 1
    if not args.ref_tree and not args.smoke:
        ap.error("--ref-tree is required (the reference code; see the header), unless --smoke")

    exe = args.attnmech or os.path.join(args.build, "tools", "attnmech")
    maker = os.path.join(args.build, "bench", "reference", "bench_reference_make_problem")
    lib = os.path.join(args.ref_tree, "hidden_markov_chain_classification", "4paths", "data", "all_paths",
                       "without_samples") if args.ref_tree else None
    needed = [(exe, "attnmech"), (maker, "bench_reference_make_problem")]
    if lib:
        needed.append((os.path.join(lib, "LIB_convergent_summation_heads.py"), "reference library"))
    for path, what in needed:
        if not os.path.exists(path):
            sys.exit(f"compare: {what} not found at {path}")
    os.makedirs(args.work, exist_ok=True)
    prob = os.path.join(args.work, "problem")
    os.makedirs(prob, exist_ok=True)
    am_out = os.path.join(args.work, "attnmech-out")
    ref_json = os.path.join(args.work, "reference.json")
    load0 = loadavg()

    print("1. problem files + attnmech phases in process", flush=True)
    subprocess.run([maker, prob, "--seed", str(args.seed), "--width", repr(args.width),
                    "--reps", str(args.phase_reps)], check=True,
                   env=dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1")))
    with open(os.path.join(prob, "attnmech_phases.json")) as f:
        phases = json.load(f)

    print("2. attnmech whole process", flush=True)
    am_cmd = [exe, "run", "npy", "--set", f"dir={prob}", "--out", am_out]
    if args.am_threads is not None:
        am_cmd += ["--set", f"threads={args.am_threads}"]
    am_times, am_cpus, _ = timed(am_cmd, reps=args.reps, label="attnmech")
    am = attnmech_for(exe).load(am_out)  # schema 3: the arrays are .npy references, resolved by the loader
    if am.get("status") != "ok":
        sys.exit(f"compare: attnmech status {am.get('status')}")
    run = am["runs"][0]
    if not lib:
        print(f"attnmech: S_code {run['action']:.10f}, U_a {run['U_a']:.8f}, {int(run['solver']['iterations'])} Newton "
              f"iterations, test accuracy {run['test']['accuracy']:.4f} (GP {run['gp']['test']['accuracy']:.4f}), "
              f"{len(run['test']['mean'])} test predictions; solve phase {phases['solve_s']:.3f} s")
        print("3. reference: skipped (--smoke without --ref-tree: the authors' code is not installed)")
        return 0

    print("3. reference whole process", flush=True)
    env = python_env(args.shim, args.work, args.python)
    ref_cmd = [args.python, os.path.join(HERE, "run_reference.py"), "--lib", lib, "--dir", prob, "--out", ref_json,
               "--quiet", "--torch_threads", str(args.torch_threads)]
    ref_times, ref_cpus, _ = timed(ref_cmd, env=env, reps=args.ref_reps, label="reference")
    with open(ref_json) as f:
        ref = json.load(f)
    load1 = loadavg()

    # ---- numbers
    am_best, ref_best = min(am_times), min(ref_times)
    rt = ref["times_s"]
    am_solve, ref_solve = phases["solve_s"], rt["minimise"]
    am_train, ref_train = phases["xi_train_s"], rt["setup"]
    am_test, ref_test = phases["xi_test_s"] + phases["predict_s"], rt["predict"]
    am_rest = am_best - (am_train + am_solve + am_test)
    ref_rest = ref_best - (ref_train + ref_solve + ref_test)
    rc = ref["cpu_times_s"]
    am_cpu_best, ref_cpu_best = min(am_cpus), min(ref_cpus)
    cpu_rows = [("whole process, best [s CPU]", am_cpu_best, ref_cpu_best),
                ("  train attention/xi (100) [s CPU]", phases["cpu_xi_train_s"], rc["setup"]),
                ("  solve phase [s CPU]", phases["cpu_solve_s"], rc["minimise"]),
                ("  test attention/xi + predict [s CPU]", phases["cpu_xi_test_s"] + phases["cpu_predict_s"],
                 rc["predict"])]
    U_am, U_ref = run["U"], ref["U"]
    dU = [max_abs_diff(a, b) for a, b in zip(U_am, U_ref)]
    rU = [d / max_abs(a) for d, a in zip(dU, U_am)]
    d_mean = max_abs_diff(run["test"]["mean"], ref["test"]["mean"])
    d_var = max_abs_diff(run["test"]["var"], ref["test"]["var"])
    dS = abs(run["action"] - ref["S_code"])
    summary = {
        "problem": {"dir": prob, "seed": args.seed, "width": args.width, "P": phases["P"], "P_test": phases["P_test"],
                    "N0": phases["N0"], "heads": ref["settings"]["heads"], "temperature": ref["settings"]["temperature"]},
        "load_average_1min": [load0, load1],
        "attnmech": {"command": " ".join(am_cmd), "process_s": am_times, "process_best_s": am_best,
                     "process_median_s": statistics.median(am_times), "process_cpu_s": am_cpus,
                     "phases_cpu_s": {k: phases[k] for k in ("cpu_xi_train_s", "cpu_solve_s", "cpu_xi_test_s",
                                                              "cpu_predict_s")},
                     "reported_wall_time_s": am["wall_time_s"],
                     "run_wall_time_s": run["wall_time_s"],
                     "phases_in_process_s": {k: phases[k] for k in ("xi_train_s", "solve_s", "xi_test_s", "predict_s")},
                     "iterations": int(run["solver"]["iterations"]), "grad_max": run["solver"]["grad_max"],
                     "S_code": run["action"], "U_a": run["U_a"], "test_accuracy": run["test"]["accuracy"],
                     "gp_test_accuracy": run["gp"]["test"]["accuracy"]},
        "reference": {"command": " ".join(ref_cmd), "process_s": ref_times, "process_best_s": ref_best,
                      "times_s": rt, "cpu_times_s": rc, "process_cpu_s": ref_cpus, "torch": ref["torch_version"], "torch_threads": ref["torch_threads"],
                      "converged": ref["converged"], "iterations": ref["iterations"], "grad_max": ref["grad_max"],
                      "S_code": ref["S_code"], "U_a": ref["U_a"], "test_accuracy": ref["test"]["accuracy"],
                      "gp_test_accuracy": ref["gp"]["test"]["accuracy"]},
        "ratios": {"process_best": ref_best / am_best, "process_cpu_best": ref_cpu_best / am_cpu_best,
                   "solve_cpu": rc["minimise"] / phases["cpu_solve_s"], "solve": ref_solve / am_solve, "train_input": ref_train / am_train,
                   "test_predict": ref_test / am_test},
        "agreement": {"abs_dS_code": dS, "rel_dS_code": dS / abs(run["action"]), "abs_dU_a": abs(run["U_a"] - ref["U_a"]),
                      "max_abs_dU": dU, "max_rel_dU": rU, "max_abs_d_test_mean": d_mean,
                      "max_abs_d_test_var": d_var},
    }
    with open(os.path.join(args.work, "compare.json"), "w") as f:
        json.dump(summary, f, indent=1)

    # ---- table
    P, Pt, N0 = phases["P"], phases["P_test"], phases["N0"]
    print()
    print(f"Markov all paths, P={P}, P_test={Pt}, N0={N0}, S=31, H=(2,2), T={ref['settings']['temperature']}, "
          f"N={args.width:g}, seed {args.seed}; load average {load0:.1f} -> {load1:.1f} on {os.cpu_count()} cores")
    print(f"reference: torch {ref['torch_version']}, {ref['torch_threads']} thread(s), Adam lr {ref['settings']['lr']} "
          f"to max|grad| < {ref['settings']['tol']:g}; attnmech: damped Newton to 1e-10 "
          f"({'CLI default threads' if args.am_threads is None else f'threads={args.am_threads}'})")
    w = 38
    print(f"{'':{w}} {'attnmech':>14} {'reference':>14} {'ratio ref/am':>13}")

    def row(name, a, r, ratio=True, fmt="{:.3f}"):
        ra = f"{r / a:12.1f}x" if ratio and a > 0 else ""
        print(f"{name:{w}} {fmt.format(a):>14} {fmt.format(r):>14} {ra:>13}")

    row("whole process, best [s]", am_best, ref_best)
    row("whole process, median [s]", statistics.median(am_times), statistics.median(ref_times))
    row("  train attention/xi (100) [s]", am_train, ref_train)
    row("  solve phase [s]", am_solve, ref_solve)
    row("  test attention/xi + predict [s]", am_test, ref_test)
    row("  everything else [s]", am_rest, ref_rest, ratio=False)
    for name, a, r in cpu_rows:
        row(name, a, r)
    row("iterations", int(run["solver"]["iterations"]), ref["iterations"], ratio=False, fmt="{:d}")
    row("solve time per iteration [ms]", 1e3 * am_solve / max(1, run["solver"]["iterations"]),
        1e3 * ref_solve / max(1, ref["gradient_evaluations"]))
    row("final max|grad S_code|", run["solver"]["grad_max"], ref["grad_max"], ratio=False, fmt="{:.2e}")
    row("S_code", run["action"], ref["S_code"], ratio=False, fmt="{:.10f}")
    row("U_a", run["U_a"], ref["U_a"], ratio=False, fmt="{:.8f}")
    row("test accuracy", run["test"]["accuracy"], ref["test"]["accuracy"], ratio=False, fmt="{:.4f}")
    row("GP test accuracy", run["gp"]["test"]["accuracy"], ref["gp"]["test"]["accuracy"], ratio=False,
        fmt="{:.4f}")
    print(f"|dS_code| = {dS:.2e} (relative {dS / abs(run['action']):.1e});  |dU_a| = {abs(run['U_a'] - ref['U_a']):.2e}")
    for l, (d, r) in enumerate(zip(dU, rU), start=1):
        print(f"max|dU_{l}| = {d:.2e} (relative to max|U_{l}|: {r:.1e})")
    print(f"max|d test mean| = {d_mean:.2e};  max|d test var| = {d_var:.2e}")
    print("(attnmech phases: in process, single thread, best of --phase-reps; 'everything else' = whole process minus"
          " the three phases: start-up, reading files, for attnmech also GP baseline, alignment, kernels, head scores,"
          " plots and output; for the reference Python start-up + torch import, GP predictions, JSON)")
    print(f"(summary in {os.path.join(args.work, 'compare.json')})")

    ok = ref["converged"] and dS / abs(run["action"]) < 1e-6 and max(rU) < 1e-3
    if not ok:
        print("compare: AGREEMENT CHECK FAILED (expected |dS|/|S| < 1e-6 and max|dU|/max|U| < 1e-3)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
