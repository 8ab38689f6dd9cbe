"""Property test of the Python Theory: random problems over shapes the project's tasks never make —
P from 1 to 40, N0 from 1, heads [1] to [2, 2, 2], ξ of every rank (duplicated examples, zero inputs), T from 1e-8
to 1e3 — through Theory(...).solve / predict / kernel / alignment / head_scores. Each case either succeeds with
finite numbers that pass an independent NumPy check, or raises an attnmech.Error with a message; never a crash.
The C harness (tests/property, also under ASan) covers the same API with 10^4 cases; this one checks the Python
layer (layouts, copies, argument handling) over ~200 cases in a few seconds. AM_PROPERTY_SEED replays another
stream; a failure names its case."""
import os

import numpy as np
import pytest

import attnmech as am

pytestmark = pytest.mark.numerics  # results depend on the float path (conftest.py)

SEED = int(os.environ.get("AM_PROPERTY_SEED", "23"))
CASES = 200
HEADS = [[1], [2], [3], [1, 1], [2, 1], [1, 2], [2, 2], [2, 2, 2]]


def random_case(rng):
    heads = HEADS[rng.integers(len(HEADS))]
    H = int(np.prod(heads))
    P, Pt, N0 = int(rng.integers(1, 41)), int(rng.integers(1, 6)), int(rng.integers(1, 7))
    rank = int(rng.integers(1, max(1, min(P, N0 * H)) + 1))
    # ξ of rank `rank` over the P·(N0·H) matrix: a product of two random factors, then some rows duplicated or zero
    flat = rng.normal(size=(P + Pt, rank)) @ rng.normal(size=(rank, N0 * H))
    for mu in range(P + Pt):
        u = rng.random()
        if u < 0.1:
            flat[mu] = 0.0
        elif u < 0.2 and mu > 0:
            flat[mu] = flat[rng.integers(mu)]
    xi_all = np.asfortranarray(flat.reshape(P + Pt, N0, H) * 10.0 ** rng.uniform(-2, 2))
    y = np.where(rng.normal(size=P) > 0, 1.0, -1.0)
    L = len(heads)
    widths = list(rng.integers(1, 50, size=L + 1).astype(float))
    T = 10.0 ** rng.uniform(-8, 3)
    return dict(heads=heads, xi=xi_all[:P], xt=xi_all[P:], y=y, widths=widths, T=T, all=xi_all)


def independent_prediction(case, U1):
    """Mean k^T (K + T I)^{-1} y and variance k_* - k^T (K + T I)^{-1} k from the kernel of train + test together
    (one Theory on the concatenation: the same kernel function), solved by NumPy."""
    P = case["xi"].shape[0]
    with am.Theory(case["all"], np.ones(case["all"].shape[0]), heads=case["heads"], widths=case["widths"],
                   temperature=case["T"]) as big:
        K = big.kernel(U1)
    Kxx, Kxt, Ktt = K[:P, :P], K[:P, P:], K[P:, P:]
    G = Kxx + case["T"] * np.eye(P)
    alpha = np.linalg.solve(G, np.column_stack([case["y"], Kxt]))
    mean, var = Kxt.T @ alpha[:, 0], np.diag(Ktt) - np.sum(Kxt * alpha[:, 1:], axis=0)
    # the size of the terms summed (a mean or variance can be small by cancellation: its error is relative to these)
    mean_scale = np.abs(Kxt).T @ np.abs(alpha[:, 0])
    var_scale = np.abs(np.diag(Ktt)) + np.sum(np.abs(Kxt * alpha[:, 1:]), axis=0)
    return mean, var, mean_scale, var_scale, np.linalg.cond(G)


@pytest.mark.parametrize("block", range(4))
def test_random_problems_succeed_checked_or_fail_with_a_message(block):
    rng = np.random.default_rng([SEED, block])
    outcomes = {"solved": 0, "refused": 0}
    for i in range(CASES // 4):
        case = random_case(rng)
        where = f"AM_PROPERTY_SEED={SEED} block {block} case {i}: heads {case['heads']}, P {case['xi'].shape[0]}, " \
                f"N0 {case['xi'].shape[1]}, T {case['T']:.3g}"
        try:
            with am.Theory(case["xi"], case["y"], heads=case["heads"], widths=case["widths"],
                           temperature=case["T"]) as th:
                sol = th.solve(max_iter=60)
                U1 = sol.U[0]
                assert np.all(np.isfinite(U1)) and np.isfinite(sol.action), where
                assert np.allclose(U1, U1.T, rtol=0, atol=1e-12 * np.abs(U1).max()), where  # symmetric
                assert np.linalg.eigvalsh(U1).min() > 0, where  # positive definite at a minimum
                mean, var = th.predict(case["xt"])
                ref_mean, ref_var, scale_m, scale_v, cond = independent_prediction(case, U1)
                # both are backward-stable solves of Γ = K + T I (Cholesky there, LU here): they agree to about
                # cond(Γ)·ε relative to the size of the summed terms; 1e3 covers P and the kernels' own rounding
                tol = 1e3 * max(cond, 1.0) * 2.2e-16
                assert np.all(np.abs(mean - ref_mean) <= tol * scale_m + 1e-300), where
                assert np.all(np.abs(var - ref_var) <= tol * scale_v + 1e-300), where
                P = case["xi"].shape[0]
                for k in {1, P // 2, P}:
                    if k < 1:
                        continue
                    ov, ev = th.alignment(k=k)
                    w = np.linalg.eigvalsh(th.kernel(U1))[::-1][:k]
                    # eigenvalues backward stable: 64·P·ε·‖K‖ (the bound of dsyevr and eigh, with slack)
                    assert np.allclose(ev, w, rtol=0, atol=64 * P * 2.2e-16 * max(abs(w[0]), 1e-300)), where
                    assert np.all(np.isfinite(ov)) and np.sum(ov ** 2) <= 1 + 1e-10, where
                hs = th.head_scores()
                assert hs.shape == (sum(case["heads"]),) and np.all(np.isfinite(hs)) and hs.max() <= 1 + 1e-15, where
                outcomes["solved"] += 1
        except am.Error as e:
            assert e.message, where  # a refusal always says why
            outcomes["refused"] += 1
    assert outcomes["solved"] > 0, outcomes  # the stream must exercise the checks, not only refusals
