"""Contexts (log and progress sinks, cancel), record <-> Python conversion, the shared plugin registry and the
interruptible call that runs a blocking C function in a worker thread. Internal."""
import _thread
import contextlib
import ctypes
import functools
import logging
import os
import sys
import threading
import time

import numpy as np

from . import _lib
from ._lib import core
from .errors import error_for

log = logging.getLogger("attnmech")
_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}

_DTYPES = {_lib.AM_F64: np.float64, _lib.AM_F32: np.float32, _lib.AM_I64: np.int64, _lib.AM_I32: np.int32}
_CODES = {np.dtype(np.float64): _lib.AM_F64, np.dtype(np.float32): _lib.AM_F32, np.dtype(np.int64): _lib.AM_I64,
          np.dtype(np.int32): _lib.AM_I32}


def check(status, ctx=None, result=None):
    """Raise the exception of a negative status with the context's message; return the status otherwise."""
    if status < 0:
        raise error_for(status, ctx.last_error() if ctx is not None else "", result)
    return status


# ---------------------------------------------------------------------------------------------- progress sinks
# Progress labels whose counter is an iteration number and whose total only a cap (max_iter): shown as
# "Newton iteration 7", never as a percentage of the cap.
_ITERATIONS = {"newton": "Newton iteration", "L-BFGS": "L-BFGS iteration"}


def describe_progress(done, total, label):
    """(stage, text, total or None) of a progress report: the stage names a bar, the text is its plain line
    ("[run 1/2 N=10] Newton iteration 7", "theory: temperature scan 3/10 (30 %)"); total is None for iteration
    counters."""
    scope, _, stage = label.rpartition("] ")
    scope = scope + "] " if scope else ""
    if stage in _ITERATIONS:
        return f"{scope}{_ITERATIONS[stage]}s", f"{scope}{_ITERATIONS[stage]} {done:g}", None
    if total > 0:
        count = f"{done:g}/{total:g}" if float(done).is_integer() and float(total).is_integer() else ""
        pct = f"{100.0 * done / total:.0f} %"
        return label, f"{label}: {count} ({pct})" if count else f"{label}: {pct}", total
    return label, f"{label}: {done:g}", None


class _Bar:
    """Progress shown as a tqdm.auto bar (a notebook widget in Jupyter; one bar per stage) when tqdm is
    importable, else plain lines on stderr (a line when the stage changes and then at most one a second)."""

    def __init__(self):
        try:
            from tqdm.auto import tqdm  # optional
            self._tqdm = tqdm
        except ImportError:
            self._tqdm = None
        self._stage = None
        self._bar = None
        self._last = 0.0

    def __call__(self, done, total, label):
        stage, text, tot = describe_progress(done, total, label)
        if self._tqdm is not None:
            if stage != self._stage or self._bar is None:
                self.close()
                self._bar = self._tqdm(total=tot, desc=stage, leave=False)
            self._bar.n = done
            self._bar.refresh()
        else:
            now = time.monotonic()
            if stage != self._stage or now - self._last >= 1.0 or (tot is not None and done >= tot):
                print(f"attnmech: {text}", file=sys.stderr, flush=True)
                self._last = now
        self._stage = stage
        return False

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def interactive():
    """Whether a person is watching the call: stderr is a terminal, or an IPython kernel (Jupyter) runs us. A
    program (stderr piped, redirected, a log file, a test runner) is not."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError, OSError):  # a replaced or closed stderr
        pass
    ipython = sys.modules.get("IPython")  # imported by the kernel itself; never imported here
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return getattr(shell, "kernel", None) is not None


def make_progress(progress):
    """progress=True → _Bar; None → _Bar when `interactive()`, else nothing (a library does not print progress
    for a program by default); False → None; a callable → itself (returns truthy to cancel)."""
    if progress is None:
        progress = interactive()
    if progress is True:
        return _Bar()
    if progress is False:
        return None
    if callable(progress):
        return progress
    raise TypeError(f"progress must be True, False, None (shown when stderr is a terminal or in Jupyter) or a "
                    f"callable(done, total, label), got {progress!r}")


# ------------------------------------------------------------------------------------------------ BLAS threads
BLAS_RULE = True  # the CLI's rule inside library calls; False leaves OpenBLAS alone (bench/python compares both)
_blas_lock = threading.Lock()
_blas_depth = 0
_blas_saved = 0
_blas_limits = None


def _numpy_blas_limits():
    """threadpoolctl's limit of every loaded BLAS to one thread (NumPy's own bundled OpenBLAS in a pip venv,
    which am_blas_threads_set cannot see), or None when threadpoolctl is not installed."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl.threadpool_limits(limits=1, user_api="blas")


