"""Theory.select: choosing the width N and temperature T on validation data, by the library's one rule
(am_select_validation, the theory estimator's too). Known answers (the rule on hand-made scores with every kind of
tie; a problem whose solution is the GP point at every width, so every width ties and the GP limit must win;
validation labels every cell classifies right, so the likelihood decides), each score against a cold solve in a
fresh Theory and the Gaussian log-density written out here, independence of the grid's order, and the argument
errors. Cheap: well under a second.

Tolerances come from what the solver promises (stopped_solves_bound), never from the last bits of one float path;
a cell that must fail fails by construction (max_iter = 0 from a start that misses the stopping rule by 1e3 or
more)."""
import math
import warnings

import numpy as np
import pytest

import attnmech as am
import toy

pytestmark = pytest.mark.numerics  # results depend on the float path (conftest.py)


@pytest.fixture(scope="module")
def toy_xi():
    xi = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W, s0=toy.VARIANCES[0])
    xv = am.xi_from_heads(toy.X_test, heads=toy.HEADS, W=toy.W, s0=toy.VARIANCES[0])
    return xi, xv


def make(xi, temperature=toy.T):
    return am.Theory(xi, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES,
                     temperature=temperature)


def stationary_gp_problem():
    """One path (U_1 is 1×1, the kernel is U_1·C): labels scaled so that ∂E/∂U_1 = 0 at the GP point,
    yᵀΓ⁻¹CΓ⁻¹y = tr(Γ⁻¹C) with Γ = C + T I. The entropy is smallest there too, so U = GP point solves the
    theory at every width: every width predicts the same, and the tie must go to the GP limit."""
    rng = np.random.default_rng(1)
    xi = np.asfortranarray(rng.standard_normal((12, 4, 1)))
    xv = np.asfortranarray(rng.standard_normal((30, 4, 1)))
    v, T = rng.standard_normal(12), 0.5
    with am.Theory(xi, v, heads=[1], widths=1.0, temperature=T) as th:
        C = th.kernel(np.eye(1))  # the GP point is U_1 = 1 here (s_1 s_a = 1)
    G = np.linalg.inv(C + T * np.eye(12))
    y = v * math.sqrt(np.trace(G @ C) / (v @ G @ C @ G @ v))
    return xi, y, xv, rng.standard_normal(30), T


def gaussian_log_density(mean, var, y, T):
    s2 = var + T
    return np.mean(-0.5 * np.log(2 * np.pi * s2) - 0.5 * (y - mean) ** 2 / s2)


def record_solves(monkeypatch):
    """The Solution of every solve select makes, by (widths, T) (a retried cell: the last one, which it keeps)."""
    made = {}
    solve = am.Theory.solve

    def spy(self, *args, **kwargs):
        sol = solve(self, *args, **kwargs)
        made[tuple(self.widths), self.temperature] = sol
        return sol
    monkeypatch.setattr(am.Theory, "solve", spy)
    return made


def stopped_solves_bound(f, theory, a, b):
    """How far f(U) (a score, predictions) may differ between two solves a, b of theory's problem (Solutions or
    U lists) that stopped at different points near its minimum v* (warm vs cold start: different iterates, so
    different stopping points). From what the solver promises, not from what one float path gives: each point's
    distance to v* (toy.newton_distance: 2|H⁻¹g|, which holds for converged_roundoff stops too; those can stop
    above grad_tol·max(1, |S|): max|G| = 3e-8 at S = 77, a 7.7e-9 tolerance, on the scalar path), f's drift over
    their sum (toy.drift), and the float64 error of evaluating f twice (toy.roundoff)."""
    distance = toy.newton_distance(theory, a) + toy.newton_distance(theory, b)
    return toy.drift(f, b, distance) + 2 * toy.roundoff(theory, b, np.atleast_1d(f(getattr(b, "U", b))))


