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