@contextlib.contextmanager
def blas_rule(numpy_too=False, force=False):
    """The CLI's BLAS-thread rule (docs/cli.md) around a library call: one OpenBLAS thread unless the user set
    OPENBLAS_NUM_THREADS or OMP_NUM_THREADS, the previous count restored afterwards. The count is process-wide,
    so nested and concurrent calls share one setting: the first to enter sets it, the last to leave restores it.
    `numpy_too` (long calls only: threadpoolctl scans the loaded libraries) also limits NumPy's bundled BLAS.
    `force` pins one thread even when those variables are set (and when BLAS_RULE is off): for results that must
    not depend on the thread count (head importance; docs/python.md "Same bits on every thread count")."""
    global _blas_depth, _blas_saved, _blas_limits
    if not force and (not BLAS_RULE or "OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ):
        yield
        return
    with _blas_lock:
        _blas_depth += 1
        if _blas_depth == 1:
            _blas_saved = core.am_blas_threads_set(1)
        if numpy_too and _blas_limits is None:
            _blas_limits = _numpy_blas_limits() or False
    try:
        yield
    finally:
        with _blas_lock:
            _blas_depth -= 1
            if _blas_depth == 0:  # in the reverse order of the setting (threadpoolctl saw our one thread)
                if _blas_limits:
                    _blas_limits.restore_original_limits()
                _blas_limits = None
                if _blas_saved > 1:
                    core.am_blas_threads_set(_blas_saved)


def with_blas_rule(fn):
    """Decorator: `fn` runs under blas_rule()."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with blas_rule():
            return fn(*args, **kwargs)
    return wrapped


# ---------------------------------------------------------------------------------------------------- handles
# The context whose progress callback this thread is running (set by Context._on_progress for the callback's
# duration): a call from there into the object that is running the call would re-enter its C handle.
_callback = threading.local()


class Handle:
    """An owner of library memory (a C handle), safe to share between threads.

    One re-entrant lock per object is held around every library call on it and around its destroy: calls on one
    object from several threads run one at a time, each as if alone (its results are those of a serial call);
    ``close()`` waits until a running call has returned; a call after close raises ValueError naming the call.
    Freed by ``close()`` (idempotent), at the end of a ``with`` block, or when collected. Subclasses define
    ``_is_open()`` and ``_free()``, and wrap every method that reaches the handle in ``holding`` (or
    ``with self._using(name)``)."""

    _what = "object"  # its name in messages
    _closed_how = "close() was called or its with-block ended"  # in the message of a call after close

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self._lock = threading.RLock()  # before __init__ runs: every path to close() finds it
        return self

    def _is_open(self):  # pragma: no cover - every subclass defines it
        return False

    def _free(self):  # pragma: no cover - every subclass defines it
        pass

    def _refuse_from_callback(self, call):
        ctx = getattr(_callback, "context", None)
        if ctx is not None and (ctx is self or ctx is getattr(self, "_ctx", None)):
            raise RuntimeError(f"{call}: called from the progress callback of a call running on this {self._what}; "
                               "the callback may return True to cancel that call, then use the object after it "
                               "has returned")

    @contextlib.contextmanager
    def _using(self, call):
        """Hold the object for `call` ("Theory.solve"): its lock for the duration, and a ValueError naming the call
        when the object is closed."""
        self._refuse_from_callback(call)
        with self._lock:
            if not self._is_open():
                raise ValueError(f"{call}: this {self._what} is closed ({self._closed_how})")
            yield

    def close(self):
        """Free the library's memory now (idempotent); waits until a call running in another thread returns."""
        self._refuse_from_callback(f"{self._what}.close")
        with self._lock:
            self._free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def holding(method):
    """Decorator of a Handle method that reaches the library: it runs holding the object (Handle._using), named
    by its qualified name in messages."""
    call = method.__qualname__

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        with self._using(call):
            return method(self, *args, **kwargs)
    return wrapped


# -------------------------------------------------------------------------------------------------- contexts
def _on_log(user, level, message):
    log.log(_LEVELS.get(level, logging.INFO), "%s", _lib.text(message))


_LOG_CB = _lib.LOG_FN(_on_log)  # made once (a ctypes callback costs a libffi closure), alive for the module


class Context(Handle):
    """An am_context with a log sink (the `attnmech` logger) and an optional progress sink. The ctypes callbacks
    are kept alive as attributes for the context's lifetime. Used by one call at a time: a Theory's context is
    held through the Theory's lock; every other context is made for one call."""

    _what = "context"

    def __init__(self, threads=0, progress=None):
        self.handle = ctypes.c_void_p()
        self._progress = progress
        self.callback_error = None
        s = _lib.ContextSettings()
        core.am_context_settings_init(ctypes.byref(s), ctypes.sizeof(s))
        s.log = _LOG_CB  # one callback for every context: the log goes to the `attnmech` logger
        if progress is not None:
            self._progress_cb = _lib.PROGRESS_FN(self._on_progress)
            s.progress = self._progress_cb
        from ._args import integer  # (_args imports nothing of ours but _lib)
        s.threads = integer(threads, "threads", lo=0, hi=2**31 - 1)
        check(core.am_context_create(ctypes.byref(self.handle), ctypes.byref(s)))

    def _on_progress(self, user, done, total, label):
        outer, _callback.context = getattr(_callback, "context", None), self
        try:
            return 1 if self._progress(done, total, _lib.text(label)) else 0
        except BaseException as e:  # never let an exception unwind through C: cancel and re-raise afterwards
            self.callback_error = e
            return 1
        finally:
            _callback.context = outer

    def last_error(self):
        return _lib.text(core.am_context_last_error(self.handle)) if self.handle else ""

    def cancel(self):
        """am_context_cancel: thread-safe, so it takes no lock (the waiting caller holds the object)."""
        core.am_context_cancel(self.handle)

    def _is_open(self):
        return bool(self.handle)

    def _free(self):
        if self._progress is not None and hasattr(self._progress, "close"):
            self._progress.close()
        if getattr(self, "handle", None):
            core.am_context_destroy(ctypes.byref(self.handle))


def memory_check(nbytes, what):
    """am_memory_check before Python makes a large copy: raises OutOfMemory ("<what> needs 8.1 GB; this machine has
    ...") when `nbytes` exceed the budget (physical memory, or AM_MEMORY_LIMIT)."""
    ctx = Context()
    try:
        check(core.am_memory_check(ctx.handle, float(nbytes), what.encode(), None), ctx)
    finally:
        ctx.close()


_live_workers = 0  # calls whose worker thread has not finished (the tests check it returns to 0)
_interruptible = True


def set_interruptible(flag: bool) -> bool:
    """Whether run() and solve() run their C call in a worker thread so that Ctrl-C cancels it (default True).
    False runs them in the calling thread: no hand-off cost (~40 µs a call on an idle machine, a scheduler time
    slice on a loaded one) for loops of many small solves, but Ctrl-C then waits until the call has ended.
    Returns the previous setting."""
    global _interruptible
    old, _interruptible = _interruptible, bool(flag)
    return old


def live_workers():
    """How many worker threads of call_interruptibly are running (0 whenever no call is in progress)."""
    return _live_workers


# Below this much work (≈ flops; ~25 ms at a few Gflop/s) a call runs in the calling thread: the worker-thread
# hand-off would cost more than it is worth, and a Ctrl-C waits at most that long for the call to end.
DIRECT_WORK = 1e8


def call_interruptibly(ctx, fn, work=None):
    """`_call_interruptibly` under the BLAS-thread rule (runs and solves); NumPy's BLAS too when the call is long
    (threadpoolctl's ~0.7 ms would double a small solve)."""
    with blas_rule(numpy_too=work is None or work >= DIRECT_WORK):
        return _call_interruptibly(ctx, fn, work)


def _call_interruptibly(ctx, fn, work=None):
    """Run fn() (a blocking C call on `ctx`) so that Ctrl-C can stop it: in the main thread, fn runs in a worker
    thread while the main thread waits; a KeyboardInterrupt there calls am_context_cancel, and the wait goes on
    until the library has returned and the worker has finished (no thread is left running). Returns
    (fn's value, interrupted). Elsewhere than in the main thread (no KeyboardInterrupt there), or when `work` (an
    estimate of the call's flops) is below DIRECT_WORK, fn runs directly."""
    global _live_workers
    if (not _interruptible or (work is not None and work < DIRECT_WORK)
            or threading.current_thread() is not threading.main_thread()):
        value = fn()
        _raise_callback_error(ctx)
        return value, False
    box = {}
    done = _thread.allocate_lock()  # held while the worker runs (waiting on it, not on join(): see below)
    done.acquire()

    def target():
        global _live_workers
        try:
            box["value"] = fn()
        except BaseException as e:  # pragma: no cover - ctypes calls do not raise
            box["error"] = e
        finally:
            _live_workers -= 1  # under the GIL; the last thing before the release the caller waits for
            done.release()

    _live_workers += 1
    # a threading.Thread, not a bare _thread: a bare thread that logs (the log sink) would leave a _DummyThread
    # entry behind in threading's table for every call
    t = threading.Thread(target=target, name="attnmech-call", daemon=True)
    interrupted = started = False
    # A timed wait returns to the interpreter now and then, so a pending KeyboardInterrupt (a real SIGINT or
    # _thread.interrupt_main) is raised here promptly; it returns at once when fn ends. An interrupt anywhere in
    # the loop cancels, and the wait goes on until the worker is done. (Not Thread.join with a timeout: an
    # exception raised inside join() can leave the Thread saying "not alive" while it still runs, CPython 3.11.)
    while True:
        try:
            if not started:  # inside the try: start() waits for the new thread, and may see the interrupt
                started = True
                t.start()
            if done.acquire(timeout=0.1):
                break
        except KeyboardInterrupt:
            interrupted = True
            ctx.cancel()
    while True:  # the library has returned; the thread only has to end (a join interrupted by Ctrl-C is repeated)
        try:
            t.join()
            break
        except KeyboardInterrupt:
            interrupted = True
    if "error" in box:
        raise box["error"]
    _raise_callback_error(ctx)
    return box.get("value"), interrupted


def _raise_callback_error(ctx):
    """The exception a progress callback raised during the call (it cancelled the call), raised now."""
    if ctx.callback_error is not None:
        e, ctx.callback_error = ctx.callback_error, None
        raise e


# ------------------------------------------------------------------------------------------ record → Python
def array_from_view(view):
    """A NumPy-owned copy of an am_array_view (same dtype, shape and memory order)."""
    dtype = np.dtype(_DTYPES[view.dtype])
    shape = tuple(view.shape[i] for i in range(view.ndim))
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    order = "F" if view.fortran_order else "C"
    if count == 0 or not view.data:
        return np.zeros(shape, dtype=dtype, order=order)
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(view.data)
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order=order).copy(order="K")


