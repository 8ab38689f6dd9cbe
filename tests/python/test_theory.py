"""attnmech.Theory on the RNG-free toy problem of spec §8.0: the action at the GP point, the optimum (S_code, U,
U_a), the predictions before and after, to 1e-10 absolute (the spec's 10 decimals) plus, at the solve's point, how
far the solver's stopping rule lets it stop from the optimum; ξ from attention matrices equals ξ from the heads;
warm start, kernel, metrics, the handle's lifetime. Cheap: well under a second."""
import numpy as np
import pytest

import attnmech as am
import toy

pytestmark = pytest.mark.numerics  # results depend on the float path (conftest.py)

TOL = toy.SPEC_TOL  # the spec's 10 decimals (toy.py: how it is derived)


def at_solution(th, sol, f):
    return toy.at_optimum_tolerance(th, sol, f)


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


def stopping_rule_holds(sol):
    """The promise of the status the solve returned (theory.h): the gradient test, or the decrement test."""
    scale = max(1.0, abs(sol.action))
    if sol.status == "converged":
        return sol.grad_max <= 1e-10 * scale
    return sol.status == "converged_roundoff" and sol.decrement <= 1e-10 * scale


def check_optimum(th, sol, xt):
    """The solve's point against the spec's optimum, each quantity within TOL plus its drift over the solver's
    distance to the optimum (the action's is second order: its gradient is ~0 there)."""
    act = lambda U: th.action(U)
    for name, q in (("S_code", lambda U: act(U).S_code), ("energy", lambda U: act(U).energy),
                    ("entropy", lambda U: act(U).entropy), ("U_a", lambda U: act(U).U_a)):
        got = sol.action if name == "S_code" else getattr(sol, name)
        assert abs(got - toy.OPT[name]) <= at_solution(th, sol, q)[0], name
    # U's entries are the solver's coordinates: each within the distance itself
    dist = toy.newton_distance(th, sol)
    np.testing.assert_allclose(sol.U[0], toy.OPT["U1"], rtol=0, atol=TOL + dist)
    np.testing.assert_allclose(sol.U[1], toy.OPT["U2"], rtol=0, atol=TOL + dist)
    mean, var = th.predict(xt, sol)
    assert np.all(np.abs(mean - toy.OPT["mean"]) <= at_solution(th, sol, lambda U: th.predict(xt, U)[0]))
    assert np.all(np.abs(var - toy.OPT["var"]) <= at_solution(th, sol, lambda U: th.predict(xt, U)[1]))


def test_optimum(xi):
    with make(xi[0]) as th:
        sol = th.solve()
        assert stopping_rule_holds(sol)
        assert sol.iterations <= 15  # 8 from the GP point on every path seen (quadratic from the 5th)
        check_optimum(th, sol, xi[1])
        # 6 digits quoted (≤ 5e-7 relative); λ_min moves by O(|Δv|) ≈ 1e-10 between the solve's point and v*
        assert sol.hessian_min_eig == pytest.approx(toy.OPT["hessian_min_eig"], rel=1e-5)
        mean, var = th.predict(xi[1])  # default U: the last solution
        assert np.array_equal(mean, th.predict(xi[1], sol)[0]) and np.array_equal(var, th.predict(xi[1], sol)[1])
        # the gradient at the solution is the one the solver stopped on (the same point, the same operations:
        # docs/design.md); the Hessian is the vech one, positive definite there. eigvalsh against the solver's
        # λ_min: both backward stable, |Δλ| ≤ n·ε·‖H‖ ≈ 1e-12, far inside 1e-8 relative.
        a = th.action(sol, grad=True, hess=True)
        assert max(np.abs(np.triu(g)).max() for g in a.grad) == sol.grad_max  # the measure: upper triangles
        assert a.hess.shape == (13, 13)
        assert np.linalg.eigvalsh(a.hess).min() == pytest.approx(sol.hessian_min_eig, rel=1e-8)
        # a warm start at a point that passed the gradient test passes it again at once (the same bits), with
        # the same point; one that stopped on the decrement may take the stall rule's two more iterations
        again = th.solve(warm_start=sol)
        if sol.status == "converged":
            assert again.iterations == 0 and all(np.array_equal(a, b) for a, b in zip(again.U, sol.U))
        else:
            assert again.iterations <= 3
            np.testing.assert_allclose(toy.vech(again), toy.vech(sol), rtol=0,
                                       atol=toy.newton_distance(th, sol) + toy.newton_distance(th, again))


