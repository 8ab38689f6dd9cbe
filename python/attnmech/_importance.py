"""The theory side of head importance: per-head quantities of the attention-path theory built from a network's
attention (the head score, the theory's own accuracy drop when a head's paths are removed, ...) and the pruning
order they recommend. Which quantity leads the ranking is what bench/heads/study.py measured (docs/python.md,
"Head importance: what predicts it")."""
import math
import time
import warnings

import numpy as np

from . import _args, _lib
from ._core import blas_rule
from .errors import AttnmechWarning, DomainError, NotConverged
from ._theory import Theory, _best_cell, _width_key, accuracy, xi_from_attention

# Every per-head array theory_head_quantities returns (all in flat head order: layer 1 first, PyTorch's head
# order within a layer); the ranking can be led by any of them (larger = more important).
QUANTITIES = ("score", "score_layer", "predicted_drop", "predicted_loss_rise", "predicted_drop_frozen",
              "predicted_drop_gp", "u_mass", "alignment_drop", "xi_share", "attention_focus")
# The theory's own ablation predicted the measured drops best in bench/heads/study.py (Spearman 0.88-0.99 on four
# of six models, where the head score was anti-correlated); see docs/python.md, "Head importance".
DEFAULT_QUANTITY = "predicted_drop"
# The continuous quantity that orders heads whose leading quantity ties (accuracy drops are whole test examples).
TIEBREAK = {"predicted_drop": "predicted_loss_rise", "predicted_drop_frozen": "predicted_loss_rise",
            "predicted_drop_gp": "predicted_loss_rise"}

# Every theory solve here first asks for the library's default tolerance, max|G| <= GRAD_TOL·max(1, |S|), in
# MAX_ITER Newton iterations. A solve that ends without meeting it (NotConverged) leaves its last iterate, the lowest
# action it reached (every accepted Newton step lowers S). When that iterate is within LOOSE_GRAD_TOL, Newton goes on
# from it for CONTINUE_ITER more iterations; if it still has not converged, its last iterate is used, and said so in
# the result's notes (`solve_with_fallback`). Seen on a trained 3 × 4-head model (P = 800, 2226 unknowns): Hessians
# with eigenvalues down to 1e-13 where Newton creeps along a flat direction, max|G| 1.8e-8 relative after 100
# iterations and converged a few iterations later (docs/python.md, "When a solve does not converge").
GRAD_TOL = 1e-10
LOOSE_GRAD_TOL = 1e-6
MAX_ITER = 100
CONTINUE_ITER = 30
# The intervals of the predicted drops: a paired bootstrap over the test examples (BOOTSTRAP resamples, a fixed seed),
# central INTERVAL_LEVEL percentile intervals.
BOOTSTRAP = 1000
INTERVAL_LEVEL = 0.95


