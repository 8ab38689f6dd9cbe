"""Every status maps to its exception class (with the library's message); real failures raise them; warnings
are Python warnings, not exceptions. Cheap."""
import os
import warnings

import numpy as np
import pytest

import attnmech as am
from attnmech import _lib, errors
import toy

STATUS_CLASS = {
    _lib.AM_ERR_INVALID_ARGUMENT: am.InvalidArgument, _lib.AM_ERR_SHAPE: am.ShapeError,
    _lib.AM_ERR_NONFINITE: am.NonFiniteError, _lib.AM_ERR_DOMAIN: am.DomainError,
    _lib.AM_ERR_SINGULAR: am.SingularError, _lib.AM_ERR_NOT_CONVERGED: am.NotConverged,
    _lib.AM_ERR_NO_MEMORY: am.OutOfMemory, _lib.AM_ERR_IO: am.FileError, _lib.AM_ERR_FORMAT: am.FormatError,
    _lib.AM_ERR_NOT_FOUND: am.NotFound, _lib.AM_ERR_PLUGIN: am.PluginError, _lib.AM_ERR_ABI: am.ABIError,
    _lib.AM_ERR_BUFFER_TOO_SMALL: am.InternalError, _lib.AM_ERR_USAGE: am.UsageError,
    _lib.AM_ERR_INTERNAL: am.InternalError, _lib.AM_CANCELLED: am.Cancelled,
}


@pytest.mark.parametrize("status", sorted(STATUS_CLASS))
def test_status_maps_to_its_exception(status):
    e = errors.error_for(status, "the message")
    assert type(e) is STATUS_CLASS[status]
    assert isinstance(e, am.Error) and e.status == status and e.message == "the message"
    assert _lib.status_string(status) in str(e)
    assert errors.error_for(status).message == _lib.status_string(status)  # no message: the status name


def test_families():
    assert issubclass(am.UsageError, ValueError) and issubclass(am.ShapeError, am.UsageError)
    assert issubclass(am.DomainError, ValueError) and issubclass(am.NonFiniteError, am.DomainError)
    assert issubclass(am.FileError, OSError) and issubclass(am.OutOfMemory, MemoryError)
    assert issubclass(am.NotFound, LookupError) and issubclass(am.ABIError, am.PluginError)


def test_unknown_parameter_is_usage_error():
    with pytest.raises(am.UsageError, match="no_such_key"):
        am.run("markov", no_such_key=1, progress=False)


def test_out_of_range_value_is_usage_error():
    with pytest.raises(am.UsageError) as ei:
        am.run("markov", P=-5, progress=False)
    assert ei.value.status == _lib.AM_ERR_USAGE and "P" in ei.value.message


def test_unknown_task():
    with pytest.raises(am.UsageError):
        am.run("no-such-task", progress=False)


def xi():
    return am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W)


def test_negative_temperature_is_domain_error():
    with pytest.raises(am.DomainError):
        am.Theory(xi(), toy.y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=-1.0)


def test_nonfinite_input():
    bad = xi().copy(order="F")
    bad[0, 0, 0] = np.nan
    with pytest.raises(am.NonFiniteError):
        am.Theory(bad, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1)


def test_action_outside_domain():
    with am.Theory(xi(), toy.y, heads=toy.HEADS, widths=toy.WIDTHS, temperature=0.1) as th:
        U = th.gp_point()
        U[0] = -U[0]
        with pytest.raises(am.DomainError):
            th.action(U)


def test_not_converged_carries_the_last_iterate():
    with am.Theory(xi(), toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES,
                   temperature=toy.T) as th:
        with pytest.raises(am.NotConverged) as ei:
            # not converged by construction: one Newton step from the GP point leaves max|G| ~ 6e-2, 10^7 times
            # the stopping tolerance 1e-10·|S|, on any float path
            th.solve(max_iter=1)
        sol = ei.value.result
        assert isinstance(sol, am.Solution) and sol.status == "not_converged" and sol.iterations == 1
        assert sol.U[0].shape == (4, 4) and np.all(np.isfinite(sol.U[0]))


def test_files(tmp_path):
    with pytest.raises(am.FileError):
        am.load(tmp_path / "absent")
    (tmp_path / "results.json").write_text("{ not json")
    with pytest.raises(am.FormatError):
        am.load(tmp_path)
    with pytest.raises(am.FileError):
        am.read_problem(tmp_path / "absent")


def test_warning_status_is_a_python_warning():
    # a posterior with 20 draws: R-hat > 1.01, flagged "warning" — a complete result, not an error
    with pytest.warns(am.AttnmechWarning, match="R-hat"):
        r = am.run("markov", "posterior", widths=[10], P=40, P_test=100, feature_dim=20, seq_len=10, chains=2,
                   warmup=5, samples=20, threads=1, progress=False)
    assert r.status == "warning" and r["runs"][0]["run_status"] == "warning"


def test_progress_callback_can_cancel():
    seen = []

    def cb(done, total, label):
        seen.append(label)
        return "newton" in label  # stop at the first solver step

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = am.run("markov", P=40, P_test=60, threads=1, progress=cb)
    assert r.status == "cancelled" and any("cancelled" in str(x.message) for x in w)
    assert seen and any("newton" in s for s in seen)
