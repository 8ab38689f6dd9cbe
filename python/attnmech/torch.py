"""attnmech.torch — the attention-path theory of your own PyTorch model (optional; needs torch).

    import attnmech.torch as amt
    att, X0 = amt.attention(model, X)                 # per-layer [P, H_l, S, S] and what layer 1 saw [P, S, N0]
    with amt.ablate(model, [(1, 0), (2, 3)]):         # layer 1 head 0 and layer 2 head 3 silenced
        ...
    imp = amt.head_importance(model, X_train, y_train, X_test, y_test)
    imp.ranking, imp.score, imp.predicted_drop, imp.measured_drop, imp.refit_drop; imp.save("out")

Attention layers are the model's ``nn.MultiheadAttention`` modules (also those inside ``nn.TransformerEncoderLayer``
and ``nn.TransformerEncoder``), in the order the forward pass calls them; ``layers=`` lists them when the model has
its own attention module type. Heads are named ``(layer, head)`` with **layer 1-based** (layer 1 is the first one
the input meets, as in the theory) and **head 0-based** (PyTorch's head index within the layer); the flat head
index (the arrays of `head_importance`, `ranking`) is the number of heads of the earlier layers plus the head.

Importing this module imports torch; ``import attnmech`` never does. See docs/python.md, "PyTorch: your own model".
"""
import contextlib
import copy
import functools
import inspect
import json
import os
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

try:
    import torch
    from torch import nn
except ImportError as exc:  # torch is optional: say how to get it
    raise ImportError("attnmech.torch needs PyTorch: on Debian/Ubuntu `apt-get install python3-torch` (in a venv "
                      "made with --system-site-packages), else `pip install torch`") from exc

from . import _importance
from ._core import blas_rule
from ._importance import indistinct_groups, spearman, theory_head_quantities
from ._theory import xi_from_attention
from .errors import AttnmechWarning

__all__ = ["ModelPartsWarning", "find_layers", "attention", "theory_attention", "ablate", "accuracy", "refit",
           "measured_drop", "refit_drop", "pruning_curve", "head_importance", "head_importance_cost", "HeadImportance",
           "CostWarning", "one_thread", "spearman"]


# A head: (layer 1-based, head 0-based) or a flat head index.
Head = Union[Tuple[int, int], int]

# One re-entrant lock per model, held by every function here that changes the model for the length of its call
# (attention layers' forward replaced, heads' out_proj columns zeroed, eval mode, hooks): calls on one model from
# several threads run one at a time, each on the model as given, and one call's change can never be saved and
# "restored" by another (which would leave it in the model for good). Different models do not wait for each other.
_model_locks = weakref.WeakKeyDictionary()
_model_locks_guard = threading.Lock()


def _model_lock(model):
    with _model_locks_guard:
        lock = _model_locks.get(model)
        if lock is None:
            lock = _model_locks[model] = threading.RLock()
        return lock


def _holding_model(fn):
    """Decorator: `fn(model, ...)` runs holding the model's lock."""
    @functools.wraps(fn)
    def wrapped(model, *args, **kwargs):
        with _model_lock(model):
            return fn(model, *args, **kwargs)
    return wrapped


class ModelPartsWarning(AttnmechWarning):
    """The model has parts the attention-path theory does not describe (residual paths, feed-forward blocks,
    LayerNorm, value/output biases, active dropout): the theory then describes an approximation of it."""


# ------------------------------------------------------------------------------------------- layers and heads
def find_layers(model: "nn.Module", layers: Optional[Sequence["nn.Module"]] = None) -> List["nn.Module"]:
    """The model's attention layers: ``layers`` itself when given (a list of ``nn.MultiheadAttention`` or modules
    with the same ``in_proj_weight``/``out_proj``/``num_heads`` interface), else every ``nn.MultiheadAttention``
    in ``model.modules()`` order (registration order; `attention` checks it is the call order)."""
    if layers is not None:
        layers = list(layers)
        for i, m in enumerate(layers):
            if not (hasattr(m, "out_proj") and hasattr(m, "num_heads")):
                raise TypeError(f"layers[{i}]: expected an nn.MultiheadAttention (out_proj, num_heads), "
                                f"got {type(m).__name__}")
    else:
        layers = [m for m in model.modules() if isinstance(m, nn.MultiheadAttention)]
    if not layers:
        raise ValueError(f"model: no nn.MultiheadAttention found in {type(model).__name__}; pass layers=[...] "
                         "listing its attention modules")
    return layers


def _head_counts(layers):
    return [int(m.num_heads) for m in layers]


def _head_pairs(heads, counts, name="heads"):
    """(layer index 0-based, head) pairs from (layer 1-based, head) pairs or flat head indices."""
    total = sum(counts)
    starts = np.concatenate([[0], np.cumsum(counts)])
    out = []
    for k, item in enumerate(heads):
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= item < total:
                raise ValueError(f"{name}[{k}]: flat head index {int(item)} out of range 0..{total - 1}")
            l = int(np.searchsorted(starts, item, side="right") - 1)
            out.append((l, int(item - starts[l])))
            continue
        try:
            layer, head = item
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{k}]: expected a (layer, head) pair or a flat head index, got {item!r}")
        if not (isinstance(layer, (int, np.integer)) and isinstance(head, (int, np.integer))):
            raise ValueError(f"{name}[{k}]: layer and head must be integers, got {item!r}")
        if not 1 <= layer <= len(counts):
            raise ValueError(f"{name}[{k}]: layer {int(layer)} out of range 1..{len(counts)} (layers are 1-based)")
        if not 0 <= head < counts[layer - 1]:
            raise ValueError(f"{name}[{k}]: head {int(head)} out of range 0..{counts[layer - 1] - 1} for layer "
                             f"{int(layer)} ({counts[layer - 1]} heads; heads are 0-based)")
        out.append((int(layer) - 1, int(head)))
    return out


def _silence(layers, pairs):
    """Zero each head's columns of out_proj.weight (its slice of the concatenated head outputs); returns what
    restores them."""
    saved = []
    with torch.no_grad():
        for l, h in pairs:
            w = layers[l].out_proj.weight
            d = w.shape[1] // layers[l].num_heads
            cols = slice(h * d, (h + 1) * d)
            saved.append((w, cols, w[:, cols].clone()))
            w[:, cols] = 0.0
    return saved


def _restore(saved):
    with torch.no_grad():
        for w, cols, old in reversed(saved):
            w[:, cols] = old


@contextlib.contextmanager
def ablate(model: "nn.Module", heads: Sequence[Head], *,
           layers: Optional[Sequence["nn.Module"]] = None) -> Iterator[List[Tuple[int, int]]]:
    """Silence heads of a torch model inside a ``with`` block; the weights are restored on exit, also after an
    exception.

    Silencing head h of a layer sets its output to zero before the output projection (the columns of
    ``out_proj.weight`` that read head h's slice of the concatenated head outputs), i.e. the head is removed
    from the network; ``out_proj.bias`` and the other heads are untouched. Works for ``nn.MultiheadAttention``
    anywhere in the model (inside ``nn.TransformerEncoderLayer`` too, on every code path since it edits weights).

    Parameters
    ----------
    model : torch.nn.Module
    heads : sequence
        ``(layer, head)`` pairs, layer 1-based (call order) and head 0-based (PyTorch's order), or flat head
        indices (earlier layers' heads + head). Repeats are harmless.
    layers : sequence of modules, optional
        The attention modules when they are not ``nn.MultiheadAttention`` (see `find_layers`).

    Yields
    ------
    list of (int, int)
        The silenced heads as (layer 1-based, head).

    Raises
    ------
    ValueError
        A layer or head out of range (the message names the entry and the valid range).
    """
    with _model_lock(model):  # for the whole block: other threads' calls on the model wait until it ends
        mods = find_layers(model, layers)
        pairs = _head_pairs(list(heads), _head_counts(mods))
        saved = _silence(mods, pairs)
        try:
            yield [(l + 1, h) for l, h in pairs]
        finally:
            _restore(saved)


