"""Arguments are taken as what they are or refused naming the argument — never coerced: a
complex array is not its real part, 2.5 heads are not 2, None is not the text "None", an empty width list is not
the default scan, -1 iterations are not 2^32 − 1. Each case checks the refusal comes before any work (cheap)."""
import resource
import time

import numpy as np
import pytest

import attnmech as am
from attnmech._theory import make_arch
import toy


def xi():
    return am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W)


def theory(**kw):
    args = dict(heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1)
    args.update(kw)
    return am.Theory(xi(), toy.y, **args)


def test_complex_arrays_are_refused_not_cast_to_their_real_part():
    with pytest.raises(TypeError, match=r"xi: expected real numbers, got an array of dtype complex128"):
        am.Theory(xi() + 1j, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1)
    with pytest.raises(TypeError, match="y: expected real numbers"):
        am.Theory(xi(), toy.y.astype(complex), heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1)
    with pytest.raises(TypeError, match="X: expected real numbers"):
        am.xi_from_heads(toy.X.astype(complex), heads=toy.HEADS, W=toy.W)
    with pytest.raises(TypeError, match="expected real numbers, got an array of dtype <U"):
        am.Theory(np.full((8, 5, 4), "a"), toy.y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1)
    with pytest.raises(TypeError, match="temperature must be a real number"):
        theory(temperature=0.1 + 0j)


def test_non_integral_heads_are_refused_not_truncated():
    with pytest.raises(TypeError, match=r"heads\[0\] must be an integer, got 2.5"):
        make_arch([2.5, 2])
    with pytest.raises(TypeError, match="heads\\[1\\] must be an integer, got a bool"):
        make_arch([2, True])
    with pytest.raises(ValueError, match=r"heads\[0\] = 0 is outside \[1, 4096\]"):
        make_arch([0])
    assert list(make_arch([2.0, np.int64(2)]).heads[:2]) == [2, 2]  # integral values of any type are fine


def test_huge_head_counts_are_refused_before_anything_is_built():
    # heads=[1e30] once built 10^30 head tags (16.7 GB before it was killed); now a ValueError at once
    t0, rss0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for heads in ([1e30], [64, 128], [2] * 17):
        with pytest.raises(ValueError, match="heads"):
            am.write_problem("/nonexistent/never-written", toy.X, toy.y, heads=heads, W=[], widths=1.0,
                             temperature=0.1)
    assert time.monotonic() - t0 < 5  # generous: the refusal is a few Python operations
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 100_000  # KB: nothing large allocated


def test_solver_and_metric_sizes_are_checked():
    with theory() as th:
        with pytest.raises(ValueError, match=r"max_iter = -1 is outside \[0, 4294967295\]"):
            th.solve(max_iter=-1)
        with pytest.raises(ValueError, match="grad_tol = -1.0 must be >= 0"):
            th.solve(grad_tol=-1.0)
        with pytest.raises(ValueError, match="decrement_tol = nan must be >= 0"):
            th.solve(decrement_tol=float("nan"))
        with pytest.raises(ValueError, match="k = -1 is outside"):
            th.alignment(k=-1)
        with pytest.raises(TypeError, match="k must be an integer, got 2.5"):
            th.alignment(k=2.5)
        ov, ev = th.alignment(k=3.0)
        assert ov.shape == (3,) and np.all(np.diff(ev) <= 0)


def test_widths_and_variances_are_non_empty_lists_of_the_right_length():
    with pytest.raises(ValueError, match=r"widths \(W_0..W_L\): expected a non-empty list"):
        theory(widths=[])
    with pytest.raises(ValueError, match=r"widths \(W_0..W_L\): 1 or 3 values expected, got 2"):
        theory(widths=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"variances \(s_0..s_L, s_a\): 4 values expected, got 3"):
        theory(variances=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="widths: expected a non-empty list"):
        am.run("markov", widths=[], progress=False)  # once: the default seven-width scan


