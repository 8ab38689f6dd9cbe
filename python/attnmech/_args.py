"""Argument checks shared by the public functions: every value a user passes is taken as what it is or refused
with a message naming the argument — never silently coerced (a complex array to its real part, 2.5 heads to 2,
None to the text "None", an empty width list to the default scan). Internal."""
import numbers
import operator
import os

import numpy as np

from . import _lib

MAX_PATHS = 4096  # Π H_l the core supports (am_arch_in)


def name(value, what):
    """A plugin or parameter name: a str without NUL, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str (a plugin name such as 'markov'), got {type(value).__name__}")
    if "\0" in value:
        raise ValueError(f"{what} {value!r} contains a NUL character")
    return value


def path(value, what):
    """A file-system path (str, bytes or os.PathLike; not None, not empty, no NUL) as bytes for the C API."""
    if value is None or not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"{what} must be a path (str or os.PathLike), got {type(value).__name__}")
    b = os.fsencode(value)
    if not b or b"\0" in b:
        raise ValueError(f"{what} {value!r} is empty or contains a NUL character")
    return b


def integer(value, what, lo=None, hi=None):
    """An integral number (int, NumPy integer, or a float with an integral value) within [lo, hi]."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, got a bool")
    if isinstance(value, numbers.Integral):
        v = operator.index(value)
    elif isinstance(value, numbers.Real) and np.isfinite(value) and float(value).is_integer():
        v = int(value)
    else:
        raise TypeError(f"{what} must be an integer, got {value!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lim = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{what} = {v} is outside {lim}")
    return v


def real(value, what, nonnegative=False):
    """A real number (complex, bool and non-numbers refused); with `nonnegative`, also >= 0 (NaN refused). The
    library checks the domain of everything else (positive widths, T > 0) and names the argument itself."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {value!r}")
    v = float(value)
    if nonnegative and not v >= 0:
        raise ValueError(f"{what} = {value!r} must be >= 0")
    return v


def heads(values, what="heads"):
    """Heads per layer [H_1..H_L]: 1..16 integers >= 1 whose product (the path count) is at most 4096 — checked
    before anything is built from them."""
    vals = np.atleast_1d(np.asarray(values, dtype=object)) if not isinstance(values, (list, tuple)) else values
    out = [integer(h, f"{what}[{i}]", lo=1, hi=MAX_PATHS) for i, h in enumerate(vals)]
    if not 1 <= len(out) <= _lib.AM_MAX_LAYERS:
        raise ValueError(f"{what}: 1 to {_lib.AM_MAX_LAYERS} layers, got {len(out)}")
    if np.prod(out, dtype=float) > MAX_PATHS:
        raise ValueError(f"{what} {out} make {int(np.prod(out, dtype=float)):g} attention paths; at most {MAX_PATHS}")
    return out


def f64_array(a, what, order="C", ndim=None):
    """A real float64 array in the wanted order (the caller's array itself when it already is one): complex,
    object, string and other non-numeric data are refused, not cast."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what}: expected real numbers, got an array of dtype {arr.dtype}"
                        + (" (complex: pass .real explicitly if that is what you mean)" if arr.dtype.kind == "c" else ""))
    arr = np.asarray(arr, dtype=np.float64, order=order)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{what}: expected {ndim} dimensions, got shape {arr.shape}")
    return arr


def reals(values, what, sizes=None):
    """A non-empty 1-d list of real numbers (a number alone: one entry) whose length is one of `sizes`."""
    arr = np.atleast_1d(f64_array(values, what))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{what}: expected a non-empty list of numbers, got shape {arr.shape}")
    if sizes is not None and arr.size not in sizes:
        raise ValueError(f"{what}: {' or '.join(str(n) for n in sizes)} values expected, got {arr.size}")
    return arr


def shaped(a, what, shape_text, ndim):
    """`a` as an array WITHOUT converting it (a NumPy array or a broadcast view is taken as it is), refused unless it
    holds real numbers in `ndim` dimensions; the message names the argument and the expected shape ("(P, S, N0)").
    Shapes are checked on this before any copy is made."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        f64_array(arr, what)  # raises the refusal naming the argument
    if arr.ndim != ndim:
        raise ValueError(f"{what}: expected shape {shape_text}, got shape {arr.shape}")
    return arr


def labels(y, what, n=None):
    """Labels: a 1-d array of finite real numbers (n of them when given), checked as given and returned without a
    conversion (like `shaped`). NaN or Inf is refused naming the first bad entry (a NaN would otherwise count as a
    class of its own, or poison a kernel)."""
    arr = shaped(y, what, "(P,)" if n is None else f"({n},)", 1)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{what}: {n} labels expected (one per example), got {arr.shape[0]}")
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            bad = np.flatnonzero(~finite)
            raise ValueError(f"{what}: label {arr[bad[0]]} at index {bad[0]} ({bad.size} non-finite in all); labels "
                             "must be finite numbers (±1 for classification)")
    return arr
