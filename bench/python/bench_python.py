#!/usr/bin/env python3
"""Benchmarks of the Python layer (issue 13). Run against a build tree:
    OPENBLAS_NUM_THREADS=1 meson devenv -C build python3 bench/python/bench_python.py [--repeat 30]

1. Overhead: one Theory create + solve + predict at P = 100 (N0 = 20, S = 10, H = (2, 2)) through the package
   (argument checks and conversion, the worker thread that makes Ctrl-C work, result objects) against the same C
   calls made directly through ctypes on ready buffers (am_theory_create / am_theory_solve / am_theory_predict /
   am_theory_destroy: the C API's cost plus ctypes' ~1 µs per call). Target: ≤ 5 % more. Measured twice: as
   shipped, and with am.set_interruptible(False) (no worker-thread hand-off).
2. Newton against Adam: the time to minimise the action of the PyTorch example's problem (examples/python) and of
   the toy problem of tests/toy.hpp with attnmech's damped Newton, and with an Adam minimiser in the manner of the
   reference code (lr 0.01, stop when the action changes by < 1e-9; our own implementation over the same C action
   and gradient, not the reference code itself), iterations and seconds.
Times are min and median over repeats; the machine may be shared, so compare the ratio, not the absolute times.
--smoke (tests/scripts): 3 repeats, the PyTorch example at P = 60, Adam stopped after 200 iterations: seconds."""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

import attnmech as am
from attnmech import _lib

HERE = os.path.dirname(os.path.abspath(__file__))


def problem(P=100, Pt=100, S=10, N0=20, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(P + Pt, S, N0)) / np.sqrt(N0)
    y = np.sign(X[:, 0, 0] + X[:, -1, 1])
    W = [rng.normal(size=(N0, N0)) * 2 for _ in range(4)]
    xi = am.xi_from_heads(X, heads=[2, 2], W=W)
    return np.asfortranarray(xi[:P]), y[:P].copy(), np.asfortranarray(xi[P:])


def timed(fn, repeat):
    fn()  # warm-up
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts), statistics.median(ts)


