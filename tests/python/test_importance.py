"""attnmech._importance: the theory side of head importance (theory_head_quantities and its helpers) on
hand-built attention — dead heads, duplicated heads, an independent re-solve, closed forms — and wrong arguments.
NumPy only (no torch, no sklearn); small P so the file runs in a few seconds."""
import math

import numpy as np
import pytest

import attnmech as am
from attnmech._importance import (DEFAULT_QUANTITY, QUANTITIES, attention_focus, head_path_mask, kernel_alignment, rank_heads,
                                  spearman, theory_head_quantities, u_diagonal_mass)

# The solves stop at max|∂S/∂U| ≤ 1e-10·max(1, |S|); U is then good to ~1e-8 (the Hessian's smallest eigenvalue
# is O(1) on these problems), so quantities derived from U are compared at 1e-7.
TOL = 1e-7


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
    q, _ = _quantities([2, 3], kill)
    dead = 1
    for k in ("predicted_drop", "predicted_loss_rise", "predicted_drop_frozen", "predicted_drop_gp",
              "alignment_drop", "xi_share"):
        assert q[k][dead] == 0.0, k
    assert q["iterations"][dead] == 0
    U1, U2 = q["solution"].U
    m = head_path_mask([2, 3], 0, dead)
    np.testing.assert_allclose(U1[np.ix_(m, m)], U2, atol=TOL)
    np.testing.assert_allclose(U1[np.ix_(m, ~m)], 0.0, atol=TOL)
    raw = _raw_scores(U1, [2, 3])
    np.testing.assert_allclose(q["score"], raw / raw.max(), rtol=1e-12)  # the library's scores, independently
    assert raw[dead] == pytest.approx(np.abs(U2).sum(), abs=10 * TOL)


def test_dead_last_layer_head_has_no_drop():
    def kill(A):
        A[1][:, 0] = 0.0
    q, _ = _quantities([2, 2], kill)
    assert q["predicted_drop"][2] == 0.0 and q["predicted_loss_rise"][2] == 0.0 and q["iterations"][2] == 0
    assert np.all(q["iterations"][[0, 1, 3]] > 0)


def test_identical_heads_have_equal_quantities():
    # Heads 0 and 1 of layer 1 attend identically: swapping them maps the problem onto itself, so each
    # quantity is equal for both (up to the solver's tolerance; accuracies are counts, equal exactly).
    def dup(A):
        A[0][:, 1] = A[0][:, 0]
    q, _ = _quantities([3, 2], dup)
    for k in QUANTITIES:
        assert q[k][0] == pytest.approx(q[k][1], abs=TOL), k
    assert q["predicted_drop"][0] == q["predicted_drop"][1]


def test_predicted_drop_matches_an_independent_cold_resolve():
    # Remove layer-2 head 1 by hand (its attention zeroed → ξ of its paths 0) and solve from the GP point:
    # the same accuracy and test MSE as the warm-started re-solve inside theory_head_quantities.
    q, (X, A, y, Xt, At, yt) = _quantities([2, 2])
    A2 = [A[0], A[1].copy()]
    At2 = [At[0], At[1].copy()]
    A2[1][:, 1] = 0.0
    At2[1][:, 1] = 0.0
    with am.Theory.from_attention(X, A2, y, readout="last", widths=20.0, temperature=0.1, X_test=Xt,
                                  attention_test=At2) as th:
        th.solve()
        mean, _ = th.predict()
        acc = am.accuracy(mean, yt)
        loss = np.mean((mean - yt) ** 2)
    assert q["predicted_drop"][3] == pytest.approx(q["accuracy"] - acc, abs=1e-12)
    with am.Theory.from_attention(X, A, y, readout="last", widths=20.0, temperature=0.1, X_test=Xt,
                                  attention_test=At) as th:
        th.solve()
        full_loss = np.mean((th.predict()[0] - yt) ** 2)
    assert q["predicted_loss_rise"][3] == pytest.approx(loss - full_loss, abs=TOL)


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
    ref, _ = _quantities([2, 2])
    orig = am.Theory.solve

    def warm_fails(self, warm_start=None, **kw):
        return orig(self, warm_start, max_iter=0) if warm_start is not None else orig(self, warm_start, **kw)

    monkeypatch.setattr(am.Theory, "solve", warm_fails)
    q, _ = _quantities([2, 2])
    np.testing.assert_array_equal(q["predicted_drop"], ref["predicted_drop"])
    np.testing.assert_allclose(q["predicted_loss_rise"], ref["predicted_loss_rise"], atol=TOL)
    calls = []

    def resolves_fail(self, warm_start=None, **kw):
        calls.append(warm_start is None)
        return orig(self, warm_start, **kw) if len(calls) == 1 else orig(self, warm_start, max_iter=0)

    monkeypatch.setattr(am.Theory, "solve", resolves_fail)
    with pytest.warns(am.AttnmechWarning, match="did not converge"):
        q, _ = _quantities([2, 2])
    assert np.all(np.isnan(q["predicted_drop"])) and np.all(q["iterations"] == -1)
    np.testing.assert_array_equal(q["predicted_drop_gp"], ref["predicted_drop_gp"])
    np.testing.assert_allclose(q["score"], ref["score"], atol=TOL)
