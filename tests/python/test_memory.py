"""1000 create/solve/destroy cycles of a Theory grow the resident set by < 5 MB (handles are freed
deterministically; outputs are NumPy-owned copies). ~1 s."""
import gc
import os

import numpy as np

import attnmech as am
import toy


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cycle(xi, xit):
    with am.Theory(xi, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T) as th:
        sol = th.solve()
        mean, var = th.predict(xit)
    return sol.action, mean


def test_create_solve_destroy_cycles_do_not_leak():
    xi = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W)
    xit = am.xi_from_heads(toy.X_test, heads=toy.HEADS, W=toy.W)
    first = cycle(xi, xit)
    for _ in range(50):  # warm-up: allocator pools, ctypes caches
        cycle(xi, xit)
    gc.collect()
    before = rss_bytes()
    for _ in range(1000):
        action, mean = cycle(xi, xit)
    # also without the with-block: __del__ frees the handle
    for _ in range(100):
        th = am.Theory(xi, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=toy.T)
        th.solve()
        del th
    gc.collect()
    grown = rss_bytes() - before
    print(f"RSS growth over 1100 cycles: {grown / 1e6:.3f} MB")
    assert grown < 5e6
    assert action == first[0] and np.array_equal(mean, first[1])  # same bits every cycle