def test_the_rule_on_known_scores():
    """am_select_validation through _best_cell: accuracy first (exact ties), then the likelihood (1e-9 relative),
    then the larger smallest width, the larger sum of widths, the larger T, the first cell."""
    from attnmech._theory import _best_cell
    nan = np.nan
    cands = [np.array([10.0, 10.0]), np.array([10.0, 20.0]), np.array([100.0, 100.0])]
    Ts = [0.1, 1.0]
    # accuracy decides: the only cell at 0.9, though its likelihood is the worst
    acc = np.array([[0.8, 0.8], [0.9, 0.8], [0.8, nan]])
    ll = np.array([[-1.0, -0.5], [-3.0, -0.2], [-0.1, nan]])
    assert _best_cell(acc, ll, cands, Ts) == (1, 0)
    # an accuracy tie: the likelihood decides
    acc = np.array([[0.9, 0.9], [0.9, 0.8], [0.7, nan]])
    assert _best_cell(acc, ll, cands, Ts) == (0, 1)
    # accuracy and likelihood tie (the likelihoods 1e-12 apart: round-off): the larger smallest width wins
    acc = np.array([[0.9, 0.9], [0.8, 0.8], [0.9, 0.9]])
    ll = np.array([[-0.5, -0.5], [0.0, 0.0], [-0.5 - 1e-12, -0.7]])
    assert _best_cell(acc, ll, cands, Ts) == (2, 0)
    # same smallest width (10): the larger sum (widths[1]); then the larger T
    acc = np.array([[0.9, 0.9], [0.9, 0.9], [0.5, 0.5]])
    ll = np.full((3, 2), -0.5)
    assert _best_cell(acc, ll, cands, Ts) == (1, 1)
    # two identical candidates: the first as given
    assert _best_cell(np.array([[0.5], [0.5]]), np.array([[-1.0], [-1.0]]), [cands[0], cands[0]], [0.3]) == (0, 0)
    # every solve failed
    with pytest.raises(am.NotConverged, match="every solve"):
        _best_cell(np.full((1, 2), nan), np.full((1, 2), nan), cands[:1], Ts)


def test_log_likelihood_is_the_gaussian_density():
    mean, var, y, T = np.array([0.3, -0.2, 1.1]), np.array([0.05, 0.2, 0.0]), np.array([1.0, -1.0, 1.0]), 0.1
    s2 = var + T
    want = np.mean(-0.5 * np.log(2 * np.pi * s2) - 0.5 * (y - mean) ** 2 / s2)
    assert am.log_likelihood(mean, var, y, T) == pytest.approx(want, rel=1e-14)
    assert math.isnan(am.log_likelihood(mean, var, y, -0.05))  # var + T <= 0 for the last point
    with pytest.raises(ValueError, match="shapes"):
        am.log_likelihood(mean, var[:2], y, T)


def test_ties_at_the_gp_point_go_to_the_largest_width():
    xi, y, xv, yv, T = stationary_gp_problem()
    with am.Theory(xi, y, heads=[1], widths=1.0, temperature=T) as th:
        for N in (0.3, 1000.0):  # the premise: the GP point is the solution at any width
            th.set_widths(N)
            sol = th.solve()
            assert sol.iterations == 0 and abs(sol.U[0][0, 0] - 1.0) < 1e-12
        for widths in ([1, 1000, 10, 0.3], [1000, 0.3, 10, 1], [0.3, 1, 10, 1000]):
            assert th.select(xv, yv, widths=widths, temperatures=[T]) == (1000, T)
            assert np.ptp(th.selection.accuracy[:, 0]) == 0  # the same predictions: the same signs
            s = th.selection.log_likelihood[:, 0]
            assert np.ptp(s) <= 1e-12 * abs(s[0])  # and a likelihood tie up to round-off
        # the theory is left at the choice, with its solution
        assert th.temperature == T and np.all(th.widths == 1000.0)
        assert th.solution.U[0][0, 0] == pytest.approx(1.0, abs=1e-12)


