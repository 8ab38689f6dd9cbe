"""Low-rank problems: Theory.alignment(k) for every k from 1 to P on a kernel of rank 24 < P = 60
(rank(K) < k < P crashed with heap corruption), against numpy's full eigendecomposition; and a problem directory of
one's own (write_problem(heads=[1])) run through am.run("npy") with the defaults (alignment_k = 30 > rank 4).
~1 s."""
import numpy as np
import pytest

import attnmech as am

pytestmark = pytest.mark.numerics  # results depend on the float path (conftest.py)


def test_theory_alignment_low_rank_every_k():
    rng = np.random.default_rng(23)
    P, r = 60, 24
    xi = np.asfortranarray(rng.normal(size=(P, r, 1)))  # N0 = 24 features, one path: rank(K) = 24
    y = np.where(rng.normal(size=P) > 0, 1.0, -1.0)
    with am.Theory(xi, y, heads=[1], widths=10, temperature=0.1) as th:
        K = th.kernel()
        w, V = np.linalg.eigh(K)
        w, V = w[::-1], V[:, ::-1]  # decreasing
        scale = abs(w[0])
        # each nonzero eigenvalue's distance to the rest of the spectrum (≥ 0.8 % of ‖K‖ here)
        gap = np.array([np.min(np.abs(np.delete(w, j) - w[j])) for j in range(r)])
        for k in range(1, P + 1):
            ov, ev = th.alignment(k=k)
            assert ov.shape == (k,) and ev.shape == (k,)
            # both backward stable: eigenvalues within 64·P·ε·‖K‖
            np.testing.assert_allclose(ev, w[:k], rtol=0, atol=64 * P * 2.2e-16 * scale)
            # the r nonzero eigenvalues are distinct: their overlaps are basis-independent, and each eigenvector
            # is within 64·P·ε·‖K‖/gap of the exact one (Davis–Kahan over the same backward error): ≤ 1.1e-10
            m = min(k, r)
            ref = np.abs(V[:, :m].T @ y) / np.linalg.norm(y)
            assert np.all(np.abs(ov[:m] - ref) <= 2 * 64 * P * 2.2e-16 * scale / gap[:m])  # two computations
            assert np.all(np.isfinite(ov)) and np.sum(ov ** 2) <= 1 + 1e-10


def test_npy_run_low_rank_defaults(tmp_path):
    rng = np.random.default_rng(5)
    P, S, N0 = 60, 2, 4  # ξ has N0·H = 4 columns: rank(K) ≤ 4 < alignment_k = 30 < P
    X = rng.normal(size=(P, S, N0))
    y = np.where(rng.normal(size=P) > 0, 1.0, -1.0)
    d = am.write_problem(tmp_path / "lowrank", X, y, X[:5], y[:5], heads=[1], W=[rng.normal(size=(N0, N0))],
                         widths=10, temperature=0.01)
    r = am.run("npy", dir=str(d), threads=1, progress=False)
    al = r["runs"][0]["alignment"]
    for key in ("rn", "gp", "rn_eigenvalues", "gp_eigenvalues"):
        assert len(al[key]) == 30 and np.all(np.isfinite(al[key]))
    # rank 4: the rest are zeros computed within the backward error 64·P·ε·‖K‖ (as above)
    assert np.all(np.abs(al["gp_eigenvalues"][4:]) <= 64 * P * 2.2e-16 * al["gp_eigenvalues"][0])
