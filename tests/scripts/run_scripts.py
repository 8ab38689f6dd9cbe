#!/usr/bin/env python3
"""Every script of bench/ and examples/python/ (Python and shell) and every bench executable of the build, in its
smoke mode (tiny sizes, seconds each), against the build tree: the meson test `scripts-smoke`. Scripts that rot
unseen (issue 36: numpyro_peer.py read schema-3 results by hand) fail here instead.

    run_scripts.py SOURCE_ROOT BUILD_ROOT PYTHON [--bench NAME=PATH]... [--jobs 2] [NAME...]

The environment is the build tree's (meson sets PYTHONPATH, ATTNMECH_LIBRARY, ATTNMECH_REPORT_LIBRARY,
AM_PLUGIN_PATH, ATTNMECH_CLI); NAMEs run only the jobs whose name contains one of them. A job fails on a nonzero
exit, a timeout or a Python traceback in its output; it is skipped, with the reason printed, only when a Python
module it needs (torch, sklearn) is missing, the bench executable it runs was not built, or mpirun is absent —
under ATTNMECH_REQUIRE_TORCH=1 (CI: .ci/setup torch installs python3-torch and python3-sklearn) a missing torch or
sklearn is a failure. Every *.py/*.sh under bench/ and examples/python/, and every bench executable passed with
--bench, must belong to a job (or be listed in NOT_SCRIPTS with why): a new script without a smoke run fails the
test. Prints one line per job (wall and CPU seconds, the CPU of every process it started) and the total."""
import argparse
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

# Python files under bench/ and examples/python/ that are modules, not scripts: covered by the scripts that import them.
NOT_SCRIPTS = {
    "bench/attnmech_import.py": "a module: imported by posterior/numpyro_peer.py and reference/compare.py",
    "bench/heads/cases.py": "a module: imported by heads/study.py and heads/zoo.py",
}
TIMEOUT = 240  # seconds per job: a loaded machine (load 12 on 2 cores) stretches a 5 s job to a minute


