"""The ctypes layer: finding and loading libattnmech and libattnmech-report, the public structs (docs/abi.md)
and the prototypes of every C function the package calls. Nothing here is public API.

Where the libraries come from (docs/python.md, "Finding the library"), first match wins:
  1. ATTNMECH_LIBRARY = path of libattnmech.so.<N> (a build tree: `meson devenv -C build` sets it); the report
     library is ATTNMECH_REPORT_LIBRARY, else the libattnmech-report.so.* beside it (or, in a build tree,
     in ../tools/report/);
  2. the wheel's copies in .attnmech.mesonpy.libs/ beside the package (_where.py; the plugins sit beside them in
     attnmech-plugins-<ABI>, where the library's own lookup finds them);
  3. the system loader (an installed prefix: libattnmech.so.3 on the loader's path)."""
import ctypes
import glob
import os

from ._where import native_dir

SOVERSION = 3  # = soversion in meson.build (tests/python/test_run.py checks it against am_soversion())
REPORT_SOVERSION = 3  # = soversion in the root meson.build (the report library shares libattnmech's soname number)

# --- status codes (status.h) ---------------------------------------------------------------------------------
AM_OK = 0
AM_CONVERGED_ROUNDOFF = 1
AM_CANCELLED = 2
AM_ERR_INVALID_ARGUMENT = -1
AM_ERR_SHAPE = -2
AM_ERR_NONFINITE = -3
AM_ERR_DOMAIN = -4
AM_ERR_SINGULAR = -5
AM_ERR_NOT_CONVERGED = -6
AM_ERR_NO_MEMORY = -7
AM_ERR_IO = -8
AM_ERR_FORMAT = -9
AM_ERR_NOT_FOUND = -10
AM_ERR_PLUGIN = -11
AM_ERR_ABI = -12
AM_ERR_BUFFER_TOO_SMALL = -13
AM_ERR_USAGE = -14
AM_ERR_INTERNAL = -15

# record types (record.h), dtypes (array.h)
REC_NULL, REC_NUMBER, REC_STRING, REC_BOOL, REC_ARRAY, REC_OBJECT, REC_LIST = range(7)
AM_F64, AM_F32, AM_I64, AM_I32 = 1, 2, 3, 4
AM_MAX_DIMS = 8
AM_MAX_LAYERS = 16
READOUTS = {"last": 0, "first": 1, "mean": 2}

c_status = ctypes.c_int32
c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_double_p = ctypes.POINTER(ctypes.c_double)

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_char_p)
FILE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


# --- structs: growable ones start with struct_size (set by the am_X_init functions); am_array_view is frozen --
class ContextSettings(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("log", LOG_FN), ("log_user", ctypes.c_void_p),
                ("progress", PROGRESS_FN), ("progress_user", ctypes.c_void_p), ("threads", ctypes.c_int)]


class ArrayView(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_uint32), ("shape", ctypes.c_size_t * AM_MAX_DIMS),
                ("fortran_order", ctypes.c_int), ("data", ctypes.c_void_p)]


class Arch(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("layers", ctypes.c_uint32),
                ("heads", ctypes.c_uint32 * AM_MAX_LAYERS), ("widths", ctypes.c_double * (AM_MAX_LAYERS + 1)),
                ("variances", ctypes.c_double * (AM_MAX_LAYERS + 2))]


class Head(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("form", ctypes.c_int), ("G", ctypes.c_size_t),
                ("W", c_double_p), ("Q", c_double_p), ("K", c_double_p)]


class Action(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("S_code", ctypes.c_double), ("energy", ctypes.c_double),
                ("entropy", ctypes.c_double), ("U_a", ctypes.c_double)]


class SolveSettings(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("max_iter", ctypes.c_uint32), ("grad_tol", ctypes.c_double),
                ("decrement_tol", ctypes.c_double), ("warm_start", ctypes.c_int)]


class SolveReport(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("S_code", ctypes.c_double), ("energy", ctypes.c_double),
                ("entropy", ctypes.c_double), ("U_a", ctypes.c_double), ("iterations", ctypes.c_uint32),
                ("grad_max", ctypes.c_double), ("grad_vech_norm", ctypes.c_double), ("decrement", ctypes.c_double),
                ("hessian_min_eig", ctypes.c_double), ("status", c_status)]


class ParamDef(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char_p), ("type", ctypes.c_int),
                ("default_value", ctypes.c_char_p), ("help", ctypes.c_char_p), ("min", ctypes.c_double),
                ("max", ctypes.c_double), ("choices", ctypes.c_char_p)]