# -------------------------------------------------------------------------------------------------- attention
def _as_tensor(X, name="X"):
    if isinstance(X, torch.Tensor):
        return X
    a = np.asarray(X)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a numeric array or tensor, got dtype {a.dtype}")
    return torch.as_tensor(a, dtype=torch.get_default_dtype() if a.dtype.kind == "f" else None)


def _device(model):
    """Where the model's parameters are (inputs are moved there; results come back to the CPU)."""
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def _batches(n, batch_size):
    if not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
        raise ValueError(f"batch_size: expected a positive integer, got {batch_size!r}")
    return [slice(i, min(n, i + batch_size)) for i in range(0, n, batch_size)]


@contextlib.contextmanager
def _weights_taken(layers, sink):
    """Every attention layer's forward, for the duration, asks PyTorch for the per-head weights and appends
    (layer index, weights [N, H, L, S], query as [N, L, E]) to ``sink``; the caller still gets what it asked
    for. Replacing the instance's forward sees keyword arguments (masks, need_weights) on torch 1.13 too, where
    forward pre-hooks cannot."""
    before = [m.__dict__.get("forward") for m in layers]
    for i, m in enumerate(layers):
        base = type(m).forward
        sig = inspect.signature(base)

        def forward(*args, _i=i, _m=m, _base=base, _sig=sig, **kwargs):
            bound = _sig.bind(_m, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            wanted, average = a.get("need_weights", True), a.get("average_attn_weights", True)
            a["need_weights"], a["average_attn_weights"] = True, False
            out, w = _base(*bound.args, **bound.kwargs)
            q, k = a["query"], a["key"]
            if q.dim() != 3:
                raise ValueError(f"attention layer {_i + 1}: unbatched input (shape {tuple(q.shape)}); the model "
                                 "must call its attention with a batch")
            if k is not q and not torch.equal(k, q):
                raise ValueError(f"attention layer {_i + 1}: key differs from query; the theory describes "
                                 "self-attention only")
            first = getattr(_m, "batch_first", False)
            sink.append((_i, w.detach(), (q if first else q.transpose(0, 1)).detach()))
            return out, (None if not wanted else w.mean(dim=1) if average else w)

        m.forward = forward
    try:
        yield
    finally:
        for m, f in zip(layers, before):
            if f is None:
                del m.forward
            else:
                m.forward = f


def _check_calls(order, n):
    if sorted(order) != list(range(n)):
        raise ValueError(f"the attention layers were called in the order {[i + 1 for i in order]} "
                         f"(numbered as found); each of the {n} layers must run exactly once per forward pass — "
                         "pass layers=[...] listing the ones the model uses")
    if order != list(range(n)):
        raise ValueError(f"the attention layers were called in the order {[i + 1 for i in order]}, not in "
                         "model.modules() order; pass layers=[...] in the order the forward pass calls them")


@_holding_model
def attention(model: "nn.Module", X: Any, *, layers: Optional[Sequence["nn.Module"]] = None, batch_size: int = 512,
              warn: bool = True) -> Tuple[List[np.ndarray], np.ndarray]:
    """The per-head attention weights of a forward pass, and the inputs of the first attention layer.

    Parameters
    ----------
    model : torch.nn.Module
        Called as ``model(X[batch])``. Its mode is left as it is (call ``model.eval()`` first: dropout in
        train mode makes the weights random, and is warned about).
    X : array_like or torch.Tensor
        The model's input, batch first (whatever its shape: token ids, images, sequences).
    layers : sequence of modules, optional
        The attention modules, in call order, when they are not found as ``nn.MultiheadAttention``.
    batch_size : int
        Examples per forward pass.
    warn : bool
        Warn (`ModelPartsWarning`, once) when the model has parts the theory does not describe.

    Returns
    -------
    (attention, X0)
        attention: list of float64 arrays [P, H_l, S, S], layer 1 first, in PyTorch's [example, head, query,
        key] layout (rows sum to 1; key_padding_mask/attn_mask the model passes are applied by PyTorch);
        X0: float64 [P, S, N0], what the first attention layer saw (after any embedding) — the theory's X.
        Both go straight into ``attnmech.Theory.from_attention(X0, attention, y, ...)``.
    """
    mods = find_layers(model, layers)
    Xt = _as_tensor(X)
    if warn:
        warn_model_parts(model, mods, Xt[:2])
    taken, first = [[] for _ in mods], []
    for sl in _batches(len(Xt), batch_size):
        sink = []
        # grad enabled keeps PyTorch off its fused inference paths (TransformerEncoder[Layer] in eval mode),
        # which would skip the attention module's forward
        with _weights_taken(mods, sink), torch.enable_grad():
            model(Xt[sl].to(_device(model)))
        _check_calls([i for i, _, _ in sink], len(mods))
        for i, w, q in sink:
            taken[i].append(w.double().cpu().numpy())
        first.append(sink[0][2].double().cpu().numpy())
    return [np.concatenate(t) for t in taken], np.concatenate(first)


def _encoder_layer_of(model, m):
    """The nn.TransformerEncoderLayer whose self-attention `m` is, or None."""
    for e in model.modules():
        if isinstance(e, nn.TransformerEncoderLayer) and e.self_attn is m:
            return e
    return None


def _per_layer(value, n, name):
    """A bool, or one bool per attention layer, as a list of n bools."""
    if isinstance(value, (bool, np.bool_)):
        return [bool(value)] * n
    out = [bool(v) for v in value]
    if len(out) != n:
        raise ValueError(f"{name}: one entry per attention layer ({n}) expected, got {len(out)}")
    return out


def _norm_scales(model, X, encs, batch_size):
    """Per attention layer inside an nn.TransformerEncoderLayer: {"norm1", "norm2"} → (P, S) float64, the factor
    1/√(Var_features z + eps) its LayerNorm puts on each token of the input z of that pass (None elsewhere)."""
    seen, hooks = [{} for _ in encs], []
    for l, e in enumerate(encs):
        if e is None:
            continue
        first = bool(getattr(e.self_attn, "batch_first", False))
        for name in ("norm1", "norm2"):
            ln = getattr(e, name)

            def hook(mod, inp, out, _l=l, _name=name, _first=first):
                z = inp[0].detach().double()
                z = z if _first else z.transpose(0, 1)
                c = 1.0 / torch.sqrt(z.var(dim=-1, unbiased=False) + mod.eps)
                seen[_l].setdefault(_name, []).append(c.cpu().numpy())
            hooks.append(ln.register_forward_hook(hook))
    Xt = _as_tensor(X)
    try:
        for sl in _batches(len(Xt), batch_size):
            with torch.enable_grad():  # the unfused path: the fused encoder kernel skips the norms' forward
                model(Xt[sl].to(_device(model)))
    finally:
        for h in hooks:
            h.remove()
    return [None if e is None else {k: np.concatenate(v) for k, v in d.items()} for e, d in zip(encs, seen)]


@_holding_model
def theory_attention(model: "nn.Module", X: Any, *, layers: Optional[Sequence["nn.Module"]] = None,
                     residual: Any = None, layer_norm: bool = True, batch_size: int = 512,
                     warn: bool = True) -> Tuple[List[np.ndarray], np.ndarray, List[bool]]:
    """The attention the theory takes for this model: `attention`'s per-head weights, with each residual
    connection as one more head of its layer (attention = the identity matrix; in the theory it gets its own
    value weights like every head) and each LayerNorm as a per-token scale of the attention rows.

    Parameters
    ----------
    model, X, layers, batch_size, warn
        As for `attention`.
    residual : bool or sequence of bool, optional
        Which attention layers have a residual connection around them (the layer's output is its input plus the
        attention's). None: those inside an ``nn.TransformerEncoderLayer``; a residual written by hand in
        ``forward`` cannot be seen: pass ``True`` (every layer) or one bool per layer.
    layer_norm : bool
        Fold the LayerNorms of ``nn.TransformerEncoderLayer``s in as per-token scales, measured on this forward
        pass: post-norm (default) scales the layer's output token t by c1_t·c2_t (norm1 and norm2: every head and
        the identity, query side); pre-norm (``norm_first``) scales the input token s the attention heads read by
        c1_s (not the identity). c = 1/√(Var z + eps) of the norm's input z. The norm's centring and gain, and the
        feed-forward block between norm1 and norm2, are not described.

    Returns
    -------
    (attention, X0, residual)
        attention: per layer [P, H_l (+1), S, S] in `attention`'s layout, the identity head last in a layer with a
        residual; X0 as for `attention`; residual: the per-layer bools used (the ``skip`` of
        `attnmech.theory_head_quantities`).
    """
    mods = find_layers(model, layers)
    encs = [_encoder_layer_of(model, m) for m in mods]
    res = [e is not None for e in encs] if residual is None else _per_layer(residual, len(mods), "residual")
    att, X0 = attention(model, X, layers=mods, batch_size=batch_size, warn=warn)
    scales = (_norm_scales(model, X, encs, batch_size) if layer_norm and any(e is not None for e in encs)
              else [None] * len(mods))
    out = []
    for a, r, e, c in zip(att, res, encs, scales):
        P, H, S, _ = a.shape
        if r:
            a = np.concatenate([a, np.broadcast_to(np.eye(S), (P, 1, S, S))], axis=1)
        if c is not None and e.norm_first:
            a[:, :H] *= c["norm1"][:, None, None, :]        # the heads read c1_s · x_s (key side)
        elif c is not None:
            a = a * (c["norm1"] * c["norm2"])[:, None, :, None]  # the layer's output token t (query side)
        out.append(np.ascontiguousarray(a))
    return out, X0, res


# ---------------------------------------------------------------------------------------------- the warning
def _leaf_calls(model, X):
    """Leaf modules (attention modules count as leaves) in the order one forward pass calls them."""
    calls, hooks = [], []
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention) or not any(True for _ in m.children()):
            hooks.append(m.register_forward_hook(lambda mod, i, o: calls.append(mod)))
    try:
        with torch.enable_grad():  # the unfused path, as in `attention`
            model(X.to(_device(model)))
    finally:
        for h in hooks:
            h.remove()
    inner = {id(c) for m in calls if isinstance(m, nn.MultiheadAttention) for c in m.modules() if c is not m}
    return [m for m in calls if id(m) not in inner]