def head_path_mask(heads, layer, head):
    """Boolean mask over the Π H_l paths (h_1 most significant, as ξ packs them): the paths through `head` of
    `layer` (both 0-based)."""
    heads = _args.heads(heads)
    below = int(np.prod(heads[layer + 1:], dtype=np.int64))
    return (np.arange(int(np.prod(heads, dtype=np.int64))) // below) % heads[layer] == head


def rank_heads(values, tiebreak=None):
    """Flat head indices, least important (smallest value) first; ties go to the smaller `tiebreak` value, then
    to the lower index, so equal inputs always give the same order."""
    v = np.asarray(values, dtype=float)
    idx = np.arange(v.size)
    keys = (idx,) if tiebreak is None else (idx, np.asarray(tiebreak, dtype=float))
    return np.lexsort(keys + (v,)).astype(np.int64)


def kernel_alignment(K, y):
    """Centred-free kernel–target alignment yᵀKy / (‖K‖_F yᵀy), in [−1, 1] (0 for a zero kernel)."""
    nk = np.linalg.norm(K)
    return 0.0 if nk == 0 else float(y @ K @ y / (nk * (y @ y)))


def u_diagonal_mass(U, heads):
    """Per head (flat order): the share of tr U_l on the diagonal entries of U_l whose leading (layer-l) head index
    is that head — each layer's own order parameter, so it sums to 1 within a layer."""
    out = []
    for l, H in enumerate(heads):
        d = np.diag(U[l]).reshape(H, -1).sum(axis=1)
        out.append(d / d.sum())
    return np.concatenate(out)


def attention_focus(attention):
    """Per head (flat order): log S minus the mean over examples and queries of the entropy (nats) of the head's
    attention row — a non-theory baseline, 0 for uniform attention, log S when every row sits on one key."""
    out = []
    for a in attention:
        a = np.asarray(a, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(a > 0, a * np.log(a), 0.0).sum(axis=-1)
        out.append(math.log(a.shape[-1]) - ent.mean(axis=(0, 2)))
    return np.concatenate(out)


def _check_inputs(X, attention, y, X_test, attention_test, y_test):
    """The layer/head structure of train and test attention, as [H_1..H_L]; clear errors otherwise."""
    for name, a in (("attention", attention), ("attention_test", attention_test)):
        if isinstance(a, np.ndarray) or not hasattr(a, "__len__") or len(a) == 0:
            raise TypeError(f"{name}: expected a list with one (P, H_l, S, S) array per layer, got {type(a).__name__}")
    heads = [np.shape(a)[1] if np.ndim(a) == 4 else None for a in attention]
    heads_t = [np.shape(a)[1] if np.ndim(a) == 4 else None for a in attention_test]
    if None in heads or None in heads_t:
        raise ValueError("attention, attention_test: each layer must be a 4-d array (P, H_l, S, S), got shapes "
                         f"{[np.shape(a) for a in attention]} and {[np.shape(a) for a in attention_test]}")
    if heads != heads_t:
        raise ValueError(f"attention_test: heads per layer {heads_t} differ from attention's {heads}")
    y_test = _args.f64_array(_args.labels(y_test, "y_test"), "y_test", "C", 1)
    if np.shape(X_test)[:1] != y_test.shape:
        raise ValueError(f"y_test: {np.shape(X_test)[0]} labels expected (one per X_test example), got {y_test.size}")
    return _args.heads(heads, "heads (from attention)"), y_test


def _correct(mean, y):
    """Per example: the sign of the mean is the label's (am_accuracy's count: a zero mean is never correct)."""
    return (np.sign(mean) != 0) & (np.sign(mean) == np.sign(y))


def _met(sol, tol):
    return sol is not None and np.isfinite(sol.grad_max) and sol.grad_max <= tol * max(1.0, abs(sol.action))


def solve_with_fallback(th, warm=None, what="the theory"):
    """Solve `th` as head importance does (`_attempt`): from `warm`, then (if that fails) from the GP point.
    Returns (Solution or None, notes, fell_back): the notes say what happened and at which accuracy (a round-off
    stop above GRAD_TOL counts as converged, AM_CONVERGED_ROUNDOFF, with its max|G| stated); fell_back is True when
    the solution did not converge (accepted at LOOSE_GRAD_TOL, or None: nothing accepted, the last error in the
    notes)."""
    notes, last = [], None
    for start in ((warm, None) if warm is not None else (None,)):
        try:
            sol, fell_back = _attempt(th, start, what, notes)
            return sol, notes, fell_back
        except (NotConverged, DomainError) as e:
            last = e
    notes.append(f"{what}: no solve converged ({last})")
    return None, notes, True


def _attempt(th, start, what, notes):
    """One solve from `start` at GRAD_TOL, MAX_ITER iterations. When it stops short with its last iterate within
    LOOSE_GRAD_TOL, Newton goes on from there for CONTINUE_ITER more (the same path: an iterate depends only on the
    one before); if that does not converge either, its last iterate (the lowest action reached) is accepted:
    (Solution, fell_back). A last iterate beyond LOOSE_GRAD_TOL re-raises the solve's error."""
    try:
        sol = th.solve(warm_start=start, max_iter=MAX_ITER, grad_tol=GRAD_TOL)
        _note_roundoff(sol, what, notes)
        return sol, False
    except NotConverged as e:
        first = e
    sol = first.result
    if not _met(sol, LOOSE_GRAD_TOL):
        raise first
    try:
        more = th.solve(warm_start=sol, max_iter=CONTINUE_ITER, grad_tol=GRAD_TOL)
        more.iterations += sol.iterations
        notes.append(f"{what}: converged after {more.iterations} Newton iterations (continued from the last "
                     f"iterate of the first {sol.iterations})")
        _note_roundoff(more, what, notes)
        return more, False
    except (NotConverged, DomainError) as e:
        later = getattr(e, "result", None)
        if later is not None and later.action <= sol.action:
            later.iterations += sol.iterations
            sol = later
    notes.append(f"{what}: Newton did not reach max|G| <= {GRAD_TOL:g}·max(1, |S|) in {sol.iterations} iterations "
                 f"({first.message}); its last iterate (the lowest action reached) is used: max|G| = "
                 f"{sol.grad_max:.3g}, {sol.grad_max / max(1.0, abs(sol.action)):.2g} relative (accepted up to "
                 f"{LOOSE_GRAD_TOL:g})")
    return sol, True


def _note_roundoff(sol, what, notes):
    if not _met(sol, GRAD_TOL):  # converged_roundoff: stopped where round-off stalls the decrement
        notes.append(f"{what}: Newton stopped on round-off at max|G| = {sol.grad_max:.3g} "
                     f"({sol.grad_max / (GRAD_TOL * max(1.0, abs(sol.action))):.3g}× the tolerance)")


def _full_model(xi, xt, y, y_test, arch):
    """Solve the theory with every path; the reference values each head's removal is compared with. When no solve
    converges even at LOOSE_GRAD_TOL, the GP limit stands in for the solution (ref["gp_limit"], a note)."""
    with Theory(xi, y, **arch) as th:
        sol, notes, fell_back = solve_with_fallback(th, what="the full theory")
        gp = th.gp_point()
        U = gp if sol is None else sol.U
        if sol is None:
            notes.append("the full theory: the GP limit (U at the GP point) is used for every predicted quantity")
        mean, _ = th.predict(xt, U)
        mean_gp, _ = th.predict(xt, gp)
        ref = {"solution": sol, "U": U, "gp": gp, "gp_limit": sol is None, "notes": notes, "fell_back": fell_back,
               "accuracy": accuracy(mean, y_test), "loss": float(np.mean((mean - y_test) ** 2)),
               "correct": _correct(mean, y_test), "sq_error": (mean - y_test) ** 2,
               "accuracy_gp": accuracy(mean_gp, y_test), "score": th.head_scores(U),
               "alignment": kernel_alignment(th.kernel(U), th.y)}
    return ref


def removed_paths_start(U, mask, s1=1.0, U_a=1.0):
    """A warm start for the theory without the paths `mask` (their ξ zero) from the full solution U: U_2..U_L kept,
    and U_1's rows and columns of the removed paths at their exact minimiser given the kept block A = U_1[kept, kept]
    and U_2. The energy does not see those rows, so they minimise W_0[Tr(B U_1) − log det U_1] with
    B = (I_{H_1} ⊗ U_2⁻¹)/s_1 alone (I/(s_1 U_a) for one layer): stationarity puts (U_1⁻¹) equal to B on them,
    i.e. U_1[kept, removed] = −A B_kr B_rr⁻¹ and U_1[removed, removed] = B_rr⁻¹ + B_rr⁻¹ B_rk A B_kr B_rr⁻¹ (for a
    layer-1 head B_kr = 0: the block is s_1·U_2, uncoupled). The full solution's own values there can be far away
    (the energy had pulled them), which Newton walks back only a constant factor per iteration (docs/python.md,
    "Why the Newton solves creep"). Only U_1 moves: with L = 1 the readout's U_a follows Tr U_1, so the start is
    then near, not at, that minimiser."""
    U = [np.array(u, dtype=float) for u in U]
    m = np.asarray(mask, dtype=bool)
    if not m.any() or m.all():
        return U
    H1 = U[0].shape[0] // (U[1].shape[0] if len(U) > 1 else 1)
    inner = np.linalg.solve(U[1], np.eye(U[1].shape[0])) if len(U) > 1 else np.full((1, 1), 1.0 / U_a)
    B = np.kron(np.eye(H1), inner) / s1
    k = ~m
    A = U[0][np.ix_(k, k)]
    Brr, Bkr = B[np.ix_(m, m)], B[np.ix_(k, m)]
    Brr_inv_Brk = np.linalg.solve(Brr, Bkr.T)            # B_rr⁻¹ B_rk
    C = -A @ Brr_inv_Brk.T                               # U_1[kept, removed]
    D = np.linalg.solve(Brr, np.eye(Brr.shape[0])) + Brr_inv_Brk @ A @ Brr_inv_Brk.T
    U1 = U[0].copy()
    U1[np.ix_(k, m)] = C
    U1[np.ix_(m, k)] = C.T
    U1[np.ix_(m, m)] = (D + D.T) / 2
    U[0] = U1
    return U


def _without_head(xi, xt, y, y_test, arch, mask, ref, what):
    """The theory with one head's paths removed (their ξ set to 0 in training and test inputs, U re-solved from
    the full solution): accuracy/loss re-solved, at the full U (frozen) and at the GP point, and the alignment of
    the full U's kernel without those paths. In the GP limit (ref["gp_limit"]) the re-solved values are the GP
    point's."""
    if not xi[:, :, mask].any() and not xt[:, :, mask].any():
        # the paths are already absent: the problem, hence every value, is the full one
        return {"accuracy": ref["accuracy"], "loss": ref["loss"], "accuracy_frozen": ref["accuracy"],
                "accuracy_gp": ref["accuracy_gp"], "alignment": ref["alignment"], "iterations": 0,
                "correct": ref["correct"], "notes": [], "fell_back": False}
    xi_h, xt_h = xi.copy(order="F"), xt.copy(order="F")
    xi_h[:, :, mask] = 0.0
    xt_h[:, :, mask] = 0.0
    with Theory(xi_h, y, **arch) as th:
        out = {"accuracy_frozen": th.accuracy(xt_h, y_test, U=ref["U"]),
               "accuracy_gp": th.accuracy(xt_h, y_test, U=ref["gp"]),
               "alignment": kernel_alignment(th.kernel(ref["U"]), th.y), "notes": [], "fell_back": False}
        if ref["gp_limit"]:
            sol, U = None, ref["gp"]
        else:
            s1 = 1.0 if arch["variances"] is None else float(_args.reals(arch["variances"], "variances")[1])
            warm = removed_paths_start(ref["solution"].U, mask, s1, ref["solution"].U_a)
            sol, out["notes"], out["fell_back"] = solve_with_fallback(th, warm, what)
            U = None if sol is None else sol.U
        if U is None:
            warnings.warn(f"attnmech: {what} did not converge; its re-solved quantities are NaN", AttnmechWarning,
                          stacklevel=3)
            out.update(accuracy=math.nan, loss=math.nan, iterations=-1, correct=None)
        else:
            mean, _ = th.predict(xt_h, U)
            out.update(accuracy=accuracy(mean, y_test), loss=float(np.mean((mean - y_test) ** 2)),
                       iterations=0 if sol is None else sol.iterations, correct=_correct(mean, y_test))
    return out


def theory_head_quantities(X, attention, y, X_test, attention_test, y_test, *, readout="last", widths,
                           temperature, variances=None, threads=0, quantity=None, seed=0, skip=None,
                           check_rows=True):
    """Per-head importance quantities of the attention-path theory of a network's attention, and a pruning order.

    Parameters
    ----------
    X, attention, y : training inputs (P, S, N0), per-layer attention [(P, H_l, S, S), ...] in PyTorch's layout
        [example, head, query, key] (layer 1 first), labels ±1 — as for `Theory.from_attention`.
    X_test, attention_test, y_test : the same for the test set the accuracies are measured on.
    readout, widths, temperature, variances, threads : as for `Theory.from_attention`.
    quantity : str, optional
        Which of `QUANTITIES` leads the ranking (default `DEFAULT_QUANTITY`, the one the study found predictive).
    seed : int
        The bootstrap's seed (the intervals of the predicted drops).
    skip : sequence of bool, optional
        Per layer (3.9): its last head is a residual connection — the identity "head" of
        `attnmech.torch.theory_attention` — not a network head. It takes part in the theory (its paths are in the
        kernel and U) but gets no row: every per-head array covers the network heads only, and no re-solve removes
        it.
    check_rows : bool
        As for `xi_from_attention` (False: LayerNorm-scaled rows).

    Returns
    -------
    dict
        Per head, NumPy arrays in flat head order (layer 1 first, PyTorch's order within a layer):
        "score" (am_head_scores at the solved U, as `Theory.head_scores`), "score_layer" (the same normalised to
        max 1 within each layer), "predicted_drop" (theory test accuracy with every head minus with this head's
        paths removed, U re-solved), "predicted_drop_interval" ((H, 2): its INTERVAL_LEVEL bootstrap interval over
        the test examples, `bootstrap_drops`), "predicted_loss_rise" (the same for the test mean squared error, with
        the sign flipped so larger = more important), "predicted_drop_frozen" (paths removed, U kept),
        "predicted_drop_gp" (paths removed, at the GP point), "u_mass" (`u_diagonal_mass`), "alignment_drop"
        (kernel–label alignment lost when the paths go, U kept), "xi_share" (share of Σ‖ξ‖² on the head's paths),
        "attention_focus" (`attention_focus`, a non-theory baseline), "layer" (1-based layer of each head),
        "iterations" (Newton iterations of each re-solve; −1 and NaN re-solved values, with an `AttnmechWarning`,
        where no solve was accepted); and "ranking" (flat head indices, least important first, by `quantity`),
        "quantity", "distinct" (per pair of ranking neighbours: their drops told apart, `ranking_distinct`; None
        unless the quantity is predicted_drop), "confident" (every neighbour pair told apart), "accuracy" and
        "accuracy_gp" (theory test accuracy with every head), "solution" (the full Solution; None in the GP limit),
        "gp_limit" (no full solve was accepted: every predicted quantity is the GP point's), "heads" ([H_1..H_L]),
        "converged" (every solve converged: met GRAD_TOL, or stopped on round-off) and "notes" (round-off stops with
        their max|G|; what fell back, and how: `solve_with_fallback`; a fallback also issues one `AttnmechWarning`).

    The theory's solves run on one BLAS thread whatever OPENBLAS_NUM_THREADS says (`blas_rule(force=True)`), so
    the result does not depend on the thread count.
    """
    quantity = DEFAULT_QUANTITY if quantity is None else quantity
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity: one of {', '.join(QUANTITIES)}; got {quantity!r}")
    heads, y_test = _check_inputs(X, attention, y, X_test, attention_test, y_test)
    skip = [False] * len(heads) if skip is None else [bool(v) for v in skip]
    if len(skip) != len(heads) or any(k and H < 2 for k, H in zip(skip, heads)):
        raise ValueError(f"skip: one bool per layer ({len(heads)}), True only where a layer has a network head "
                         f"besides its identity head; got {skip} for heads {heads}")
    s0 = 1.0 if variances is None else float(_args.reals(variances, "variances (s_0..s_L, s_a)")[0])
    xi = xi_from_attention(X, attention, readout=readout, s0=s0, check_rows=check_rows)
    xt = xi_from_attention(X_test, attention_test, readout=readout, s0=s0, check_rows=check_rows)
    arch = {"heads": heads, "widths": widths, "variances": variances, "temperature": temperature,
            "threads": threads}
    with blas_rule(numpy_too=True, force=True):
        ref, rows = _all_heads(xi, xt, y, y_test, arch, heads, skip)
    net = [H - k for H, k in zip(heads, skip)]
    out = _collect(ref, rows, heads, [a[:, :n] for a, n in zip(attention, net)], skip)
    tb = TIEBREAK.get(quantity)
    out.update(ranking=rank_heads(out[quantity], out[tb] if tb else None), quantity=quantity)
    _add_intervals(out, ref, rows, seed)
    notes = ref["notes"] + [n for r in rows for n in r["notes"]]
    out.update(converged=not (ref["fell_back"] or any(r["fell_back"] for r in rows)), notes=notes)
    if not out["converged"]:
        warnings.warn("attnmech: head importance: " + "; ".join(notes), AttnmechWarning, stacklevel=2)
    return out


def _all_heads(xi, xt, y, y_test, arch, heads, skip):
    """The full theory and one row per network head removed (flat head order; a layer's identity head, `skip`,
    has none)."""
    ref = _full_model(xi, xt, y, y_test, arch)
    path_power = (xi ** 2).sum(axis=(0, 1))
    rows = []
    for l, H in enumerate(heads):
        for h in range(H - skip[l]):
            mask = head_path_mask(heads, l, h)
            row = _without_head(xi, xt, y, y_test, arch, mask, ref, f"the theory without L{l + 1}H{h}")
            row["xi_share"] = path_power[mask].sum() / max(path_power.sum(), np.finfo(float).tiny)
            rows.append(row)
    return ref, rows


def _network_heads(values, heads, skip):
    """The entries of a per-theory-head array (flat order) that belong to network heads (a layer's identity head,
    last in the layer where `skip`, dropped)."""
    keep = np.concatenate([np.arange(H) < H - k for H, k in zip(heads, skip)])
    return np.asarray(values)[keep]


def _collect(ref, rows, heads, attention, skip):
    """The per-head arrays of theory_head_quantities from the full theory and the rows (network heads only)."""
    col = lambda k: np.array([r[k] for r in rows], dtype=float)  # noqa: E731
    net = [H - k for H, k in zip(heads, skip)]
    score = _network_heads(ref["score"], heads, skip)
    score = score / max(score.max(), np.finfo(float).tiny)
    return {"score": score, "score_layer": _per_layer_max1(score, net),
            "predicted_drop": ref["accuracy"] - col("accuracy"),
            "predicted_loss_rise": col("loss") - ref["loss"],
            "predicted_drop_frozen": ref["accuracy"] - col("accuracy_frozen"),
            "predicted_drop_gp": ref["accuracy_gp"] - col("accuracy_gp"),
            "u_mass": _network_heads(u_diagonal_mass(ref["U"], heads), heads, skip),
            "alignment_drop": ref["alignment"] - col("alignment"), "xi_share": col("xi_share"),
            "attention_focus": attention_focus(attention),
            "layer": np.repeat(np.arange(1, len(heads) + 1), net),
            "iterations": col("iterations").astype(np.int64), "accuracy": ref["accuracy"],
            "accuracy_gp": ref["accuracy_gp"], "solution": ref["solution"], "heads": net,
            "theory_heads": heads, "skip": list(skip), "gp_limit": ref["gp_limit"]}


def _add_intervals(out, ref, rows, seed):
    """predicted_drop_interval (NaN for a head without a re-solve), and for a predicted_drop ranking whether its
    neighbours are told apart (distinct) and whether all are (confident)."""
    failed = np.array([r["correct"] is None for r in rows])
    correct = np.array([ref["correct"] if r["correct"] is None else r["correct"] for r in rows])
    boot = bootstrap_drops(ref["correct"], correct, seed)
    iv = percentile_intervals(boot)
    iv[failed] = math.nan
    out["predicted_drop_interval"] = iv
    ok = out["quantity"] == "predicted_drop" and not failed.any()
    out["distinct"] = ranking_distinct(boot, out["ranking"]) if ok else None
    out["confident"] = bool(np.all(out["distinct"])) if ok else None


def bootstrap_drops(correct_full, correct_without, seed=0, resamples=None):
    """(resamples, H) accuracy drops on bootstrap resamples of the test examples, paired: each resample draws Pt
    examples with replacement and every head's drop is counted on the same draw. `correct_full` (Pt,) and
    `correct_without` (H, Pt) are the per-example correct signs with every head and without each. Integer counts,
    so the same seed gives the same bits on every machine and thread count."""
    B = BOOTSTRAP if resamples is None else resamples
    d = np.asarray(correct_full, dtype=np.int64)[None, :] - np.asarray(correct_without, dtype=np.int64)  # +1: lost
    Pt = d.shape[1]
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, Pt, Pt), minlength=Pt) for _ in range(B)])
    return (counts @ d.T) / Pt