def test_accuracy_ties_go_to_the_likelihood(toy_xi):
    xi, xv = toy_xi
    with make(xi) as th:
        mean, _ = th.predict(xv)
    yv = np.sign(mean)  # the GP point's own signs: the toy's two test points, right at every cell below
    widths, Ts = [3, [3, 4, 5], 100], [0.05, 0.1, 0.2]
    with make(xi) as th:
        got = th.select(xv, yv, widths=widths, temperatures=Ts)
        sel = th.selection
        assert np.all(sel.accuracy == 1.0)  # every cell ties on accuracy ...
        i, j = np.unravel_index(np.argmax(sel.log_likelihood), sel.log_likelihood.shape)
        best = sel.log_likelihood[i, j]  # ... so the likelihood decides; no other cell within round-off of it
        assert np.sum(sel.log_likelihood >= best - 1e-9 * max(1.0, abs(best))) == 1
        assert got == (widths[i], Ts[j]) and sel.index == (i, j)


def test_scores_equal_cold_solves_and_the_gaussian_density(toy_xi, monkeypatch):
    xi, xv = toy_xi
    yv = np.array([1.0, -1.0])
    widths, Ts = [[3, 4, 5], 10, 2], [0.05, 0.1, 0.3]
    made = record_solves(monkeypatch)
    with make(xi) as th:
        w, T = th.select(xv, yv, widths=widths, temperatures=Ts)
        sel = th.selection
        assert sel.log_likelihood.shape == (3, 3) and np.all(np.isfinite(sel.log_likelihood))
        i, j = sel.index
        top = sel.accuracy == np.nanmax(sel.accuracy)  # the rule: the best accuracy, then the best likelihood
        assert (w, T) == (widths[i], Ts[j]) and top[i, j]
        assert sel.log_likelihood[i, j] == np.max(sel.log_likelihood[top])
        chosen_mean = th.predict(xv)[0]
    monkeypatch.undo()
    for i, w in enumerate(widths):
        for j, T in enumerate(Ts):
            with am.Theory(xi, toy.y, heads=toy.HEADS, widths=w, variances=toy.VARIANCES, temperature=T) as cold:
                sol = cold.solve()
                mean, var = cold.predict(xv, sol)
                # select's solve here was warm-started, this one cold: two stopping points near one minimum, so
                # the scores agree to the bound those points give (stopped_solves_bound: up to ~1e-7 here; seen
                # 1.45e-8 on an AVX-512 path, 7.7e-9 on the scalar one), not to a number tuned on one float path
                warm = made[tuple(cold.widths), T]
                score = lambda U: gaussian_log_density(*cold.predict(xv, U), yv, T)
                tol = stopped_solves_bound(score, cold, warm, sol)[0]
                assert abs(sel.log_likelihood[i, j] - gaussian_log_density(mean, var, yv, T)) <= tol
                assert sel.accuracy[i, j] == np.mean(np.sign(mean) == yv)
                if (i, j) == sel.index:
                    tol = stopped_solves_bound(lambda U: cold.predict(xv, U)[0], cold, warm, sol)
                    assert np.all(np.abs(chosen_mean - mean) <= tol)


def test_grid_order_does_not_matter(toy_xi):
    xi, xv = toy_xi
    yv = np.array([1.0, 1.0])
    widths, Ts = [2, 5, 20, 1e4], [0.02, 0.1, 0.5, 2.0]
    with make(xi) as th:
        first = th.select(xv, yv, widths=widths, temperatures=Ts)
        ref = (th.selection.accuracy, th.selection.log_likelihood)
    rng = np.random.default_rng(0)
    for _ in range(3):
        pw, pt = rng.permutation(4), rng.permutation(4)
        with make(xi) as th:
            got = th.select(xv, yv, widths=[widths[k] for k in pw], temperatures=[Ts[k] for k in pt])
            assert got == first
            # the scan sorts the grid (widths, then T, from the GP end), so both selects make the same solves in
            # the same order on the same inputs: the same bits (docs/design.md, determinism), on any float path
            np.testing.assert_array_equal(th.selection.accuracy, ref[0][np.ix_(pw, pt)])
            np.testing.assert_array_equal(th.selection.log_likelihood, ref[1][np.ix_(pw, pt)])