class PluginDesc(ctypes.Structure):  # read-only: only the leading identity fields are declared
    _fields_ = [("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32), ("kind", ctypes.c_uint32),
                ("name", ctypes.c_char_p), ("version", ctypes.c_char_p), ("description", ctypes.c_char_p),
                ("params", ctypes.c_void_p), ("n_params", ctypes.c_uint32), ("data_kinds", ctypes.c_uint32),
                ("default_estimator", ctypes.c_char_p)]


class RegistrySummary(ctypes.Structure):  # registry.h am_registry_summary (growable output)
    _fields_ = [("struct_size", ctypes.c_uint32), ("plugins", ctypes.c_size_t), ("search_dirs", ctypes.c_size_t),
                ("report_lines", ctypes.c_size_t), ("install_dir", ctypes.c_char_p)]


class PluginInfo(ctypes.Structure):  # registry.h am_plugin_info (growable output)
    _fields_ = [("struct_size", ctypes.c_uint32), ("desc", ctypes.POINTER(PluginDesc)), ("path", ctypes.c_char_p)]


class ReportWriteOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("plots", ctypes.c_int), ("npy_min_elements", ctypes.c_size_t),
                ("on_file", FILE_FN), ("user", ctypes.c_void_p), ("formats", ctypes.c_uint32)]  # formats: 3.7


class ReportPlotOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("formats", ctypes.c_uint32), ("on_file", FILE_FN),
                ("user", ctypes.c_void_p)]


P = ctypes.POINTER
vp = ctypes.c_void_p
sz = ctypes.c_size_t
dbl = ctypes.c_double
cstr = ctypes.c_char_p

# name: (restype, argtypes) — every function the package calls, declared once.
_CORE = {
    "am_status_string": (cstr, [c_status]),
    "am_version": (cstr, []),
    "am_abi_version": (ctypes.c_uint32, []),
    "am_soversion": (ctypes.c_uint32, []),
    "am_free": (None, [vp]),
    "am_context_settings_init": (None, [P(ContextSettings), sz]),
    "am_context_create": (c_status, [P(vp), P(ContextSettings)]),
    "am_context_destroy": (None, [P(vp)]),
    "am_context_last_error": (cstr, [vp]),
    "am_context_cancel": (None, [vp]),
    "am_context_cancelled": (ctypes.c_int, [vp]),
    "am_context_reset_cancel": (None, [vp]),
    "am_blas_threads_set": (ctypes.c_int, [ctypes.c_int]),
    "am_memory_check": (c_status, [vp, dbl, cstr, P(dbl)]),
    # records
    "am_record_create": (c_status, [P(vp)]),
    "am_record_destroy": (None, [P(vp)]),
    "am_record_last_error": (cstr, [vp]),
    "am_record_last_status": (c_status, [vp]),
    "am_record_set_number": (c_status, [vp, cstr, dbl]),
    "am_record_set_string": (c_status, [vp, cstr, cstr]),
    "am_record_set_bool": (c_status, [vp, cstr, ctypes.c_int]),
    "am_record_set_null": (c_status, [vp, cstr]),
    "am_record_set_array": (c_status, [vp, cstr, P(ArrayView)]),
    "am_record_object": (vp, [vp, cstr]),
    "am_record_list": (vp, [vp, cstr]),
    "am_record_append_object": (vp, [vp]),
    "am_record_append_number": (c_status, [vp, dbl]),
    "am_record_append_string": (c_status, [vp, cstr]),
    "am_record_append_array": (c_status, [vp, P(ArrayView)]),
    "am_record_type_of": (ctypes.c_int, [vp]),
    "am_record_size": (sz, [vp]),
    "am_record_key": (cstr, [vp, sz]),
    "am_record_at": (vp, [vp, sz]),
    "am_record_get": (vp, [vp, cstr]),
    "am_record_number": (dbl, [vp]),
    "am_record_string": (cstr, [vp]),
    "am_record_bool": (ctypes.c_int, [vp]),
    "am_record_array": (c_status, [vp, P(ArrayView)]),
    # registry and run API
    "am_registry_create": (c_status, [P(vp)]),
    "am_registry_destroy": (None, [P(vp)]),
    "am_registry_discover": (c_status, [vp, vp, cstr]),
    "am_registry_info": (c_status, [vp, P(RegistrySummary)]),
    "am_registry_plugin_info": (c_status, [vp, sz, P(PluginInfo)]),
    "am_registry_report_line": (cstr, [vp, sz]),
    "am_plugin_param": (P(ParamDef), [P(PluginDesc), ctypes.c_uint32]),
    "am_run_spec_create": (c_status, [P(vp)]),
    "am_run_spec_destroy": (None, [P(vp)]),
    "am_run_spec_set_task": (c_status, [vp, cstr]),
    "am_run_spec_set_estimator": (c_status, [vp, cstr]),
    "am_run_spec_set": (c_status, [vp, cstr, cstr]),
    "am_run_spec_set_widths": (c_status, [vp, c_double_p, sz]),
    "am_run_spec_set_start": (c_status, [vp, vp]),
    "am_run_validate": (c_status, [vp, vp, vp]),
    "am_run_execute": (c_status, [vp, vp, vp, P(vp)]),
    # paths and theory
    "am_arch_init": (None, [P(Arch), sz]),
    "am_arch_validate": (c_status, [vp, P(Arch)]),
    "am_arch_paths": (sz, [P(Arch)]),
    "am_arch_dim": (sz, [P(Arch), ctypes.c_uint32]),
    "am_xi": (c_status, [vp, P(Arch), P(Head), ctypes.c_int, sz, sz, sz, c_double_p, c_double_p]),
    "am_theory_create": (c_status, [vp, P(vp), P(Arch), sz, sz, c_double_p, c_double_p, dbl]),
    "am_theory_destroy": (None, [P(vp)]),
    "am_theory_release": (None, [vp]),
    "am_theory_set_temperature": (c_status, [vp, vp, dbl]),
    "am_theory_set_arch": (c_status, [vp, vp, P(Arch)]),
    "am_theory_u_size": (sz, [vp]),
    "am_theory_vech_size": (sz, [vp]),
    "am_theory_u_offset": (sz, [vp, ctypes.c_uint32]),
    "am_theory_gp_point": (None, [vp, c_double_p]),
    "am_theory_action": (c_status, [vp, vp, c_double_p, P(Action), c_double_p, c_double_p]),
    "am_solve_settings_init": (None, [P(SolveSettings), sz]),
    "am_theory_solve": (c_status, [vp, vp, P(SolveSettings), c_double_p, P(SolveReport)]),
    "am_theory_predict": (c_status, [vp, vp, c_double_p, sz, c_double_p, c_double_p, c_double_p]),
    "am_theory_kernel": (c_status, [vp, vp, c_double_p, c_double_p]),
    "am_theory_alignment": (c_status, [vp, vp, c_double_p, c_double_p, sz, c_double_p, c_double_p]),
    "am_accuracy": (dbl, [c_double_p, c_double_p, sz]),
    "am_log_likelihood": (dbl, [c_double_p, c_double_p, c_double_p, sz, dbl]),
    "am_select_validation": (c_status, [vp, sz, c_double_p, c_double_p, c_double_p, c_double_p, c_double_p, P(sz)]),
    "am_kernel_alignment": (c_status, [vp, c_double_p, sz, sz, c_double_p, sz, c_double_p, c_double_p]),
    "am_head_scores": (c_status, [vp, P(Arch), c_double_p, c_double_p]),
    # problem directories (problem.h)
    "am_problem_read": (c_status, [vp, cstr, vp]),
    "am_problem_write": (c_status, [vp, cstr, vp]),
}
_REPORT = {
    "am_report_read": (c_status, [vp, cstr, P(vp)]),
    "am_report_write_options_init": (None, [P(ReportWriteOptions), sz]),
    "am_report_write": (c_status, [vp, vp, cstr, P(ReportWriteOptions)]),
    "am_report_plot": (c_status, [vp, vp, cstr, FILE_FN, vp]),
    "am_report_plot_options_init": (None, [P(ReportPlotOptions), sz]),
    "am_report_plot_with_options": (c_status, [vp, vp, cstr, P(ReportPlotOptions)]),
    "am_report_parse_formats": (c_status, [vp, cstr, P(ctypes.c_uint32)]),
    "am_report_summary": (c_status, [vp, vp, P(ctypes.c_void_p)]),
}


