"""What a coevolution user reads from Python: the arrays a report lists in `npy_only` (an alignment fit's params) are
written only as .npy files and come back from `attnmech.load` as the same arrays; a reference that points out of
the results directory is refused; `attnmech plot` redraws the contact map of a hand-written alignment-fit document
whose params are references; and `attnmech.run("msa", file=...)` (when the msa task is built) gives scores,
contacts and params, saved as plmc's couplings.txt. ~2 s."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

import attnmech as am
from attnmech._core import Record

L, C, H = 6, 21, 2
SITES = [3, 4, 5, 9, 12, 20]  # plmc's focus numbering: a region of the alignment skipped between 5 and 9
FOCUS = "MKVLAT"


def msa_fit_run():
    """The run keys of an alignment fit (docs/msa.md), by hand: symmetric scores, contacts ranked by score."""
    i, j = np.triu_indices(L, 1)
    s = np.sin(1.7 * i + 2.3 * j + 0.5)
    scores = np.zeros((L, L))
    scores[i, j] = scores[j, i] = s
    order = np.argsort(-s, kind="stable")
    sites = np.array(SITES, dtype=float)
    letters = np.array([ord(c) for c in FOCUS], dtype=float)
    rng = np.random.default_rng(7)
    return {
        "fit": "alignment",  # the key that marks an alignment fit's run
        "train_loss": 1.875, "test_loss": 2.125, "neff": 41.5, "iterations": 37, "evaluations": 41,
        "stop_reason": "gradient below gtol", "fit_time_s": 0.25, "heads": H, "model": "factored", "L": L, "C": C,
        "site_numbers": sites, "scores": scores, "fn": scores + 1,
        "contacts": {"i": sites[i][order], "j": sites[j][order], "res_i": letters[i][order],
                     "res_j": letters[j][order], "score": s[order], "separation": (sites[j] - sites[i])[order]},
        "params": {"h": rng.normal(size=(L, C)), "J": rng.normal(size=(L, L, C, C)),
                   "A": rng.random((H, L, L)), "V": rng.normal(size=(H, C, C))},
        "run_status": "ok"}


def doc_with(run, report=None):
    d = {"task": "msa", "estimator": "pseudolikelihood", "seed": 0, "runs": [run], "status": "ok"}
    if report is not None:
        d["report"] = report
    return d


def save(doc, path):
    rec = Record.from_dict(doc)
    try:
        am.Results(rec).save(path)
    finally:
        rec.close()


def test_npy_only_arrays_are_files_and_load_back_identical(tmp_path):
    run = msa_fit_run()
    run["params"]["n"] = np.array([-1, 7, 3], dtype=np.int32)  # 3 elements: a file only because it is npy_only
    save(doc_with(run, {"npy_only": ["runs.*.params"]}), tmp_path / "D")
    text = (tmp_path / "D" / "results.json").read_text()
    refs = json.loads(text)["runs"][0]["params"]
    assert refs["J"] == {"npy_file": "runs.0.params.J.npy", "shape": [L, L, C, C], "dtype": "<f8"}
    assert refs["n"] == {"npy_file": "runs.0.params.n.npy", "shape": [3], "dtype": "<i4"}
    assert len(text) < 20000  # J is 15876 numbers: not in the text
    np.testing.assert_array_equal(np.load(tmp_path / "D" / "runs.0.params.J.npy"), run["params"]["J"])
    back = am.load(tmp_path / "D")["runs"][0]
    for k, v in run["params"].items():
        assert back["params"][k].dtype == v.dtype and back["params"][k].shape == v.shape
        np.testing.assert_array_equal(back["params"][k], v)  # bit for bit: .npy keeps the doubles
    np.testing.assert_array_equal(back["scores"], run["scores"])  # not npy_only: inline, 17 digits


@pytest.mark.parametrize("name,why", [("../outside.npy", "starts with '.'"), ("sub/x.npy", "holds '/'"),
                                      ("link.npy", "symbolic link")])
def test_load_refuses_a_reference_out_of_the_directory(tmp_path, name, why):
    np.save(tmp_path / "outside.npy", np.arange(3.0))
    d = tmp_path / "D"
    (d / "sub").mkdir(parents=True)
    np.save(d / "sub" / "x.npy", np.arange(3.0))
    os.symlink(tmp_path / "outside.npy", d / "link.npy")
    (d / "results.json").write_text(json.dumps({"runs": [{"params": {"J": {"npy_file": name, "shape": [3],
                                                                          "dtype": "<f8"}}}]}))
    with pytest.raises(am.FormatError, match=re.escape("runs.0.params.J: not a valid .npy reference")) as e:
        am.load(d)
    assert why in str(e.value)


def test_cli_plot_redraws_the_contact_map_from_references(cli, tmp_path):
    """A results directory whose params are references and whose report is gone (as `attnmech plot` meets a
    document written before plugins declared plots): the plugin's describe runs and the contact map is drawn."""
    run = msa_fit_run()
    d = tmp_path / "D"
    d.mkdir()
    params = run.pop("params")
    doc = doc_with({k: (v.tolist() if isinstance(v, np.ndarray) else
                        {kk: vv.tolist() for kk, vv in v.items()} if isinstance(v, dict) else v)
                    for k, v in run.items()})
    doc["runs"][0]["params"] = {}
    for k, v in params.items():
        np.save(d / f"runs.0.params.{k}.npy", v)
        doc["runs"][0]["params"][k] = {"npy_file": f"runs.0.params.{k}.npy", "shape": list(v.shape), "dtype": "<f8"}
    (d / "results.json").write_text(json.dumps(doc))
    r = subprocess.run([cli, "plot", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    svg = (d / "contact_map.svg").read_text()
    assert svg.count("<circle") == L + 1  # the top L of the 9 pairs with |i - j| >= 6, and the legend's ring


def msa_task_params():
    for p in am.plugins():
        if p["name"] == "msa" and p["kind"] == "task":
            return {q["name"] for q in p["params"]}
    return None


@pytest.mark.skipif(msa_task_params() is None, reason="the msa task plugin is not built")
def test_run_msa_with_a_file_keyword_gives_scores_contacts_params_and_couplings_txt(tmp_path):
    # 16 sequences of 8 columns: columns 1 and 6 covary (A..C ↔ W..Y), the rest are noise; the first row is the focus
    rng = np.random.default_rng(3)
    alphabet = "ACDEFGHIKLMNPQRSTVWY"
    rows = []
    for m in range(16):
        s = [alphabet[k] for k in rng.integers(0, 20, 8)]
        s[1], s[6] = "ACD"[m % 3], "WYV"[m % 3]
        rows.append(">seq%d\n%s\n" % (m, "".join(s)))
    path = tmp_path / "tiny.a2m"
    path.write_text("".join(rows))
    kw = {"file": path, "heads": 2}  # a pathlib.Path: the keyword `file` is a plain --set, no Python argument
    if "focus" in msa_task_params():
        kw["focus"] = "seq0"
    r = am.run("msa", seed=0, threads=1, progress=False, **kw)
    fit = r["runs"][0]
    Lf = int(fit["L"])
    assert fit["scores"].shape == (Lf, Lf)
    np.testing.assert_array_equal(fit["scores"], fit["scores"].T)
    assert np.all(np.diag(fit["scores"]) == 0)
    assert len(fit["contacts"]["i"]) == Lf * (Lf - 1) // 2
    assert fit["params"]["J"].shape == (Lf, Lf, int(fit["C"]), int(fit["C"]))
    r.save(tmp_path / "D")
    lines = (tmp_path / "D" / "couplings.txt").read_text().splitlines()
    assert len(lines) == Lf * (Lf - 1) // 2
    assert all(re.fullmatch(r"-?\d+ \S -?\d+ \S 0 -?\d+\.\d{6}", l) for l in lines)
    pairs = [(int(l.split()[0]), int(l.split()[2])) for l in lines]
    assert pairs == sorted(pairs)  # plmc's order: i ascending, then j
    back = am.load(tmp_path / "D")["runs"][0]
    np.testing.assert_array_equal(back["params"]["J"], fit["params"]["J"])
