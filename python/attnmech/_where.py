"""Where an installed wheel keeps its native files: meson-python installs everything the build put under {libdir}
(libattnmech, libattnmech-report, the plugins beside them, bin/attnmech, the shipped sweeps and figures) into
.attnmech.mesonpy.libs/ at the root of site-packages, beside this package. Imports nothing heavy: the CLI
launcher (__main__) uses it before any library is loaded."""
import os
import sysconfig

NATIVE_DIR = ".attnmech.mesonpy.libs"


def native_dir():
    """The wheel's native directory, or None (a source checkout or a system install). Looked for beside the package,
    then in the interpreter's platlib and purelib (a system-wide install may split the two)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    seen = []
    for root in (here, sysconfig.get_paths().get("platlib"), sysconfig.get_paths().get("purelib")):
        d = os.path.join(root, NATIVE_DIR) if root else None
        if d and d not in seen and os.path.isdir(d):
            return d
        seen.append(d)
    return None