def gradient_over_tolerance(th, T, grad_tol=1e-10):
    """max|G| at the GP point over the solver's stopping tolerance grad_tol·max(1, |S|) at temperature T: with
    max_iter = 0 the solve converges exactly when this is ≤ 1 (no step is taken)."""
    th.set_temperature(T)
    a = th.action(th.gp_point(), grad=True)
    return max(np.max(np.abs(g)) for g in a.grad) / (grad_tol * max(1.0, abs(a.S_code)))


def test_a_failed_cell_is_skipped_with_a_warning():
    # Failure by construction, not by luck: max_iter = 0 takes no Newton step, so a cell converges exactly when
    # the GP point (the start) meets the stopping rule. In the stationary problem it does at its T at every width
    # (max|G| is round-off there: ~1e-6 of the tolerance) and does not at T = 0.1 (~1e6 times the tolerance), and
    # the failed cell's retry from the GP point fails the same way. (The toy at T = 1e-4, which this test used,
    # converged or not by the float path: it converged on AVX-512 and, at width 5, on the scalar path.)
    xi, y, xv, yv, T = stationary_gp_problem()
    with am.Theory(xi, y, heads=[1], widths=1.0, temperature=T) as th:
        for N in (0.3, 1000.0):  # the premise, with a thousandfold margin either way
            th.set_widths(N)
            assert gradient_over_tolerance(th, T) < 1e-3 and gradient_over_tolerance(th, 0.1) > 1e3
        with pytest.warns(am.AttnmechWarning, match=r"solve failed at widths .*T = 0.1 "):
            got = th.select(xv, yv, widths=[0.3, 1000], temperatures=[0.1, T], max_iter=0)
        sel = th.selection
        assert np.all(np.isnan(sel.accuracy[:, 0])) and np.all(np.isnan(sel.log_likelihood[:, 0]))
        assert np.all(np.isfinite(sel.accuracy[:, 1])) and np.all(np.isfinite(sel.log_likelihood[:, 1]))
        assert got[1] == T and th.solution.status == "converged" and th.solution.iterations == 0


def test_errors(toy_xi):
    xi, xv = toy_xi
    yv = np.array([1.0, -1.0])
    with make(xi) as th:
        before = (th.widths, th.temperature)
        with pytest.raises(TypeError, match="by"):  # one rule since 3.6: no criterion to choose
            th.select(xv, yv, widths=[3], temperatures=[0.1], by="accuracy")
        with pytest.raises(ValueError, match="widths: expected a non-empty"):
            th.select(xv, yv, widths=[], temperatures=[0.1])
        with pytest.raises(ValueError, match=r"widths\[1\]: 1 or 3 values expected, got 2"):
            th.select(xv, yv, widths=[3, [1, 2]], temperatures=[0.1])
        with pytest.raises(ValueError, match=r"widths\[0\]: widths must be > 0"):
            th.select(xv, yv, widths=[0], temperatures=[0.1])
        with pytest.raises(ValueError, match="temperatures: every T must be > 0"):
            th.select(xv, yv, widths=[3], temperatures=[0.1, -1])
        with pytest.raises(ValueError, match="temperatures: expected a non-empty"):
            th.select(xv, yv, widths=[3], temperatures=[])
        with pytest.raises(ValueError, match=r"xi_val: shape \(2, 5, 3\), expected \(Pv, 5, 4\)"):
            th.select(xv[:, :, :3], yv, widths=[3], temperatures=[0.1])
        with pytest.raises(ValueError, match="y_val: 2 labels expected"):
            th.select(xv, [1.0], widths=[3], temperatures=[0.1])
        with pytest.raises(ValueError, match="NaN or Inf"):
            th.select(xv, [1.0, np.nan], widths=[3], temperatures=[0.1])
        with pytest.raises(TypeError, match="temperatures: expected real numbers"):
            th.select(xv, yv, widths=[3], temperatures=["hot"])
        assert np.all(th.widths == before[0]) and th.temperature == before[1] and th.selection is None