def overhead(repeat):
    xi, y, xit = problem()
    kw = dict(heads=[2, 2], widths=[50.0, 50.0, 50.0], temperature=0.05, threads=1)

    def python_layer():
        with am.Theory(xi, y, **kw) as th:
            th.solve()
            return th.predict(xit)

    core = _lib.core
    arch = am._theory.make_arch([2, 2], kw["widths"])
    dp = _lib.c_double_p
    P, N0, H = xi.shape
    U = np.empty(20)
    mean, var = np.empty(xit.shape[0]), np.empty(xit.shape[0])
    xi_p, y_p, xit_p, U_p = xi.ctypes.data_as(dp), y.ctypes.data_as(dp), xit.ctypes.data_as(dp), U.ctypes.data_as(dp)
    m_p, v_p = mean.ctypes.data_as(dp), var.ctypes.data_as(dp)

    settings = _lib.ContextSettings()
    core.am_context_settings_init(ctypes.byref(settings), ctypes.sizeof(settings))
    settings.threads = 1

    def c_api():  # what a C program does: a context (threads = 1, as the Python side), the theory, solve, predict
        ctx = ctypes.c_void_p()
        assert core.am_context_create(ctypes.byref(ctx), ctypes.byref(settings)) == 0
        th = ctypes.c_void_p()
        assert core.am_theory_create(ctx, ctypes.byref(th), ctypes.byref(arch), P, N0, xi_p, y_p, kw["temperature"]) == 0
        rep = _lib.SolveReport()
        rep.struct_size = ctypes.sizeof(rep)
        assert core.am_theory_solve(ctx, th, None, U_p, ctypes.byref(rep)) >= 0
        assert core.am_theory_predict(ctx, th, U_p, xit.shape[0], xit_p, m_p, v_p) == 0
        core.am_theory_destroy(ctypes.byref(th))
        core.am_context_destroy(ctypes.byref(ctx))

    # alternate the two call by call, so that load from other processes hits both alike
    python_layer(), c_api()
    a, b = [], []
    for _ in range(repeat):
        for fn, out in ((python_layer, a), (c_api, b)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    py_min, py_med, c_min, c_med = min(a), statistics.median(a), min(b), statistics.median(b)
    print(f"overhead at P = {P}: python layer min {py_min * 1e3:.3f} ms / median {py_med * 1e3:.3f} ms; "
          f"C API min {c_min * 1e3:.3f} ms / median {c_med * 1e3:.3f} ms; "
          f"ratio (min) {py_min / c_min:.3f}, (median) {py_med / c_med:.3f}")
    return py_min / c_min


def adam(th, lr=0.01, tol=1e-9, max_iter=50000):
    """Adam on the entries of U_1..U_L over the C action and gradient; a step leaving the domain (U not positive
    definite) is retried with half the rate."""
    U = th.gp_point()
    m = [np.zeros_like(u) for u in U]
    v = [np.zeros_like(u) for u in U]
    b1, b2, eps = 0.9, 0.999, 1e-8
    a = th.action(U, grad=True)
    S = a.S_code
    for it in range(1, max_iter + 1):
        g = a.grad
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
        step = lr
        while True:
            new = [u - step * (mi / (1 - b1 ** it)) / (np.sqrt(vi / (1 - b2 ** it)) + eps) for u, mi, vi in zip(U, m, v)]
            try:
                a = th.action(new, grad=True)
                break
            except am.DomainError:
                step /= 2
        U = new
        if abs(a.S_code - S) < tol:
            return U, a.S_code, it
        S = a.S_code
    return U, S, max_iter


def newton_vs_adam(name, th, repeat, adam_iter=50000):
    t_newton = timed(lambda: th.solve(), min(repeat, 30))
    sol = th.solve()
    t0 = time.perf_counter()
    U, S, iters = adam(th, max_iter=adam_iter)
    t_adam = time.perf_counter() - t0
    dU = max(np.abs(a - b).max() for a, b in zip(U, sol.U))
    print(f"{name}: Newton {sol.iterations} iterations, min {t_newton[0] * 1e3:.2f} ms / median "
          f"{t_newton[1] * 1e3:.2f} ms, S = {sol.action:.10f}; Adam {iters} iterations, {t_adam * 1e3:.1f} ms, "
          f"S = {S:.10f}, max|U_adam - U_newton| = {dU:.1e}; time ratio Adam/Newton {t_adam / t_newton[0]:.0f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--smoke", action="store_true", help="3 repeats, P = 60, at most 200 Adam iterations: seconds")
    args = ap.parse_args()
    if args.smoke:
        args.repeat = 3
    adam_iter, P = (200, 60) if args.smoke else (50000, 200)
    print(f"attnmech {am.__version__} from {am.library_path()[0]}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}")
    overhead(args.repeat)
    old = am.set_interruptible(False)
    print("the same with am.set_interruptible(False) (no worker thread, Ctrl-C waits for the call):")
    overhead(args.repeat)
    am.set_interruptible(old)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
    import toy
    xi = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W)
    with am.Theory(xi, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T) as th:
        newton_vs_adam("the toy problem", th, args.repeat, adam_iter)
    try:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
        import torch_attention as ex
    except ImportError:
        print("PyTorch example: skipped (no torch; Debian python3-torch)")
        return
    import torch
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X, y = ex.make_data(P, 6, 8, rng)
    model = ex.AttentionNet(8, (2, 2))
    ex.train(model, X, y, 100)
    t0 = time.perf_counter()
    att = ex.attention_by_hooks(model, X)
    t_hooks = time.perf_counter() - t0
    with am.Theory.from_attention(X, att, y, widths=50.0, temperature=0.05) as th:
        print(f"PyTorch example (P = {P}, H = (2, 2)): attention by hooks {t_hooks * 1e3:.1f} ms")
        newton_vs_adam("PyTorch example", th, args.repeat, adam_iter)


if __name__ == "__main__":
    main()
