"""attnmech._importance: the theory side of head importance (theory_head_quantities and its helpers) on
hand-built attention — dead heads, duplicated heads, an independent re-solve, closed forms — and wrong arguments.
NumPy only (no torch, no sklearn); small P so the file runs in a few seconds."""
import math

import numpy as np
import pytest

import attnmech as am
import toy
import attnmech._importance as imp
from attnmech._importance import (DEFAULT_QUANTITY, QUANTITIES, _per_layer_max1, attention_focus, head_path_mask,
                                  kernel_alignment, rank_heads, spearman, theory_head_quantities, u_diagonal_mass)

pytestmark = pytest.mark.numerics  # results depend on the float path (conftest.py)

# Tolerances: the solves stop at different points near their minima (warm or cold, another float path), and
# λ_min(H) is 0.006-0.08 on these problems (not O(1)), so their distance to the minimum is up to ~1e-7 within the
# stopping rule (3e-8 seen). Each comparison of values from U takes its bound from the points the solves returned:
# toy.newton_distance (2|H⁻¹g|) times the value's sensitivity (toy.drift), in a Theory the test builds as
# _importance does (Problem). Accuracies are counts: equal when no test mean lies within its drift of zero.


class Problem:
    """The theory _importance builds for a head's removal (mask: its paths, ξ set to 0 in training and test; None:
    every path), with the test loss and mean as functions of U."""

    def __init__(self, data, heads, mask=None, widths=20.0, temperature=0.1):
        X, A, y, Xt, At, self.yt = data
        xi = am.xi_from_attention(X, A, readout="last")
        self.xt = am.xi_from_attention(Xt, At, readout="last")
        if mask is not None:
            xi[:, :, mask] = 0.0
            self.xt[:, :, mask] = 0.0
        self.th = am.Theory(xi, y, heads=heads, widths=widths, temperature=temperature)

    def mean(self, U):
        return self.th.predict(self.xt, U)[0]

    def loss(self, U):
        return np.mean((self.mean(U) - self.yt) ** 2)

    def distance(self, U):
        return toy.newton_distance(self.th, U)

    def bounds(self, U):
        """(loss drift, mean drift) over U's distance to this problem's minimum, plus float64 round-off."""
        d = self.distance(U)
        return (float(toy.drift(self.loss, U, d)[0] + toy.roundoff(self.th, U, self.loss(U))),
                toy.drift(self.mean, U, d) + toy.roundoff(self.th, U, self.mean(U)))

    def count_is_exact(self, U, mean_drift):
        """No test mean within its drift of zero: the accuracy count cannot differ between points that close."""
        return bool(np.all(np.abs(self.mean(U)) > mean_drift))


def record_solves(monkeypatch):
    """Every Solution Theory.solve returns, in call order (_importance: the full solve, then each re-solve)."""
    made = []
    solve = am.Theory.solve

    def spy(self, *args, **kwargs):
        made.append(solve(self, *args, **kwargs))
        return made[-1]
    monkeypatch.setattr(am.Theory, "solve", spy)
    return made