def test_from_attention_equals_heads(xi):
    att = [toy.attention(toy.X, toy.W[:2]), toy.attention(toy.X, toy.W[2:])]
    att_t = [toy.attention(toy.X_test, toy.W[:2]), toy.attention(toy.X_test, toy.W[2:])]
    xa = am.xi_from_attention(toy.X, att, s0=toy.VARIANCES[0])
    np.testing.assert_allclose(xa, xi[0], rtol=0, atol=xi_tolerance(toy.X, toy.VARIANCES[0]))
    with am.Theory.from_attention(toy.X, att, toy.y, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T,
                                  X_test=toy.X_test, attention_test=att_t) as th:
        sol = th.solve()
        # ξ ~1e-16 away moves the optimum by ~1e-15: far below TOL
        assert stopping_rule_holds(sol)
        check_optimum(th, sol, th.xi_test)
        assert th.accuracy(y_test=[1.0, -1.0]) == 0.5  # both means are positive (≥ 0.025: no float path flips them)


def xi_tolerance(X, s0):
    """ξ by NumPy (einsum, libm exp) against the library's (SIMD softmax and small GEMMs: any lane order, FMA or
    not). ξ[μ, i, π] = c·Σ_s X[μ, s, i]·A_π[μ, s], c = √(s0/(N0·H)), A_π a product of column-stochastic softmax
    matrices and the readout, so A ≥ 0 sums to 1 and the sum of |terms| is ≤ c·max|X|. Counting roundings per
    implementation, relative to that: exp ≤ 2, each softmax entry S − 1 (its sum) + 1 (division), each of the L = 2
    layer products and the readout sum S, the scale 1: 2 + S + 3S + 1 = 19 at S = 4, doubled for the difference
    (38); 64·ε·c·max|X| leaves a factor 1.7 over the count (seen: 1.1e-16, 1.6 ε·c·max|X|)."""
    return 64 * toy.EPS * np.sqrt(s0 / (toy.N0 * 4)) * np.max(np.abs(X))


def test_readouts_match_the_library():
    for readout in ("first", "mean"):
        att = [toy.attention(toy.X, toy.W[:2]), toy.attention(toy.X, toy.W[2:])]
        a = am.xi_from_attention(toy.X, att, readout=readout, s0=0.7)
        b = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W, readout=readout, s0=0.7)
        np.testing.assert_allclose(a, b, rtol=0, atol=xi_tolerance(toy.X, 0.7))


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
        # the same ξ bits in either order: the same solve; the action is second order in the solve's distance
        assert a.solve().action == pytest.approx(toy.OPT["S_code"], abs=at_solution(a, a.solution, lambda U: a.action(U).S_code)[0])
        assert np.isfinite(b.solve().action)


def test_release_keeps_the_bits(xi):
    # The handle keeps the solve's factor of Γ for the predictions at its solution; release() frees it and the next
    # prediction factors Γ again: the same operations on the same numbers, so the same bits (am_theory_release).
    with make(xi[0]) as th:
        sol = th.solve()
        kept, s_kept = th.predict(xi[1], sol), th.action(sol).S_code
        th.release()
        th.release()  # idempotent
        again = th.predict(xi[1], sol)
        assert all(np.array_equal(a, b) for a, b in zip(kept, again))
        th.release()
        assert th.action(sol).S_code == s_kept


def test_close_is_idempotent(xi):
    th = make(xi[0])
    th.close()
    th.close()
    with pytest.raises(ValueError):
        th.gp_point()
