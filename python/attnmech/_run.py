"""attnmech.run / Results / load / plugins: the run API (run.h) and the report library (report.h)."""
from __future__ import annotations

import ctypes
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, Union

import numpy as np

import numbers

from . import _args, _html, _lib
from ._core import Context, Record, call_interruptibly, check, make_progress, registry
from ._lib import core, report
from .errors import AttnmechWarning, UsageError, error_for

if TYPE_CHECKING:
    import pandas  # optional: only for the annotation

MAIN_TASK = "markov"  # `attnmech run` with no name (the build option main_task's default)


def _formats(ctx: Context, formats: Union[str, Iterable[str], None]) -> int:
    """AM_REPORT_FORMAT_* bits of a plot-format list ("svg,pdf", ["svg", "pdf"], "all"); None: the default (0)."""
    if formats is None:
        return 0
    if isinstance(formats, str):
        text = formats
    else:
        names = list(formats)
        if not all(isinstance(n, str) for n in names):
            raise TypeError(f"formats: expected a str or an iterable of str, got {formats!r}")
        text = ",".join(names)
    bits = ctypes.c_uint32()
    check(report.am_report_parse_formats(ctx.handle, text.encode(), ctypes.byref(bits)), ctx)
    return bits.value


class Results(dict):
    """A results document (docs/results-schema.md) as nested Python objects: objects are dicts, lists are
    lists, every array is a NumPy array (a copy owned by NumPy), numbers are floats.

    `save`, `plot` and `summary` work on the document as the library produced (or read) it; editing the
    Python objects does not change what they write. They may run from several threads at once on one Results
    (each holds the library's copy for its call; ``close()`` waits for them, later calls raise ValueError).
    """

    def __init__(self, record):
        self._record = record
        record._what = "Results"
        record._closed_how = "Results.close() freed the library's copy; the dict itself is still readable"
        super().__init__(record.to_python())

    @property
    def status(self) -> Optional[str]:
        """The document's status: "ok", "warning", "not_converged", "cancelled" or "error"."""
        return self.get("status")

    def save(self, dir: Union[str, os.PathLike], *, plots: bool = True, npy_min_elements: int = 16,
             formats: Union[str, Iterable[str], None] = None) -> str:
        """Write the results directory `dir` exactly as ``attnmech run --out DIR`` does (atomically).

        Parameters
        ----------
        dir : str or os.PathLike
            Target directory: absent, empty, or holding a previous results.json (replaced whole).
        plots : bool
            Also draw the SVG plots of the document's report.
        npy_min_elements : int
            Arrays with at least this many elements are written only as ``<dotted.path>.npy``; results.json
            holds a reference ``{"npy_file", "shape", "dtype"}`` in their place.
        formats : str or iterable of str, optional
            The files of each plot, as the CLI's ``--plots``: ``"svg"``, ``"pdf"``, ``"png"``, ``"all"`` or a list
            (``"svg,pdf"`` or ``["svg", "pdf"]``). Default: SVG only (or ``AM_PLOT_FORMATS``). PDF and PNG need a
            build with cairo; a format the build cannot write raises before anything is written.

        Returns
        -------
        str
            The directory written.
        """
        opt = _lib.ReportWriteOptions()
        report.am_report_write_options_init(ctypes.byref(opt), ctypes.sizeof(opt))
        opt.plots = 1 if plots else 0
        opt.npy_min_elements = _args.integer(npy_min_elements, "npy_min_elements", lo=0, hi=2**64 - 1)
        target = _args.path(dir, "dir")
        ctx = Context()
        try:
            opt.formats = _formats(ctx, formats)
            with self._record._using("Results.save"):
                check(report.am_report_write(ctx.handle, self._record.handle, target, ctypes.byref(opt)), ctx)
        finally:
            ctx.close()
        return os.fspath(dir)

    def plot(self, dir: Union[str, os.PathLike], *, formats: Union[str, Iterable[str], None] = None) -> list[str]:
        """Draw the document's plots into the existing directory `dir` (SVG files unless `formats` says more).

        Parameters
        ----------
        dir : str or os.PathLike
            An existing directory; files of the same names are overwritten.
        formats : str or iterable of str, optional
            As in :meth:`save`: ``"svg"``, ``"pdf"``, ``"png"``, ``"all"`` or a list. Default: SVG only.

        Returns
        -------
        list of str
            The files written (names relative to `dir`).
        """
        files = []
        opt = _lib.ReportPlotOptions()
        report.am_report_plot_options_init(ctypes.byref(opt), ctypes.sizeof(opt))
        opt.on_file = cb = _lib.FILE_FN(lambda user, name: files.append(_lib.text(name)))
        target = _args.path(dir, "dir")
        ctx = Context()
        try:
            opt.formats = _formats(ctx, formats)
            with self._record._using("Results.plot"):
                check(report.am_report_plot_with_options(ctx.handle, self._record.handle, target, ctypes.byref(opt)),
                      ctx)
        finally:
            ctx.close()
        return files

    def summary(self) -> str:
        """The human summary the CLI prints (str)."""
        out = ctypes.c_void_p()
        ctx = Context()
        try:
            with self._record._using("Results.summary"):
                check(report.am_report_summary(ctx.handle, self._record.handle, ctypes.byref(out)), ctx)
            return _lib.text(ctypes.cast(out, ctypes.c_char_p).value)
        finally:
            core.am_free(out)
            ctx.close()

    def close(self):
        """Free the library's copy of the document now (the Python objects stay; save/plot/summary then raise
        ValueError). Waits for a save/plot/summary running in another thread."""
        self._record.close()

    def __repr__(self):
        return f"<attnmech.Results task={self.get('task')!r} estimator={self.get('estimator')!r} " \
               f"status={self.get('status')!r} runs={len(self.get('runs') or [])}>"

    def run_scalars(self) -> list[dict[str, Any]]:
        """One dict per run of its scalars — numbers, booleans and strings at any depth of the run's objects (not
        inside lists or arrays) — keyed by dotted path ("test.accuracy", "solver.iterations"), in document order.

        Returns
        -------
        list of dict
        """
        return [_scalars(run) for run in (self.get("runs") or []) if isinstance(run, dict)]

    def to_dataframe(self) -> pandas.DataFrame:
        """The per-run scalars (`run_scalars`) as a pandas DataFrame: one row per run (index "run"), one column
        per dotted key in first-seen order, NaN/None where a run lacks a key. Needs pandas (optional).

        Raises
        ------
        ImportError
            pandas is not installed (Debian: python3-pandas; pip: pandas).
        """
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Results.to_dataframe needs pandas: apt install python3-pandas (Debian) or "
                              "pip install pandas") from e
        rows = self.run_scalars()
        columns = list(dict.fromkeys(k for r in rows for k in r))
        df = pandas.DataFrame(rows, columns=columns)
        df.index.name = "run"
        return df

    _HTML_RUN_KEYS = ("width", "temperature", "test.accuracy", "gp.test.accuracy", "action", "solver.iterations",
                      "solver.status", "run_status", "wall_time_s")
    _HTML_MAX_ROWS = 20

    def _repr_html_(self) -> str:
        """Notebook view: the document's status and identity, and a table of the runs' key scalars."""
        head = _html.key_value_table("attnmech.Results", [
            (k, self.get(k)) for k in ("status", "task", "estimator", "seed", "attnmech_version", "wall_time_s")
            if k in self] + [("runs", len(self.get("runs") or []))])
        rows = self.run_scalars()
        if not rows:
            return head
        cols = [k for k in self._HTML_RUN_KEYS if any(k in r for r in rows)]
        if not cols:  # an estimator with other keys: its first few scalars
            cols = list(dict.fromkeys(k for r in rows for k in r))[:8]
        shown = rows[:self._HTML_MAX_ROWS]
        table = _html.grid_table(["run"] + cols, [[i] + [r.get(k) for k in cols] for i, r in enumerate(shown)],
                                 more=len(rows) - len(shown))
        return head + table