def _problem(P, heads, seed, S=5, N0=6):
    """Marked-token task (examples/python/torch_attention.py) with random softmax attention per head."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(P, S, N0)) / math.sqrt(N0)
    X[:, 0, 1] = 1.0
    y = np.sign(X[:, 0, 0] + 1e-12)
    att = []
    for H in heads:
        logits = 2.0 * rng.normal(size=(P, H, S, S))
        a = np.exp(logits - logits.max(axis=-1, keepdims=True))
        att.append(a / a.sum(axis=-1, keepdims=True))
    return X, att, y


def _quantities(heads, edit=None, P=60, Pt=50, **kw):
    X, A, y = _problem(P, heads, 1)
    Xt, At, yt = _problem(Pt, heads, 2)
    if edit:
        edit(A)
        edit(At)
    kw.setdefault("widths", 20.0)
    kw.setdefault("temperature", 0.1)
    return theory_head_quantities(X, A, y, Xt, At, yt, readout="last", **kw), (X, A, y, Xt, At, yt)


def test_head_path_mask_hand():
    # heads [2, 3]: path π = 3·h_1 + h_2
    assert np.flatnonzero(head_path_mask([2, 3], 0, 1)).tolist() == [3, 4, 5]
    assert np.flatnonzero(head_path_mask([2, 3], 1, 2)).tolist() == [2, 5]
    assert np.flatnonzero(head_path_mask([3], 0, 1)).tolist() == [1]


def _raw_scores(U1, heads):
    """am_head_scores, slowly: Σ |U_1[π, π']| over pairs with either path through the head."""
    out = []
    for l, H in enumerate(heads):
        for h in range(H):
            m = head_path_mask(heads, l, h)
            out.append(np.abs(U1)[m[:, None] | m[None, :]].sum())
    return np.array(out)


def test_dead_layer1_head_closed_form():
    # A layer-1 head whose attention is all zero: every path through it has ξ = 0 in training and test, so
    # removing it changes nothing — every drop is exactly 0 and no re-solve is run. The energy does not see
    # those paths, so stationarity of the entropy gives U_1's block on them = s_1·U_2 and zero coupling to the
    # live paths; its raw score is then Σ|U_2| (variances 1).
    def kill(A):
        A[0][:, 1] = 0.0
    q, data = _quantities([2, 3], kill)
    dead = 1
    for k in ("predicted_drop", "predicted_loss_rise", "predicted_drop_frozen", "predicted_drop_gp",
              "alignment_drop", "xi_share"):
        assert q[k][dead] == 0.0, k
    assert q["iterations"][dead] == 0
    U1, U2 = q["solution"].U
    m = head_path_mask([2, 3], 0, dead)
    # the closed form holds at the minimum; the solve's point is within d of it in every entry of U_1 and U_2
    with Problem(data, [2, 3]).th as th:
        d = toy.newton_distance(th, q["solution"])
    np.testing.assert_allclose(U1[np.ix_(m, m)], U2, atol=2 * d)
    np.testing.assert_allclose(U1[np.ix_(m, ~m)], 0.0, atol=d)
    raw = _raw_scores(U1, [2, 3])
    # the library's scores, independently: the same |U| summed in another order and divided, ≤ U.size·ε relative
    np.testing.assert_allclose(q["score"], raw / raw.max(), rtol=U1.size * toy.EPS)
    # Σ|U_1| over the head's rows and columns against Σ|U_2|: every entry within d
    assert raw[dead] == pytest.approx(np.abs(U2).sum(), abs=(U1.size + U2.size) * d)


def test_removed_paths_start_is_stationary_on_the_removed_rows():
    # The re-solves' warm start (3.8): U_1's rows and columns of the removed paths at their minimiser given the
    # kept block and U_2, so the gradient of the action without those paths vanishes there. A head of layer 1 (the
    # block is s_1·U_2, uncoupled) and one of layer 2 (coupled through U_2⁻¹), unequal variances. Tolerance: the
    # gradient there is W_0[B − U_1⁻¹] on those entries, evaluated from factors of U_1 (cond ≤ 1e3 here): 1e-10.
    rng = np.random.default_rng(4)
    heads, P, N0 = [2, 3], 30, 4
    xi = rng.normal(size=(P, N0, 6)) / 3
    y = np.sign(rng.normal(size=P))
    var = [1.0, 1.3, 0.8, 1.2]
    with am.Theory(xi, y, heads=heads, widths=3.0, temperature=0.1, variances=var) as th:
        sol = th.solve()
    for layer in (0, 1):
        m = head_path_mask(heads, layer, 1)
        x = xi.copy()
        x[:, :, m] = 0.0
        with am.Theory(x, y, heads=heads, widths=3.0, temperature=0.1, variances=var) as th:
            U = imp.removed_paths_start(sol.U, m, var[1], sol.U_a)
            g, g_full = th.action(U, grad=True).grad[0], th.action(sol.U, grad=True).grad[0]
            assert np.abs(g[m]).max() <= 1e-10 * np.abs(g_full[m]).max() + 1e-12
            assert np.array_equal(U[0][np.ix_(~m, ~m)], sol.U[0][np.ix_(~m, ~m)]) and np.array_equal(U[1], sol.U[1])
            if layer == 0:
                np.testing.assert_allclose(U[0][np.ix_(m, m)], var[1] * sol.U[1], rtol=1e-12)
                assert not U[0][np.ix_(m, ~m)].any()


def test_dead_last_layer_head_has_no_drop():
    def kill(A):
        A[1][:, 0] = 0.0
    q, _ = _quantities([2, 2], kill)
    assert q["predicted_drop"][2] == 0.0 and q["predicted_loss_rise"][2] == 0.0 and q["iterations"][2] == 0
    assert np.all(q["iterations"][[0, 1, 3]] > 0)


def test_identical_heads_have_equal_quantities(monkeypatch):
    # Heads 0 and 1 of layer 1 attend identically: swapping them maps the problem onto itself, so each
    # quantity is equal for both at the minima; at the points the solves returned, up to their drift.
    def dup(A):
        A[0][:, 1] = A[0][:, 0]
    heads = [3, 2]
    made = record_solves(monkeypatch)
    q, data = _quantities(heads, dup)
    monkeypatch.undo()
    assert len(made) == 1 + 5  # the full solve, then one re-solve per head (no retry)
    full, resolved = made[0], made[1:3]
    # data only, the same values in the same order: the same bits
    for k in ("xi_share", "attention_focus"):
        assert q[k][0] == q[k][1], k
    without = [Problem(data, heads, head_path_mask(heads, 0, h)) for h in (0, 1)]
    whole = Problem(data, heads)
    try:
        # at the full solve's point, which is within d of the (swap-symmetric) minimum: each quantity's
        # difference between the heads is 0 there and moves by its drift
        d = whole.distance(full)

        def full_diffs(U):
            score = whole.th.head_scores(U)
            return np.array([score[0] - score[1],
                             *(_per_layer_max1(score, heads)[:2] @ [1, -1],),
                             *(u_diagonal_mass(U, heads)[:2] @ [1, -1],),
                             kernel_alignment(without[1].th.kernel(U), data[2])
                             - kernel_alignment(without[0].th.kernel(U), data[2])])
        tol = toy.drift(full_diffs, full, d) + 64 * toy.EPS  # + round-off of values ≤ 1
        for k, t in zip(("score", "score_layer", "u_mass", "alignment_drop"), tol):
            assert abs(q[k][0] - q[k][1]) <= t, k
        # the re-solves without head 0 and without head 1: mirror problems, each stopped within its distance
        (l0, m0), (l1, m1) = without[0].bounds(resolved[0]), without[1].bounds(resolved[1])
        assert abs(q["predicted_loss_rise"][0] - q["predicted_loss_rise"][1]) <= l0 + l1
        assert without[0].count_is_exact(resolved[0], m0) and without[1].count_is_exact(resolved[1], m1)
        assert q["predicted_drop"][0] == q["predicted_drop"][1]
        # frozen (the full solve's U in the reduced problems) and GP point: counts, exact with the margin
        for w in without:
            gp = w.th.gp_point()
            assert w.count_is_exact(full, toy.drift(w.mean, full, d) + toy.roundoff(w.th, full, w.mean(full)))
            assert w.count_is_exact(gp, toy.roundoff(w.th, gp, w.mean(gp)))
        assert q["predicted_drop_frozen"][0] == q["predicted_drop_frozen"][1]
        assert q["predicted_drop_gp"][0] == q["predicted_drop_gp"][1]
    finally:
        for p in without + [whole]:
            p.th.close()


def test_predicted_drop_matches_an_independent_cold_resolve(monkeypatch):
    # Remove layer-2 head 1 by hand (its attention zeroed → ξ of its paths 0) and solve from the GP point:
    # the same accuracy and test MSE as the warm-started re-solve inside theory_head_quantities, up to the drift
    # over both solves' distances to the minimum (counts: exact, given the margin).
    made = record_solves(monkeypatch)
    q, data = _quantities([2, 2])
    monkeypatch.undo()
    assert len(made) == 1 + 4
    X, A, y, Xt, At, yt = data
    A2 = [A[0], A[1].copy()]
    At2 = [At[0], At[1].copy()]
    A2[1][:, 1] = 0.0
    At2[1][:, 1] = 0.0
    with am.Theory.from_attention(X, A2, y, readout="last", widths=20.0, temperature=0.1, X_test=Xt,
                                  attention_test=At2) as th:
        cold = th.solve()
        mean, _ = th.predict()
        acc = am.accuracy(mean, yt)
        loss = np.mean((mean - yt) ** 2)
    with am.Theory.from_attention(X, A, y, readout="last", widths=20.0, temperature=0.1, X_test=Xt,
                                  attention_test=At) as th:
        full_cold = th.solve()
        full_loss = np.mean((th.predict()[0] - yt) ** 2)
    bounds = {}
    for name, p, pts in (("without", Problem(data, [2, 2], head_path_mask([2, 2], 1, 1)), (made[4], cold)),
                         ("full", Problem(data, [2, 2]), (made[0], full_cold))):
        with p.th:
            b = [p.bounds(U) for U in pts]
            assert all(p.count_is_exact(U, m) for U, (_, m) in zip(pts, b))
            bounds[name] = b[0][0] + b[1][0]
    assert q["predicted_drop"][3] == q["accuracy"] - acc
    assert abs(q["predicted_loss_rise"][3] - (loss - full_loss)) <= bounds["without"] + bounds["full"]


def test_ranking_is_a_permutation_with_deterministic_ties():
    assert rank_heads([0.1, 0.0, 0.1, 0.0]).tolist() == [1, 3, 0, 2]
    assert rank_heads([0.1, 0.0, 0.1, 0.0], tiebreak=[0, 5, -1, 4]).tolist() == [3, 1, 2, 0]
    q, _ = _quantities([2, 3])
    assert sorted(q["ranking"].tolist()) == list(range(5)) and q["ranking"].dtype == np.int64
    # the default: the theory's accuracy drop, its ties (whole test examples) ordered by the loss rise
    assert q["quantity"] == DEFAULT_QUANTITY == "predicted_drop"
    assert q["ranking"].tolist() == rank_heads(q["predicted_drop"], q["predicted_loss_rise"]).tolist()
    for k in QUANTITIES:
        r, _ = _quantities([2, 3], quantity=k)
        assert r["quantity"] == k
        v = r[k][r["ranking"]]
        assert np.all(np.diff(v) >= 0), k  # least important (smallest) first


def test_flat_head_order_and_layers():
    q, _ = _quantities([3, 2, 2], P=40, Pt=30, widths=10.0)
    assert q["layer"].tolist() == [1, 1, 1, 2, 2, 3, 3] and q["heads"] == [3, 2, 2]
    for k in QUANTITIES:
        assert q[k].shape == (7,) and np.all(np.isfinite(q[k])), k
    m = q["u_mass"]
    assert m[:3].sum() == pytest.approx(1.0) and m[3:5].sum() == pytest.approx(1.0)
    assert q["score_layer"][:3].max() == 1.0 and q["score_layer"][5:].max() == 1.0


def test_helpers_closed_forms():
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: a → [0, 1.5, 1.5, 3], b → [0, 2, 1, 3]; Pearson of those = 4.5/√(4.5·5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5.0))
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    S = 4
    one_hot = np.zeros((3, 1, S, S)); one_hot[..., 0] = 1.0
    uniform = np.full((3, 1, S, S), 1.0 / S)
    np.testing.assert_allclose(attention_focus([one_hot, uniform]), [math.log(S), 0.0], atol=1e-15)
    U = [np.diag([1.0, 2.0, 3.0, 4.0]), np.diag([1.0, 3.0])]
    np.testing.assert_allclose(u_diagonal_mass(U, [2, 2]), [0.3, 0.7, 0.25, 0.75])
    y = np.array([1.0, -1.0])
    assert kernel_alignment(np.outer(y, y), y) == pytest.approx(1.0)
    assert kernel_alignment(np.zeros((2, 2)), y) == 0.0