def to_python(node):
    """Record node → Python: objects → dict (key order kept), lists → list, arrays → NumPy copies, numbers →
    float, booleans → bool, null → None, strings → str."""
    t = core.am_record_type_of(node)
    if t == _lib.REC_OBJECT:
        n = core.am_record_size(node)
        return {_lib.text(core.am_record_key(node, i)): to_python(core.am_record_at(node, i)) for i in range(n)}
    if t == _lib.REC_LIST:
        return [to_python(core.am_record_at(node, i)) for i in range(core.am_record_size(node))]
    if t == _lib.REC_NUMBER:
        return float(core.am_record_number(node))
    if t == _lib.REC_STRING:
        return _lib.text(core.am_record_string(node))
    if t == _lib.REC_BOOL:
        return bool(core.am_record_bool(node))
    if t == _lib.REC_ARRAY:
        v = _lib.ArrayView()
        check(core.am_record_array(node, ctypes.byref(v)))
        return array_from_view(v)
    return None


# ------------------------------------------------------------------------------------------ Python → record
def view_of(a):
    """(am_array_view, the array it borrows from): zero-copy for f8/f4/i8/i4 arrays that are C- or Fortran-
    contiguous; anything else is converted once (integers/booleans → int64, other numbers → float64, C order)."""
    a = np.asarray(a)
    if a.dtype not in _CODES or not a.dtype.isnative:
        a = a.astype(np.int64 if a.dtype.kind in "biu" else np.float64)
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        a = np.ascontiguousarray(a)
    if a.ndim > _lib.AM_MAX_DIMS:
        raise ValueError(f"arrays have at most {_lib.AM_MAX_DIMS} dimensions, got {a.ndim}")
    v = _lib.ArrayView()
    v.dtype = _CODES[a.dtype]
    v.ndim = a.ndim
    for i, n in enumerate(a.shape):
        v.shape[i] = n
    v.fortran_order = 1 if (a.flags.f_contiguous and not a.flags.c_contiguous) else 0
    v.data = a.ctypes.data if a.size else None
    return v, a