@_holding_model
def model_parts(model, layers, X, modelled=False):
    """What the model has beyond attention with linear values and a linear readout: a list of strings. With
    `modelled` (head_importance, 3.9) the encoder layers' residual paths and LayerNorm scales are in the theory
    (`theory_attention`) and only what is left is listed."""
    parts = []
    enc = [m for m in model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
    if enc:
        parts.append(f"{'' if modelled else 'residual paths and '}feed-forward blocks ({len(enc)} "
                     "nn.TransformerEncoderLayer)")
    if any(isinstance(m, nn.LayerNorm) for m in model.modules()):
        parts.append("LayerNorm's centring and gain, and norms outside encoder layers (encoder layers' norm "
                     "scales are in the theory)" if modelled and enc else "LayerNorm")
    ids = {id(m) for m in layers}
    calls = _leaf_calls(model, X)
    at = [k for k, m in enumerate(calls) if id(m) in ids]
    if at:
        between = [m for m in calls[at[0] + 1:-1] if id(m) not in ids and not isinstance(m, (nn.Dropout,
                                                                                            nn.LayerNorm))]
        between = [m for m in between if not any(m in e.modules() for e in enc)]
        if between:
            names = sorted({type(m).__name__ for m in between})
            parts.append(f"modules between the first attention layer and the readout ({', '.join(names)}: "
                         "e.g. an MLP)")
    biased = [k + 1 for k, m in enumerate(layers) if _value_bias(m)]
    if biased:
        parts.append(f"value/output biases (layers {biased})")
    if model.training and (any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.modules())
                           or any(getattr(m, "dropout", 0) > 0 for m in layers)):
        parts.append("dropout in train mode (call model.eval())")
    return parts


def _value_bias(m):
    b = getattr(m, "in_proj_bias", None)
    e = m.out_proj.weight.shape[0]
    vb = b is not None and bool(torch.any(b[2 * e:] != 0))
    ob = m.out_proj.bias is not None and bool(torch.any(m.out_proj.bias != 0))
    return vb or ob or getattr(m, "bias_v", None) is not None


def warn_model_parts(model, layers, X, modelled=False):
    parts = model_parts(model, layers, X, modelled)
    if parts:
        warnings.warn("attnmech.torch: the model has parts the attention-path theory does not describe: "
                      + "; ".join(parts) + ". The theory describes attention layers with linear values at this "
                      "model's (fixed) attention, value and readout weights integrated out; for this model it is "
                      "an approximation whose quality the measured drops tell.", ModelPartsWarning, stacklevel=3)
    return parts


# ---------------------------------------------------------------------------------------- measured accuracy
def _outputs(model, Xt, batch_size=512):
    """The model's outputs in eval mode (its mode restored). Grad stays enabled so PyTorch takes the code path
    of training, not its fused inference kernels (which differ in round-off, and in torch 1.13 fail on
    attention without biases)."""
    was = model.training
    model.eval()
    try:
        with torch.enable_grad():
            dev = _device(model)
            return torch.cat([model(Xt[sl].to(dev)).detach().cpu() for sl in _batches(len(Xt), batch_size)])
    finally:
        model.train(was)


def default_predict(out: "torch.Tensor") -> np.ndarray:
    """Labels from model outputs: the sign of a scalar output (±1; an output of 0 gives +1), the argmax over
    several outputs."""
    out = out.detach()
    if out.dim() == 1 or (out.dim() == 2 and out.shape[1] == 1):
        return torch.where(out.reshape(-1) >= 0, 1.0, -1.0).numpy()
    return out.argmax(dim=-1).numpy()