def percentile_intervals(boot, level=None):
    """(columns, 2) central `level` (default INTERVAL_LEVEL) percentile intervals of the columns of `boot`."""
    level = INTERVAL_LEVEL if level is None else level
    return np.percentile(boot, [50 * (1 - level), 50 * (1 + level)], axis=0).T.copy()


def ranking_distinct(boot, ranking, level=None):
    """Per pair of neighbours in `ranking` (len − 1 booleans): whether their drops can be told apart — the central
    `level` bootstrap interval of their paired difference (the same resamples) excludes 0. Equal drops never can."""
    r = np.asarray(ranking, dtype=np.int64)
    iv = percentile_intervals(boot[:, r[1:]] - boot[:, r[:-1]], level)
    return (iv[:, 0] > 0) | (iv[:, 1] < 0)


def indistinct_groups(ranking, distinct):
    """The ranking cut where neighbours are told apart: lists of flat head indices (least important first) whose
    order the test data cannot settle."""
    groups = [[int(ranking[0])]]
    for k, d in enumerate(distinct):
        if d:
            groups.append([])
        groups[-1].append(int(ranking[k + 1]))
    return groups


# ------------------------------------------------------------------------------------------ choosing N and T
# The grids head importance selects N and T from when they are not given (docs/python.md, "Choosing N and T for
# head importance"), and the share of the training set held out for it.
SELECT_WIDTHS = (1.0, 3.0, 10.0, 100.0, 1e4)
SELECT_TEMPERATURES = (0.01, 0.03, 0.1, 0.3, 1.0)
VALIDATION_SHARE = 0.25