def _rec_check(node, status=None):
    st = core.am_record_last_status(node) if status is None else status
    if st < 0:
        raise error_for(st, _lib.text(core.am_record_last_error(node)))


def set_value(obj, key, value):
    """obj[key] = value on an object node (dict, list, array, number, bool, str, None)."""
    k = key.encode()
    if isinstance(value, dict):
        child = core.am_record_object(obj, k)
        _rec_check(obj) if not child else None
        for kk, vv in value.items():
            set_value(child, str(kk), vv)
    elif isinstance(value, (list, tuple)) and not _is_numeric_list(value):
        lst = core.am_record_list(obj, k)
        if not lst:
            _rec_check(obj)
        for item in value:
            append_value(lst, item)
    elif isinstance(value, (list, tuple)):
        lst = core.am_record_list(obj, k)
        if not lst:
            _rec_check(obj)
        for item in value:
            _rec_check(lst, core.am_record_append_number(lst, float(item)))
    elif isinstance(value, np.ndarray):
        v, keep = view_of(value)
        _rec_check(obj, core.am_record_set_array(obj, k, ctypes.byref(v)))
        del keep
    elif isinstance(value, (bool, np.bool_)):
        _rec_check(obj, core.am_record_set_bool(obj, k, 1 if value else 0))
    elif isinstance(value, (int, float, np.integer, np.floating)):
        _rec_check(obj, core.am_record_set_number(obj, k, float(value)))
    elif isinstance(value, str):
        _rec_check(obj, core.am_record_set_string(obj, k, value.encode()))
    elif value is None:
        _rec_check(obj, core.am_record_set_null(obj, k))
    else:
        raise TypeError(f"{key}: cannot store a {type(value).__name__} in a record")