@_holding_model
def accuracy(model: "nn.Module", X: Any, y: Any, *, predict: Optional[Callable] = None,
             batch_size: int = 512) -> float:
    """Fraction of examples whose predicted label (`predict(outputs)`, default `default_predict`) equals y;
    the model runs in eval mode."""
    y = np.asarray(y)
    labels = np.asarray((predict or default_predict)(_outputs(model, _as_tensor(X), batch_size)))
    if labels.shape != y.shape:
        raise ValueError(f"predict: {labels.shape} labels for y of shape {y.shape}")
    return float(np.mean(labels == y))


def default_loss(out: "torch.Tensor", y: "torch.Tensor") -> "torch.Tensor":
    """MSE on a scalar output (y as float), cross-entropy on several outputs (y as class indices)."""
    if out.dim() == 1 or (out.dim() == 2 and out.shape[1] == 1):
        return torch.mean((out.reshape(-1) - y.to(out.dtype)) ** 2)
    return nn.functional.cross_entropy(out, y.long())


def _freeze_queries_keys(layers, pairs):
    """Gradient masks: queries and keys (in_proj rows 0:2E, q/k_proj_weight, bias_k) get none, nor do the
    silenced heads' out_proj columns, so the optimiser never moves them."""
    masks = {}
    for m in layers:
        e = m.out_proj.weight.shape[0]
        for name in ("in_proj_weight", "in_proj_bias"):
            p = getattr(m, name, None)
            if p is not None:
                mk = torch.ones_like(p)
                mk[:2 * e] = 0.0
                masks[p] = mk
        for name in ("q_proj_weight", "k_proj_weight", "bias_k"):
            p = getattr(m, name, None)
            if p is not None:
                masks[p] = torch.zeros_like(p)
    for l, h in pairs:
        w = layers[l].out_proj.weight
        d = w.shape[1] // layers[l].num_heads
        mk = masks.setdefault(w, torch.ones_like(w))
        mk[:, h * d:(h + 1) * d] = 0.0
    return masks


@_holding_model
def refit(model: "nn.Module", X_train: Any, y_train: Any, *, silenced: Sequence[Head] = (), steps: int = 200,
          lr: float = 0.01, loss: Optional[Callable] = None,
          layers: Optional[Sequence["nn.Module"]] = None) -> "nn.Module":
    """A copy of the model with heads silenced and everything but the attention's queries and keys re-fitted.

    The copy (``copy.deepcopy``; the model itself is not touched) has the ``silenced`` heads removed (as in
    `ablate`, permanently), then ``steps`` full-batch Adam steps (learning rate ``lr``) on ``loss(model(X), y)``
    (default `default_loss`) train the value and output projections, the readout and every other parameter,
    while the query and key projections stay frozen (gradient masks) — the setting of the theory, which
    integrates the value and readout weights out at fixed attention. Runs in eval mode (no dropout), full batch:
    deterministic.

    Returns
    -------
    torch.nn.Module
        The re-fitted copy.
    """
    if not (isinstance(steps, (int, np.integer)) and steps >= 0):
        raise ValueError(f"steps: expected a non-negative integer, got {steps!r}")
    idx = {id(m): k for k, m in enumerate(model.modules())}
    orig = find_layers(model, layers)
    for k, m in enumerate(orig):
        if id(m) not in idx:
            raise ValueError(f"layers[{k}] is not a module of model")
    fit = copy.deepcopy(model)
    mods = list(fit.modules())
    fl = [mods[idx[id(m)]] for m in orig]
    pairs = _head_pairs(list(silenced), _head_counts(fl), "silenced")
    _silence(fl, pairs)
    masks = _freeze_queries_keys(fl, pairs)
    params = [p for p in fit.parameters() if p.requires_grad]
    hooks = [p.register_hook(lambda g, mk=masks[p]: g * mk) for p in params if p in masks]
    dev = _device(fit)
    Xt, yt = _as_tensor(X_train).to(dev), torch.as_tensor(np.asarray(y_train)).to(dev)
    loss = loss or default_loss
    fit.eval()
    opt = torch.optim.Adam(params, lr=lr)
    try:
        with torch.enable_grad():
            for _ in range(steps):
                opt.zero_grad()
                loss(fit(Xt), yt).backward()
                opt.step()
    finally:
        for h in hooks:
            h.remove()
    return fit


@_holding_model
def measured_drop(model: "nn.Module", X_test: Any, y_test: Any, *, predict: Optional[Callable] = None,
                  layers: Optional[Sequence["nn.Module"]] = None, batch_size: int = 512) -> np.ndarray:
    """Test accuracy lost when each head alone is silenced in the model as trained (flat head order):
    accuracy(model) − accuracy(model with that head silenced), fractions."""
    mods = find_layers(model, layers)
    base = accuracy(model, X_test, y_test, predict=predict, batch_size=batch_size)
    out = []
    for k in range(sum(_head_counts(mods))):
        with ablate(model, [k], layers=mods):
            out.append(base - accuracy(model, X_test, y_test, predict=predict, batch_size=batch_size))
    return np.array(out)


@_holding_model
def refit_drop(model: "nn.Module", X_train: Any, y_train: Any, X_test: Any, y_test: Any, *, refit_steps: int = 200,
               lr: float = 0.01, loss: Optional[Callable] = None, predict: Optional[Callable] = None,
               layers: Optional[Sequence["nn.Module"]] = None, batch_size: int = 512) -> np.ndarray:
    """Test accuracy lost when each head alone is silenced and the rest re-fitted with queries and keys frozen
    (`refit`), against the same re-fit with no head silenced (so the extra steps themselves do not count):
    flat head order, fractions. The model is not changed."""
    mods = find_layers(model, layers)

    def refit_accuracy(silenced):
        fit = refit(model, X_train, y_train, silenced=silenced, steps=refit_steps, lr=lr, loss=loss, layers=mods)
        return accuracy(fit, X_test, y_test, predict=predict, batch_size=batch_size)

    base = refit_accuracy([])
    return np.array([base - refit_accuracy([k]) for k in range(sum(_head_counts(mods)))])


@_holding_model
def pruning_curve(model: "nn.Module", order: Sequence[Head], X_test: Any, y_test: Any, *, X_train: Any = None,
                  y_train: Any = None, refit_steps: int = 0, lr: float = 0.01, loss: Optional[Callable] = None,
                  predict: Optional[Callable] = None, layers: Optional[Sequence["nn.Module"]] = None,
                  batch_size: int = 512) -> np.ndarray:
    """Test accuracy with the first k heads of ``order`` silenced, k = 0 .. len(order) (an array of that length
    + 1): as trained (``refit_steps=0``) or each point re-fitted with queries and keys frozen (`refit`, on
    X_train/y_train). The model is not changed."""
    mods = find_layers(model, layers)
    order = list(order)
    if refit_steps and (X_train is None or y_train is None):
        raise ValueError("pruning_curve: refit_steps > 0 needs X_train and y_train (the re-fit's training set)")
    acc = []
    for k in range(len(order) + 1):
        if refit_steps:
            fit = refit(model, X_train, y_train, silenced=order[:k], steps=refit_steps, lr=lr, loss=loss,
                        layers=mods)
            acc.append(accuracy(fit, X_test, y_test, predict=predict, batch_size=batch_size))
        else:
            with ablate(model, order[:k], layers=mods):
                acc.append(accuracy(model, X_test, y_test, predict=predict, batch_size=batch_size))
    return np.array(acc)


