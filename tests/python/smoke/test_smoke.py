"""Smoke test of an installed wheel (.ci/wheel runs it from outside the source tree, in a fresh venv): the package
finds its own library, plugins and CLI (no LD_LIBRARY_PATH, no AM_PLUGIN_PATH), the main experiment gives the
pinned first accuracy, Theory solves, a results directory is written, the bundled CLI runs; a repaired wheel
(AM_SMOKE_BUNDLED=1) takes no library from the system but the C/C++ runtime and zlib. ~3 s."""
import os
import subprocess
import sys

import numpy as np

import attnmech as am


def test_library_is_the_packaged_one():
    core, report = am.library_path()
    native = os.path.join(os.path.dirname(os.path.dirname(am.__file__)), ".attnmech.mesonpy.libs")
    assert core.startswith(native) and report.startswith(native), (core, report)
    assert am.abi_version() == 3
    names = {p["name"]: p["path"] for p in am.plugins()}
    assert {"markov", "npy", "theory", "posterior", "replica", "potts", "oneshot"} <= set(names)
    assert all(p.startswith(os.path.join(native, "attnmech-plugins-")) for p in names.values())


def test_wheel_is_tagged_for_any_python3():
    """Pure ctypes: the installed wheel says py3-none-<platform> (not cpXY-cpXY) and is not purelib (it carries
    native code)."""
    import glob
    site = os.path.dirname(os.path.dirname(am.__file__))
    wheel = glob.glob(os.path.join(site, "attnmech-*.dist-info", "WHEEL"))
    assert len(wheel) == 1, wheel
    fields = dict(line.split(": ", 1) for line in open(wheel[0]).read().splitlines() if ": " in line)
    assert fields["Root-Is-Purelib"] == "false"
    assert fields["Tag"].startswith("py3-none-") and not fields["Tag"].endswith("-any"), fields["Tag"]


def test_main_experiment(tmp_path):
    r = am.run(threads=1, progress=False)
    assert round(r["runs"][0]["test"]["accuracy"], 3) == 0.959
    r.save(tmp_path / "out")
    assert (tmp_path / "out" / "results.json").is_file()
    assert am.load(tmp_path / "out")["task"] == "markov"


def test_theory():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4, 5))
    y = np.sign(X[:, 0, 0])
    xi = am.xi_from_heads(X, heads=[2], W=[np.eye(5), np.zeros((5, 5))])
    with am.Theory(xi, y, heads=[2], widths=10, temperature=0.1) as th:
        assert th.solve().status.startswith("converged")


def test_bundled_cli():
    out = subprocess.run([sys.executable, "-m", "attnmech", "list"], capture_output=True, text=True)
    assert out.returncode == 0 and "markov" in out.stdout


# What a machine without the build's libraries needs of its own: the C/C++ runtime and zlib (manylinux's base
# set). Everything else (OpenBLAS, LAPACKE, libpng, gfortran) must come from the wheel itself.
BASE_LIBRARIES = ("libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "libz.so", "libpthread.so", "libdl.so",
                  "librt.so", "ld-linux", "linux-vdso")


def test_native_libraries_come_from_the_wheel():
    """A wheel repaired for other machines (.ci/wheel sets AM_SMOKE_BUNDLED=1): every ELF file of the package
    resolves each library inside the installed package or to the base set above, none is missing."""
    if os.environ.get("AM_SMOKE_BUNDLED") != "1":
        import pytest
        pytest.skip("a wheel built for this machine links the system's libraries (AM_SMOKE_BUNDLED unset)")
    site = os.path.dirname(os.path.dirname(am.__file__))
    elves = []
    for top in (os.path.join(site, "attnmech"), os.path.join(site, ".attnmech.mesonpy.libs"),
                os.path.join(site, "attnmech.libs")):
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        elves.append(p)
    assert any("attnmech.libs" in p for p in elves), "no bundled libraries: not a repaired wheel"
    for elf in elves:
        out = subprocess.run(["ldd", elf], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
        for line in out.stdout.splitlines():
            assert "not found" not in line, (elf, line)
            name, _, where = line.strip().partition(" => ")
            where = where.split(" (")[0].strip()
            if not where or where.startswith(site):
                continue
            assert name.startswith(BASE_LIBRARIES), f"{elf} takes {name} from the system ({where})"