def test_argument_errors():
    X, A, y = _problem(20, [2, 2], 1)
    Xt, At, yt = _problem(15, [2, 2], 2)
    kw = dict(readout="last", widths=10.0, temperature=0.1)
    with pytest.raises(ValueError, match="quantity"):
        theory_head_quantities(X, A, y, Xt, At, yt, quantity="importance", **kw)
    with pytest.raises(ValueError, match=r"attention_test: heads per layer \[2, 3\]"):
        _, At3, _ = _problem(15, [2, 3], 2)
        theory_head_quantities(X, A, y, Xt, At3, yt, **kw)
    with pytest.raises(ValueError, match="y_test: 15 labels expected"):
        theory_head_quantities(X, A, y, Xt, At, yt[:-1], **kw)
    with pytest.raises(TypeError, match="attention: expected a list"):
        theory_head_quantities(X, A[0], y, Xt, At, yt, **kw)
    with pytest.raises(ValueError, match="4-d array"):
        theory_head_quantities(X, [A[0][0]], y, Xt, [At[0][0]], yt, **kw)
    with pytest.raises(ValueError, match="attention"):  # attention for other examples than X
        theory_head_quantities(X[:10], A, y[:10], Xt, At, yt, **kw)
    with pytest.raises(TypeError, match="y_test: expected real numbers"):
        theory_head_quantities(X, A, y, Xt, At, yt.astype(complex), **kw)