def jobs():
    """(name, commands, Python modules, bench executables, needs mpirun, what it covers). A command is a list of
    strings with {py}, {src}, {build}, {cli}, {tmp} and {bench:NAME} to fill in; a job's commands run in order in
    one temporary directory ({tmp}). Heaviest first, so that two workers end together."""
    mpi = ["mpirun", "--oversubscribe", "-np", "2"]
    return [
        ("heads/study.py", [["{py}", "{src}/bench/heads/study.py", "--smoke", "--out", "{tmp}"]],
         ["torch", "sklearn"], [], False, ["bench/heads/study.py"]),
        ("heads/zoo.py", [["{py}", "{src}/bench/heads/zoo.py", "--smoke", "--out", "{tmp}"]],
         ["torch", "sklearn"], [], False, ["bench/heads/zoo.py"]),
        ("examples/torch_heads.py", [["{py}", "{src}/examples/python/torch_heads.py", "--smoke", "--out", "{tmp}/h"]],
         ["torch", "sklearn"], [], False, ["examples/python/torch_heads.py"]),
        ("reference/compare.py", [["{py}", "{src}/bench/reference/compare.py", "--build", "{build}", "--smoke",
                                   "--work", "{tmp}"]],
         [], ["bench_reference_make_problem"], False, ["bench/reference/compare.py"]),
        ("sweep/bench_sweep.py", [["{py}", "{src}/bench/sweep/bench_sweep.py", "{cli}", "{src}", "--smoke"]],
         [], [], False, ["bench/sweep/bench_sweep.py"]),
        ("plots/bench_plots.py", [["{py}", "{src}/bench/plots/bench_plots.py", "{cli}", "{src}", "--smoke"]],
         [], [], False, ["bench/plots/bench_plots.py"]),
        ("posterior/numpyro_peer.py + posterior_conditioning",
         [["{py}", "{src}/bench/posterior/numpyro_peer.py", "--attnmech", "{cli}", "--smoke", "--out", "{tmp}"],
          ["{bench:posterior_conditioning}", "{tmp}/export", "5", "20"]],
         [], ["posterior_conditioning"], False, ["bench/posterior/numpyro_peer.py"]),
        ("python/bench_python.py", [["{py}", "{src}/bench/python/bench_python.py", "--smoke"]],
         [], [], False, ["bench/python/bench_python.py"]),
        ("bench_oneshot", [["{bench:bench_oneshot}", "smoke"]], [], ["bench_oneshot"], False, []),
        ("bench_core", [["{bench:bench_core}", "smoke"]], [], ["bench_core"], False, []),
        ("bench_alignment", [["{bench:bench_alignment}", "smoke"]], [], ["bench_alignment"], False, []),
        ("bench_predict", [["{bench:bench_predict}", "1", "4", "20", "120"]], [], ["bench_predict"], False, []),
        ("bench_posterior", [["{bench:bench_posterior}", "smoke"]], [], ["bench_posterior"], False, []),
        ("posterior/torch_tokenwise.py", [["{py}", "{src}/bench/posterior/torch_tokenwise.py", "10", "20", "16", "6",
                                           "2", "2", "0.05"]],
         ["torch"], [], False, ["bench/posterior/torch_tokenwise.py"]),
        ("examples/torch_attention.py", [["{py}", "{src}/examples/python/torch_attention.py", "--smoke"]],
         ["torch"], [], False, ["examples/python/torch_attention.py"]),
        ("figures/all.sh", [["bash", "{src}/bench/figures/all.sh", "--smoke", "{cli}", "{tmp}"]],
         [], [], False, ["bench/figures/all.sh"]),
        ("scale/memory_model.py", [["{py}", "{src}/bench/scale/memory_model.py", "{cli}", "--smoke"]],
         [], [], False, ["bench/scale/memory_model.py"]),
        ("bench_msa_loss", [["{bench:bench_msa_loss}", "--reps", "1", "--L", "20", "--C", "5", "--M", "100",
                             "--heads", "2"]], [], ["bench_msa_loss"], False, []),
        ("bench_potts", [["{bench:bench_potts}", "--quick"]], [], ["bench_potts"], False, []),
        ("stop_study", [["{bench:stop_study}", "0", "8", "4", "2", "200", "5", "0"]], [], ["stop_study"], False, []),
        ("python/bench_blas_threads.py", [["{py}", "{src}/bench/python/bench_blas_threads.py", "--smoke", "--cli",
                                           "{cli}"]], [], [], False, ["bench/python/bench_blas_threads.py"]),
        ("bench_replica", [["{bench:bench_replica}", "--seeds", "1", "--L", "20", "--sites", "5"]],
         [], ["bench_replica"], False, []),
        ("scale/run_markov.sh", [["bash", "{src}/bench/scale/run_markov.sh", "--smoke", "{build}"]],
         [], [], False, ["bench/scale/run_markov.sh"]),
        ("msa/panel.py", [["{py}", "{src}/bench/msa/panel.py", "--attnmech", "{cli}", "--smoke", "--out", "{tmp}"]],
         [], [], False, ["bench/msa/panel.py"]),
        ("msa/compare.py + a2m_to_npy.py",
         [["{py}", "{src}/bench/msa/compare.py", "--attnmech", "{cli}", "--smoke", "--out", "{tmp}"],
          ["{py}", "{src}/bench/msa/a2m_to_npy.py", "{src}/tests/data/msa/focus.a2m", "FOC_HUMAN", "{tmp}/npy"]],
         [], [], False, ["bench/msa/compare.py", "bench/msa/a2m_to_npy.py"]),
        # the authors' reference code is never installed (docs/reference-check.md): its driver's options only;
        # reference/compare.py --smoke runs attnmech's half of the comparison
        ("reference/run_reference.py --help", [["{py}", "{src}/bench/reference/run_reference.py", "--help"]],
         [], [], False, ["bench/reference/run_reference.py"]),
        ("bench_scale", [["{bench:bench_scale}", "1", "16", "100"]], [], ["bench_scale"], False, []),
        ("bench_distributed", [mpi + ["{bench:bench_distributed}", "100", "8", "50"]],
         [], ["bench_distributed"], True, []),
        ("bench_eigen", [mpi + ["{bench:bench_eigen}", "200", "1"]], [], ["bench_eigen"], True, []),
        ("scale/ranks_vs_serial.sh", [["bash", "{src}/bench/scale/ranks_vs_serial.sh", "--smoke", "{build}"]],
         [], [], True, ["bench/scale/ranks_vs_serial.sh"]),
        ("loss_time", [["{bench:loss_time}", "2", "6", "4", "50", "1", "0", "1"]], [], ["loss_time"], False, []),
    ]


def built_executables(build):
    """Names of the executables under BUILD/bench (the objects' *.p directories left out)."""
    names = set()
    for d, dirs, files in os.walk(os.path.join(build, "bench")):
        dirs[:] = [x for x in dirs if not x.endswith(".p")]
        names |= {f for f in files if os.access(os.path.join(d, f), os.X_OK) and "." not in f}
    return names