def test_run_refuses_what_is_not_a_name_or_a_parameter_value():
    with pytest.raises(TypeError, match="task must be a str"):
        am.run(123, progress=False)  # once: AttributeError from inside
    with pytest.raises(TypeError, match="estimator must be a str"):
        am.run("markov", estimator=["theory"], progress=False)
    with pytest.raises(ValueError, match="contains a NUL character"):
        am.run("markov\0x", progress=False)  # once: ran markov
    with pytest.raises(TypeError, match="parameter 'dir': NoneType None is not a parameter value"):
        am.run("npy", dir=None, progress=False)  # once: the directory "None"
    with pytest.raises(TypeError, match="parameter 'temperature': complex"):
        am.run("markov", temperature=0.1j, progress=False)
    with pytest.raises(ValueError, match="parameter 'alpha': an empty list"):
        am.run("replica", alpha=[], progress=False)
    with pytest.raises(ValueError, match=r"seed = -1 is outside"):
        am.run("markov", seed=-1, progress=False)


def test_paths_are_refused_when_none_or_empty(tmp_path):
    with pytest.raises(TypeError, match="path must be a path"):
        am.load(None)
    with pytest.raises(ValueError, match="path b?'' is empty"):
        am.load("")
    with pytest.raises(TypeError, match="dir must be a path"):
        am.read_problem(None)
    with pytest.raises(ValueError, match="X_test and y_test go together"):
        am.write_problem(tmp_path / "p", toy.X, toy.y, X_test=toy.X_test, heads=toy.HEADS, W=toy.W,
                         widths=toy.WIDTHS, temperature=0.1)
    assert not (tmp_path / "p").exists()


def test_the_wheel_installs_every_module_of_the_package():
    # python/attnmech/meson.build lists the sources the wheel installs: a module missing there imports in the
    # source tree (this suite) and fails only in the installed wheel (.ci/wheel) — _args.py once did.
    import pathlib
    import re
    pkg = pathlib.Path(am.__file__).parent
    build = (pkg / "meson.build").read_text(encoding="utf-8")
    listed = set(re.findall(r"'([\w.]+\.py)'", build))
    assert {p.name for p in pkg.glob("*.py")} == listed


def test_run_start_must_be_a_dict():
    # start="x" was an AttributeError ('str' object has no attribute 'items') from inside the spec filling
    with pytest.raises(TypeError, match=r"^start must be a dict \(the starting state .*\) or None, got str 'x'$"):
        am.run("markov", start="x", progress=False)
    with pytest.raises(TypeError, match=r"got list \[1, 2\]"):
        am.run("markov", start=[1, 2], progress=False)


def test_write_problem_checks_shapes_and_labels_before_writing(tmp_path):
    target = tmp_path / "p"
    W1 = [np.eye(toy.N0)]

    def write(X, y, X_test=None, y_test=None, W=W1):
        am.write_problem(target, X, y, X_test, y_test, heads=[1], W=W, widths=10.0, temperature=0.1)

    with pytest.raises(ValueError, match=r"^X_train: expected shape \(P, S, N0\).*, got shape \(8, 5\)$"):
        write(toy.X[:, 0, :], toy.y)  # a 2-D X was written (and refused only when the npy task read it)
    with pytest.raises(ValueError, match=r"^y_train: 8 labels expected \(one per example\), got 5$"):
        write(toy.X, toy.y[:5])
    y = toy.y.copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match=r"^y_train: label nan at index 3 \(1 non-finite in all\); labels must"):
        write(toy.X, y)
    with pytest.raises(ValueError, match=r"^X_test: expected shape \(Pt, 4, 5\) like X_train \(P, S, N0\), got "
                                         r"shape \(2, 3, 5\)$"):
        write(toy.X, toy.y, toy.X_test[:, :3], [1.0, -1.0])
    with pytest.raises(ValueError, match=r"^y_test: label inf at index 1"):
        write(toy.X, toy.y, toy.X_test, [1.0, np.inf])
    with pytest.raises(ValueError, match=r"^W\[l1_h1\]: expected shape \(5, 5\) \(N0 = 5 from X_train\), got shape "
                                         r"\(4, 4\)$"):
        write(toy.X, toy.y, W=[np.eye(4)])
    assert not target.exists()
    write(toy.X, toy.y, toy.X_test, [1.0, -1.0])  # the right shapes are written and read back
    back = am.read_problem(target)
    assert np.array_equal(back["X_train"], toy.X) and back["y_test"].tolist() == [1.0, -1.0]


