"""pytest configuration of the Python package's suite (tests/python): run by the meson test `python` against the
build tree (ATTNMECH_LIBRARY, AM_PLUGIN_PATH and PYTHONPATH set by tests/python/meson.build), or by hand:
    meson devenv -C build python3 -m pytest tests/python
The CLI of the build tree is ATTNMECH_CLI (for the equality checks against `attnmech run`)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # toy.py


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("ATTNMECH_CLI")
    if not path or not os.path.isfile(path):
        pytest.skip("ATTNMECH_CLI (the build tree's attnmech executable) is not set")
    return path


def pytest_configure(config):
    """CI sets ATTNMECH_REQUIRE_TORCH=1 (.ci/test installs python3-torch): there the torch tests must run, so a
    missing torch is an error, not a skip. The marker `numerics` names the tests whose results depend on the float
    path (SIMD kernel table, BLAS kernels): the meson test `python-numerics` runs them (-m numerics) once per
    AM_SIMD level."""
    config.addinivalue_line("markers", "numerics: results depend on the float path; run per AM_SIMD level "
                                       "(meson test python-numerics)")
    if os.environ.get("ATTNMECH_REQUIRE_TORCH") == "1":
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise pytest.UsageError(f"ATTNMECH_REQUIRE_TORCH=1 but torch does not import: {e}")