def _declare(lib, table):
    for name, (res, args) in table.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def _newest(pattern):
    found = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
    return found[0] if found else None


def _locate():
    """(core path, report path, where): the rule of the module docstring."""
    env = os.environ.get("ATTNMECH_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise ImportError(f"ATTNMECH_LIBRARY={env}: no such file")
        d = os.path.dirname(os.path.abspath(env))
        rep = os.environ.get("ATTNMECH_REPORT_LIBRARY") or _newest(
            os.path.join(d, f"libattnmech-report.so.{REPORT_SOVERSION}*")) or _newest(  # beside it, or the
            os.path.join(d, "..", "tools", "report", f"libattnmech-report.so.{REPORT_SOVERSION}*"))  # build tree
        return env, rep or f"libattnmech-report.so.{REPORT_SOVERSION}", "ATTNMECH_LIBRARY"
    native = native_dir()
    core = native and _newest(os.path.join(native, f"libattnmech.so.{SOVERSION}*"))
    if core:
        rep = _newest(os.path.join(native, f"libattnmech-report.so.{REPORT_SOVERSION}*"))
        return core, rep, "package"
    return f"libattnmech.so.{SOVERSION}", f"libattnmech-report.so.{REPORT_SOVERSION}", "system"


def _load():
    core_path, report_path, where = _locate()
    try:
        core = ctypes.CDLL(core_path)
    except OSError as e:
        raise ImportError(f"attnmech: cannot load libattnmech ({core_path}, found via {where}): {e}. Build the "
                          "project and use `meson devenv -C build`, or set ATTNMECH_LIBRARY (docs/python.md)") from e
    try:
        report = ctypes.CDLL(report_path)
    except OSError as e:
        raise ImportError(f"attnmech: cannot load libattnmech-report ({report_path}): {e}") from e
    _declare(core, _CORE)
    _declare(report, _REPORT)
    return core, report, core_path, report_path


core, report, core_path, report_path = _load()


def text(b):
    return b.decode("utf-8", "replace") if b is not None else None


def status_string(code):
    return text(core.am_status_string(code))