# ------------------------------------------------------------------------------------------ head importance
def _theory_labels(y_train, y_test, target):
    """±1 labels for the theory: target(y) when given; y itself when it is ±1; the larger of two classes as +1;
    several classes are refused (the theory is for one scalar ±1 output)."""
    if target is not None:
        t, tt = (np.asarray(target(np.asarray(v)), dtype=float) for v in (y_train, y_test))
        if not (np.all(np.abs(t) == 1) and np.all(np.abs(tt) == 1)):
            raise ValueError("target: must map the labels to ±1")
        return t, tt
    yt, ytt = np.asarray(y_train), np.asarray(y_test)
    for name, v in (("y_train", yt), ("y_test", ytt)):  # NaN ≠ NaN: np.unique would count each as a class
        if v.dtype.kind in "fc" and not np.all(np.isfinite(v)):
            i = int(np.flatnonzero(~np.isfinite(v.ravel()))[0])
            raise ValueError(f"{name}: label {v.ravel()[i]} at index {i}; labels must be finite (class labels, or "
                             "±1)")
    classes = np.unique(np.concatenate([yt.ravel(), ytt.ravel()]))
    if len(classes) > 2:
        raise ValueError(f"y_train/y_test: {len(classes)} classes, but the theory describes one scalar ±1 target; "
                         "pass target= mapping the labels to ±1 (e.g. one class against the rest: "
                         "target=lambda y: np.where(y == 3, 1.0, -1.0))")
    if set(classes.tolist()) <= {-1, 1}:
        return yt.astype(float), ytt.astype(float)
    hi = classes.max()
    return np.where(yt == hi, 1.0, -1.0), np.where(ytt == hi, 1.0, -1.0)


# The grids `head_importance` selects N and T from when they are not given (docs/python.md, "Choosing N and T for
# head importance"); attnmech._importance owns them.
SELECT_WIDTHS = _importance.SELECT_WIDTHS
SELECT_TEMPERATURES = _importance.SELECT_TEMPERATURES
# A head_importance expected to take longer than this (seconds, from `head_importance_cost`) warns with its ETA.
COST_WARN_SECONDS = 60.0


class CostWarning(AttnmechWarning):
    """`head_importance` is expected to take long: the message gives the estimate, its parts and an ETA."""


@contextlib.contextmanager
def one_thread(enabled=True):
    """BLAS (the process's OpenBLAS: attnmech's, NumPy's and, with Debian's packages, torch's) and torch's own
    intra-op threads at one for the block, whatever OPENBLAS_NUM_THREADS or torch.set_num_threads say; both are
    process-wide and restored on exit. Their reductions then add in one order: the same bits on every machine
    thread count (measured: torch's float32 attention differs in its last bits between OPENBLAS_NUM_THREADS=1
    and 2, and so did the theory's U)."""
    if not enabled:
        yield
        return
    was = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with blas_rule(numpy_too=True, force=True):
            yield
    finally:
        torch.set_num_threads(was)


def _select_width_temperature(X0, att, y, *, readout, variances, widths, temperature, seed, threads,
                              check_rows=True):
    """(width, temperature, info) by `attnmech._importance.select_width_temperature` (the one-standard-error rule
    on a validation share of the training set) from ξ of the model's attention."""
    s0 = 1.0 if variances is None else float(np.asarray(variances, dtype=float)[0])
    xi = xi_from_attention(X0, att, readout=readout, s0=s0, check_rows=check_rows)
    return _importance.select_width_temperature(xi, y, [a.shape[1] for a in att], widths=widths,
                                                temperature=temperature, variances=variances, threads=threads,
                                                seed=seed)


def _pruning_curves(ranking, accuracy_of, *, random_orders, seed):
    """Accuracy along cumulative pruning in `ranking` order and in `random_orders` random orders, for each mode
    of ``accuracy_of`` ({mode: silenced heads → test accuracy})."""
    n = len(ranking)
    rng = np.random.default_rng(seed)
    orders = np.array([rng.permutation(n) for _ in range(random_orders)], dtype=np.int64).reshape(random_orders, n)
    out = {"removed": np.arange(n + 1, dtype=float), "random_orders": orders}
    for mode, acc in accuracy_of.items():
        curve = lambda order: np.array([acc([int(k) for k in order[:j]]) for j in range(n + 1)])  # noqa: E731
        out[f"ranking_{mode}"] = curve(ranking)
        rand = np.array([curve(o) for o in orders]).reshape(random_orders, n + 1)
        out[f"random_{mode}"] = rand
        if random_orders:
            out[f"random_{mode}_mean"] = rand.mean(axis=0)
            out[f"random_{mode}_se"] = (rand.std(axis=0, ddof=1) / np.sqrt(random_orders) if random_orders > 1
                                        else np.zeros(n + 1))
    return out


def _accuracy_functions(model, data, *, refit_steps, fit_args):
    """{mode: silenced heads → test accuracy}: "trained" (ablate) and, when refit_steps > 0, "refit" (`refit`,
    each set of silenced heads fitted once: the drops and every pruning curve share the fits)."""
    X_train, y_train, X_test, y_test = data
    kw = {"predict": fit_args["predict"], "batch_size": fit_args["batch_size"]}
    mods, cache = fit_args["layers"], {}

    def trained(silenced):
        with ablate(model, silenced, layers=mods):
            return accuracy(model, X_test, y_test, **kw)

    def refitted(silenced):
        key = frozenset(silenced)
        if key not in cache:
            fit = refit(model, X_train, y_train, silenced=sorted(key), steps=refit_steps, lr=fit_args["lr"],
                        loss=fit_args["loss"], layers=mods)
            cache[key] = accuracy(fit, X_test, y_test, **kw)
        return cache[key]

    return {"trained": trained, **({"refit": refitted} if refit_steps else {})}


