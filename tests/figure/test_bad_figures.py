#!/usr/bin/env python3
"""attnmech figure with bad figure specs, through the CLI, each a repro of a defect: a
spec nested 10^5 deep (stack overflow in `figure --check`), a FIFO / /dev/zero / a directory as the spec (hang,
"no figure"), a NUL in a task name, field types the drawing reads ("digits": "3", "y_scale": "2", a numeric
title: the JSON library's raw text, exit 1, some only after every sweep had computed). Each must end at once with
exit 2 and a message naming the field; nothing may be computed. ~1 s release.
Usage: test_bad_figures.py ATTNMECH_EXE SOURCE_DIR (AM_PLUGIN_PATH and OPENBLAS_NUM_THREADS=1 set by meson)."""
import copy
import json
import os
import subprocess
import sys
import tempfile

EXE, SRC = sys.argv[1], sys.argv[2]
TINY = json.load(open(os.path.join(SRC, "tests", "figure", "tiny.json"), encoding="utf-8"))
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def figure(*args, timeout=60):
    try:
        r = subprocess.run([EXE, "figure", *args], capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        return -1, "hung"


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def test_deep_and_not_regular(tmp):
    head = json.dumps(TINY)[:-1]  # without the closing brace: a "plot" block is added after "panels"
    spec = write(tmp, "deep.json", head.replace('"panels":', '"plot": ' + "[" * 100000 + "]" * 100000 + ', "panels":'))
    code, err = figure(spec, "--check")
    check(code == 2 and "nested deeper than 128 levels" in err,
          f"deep nesting: a figure spec nested 10^5 deep is refused by figure --check, exit 2 ({code}: {err.strip()[:120]})")
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    code, err = figure(fifo, "--check", timeout=20)
    check(code == 2 and "is a FIFO, not a figure spec" in err, f"not a file: a FIFO as figure spec, exit 2 ({code}: {err.strip()[:100]})")
    code, err = figure("/dev/zero", "--check", timeout=20)
    check(code == 2 and "is a character device, not a figure spec" in err, f"not a file: /dev/zero as figure spec, exit 2 ({code})")
    code, err = figure(tmp, "--check")
    check(code == 2 and "is a directory, not a figure spec" in err, f"not a file: a directory as figure spec, exit 2 ({code})")


def bad(tmp, name, change, words, what):
    spec = copy.deepcopy(TINY)
    change(spec)
    out = os.path.join(tmp, name)
    code, err = figure(write(tmp, name + ".json", json.dumps(spec)), "--out", out)
    computed = os.path.exists(os.path.join(out, "theory", "points"))
    check(code == 2 and words in err and "json.exception" not in err and not computed,
          f"{what}, exit 2 before any sweep runs ({code}, computed: {computed}: {err.strip()[:160]})")


def test_types(tmp):
    def series(i, key, value):
        return lambda s: s["panels"][0]["series"][i].__setitem__(key, value)
    bad(tmp, "digits", series(1, "digits", "3"), 'panels.0.series.1: "digits" must be a whole number from 0 to 17 (got "3")',
        "figure types: a string digits is named")
    bad(tmp, "digits_huge", series(1, "digits", 1e30), '"digits" must be a whole number from 0 to 17',
        "figure types: digits 1e30 is named")
    bad(tmp, "y_scale", series(0, "y_scale", "100"), 'panels.0.series.0: "y_scale" must be a number (got "100")',
        "figure types: a string y_scale is named")
    bad(tmp, "abs", series(0, "abs", 1), '"abs" must be true or false', "figure types: a numeric abs is named")
    bad(tmp, "title", lambda s: s["panels"][1].__setitem__("title", 5), 'panels.1: "title" must be a string (got 5)',
        "figure types: a numeric panel title is named")
    bad(tmp, "id", lambda s: s["panels"][1].__setitem__("id", ["U"]), 'panels.1: "id" must be a string',
        "figure types: a list as panel id is named")
    bad(tmp, "heat_title", lambda s: s["panels"][1]["panels"][0].__setitem__("title", 1), 'panels.1.panels.0: "title" must be a string',
        "figure types: a heat-map panel's numeric title is named")
    bad(tmp, "no_x", lambda s: s["panels"][0]["series"][0].pop("x"), 'needs "x" (an axis) or style "hline"',
        "figure types: a metric series without x fails the check, not the drawing")
    bad(tmp, "number_array", lambda s: s["caption"]["numbers"][0].update({"array": "a"}) or s["caption"]["numbers"][0].pop("metric"),
        'caption.numbers.0: "metric" (a scalar of results.json) is missing', "figure types: a caption number without a metric")
    bad(tmp, "nul", lambda s: s["sweeps"]["theory"].__setitem__("task", "markov\u0000x"), "holds a NUL character",
        "NUL in names: a NUL in a figure's task name is refused")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_deep_and_not_regular(tmp)
        test_types(tmp)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
