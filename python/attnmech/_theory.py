"""attnmech.Theory: the attention-path theory of one problem (theory.h) — action, Newton solve, predictions,
kernels and metrics — plus the path inputs ξ from attention heads (paths.h) or from attention matrices."""
from __future__ import annotations

import ctypes
import math
import os
import warnings
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

import numpy as np

from . import _args, _html, _lib
from ._core import Context, Handle, call_interruptibly, check, holding, with_blas_rule
from ._lib import core
from .errors import AttnmechWarning, DomainError, NotConverged, error_for

_dp = _lib.c_double_p
Widths = Union[float, Sequence[float]]  # a number (every W_l) or W_0..W_L
UArg = Union["Solution", Sequence["ArrayLike"], "ArrayLike"]  # a Solution, a list U_1..U_L, or U_1 alone
Progress = Union[bool, Callable[[float, float, str], object]]


def _ptr(a):
    return a.ctypes.data_as(_dp)


def _f64(a, order, name, ndim=None):
    """Real float64 in the wanted order: the caller's array itself when it already is, else one converted copy
    (complex and non-numeric arrays are refused, not cast)."""
    return _args.f64_array(a, name, order, ndim)


def make_arch(heads, widths=None, variances=None):
    """An am_arch from heads [H_1..H_L], widths [W_0..W_L] (a number: every W_l) and variances
    [s_0..s_L, s_a] (default all 1)."""
    heads = _args.heads(heads)
    L = len(heads)
    a = _lib.Arch()
    core.am_arch_init(ctypes.byref(a), ctypes.sizeof(a))
    a.layers = L
    for l, h in enumerate(heads):
        a.heads[l] = h
    if widths is not None:
        w = _args.reals(widths, "widths (W_0..W_L)", sizes=(1, L + 1))
        if w.size == 1:
            w = np.full(L + 1, w[0])
        for i, x in enumerate(w):
            a.widths[i] = x
    if variances is not None:
        v = _args.reals(variances, "variances (s_0..s_L, s_a)", sizes=(L + 2,))
        for i, x in enumerate(v):
            a.variances[i] = x
    return a


def _heads_array(arch, N0, W=None, Q=None, K=None):
    """am_head[Σ H_l] (layer 1 first) and the Fortran-order matrices they borrow. W: one N0×N0 matrix per head,
    [key side i, query side j] (logit[s,t] = x_sᵀ W x_t); or Q, K: one G×N0 matrix each per head."""
    n = sum(arch.heads[l] for l in range(arch.layers))
    heads = (_lib.Head * n)()
    keep = []
    if W is not None:
        if len(W) != n:
            raise ValueError(f"W: one matrix per head ({n}), got {len(W)}")
        for k, w in enumerate(W):
            w = _f64(w, "F", "W", 2)
            if w.shape != (N0, N0):
                raise ValueError(f"W[{k}]: shape {w.shape}, expected ({N0}, {N0})")
            keep.append(w)
            heads[k].struct_size = ctypes.sizeof(_lib.Head)
            heads[k].form = 0
            heads[k].W = _ptr(w)
    elif Q is not None and K is not None:
        if len(Q) != n or len(K) != n:
            raise ValueError(f"Q, K: one matrix each per head ({n})")
        for k, (q, kk) in enumerate(zip(Q, K)):
            q, kk = _f64(q, "F", "Q", 2), _f64(kk, "F", "K", 2)
            if q.shape != kk.shape or q.shape[1] != N0:
                raise ValueError(f"Q[{k}], K[{k}]: shapes {q.shape}, {kk.shape}; expected (G, {N0}) both")
            keep += [q, kk]
            heads[k].struct_size = ctypes.sizeof(_lib.Head)
            heads[k].form = 1
            heads[k].G = q.shape[0]
            heads[k].Q = _ptr(q)
            heads[k].K = _ptr(kk)
    else:
        raise ValueError("give W (bilinear heads) or both Q and K")
    return heads, keep


@with_blas_rule
def xi_from_heads(X: ArrayLike, *, heads: Sequence[int], W: Optional[Sequence[ArrayLike]] = None,
                  Q: Optional[Sequence[ArrayLike]] = None, K: Optional[Sequence[ArrayLike]] = None,
                  readout: str = "last", s0: float = 1.0, threads: int = 0) -> np.ndarray:
    """Path-transformed inputs ξ of examples X through fixed attention heads (am_xi).

    Parameters
    ----------
    X : array_like, shape (P, S, N0)
        The examples, token s of example μ at X[μ, s, :]; float64 C order is used without a copy.
    heads : sequence of int
        Heads per layer, [H_1, ..., H_L].
    W : sequence of array_like, shape (N0, N0) each
        Bilinear heads layer by layer (layer 1 first), W[i, j] with i on the key side:
        logit[s, t] = x_sᵀ W x_t. Or instead:
    Q, K : sequences of array_like, shape (G, N0) each
        Query/key heads: logit[s, t] = (K x_s)·(Q x_t)/√G.
    readout : {"last", "first", "mean"}
        The readout token.
    s0 : float
        The input variance s_0 (ξ is scaled by √(s_0/(N0·H_tot))).
    threads : int
        Threads (0 = all cores).

    Returns
    -------
    numpy.ndarray, shape (P, N0, H_tot), Fortran order
        ξ[μ, i, π] (π packs the heads mixed-radix, h_1 most significant).
    """
    X = _f64(X, "C", "X", 3)
    P, S, N0 = X.shape
    arch = make_arch(heads)
    arch.variances[0] = _args.real(s0, "s0")
    hs, keep = _heads_array(arch, N0, W, Q, K)
    H = core.am_arch_paths(ctypes.byref(arch))
    xi = np.empty((P, N0, H), order="F")
    ctx = Context(threads)
    try:
        check(core.am_xi(ctx.handle, ctypes.byref(arch), hs, _lib.READOUTS[readout], P, N0, S, _ptr(X), _ptr(xi)), ctx)
    finally:
        ctx.close()
    del keep
    return xi