@_holding_model
def head_importance(model: "nn.Module", X_train: Any, y_train: Any, X_test: Any, y_test: Any, *,
                    predict: Optional[Callable] = None, layers: Optional[Sequence["nn.Module"]] = None,
                    widths: Any = None, temperature: Optional[float] = None, refit_steps: int = 200,
                    refit_lr: float = 0.01, loss: Optional[Callable] = None, readout: str = "last",
                    target: Optional[Callable] = None, quantity: Optional[str] = None, random_orders: int = 3,
                    seed: int = 0, variances: Optional[Sequence[float]] = None, threads: int = 0,
                    batch_size: int = 512, deterministic: bool = True, residual: Any = None,
                    layer_norm: bool = True) -> "HeadImportance":
    """Which heads a trained torch model needs: the theory's per-head quantities next to two measured ablations,
    and pruning curves.

    Parameters
    ----------
    model : torch.nn.Module
        The trained model (not changed; evaluated in eval mode). Its attention layers as in `attention`.
    X_train, y_train, X_test, y_test : array_like or tensors
        Model inputs (batch first) and labels (what ``predict`` returns: ±1 for a scalar output, class indices
        for several outputs).
    predict : callable, optional
        Model outputs → labels (default `default_predict`: the sign of a scalar output, argmax over several).
    layers : sequence of modules, optional
        The attention modules when they are not ``nn.MultiheadAttention`` (call order).
    widths, temperature : optional
        The theory's W_0..W_L (a number: all) and T. None: chosen on a validation quarter of the training set (the
        theory built on the other three quarters) by the one-standard-error rule of
        `attnmech._importance.select_width_temperature` over SELECT_WIDTHS × SELECT_TEMPERATURES.
    refit_steps, refit_lr, loss
        The re-fit of `refit_drop` (Adam, full batch; 0 skips it: `refit_drop` is then NaN). ``loss``: see `refit`.
    readout : {"last", "first", "mean"}
        The token the model reads out, for the theory.
    target : callable, optional
        Labels → ±1 for the theory, which describes one scalar ±1 output. Default: ±1 labels as they are; two
        classes with the larger as +1; several classes are refused (give e.g. a one-vs-rest ``target``).
    quantity : str, optional
        The theory quantity that orders `ranking` (`attnmech._importance.QUANTITIES`; default its
        DEFAULT_QUANTITY).
    random_orders, seed
        Random pruning orders drawn for the curves (NumPy Generator ``seed``; also the validation split and the
        bootstrap of the intervals).
    variances, threads
        As for `attnmech.Theory`.
    deterministic : bool
        Run BLAS and torch on one thread for the call (`one_thread`): the same bits on every thread count and
        OPENBLAS_NUM_THREADS. False leaves both as they are (faster on many cores; last bits may then differ).
    residual, layer_norm
        As for `theory_attention` (3.9): residual connections enter the theory as an identity head per layer
        (found in nn.TransformerEncoderLayer; ``residual=True`` for ones written by hand), LayerNorms as per-token
        scales. The identity heads are not ranked; ``residual=False, layer_norm=False`` is 3.7's theory.

    Returns
    -------
    HeadImportance

    Warns
    -----
    CostWarning
        When the estimate (`head_importance_cost`) exceeds COST_WARN_SECONDS, before the long part starts.
    AttnmechWarning
        When a theory solve fell back (see ``HeadImportance.notes``).
    """
    mods = find_layers(model, layers)
    labels = _theory_labels(y_train, y_test, target)
    o = {"predict": predict, "widths": widths, "temperature": temperature, "refit_steps": refit_steps,
         "lr": refit_lr, "loss": loss, "readout": readout, "quantity": quantity, "random_orders": random_orders,
         "seed": seed, "variances": variances, "threads": threads, "batch_size": batch_size, "layers": mods,
         "residual": residual, "layer_norm": layer_norm}
    was = model.training
    model.eval()
    try:
        with one_thread(deterministic):
            return _head_importance(model, (X_train, y_train, X_test, y_test), labels, o)
    finally:
        model.train(was)


class _Clock:
    def __init__(self):
        self.seconds, self.t0 = {}, time.perf_counter()

    def lap(self, name):
        t = time.perf_counter()
        self.seconds[name], self.t0 = t - self.t0, t


def _head_importance(model, data, labels, o):
    """head_importance's work, the model in eval mode and the threads set."""
    X_train, y_train, X_test, y_test = data
    mods, clock = o["layers"], _Clock()
    att, X0, res = theory_attention(model, X_train, layers=mods, residual=o["residual"],
                                    layer_norm=o["layer_norm"], batch_size=o["batch_size"], warn=False)
    att_t, X0t, _ = theory_attention(model, X_test, layers=mods, residual=res, layer_norm=o["layer_norm"],
                                     batch_size=o["batch_size"], warn=False)
    o["skip"] = res
    o["check_rows"] = not (o["layer_norm"] and any(_encoder_layer_of(model, m) is not None for m in mods))
    parts = warn_model_parts(model, mods, _as_tensor(X_train)[:2], modelled=any(res))
    clock.lap("attention")
    cost = _estimate(model, data, X0, att, labels[0], o)
    _warn_cost(cost)
    clock.lap("cost")
    widths, temperature, sel = o["widths"], o["temperature"], None
    if widths is None or temperature is None:
        widths, temperature, sel = _select_width_temperature(
            X0, att, labels[0], readout=o["readout"], variances=o["variances"], widths=widths,
            temperature=temperature, seed=o["seed"], threads=o["threads"], check_rows=o["check_rows"])
        clock.lap("select")
    q = theory_head_quantities(X0, att, labels[0], X0t, att_t, labels[1], readout=o["readout"], widths=widths,
                               temperature=temperature, variances=o["variances"], threads=o["threads"],
                               quantity=o["quantity"], seed=o["seed"], skip=o["skip"], check_rows=o["check_rows"])
    clock.lap("theory")
    acc = _accuracy_functions(model, data, refit_steps=o["refit_steps"], fit_args=_fit_args(o))
    H = sum(_head_counts(mods))
    trained_acc = acc["trained"]([])
    md = np.array([trained_acc - acc["trained"]([k]) for k in range(H)])
    clock.lap("measured")
    rd = (np.array([acc["refit"]([]) - acc["refit"]([k]) for k in range(H)]) if o["refit_steps"]
          else np.full(H, np.nan))
    clock.lap("refit")
    pruning = _pruning_curves(q["ranking"], acc, random_orders=o["random_orders"], seed=o["seed"])
    clock.lap("pruning")
    settings = {"widths": widths, "temperature": temperature, "refit_steps": o["refit_steps"],
                "readout": o["readout"], "seed": o["seed"]}
    return HeadImportance(q, md, rd, pruning, mods, {"trained": trained_acc, "theory": float(q["accuracy"])},
                          settings, clock.seconds, parts, {"cost": cost, "selection": sel})


def _fit_args(o):
    return {"lr": o["lr"], "loss": o["loss"], "predict": o["predict"], "layers": o["layers"],
            "batch_size": o["batch_size"]}


def _refit_count(H, refit_steps, random_orders):
    """Re-fits head_importance runs, at most: the all-heads one and one per head (the drops), then along the ranking
    the sets of 2..H heads, along each random order 2..H − 1 (its first head and the full set are fitted already);
    fewer when orders share a prefix set (each set is fitted once)."""
    if not refit_steps:
        return 0
    return 1 + H + max(H - 1, 0) + random_orders * max(H - 2, 0)


def _estimate(model, data, X0, att, y_th, o):
    """`head_importance_cost`'s numbers from the model's attention (X0, att) and theory labels."""
    s0 = 1.0 if o["variances"] is None else float(np.asarray(o["variances"], dtype=float)[0])
    xi = xi_from_attention(X0, att, readout=o["readout"], s0=s0, check_rows=o.get("check_rows", True))
    heads = [a.shape[1] for a in att]
    selecting = o["widths"] is None or o["temperature"] is None
    grid = ((len(SELECT_WIDTHS) if o["widths"] is None else 1,
             len(SELECT_TEMPERATURES) if o["temperature"] is None else 1) if selecting else (0, 0))
    N = o["widths"] if o["widths"] is not None else 10.0
    T = o["temperature"] if o["temperature"] is not None else 0.1
    cost = _importance.theory_cost(xi, y_th, heads, widths=N, temperature=T, variances=o["variances"],
                                   threads=o["threads"], select_grid=grid)
    n = _refit_count(sum(heads), o["refit_steps"], o["random_orders"])
    step = 0.0
    if n:
        X_train, y_train = data[0], data[1]
        t0 = time.perf_counter()
        refit(model, X_train, y_train, steps=1, lr=o["lr"], loss=o["loss"], layers=o["layers"])
        step = time.perf_counter() - t0
    cost.update(refits=n, seconds_per_refit_step=step, seconds_refit=n * o["refit_steps"] * step)
    cost["seconds_total"] = cost["seconds"] + cost["seconds_refit"]
    return cost