def test_resolve_falls_back_to_the_gp_point_then_to_nan(monkeypatch):
    # A warm start that fails (here: forced by max_iter = 0, a genuine NotConverged from the library) is
    # retried from the GP point: same minimum, same values; when that fails too the head's re-solved values
    # are NaN with a warning, the other quantities stay.
    warm = record_solves(monkeypatch)
    ref, data = _quantities([2, 2])
    monkeypatch.undo()
    orig = am.Theory.solve
    cold = []

    def warm_fails(self, warm_start=None, **kw):
        if warm_start is not None:
            return orig(self, warm_start, max_iter=0)
        cold.append(orig(self, warm_start, **kw))
        return cold[-1]

    monkeypatch.setattr(am.Theory, "solve", warm_fails)
    q, _ = _quantities([2, 2])
    monkeypatch.undo()
    # the same minima from another start: counts equal given the margin, losses within both drifts
    assert len(warm) == len(cold) == 1 + 4
    tol = []
    for h in range(4):
        p = Problem(data, [2, 2], head_path_mask([2, 2], h // 2, h % 2))
        with p.th:
            (lw, mw), (lc, mc) = p.bounds(warm[1 + h]), p.bounds(cold[1 + h])
            assert p.count_is_exact(warm[1 + h], mw) and p.count_is_exact(cold[1 + h], mc)
            tol.append(lw + lc)
    np.testing.assert_array_equal(q["predicted_drop"], ref["predicted_drop"])
    assert np.all(np.abs(q["predicted_loss_rise"] - ref["predicted_loss_rise"]) <= tol)
    monkeypatch.setattr(am.Theory, "solve", orig)
    calls = []

    def resolves_fail(self, warm_start=None, **kw):
        calls.append(warm_start is None)
        return orig(self, warm_start, **kw) if len(calls) == 1 else orig(self, warm_start, max_iter=0)

    monkeypatch.setattr(am.Theory, "solve", resolves_fail)
    with pytest.warns(am.AttnmechWarning, match="did not converge"):
        q, _ = _quantities([2, 2])
    assert np.all(np.isnan(q["predicted_drop"])) and np.all(q["iterations"] == -1)
    np.testing.assert_array_equal(q["predicted_drop_gp"], ref["predicted_drop_gp"])
    np.testing.assert_array_equal(q["score"], ref["score"])  # the same full solve: the same bits


# ------------------------------------------------------------------------ fallbacks when a solve does not converge
def _data(heads, P=60, Pt=50):
    X, A, y = _problem(P, heads, 1)
    Xt, At, yt = _problem(Pt, heads, 2)
    return X, A, y, Xt, At, yt


def _first_loose_iterate(xi, y, heads, widths=20.0, temperature=0.1):
    """The fewest Newton iterations whose iterate meets LOOSE_GRAD_TOL but not GRAD_TOL (None if none does)."""
    with am.Theory(xi, y, heads=heads, widths=widths, temperature=temperature) as th:
        for j in range(1, 100):
            try:
                th.solve(max_iter=j)
                return None
            except am.NotConverged as e:
                s = e.result
                if s.grad_max <= imp.LOOSE_GRAD_TOL * max(1.0, abs(s.action)):
                    return j


def test_full_solve_fallback_equals_a_direct_solve_at_the_looser_tolerance(monkeypatch):
    # A full solve that ends without meeting GRAD_TOL (here: capped at the first iteration count j whose iterate
    # meets LOOSE_GRAD_TOL, a genuine NotConverged from the library) is not an error: its last iterate is used, and
    # it is bit for bit what a direct solve at the looser tolerance returns (the same Newton path, stopped at the
    # same iterate); the result says so (converged False, a note, one warning) and its predictions are that U's.
    X, A, y, Xt, At, yt = _data([2, 2])
    xi, xt = am.xi_from_attention(X, A), am.xi_from_attention(Xt, At)
    j = _first_loose_iterate(xi, y, [2, 2])
    assert j is not None and j >= 2
    with am.Theory(xi, y, heads=[2, 2], widths=20.0, temperature=0.1) as th:
        direct = th.solve(grad_tol=imp.LOOSE_GRAD_TOL)
        assert direct.status == "converged" and direct.iterations == j
        mean = th.predict(xt, direct)[0]
    monkeypatch.setattr(imp, "MAX_ITER", j)
    monkeypatch.setattr(imp, "CONTINUE_ITER", 0)  # no continuation: the looser tolerance decides
    with pytest.warns(am.AttnmechWarning, match="the full theory: Newton did not reach"):
        q = theory_head_quantities(X, A, y, Xt, At, yt, readout="last", widths=20.0, temperature=0.1)
    assert q["solution"].status == "not_converged" and q["solution"].iterations == j
    for a, b in zip(q["solution"].U, direct.U):
        assert np.array_equal(a, b)
    assert q["accuracy"] == am.accuracy(mean, yt) and not q["gp_limit"]
    assert q["converged"] is False and q["notes"][0].startswith("the full theory: Newton did not reach")
    assert f"{direct.grad_max:.3g}" in q["notes"][0]
    assert np.all(np.isfinite(q["predicted_drop"]))


def test_a_solve_stopped_short_is_continued_along_the_same_path(monkeypatch):
    # Capped at the first iterate within the looser tolerance, the full solve goes on from it (CONTINUE_ITER more)
    # and converges at the same point, bit for bit, as the uninterrupted solve: a Newton iterate depends only on
    # the one before. converged stays True; a note says it was continued.
    X, A, y, Xt, At, yt = _data([2, 2])
    xi = am.xi_from_attention(X, A)
    j = _first_loose_iterate(xi, y, [2, 2])
    with am.Theory(xi, y, heads=[2, 2], widths=20.0, temperature=0.1) as th:
        direct = th.solve()
    assert direct.iterations > j
    monkeypatch.setattr(imp, "MAX_ITER", j)
    q = theory_head_quantities(X, A, y, Xt, At, yt, readout="last", widths=20.0, temperature=0.1)
    for a, b in zip(q["solution"].U, direct.U):
        assert np.array_equal(a, b)
    assert q["solution"].iterations == direct.iterations and q["converged"]
    assert q["notes"][0] == f"the full theory: converged after {direct.iterations} Newton iterations (continued " \
                            f"from the last iterate of the first {j})"


def test_no_accepted_full_solve_gives_the_gp_limit(monkeypatch):
    # When no iterate meets even the looser tolerance the GP point stands in for U: every predicted quantity is the
    # GP point's (re-solved = GP), no re-solve runs, and the notes say so.
    data = _data([2, 2])
    ref = theory_head_quantities(*data, readout="last", widths=20.0, temperature=0.1)
    monkeypatch.setattr(imp, "MAX_ITER", 0)
    monkeypatch.setattr(imp, "LOOSE_GRAD_TOL", 0.0)
    with pytest.warns(am.AttnmechWarning, match="GP limit"):
        q = theory_head_quantities(*data, readout="last", widths=20.0, temperature=0.1)
    assert q["gp_limit"] and q["solution"] is None and not q["converged"]
    np.testing.assert_array_equal(q["predicted_drop"], q["predicted_drop_gp"])
    np.testing.assert_array_equal(q["predicted_drop_gp"], ref["predicted_drop_gp"])  # the same GP point
    assert q["accuracy"] == q["accuracy_gp"] == ref["accuracy_gp"] and np.all(q["iterations"] == 0)


class _Stub:
    """A theory whose solve returns or raises the given outcomes in turn (recording the warm starts)."""

    def __init__(self, *outcomes):
        self.outcomes, self.starts = list(outcomes), []

    def solve(self, warm_start=None, **kw):
        self.starts.append(warm_start)
        r = self.outcomes.pop(0)
        if isinstance(r, Exception):
            raise r
        return r


def _sol(grad_max, action=10.0, status="converged"):
    import types
    return types.SimpleNamespace(grad_max=grad_max, action=action, status=status, iterations=7)


def test_solve_with_fallback_rules():
    tol = imp.GRAD_TOL * 10.0  # |S| = 10
    # met: no note
    s = _sol(0.5 * tol)
    assert imp.solve_with_fallback(_Stub(s)) == (s, [], False)
    # a round-off stop above the tolerance counts, with its accuracy stated
    s = _sol(20 * tol, status="converged_roundoff")
    got, notes, fell = imp.solve_with_fallback(_Stub(s), what="X")
    assert got is s and not fell
    assert notes == [f"X: Newton stopped on round-off at max|G| = {20 * tol:.3g} (20× the tolerance)"]
    # a warm start that stops within the looser tolerance: continued from its last iterate; converged there
    last = _sol(0.5 * imp.LOOSE_GRAD_TOL * 10.0, status="not_converged")
    done = _sol(0.5 * tol)
    stub = _Stub(am.NotConverged(-6, "Newton did not converge", last), done)
    got, notes, fell = imp.solve_with_fallback(stub, warm="W")
    assert got is done and not fell and stub.starts == ["W", last] and done.iterations == 14
    # the continuation stops short too: the lower of the two last iterates, accepted (no cold retry)
    lower = _sol(0.4 * imp.LOOSE_GRAD_TOL * 10.0, action=9.0, status="not_converged")
    stub = _Stub(am.NotConverged(-6, "Newton did not converge", _sol(last.grad_max, status="not_converged")),
                 am.NotConverged(-6, "again", lower))
    got, notes, fell = imp.solve_with_fallback(stub, warm="W")
    assert got is lower and fell and len(stub.starts) == 2 and "its last iterate" in notes[0]
    assert "in 14 iterations" in notes[0]
    # beyond the looser tolerance: retried from the GP point
    far = _sol(2 * imp.LOOSE_GRAD_TOL * 10.0, status="not_converged")
    cold = _sol(0.1 * tol)
    stub = _Stub(am.NotConverged(-6, "no", far), cold)
    assert imp.solve_with_fallback(stub, warm="W") == (cold, [], False) and stub.starts == ["W", None]
    # nothing accepted
    stub = _Stub(am.NotConverged(-6, "no", far), am.DomainError(-3, "not PD"))
    got, notes, fell = imp.solve_with_fallback(stub, warm="W", what="Y")
    assert got is None and fell and notes[0].startswith("Y: no solve converged") and "not PD" in notes[0]


# ------------------------------------------------------------------------------------------ intervals, ranking
def test_bootstrap_drops_by_hand_and_closed_forms():
    rng = np.random.default_rng(4)
    Pt = 50
    full = rng.random(Pt) < 0.9
    without = np.array([full, full & (rng.random(Pt) < 0.5), full ^ (np.arange(Pt) == 3)])
    boot = imp.bootstrap_drops(full, without, seed=7, resamples=200)
    # the same draws by hand: resample the examples, average the per-example losses
    r = np.random.default_rng(7)
    for b in range(200):
        idx = r.integers(0, Pt, Pt)
        w = np.bincount(idx, minlength=Pt)
        hand = (w @ (full.astype(np.int64)[None, :] - without.astype(np.int64)).T) / Pt
        assert np.array_equal(boot[b], hand)
    assert np.all(boot[:, 0] == 0.0)  # the same correct signs: a drop of exactly 0 on every resample
    iv = imp.percentile_intervals(boot)
    np.testing.assert_array_equal(iv, np.percentile(boot, [2.5, 97.5], axis=0).T)
    assert iv[0].tolist() == [0.0, 0.0] and iv[1, 0] > 0  # the head that loses half its examples: clearly > 0
    # neighbours: the identical head 0 and the one-example head 2 cannot be told apart; head 1 stands out
    ranking = np.array([0, 2, 1])
    assert imp.ranking_distinct(boot, ranking).tolist() == [False, True]
    assert imp.indistinct_groups(ranking, [False, True]) == [[0, 2], [1]]
    assert imp.indistinct_groups(ranking, [True, True]) == [[0], [2], [1]]


def test_theory_head_quantities_intervals_and_confidence():
    q, _ = _quantities([2, 2])
    iv = q["predicted_drop_interval"]
    assert iv.shape == (4, 2) and np.all(iv[:, 0] <= q["predicted_drop"]) and np.all(q["predicted_drop"] <= iv[:, 1])
    assert q["distinct"].shape == (3,) and q["confident"] == bool(np.all(q["distinct"]))
    q2, _ = _quantities([2, 2])
    np.testing.assert_array_equal(q2["predicted_drop_interval"], iv)  # same seed, same bits
    q3, _ = _quantities([2, 2], seed=1)
    np.testing.assert_array_equal(q3["predicted_drop"], q["predicted_drop"])  # the seed moves only the bootstrap
    r, _ = _quantities([2, 2], quantity="score")
    assert r["distinct"] is None and r["confident"] is None


# ------------------------------------------------------------------------------------------ selection of N and T
def test_one_se_choice_does_not_follow_one_example():
    # Cell 0 (N = 1, T = 0.01) gets one validation example more right than cell 1 (N = 10, T = 0.1) but is
    # overconfident (log-density −2 against −0.3 per example): the library's rule (accuracy first) takes cell 0;
    # one example of 100 is within one standard error (mean 0.01, sd 0.1/√100 = 0.01), so the likelihood decides.
    n = 100
    c0, c1 = np.ones(n, bool), np.ones(n, bool)
    c1[5] = False
    l0, l1 = np.full(n, -2.0), np.full(n, -0.3) + 0.01 * np.sin(np.arange(n))
    keys, Ts = [(1.0, 3.0), (10.0, 30.0)], np.array([0.01, 0.1])
    pick, tied_acc, tied = imp.one_se_choice([c0, c1], [l0, l1], keys, Ts)
    assert pick == 1 and tied_acc.tolist() == [True, True] and tied.tolist() == [False, True]
    from attnmech._theory import _best_cell
    acc = np.array([[c0.mean(), c1.mean()]])
    ll = np.array([[l0.mean(), l1.mean()]])
    assert _best_cell(acc, ll, [np.array([1.0] * 3)], np.array([0.01, 0.1])) == (0, 0)
    # two cells with the same per-example scores: tied, the one nearer the GP limit (larger width) wins
    pick, _, tied = imp.one_se_choice([c1, c1], [l1, l1], keys, Ts)
    assert pick == 1 and tied.tolist() == [True, True]
    pick, _, _ = imp.one_se_choice([c1, c1], [l1, l1], [(10.0, 30.0), (10.0, 30.0)], Ts)
    assert pick == 1  # equal widths: the larger T
    # a failed cell (None) is never chosen; all failed raises
    assert imp.one_se_choice([None, c1], [None, l1], keys, Ts)[0] == 1
    with pytest.raises(am.NotConverged):
        imp.one_se_choice([None, None], [None, None], keys, Ts)


def test_select_width_temperature_scans_as_theory_select():
    # The grid is Theory.select's own (the same solves, validation means bit for bit, its choice kept as
    # library_index); the choice is within one standard error of the best on both criteria.
    X, A, y = _problem(120, [2, 2], 1)
    xi = am.xi_from_attention(X, A)
    ws, ts = [1.0, 10.0, 1e4], [0.01, 0.1, 1.0]
    import attnmech._importance as m
    orig = (m.SELECT_WIDTHS, m.SELECT_TEMPERATURES)
    try:
        m.SELECT_WIDTHS, m.SELECT_TEMPERATURES = tuple(ws), tuple(ts)
        N, T, info = imp.select_width_temperature(xi, y, [2, 2], seed=3)
    finally:
        m.SELECT_WIDTHS, m.SELECT_TEMPERATURES = orig
    perm = np.random.default_rng(3).permutation(120)
    val, fit = np.sort(perm[:30]), np.sort(perm[30:])
    with am.Theory(xi[fit], y[fit], heads=[2, 2], widths=1.0, temperature=0.01) as th:
        choice = th.select(xi[val], y[val], widths=ws, temperatures=ts)
        sel = th.selection
    np.testing.assert_array_equal(info["accuracy"], sel.accuracy)
    np.testing.assert_array_equal(info["log_likelihood"], sel.log_likelihood)
    assert info["library_index"] == sel.index and info["validation"] == 30
    i, j = info["index"]
    assert (N, T) == (ws[i], ts[j]) and info["tied"][i, j] and info["tied_accuracy"][i, j]
    assert choice == (ws[sel.index[0]], ts[sel.index[1]])


def test_select_with_every_cell_failing_takes_the_gp_most_cell(monkeypatch):
    X, A, y = _problem(60, [2, 2], 1)
    monkeypatch.setattr(imp, "MAX_ITER", 0)  # every cell of the grid: NotConverged from the library
    with pytest.warns(am.AttnmechWarning, match="that cell is skipped"):
        N, T, info = imp.select_width_temperature(am.xi_from_attention(X, A), y, [2, 2])
    assert (N, T) == (max(imp.SELECT_WIDTHS), max(imp.SELECT_TEMPERATURES))
    assert info["notes"] == [f"select: every solve of the width × temperature grid failed; the cell nearest the GP "
                             f"limit (width {N!r}, T = {T:g}) is used"]


# ------------------------------------------------------------------------------------------------------- cost
def test_theory_size_and_cost_counts():
    assert imp.theory_size([4, 4, 4]) == (64, 2080 + 136 + 10)  # issue 40's 3 × 4 model: 64 paths, 2226 entries
    assert imp.theory_size([2, 2]) == (4, 10 + 3) and imp.theory_size([3]) == (3, 6)
    X, A, y = _problem(40, [2, 2], 1)
    c = imp.theory_cost(am.xi_from_attention(X, A), y, [2, 2], widths=10.0, temperature=0.1, select_grid=(5, 5))
    assert c["paths"] == 4 and c["u_entries"] == 13 and c["solves"] == {"select": 25, "full": 1, "heads": 4}
    cold, warm = 5 + 1, 5 * 4 + 4
    it, fixed = c["seconds_per_iteration"], c["seconds_per_solve"]
    assert it >= 0 and fixed >= 0
    assert c["seconds"] == (cold + warm) * fixed + (cold * imp.ITERATIONS_COLD + warm * imp.ITERATIONS_WARM) * it
    M, C = imp.MAX_ITER, imp.CONTINUE_ITER  # at worst: 5 cold cells, 20 warm-then-cold, full + its continuation,
    runs = 5 + 2 * 20 + 2 + 3 * 4  # each head warm, cold and a continuation
    assert c["seconds_max"] == runs * fixed + (5 * M + 20 * 2 * M + (M + C) + 4 * (2 * M + C)) * it


# --------------------------------------------------------------------------------------- bits and thread counts
_BITS = r'''
import hashlib, sys, numpy as np
sys.path.insert(0, sys.argv[1])
import attnmech as am, test_importance as t
X, A, y, Xt, At, yt = t._data([2, 2], P=int(sys.argv[2]), Pt=80)
q = am.theory_head_quantities(X, A, y, Xt, At, yt, readout="last", widths=10.0, temperature=0.1)
h = hashlib.sha256()
for k in sorted(q):
    if isinstance(q[k], np.ndarray) and q[k].dtype != object:
        h.update(np.ascontiguousarray(q[k]).tobytes())
for u in q["solution"].U:
    h.update(u.tobytes())
with am.Theory(am.xi_from_attention(X, A), y, heads=[2, 2], widths=10.0, temperature=0.1) as th:
    U = th.solve().U
from attnmech._lib import core
print(h.hexdigest(), hashlib.sha256(b"".join(u.tobytes() for u in U)).hexdigest(), core.am_blas_threads_set(0))
'''


def _bits(threads, P=150):
    import os
    import subprocess
    import sys
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", _BITS, here, str(P)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return out[0], out[1], int(out[2])


def test_head_quantities_bits_do_not_depend_on_the_blas_thread_count():
    # theory_head_quantities pins one BLAS thread for its solves: the same bits with OPENBLAS_NUM_THREADS=1 and 2
    # (a plain Theory.solve, which keeps the user's count, differs there in the last bits of U: measured on
    # Debian's OpenBLAS 0.3.21 at P = 100..600).
    one, plain_one, n1 = _bits(1)
    two, plain_two, n2 = _bits(2)
    assert one == two
    assert n1 == 1 and n2 in (0, 2)  # the count is the user's again after the call (0: no OpenBLAS control)
    if n2 == 2:
        assert plain_one != plain_two  # the control: unpinned, the thread count shows in the bits