def coverage(src, build, bench, table):
    """Scripts and bench executables no job runs (each a failure)."""
    found = set()
    for pattern in ("bench/**/*.py", "bench/**/*.sh", "examples/python/*.py"):
        found |= {os.path.relpath(p, src) for p in glob.glob(os.path.join(src, pattern), recursive=True)}
    covered = {s for job in table for s in job[5]} | set(NOT_SCRIPTS)
    run = {b for job in table for b in job[3]}
    unrun = (set(bench) | built_executables(build)) - run
    return sorted(found - covered) + sorted(f"bench executable {b}" for b in unrun)


def module_problem(modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return "no Python module " + ", ".join(missing) + " (Debian: " + ", ".join(
        {"torch": "python3-torch", "sklearn": "python3-sklearn"}.get(m, m) for m in missing) + ")"


def fill(cmd, values, bench):
    out = []
    for a in cmd:
        if a.startswith("{bench:"):
            out.append(bench[a[7:-1]])
        else:
            out.append(a.format(**values))
    return out


def run_command(cmd, cwd, env, log):
    """Runs cmd (output appended to log) in its own process group; (exit status, CPU seconds of it and its
    children, timed out)."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    timer = threading.Timer(TIMEOUT, lambda: os.killpg(p.pid, 9))
    timer.start()
    _, status, ru = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime, p.returncode == -9


def run_job(job, values, bench, env):
    """('ok' | 'FAIL' | 'skip', name, wall, cpu, text)."""
    name, commands, modules, exes, needs_mpi, _ = job
    why = module_problem(modules)
    if why and os.environ.get("ATTNMECH_REQUIRE_TORCH") == "1":
        return "FAIL", name, 0, 0, f"ATTNMECH_REQUIRE_TORCH=1 but {why}"
    missing = [e for e in exes if e not in bench]
    if not why and missing:
        why = "not built: " + ", ".join(missing)
    if not why and needs_mpi and not shutil.which("mpirun"):
        why = "no mpirun (openmpi-bin)"
    if why:
        return "skip", name, 0, 0, why
    with tempfile.TemporaryDirectory(prefix="am-scripts-") as tmp:
        log = os.path.join(tmp, "log.txt")
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        t0, cpu = time.monotonic(), 0.0
        for cmd in commands:
            code, c, timed_out = run_command(fill(cmd, dict(values, tmp=work), bench), work, env, log)
            cpu += c
            if code != 0:
                break
        wall = time.monotonic() - t0
        with open(log, errors="replace") as f:
            text = f.read()
    if code != 0 or "Traceback (most recent call last)" in text:
        what = f"timed out after {TIMEOUT} s" if timed_out else f"exit {code}" if code else "a traceback"
        tail = "\n".join("    " + line for line in text.rstrip("\n").split("\n")[-40:])
        return "FAIL", name, wall, cpu, f"{what}; the last lines:\n{tail}"
    return "ok", name, wall, cpu, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("build")
    ap.add_argument("python")
    ap.add_argument("--bench", action="append", default=[], metavar="NAME=PATH", help="a bench executable")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("only", nargs="*", help="run only the jobs whose name contains one of these")
    a = ap.parse_intermixed_args()
    bench = dict(b.split("=", 1) for b in a.bench)
    table = jobs()
    uncovered = coverage(a.src, a.build, bench, table)
    for u in uncovered:
        print(f"FAIL  {u}: no smoke run (add a job to tests/scripts/run_scripts.py)")
    if a.only:
        table = [j for j in table if any(o in j[0] for o in a.only)]
    values = {"py": a.python, "src": a.src, "build": a.build,
              "cli": os.environ.get("ATTNMECH_CLI") or os.path.join(a.build, "tools", "attnmech")}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_mpi_yield_when_idle="1")
    t0 = time.monotonic()
    failed = bool(uncovered)
    total_cpu = 0.0
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for done in as_completed([pool.submit(run_job, j, values, bench, env) for j in table]):
            state, name, wall, cpu, text = done.result()
            total_cpu += cpu
            if state == "ok":
                print(f"ok    {name:52s} {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
            elif state == "skip":
                print(f"skip  {name:52s} {text}", flush=True)
            else:
                failed = True
                print(f"FAIL  {name:52s} {text}", flush=True)
    print(f"{len(table)} jobs, {time.monotonic() - t0:.1f} s wall, {total_cpu:.1f} s CPU (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores){'; FAILED' if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