def _warn_cost(cost):
    total = cost["seconds_total"]
    if not total > COST_WARN_SECONDS:
        return
    eta = time.strftime("%H:%M", time.localtime(time.time() + total))
    s = cost["solves"]
    warnings.warn(
        f"attnmech.torch.head_importance: expected to take about {_duration(total)} (ETA {eta}): the theory "
        f"{_duration(cost['seconds'])} ({cost['paths']} paths, {cost['u_entries']} entries of U, "
        f"{s['select']} + {s['full']} + {s['heads']} solves at {cost['seconds_per_iteration']:.3g} s per Newton "
        f"iteration; up to {_duration(cost['seconds_max'])} if every solve runs to its cap), {cost['refits']} "
        f"re-fits {_duration(cost['seconds_refit'])}. Fewer heads or examples, given widths/temperature (no "
        "selection grid), refit_steps=0 or random_orders=0 shorten it.", CostWarning, stacklevel=5)


def _duration(s):
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


@_holding_model
def head_importance_cost(model: "nn.Module", X_train: Any, y_train: Any, *, layers=None, widths: Any = None,
                         temperature: Optional[float] = None, refit_steps: int = 200, refit_lr: float = 0.01,
                         loss: Optional[Callable] = None, readout: str = "last", target: Optional[Callable] = None,
                         random_orders: int = 3, variances=None, threads: int = 0, batch_size: int = 512,
                         residual: Any = None, layer_norm: bool = True) -> dict:
    """What `head_importance` with these arguments will cost, before calling it (it makes the same estimate and
    warns, `CostWarning`, above COST_WARN_SECONDS): "paths" (Π H_l), "u_entries" (the Newton unknowns), "solves",
    "seconds_per_iteration" and "seconds_per_solve" (measured: one Newton iteration and the fixed part of a solve
    on this problem), "seconds" / "seconds_max" (the theory: typical iteration counts / every solve at its cap),
    "refits", "seconds_per_refit_step" (measured: one re-fit of one step), "seconds_refit" and "seconds_total".
    Costs a forward pass, two capped solves and a one-step re-fit."""
    mods = find_layers(model, layers)
    y_th, _ = _theory_labels(y_train, y_train, target)
    o = {"widths": widths, "temperature": temperature, "refit_steps": refit_steps, "lr": refit_lr, "loss": loss,
         "readout": readout, "random_orders": random_orders, "variances": variances, "threads": threads,
         "layers": mods}
    was = model.training
    model.eval()
    try:
        with one_thread():
            att, X0, _ = theory_attention(model, X_train, layers=mods, residual=residual, layer_norm=layer_norm,
                                          batch_size=batch_size, warn=False)
            o["check_rows"] = not (layer_norm and any(_encoder_layer_of(model, m) is not None for m in mods))
            return _estimate(model, (X_train, y_train), X0, att, y_th, o)
    finally:
        model.train(was)


