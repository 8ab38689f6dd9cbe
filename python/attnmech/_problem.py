"""write_problem / read_problem: the `npy` task's problem directory (docs/tasks.md) both ways, through the
library (am_problem_write, am_problem_read: problem.h)."""
from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Optional, Sequence, Union

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

import numpy as np

from . import _args
from ._core import Context, Record, check, memory_check
from ._lib import core


def _heads_obj(heads, W, Q, K, N0):
    n = sum(heads)  # Σ H_l heads, layer 1 first (heads checked by _args.heads: at most 4096 paths)
    tags = [f"l{l + 1}_h{h + 1}" for l, H in enumerate(heads) for h in range(H)]

    def per_head(name, v):
        if isinstance(v, dict):
            missing = [t for t in tags if t not in v]
            if missing:
                raise ValueError(f"{name}: no matrix for head(s) {missing}")
            return [v[t] for t in tags]
        if len(v) != n:
            raise ValueError(f"{name}: one matrix per head ({n}: layer 1 first), got {len(v)}")
        return list(v)

    def matrix(m, what, rows):
        m = _args.shaped(m, what, f"({rows}, {N0})", 2)
        if m.shape[1] != N0 or (rows == N0 and m.shape[0] != N0):
            raise ValueError(f"{what}: expected shape ({rows}, {N0}) (N0 = {N0} from X_train), got shape {m.shape}")
        return np.ascontiguousarray(_args.f64_array(m, what))

    att = {}
    if W is not None:
        for t, w in zip(tags, per_head("W", W)):
            att[t] = matrix(w, f"W[{t}]", N0)
    elif Q is not None and K is not None:
        for t, q, k in zip(tags, per_head("Q", Q), per_head("K", K)):
            att[t] = {"Q": matrix(q, f"Q[{t}]", "G"), "K": matrix(k, f"K[{t}]", "G")}
            if att[t]["Q"].shape != att[t]["K"].shape:
                raise ValueError(f"Q[{t}], K[{t}]: shapes {att[t]['Q'].shape} and {att[t]['K'].shape} differ")
    else:
        raise ValueError("give W (bilinear heads) or both Q and K")
    return att


def write_problem(dir: Union[str, os.PathLike], X_train: ArrayLike, y_train: ArrayLike,
                  X_test: Optional[ArrayLike] = None, y_test: Optional[ArrayLike] = None, *, heads: Sequence[int],
                  W=None, Q=None, K=None, widths: Union[float, Sequence[float]],
                  variances: Optional[Sequence[float]] = None, temperature: float, readout: str = "last",
                  path_labels: Optional[Sequence[str]] = None, widths_scan: Optional[Sequence[float]] = None) -> str:
    """Write a problem directory for the `npy` task (then ``attnmech.run("npy", dir=...)``).

    Parameters
    ----------
    dir : str or os.PathLike
        Absent, empty, or a previous problem directory (holding model.json), which is replaced whole: the
        files go into a temporary sibling that then takes its place, so the directory is never half written.
    X_train : array_like, shape (P, S, N0)
        Training inputs, token s of example μ at X[μ, s, :] (written as C-order float64).
    y_train : array_like, shape (P,)
    X_test, y_test : array_like, shapes (Pt, S, N0) and (Pt,), optional
    heads : sequence of int
        Heads per layer [H_1..H_L].
    W : sequence of array_like (N0, N0), or dict {"l1_h1": W, ...}
        Bilinear heads, layer 1 first; W[i, j] with i on the key side (logit[s, t] = x_sᵀ W x_t). Or:
    Q, K : sequences (or dicts) of array_like (G, N0)
        Query/key heads.
    widths : float or sequence of float
        W_0..W_L (a number: all equal).
    variances : sequence of float, optional
        s_0..s_L, s_a (default all 1).
    temperature : float
    readout : {"last", "first", "mean"}
    path_labels : sequence of str, optional
    widths_scan : sequence of float, optional
        The widths the npy task scans by default.

    Returns
    -------
    str
        The directory.
    """
    target = _args.path(dir, "dir")
    heads = _args.heads(heads)
    L = len(heads)
    w = _args.reals(widths, "widths (W_0..W_L)", sizes=(1, L + 1))
    if w.size == 1:
        w = np.full(L + 1, w[0])
    v = np.ones(L + 2) if variances is None else _args.reals(variances, "variances (s_0..s_L, s_a)", sizes=(L + 2,))
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test go together: give both or neither")
    # shapes and labels first, on the arrays as given (no copy yet: a broadcast view may stand for gigabytes)
    X_train = _args.shaped(X_train, "X_train", "(P, S, N0): token s of example μ at X[μ, s, :]", 3)
    P, S, N0 = X_train.shape
    y_train = _args.labels(y_train, "y_train", P)
    if X_test is not None:
        X_test = _args.shaped(X_test, "X_test", f"(Pt, {S}, {N0}) like X_train (P, S, N0)", 3)
        if X_test.shape[1:] != (S, N0):
            raise ValueError(f"X_test: expected shape (Pt, {S}, {N0}) like X_train (P, S, N0), got shape {X_test.shape}")
        y_test = _args.labels(y_test, "y_test", X_test.shape[0])
    if readout not in ("last", "first", "mean"):
        raise ValueError(f"readout: 'last', 'first' or 'mean', got {readout!r}")
    attention = _heads_obj(heads, W, Q, K, N0)
    n = X_train.size + (X_test.size if X_test is not None else 0)
    memory_check(16.0 * n, f"write_problem (X_train{'' if X_test is None else ' and X_test'}: {n:,} numbers, held "
                 "as float64 and copied once into the dataset record)")
    ds = {"kind": "attention",
          "X_train": np.ascontiguousarray(_args.f64_array(X_train, "X_train")),
          "y_train": _args.f64_array(y_train, "y_train", "C", 1)}
    if X_test is not None:
        ds["X_test"] = np.ascontiguousarray(_args.f64_array(X_test, "X_test"))
        ds["y_test"] = _args.f64_array(y_test, "y_test", "C", 1)
    ds.update({"heads": [float(h) for h in heads], "widths": w.tolist(), "variances": v.tolist(),
               "temperature": _args.real(temperature, "temperature"), "readout": readout,
               "attention": attention})
    if path_labels is not None:
        ds["path_labels"] = [str(s) for s in path_labels]
    if widths_scan is not None:
        ds["widths_scan"] = _args.reals(widths_scan, "widths_scan").tolist()
    ctx = Context()
    try:
        with Record.from_dict(ds) as rec:
            check(core.am_problem_write(ctx.handle, target, rec.handle), ctx)
    finally:
        ctx.close()
    return os.fspath(dir)


def read_problem(dir: Union[str, os.PathLike]) -> dict:
    """Read a problem directory of the `npy` task.

    Parameters
    ----------
    dir : str or os.PathLike

    Returns
    -------
    dict
        The dataset (kind "attention"): X_train, y_train, [X_test, y_test] as float64 arrays, heads, widths,
        variances (lists), temperature, readout, attention {"l<l>_h<h>": W or {"Q": ..., "K": ...}}, and
        path_labels / widths_scan when present.
    """
    ctx = Context()
    try:
        with Record() as rec:
            check(core.am_problem_read(ctx.handle, _args.path(dir, "dir"), rec.handle), ctx)
            return rec.to_python()
    finally:
        ctx.close()