def test_nan_labels_are_refused_naming_the_argument():
    y = toy.y.copy()
    y[2] = np.nan
    with pytest.raises(ValueError, match=r"^y: label nan at index 2 \(1 non-finite in all\); labels must be finite"):
        am.Theory(xi(), y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1)


def test_a_broadcast_input_is_checked_before_it_is_copied(monkeypatch):
    # A broadcast view of 128 bytes standing for 256 MB: Python once converted it (3 GB: 23 s) before the library
    # refused the size. Now shapes, labels and the memory budget are checked first, and nothing large is allocated.
    import tracemalloc
    monkeypatch.setenv("AM_MEMORY_LIMIT", "1G")  # the same verdict on every machine
    P = 2_000_000
    big = np.broadcast_to(np.ones((1, 4, 4)), (P, 4, 4))
    tracemalloc.start()
    try:
        t0 = time.monotonic()
        with pytest.raises(ValueError, match=rf"^y: {P} labels expected \(xi has P = {P}\), got 8$"):
            am.Theory(big, toy.y, heads=[2, 2], widths=10.0, temperature=0.1)
        with pytest.raises(am.OutOfMemory, match=rf"^Theory \(xi of shape \({P}, 4, 4\) converted to float64 Fortran "
                                                 r"order, and the P × P kernel\) needs 32000.8 GB; AM_MEMORY_LIMIT allows"):
            am.Theory(big, np.broadcast_to(1.0, (P,)), heads=[2, 2], widths=10.0, temperature=0.1)
        Xb = np.broadcast_to(np.ones((1, 4, 5)), (P * 10, 4, 5))
        with pytest.raises(am.OutOfMemory, match=r"^write_problem \(X_train: 400,000,000 numbers, held as float64 and "
                                                 r"copied once into the dataset record\) needs 6.4 GB; AM_MEMORY_LIMIT"):
            am.write_problem("/nonexistent/never-written", Xb, np.broadcast_to(1.0, (P * 10,)), heads=[1],
                             W=[np.eye(5)], widths=1.0, temperature=0.1)
        with pytest.raises(ValueError, match=r"^X_train: expected shape \(P, S, N0\)"):
            am.write_problem("/nonexistent/never-written", Xb[:, 0], toy.y, heads=[1], W=[np.eye(5)], widths=1.0,
                             temperature=0.1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40e6 and time.monotonic() - t0 < 10  # isfinite of the labels (20 MB); no 256 MB or 6.4 GB copy


def test_attention_rows_must_be_softmax_weights():
    """xi_from_attention: each query's row of weights sums to 1 (softmax over the keys): a row summing to 7, a
    row of zeros or negative weights is refused naming where; float32 softmax rows (off by ~S·6e-8) pass."""
    rng = np.random.default_rng(0)
    P, S, N0 = 5, 4, 3
    X = rng.standard_normal((P, S, N0))
    A = rng.dirichlet(np.ones(S), size=(P, 2, S))
    am.xi_from_attention(X, [A.astype(np.float32)])  # float32 rounding is within the tolerance
    bad = A.copy()
    bad[3, 1, 2] *= 7
    with pytest.raises(ValueError, match=r"example 3, head 1, query 2 sums to 7"):
        am.xi_from_attention(X, [bad])
    dead = A.copy()
    dead[:, 1] = 0  # a silenced head (all-zero rows) is legitimate
    am.xi_from_attention(X, [dead])
    bad = A.copy()
    bad[0, 0, 0, :2] = 0  # a row with part of its weight removed
    with pytest.raises(ValueError, match=r"example 0, head 0, query 0 sums to"):
        am.xi_from_attention(X, [bad])
    bad = A.copy()
    bad[1, 0, 0] = [1.5, -0.5, 0, 0]
    with pytest.raises(ValueError, match="negative weights"):
        am.xi_from_attention(X, [bad])
