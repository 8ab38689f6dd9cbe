"""attnmech.Theory on the RNG-free toy problem of spec §8.0: the action at the GP point, the optimum (S_code, U,
U_a), the predictions before and after, to 1e-10 absolute (the spec's 10 decimals); ξ from attention matrices
equals ξ from the heads; warm start, kernel, metrics, the handle's lifetime. Cheap: well under a second."""
import numpy as np
import pytest

import attnmech as am
import toy

TOL = 1e-10  # the spec quotes 10 decimals; our values agree with them to < 7e-11


@pytest.fixture(scope="module")
def xi():
    return (am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W, s0=toy.VARIANCES[0]),
            am.xi_from_heads(toy.X_test, heads=toy.HEADS, W=toy.W, s0=toy.VARIANCES[0]))


def make(xi_train):
    return am.Theory(xi_train, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES,
                     temperature=toy.T)


def test_xi_layout(xi):
    tr, te = xi
    assert tr.shape == (toy.P, toy.N0, 4) and tr.flags.f_contiguous
    assert te.shape == (2, toy.N0, 4)


def test_gp_point(xi):
    with make(xi[0]) as th:
        U = th.gp_point()
        assert len(U) == 2 and U[0].shape == (4, 4) and U[1].shape == (2, 2)
        np.testing.assert_allclose(U[0], 1.44 * np.eye(4), rtol=0, atol=1e-15)  # s1 s2 sa = 0.8·1.2·1.5
        np.testing.assert_allclose(U[1], 1.8 * np.eye(2), rtol=0, atol=1e-15)
        a = th.action(U)
        assert abs(a.U_a - toy.GP["U_a"]) < TOL
        assert abs(a.energy - toy.GP["energy"]) < TOL
        assert abs(a.entropy - toy.GP["entropy"]) < TOL
        assert abs(a.S_code - (toy.GP["energy"] + toy.GP["entropy"])) < 2 * TOL
        mean, var = th.predict(xi[1], U)
        np.testing.assert_allclose(mean, toy.GP["mean"], rtol=0, atol=TOL)
        np.testing.assert_allclose(var, toy.GP["var"], rtol=0, atol=TOL)


def test_optimum(xi):
    with make(xi[0]) as th:
        sol = th.solve()
        assert sol.status in ("converged", "converged_roundoff")
        assert sol.iterations <= 15
        assert sol.grad_max <= 1e-10 * max(1.0, sol.action)
        assert abs(sol.action - toy.OPT["S_code"]) < TOL
        assert abs(sol.energy - toy.OPT["energy"]) < TOL
        assert abs(sol.entropy - toy.OPT["entropy"]) < TOL
        assert abs(sol.U_a - toy.OPT["U_a"]) < TOL
        np.testing.assert_allclose(sol.U[0], toy.OPT["U1"], rtol=0, atol=TOL)
        np.testing.assert_allclose(sol.U[1], toy.OPT["U2"], rtol=0, atol=TOL)
        assert sol.hessian_min_eig == pytest.approx(toy.OPT["hessian_min_eig"], rel=1e-5)  # 6 digits quoted
        mean, var = th.predict(xi[1])  # default U: the last solution
        np.testing.assert_allclose(mean, toy.OPT["mean"], rtol=0, atol=TOL)
        np.testing.assert_allclose(var, toy.OPT["var"], rtol=0, atol=TOL)
        # the gradient vanishes at the optimum; the Hessian is the vech one, positive definite there
        a = th.action(sol, grad=True, hess=True)
        assert max(abs(g).max() for g in a.grad) <= 1e-9
        assert a.hess.shape == (13, 13)
        assert np.linalg.eigvalsh(a.hess).min() == pytest.approx(sol.hessian_min_eig, rel=1e-8)
        # a warm start at the optimum stops at once with the same point
        again = th.solve(warm_start=sol)
        assert again.iterations <= 1
        np.testing.assert_allclose(again.U[0], sol.U[0], rtol=0, atol=1e-12)


def test_from_attention_equals_heads(xi):
    att = [toy.attention(toy.X, toy.W[:2]), toy.attention(toy.X, toy.W[2:])]
    att_t = [toy.attention(toy.X_test, toy.W[:2]), toy.attention(toy.X_test, toy.W[2:])]
    xa = am.xi_from_attention(toy.X, att, s0=toy.VARIANCES[0])
    np.testing.assert_allclose(xa, xi[0], rtol=0, atol=1e-14)
    with am.Theory.from_attention(toy.X, att, toy.y, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T,
                                  X_test=toy.X_test, attention_test=att_t) as th:
        sol = th.solve()
        assert abs(sol.action - toy.OPT["S_code"]) < TOL
        mean, _ = th.predict()
        np.testing.assert_allclose(mean, toy.OPT["mean"], rtol=0, atol=TOL)
        assert th.accuracy(y_test=[1.0, -1.0]) == 0.5  # both means are positive


def test_readouts_match_the_library():
    for readout in ("first", "mean"):
        att = [toy.attention(toy.X, toy.W[:2]), toy.attention(toy.X, toy.W[2:])]
        a = am.xi_from_attention(toy.X, att, readout=readout, s0=0.7)
        b = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W, readout=readout, s0=0.7)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)


def test_kernel_metrics(xi):
    with make(xi[0]) as th:
        K = th.kernel(th.gp_point())
        assert K.shape == (8, 8)
        np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14)
        # K_U at U = c·I is c/(s1 s2 sa) K_GP (spec §8.4): K_GP[0,0] = 1.5685379487 at c = s1 s2 sa
        assert K[0, 0] == pytest.approx(1.5685379487, abs=TOL)
        assert K[0, 1] == pytest.approx(0.9947820814, abs=TOL)
        sol = th.solve()
        scores = th.head_scores()
        assert scores.shape == (4,) and scores.max() == 1.0
        ov, ev = th.alignment(k=3)
        assert ov.shape == ev.shape == (3,) and np.all(np.diff(ev) <= 0)
        assert am.accuracy([0.3, -0.1, 0.2], [1, 1, 1]) == pytest.approx(2 / 3)
        assert sol is th.solution


def test_zero_copy_and_conversion(xi):
    # a C-order or float32 ξ is converted once and gives the same theory
    with make(np.ascontiguousarray(xi[0])) as a, make(xi[0].astype(np.float32).astype(np.float64)) as b:
        assert a.solve().action == pytest.approx(toy.OPT["S_code"], abs=TOL)
        assert np.isfinite(b.solve().action)


def test_close_is_idempotent(xi):
    th = make(xi[0])
    th.close()
    th.close()
    with pytest.raises(ValueError):
        th.gp_point()
