"""attnmech.run against `attnmech run`: the same document for the same seed (threads=1, one BLAS thread; timings,
plugin paths, thread counts and version strings excluded, the rules of tests/embed/test_embed.py), Results.save
writes the CLI's directory file for file, load reads it back, write_problem → run("npy") round trip. ~2 s."""
import json
import math
import os
import subprocess

import numpy as np
import pytest

import attnmech as am
import toy

EXCLUDED = {"plugins", "threads", "blas_threads", "attnmech_version"}  # plus every timing: a key with "time" ending in "_s"


def excluded(key):
    return key in EXCLUDED or ("time" in key and key.endswith("_s"))


def plain(node):
    """A document as json.load gives it (arrays → nested lists, NaN → None), excluded keys removed."""
    if isinstance(node, dict):
        return {k: plain(v) for k, v in node.items() if not excluded(k)}
    if isinstance(node, (list, tuple)):
        return [plain(v) for v in node]
    if isinstance(node, np.ndarray):
        return plain(node.tolist())
    if isinstance(node, float) and not math.isfinite(node):
        return None
    return node


MARKOV = dict(P=40, P_test=60, widths_scan=[10, 100], seed=3)


def cli_run(cli, out, task, sets, estimator=None):
    args = [cli, "run", task, "--quiet", "--out", str(out)] + (["--estimator", estimator] if estimator else [])
    for k, v in sets.items():
        args += ["--set", f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    r = subprocess.run(args + ["--set", "threads=1"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return resolved(json.load(open(os.path.join(out, "results.json"))), out)


def is_reference(node):
    return isinstance(node, dict) and set(node) == {"npy_file", "shape", "dtype"}


def resolved(node, d):
    """A results.json as parsed, each .npy reference replaced by the nested list of its file (what schema 2 held)."""
    if is_reference(node):
        return np.load(os.path.join(d, node["npy_file"])).tolist()
    if isinstance(node, dict):
        return {k: resolved(v, d) for k, v in node.items()}
    if isinstance(node, list):
        return [resolved(v, d) for v in node]
    return node


@pytest.fixture(scope="module")
def markov():
    return am.run("markov", threads=1, progress=False, **MARKOV)


def test_markov_equals_the_cli(markov, cli, tmp_path):
    ref = cli_run(cli, tmp_path / "cli", "markov", MARKOV)
    assert plain(markov) == plain(ref)
    assert markov.status == "ok" and len(markov["runs"]) == 2
    assert isinstance(markov["runs"][0]["U"][0], np.ndarray) and markov["runs"][0]["U"][0].shape == (4, 4)
    assert markov["plugins"]["task"].endswith(".so")


def test_save_writes_the_cli_directory(markov, cli, tmp_path):
    cli_run(cli, tmp_path / "cli", "markov", MARKOV)
    markov.save(tmp_path / "py")
    a, b = sorted(os.listdir(tmp_path / "py")), sorted(os.listdir(tmp_path / "cli"))
    assert a == b and "results.json" in a and any(f.endswith(".svg") for f in a)
    for f in a:
        pa, pb = tmp_path / "py" / f, tmp_path / "cli" / f
        if f == "results.json":
            assert plain(json.load(open(pa))) == plain(json.load(open(pb)))
        else:
            assert pa.read_bytes() == pb.read_bytes(), f


def test_load_round_trip(markov, tmp_path):
    markov.save(tmp_path / "r", plots=False)
    assert not any(f.endswith(".svg") for f in os.listdir(tmp_path / "r"))
    back = am.load(tmp_path / "r")
    assert plain(back) == plain(markov)
    assert isinstance(back["runs"][1]["U"][0], np.ndarray)
    files = back.plot(tmp_path / "r")
    assert files and all((tmp_path / "r" / f).is_file() for f in files)
    assert "task markov" in back.summary()


def test_save_and_plot_write_the_formats_asked(markov, tmp_path):
    """formats= as the CLI's --plots: SVG only by default; a list, "all", and a bad name refused before writing."""
    def kinds(d):
        return {os.path.splitext(f)[1] for f in os.listdir(d) if f.endswith((".svg", ".pdf", ".png"))}
    markov.save(tmp_path / "default")
    assert kinds(tmp_path / "default") == {".svg"}
    with_cairo = True
    try:
        markov.save(tmp_path / "both", formats=["svg", "pdf"])
    except am.UsageError as e:  # a build without cairo names the formats it has
        assert "pdf" in str(e)
        with_cairo = False
    if with_cairo:
        assert kinds(tmp_path / "both") == {".svg", ".pdf"}
        (tmp_path / "p").mkdir()
        files = markov.plot(tmp_path / "p", formats="all")
        assert {os.path.splitext(f)[1] for f in files} == {".svg", ".pdf", ".png"} == kinds(tmp_path / "p")
        assert (tmp_path / "p" / [f for f in files if f.endswith(".png")][0]).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(am.UsageError, match="svg"):
        markov.save(tmp_path / "bad", formats="svg,jpeg")
    assert not (tmp_path / "bad").exists()
    with pytest.raises(TypeError):
        markov.plot(tmp_path / "p", formats=[1])


def test_save_keeps_arrays_of_16_elements_only_in_npy(markov, tmp_path):
    markov.save(tmp_path / "r", plots=False)
    doc = json.load(open(tmp_path / "r" / "results.json"))
    assert doc["schema_version"] == 3
    ref = doc["runs"][0]["test"]["mean"]  # P_test = 60 numbers
    assert ref == {"npy_file": "runs.0.test.mean.npy", "shape": [60], "dtype": "<f8"}
    np.testing.assert_array_equal(np.load(tmp_path / "r" / ref["npy_file"]), markov["runs"][0]["test"]["mean"])
    assert is_reference(doc["runs"][0]["U"][0])  # U_1: 4 x 4 = 16 elements
    assert doc["runs"][0]["U"][1] == markov["runs"][0]["U"][1].tolist()  # U_2: 2 x 2, inline
    # the threshold moves: with npy_min_elements above every array's size nothing is a reference
    markov.save(tmp_path / "inline", plots=False, npy_min_elements=10**9)
    assert not any(f.endswith(".npy") for f in os.listdir(tmp_path / "inline"))
    assert plain(am.load(tmp_path / "inline")) == plain(markov)


def test_load_reads_a_schema_2_document(markov, tmp_path):
    """A results.json of attnmech 3.2: every array inline as nested lists, no .npy beside it."""
    (tmp_path / "old").mkdir()
    doc = dict(plain(markov), schema_version=2)
    with open(tmp_path / "old" / "results.json", "w") as f:
        json.dump(doc, f)
    back = am.load(tmp_path / "old")
    assert plain(back) == plain(doc)
    assert isinstance(back["runs"][0]["test"]["mean"], np.ndarray) and back["runs"][0]["test"]["mean"].shape == (60,)


@pytest.mark.numerics  # the pinned numbers: results of the float path (conftest.py)
def test_default_run_is_the_main_experiment_with_its_accuracies():
    # the project's pinned numbers (common rules): RN accuracy 95.9 % at the first width, GP 0.832
    r = am.run(threads=1, progress=False)
    assert r["task"] == "markov" and r["estimator"] == "theory"
    run = r["runs"][0]
    # Exact counts of 1000 test points (abs=5e-4 < 1/1000), so they hold on every float path only if no mean is
    # near a sign flip. Float paths move ξ by ~1e-16 relative and the solve's stopping point within the stopping
    # rule (this run: |Δv| ≤ 2|g|₂/λ_min ≈ 5e-10; at the gradient test's limit ~1e-6), the means by that times
    # their O(1) sensitivity to U; the GP means only by round-off (κ(Γ)·ε ≈ 1e-12). The smallest |mean| is 4.6e-4
    # (GP 3.8e-4): the premise, kept at 1e-4.
    assert np.min(np.abs(run["test"]["mean"])) >= 1e-4 and np.min(np.abs(run["gp"]["test"]["mean"])) >= 1e-4
    assert run["test"]["accuracy"] == pytest.approx(0.959, abs=5e-4)
    assert run["gp"]["test"]["accuracy"] == pytest.approx(0.832, abs=5e-4)


def test_python_values_become_settings():
    r = am.run("replica", nu=3, alpha=[0.5, 1, 2], progress=False, threads=1, **{"lambda": [0.01, 0.1]})
    assert r["estimator"] == "replica" and r["params"]["estimator"]["nu"] == 3


@pytest.mark.numerics  # the pinned numbers: results of the float path (conftest.py)
def test_problem_round_trip(tmp_path):
    d = am.write_problem(tmp_path / "toy", toy.X, toy.y, toy.X_test, np.array([1.0, -1.0]), heads=toy.HEADS,
                         W=toy.W, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T)
    ds = am.read_problem(d)
    np.testing.assert_array_equal(ds["X_train"], toy.X)
    np.testing.assert_array_equal(ds["attention"]["l1_h2"], toy.W[1])
    assert ds["heads"] == [2.0, 2.0] and ds["temperature"] == toy.T
    r = am.run("npy", dir=str(d), threads=1, progress=False)
    run = r["runs"][0]
    xi = am.xi_from_heads(toy.X, heads=toy.HEADS, W=toy.W)
    xt = am.xi_from_heads(toy.X_test, heads=toy.HEADS, W=toy.W)
    with am.Theory(xi, toy.y, heads=toy.HEADS, widths=toy.WIDTHS, variances=toy.VARIANCES, temperature=toy.T) as th:
        # the spec's optimum, within its 10 decimals plus the run's distance to the optimum (toy.py)
        U = list(run["U"])
        assert abs(run["action"] - toy.OPT["S_code"]) < toy.SPEC_TOL
        np.testing.assert_allclose(run["U"][0], toy.OPT["U1"], rtol=0,
                                   atol=toy.SPEC_TOL + toy.newton_distance(th, U))
        assert np.all(np.abs(run["test"]["mean"] - toy.OPT["mean"])
                      <= toy.at_optimum_tolerance(th, U, lambda U: th.predict(xt, U)[0]))
        # the same numbers through Theory, bit for bit (the same ξ and the same solve on the same path)
        sol = th.solve()
    np.testing.assert_array_equal(sol.U[0], run["U"][0])


def test_problem_qk_heads(tmp_path):
    rng = np.random.default_rng(0)
    Q = [rng.normal(size=(3, toy.N0)) for _ in range(2)]
    K = [rng.normal(size=(3, toy.N0)) for _ in range(2)]
    d = am.write_problem(tmp_path / "qk", toy.X, toy.y, heads=[2], Q=Q, K=K, widths=10, temperature=0.1)
    ds = am.read_problem(d)
    np.testing.assert_array_equal(ds["attention"]["l1_h2"]["K"], K[1])
    xa = am.xi_from_heads(toy.X, heads=[2], Q=Q, K=K)
    assert xa.shape == (toy.P, toy.N0, 2)


def test_plugins_and_versions():
    names = {p["name"]: p for p in am.plugins()}
    assert {"markov", "npy", "theory", "posterior"} <= set(names)
    assert names["markov"]["kind"] == "task" and names["markov"]["default_estimator"] == "theory"
    assert any(p["name"] == "P" and p["type"] == "int" for p in names["markov"]["params"])
    assert am.abi_version() == 3 and am.__version__.count(".") == 2
    # The soname the package looks for is the library's own (a stale constant would load an older library).
    from attnmech import _lib
    assert _lib.SOVERSION == _lib.core.am_soversion() == 3


def test_save_keeps_hostile_keys_inside_the_directory(tmp_path):
    """Issue 23 item 2: am.load(H).save("out") of a results.json whose keys are paths wrote ../x.npy beside out/.
    Now every array lands inside out/ under its key encoded by the one safe-name rule."""
    base = tmp_path / "a" / "b"
    base.mkdir(parents=True)
    arr = list(range(16))
    doc = {"status": "ok", "task": "t", "estimator": "e", "../../x": arr, "/abs": arr, "a/b": arr, "..": arr,
           "α": arr, "k" * 10240: arr}
    (tmp_path / "h.json").write_text(json.dumps(doc))
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    am.load(tmp_path / "h.json").save(base / "out")
    after = sorted(str(p) for p in tmp_path.rglob("*"))
    added = [p for p in after if p not in before]
    assert all(p.startswith(str(base / "out")) for p in added), added
    names = sorted(os.listdir(base / "out"))
    assert "%2E.%2F..%2Fx.npy" in names and "%2Fabs.npy" in names and "a%2Fb.npy" in names and "%CE%B1.npy" in names
    assert len(names) == 7 and all(len(n) <= 200 and "/" not in n for n in names)
    assert np.load(base / "out" / "%2E.%2F..%2Fx.npy").tolist() == arr


SMALL_POTTS = dict(L=5, C=3, M=50, M_test=20, burnin=10, equilibration_test=0)


def recording_progress(calls):
    """A progress callback that records each call: no call = nothing computed."""
    def sink(done, total, label):
        calls.append(label)
    return sink


def test_output_prefix_parent_created_before_the_run(tmp_path, monkeypatch):
    # out_* is a file prefix: its missing parents are made before compute, the run then writes beside them
    # (the CLI's rule, tests/cli/test_progress_out.py).
    monkeypatch.chdir(tmp_path)
    res = am.run("potts", threads=1, progress=False, out_sequences="data/deeper/potts", **SMALL_POTTS)
    assert res["status"] == "ok"
    written = sorted(os.listdir(tmp_path / "data" / "deeper"))
    assert written and all(f.startswith("potts") for f in written), written


@pytest.mark.parametrize("key,value,why", [
    ("out_sequences", "a-file/data/potts", "cannot create the directory a-file/data"),
    ("out_sequences", "data/", "expected a file prefix such as DIR/NAME, got a directory"),
])
def test_bad_output_path_refused_before_compute(tmp_path, monkeypatch, key, value, why):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("in the way\n")
    calls = []
    with pytest.raises(am.errors.UsageError) as e:
        am.run("potts", threads=1, progress=recording_progress(calls), **{key: value})  # the full default run
    assert f"parameter {key!r}={value!r}: {why}" in str(e.value) and "nothing was computed" in str(e.value)
    assert calls == []
    assert sorted(os.listdir(tmp_path)) == ["a-file"]


def test_export_dir_under_a_file_refused_before_compute(tmp_path):
    (tmp_path / "a-file").write_text("in the way\n")
    calls = []
    with pytest.raises(am.errors.UsageError, match="'export_dir'.*cannot create the directory"):
        am.run("markov", "posterior", threads=1, progress=recording_progress(calls),
               export_dir=str(tmp_path / "a-file" / "model"))
    assert calls == []


def test_unknown_output_parameter_creates_nothing(tmp_path, monkeypatch):
    # The spec is validated first: a misspelt out_ parameter is a usage error and no directory appears.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(am.errors.UsageError, match="out_sequencez"):
        am.run("potts", threads=1, progress=False, out_sequencez="data/potts")
    assert os.listdir(tmp_path) == []