def _scalars(obj, prefix="", out=None):
    out = {} if out is None else out
    for k, v in obj.items():
        key = prefix + str(k)
        if isinstance(v, dict):
            _scalars(v, key + ".", out)
        elif isinstance(v, (bool, str, numbers.Real)) and not isinstance(v, np.ndarray):
            out[key] = v
    return out


def _text(value, key):
    """A Python parameter value as the text a user would type after --set: a bool, an integer, a real number, a
    str, or a list of them. Anything else (None, complex, dict, ...) is refused naming the parameter — it
    would otherwise reach the plugin as its str() ("None")."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"parameter {key!r}: an array of dtype {value.dtype} is not a parameter value")
        value = value.ravel().tolist()
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"parameter {key!r}: an empty list (leave the parameter out for its default)")
        return ",".join(_text(v, key) for v in value)  # lists are comma-separated on the CLI
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))  # shortest text that reads back to the same double
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError(f"parameter {key!r}: the value contains a NUL character")
        return value
    if isinstance(value, os.PathLike):
        return _text(os.fspath(value), key)
    raise TypeError(f"parameter {key!r}: {type(value).__name__} {value!r} is not a parameter value "
                    "(a bool, a number, a str, or a list of them)")


def _warn_for(doc):
    if doc.get("status") == "warning":
        for r in doc.get("runs") or []:
            for w in r.get("warnings") or []:
                warnings.warn(f"attnmech: {w}", AttnmechWarning, stacklevel=3)


def _check_start(start):
    if start is not None and not isinstance(start, dict):
        raise TypeError(f"start must be a dict (the starting state handed to the estimator, e.g. "
                        f"{{'U': [U1, U2]}}) or None, got {type(start).__name__} {start!r:.60}")


def run(task: Optional[str] = None, estimator: Optional[str] = None, *, widths: Optional[Sequence[float]] = None,
        seed: int = 0, threads: int = 0, progress: Union[bool, None, Callable[[float, float, str], object]] = None,
        start: Optional[dict] = None, **params: Any) -> Results:
    """Run a task and an estimator, as ``attnmech run`` does, and return the results document.

    Parameters
    ----------
    task : str, optional
        Task plugin name ("markov", "potts", "oneshot", "npy", ...). With neither `task` nor `estimator`, the
        main experiment ("markov"); with only `estimator`, an estimator that runs without a task (e.g. "replica").
    estimator : str, optional
        Estimator plugin name; None = the task's default estimator (as on the CLI).
    widths : sequence of float, optional
        The width scan (``--width``): one run per entry with every W_l equal to it.
    seed : int
        The run's seed (same seed, same bits).
    threads : int
        Threads of the library's own loops (0 = all cores).
    progress : bool, None or callable
        None (default): shown only when a person is watching — stderr is a terminal, or the call runs in a
        Jupyter/IPython kernel — and silent when the caller is a program (stderr piped or logged); True: shown
        (a tqdm bar when tqdm is importable, else plain lines on stderr); False: silent; a callable
        ``f(done, total, label)`` is called instead and may return True to cancel the run.
    start : dict, optional
        Starting state, handed to the estimator as the run inputs' object "start"
        (am_run_spec_set_start), e.g.
        ``{"U": [U1, U2]}``; what an estimator does with it is the estimator's (today none reads it).
    **params
        Every ``--set key=value`` of the task or the estimator, as Python values: ``P=200``,
        ``temperature=0.01``, ``config="2paths"``, ``alpha=[0.5, 1, 2]``, booleans as True/False.

    Returns
    -------
    Results
        The document (dict of Python objects, arrays as NumPy arrays). A document whose status is "warning"
        issues an `AttnmechWarning`; a run cancelled by the progress callback returns its partial document
        (status "cancelled") with a warning.

    Raises
    ------
    UsageError
        Unknown plugin or parameter, a value out of range, an output path (``out_*``: a file prefix, its
        directory created; ``export_*``: a directory, created) whose directory cannot be created — all checked
        before anything is computed.
    NotConverged
        A run's solver failed; ``err.result`` holds the document.
    Error
        Any other failure of a run (its subclass names the status); ``err.result`` holds the document when any
        run started.
    KeyboardInterrupt
        Ctrl-C: the run is cancelled through am_context_cancel and this is raised once the library has
        returned; ``exc.results`` holds the partial document (status "cancelled").
    """
    task, estimator = _args.name(task, "task"), _args.name(estimator, "estimator")
    _check_start(start)
    if task is None and estimator is None:
        task = MAIN_TASK
    texts = _setting_texts(seed, threads, params)
    w = None if widths is None else np.ascontiguousarray(_args.reals(widths, "widths"))
    reg = registry()
    spec = ctypes.c_void_p()
    check(core.am_run_spec_create(ctypes.byref(spec)))
    sink = make_progress(progress)
    ctx = Context(threads=threads, progress=sink)
    held = []
    try:
        _fill_spec(spec, task, estimator, texts, w, start, held)
        check(core.am_run_validate(ctx.handle, reg, spec), ctx)
        _prepare_output_params(texts)
        st, results = _execute(ctx, reg, spec)
        if st == _lib.AM_CANCELLED:
            warnings.warn("attnmech: the run was cancelled by the progress callback; partial results",
                          AttnmechWarning, stacklevel=2)
        if results is not None:
            _warn_for(results)
        return results
    finally:
        for rec in held:
            rec.close()
        core.am_run_spec_destroy(ctypes.byref(spec))
        ctx.close()


def _setting_texts(seed, threads, params):
    """The host keys seed and threads, then every other parameter, as encoded (key, --set text) pairs."""
    settings = {"seed": _args.integer(seed, "seed", lo=0, hi=2**64 - 1),
                "threads": _args.integer(threads, "threads", lo=0, hi=2**31 - 1)}
    settings.update(params)
    return [(_args.name(k, "parameter name").encode(), _text(v, k).encode()) for k, v in settings.items()]


def _prepare_output_params(texts):
    """Output paths named by plugin parameters, made ready before anything computes (as ``attnmech run`` does):
    ``out_*`` is a file prefix (``out_sequences="data/potts"`` → data/potts_train.npy, ...) whose directory is
    created, ``export_*`` a directory, created. A directory that cannot be made raises UsageError naming the
    parameter, and nothing is computed."""
    for k, v in texts:
        key, value = k.decode(), v.decode()
        if not value or not (key.startswith("out_") or key.startswith("export_")):
            continue
        target = value
        if key.startswith("out_"):
            if value.endswith("/"):
                raise UsageError(_lib.AM_ERR_USAGE, f"parameter {key!r}={value!r}: expected a file prefix such "
                                 "as DIR/NAME, got a directory; nothing was computed")
            target = os.path.dirname(value)
        if target in ("", "."):
            continue
        try:
            os.makedirs(target, exist_ok=True)
        except OSError as e:
            why = e.strerror or str(e)
        else:
            why = "" if os.access(target, os.W_OK | os.X_OK) else "it is not writable"
        if why:
            raise UsageError(_lib.AM_ERR_USAGE, f"parameter {key!r}={value!r}: cannot create the directory "
                             f"{target} ({why}); nothing was computed")


def _fill_spec(spec, task, estimator, texts, widths, start, held):
    """Set the run spec's task, estimator, parameters, widths and starting state, stopping at the first
    refusal (raised as its error). The Record made for `start` is appended to `held`: the caller closes it
    once the run is over."""
    st = core.am_run_spec_set_task(spec, task.encode() if task else None)
    if st == 0:
        st = core.am_run_spec_set_estimator(spec, estimator.encode() if estimator else None)
    for k, v in texts:
        if st == 0:
            st = core.am_run_spec_set(spec, k, v)
    if st == 0 and widths is not None:
        st = core.am_run_spec_set_widths(spec, widths.ctypes.data_as(_lib.c_double_p), widths.size)
    if st == 0 and start is not None:
        start_rec = Record.from_dict(start)
        held.append(start_rec)
        st = core.am_run_spec_set_start(spec, start_rec.handle)
    if st < 0:
        raise error_for(st, f"run spec: {_lib.status_string(st)}")


def _execute(ctx, reg, spec):
    """am_run_execute, interruptible by Ctrl-C: (status, Results or None). Raises KeyboardInterrupt (with
    exc.results) when interrupted and the status's error (with the document) when the run failed."""
    out = ctypes.c_void_p()
    st, interrupted = call_interruptibly(
        ctx, lambda: core.am_run_execute(ctx.handle, reg, spec, ctypes.byref(out)))
    results = Results(Record(out.value)) if out.value else None
    if interrupted:
        exc = KeyboardInterrupt("attnmech.run cancelled; the partial results are exc.results")
        exc.results = results
        raise exc
    if st < 0:
        raise error_for(st, ctx.last_error(), results)
    return st, results


