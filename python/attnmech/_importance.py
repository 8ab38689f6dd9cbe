"""The theory side of head importance: per-head quantities of the attention-path theory built from a network's
attention (the head score, the theory's own accuracy drop when a head's paths are removed, ...) and the pruning
order they recommend. Which quantity leads the ranking is what bench/heads/study.py measured (docs/python.md,
"Head importance: what predicts it")."""
import math
import warnings

import numpy as np

from . import _args
from .errors import AttnmechWarning, NotConverged
from ._theory import Theory, accuracy, xi_from_attention

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


def _full_model(xi, xt, y, y_test, arch):
    """Solve the theory with every path; the reference values each head's removal is compared with."""
    with Theory(xi, y, **arch) as th:
        sol = th.solve()
        gp = th.gp_point()
        mean, _ = th.predict(xt)
        ref = {"solution": sol, "gp": gp, "accuracy": accuracy(mean, y_test),
               "loss": float(np.mean((mean - y_test) ** 2)),
               "accuracy_gp": th.accuracy(xt, y_test, U=gp), "score": th.head_scores(),
               "alignment": kernel_alignment(th.kernel(), th.y)}
    return ref


def _without_head(xi, xt, y, y_test, arch, mask, ref):
    """The theory with one head's paths removed (their ξ set to 0 in training and test inputs, U re-solved from
    the full solution): accuracy/loss re-solved, at the full U (frozen) and at the GP point, and the alignment of
    the full U's kernel without those paths."""
    if not xi[:, :, mask].any() and not xt[:, :, mask].any():
        # the paths are already absent: the problem, hence every value, is the full one
        return {"accuracy": ref["accuracy"], "loss": ref["loss"], "accuracy_frozen": ref["accuracy"],
                "accuracy_gp": ref["accuracy_gp"], "alignment": ref["alignment"], "iterations": 0}
    xi_h, xt_h = xi.copy(order="F"), xt.copy(order="F")
    xi_h[:, :, mask] = 0.0
    xt_h[:, :, mask] = 0.0
    with Theory(xi_h, y, **arch) as th:
        out = {"accuracy_frozen": th.accuracy(xt_h, y_test, U=ref["solution"]),
               "accuracy_gp": th.accuracy(xt_h, y_test, U=ref["gp"]),
               "alignment": kernel_alignment(th.kernel(ref["solution"]), th.y)}
        sol = _resolve(th, ref["solution"])
        if sol is None:
            out.update(accuracy=math.nan, loss=math.nan, iterations=-1)
        else:
            mean, _ = th.predict(xt_h)
            out.update(accuracy=accuracy(mean, y_test), loss=float(np.mean((mean - y_test) ** 2)),
                       iterations=sol.iterations)
    return out


def _resolve(th, start):
    """Solve warm-started from the full solution, else from the GP point (removing a head can move U far); None,
    with a warning, when neither converges."""
    for warm in (start, None):
        try:
            return th.solve(warm_start=warm)
        except NotConverged as e:
            last = e
    warnings.warn(f"attnmech: the theory without one head did not converge ({last}); its re-solved quantities "
                  "are NaN", AttnmechWarning, stacklevel=3)
    return None


def theory_head_quantities(X, attention, y, X_test, attention_test, y_test, *, readout="last", widths,
                           temperature, variances=None, threads=0, quantity=None):
    """Per-head importance quantities of the attention-path theory of a network's attention, and a pruning order.

    Parameters
    ----------
    X, attention, y : training inputs (P, S, N0), per-layer attention [(P, H_l, S, S), ...] in PyTorch's layout
        [example, head, query, key] (layer 1 first), labels ±1 — as for `Theory.from_attention`.
    X_test, attention_test, y_test : the same for the test set the accuracies are measured on.
    readout, widths, temperature, variances, threads : as for `Theory.from_attention`.
    quantity : str, optional
        Which of `QUANTITIES` leads the ranking (default `DEFAULT_QUANTITY`, the one the study found predictive).

    Returns
    -------
    dict
        Per head, NumPy arrays in flat head order (layer 1 first, PyTorch's order within a layer):
        "score" (am_head_scores at the solved U, as `Theory.head_scores`), "score_layer" (the same normalised to
        max 1 within each layer), "predicted_drop" (theory test accuracy with every head minus with this head's
        paths removed, U re-solved), "predicted_loss_rise" (the same for the test mean squared error, with the
        sign flipped so larger = more important), "predicted_drop_frozen" (paths removed, U kept),
        "predicted_drop_gp" (paths removed, at the GP point), "u_mass" (`u_diagonal_mass`), "alignment_drop"
        (kernel–label alignment lost when the paths go, U kept), "xi_share" (share of Σ‖ξ‖² on the head's paths),
        "attention_focus" (`attention_focus`, a non-theory baseline), "layer" (1-based layer of each head), "iterations" (Newton iterations of
        each re-solve; −1 and NaN re-solved values, with an `AttnmechWarning`, where neither the warm start nor the
        GP point converged); and "ranking" (flat head indices, least important first, by `quantity`), "quantity",
        "accuracy" and "accuracy_gp" (theory test accuracy with every head), "solution" (the full Solution),
        "heads" ([H_1..H_L]).
    """
    quantity = DEFAULT_QUANTITY if quantity is None else quantity
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity: one of {', '.join(QUANTITIES)}; got {quantity!r}")
    heads, y_test = _check_inputs(X, attention, y, X_test, attention_test, y_test)
    s0 = 1.0 if variances is None else float(_args.reals(variances, "variances (s_0..s_L, s_a)")[0])
    xi = xi_from_attention(X, attention, readout=readout, s0=s0)
    xt = xi_from_attention(X_test, attention_test, readout=readout, s0=s0)
    arch = {"heads": heads, "widths": widths, "variances": variances, "temperature": temperature,
            "threads": threads}
    ref = _full_model(xi, xt, y, y_test, arch)
    layer = np.repeat(np.arange(1, len(heads) + 1), heads)
    path_power = (xi ** 2).sum(axis=(0, 1))
    rows = []
    for l, H in enumerate(heads):
        for h in range(H):
            mask = head_path_mask(heads, l, h)
            row = _without_head(xi, xt, y, y_test, arch, mask, ref)
            row["xi_share"] = path_power[mask].sum() / max(path_power.sum(), np.finfo(float).tiny)
            rows.append(row)
    col = lambda k: np.array([r[k] for r in rows], dtype=float)  # noqa: E731
    score = ref["score"]
    out = {"score": score, "score_layer": _per_layer_max1(score, heads),
           "predicted_drop": ref["accuracy"] - col("accuracy"),
           "predicted_loss_rise": col("loss") - ref["loss"],
           "predicted_drop_frozen": ref["accuracy"] - col("accuracy_frozen"),
           "predicted_drop_gp": ref["accuracy_gp"] - col("accuracy_gp"),
           "u_mass": u_diagonal_mass(ref["solution"].U, heads),
           "alignment_drop": ref["alignment"] - col("alignment"), "xi_share": col("xi_share"),
           "attention_focus": attention_focus(attention), "layer": layer,
           "iterations": col("iterations").astype(np.int64)}
    tb = TIEBREAK.get(quantity)
    out.update(ranking=rank_heads(out[quantity], out[tb] if tb else None), quantity=quantity,
               accuracy=ref["accuracy"], accuracy_gp=ref["accuracy_gp"], solution=ref["solution"], heads=heads)
    return out


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