def test_every_cell_failing_raises_and_restores(toy_xi):
    xi, xv = toy_xi
    with make(xi) as th:
        # failure by construction (max_iter = 0: no step from the GP point, which is not the toy's solution)
        th.set_widths(7)
        assert gradient_over_tolerance(th, 1e-4) > 1e3
        th.set_widths(toy.WIDTHS)
        th.set_temperature(toy.T)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", am.AttnmechWarning)
            with pytest.raises(am.NotConverged, match="every solve"):
                th.select(xv, [1.0, -1.0], widths=[7], temperatures=[1e-4], max_iter=0)
        assert list(th.widths) == toy.WIDTHS and th.temperature == toy.T


def test_npy_problem_select_then_run(tmp_path, toy_xi):
    """The npy task has no validation split: from_problem + path_inputs give the ξ to select on, and the run at
    the chosen (N, T) predicts what the selected theory predicts."""
    xi, xv = toy_xi
    d = tmp_path / "prob"
    X_val = np.stack([toy.example(mu) for mu in (10.5, 11.5, 12.5, 13.5)])
    y_val = np.array([1.0, -1.0, 1.0, -1.0])
    am.write_problem(d, toy.X, toy.y, toy.X_test, [1.0, -1.0], heads=toy.HEADS, W=toy.W, widths=toy.WIDTHS,
                     variances=toy.VARIANCES, temperature=toy.T)
    with am.Theory.from_problem(d) as th:
        np.testing.assert_array_equal(th.path_inputs(toy.X_test), xv)
        np.testing.assert_array_equal(th.xi_test, xv)
        assert th.heads == toy.HEADS and list(th.widths) == toy.WIDTHS and th.temperature == toy.T
        with make(xi) as ref:  # the same theory as from ξ directly
            np.testing.assert_allclose(th.solve().U[0], ref.solve().U[0], rtol=0, atol=1e-12)
        N, T = th.select(th.path_inputs(X_val), y_val, widths=[2, 5, 20], temperatures=[0.03, 0.1, 0.3])
        got = np.concatenate(th.predict())
        r = am.run("npy", dir=str(d), widths=[N], temperatures=[T], progress=False, threads=1)
        run = r["runs"][0]
        assert run["temperature"] == T and list(run["widths"]) == [N] * 3
        # the run solved cold, the select warm: two stopping points near one minimum, as far apart as
        # stopped_solves_bound says
        tol = stopped_solves_bound(lambda U: np.concatenate(th.predict(None, U)), th, list(run["U"]), th.solution)
    assert np.all(np.abs(np.concatenate([run["test"]["mean"], run["test"]["var"]]) - got) <= tol)


def test_npy_problem_qk_heads_and_errors(tmp_path, toy_xi):
    rng = np.random.default_rng(3)
    Q = [rng.standard_normal((3, toy.N0)) for _ in range(4)]
    K = [rng.standard_normal((3, toy.N0)) for _ in range(4)]
    d = tmp_path / "qk"
    am.write_problem(d, toy.X, toy.y, heads=toy.HEADS, Q=Q, K=K, widths=4, temperature=0.2, readout="mean")
    with am.Theory.from_problem(d) as th:
        assert th.xi_test is None and th.temperature == 0.2
        np.testing.assert_array_equal(th.path_inputs(toy.X),
                                      am.xi_from_heads(toy.X, heads=toy.HEADS, Q=Q, K=K, readout="mean"))
    with make(toy_xi[0]) as th:
        with pytest.raises(ValueError, match="path_inputs: this Theory was built from ξ"):
            th.path_inputs(toy.X)
    with pytest.raises(am.FileError):
        am.Theory.from_problem(tmp_path / "absent")