def per_example_scores(mean, var, y, T):
    """Per validation example: the sign is right (am_accuracy's count) and the log-density of y under
    N(mean, var + T) (am_log_likelihood's terms; their mean is that function's value)."""
    s = var + T
    return _correct(mean, y), -0.5 * (np.log(2 * np.pi * s) + (y - mean) ** 2 / s)


def within_noise(values, reference, slack=0.0):
    """Cells whose mean per-example value is within one standard error of the reference cell's: for each cell, the
    paired differences d = reference − cell over the same examples, tied when mean(d) ≤ sd(d)/√n + slack
    (identical cells: d = 0, tied). `values` is a list of (n,) arrays or None (a failed cell, never tied)."""
    ref = values[reference]
    out = np.zeros(len(values), dtype=bool)
    for k, v in enumerate(values):
        if v is None:
            continue
        d = ref - v
        se = d.std(ddof=1) / math.sqrt(d.size) if d.size > 1 else 0.0
        out[k] = d.mean() <= se + slack
    return out


def one_se_choice(correct, logdens, width_keys, temperatures):
    """Index of the cell the one-standard-error rule picks from per-cell per-example validation scores (lists,
    None for a failed cell) — the rule of `select_width_temperature`: among the cells whose accuracy is within one
    standard error of the best accuracy, those whose mean log-density is within one standard error of the best of
    them; of these the one nearest the GP limit (the largest smallest width, then the largest sum of widths, then
    the largest T). One example more or less right is within noise. Returns (index, accuracy-tied mask, both-tied
    mask)."""
    ok = [k for k, c in enumerate(correct) if c is not None]
    if not ok:
        raise NotConverged(_lib.AM_ERR_NOT_CONVERGED, "select: every solve of the width × temperature grid failed")
    acc = np.array([np.nan if c is None else c.mean() for c in correct])
    ll = np.array([np.nan if v is None else v.mean() for v in logdens])
    best_acc = max(ok, key=lambda k: (acc[k], ll[k]))
    # accuracies are counts: one example more right is exactly one standard error (d: one 1, n − 1 zeros), so half an
    # example of slack keeps that boundary off round-off
    n = correct[best_acc].size
    tied_acc = within_noise([c.astype(float) if c is not None else None for c in correct], best_acc, 0.5 / n)
    best_ll = max(np.flatnonzero(tied_acc), key=lambda k: ll[k])
    tied = tied_acc & within_noise([v if t else None for v, t in zip(logdens, tied_acc)], best_ll)
    pick = max(np.flatnonzero(tied), key=lambda k: (width_keys[k], temperatures[k], -k))
    return int(pick), tied_acc, tied