def load(path: Union[str, os.PathLike]) -> Results:
    """Read a results directory (or its results.json) written by the CLI, `Results.save` or any host.

    Parameters
    ----------
    path : str or os.PathLike
        The directory holding results.json, or the .json file itself.

    Returns
    -------
    Results
        Rectangular nested number lists come back as float64 arrays (so ``runs[0]["U"][0]`` is a matrix);
        ``.npy`` references are read from the directory (their dtype kept).
    """
    out = ctypes.c_void_p()
    ctx = Context()
    try:
        check(report.am_report_read(ctx.handle, _args.path(path, "path"), ctypes.byref(out)), ctx)
    finally:
        ctx.close()
    return Results(Record(out.value))


def plugins() -> list[dict]:
    """The plugins the registry found.

    Returns
    -------
    list of dict
        One dict per plugin: name, kind ("task" or "estimator"), version, description, path, default_estimator
        (tasks), params (list of dicts: name, type, default, help, min, max, choices).
    """
    reg = registry()
    kinds = {1: "task", 2: "estimator"}
    types = {1: "int", 2: "real", 3: "bool", 4: "string", 5: "choice", 6: "int_list", 7: "real_list"}
    out = []
    for info in _plugin_infos(reg):
        d = info.desc
        desc = d.contents
        params = []
        for j in range(desc.n_params):
            p = core.am_plugin_param(d, j)
            if not p:
                break
            p = p.contents
            params.append({"name": _lib.text(p.name), "type": types.get(p.type, str(p.type)),
                           "default": _lib.text(p.default_value), "help": _lib.text(p.help), "min": p.min,
                           "max": p.max, "choices": _lib.text(p.choices)})
        entry = {"name": _lib.text(desc.name), "kind": kinds.get(desc.kind, str(desc.kind)),
                 "version": _lib.text(desc.version), "description": _lib.text(desc.description),
                 "path": _lib.text(info.path), "params": params}
        if desc.kind == 1:
            entry["default_estimator"] = _lib.text(desc.default_estimator)
        out.append(entry)
    return out


def load_report() -> list[str]:
    """Lines of the registry's load report (modules that could not be used, and why)."""
    reg = registry()
    return [_lib.text(core.am_registry_report_line(reg, i)) for i in range(_registry_summary(reg).report_lines)]


def _registry_summary(reg):
    s = _lib.RegistrySummary(struct_size=ctypes.sizeof(_lib.RegistrySummary))
    check(core.am_registry_info(reg, ctypes.byref(s)))
    return s


def _plugin_infos(reg):
    out = []
    for i in range(_registry_summary(reg).plugins):
        info = _lib.PluginInfo(struct_size=ctypes.sizeof(_lib.PluginInfo))
        check(core.am_registry_plugin_info(reg, i, ctypes.byref(info)))
        out.append(info)
    return out