def xi_from_attention(X: ArrayLike, attention: Sequence[ArrayLike], *, readout: str = "last",
                      s0: float = 1.0, check_rows: bool = True) -> np.ndarray:
    """Path-transformed inputs ξ from attention matrices (e.g. taken from a PyTorch model by hooks), in NumPy.

    Parameters
    ----------
    X : array_like, shape (P, S, N0)
        The inputs the first attention layer acts on (token s of example μ at X[μ, s, :]).
    attention : sequence of array_like, one per layer (layer 1 first), shape (P, H_l, S, S) each
        Attention weights in PyTorch's layout: attention[l][μ, h, t, s] is the weight query t gives key s (each
        row sums to 1), i.e. the transpose of the spec's Ω (rows = keys).
    readout : {"last", "first", "mean"}
        The readout token r.
    s0 : float
        The input variance s_0.
    check_rows : bool
        Refuse rows that do not sum to 1 (default). False (3.9) takes rows scaled on purpose, as
        `attnmech.torch.theory_attention` scales them for LayerNorm; negative weights are refused either way.

    Returns
    -------
    numpy.ndarray, shape (P, N0, H_tot), Fortran order
        ξ[μ, :, π] = √(s_0/(N0·H_tot)) X^μ A^μ_π with A_π = Ω^(1)_{h_1} ⋯ Ω^(L)_{h_L} r (h_1 most significant in π),
        the same as `xi_from_heads` for the heads that made the attention.
    """
    X = _f64(X, "C", "X", 3)
    P, S, N0 = X.shape
    if readout == "last":
        r = np.zeros(S); r[S - 1] = 1.0
    elif readout == "first":
        r = np.zeros(S); r[0] = 1.0
    elif readout == "mean":
        r = np.full(S, 1.0 / S)
    else:
        raise ValueError("readout: 'last', 'first' or 'mean'")
    A = np.broadcast_to(r, (P, 1, S))
    for l, a in reversed(list(enumerate(attention))):
        a = _f64(a, "C", f"attention[{l}]")
        if a.ndim != 4 or a.shape[0] != P or a.shape[2:] != (S, S):
            raise ValueError(f"attention[{l}]: expected shape ({P}, H, {S}, {S}), got {a.shape}")
        _check_rows_sum_to_one(a, l, check_rows)
        # (Ω_h v)[s] = Σ_t Ω_h[s, t] v[t] = Σ_t a[μ, h, t, s] v[t]; this layer's head becomes the major index
        A = np.einsum("mhts,mpt->mhps", a, A).reshape(P, -1, S)
    H = A.shape[1]
    xi = np.einsum("msi,mps->mip", X, A) * math.sqrt(_args.real(s0, "s0") / (N0 * H))
    return np.asfortranarray(xi)


def _check_rows_sum_to_one(a, l, sums=True):
    """Attention weights are a softmax over keys: each query's row sums to 1, or is all zeros (a silenced head, as
    `attnmech.torch.ablate` and the head-importance studies make it). Tolerance 1e-4 + S·1e-6: a float32 softmax
    (PyTorch's default) sums S terms each rounded to 2⁻²⁴ relative, so its rows are off by ≤ S·6e-8; a row of
    logits, a scaled row or a transpose misses by O(1)."""
    S = a.shape[-1]
    dev = np.abs(a.sum(axis=-1) - 1.0)
    dev[~np.any(a != 0, axis=-1)] = 0.0  # an all-zero row: a silenced head
    k = int(np.argmax(dev))
    if sums and dev.size and dev.flat[k] > 1e-4 + S * 1e-6:
        mu, h, t = np.unravel_index(k, dev.shape)
        raise ValueError(f"attention[{l}]: the row of example {mu}, head {h}, query {t} sums to "
                         f"{a[mu, h, t].sum():.6g}, not 1 (attention rows are softmax weights over the keys; "
                         "PyTorch's layout is [example, head, query, key])")
    if np.any(a < -1e-12):
        raise ValueError(f"attention[{l}]: negative weights (attention rows are softmax weights, ≥ 0)")


