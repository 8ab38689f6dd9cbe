"""attnmech — statistical mechanics of attention, from Python.

A pure-Python package over the library's public C ABI (ctypes; no compiled binding code). The three calls:

    import attnmech as am
    r = am.run("markov", seed=0, P=200)          # a whole experiment → Results (dict, NumPy arrays)
    r.save("out")                                 # the directory `attnmech run --out out` writes
    with am.Theory(xi, y, heads=[2, 2], widths=[3, 4, 5], temperature=0.1) as th:
        sol = th.solve()                          # U, U_a, action, ... ; th.predict(xi_test) → (mean, var)
    am.write_problem("prob", X, y, Xt, yt, heads=[1], W=[W11], widths=10, temperature=0.01)

See docs/python.md (install, finding the library, the mapping onto the C API)."""
from . import _lib
from ._lib import text as _text
from .errors import (ABIError, AttnmechWarning, Cancelled, DomainError, Error, FileError, FormatError,
                     InternalError, InvalidArgument, NonFiniteError, NotConverged, NotFound, OutOfMemory, PluginError,
                     ShapeError, SingularError, UsageError)
from ._core import set_interruptible
from ._run import Results, load, load_report, plugins, run
from ._theory import (ActionValue, Selection, Solution, Theory, accuracy, log_likelihood, xi_from_attention,
                      xi_from_heads)
from ._problem import read_problem, write_problem
from ._importance import theory_head_quantities

__version__ = _text(_lib.core.am_version())


def abi_version() -> int:
    """The plugin ABI number of the loaded library (AM_ABI_VERSION)."""
    return int(_lib.core.am_abi_version())


def library_path() -> tuple:
    """Paths of the loaded libattnmech and libattnmech-report (see docs/python.md, "Finding the library")."""
    return _lib.core_path, _lib.report_path


__all__ = ["run", "load", "Results", "plugins", "load_report", "Theory", "Solution", "Selection", "ActionValue", "accuracy", "log_likelihood",
           "xi_from_heads", "xi_from_attention", "theory_head_quantities", "write_problem", "read_problem", "abi_version", "library_path", "set_interruptible",
           "__version__", "Error", "UsageError", "InvalidArgument", "ShapeError", "DomainError", "NonFiniteError",
           "SingularError", "NotConverged", "OutOfMemory", "FileError", "FormatError", "NotFound", "PluginError",
           "ABIError", "InternalError", "Cancelled", "AttnmechWarning"]
