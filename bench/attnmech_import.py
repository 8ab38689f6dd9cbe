"""`import attnmech` for a bench script that may run outside `meson devenv` (a peer's venv, /usr/bin/python3):
the script reads attnmech's results with the project's own loader (`attnmech.load`: schema 3's `.npy` references),
never by hand. Usage, from bench/<area>/<script>.py:

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from attnmech_import import attnmech_for
    am = attnmech_for(cli)          # cli: the attnmech executable the script runs

When ATTNMECH_LIBRARY is unset and `cli` is a build tree's `tools/attnmech`, the package loads that build tree's
libraries (libcore/, tools/report/); when no attnmech package is importable, this checkout's python/ is used."""
import glob
import importlib
import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attnmech_for(cli=None):
    if cli and not os.environ.get("ATTNMECH_LIBRARY"):
        build = os.path.dirname(os.path.dirname(os.path.abspath(cli)))
        found = sorted(glob.glob(os.path.join(build, "libcore", "libattnmech.so.*")))
        if found:
            os.environ["ATTNMECH_LIBRARY"] = found[0]
    if importlib.util.find_spec("attnmech") is None:
        sys.path.append(os.path.join(REPO, "python"))
    return importlib.import_module("attnmech")