class Solution:
    """The result of `Theory.solve`.

    Attributes
    ----------
    U : list of numpy.ndarray
        The order parameters U_1 (H_tot × H_tot), ..., U_L (H_L × H_L).
    U_a : float
        The readout order parameter (closed form).
    action, energy, entropy : float
        S_code = (E + S_ent)/W_max and its two parts.
    iterations : int
    grad_max : float
        max |∂S/∂U| at the solution.
    grad_vech_norm, decrement : float
    hessian_min_eig : float
        Smallest eigenvalue of the vech Hessian (> 0 at a minimum).
    status : str
        "converged", "converged_roundoff" or "not_converged"; `code` is the library's status.
    """

    _NAMES = {_lib.AM_OK: "converged", _lib.AM_CONVERGED_ROUNDOFF: "converged_roundoff",
              _lib.AM_ERR_NOT_CONVERGED: "not_converged", _lib.AM_CANCELLED: "cancelled"}

    def __init__(self, U, rep):
        self.U = U
        self.U_a = rep.U_a
        self.action = rep.S_code
        self.energy = rep.energy
        self.entropy = rep.entropy
        self.iterations = int(rep.iterations)
        self.grad_max = rep.grad_max
        self.grad_vech_norm = rep.grad_vech_norm
        self.decrement = rep.decrement
        self.hessian_min_eig = rep.hessian_min_eig
        self.code = int(rep.status)
        self.status = self._NAMES.get(self.code, _lib.status_string(self.code))

    def __repr__(self):
        return f"<attnmech.Solution status={self.status} action={self.action:.10g} iterations={self.iterations}>"

    def _repr_html_(self):
        """Notebook view: status and the solve's scalars."""
        shapes = " ".join(f"{u.shape[0]}×{u.shape[1]}" for u in self.U)
        return _html.key_value_table("attnmech.Solution", [
            ("status", self.status), ("action (S_code)", self.action), ("energy", self.energy),
            ("entropy", self.entropy), ("U_a", self.U_a), ("iterations", self.iterations),
            ("grad_max", self.grad_max), ("hessian_min_eig", self.hessian_min_eig), ("U", shapes)])


class ActionValue:
    """The action at a point: S_code, energy, entropy, U_a, and grad (list of matrices, U layout) / hess
    (vech Hessian, n × n) when asked for."""

    def __init__(self, a, grad, hess):
        self.S_code, self.energy, self.entropy, self.U_a = a.S_code, a.energy, a.entropy, a.U_a
        self.grad, self.hess = grad, hess

    def __repr__(self):
        return f"<attnmech.ActionValue S_code={self.S_code:.10g} energy={self.energy:.10g} entropy={self.entropy:.10g}>"