def select_width_temperature(xi, y, heads, *, widths=None, temperature=None, variances=None, threads=0, seed=0):
    """(width, temperature, info): N and T for head importance, chosen on a validation share of the training set
    (VALIDATION_SHARE, a fixed permutation from `seed`; the theory built on the rest) over SELECT_WIDTHS ×
    SELECT_TEMPERATURES (a given width or temperature stays fixed) by `one_se_choice`. Every cell is solved as
    `Theory.select` solves it (warm starts along T; a failed cell is skipped with a warning). `info`: the grid
    ("widths", "temperatures", "accuracy", "log_likelihood": validation means, NaN where a solve failed), the choice
    ("index"), the cells within noise ("tied"), the library's validation rule's own choice ("library_index",
    `Theory.select`'s answer) and "notes"."""
    P = len(y)
    perm = np.random.default_rng(seed).permutation(P)
    n_val = max(1, int(P * VALIDATION_SHARE))
    val, fit = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    ws = list(SELECT_WIDTHS) if widths is None else [widths]
    ts = np.array(SELECT_TEMPERATURES if temperature is None else [temperature], dtype=float)
    with blas_rule(numpy_too=True, force=True), \
            Theory(xi[fit], y[fit], heads=heads, widths=ws[0], variances=variances, temperature=ts[0],
                   threads=threads) as th:
        cands = [th._width_vector(w, f"widths[{i}]") for i, w in enumerate(ws)]
        try:
            acc, ll, sols = th._scan_grid(xi[val], y[val], cands, ts, MAX_ITER, GRAD_TOL)
        except NotConverged:
            i = max(range(len(cands)), key=lambda k: (_width_key(cands[k]), -k))
            return ws[i], float(ts.max()), {"notes": [
                f"select: every solve of the width × temperature grid failed; the cell nearest the GP limit (width "
                f"{ws[i]!r}, T = {ts.max():g}) is used"]}
        correct, logdens = _cell_scores(th, xi[val], y[val], cands, ts, sols)
    keys = [_width_key(c) for c in cands for _ in ts]
    pick, tied_acc, tied = one_se_choice(correct, logdens, keys, np.tile(ts, len(cands)))
    i, j = divmod(pick, ts.size)
    lib = _best_cell(acc, ll, cands, ts)
    failed = [(ws[a], float(ts[b])) for a in range(len(ws)) for b in range(ts.size) if np.isnan(acc[a, b])]
    notes = [f"select: {len(failed)} cell(s) of the grid did not converge and were skipped: {failed}"] if failed else []
    info = {"widths": list(ws), "temperatures": ts,
            "accuracy": acc, "log_likelihood": ll, "index": (i, j), "tied": tied.reshape(acc.shape),
            "tied_accuracy": tied_acc.reshape(acc.shape), "library_index": lib, "notes": notes,
            "validation": int(n_val)}
    return ws[i], float(ts[j]), info