class HeadImportance:
    """What `head_importance` found. Per-head arrays are in flat head order (layer 1 first, PyTorch's head order
    within a layer); drops are test-accuracy fractions (0.05 = 5 points).

    Attributes
    ----------
    score, predicted_drop : numpy.ndarray
        The theory's head score (`Theory.head_scores`, max 1 over all heads) and its predicted accuracy drop
        when the head's paths are removed and the theory re-solved.
    predicted_drop_interval : numpy.ndarray, shape (H_tot, 2)
        A 95 % interval of each predicted drop: paired bootstrap over the test examples
        (`attnmech._importance.bootstrap_drops`). It counts the test set's sampling only, not the training set's
        nor the choice of N and T.
    measured_drop, refit_drop : numpy.ndarray
        Measured in the torch model: the head silenced as trained; silenced with values, output projections,
        readout and other parameters re-fitted, queries and keys frozen (NaN when refit_steps = 0).
    ranking : numpy.ndarray of int
        Flat head indices in the order to prune them (least important first), by ``quantity``.
    distinct : numpy.ndarray of bool or None
        Per pair of neighbours in `ranking`: whether the test data tell their predicted drops apart (the
        bootstrap interval of their paired difference excludes 0); None unless ``quantity`` is predicted_drop.
    groups : list of list of int or None
        `ranking` cut where neighbours are told apart: heads within a group cannot be ordered by the data.
    confident : bool or None
        Every neighbour pair of `ranking` is told apart (a single group per head).
    quantity : str
        The theory quantity `ranking` sorts by.
    converged : bool
        Every theory solve met the default tolerance; else ``notes`` says what fell back and how.
    notes : list of str
        Fallbacks (a solve accepted at the looser tolerance, the GP limit, cells of the selection grid skipped).
    theory : dict
        Every per-head quantity `attnmech.theory_head_quantities` returned.
    heads : list of (int, int)
        (layer 1-based, head 0-based) of each flat index; ``labels`` the same as "L1H0" strings.
    layers : list of dict
        Per attention layer: ``layer`` (1-based), ``heads``, ``module`` (its type name).
    accuracy : dict
        Test accuracy "trained" (the torch model) and "theory" (the theory's, every head).
    spearman : dict
        Spearman correlations of "score"/"predicted_drop" with "measured_drop"/"refit_drop" (keys like
        "score~refit_drop"), overall and per layer ("...@L1").
    pruning : dict
        ``removed`` (0..H_tot), ``ranking_trained`` / ``ranking_refit`` (accuracy with the first k heads of
        `ranking` silenced), ``random_orders`` and ``random_trained`` / ``random_refit`` (one row per order) with
        their ``_mean`` and ``_se``.
    selection : dict or None
        The (N, T) grid when they were chosen (`attnmech._importance.select_width_temperature`'s info).
    cost : dict
        The estimate made before the work (`head_importance_cost`).
    settings, seconds : dict
        widths, temperature (as used, chosen or given), refit_steps, readout; the time of each part.
    model_parts : list of str
        What the model has beyond the theory's network (see `ModelPartsWarning`).
    """

    def __init__(self, q, measured, refit, pruning, mods, acc, settings, seconds, parts, extras=None):
        counts = _head_counts(mods)
        extras = extras or {}
        self.theory = q
        self.score, self.predicted_drop = np.asarray(q["score"], float), np.asarray(q["predicted_drop"], float)
        self.predicted_drop_interval = np.asarray(q["predicted_drop_interval"], float)
        self.measured_drop, self.refit_drop = np.asarray(measured, float), np.asarray(refit, float)
        self.ranking, self.quantity = np.asarray(q["ranking"], dtype=np.int64), q["quantity"]
        self.distinct, self.confident = q["distinct"], q["confident"]
        self.groups = None if self.distinct is None else indistinct_groups(self.ranking, self.distinct)
        self.selection, self.cost = extras.get("selection"), extras.get("cost")
        self.notes = list((self.selection or {}).get("notes", [])) + list(q["notes"])
        self.converged = bool(q["converged"])
        self.heads = [(l + 1, h) for l, H in enumerate(counts) for h in range(H)]
        self.labels = [f"L{l}H{h}" for l, h in self.heads]
        self.layers = [{"layer": l + 1, "heads": H, "module": type(m).__name__}
                       for l, (H, m) in enumerate(zip(counts, mods))]
        self.accuracy, self.pruning, self.settings, self.seconds = acc, pruning, settings, seconds
        self.model_parts = parts
        self.spearman = self._correlations(np.repeat(np.arange(1, len(counts) + 1), counts))

    def _correlations(self, layer):
        out = {}
        for a in ("score", "predicted_drop"):
            for b in ("measured_drop", "refit_drop"):
                x, y = getattr(self, a), getattr(self, b)
                if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
                    continue  # no re-fit: no correlation with it
                out[f"{a}~{b}"] = spearman(x, y)
                for l in np.unique(layer):
                    out[f"{a}~{b}@L{l}"] = spearman(x[layer == l], y[layer == l])
        return out

    def _group_of_head(self):
        """Per flat head: the index of its group in `groups` (0: the least important), None without groups."""
        if self.groups is None:
            return None
        out = np.zeros(len(self.heads), dtype=np.int64)
        for g, members in enumerate(self.groups):
            out[members] = g
        return out

    def __repr__(self):
        extra = "" if self.converged else " converged=False"
        return (f"<attnmech.torch.HeadImportance heads={len(self.heads)} quantity={self.quantity!r} "
                f"accuracy trained={self.accuracy['trained']:.4f} theory={self.accuracy['theory']:.4f} "
                f"confident={self.confident}{extra}>")

    def to_dict(self) -> dict:
        """The results document `save` writes, without its report block (JSON-ready: lists, numbers, strings;
        NaN as None)."""
        theory = {k: v for k, v in self.theory.items() if isinstance(v, np.ndarray)}
        iv = self.predicted_drop_interval
        err = np.maximum(iv[:, 1] - self.predicted_drop, self.predicted_drop - iv[:, 0])
        return _clean({"task": "head_importance", "estimator": "attnmech.torch", "seed": self.settings.get("seed"),
                       "status": "ok" if self.converged else "warning", "labels": self.labels,
                       "layer": [l for l, _ in self.heads], "head": [h for _, h in self.heads],
                       "score": self.score, "predicted_drop": self.predicted_drop,
                       "predicted_drop_interval": iv, "predicted_drop_err": err,
                       "measured_drop": self.measured_drop, "refit_drop": self.refit_drop,
                       "ranking": self.ranking, "quantity": self.quantity, "distinct": self.distinct,
                       "group": self._group_of_head(), "confident": self.confident, "converged": self.converged,
                       "notes": self.notes, "accuracy": self.accuracy,
                       "spearman": self.spearman, "pruning": self.pruning, "theory": theory,
                       "selection": self.selection, "cost": self.cost,
                       "settings": self.settings, "seconds": self.seconds, "model_parts": self.model_parts,
                       "layers": self.layers})

    def save(self, dir: Union[str, "os.PathLike"]) -> str:
        """Write a results directory the report library draws: results.json (`to_dict` and a report spec),
        ``pruning.svg`` (test accuracy against heads pruned: `ranking` order and random orders, as trained and
        re-fitted), ``drops.svg`` (per-head predicted drops with their intervals, measured and re-fitted drops),
        ``predicted_vs_measured.svg`` (each head's predicted drop with its interval against its measured and
        re-fitted drops, the line y = x), and the .npy exports of the arrays (as ``attnmech run --out`` writes).
        Redraw with ``attnmech plot DIR``.

        Returns
        -------
        str
            The directory written.
        """
        from ._run import load
        doc = self.to_dict()
        doc["report"] = _report_spec(np.isfinite(self.refit_drop).all(), len(self.pruning["random_orders"]) > 0)
        os.makedirs(dir, exist_ok=True)
        path = os.path.join(dir, "results.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        results = load(path)
        try:
            results.save(dir)
        finally:
            results.close()
        return os.fspath(dir)


def _clean(v):
    """JSON-ready: dicts, lists, numbers (NaN → None), strings, booleans."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return [_clean(x) for x in (v.astype(np.int64) if v.dtype == bool else v).tolist()]
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (float, np.floating)):
        return None if not np.isfinite(v) else float(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _report_spec(refit, random):
    """The plots and summary of a head-importance document (docs/abi.md, "report spec")."""
    modes = [("trained", "as trained")] + ([("refit", "re-fitted")] if refit else [])
    series = []
    for mode, text in modes:
        series.append({"label": f"theory order, {text}", "x": "pruning.removed", "y": f"pruning.ranking_{mode}",
                       "style": "line+points"})
        if random:
            series.append({"label": f"random orders, {text}", "x": "pruning.removed",
                           "y": f"pruning.random_{mode}_mean", "yerr": f"pruning.random_{mode}_se",
                           "style": "dashed"})
    drops = [{"label": "predicted (theory; bar: its 95 % interval)", "y": "predicted_drop",
              "yerr": "predicted_drop_err"},
             {"label": "measured, as trained", "y": "measured_drop"}]
    if refit:
        drops.append({"label": "measured, re-fitted", "y": "refit_drop"})
    scatter = [{"label": "as trained", "x": "measured_drop", "y": "predicted_drop", "yerr": "predicted_drop_err",
                "style": "points"}]
    if refit:
        scatter.append({"label": "re-fitted", "x": "refit_drop", "y": "predicted_drop",
                        "yerr": "predicted_drop_err", "style": "points"})
    columns = [{"header": "head", "path": "labels.*"},
               {"header": "predicted", "path": "predicted_drop.*", "format": "%.4f"},
               {"header": "low", "path": "predicted_drop_interval.*.0", "format": "%.4f"},
               {"header": "high", "path": "predicted_drop_interval.*.1", "format": "%.4f"},
               {"header": "measured", "path": "measured_drop.*", "format": "%.4f"}]
    if refit:
        columns.append({"header": "re-fitted", "path": "refit_drop.*", "format": "%.4f"})
    columns.append({"header": "score", "path": "score.*", "format": "%.4f"})
    return {"plots": [
        {"file": "pruning", "kind": "lines", "title": "Pruning heads", "x_label": "heads silenced",
         "y_label": "test accuracy", "series": series},
        {"file": "drops", "kind": "bars", "title": "Accuracy drop per head", "categories": "labels",
         "x_label": "head (layer, index)", "y_label": "test accuracy drop (fraction)", "series": drops},
        {"file": "predicted_vs_measured", "kind": "scatter", "title": "Predicted vs measured drop per head",
         "x_label": "measured test accuracy drop (fraction)",
         "y_label": "predicted drop (theory; bar: covers its 95 % interval)", "diagonal": True, "series": scatter}],
        "summary": [
            {"kind": "values", "title": "Test accuracy", "items": [
                {"label": "trained model", "path": "accuracy.trained", "format": "%.4f"},
                {"label": "theory", "path": "accuracy.theory", "format": "%.4f"}]},
            {"kind": "table", "title": "Heads (drops: test-accuracy fractions; low/high: the predicted drop's "
                                       "95 % interval)", "columns": columns}]}