class Theory(Handle):
    """The attention-path theory of one training set: the action S(U), its Newton minimiser, predictions,
    kernels and metrics (theory.h). Free it with ``close()`` or a ``with`` block (else when collected).

    Safe to share between threads: calls on one Theory run one at a time (each gives what it gives alone;
    `select` holds the theory for its whole grid), ``close()`` waits for a running call, and a call after
    ``close()`` raises ValueError. For parallel work give each thread its own Theory.

    Parameters
    ----------
    xi : array_like, shape (P, N0, H_tot)
        Path-transformed training inputs (`xi_from_heads`, `xi_from_attention`); float64 Fortran order is
        passed without a copy, anything else is converted once. The library keeps its own copy.
    y : array_like, shape (P,)
        Training labels (±1 for classification).
    heads : sequence of int
        Heads per layer [H_1..H_L] (∏ H_l = H_tot).
    widths : float or sequence of float
        W_0..W_L (a number: all equal).
    variances : sequence of float, optional
        s_0..s_L, s_a (default all 1).
    temperature : float
        T > 0.
    threads : int
        Threads of the library's loops (0 = all cores).
    progress : bool or callable
        Progress of `solve` (as in `attnmech.run`); default silent.
    """

    def __init__(self, xi: ArrayLike, y: ArrayLike, *, heads: Sequence[int], widths: Widths,
                 variances: Optional[Sequence[float]] = None, temperature: float, threads: int = 0,
                 progress: Progress = False, _defer: bool = False) -> None:
        from ._core import make_progress
        self._h = ctypes.c_void_p()
        self._ctx = None
        self._arch = make_arch(heads, widths, variances)
        self.L = self._arch.layers
        self.temperature = _args.real(temperature, "temperature")
        self.xi_test = None
        self.solution = None
        self.selection = None
        self._paths = None
        self._ctx = Context(threads, make_progress(progress))
        if not _defer:
            self._create(xi, y)

    @with_blas_rule
    def _create(self, xi, y):
        xi, y = _args.shaped(xi, "xi", "(P, N0, H_tot)", 3), _args.shaped(y, "y", "(P,)", 1)
        P, N0, H = xi.shape
        if y.shape[0] != P:
            raise ValueError(f"y: {P} labels expected (xi has P = {P}), got {y.shape[0]}")
        paths = core.am_arch_paths(ctypes.byref(self._arch))
        if H != paths:
            raise ValueError(f"xi: H_tot = {H} but heads {self.heads} make {paths} paths")
        y = _args.labels(y, "y")
        if not (xi.dtype == np.float64 and xi.flags.f_contiguous):
            # converting makes a copy beside the library's own: ask before making it (a broadcast view of a few
            # bytes can stand for gigabytes). What am_theory_create allocates (theory_memory.cpp, kMemHandle |
            # kMemValue: ξ and y copied, then Γ = K + T·I and ξ·L of one evaluation), plus the copy.
            doubles = 3.0 * P * N0 * H + float(P) * P + 3.0 * P
            check(core.am_memory_check(self._ctx.handle, 8.0 * doubles, f"Theory (xi of shape ({P}, {N0}, {H}) "
                                       "converted to float64 Fortran order, and the P × P kernel)".encode(), None),
                  self._ctx)
        xi, y = _f64(xi, "F", "xi", 3), _f64(y, "C", "y", 1)
        self.P, self.N0, self.H_tot = P, N0, H
        self.y = y.copy()
        with self._lock:
            check(core.am_theory_create(self._ctx.handle, ctypes.byref(self._h), ctypes.byref(self._arch), P, N0,
                                        _ptr(xi), _ptr(y), self.temperature), self._ctx)
            self._dims = [core.am_arch_dim(ctypes.byref(self._arch), l) for l in range(1, self.L + 1)]
            self._offsets = [core.am_theory_u_offset(self._h, l) for l in range(1, self.L + 1)]
            self._usize = core.am_theory_u_size(self._h)

    @classmethod
    def from_attention(cls, X: ArrayLike, attention: Sequence[ArrayLike], y: ArrayLike, *, readout: str = "last",
                       widths: Widths, variances: Optional[Sequence[float]] = None, temperature: float,
                       X_test: Optional[ArrayLike] = None, attention_test: Optional[Sequence[ArrayLike]] = None,
                       threads: int = 0, progress: Progress = False) -> Theory:
        """A Theory from inputs and per-head attention matrices (`xi_from_attention`).

        Parameters
        ----------
        X : array_like, shape (P, S, N0)
        attention : sequence of array_like, shape (P, H_l, S, S) per layer
            PyTorch layout [example, head, query, key], rows summing to 1.
        y : array_like, shape (P,)
        readout : {"last", "first", "mean"}
        widths, variances, temperature, threads, progress
            As for `Theory`.
        X_test, attention_test : optional
            Test inputs and their attention; their ξ is kept as ``theory.xi_test`` for `predict`/`accuracy`.
        """
        s0 = 1.0 if variances is None else float(_args.reals(variances, "variances (s_0..s_L, s_a)")[0])
        heads = [np.shape(a)[1] for a in attention]
        xi = xi_from_attention(X, attention, readout=readout, s0=s0)
        th = cls(xi, y, heads=heads, widths=widths, variances=variances, temperature=temperature,
                 threads=threads, progress=progress)
        if X_test is not None and attention_test is not None:
            th.xi_test = xi_from_attention(X_test, attention_test, readout=readout, s0=s0)
        return th

    @classmethod
    def from_problem(cls, dir: Union[str, os.PathLike], *, threads: int = 0, progress: Progress = False) -> Theory:
        """A Theory of the `npy` task's problem directory (docs/tasks.md; `read_problem`): ξ of X_train through
        its heads, its widths, variances and temperature; ξ of X_test (when present) as ``theory.xi_test``.
        ``theory.path_inputs(X)`` maps further inputs (e.g. a validation set for `select`) through the same
        heads. Then ``attnmech.run("npy", dir=dir, widths=[N], temperatures=[T])`` runs the task at a chosen
        (N, T)."""
        from ._problem import read_problem
        pr = read_problem(dir)
        heads = [int(h) for h in pr["heads"]]
        th = cls(np.empty((0, 1, 1)), [], heads=heads, widths=pr["widths"], variances=pr["variances"],
                 temperature=pr["temperature"], threads=threads, progress=progress, _defer=True)
        th._paths = _problem_paths(heads, pr["attention"], pr["readout"], pr["variances"][0])
        th._create(th.path_inputs(pr["X_train"]), pr["y_train"])
        if "X_test" in pr:
            th.xi_test = th.path_inputs(pr["X_test"])
        return th

    def path_inputs(self, X: ArrayLike) -> np.ndarray:
        """ξ of inputs X (P, S, N0) through the heads this theory was built from (`from_problem`)."""
        if getattr(self, "_paths", None) is None:
            raise ValueError("path_inputs: this Theory was built from ξ, not from heads (use xi_from_heads / "
                             "xi_from_attention with the model's heads)")
        return xi_from_heads(X, **self._paths)

    def __repr__(self):
        if not getattr(self, "_h", None):
            return "<attnmech.Theory (closed)>"
        w = self.widths
        widths = f"{w[0]:g}" if np.all(w == w[0]) else "[" + ", ".join(f"{x:g}" for x in w) + "]"
        sol = self.solution
        state = (f"solved: {sol.status}, {sol.iterations} iterations, action={sol.action:.6g}" if sol is not None
                 else "not solved")
        test = "" if self.xi_test is None else f" P_test={self.xi_test.shape[0]}"
        return (f"<attnmech.Theory P={self.P}{test} N0={self.N0} heads={self.heads} ({self.H_tot} paths) "
                f"widths={widths} T={self.temperature:g} {state}>")

    # ------------------------------------------------------------------ U sets (list of matrices ↔ flat buffer)
    def _flat(self, U):
        if isinstance(U, Solution):
            U = U.U
        if len(U) != self.L:
            raise ValueError(f"U: {self.L} matrices U_1..U_L expected, got {len(U)}")
        buf = np.empty(self._usize)
        for l, (u, d, off) in enumerate(zip(U, self._dims, self._offsets)):
            u = _f64(u, "C", f"U[{l}]")
            if u.shape != (d, d):
                raise ValueError(f"U[{l}]: shape {u.shape}, expected ({d}, {d})")
            buf[off:off + d * d] = u.ravel(order="F")
        return buf

    def _unflat(self, buf):
        return [buf[off:off + d * d].reshape((d, d), order="F").copy() for d, off in zip(self._dims, self._offsets)]

    def _U1(self, U):
        """U_1 (column-major buffer) of U (list, Solution), or of the last solution, or the GP point."""
        if U is None:
            U = self.solution.U if self.solution is not None else self.gp_point()
        elif isinstance(U, Solution):
            U = U.U
        if isinstance(U, (list, tuple)):
            U = U[0]
        u = _f64(U, "F", "U_1")
        if u.shape != (self.H_tot, self.H_tot):
            raise ValueError(f"U_1: shape {u.shape}, expected ({self.H_tot}, {self.H_tot})")
        return u

    def _handle(self):
        """The handle (callers hold the theory: Handle._using)."""
        return self._h

    def _is_open(self):
        return bool(getattr(self, "_h", None))

    # --------------------------------------------------------------------------------------------- calls
    @holding
    def gp_point(self) -> list[np.ndarray]:
        """The GP point U_l = (s_l⋯s_L s_a) I, as a list of matrices."""
        buf = np.empty(self._usize)
        core.am_theory_gp_point(self._handle(), _ptr(buf))
        return self._unflat(buf)

    @with_blas_rule
    @holding
    def action(self, U: UArg, grad: bool = False, hess: bool = False) -> ActionValue:
        """The action S_code at U (list of matrices or a Solution).

        Parameters
        ----------
        U : list of array_like or Solution
        grad : bool
            Also the gradient ∂S_code/∂U_l (list of symmetric matrices).
        hess : bool
            Also the exact Hessian in vech coordinates (n × n, n = Σ D_l(D_l+1)/2).

        Returns
        -------
        ActionValue

        Raises
        ------
        DomainError
            Some U_l is not positive definite.
        """
        buf = self._flat(U)
        a = _lib.Action()
        a.struct_size = ctypes.sizeof(a)
        g = np.empty(self._usize) if grad else None
        n = core.am_theory_vech_size(self._handle())
        h = np.empty((n, n), order="F") if hess else None
        check(core.am_theory_action(self._ctx.handle, self._h, _ptr(buf), ctypes.byref(a),
                                    _ptr(g) if grad else None, _ptr(h) if hess else None), self._ctx)
        return ActionValue(a, self._unflat(g) if grad else None, h)

    @holding
    def solve(self, warm_start: Optional[UArg] = None, *, max_iter: int = 100, grad_tol: float = 1e-10,
              decrement_tol: float = 1e-20) -> Solution:
        """Minimise the action by damped Newton (am_theory_solve).

        Parameters
        ----------
        warm_start : list of array_like or Solution, optional
            Starting point; None starts at the GP point.
        max_iter : int
        grad_tol : float
            Stop when max |G| ≤ grad_tol·max(1, |S_code|).
        decrement_tol : float

        Returns
        -------
        Solution
            Also kept as ``theory.solution`` (the default U of predict, kernel and the metrics).

        Raises
        ------
        NotConverged
            ``err.result`` is the Solution at the last iterate.
        KeyboardInterrupt
            Ctrl-C (cancels through am_context_cancel); ``exc.result`` is the Solution at the last iterate.
        """
        s = _lib.SolveSettings()
        core.am_solve_settings_init(ctypes.byref(s), ctypes.sizeof(s))
        s.max_iter = _args.integer(max_iter, "max_iter", lo=0, hi=2**32 - 1)
        s.grad_tol = _args.real(grad_tol, "grad_tol", nonnegative=True)
        s.decrement_tol = _args.real(decrement_tol, "decrement_tol", nonnegative=True)
        if warm_start is not None:
            buf = self._flat(warm_start)
            s.warm_start = 1
        else:
            buf = np.empty(self._usize)
        rep = _lib.SolveReport()
        rep.struct_size = ctypes.sizeof(rep)
        h = self._handle()
        core.am_context_reset_cancel(self._ctx.handle)
        # Newton: ~10 iterations, each a P × P Cholesky and an n × n Hessian of P² sums (n = entries of U)
        work = 10.0 * (self.P ** 3 + (self._usize * self.P) ** 2)
        st, interrupted = call_interruptibly(
            self._ctx, lambda: core.am_theory_solve(self._ctx.handle, h, ctypes.byref(s), _ptr(buf), ctypes.byref(rep)),
            work)
        sol = Solution(self._unflat(buf), rep)
        if interrupted:
            exc = KeyboardInterrupt("Theory.solve cancelled; the last iterate is exc.result")
            exc.result = sol
            raise exc
        if st < 0:
            raise error_for(st, self._ctx.last_error(), sol)
        if st == _lib.AM_CANCELLED:
            warnings.warn("attnmech: solve cancelled by the progress callback", AttnmechWarning, stacklevel=2)
        self.solution = sol
        return sol

    @with_blas_rule
    @holding
    def predict(self, xi_test: Optional[ArrayLike] = None, U: Optional[UArg] = None) -> tuple[np.ndarray, np.ndarray]:
        """Predictor mean kᵀΓ⁻¹Y and variance k_* − kᵀΓ⁻¹k (T not added) on test inputs.

        Parameters
        ----------
        xi_test : array_like, shape (Pt, N0, H_tot), optional
            Test ξ (Fortran order float64 is used without a copy); default ``theory.xi_test``.
        U : optional
            U_1 (a matrix), a U list or a Solution; default the last solution, else the GP point.

        Returns
        -------
        (mean, var) : two numpy.ndarray of shape (Pt,)
        """
        xt = self.xi_test if xi_test is None else xi_test
        if xt is None:
            raise ValueError("predict: no xi_test given")
        xt = _args.shaped(xt, "xi_test", f"(Pt, {self.N0}, {self.H_tot})", 3)
        if xt.shape[1:] != (self.N0, self.H_tot):
            raise ValueError(f"xi_test: shape {xt.shape}, expected (Pt, {self.N0}, {self.H_tot})")
        xt = _f64(xt, "F", "xi_test", 3)
        u = self._U1(U)
        Pt = xt.shape[0]
        mean, var = np.empty(Pt), np.empty(Pt)
        check(core.am_theory_predict(self._ctx.handle, self._handle(), _ptr(u), Pt, _ptr(xt), _ptr(mean), _ptr(var)),
              self._ctx)
        return mean, var

    @with_blas_rule
    @holding
    def kernel(self, U1: Optional[UArg] = None) -> np.ndarray:
        """The training kernel K_U (P × P, T not added) for U_1 (default: last solution, else the GP point)."""
        u = self._U1(U1)
        K = np.empty((self.P, self.P), order="F")
        check(core.am_theory_kernel(self._ctx.handle, self._handle(), _ptr(u), _ptr(K)), self._ctx)
        return K

    def accuracy(self, xi_test: Optional[ArrayLike] = None, y_test: Optional[ArrayLike] = None,
                 U: Optional[UArg] = None) -> float:
        """Fraction of test examples with sign(mean) == sign(y_test) (am_accuracy)."""
        if y_test is None:
            raise ValueError("accuracy: y_test is required")
        mean, _ = self.predict(xi_test, U)
        return accuracy(mean, y_test)

    @with_blas_rule
    @holding
    def alignment(self, U: Optional[UArg] = None, k: int = 30) -> tuple[np.ndarray, np.ndarray]:
        """Kernel–task alignment: the top-k eigenvectors of K_U and their overlaps |v·y|/|y|.

        From the kernel's factor (am_theory_alignment: a thin QR of the P × N0·H_tot factor, not a P × P
        eigenproblem) when N0·H_tot < P; the same numbers to rounding.

        Returns
        -------
        (overlaps, eigenvalues) : two numpy.ndarray of length min(k, P), by decreasing eigenvalue
        """
        u = self._U1(U)
        k = min(_args.integer(k, "k", lo=0), self.P)
        ov, ev = np.empty(k), np.empty(k)
        check(core.am_theory_alignment(self._ctx.handle, self._handle(), _ptr(u), None, k, _ptr(ov), _ptr(ev)),
              self._ctx)
        return ov, ev

    @with_blas_rule
    @holding
    def head_scores(self, U: Optional[UArg] = None) -> np.ndarray:
        """Head scores from U_1: one per head (layer 1 first), normalised so the maximum is 1."""
        u = self._U1(U)
        n = sum(self._arch.heads[l] for l in range(self.L))
        out = np.empty(n)
        check(core.am_head_scores(self._ctx.handle, ctypes.byref(self._arch), _ptr(u), _ptr(out)), self._ctx)
        return out

    @property
    def widths(self) -> np.ndarray:
        """W_0..W_L (numpy.ndarray, a copy)."""
        return np.array([self._arch.widths[l] for l in range(self.L + 1)])

    @property
    def heads(self) -> list[int]:
        """[H_1..H_L]."""
        return [int(self._arch.heads[l]) for l in range(self.L)]

    @holding
    def set_temperature(self, temperature: float) -> None:
        """Change T without rebuilding."""
        T = _args.real(temperature, "temperature")
        check(core.am_theory_set_temperature(self._ctx.handle, self._handle(), T), self._ctx)
        self.temperature = T

    @holding
    def set_widths(self, widths: Widths) -> None:
        """Change the widths W_0..W_L (a number: all equal) without rebuilding (am_theory_set_arch)."""
        w = self._width_vector(widths, "widths (W_0..W_L)")
        arch = _lib.Arch.from_buffer_copy(self._arch)
        for i, x in enumerate(w):
            arch.widths[i] = x
        check(core.am_theory_set_arch(self._ctx.handle, self._handle(), ctypes.byref(arch)), self._ctx)
        self._arch = arch

    def _width_vector(self, widths, what):
        w = _args.reals(widths, what, sizes=(1, self.L + 1))
        if not np.all(w > 0):
            raise ValueError(f"{what}: widths must be > 0, got {w.tolist()}")
        return np.full(self.L + 1, w[0]) if w.size == 1 else w

    @with_blas_rule
    @holding
    def select(self, xi_val: ArrayLike, y_val: ArrayLike, *, widths: Sequence[Widths], temperatures: Sequence[float],
               max_iter: int = 100, grad_tol: float = 1e-10) -> tuple[Widths, float]:
        """Choose the width N and temperature T on validation data: solve at every (N, T) of the grid and keep
        the cell the library's one validation rule picks (am_select_validation, the `theory` estimator's rule for
        its temperature scan too): the highest validation accuracy, then the highest validation log-likelihood
        (ties within 1e-9 relative), then toward the GP limit (the larger width, then the larger T: both move U
        towards the GP point). Leaves the theory at the chosen (N, T) with its solution.

        Parameters
        ----------
        xi_val : array_like, shape (Pv, N0, H_tot)
            Path-transformed validation inputs (the same heads as the training ξ).
        y_val : array_like, shape (Pv,)
        widths : sequence
            Candidate widths: each a number N (W_0 = … = W_L = N) or a sequence W_0..W_L.
        temperatures : sequence of float
            Candidate temperatures T > 0.
        max_iter, grad_tol
            As for `solve`.

        Returns
        -------
        (width, temperature)
            The chosen entry of `widths` (as given) and of `temperatures` (a float). ``theory.selection`` holds
            the whole grid (`Selection`: accuracy[i, j] and log_likelihood[i, j] for widths[i], temperatures[j];
            NaN where a solve failed).

        Raises
        ------
        NotConverged
            Every solve of the grid failed (a single failure is a warning and a NaN score).
        """
        xv, yv = self._validation(xi_val, y_val)
        given = list(widths) if isinstance(widths, (list, tuple, np.ndarray)) else [widths]
        if not given:
            raise ValueError("widths: expected a non-empty list of candidate widths")
        cands = [self._width_vector(w, f"widths[{i}]") for i, w in enumerate(given)]
        Ts = _args.reals(temperatures, "temperatures")
        if not np.all(Ts > 0):
            raise ValueError(f"temperatures: every T must be > 0, got {Ts.tolist()}")
        before = (self.widths, self.temperature, self.solution)
        try:
            acc, ll, sols = self._scan_grid(xv, yv, cands, Ts, max_iter, grad_tol)
        except BaseException:
            self.set_widths(before[0])
            self.set_temperature(before[1])
            self.solution = before[2]
            raise
        i, j = _best_cell(acc, ll, cands, Ts)
        self.set_widths(cands[i])
        self.set_temperature(Ts[j])
        self.solution = sols[i, j]
        self.selection = Selection(given, Ts, acc, ll, i, j)
        return given[i], float(Ts[j])

    def _validation(self, xi_val, y_val):
        xv = _f64(xi_val, "F", "xi_val", 3)
        if xv.shape[1:] != (self.N0, self.H_tot) or xv.shape[0] == 0:
            raise ValueError(f"xi_val: shape {xv.shape}, expected (Pv, {self.N0}, {self.H_tot}) with Pv >= 1")
        yv = _f64(y_val, "C", "y_val", 1)
        if yv.shape[0] != xv.shape[0]:
            raise ValueError(f"y_val: {xv.shape[0]} labels expected (xi_val has Pv = {xv.shape[0]}), got {yv.shape[0]}")
        if not (np.all(np.isfinite(xv)) and np.all(np.isfinite(yv))):
            raise ValueError("xi_val, y_val: NaN or Inf in the validation data")
        return xv, yv

    def _scan_grid(self, xv, yv, cands, Ts, max_iter, grad_tol):
        """Validation accuracy[i, j], log_likelihood[i, j] and solutions at every (width i, temperature j): widths
        from the largest down, and at each width T from the largest down (U ≈ the GP point there), each solve
        warm-started from the previous T."""
        acc = np.full((len(cands), Ts.size), np.nan)
        ll = np.full((len(cands), Ts.size), np.nan)
        sols = {}
        for i in sorted(range(len(cands)), key=lambda k: _width_key(cands[k]), reverse=True):
            self.set_widths(cands[i])
            prev = None
            for j in sorted(range(Ts.size), key=lambda k: Ts[k], reverse=True):
                self.set_temperature(Ts[j])
                sol = self._solve_or_none(prev, max_iter, grad_tol)
                if sol is None:
                    continue
                prev = sols[i, j] = sol
                mean, var = self.predict(xv, sol)
                acc[i, j] = accuracy(mean, yv)
                ll[i, j] = log_likelihood(mean, var, yv, Ts[j])
        if not sols:
            raise NotConverged(_lib.AM_ERR_NOT_CONVERGED, "select: every solve of the width × temperature grid failed")
        return acc, ll, sols

    def _solve_or_none(self, warm, max_iter, grad_tol):
        """solve() warm-started (a failed warm start retried from the GP point); None, with a warning, when the
        solve fails from the GP point too."""
        for start in ((warm, None) if warm is not None else (None,)):
            try:
                return self.solve(start, max_iter=max_iter, grad_tol=grad_tol)
            except (NotConverged, DomainError) as e:
                err = e
        warnings.warn(f"attnmech: select: solve failed at widths {self.widths.tolist()}, T = {self.temperature:g} "
                      f"({err}); that cell is skipped", AttnmechWarning, stacklevel=5)
        return None

    # ---------------------------------------------------------------------------------------- lifetime
    _what = "Theory"

    @holding
    def release(self) -> None:
        """Free what the theory keeps between calls to save work (am_theory_release): the factor of Γ at the last
        point it factored (a solve's solution; P² doubles) and the solve's workspaces. Results are unchanged: the
        next call at that point factors again, to the same bits."""
        core.am_theory_release(self._handle())

    def close(self) -> None:
        """Free the library's theory and context now (idempotent). A call running in another thread is waited
        for; later calls raise ValueError."""
        super().close()

    def _free(self):
        if getattr(self, "_h", None):
            core.am_theory_destroy(ctypes.byref(self._h))
        if getattr(self, "_ctx", None) is not None:
            self._ctx.close()