def _cell_scores(th, xv, yv, cands, ts, sols):
    """Per-example validation scores (correct, log-density) of every solved cell, flat in (width, T) order."""
    correct, logdens = [], []
    for i, w in enumerate(cands):
        th.set_widths(w)
        for j, T in enumerate(ts):
            if (i, j) not in sols:
                correct.append(None)
                logdens.append(None)
                continue
            th.set_temperature(T)
            mean, var = th.predict(xv, sols[i, j])
            c, v = per_example_scores(mean, var, yv, T)
            correct.append(c)
            logdens.append(v)
    return correct, logdens


# ------------------------------------------------------------------------------------------------------ cost
# Newton iterations assumed per solve for the estimate: on bench/heads' models a solve from the GP point took 9-35,
# a warm-started one 4-15 (docs/python.md, "What head importance costs").
ITERATIONS_COLD = 25
ITERATIONS_WARM = 10


def theory_size(heads):
    """(paths, U entries) of heads [H_1..H_L]: Π H_l, and Σ_l D_l(D_l + 1)/2 with D_l = H_l ⋯ H_L (U_l is
    D_l × D_l): the Newton unknowns; the Hessian is their square."""
    heads = _args.heads(heads)
    dims = [int(np.prod(heads[l:], dtype=np.int64)) for l in range(len(heads))]
    return dims[0], sum(d * (d + 1) // 2 for d in dims)


def theory_cost(xi, y, heads, *, widths, temperature, variances=None, threads=0, select_grid=(0, 0)):
    """What the theory side of head importance will cost, before running it: its size and a time estimate from
    two solves of this very problem capped at 0 and 1 Newton iterations (each timed once, on one BLAS thread).

    Returns a dict: "paths", "u_entries", "solves" ({"select": cells of the (N, T) grid `select_grid` =
    (widths, temperatures), "full": 1, "heads": one per head}), "seconds_per_iteration" (one Newton iteration:
    the 1-iteration solve minus the 0-iteration one), "seconds_per_solve" (what every solve pays besides its
    iterations: the first evaluation and the final Hessian spectrum), "seconds" (ITERATIONS_COLD per solve from
    the GP point — the full one and the first temperature of each width — ITERATIONS_WARM per warm-started one)
    and "seconds_max" (every solve failing: to MAX_ITER, retried from the GP point where a retry is made, continued
    CONTINUE_ITER where a continuation is). The selection's solves are counted at this P (they run on
    1 − VALIDATION_SHARE of it: an upper estimate)."""
    paths, n = theory_size(heads)
    H, (n_w, n_t) = sum(_args.heads(heads)), select_grid
    cold, warm = n_w + 1, n_w * max(n_t - 1, 0) + H
    times = []
    with blas_rule(numpy_too=True, force=True), \
            Theory(xi, y, heads=heads, widths=widths, variances=variances, temperature=temperature,
                   threads=threads) as th:
        for cap in (0, 1):
            t0 = time.perf_counter()
            try:
                th.solve(max_iter=cap, grad_tol=GRAD_TOL)
            except (NotConverged, DomainError):
                pass
            times.append(time.perf_counter() - t0)
    per_solve, per_it = times[0], max(times[1] - times[0], 0.0)
    M, C, later = MAX_ITER, CONTINUE_ITER, n_w * max(n_t - 1, 0)
    # at worst: a later selection cell fails warm and from the GP point; the full solve runs on CONTINUE_ITER; a
    # re-solve fails warm, then runs on from the GP point
    runs_max, iters_max = n_w + 2 * later + 2 + 3 * H, n_w * M + later * 2 * M + (M + C) + H * (2 * M + C)
    return {"paths": paths, "u_entries": n, "solves": {"select": n_w * n_t, "full": 1, "heads": H},
            "seconds_per_iteration": per_it, "seconds_per_solve": per_solve,
            "seconds": (cold + warm) * per_solve + (cold * ITERATIONS_COLD + warm * ITERATIONS_WARM) * per_it,
            "seconds_max": runs_max * per_solve + iters_max * per_it}


def _per_layer_max1(values, heads):
    """`values` (flat head order) divided by their maximum within each layer (a zero layer stays zero)."""
    out, off = np.array(values, dtype=float), 0
    for H in heads:
        m = out[off:off + H].max()
        if m > 0:
            out[off:off + H] /= m
        off += H
    return out


def spearman(a, b):
    """Spearman rank correlation of two equal-length sequences (average ranks for ties; NaN when either is
    constant) — NumPy only, so the package needs no SciPy."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"spearman: two 1-d sequences of equal length expected, got shapes {a.shape}, {b.shape}")
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    d = math.sqrt((ra @ ra) * (rb @ rb))
    return float("nan") if d == 0 else float(ra @ rb / d)


def _average_ranks(v):
    order = np.argsort(v, kind="stable")
    r = np.empty(v.size)
    r[order] = np.arange(v.size, dtype=float)
    for x in np.unique(v):
        tie = v == x
        r[tie] = r[tie].mean()
    return r
