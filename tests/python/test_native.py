"""Python that feels native: the CLI's BLAS-thread rule inside the library calls (the previous count restored),
reprs (Theory, Selection; HTML of Results and Solution, escaped), Results.to_dataframe, progress (tqdm.auto
when importable, else readable lines). Cheap: a few seconds (one small markov run)."""
import sys
import types

import numpy as np
import pytest

import attnmech as am
from attnmech import _core, _lib
import toy

blas = _lib.core.am_blas_threads_set


@pytest.fixture
def no_blas_env(monkeypatch):
    """The rule applies only when the user chose nothing (meson's test environment sets OPENBLAS_NUM_THREADS)."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if blas(0) == 0:
        pytest.skip("the BLAS in use has no thread control (not OpenBLAS)")
    saved = blas(2)
    if blas(0) != 2:
        blas(saved)
        pytest.skip("OpenBLAS refuses 2 threads here")
    yield
    blas(saved)


def toy_theory(progress=False):
    xi = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W, s0=toy.VARIANCES[0])
    return am.Theory(xi, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T,
                     progress=progress)


def test_blas_rule_one_thread_inside_and_restored(no_blas_env):
    seen = []
    with toy_theory(progress=lambda done, total, label: seen.append(blas(0))) as th:
        assert blas(0) == 2  # between calls: the user's count
        th.solve()
        assert seen and set(seen) == {1}  # inside the solve: one thread
        assert blas(0) == 2  # restored (am_blas_threads_set returned the previous count, 2)
        with _core.blas_rule():
            with _core.blas_rule():  # nested (select → solve → predict): the outermost restores
                assert blas(0) == 1
            assert blas(0) == 1
        assert blas(0) == 2
        with pytest.raises(ValueError):
            th.predict(np.zeros((1, 2, 3)))  # an error inside a guarded call restores too
        assert blas(0) == 2


def test_blas_rule_leaves_a_user_choice_alone(no_blas_env, monkeypatch):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.setenv(var, "2")
        with _core.blas_rule(numpy_too=True):
            assert blas(0) == 2
        monkeypatch.delenv(var)
    monkeypatch.setattr(_core, "BLAS_RULE", False)
    with _core.blas_rule():
        assert blas(0) == 2


def test_blas_rule_limits_numpy_through_threadpoolctl(no_blas_env, monkeypatch):
    calls = []

    class Limits:
        def restore_original_limits(self):
            calls.append("restore")

    fake = types.SimpleNamespace(threadpool_limits=lambda limits, user_api: calls.append((limits, user_api)) or Limits())
    monkeypatch.setitem(sys.modules, "threadpoolctl", fake)
    with _core.blas_rule(numpy_too=True):
        with _core.blas_rule(numpy_too=True):
            pass
        assert calls == [(1, "blas")]
    assert calls == [(1, "blas"), "restore"]
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # not installed: the library's own guard only
    with _core.blas_rule(numpy_too=True):
        assert blas(0) == 1
    assert blas(0) == 2


def test_blas_rule_with_the_real_threadpoolctl_restores(no_blas_env):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"]
    with _core.blas_rule(numpy_too=True):
        assert all(d["num_threads"] == 1 for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas")
    assert [d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"] == before
    assert blas(0) == 2


# ------------------------------------------------------------------------------------------------ reprs
@pytest.mark.numerics  # a solve's status, iterations and 6 digits (conftest.py)
def test_theory_repr():
    th = toy_theory()
    assert repr(th) == ("<attnmech.Theory P=8 N0=5 heads=[2, 2] (4 paths) widths=[3, 4, 5] T=0.1 not solved>")
    sol = th.solve()
    # status and iteration count as the solve ended (8, converged on every path seen; neither is promised); the
    # action to 6 digits: S_code 18.0688248255 (spec §8.0), 2.5e-5 from a rounding boundary
    assert repr(th) == ("<attnmech.Theory P=8 N0=5 heads=[2, 2] (4 paths) widths=[3, 4, 5] T=0.1 "
                        f"solved: {sol.status}, {sol.iterations} iterations, action=18.0688>")
    th.set_widths(50)
    th.xi_test = np.zeros((3, toy.N0, 4), order="F")
    assert "P_test=3" in repr(th) and "widths=50 " in repr(th)
    th.close()
    assert repr(th) == "<attnmech.Theory (closed)>"


@pytest.mark.numerics  # a solve's status, iterations and 6 digits (conftest.py)
def test_solution_html():
    with toy_theory() as th:
        sol = th.solve()
    page = sol._repr_html_()
    assert "<b>attnmech.Solution</b>" in page
    # 6 digits of the spec's values, each ≥ 3e-6 from a rounding boundary: the stopping rule keeps the solve
    # within 3e-7 of the optimum (|g|₂ ≤ 2√13·grad_tol·|S|, over λ_min/2 = 0.05); status and iteration count as
    # the solve ended
    for name, text in [("status", sol.status), ("action (S_code)", "18.0688"), ("energy", "12.9676"),
                       ("entropy", "5.1012"), ("U_a", "1.04758"), ("iterations", str(sol.iterations)),
                       ("U", "4×4 2×2")]:
        assert f"<th style='text-align:left'>{name}</th><td>{text}</td>" in page
    sol.status = "<not> & converged"  # every text is escaped
    assert "&lt;not&gt; &amp; converged" in sol._repr_html_() and "<not>" not in sol._repr_html_()


@pytest.fixture(scope="module")
def markov():
    return am.run("markov", P=60, P_test=100, widths=[5, 50], progress=False, threads=1)


def test_run_scalars_and_dataframe(markov, monkeypatch):
    rows = markov.run_scalars()
    assert len(rows) == 2
    for row, run in zip(rows, markov["runs"]):
        assert row["width"] == run["width"] and row["test.accuracy"] == run["test"]["accuracy"]
        assert row["solver.iterations"] == run["solver"]["iterations"]
        assert row["solver.status"] == run["solver"]["status"] in ("converged", "converged_roundoff")
        assert row["gp.test.accuracy"] == run["gp"]["test"]["accuracy"]
        assert "U" not in row and "test.mean" not in row and "head_scores" not in row  # arrays and lists are not scalars
        assert all(isinstance(v, (float, str, bool)) for v in row.values())
    monkeypatch.setitem(sys.modules, "pandas", None)  # as when pandas is not installed
    with pytest.raises(ImportError, match="Results.to_dataframe needs pandas: apt install python3-pandas"):
        markov.to_dataframe()


def test_dataframe_columns_and_values(markov):
    pd = pytest.importorskip("pandas")
    df = markov.to_dataframe()
    rows = markov.run_scalars()
    assert isinstance(df, pd.DataFrame) and df.index.name == "run" and list(df.index) == [0, 1]
    assert list(df.columns) == list(rows[0])
    for i, row in enumerate(rows):
        for k, v in row.items():
            assert df.loc[i, k] == v


def test_dataframe_through_a_stand_in_pandas(markov, monkeypatch):
    """pandas is optional (not in CI): check what to_dataframe hands to DataFrame with a stand-in."""
    made = {}

    class Frame:
        def __init__(self, rows, columns):
            made.update(rows=rows, columns=columns)
            self.index = types.SimpleNamespace(name=None)

    monkeypatch.setitem(sys.modules, "pandas", types.SimpleNamespace(DataFrame=Frame))
    df = markov.to_dataframe()
    assert df.index.name == "run"
    assert made["rows"] == markov.run_scalars()
    assert made["columns"][:3] == ["temperature", "U_a", "action"] and "width" in made["columns"]


def test_results_html(markov):
    page = markov._repr_html_()
    assert "<b>attnmech.Results</b>" in page
    assert "<th style='text-align:left'>task</th><td>markov</td>" in page
    assert "<th style='text-align:left'>runs</th><td>2</td>" in page
    assert "<th>run</th><th>width</th><th>temperature</th><th>test.accuracy</th>" in page
    acc = markov["runs"][1]["test"]["accuracy"]
    assert f"<tr><td>1</td><td>50</td><td>0.01</td><td>{acc:.6g}</td>" in page
    doc = am._run.Results.__new__(am._run.Results)  # a document of another estimator, with markup in it
    dict.update(doc, {"status": "ok", "task": "<script>", "runs": [{"chain": {"rhat": 1.0}, "note": "a<b"}] * 25})
    page = doc._repr_html_()
    assert "&lt;script&gt;" in page and "<script>" not in page and "a&lt;b" in page
    assert "<th>chain.rhat</th><th>note</th>" in page and "… 5 more" in page


# ---------------------------------------------------------------------------------------------- progress
def test_progress_lines_count_newton_iterations(monkeypatch, capsys):
    assert _core.describe_progress(7, 100, "newton") == ("Newton iterations", "Newton iteration 7", None)
    assert _core.describe_progress(3, 100, "[run 1/2 N=10] newton")[1] == "[run 1/2 N=10] Newton iteration 3"
    assert _core.describe_progress(12, 500, "L-BFGS")[1] == "L-BFGS iteration 12"
    assert _core.describe_progress(3, 10, "theory: temperature scan") == (
        "theory: temperature scan", "theory: temperature scan: 3/10 (30 %)", 10)
    assert _core.describe_progress(2.5, 3, "theory: pruning")[1] == "theory: pruning: 83 %"
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with toy_theory(progress=True) as th:
        th.solve()
    err = capsys.readouterr().err
    assert "attnmech: Newton iteration 1\n" in err and "%" not in err


def test_run_shows_progress_by_default_only_when_stderr_is_a_terminal():
    # A library does not print progress for a program: am.run("markov") wrote 31 lines to a piped stderr for a
    # 2-second call. The same child process with stderr piped, then with stderr a terminal (a pty); the replica
    # estimator's run (milliseconds) reports one line.
    import os
    import pty
    import subprocess
    code = ("import attnmech as am; r = am.run(estimator='replica', nu=3, alpha=[0.5, 1, 2], threads=1); "
            "print(r['runs'][0]['curves'][0]['alpha'])")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(am.__file__)),
                                                    env.get("PYTHONPATH")] if p)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    piped = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == "" and piped.stdout == "[0.5 1.  2. ]\n"
    main, sub = pty.openpty()
    try:
        tty = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=sub, text=True,
                             timeout=120)
        os.close(sub)
        err = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the child's end is closed and everything was read
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(main)
    assert tty.returncode == 0 and tty.stdout == piped.stdout
    assert err.decode().splitlines() == ["attnmech: [run 1/1] replica: 1/1 (100 %)"]


def test_interactive_is_a_terminal_or_a_notebook_kernel(monkeypatch):
    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.setitem(sys.modules, "IPython", None)
    monkeypatch.setattr(sys, "stderr", Stream(True))
    assert _core.interactive() and isinstance(_core.make_progress(None), _core._Bar)
    monkeypatch.setattr(sys, "stderr", Stream(False))  # piped, a log file, a test runner
    assert not _core.interactive() and _core.make_progress(None) is None
    ipython = types.ModuleType("IPython")
    shell = types.SimpleNamespace()
    ipython.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert not _core.interactive()  # IPython in a terminal with stderr piped: a program's output
    shell.kernel = object()  # a Jupyter kernel (ipykernel's shell has .kernel)
    assert _core.interactive()
    monkeypatch.setattr(sys, "stderr", None)  # pythonw, a closed stderr
    assert _core.interactive()
    with pytest.raises(TypeError, match=r"progress must be True, False, None .* got 'yes'"):
        _core.make_progress("yes")


def test_progress_uses_tqdm_auto(monkeypatch):
    bars = []

    class Bar:
        def __init__(self, total, desc, leave):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            bars.append(self)

        def refresh(self):
            pass

        def close(self):
            self.closed = True

    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = Bar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    with toy_theory(progress=True) as th:
        iterations = th.solve().iterations
    assert len(bars) == 1 and bars[0].desc == "Newton iterations" and bars[0].total is None
    assert bars[0].n == iterations > 0 and bars[0].closed  # one step per Newton iteration; closed with the theory


def test_py_typed_is_installed():
    import pathlib
    pkg = pathlib.Path(am.__file__).parent
    assert (pkg / "py.typed").exists() and "'py.typed'" in (pkg / "meson.build").read_text(encoding="utf-8")
    import typing
    hints = typing.get_type_hints(am.Theory.select, {"ArrayLike": object, **vars(am._theory)})
    assert hints["return"].__origin__ is tuple and "widths" in hints and "temperatures" in hints