def _problem_paths(heads, attention, readout, s0):
    """xi_from_heads' keyword arguments for a problem directory's heads ({"l1_h1": W or {"Q", "K"}, ...})."""
    tags = [f"l{l + 1}_h{h + 1}" for l, H in enumerate(heads) for h in range(H)]
    per_head = [attention[t] for t in tags]
    if all(not isinstance(a, dict) for a in per_head):
        return {"heads": heads, "W": per_head, "readout": readout, "s0": s0}
    if all(isinstance(a, dict) for a in per_head):
        return {"heads": heads, "Q": [a["Q"] for a in per_head], "K": [a["K"] for a in per_head],
                "readout": readout, "s0": s0}
    raise ValueError("from_problem: the problem mixes bilinear (W) and query/key heads; Theory takes one form")


def _width_key(w):
    """Order of widths toward the GP limit: the smallest W_l first (it bounds the distance), then their sum."""
    return (float(np.min(w)), float(np.sum(w)))


def _best_cell(acc, ll, cands, Ts):
    """(i, j) of the grid cell the library's validation rule picks (am_select_validation: the best accuracy, then
    the best log-likelihood within 1e-9 relative, then the larger width, the larger T, the first cell as given) from
    accuracy[i, j] and log_likelihood[i, j] (NaN: a failed solve) of candidate widths `cands` and temperatures `Ts`."""
    n_w, n_t = acc.shape
    keys = [_width_key(w) for w in cands]
    flat = [np.ascontiguousarray(a, dtype=np.float64).ravel() for a in (
        acc, ll, np.repeat([k[0] for k in keys], n_t), np.repeat([k[1] for k in keys], n_t),
        np.tile(np.asarray(Ts, dtype=np.float64), n_w))]
    chosen = ctypes.c_size_t(0)
    st = core.am_select_validation(None, n_w * n_t, *(_ptr(a) for a in flat), ctypes.byref(chosen))
    if st != 0:
        raise NotConverged(st, "select: every solve of the width × temperature grid failed")
    return divmod(chosen.value, n_t)