def _is_numeric_list(v):
    return all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in v)


def append_value(lst, item):
    if isinstance(item, dict):
        child = core.am_record_append_object(lst)
        if not child:
            _rec_check(lst)
        for kk, vv in item.items():
            set_value(child, str(kk), vv)
    elif isinstance(item, np.ndarray):
        v, keep = view_of(item)
        _rec_check(lst, core.am_record_append_array(lst, ctypes.byref(v)))
        del keep
    elif isinstance(item, str):
        _rec_check(lst, core.am_record_append_string(lst, item.encode()))
    elif isinstance(item, (int, float, np.integer, np.floating)) and not isinstance(item, bool):
        _rec_check(lst, core.am_record_append_number(lst, float(item)))
    elif isinstance(item, (list, tuple)):  # a nested list: the record API appends arrays, not lists
        v, keep = view_of(np.asarray(item, dtype=np.float64))
        _rec_check(lst, core.am_record_append_array(lst, ctypes.byref(v)))
        del keep
    else:
        raise TypeError(f"cannot append a {type(item).__name__} to a record list")


class Record(Handle):
    """An owned am_record root (destroyed deterministically by close() / the with-block, else by __del__)."""

    def __init__(self, handle=None, what="record"):
        self._what = what
        self.handle = ctypes.c_void_p(handle) if handle else ctypes.c_void_p()
        if not self.handle:
            check(core.am_record_create(ctypes.byref(self.handle)))

    @classmethod
    def from_dict(cls, d):
        r = cls()
        try:
            for k, v in d.items():
                set_value(r.handle, str(k), v)
        except BaseException:
            r.close()
            raise
        return r

    def to_python(self):
        with self._using(f"{self._what}.to_python"):
            return to_python(self.handle)

    def _is_open(self):
        return bool(self.handle)

    def _free(self):
        if getattr(self, "handle", None):
            core.am_record_destroy(ctypes.byref(self.handle))



# ----------------------------------------------------------------------------------------------- registry
_registry = None
_registry_lock = threading.Lock()


def registry():
    """The process's plugin registry (discovered once: AM_PLUGIN_PATH, then the plugins installed beside the
    library; plugins are never unloaded, and a run only reads the registry, so one serves every run)."""
    global _registry
    with _registry_lock:
        if _registry is None:
            reg = ctypes.c_void_p()
            check(core.am_registry_create(ctypes.byref(reg)))
            ctx = Context()
            try:
                core.am_registry_discover(ctx.handle, reg, None)  # failures are lines of the load report
            finally:
                ctx.close()
            _registry = reg
        return _registry