class Selection:
    """The grid `Theory.select` evaluated.

    Attributes
    ----------
    widths : list
        The candidate widths as given.
    temperatures : numpy.ndarray
    accuracy, log_likelihood : numpy.ndarray, shape (len(widths), len(temperatures))
        The validation accuracy and mean log-density of each cell (NaN: the solve failed).
    index : (i, j)
    width, temperature
        The choice.
    """

    def __init__(self, widths, temperatures, acc, ll, i, j):
        self.widths, self.temperatures, self.accuracy, self.log_likelihood = widths, temperatures, acc, ll
        self.index = (i, j)
        self.width, self.temperature = widths[i], float(temperatures[j])

    def __repr__(self):
        return (f"<attnmech.Selection width={self.width!r} temperature={self.temperature:g} "
                f"accuracy={self.accuracy[self.index]:.6g} log_likelihood={self.log_likelihood[self.index]:.6g} "
                f"grid={self.accuracy.shape[0]}x{self.accuracy.shape[1]}>")


def accuracy(mean: ArrayLike, y: ArrayLike) -> float:
    """Fraction of sign(mean) == sign(y) (am_accuracy)."""
    m = _f64(mean, "C", "mean", 1)
    yy = _f64(y, "C", "y", 1)
    if m.shape != yy.shape:
        raise ValueError(f"mean and y: shapes {m.shape} and {yy.shape} differ")
    return float(core.am_accuracy(_ptr(m), _ptr(yy), m.size))


def log_likelihood(mean: ArrayLike, var: ArrayLike, y: ArrayLike, T: float) -> float:
    """Mean log-density of y under the Gaussian predictive N(mean, var + T) (am_log_likelihood; var: the predictor's
    variance, T: the label noise of Γ = K + T·I): the second criterion of the validation selection (`Theory.select`).
    NaN when some var + T is not positive."""
    m = _f64(mean, "C", "mean", 1)
    v = _f64(var, "C", "var", 1)
    yy = _f64(y, "C", "y", 1)
    if not m.shape == v.shape == yy.shape:
        raise ValueError(f"mean, var and y: shapes {m.shape}, {v.shape} and {yy.shape} differ")
    return float(core.am_log_likelihood(_ptr(m), _ptr(v), _ptr(yy), m.size, float(T)))
