#!/usr/bin/env python3
"""attnmech figure, end to end through the CLI. Cheap: a few seconds release (tiny Markov grids, a tiny
replica curve; no shipped figure is run at its default size). Checks:
  1. every shipped spec (examples/figures/*.json) parses, its sweeps are valid sweep specs whose points the plugins
     accept (`figure NAME --check`), and `figure --list` lists it with its title, paper reference and run time;
  2. a tiny figure (tests/figure/tiny.json: 2 configurations x 2 widths x 2 seeds of the Markov theory) runs end to
     end: two SVG files with the expected series (2 theory lines + 2 GP reference lines; 2 heat-map panels), a
     figure.json whose numbers are the mean +- s.e. over seeds of the points' results.json, a caption.md quoting
     the key numbers from those results; re-running resumes (every point already complete);
  3. --plot-only redraws the same figure.json and SVGs from the results alone;
  4. shipped specs at tiny settings (--set) draw every series they declare (no "no data" warning): markov-U,
     markov-alignment, replica-curve; oneshot-U, oneshot-alignment and oneshot-heads on a tiny real oneshot run
     (their heat map, bars and caption numbers are the point's results);
  5. --set on an axis (seed=0) and on one sweep (theory.P=...), and bad specs / options: exit 2 with a message that
     names the problem;
  6. --style / --font-size / --size (figure and plot): the SVG's width and height are the page's, a 13-unit axis label
     reads the asked pt size (font-size x width / viewBox width), no option = the same SVG byte for byte, bad
     values exit 2 naming the option;
  7. figure.py (the matplotlib redraw from figure.json): with matplotlib importable it runs and writes a PNG per
     plot; without, it runs against a recording stand-in of matplotlib and hands it figure.json's numbers;
  8. the theory estimator's report.labels: a sweep's aggregate plot of runs.0.action reads "action S vs width".
Usage: test_figure.py ATTNMECH_EXE SOURCE_DIR (AM_PLUGIN_PATH and OPENBLAS_NUM_THREADS=1 set by meson)."""
import ast
import glob
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

EXE, SRC = sys.argv[1], sys.argv[2]
HERE = os.path.join(SRC, "tests", "figure")
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def figure(*args):
    return subprocess.run([EXE, "figure", *args], capture_output=True, text=True, timeout=300)


def mean_se(v):
    m = sum(v) / len(v)
    se = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v)) if len(v) > 1 else 0.0
    return m, se


def read_npy(path):
    """A .npy file of the results directory (<f8, <f4, <i8, <i4; any order) as nested lists in C order."""
    with open(path, "rb") as f:
        raw = f.read()
    major = raw[6]
    hlen, start = (struct.unpack("<H", raw[8:10])[0], 10) if major == 1 else (struct.unpack("<I", raw[8:12])[0], 12)
    head = ast.literal_eval(raw[start:start + hlen].decode("latin-1"))
    shape, code = tuple(head["shape"]), {"<f8": "d", "<f4": "f", "<i8": "q", "<i4": "i"}[head["descr"]]
    n = math.prod(shape)
    flat = list(struct.unpack("<%d%s" % (n, code), raw[start + hlen:start + hlen + n * struct.calcsize(code)]))
    if head["fortran_order"] and len(shape) > 1:  # element (i0, i1, ...) at i0 + s0 * (i1 + s1 * ...)
        c = []
        for k in range(n):
            idx, off, mul = [], 0, 1
            for s_ in reversed(shape):
                idx.insert(0, k % s_)
                k //= s_
            for i, s_ in zip(idx, shape):
                off += i * mul
                mul *= s_
            c.append(flat[off])
        flat = c

    def nest(vals, dims):
        if len(dims) <= 1:
            return vals
        step = len(vals) // dims[0]
        return [nest(vals[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]
    return nest(flat, shape) if shape else flat[0]


def resolved(node, d):
    """results.json as parsed, each .npy reference {"npy_file", "shape", "dtype"} replaced by its file's values."""
    if isinstance(node, dict) and set(node) == {"npy_file", "shape", "dtype"}:
        return read_npy(os.path.join(d, node["npy_file"]))
    if isinstance(node, dict):
        return {k: resolved(v, d) for k, v in node.items()}
    if isinstance(node, list):
        return [resolved(v, d) for v in node]
    return node


def point_results(d):
    """(axes dict, results.json with its .npy references resolved) of every point of the sweep directory d."""
    out = []
    for p in sorted(glob.glob(os.path.join(d, "points", "*", "point.json"))):
        with open(p) as f:
            pj = json.load(f)
        with open(os.path.join(os.path.dirname(p), "results.json")) as f:
            out.append((pj["axes"], resolved(json.load(f), os.path.dirname(p))))
    return out


def shipped():
    names = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(SRC, "examples", "figures", "*.json")))
    check(len(names) >= 9, "at least 9 shipped figure specs (%d)" % len(names))
    r = figure("--list")
    check(r.returncode == 0, "figure --list exits 0")
    for n in names:
        with open(os.path.join(SRC, "examples", "figures", n + ".json")) as f:
            spec = json.load(f)
        line = [l for l in r.stdout.splitlines() if l.split()[:1] == [n]]
        check(len(line) == 1 and spec["runtime"] in line[0] and spec["paper_ref"] in line[0],
              "--list: %s with its run time (%s) and paper reference" % (n, spec["runtime"]))
        c = figure(n, "--check")
        check(c.returncode == 0 and "valid" in c.stdout, "%s --check: spec and every point valid (%s)" % (n, (c.stdout + c.stderr).strip()[-200:]))
        check(re.search(r"\d", spec["runtime"]) is not None, "%s: a measured run time (%s)" % (n, spec["runtime"]))


def tiny(tmp):
    d = os.path.join(tmp, "tiny")
    spec = os.path.join(HERE, "tiny.json")
    r = figure(spec, "--out", d, "--jobs", "2")
    check(r.returncode == 0, "tiny figure exits 0 (%s)" % r.stderr.strip()[-300:])
    check("no data" not in r.stderr, "tiny figure: every series found its data")
    for f in ("tiny-accuracy.svg", "tiny-U.svg", "figure.json", "caption.md"):
        check(os.path.isfile(os.path.join(d, f)), "tiny figure wrote " + f)
    with open(os.path.join(d, "figure.json")) as f:
        fig = json.load(f)
    plots = fig["report"]["plots"]
    check([p["kind"] for p in plots] == ["lines", "heatmap"], "figure.json: a line plot and a heat map")
    series = plots[0]["series"]
    check(len(series) == 4, "accuracy panel: 4 series (2 theory lines, 2 GP lines): %d" % len(series))
    check(sorted(s["label"] for s in series if s["style"] != "hline") == ["RN all", "RN good"], "theory series labels")
    check(sum(1 for s in series if s["style"] == "hline") == 2, "two GP reference lines")
    check(len(plots[1]["panels"]) == 2, "heat map: 2 panels")
    svg = open(os.path.join(d, "tiny-accuracy.svg")).read()
    check(svg.startswith("<svg") or "<svg" in svg[:200], "tiny-accuracy.svg is an SVG document")
    check(all(lbl in svg for lbl in ("RN all", "RN good", "GP all", "GP good")), "the SVG's legend names the 4 series")
    check(svg.count("<polyline") >= 2 or svg.count("<path") >= 2, "the SVG draws the lines")
    # numbers: mean +- s.e. over seeds from the points themselves
    pts = point_results(os.path.join(d, "theory"))
    check(len(pts) == 8, "8 points on disk")
    data = {d_["label"]: d_ for d_ in fig["data"] if "label" in d_}
    for config in ("all", "good"):
        for k, width in enumerate((10, 100)):
            acc = [r_["runs"][0]["test"]["accuracy"] * 100 for a, r_ in pts if a["config"] == config and a["width"] == width]
            m, se = mean_se(acc)
            got = data["RN " + config]
            check(abs(got["y"][k] - m) < 1e-9 and abs(got["yerr"][k] - se) < 1e-9 and got["x"][k] == width,
                  "RN %s at N = %d: %.6g +- %.3g (figure.json %.6g +- %.3g)" % (config, width, m, se, got["y"][k], got["yerr"][k]))
    gp = [r_["runs"][0]["gp"]["test"]["accuracy"] for a, r_ in pts if a["config"] == "all" and a["width"] == 10]
    u10 = [r_["runs"][0]["U"][0] for a, r_ in pts if a["config"] == "all" and a["width"] == 10 and a["seed"] == 0][0]
    heat = [d_ for d_ in fig["data"] if "matrix" in d_][0]["matrix"]
    check(all(abs(heat[i][j] - u10[i][j]) < 1e-12 for i in range(4) for j in range(4)), "heat map 1 = U1 of the seed-0 N = 10 point")
    cap = open(os.path.join(d, "caption.md")).read()
    acc10 = [r_["runs"][0]["test"]["accuracy"] for a, r_ in pts if a["config"] == "all" and a["width"] == 10]
    m, se = mean_se(acc10)
    check(("RN accuracy, all paths, N = 10: %.4g ± %.2g" % (m, se)) in cap, "caption quotes the RN accuracy from the results (%.4g)" % m)
    check(("GP accuracy, all paths: %.4g" % mean_se(gp)[0]) in cap, "caption quotes the GP accuracy from the results")
    check("What the paper shows" in cap and "attnmech figure tiny --out" in cap, "caption: the paper's shape and the command")
    # resume: nothing is computed again
    r = figure(spec, "--out", d)
    check(r.returncode == 0 and "8 already complete" in r.stderr, "re-run: every point already complete")
    # --plot-only redraws the same thing
    before = open(os.path.join(d, "figure.json")).read()
    for f in ("tiny-accuracy.svg", "tiny-U.svg", "figure.json", "caption.md"):
        os.remove(os.path.join(d, f))
    r = figure(spec, "--plot-only", d)
    check(r.returncode == 0, "--plot-only exits 0")
    check(all(os.path.isfile(os.path.join(d, f)) for f in ("tiny-accuracy.svg", "tiny-U.svg", "caption.md")), "--plot-only redraws the SVGs and the caption")
    strip = lambda t: re.sub(r'"attnmech_version": "[^"]*"', "", t)
    check(strip(open(os.path.join(d, "figure.json")).read()) == strip(before), "--plot-only: the same figure.json")
    # --set on an axis: one seed (s.e. 0), and on one sweep only
    d2 = os.path.join(tmp, "tiny-seed0")
    r = figure(spec, "--out", d2, "--set", "seed=0", "--set", "theory.P_test=30")
    with open(os.path.join(d2, "figure.json")) as f:
        fig2 = json.load(f)
    errs = [e for d_ in fig2["data"] if "yerr" in d_ for e in d_["yerr"]]
    check(r.returncode == 0 and len(point_results(os.path.join(d2, "theory"))) == 4 and errs and all(e == 0 for e in errs),
          "--set seed=0 replaces the seed axis (4 points, s.e. 0)")
    pts2 = point_results(os.path.join(d2, "theory"))
    check(all(r_["params"]["task"]["P_test"] == 30 for _, r_ in pts2), "--set theory.P_test=30 reaches the sweep")


def shipped_tiny(tmp):
    cases = {
        "markov-U": ["--set", "P=20", "--set", "P_test=40"],
        "markov-alignment": ["--set", "P=40", "--set", "P_test=40"],
        "replica-curve": ["--set", "lambda=0.01,1", "--set", "theory.alpha=0.5,2", "--set", "sim.alpha=0.5,2",
                          "--set", "sim_L=20", "--set", "sim_seeds=1", "--set", "sim_sites=5"],
    }
    for name, sets in cases.items():
        d = os.path.join(tmp, name)
        r = figure(name, "--out", d, *sets)
        # the caption's numbers may name grid points the tiny settings leave out; every plotted series must be there
        missing = [l for l in r.stderr.splitlines() if "no data:" in l and "caption.numbers" not in l]
        check(r.returncode == 0 and not missing, "%s at tiny settings: exit 0, every series drawn (%s)" % (name, missing))
        with open(os.path.join(d, "figure.json")) as f:
            fig = json.load(f)
        with open(os.path.join(SRC, "examples", "figures", name + ".json")) as f:
            spec = json.load(f)
        declared = sum(len(p.get("series", p.get("panels", []))) for p in ([spec["plot"]] if "plot" in spec else spec["panels"]))
        drawn = sum(len(p.get("series", p.get("panels", []))) for p in fig["report"]["plots"])
        check(drawn >= declared, "%s: %d series drawn for %d declared" % (name, drawn, declared))
        check(len(glob.glob(os.path.join(d, name + "*.svg"))) >= 1, "%s: SVG written" % name)


def point_array(point_dir, doc, dotted):
    """A numeric array of a point as nested lists: inline in results.json, else its <dotted>.npy (little-endian f8,
    C order: what the report library writes), so the check does not depend on where the array is kept."""
    node = doc
    for k in dotted.split("."):
        node = node[int(k)] if isinstance(node, list) else node.get(k) if isinstance(node, dict) else None
    if isinstance(node, list):
        return node
    with open(os.path.join(point_dir, dotted + ".npy"), "rb") as f:
        raw = f.read()
    hlen = int.from_bytes(raw[8:10], "little")
    header = raw[10:10 + hlen].decode("latin1")
    shape = tuple(int(x) for x in re.search(r"'shape': \(([^)]*)\)", header).group(1).split(",") if x.strip())
    flat = list(struct.unpack("<%dd" % math.prod(shape), raw[10 + hlen:10 + hlen + 8 * math.prod(shape)]))
    for n in reversed(shape[1:]):
        flat = [flat[i:i + n] for i in range(0, len(flat), n)]
    return flat


def oneshot_tiny(tmp):
    """The one-shot figures on a real but tiny oneshot run (two Hershey fonts of tests/data, 2 heads a layer: 4 paths,
    a GD network of 4 Adam steps; ~1 s each): every series drawn, and what they draw is the point's results."""
    sets = ["--set", "hershey_dir=" + os.path.join(SRC, "tests", "data", "oneshot", "fonts"), "--set", "ood=none",
            "--set", "drawers=3", "--set", "P=16", "--set", "P_val=10", "--set", "P_test=12", "--set", "H=2",
            "--set", "G=4", "--set", "gd_width=8", "--set", "steps=4", "--set", "batch=8",
            "--set", "temperatures=0.1,1", "--set", "cache=" + os.path.join(tmp, "oneshot-cache"), "--set", "alignment_k=8"]
    figs = {}
    for name in ("oneshot-U", "oneshot-alignment", "oneshot-heads"):
        d = os.path.join(tmp, name)
        r = figure(name, "--out", d, *sets)
        missing = [l for l in r.stderr.splitlines() if "no data:" in l]
        check(r.returncode == 0 and not missing, "%s on a tiny oneshot run: exit 0, every series and number found (%s%s)"
              % (name, missing, r.stderr.strip()[-200:] if r.returncode else ""))
        pdir = sorted(glob.glob(os.path.join(d, "theory", "points", "*")))[:1]
        with open(os.path.join(pdir[0], "results.json") if pdir else os.devnull) as f:
            res = json.load(f) if pdir else {}
        with open(os.path.join(d, "figure.json")) as f:
            figs[name] = (json.load(f), res, open(os.path.join(d, "caption.md")).read(), pdir[0] if pdir else "")
    fig, res, caption, pdir = figs["oneshot-U"]
    run = res.get("runs", [{}])[0]
    u1 = point_array(pdir, res, "runs.0.U.0")
    svg = open(os.path.join(tmp, "oneshot-U", "oneshot-U.svg")).read()
    matrix = next((d["matrix"] for d in fig.get("data", []) if "matrix" in d), None)
    check(matrix == u1 and len(u1) == 4, "oneshot-U: the heat map is U1 of the point (4 x 4 paths)")
    check(all(">%s</text>" % l in svg for l in run.get("path_labels", ["?"])) and len(run.get("path_labels", [])) == 4,
          "oneshot-U: rows and columns carry the path labels %s" % run.get("path_labels"))
    check(">U1</text>" in svg, "oneshot-U: the colour bar is labelled U1")
    check("U1[0,0] (path (1,1)) at N = 10: %.4g" % u1[0][0] in caption, "oneshot-U: the caption quotes U1[0,0]")
    fig, res, caption, pdir = figs["oneshot-alignment"]
    rn, gp = point_array(pdir, res, "runs.0.alignment.rn"), point_array(pdir, res, "runs.0.alignment.gp")
    bars = [p for p in fig["report"]["plots"] if p.get("kind") == "bars"]
    drawn = [d.get("y") for d in fig.get("data", []) if "y" in d]
    check(len(bars) == 1 and drawn[:2] == [rn, gp] and len(rn) == 8,
          "oneshot-alignment: two bar groups, the point's 8 RN and GP overlaps")
    check("RN kernel, overlap of PC 1: %.4g" % rn[0] in caption, "oneshot-alignment: caption numbers")


def usage_errors(tmp):
    base = json.load(open(os.path.join(HERE, "tiny.json")))

    def bad(mutate, needle, what):
        spec = json.loads(json.dumps(base))
        mutate(spec)
        path = os.path.join(tmp, "bad.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        r = figure(path, "--out", os.path.join(tmp, "bad-out"))
        check(r.returncode == 2 and needle in r.stderr, "%s: exit 2, message names it (%s)" % (what, r.stderr.strip()[:160]))
        check(not os.path.exists(os.path.join(tmp, "bad-out", "theory", "points")), what + ": nothing computed")

    bad(lambda s: s.update(plots=[]), "unknown figure spec key 'plots'", "unknown top-level key")
    bad(lambda s: s["panels"][0]["series"][0].update(sweep="nope"), 'no sweep "nope"', "series naming a missing sweep")
    bad(lambda s: s["panels"][0]["series"][0].update(where={"colour": 1}), "'colour'", "where naming no axis")
    bad(lambda s: s["panels"][0].update(kind="pie"), "kind", "unknown plot kind")
    bad(lambda s: s["sweeps"]["theory"]["fixed"].update(P=-5), "no point is valid", "a sweep no point of which is valid")
    bad(lambda s: s["sweeps"]["theory"].update(axis={}), "unknown SPEC key 'axis'", "a bad sweep spec")
    bad(lambda s: s.pop("caption"), "caption", "missing caption")
    r = figure("no-such-figure", "--out", os.path.join(tmp, "x"))
    check(r.returncode == 2 and "no figure 'no-such-figure'" in r.stderr, "unknown figure name: exit 2")
    r = figure("markov-U")
    check(r.returncode == 2 and "--out" in r.stderr, "missing --out: exit 2")
    r = figure("markov-U", "--bogus")
    check(r.returncode == 2, "unknown option: exit 2")
    r = figure("--help")
    check(r.returncode == 0 and "--plot-only" in r.stdout, "figure --help")


def svg_page(path):
    """(width, height, viewBox width, viewBox height, font sizes of the text elements) of an SVG file."""
    t = open(path).read()
    m = re.search(r'<svg [^>]*width="([0-9.]+)" height="([0-9.]+)" viewBox="0 0 ([0-9.]+) ([0-9.]+)"', t)
    fonts = [float(f) for f in re.findall(r'<text [^>]*font-size="([0-9.]+)"', t)]
    return tuple(float(g) for g in m.groups()) + (fonts,) if m else None


def legend_below_axis(svg):
    """The legend's text lines (11-unit text anchored at start) all below the x-axis label (13-unit text, the
    lowest of them) and above the viewBox's bottom edge: (axis label y, legend ys, viewBox height), or None."""
    page = re.search(r'viewBox="0 0 [0-9.]+ ([0-9.]+)"', svg)
    texts = re.findall(r'<text x="[0-9.]+" y="([0-9.]+)"[^>]*font-size="([0-9.]+)"([^>]*)>', svg)
    axis = [float(y) for y, f, _ in texts if f == "13"]
    legend = sorted({float(y) for y, f, rest in texts if f == "11" and 'text-anchor="start"' in rest})
    if not page or not axis or not legend:
        return None
    ok = min(legend) > max(axis) and max(legend) < float(page.group(1))
    return (max(axis), legend, float(page.group(1))) if ok else None


def page_styles(tmp):
    d, run_dir = os.path.join(tmp, "tiny"), os.path.join(tmp, "run")
    r = subprocess.run([EXE, "run", "markov", "--quiet", "--out", run_dir, "--width", "10,100"] +
                       [a for kv in ("P=40", "P_test=40", "seq_len=10", "feature_dim=20") for a in ("--set", kv)],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "a tiny markov run for plot (%s)" % r.stderr.strip()[-200:])

    def plot(out, *opts):
        return subprocess.run([EXE, "plot", run_dir, "--out", out, *opts], capture_output=True, text=True, timeout=120)

    r = plot(os.path.join(tmp, "p-default"))
    check(r.returncode == 0, "plot without page options exits 0 (%s)" % r.stderr.strip()[-200:])
    same = [f for f in os.listdir(os.path.join(tmp, "p-default")) if f.endswith(".svg")]
    check(same and all(read_bytes(os.path.join(tmp, "p-default", f)) == read_bytes(os.path.join(run_dir, f)) for f in same),
          "no option: every SVG byte for byte the run's (%d files)" % len(same))
    # (style options, page w, h, text pt): the 13-unit axis labels are the page's text size; the layout is an
    # integer number of units wide, so the size may be off by at most half a unit: 0.5 / 480 < 0.2 %. On a
    # single column this run's legend (~260 units) leaves no room beside the plot at 8 pt: it goes under the plot
    # and the text keeps the size asked (exact everywhere).
    for opts, w, h, pt, exact in ((["--style", "paper1"], 246, 185, 8, True), (["--style", "paper2"], 510, 255, 9, True),
                                  (["--style", "slides"], 640, 360, 16, True),
                                  (["--font-size", "10", "--size", "400x300"], 400, 300, 10, True),
                                  (["--size", "300x200", "--style", "paper1"], 300, 200, 8, True)):
        out = os.path.join(tmp, "p-" + "-".join(opts))
        r = plot(out, *opts, "--plots", "all")  # all: the PDF too (its page checked below) in a build with cairo
        page = svg_page(os.path.join(out, "accuracy_vs_width.svg")) if r.returncode == 0 else None
        shown = page and 13 * min(w / page[2], h / page[3])
        ok = page and page[0] == w and page[1] == h and 13 in page[4] and (
            abs(shown - pt) < pt * 0.002 if exact else 5 <= shown <= pt * 1.002)
        check(bool(ok), "plot %s: SVG %sx%s, 12-unit text at %s pt (%s)" % (" ".join(opts), w, h, pt, page and page[:4]))
        heat = [f for f in os.listdir(out) if f.startswith("U") and f.endswith(".svg")] if r.returncode == 0 else []
        hp = svg_page(os.path.join(out, heat[0])) if heat else None
        check(bool(hp) and hp[0] == w and hp[1] == h, "plot %s: the heat map %s on the same page" % (" ".join(opts), heat[:1]))
        pdf = os.path.join(out, "accuracy_vs_width.pdf")
        if os.path.exists(pdf):
            box = re.search(rb"/MediaBox \[ *0 0 ([0-9.]+) ([0-9.]+) *\]", read_bytes(pdf))
            check(box and (float(box.group(1)), float(box.group(2))) == (w, h), "plot %s: the PDF page %sx%s pt" % (" ".join(opts), w, h))
    lines = open(os.path.join(tmp, "p---style-paper1", "accuracy_vs_width.svg")).read()
    check('<polyline fill="none" stroke="#1f77b4" stroke-width="1.5"' in lines, "paper1: lines 0.75 x 2 units wide")
    below = legend_below_axis(lines)
    check(below, "paper1: the legend in rows under the x-axis label, inside the page (%s)" % (below,))
    for opts, needle in ((["--style", "poster"], "--style: expected paper1, paper2 or slides, got 'poster'"),
                         (["--font-size", "0"], "--font-size: expected a size in pt from 4 to 72, got '0'"),
                         (["--font-size", "big"], "--font-size: expected"), (["--size", "10x10"], "--size: expected WxH"),
                         (["--size", "300"], "got '300'"), (["--size", "300x200x1"], "got '300x200x1'"),
                         (["--style"], "--style needs a value")):
        r = plot(os.path.join(tmp, "p-bad"), *opts)
        check(r.returncode == 2 and needle in r.stderr, "plot %s: exit 2, message names it (%s)" % (" ".join(opts), r.stderr.strip()[:120]))
        r = figure(os.path.join(HERE, "tiny.json"), "--plot-only", d, *opts)
        check(r.returncode == 2 and needle in r.stderr, "figure %s: exit 2 (%s)" % (" ".join(opts), r.stderr.strip()[:120]))
    r = figure(os.path.join(HERE, "tiny.json"), "--plot-only", d, "--style", "paper2")
    page = svg_page(os.path.join(d, "tiny-accuracy.svg"))
    check(r.returncode == 0 and page and page[:2] == (510, 255) and abs(13 * 510 / page[2] - 9) < 0.02,
          "figure --style paper2: the SVG 510x255, 9 pt text (%s)" % (page and page[:4],))
    with open(os.path.join(d, "figure.json")) as f:
        style = json.load(f)["report"].get("style")
    check(style == {"width": 510, "height": 255, "font_size": 9, "line_scale": 1, "marker_scale": 1},
          "figure.json records the style it was drawn with (%s)" % style)


# A stand-in for matplotlib (when it is not installed): records what the script draws, writes a tiny PNG.
STUB_PYPLOT = """
import json, os
LOG = os.environ["AM_STUB_LOG"]
rcParams = {}
def _log(kind, **kw):
    with open(LOG, "a") as f:
        f.write(json.dumps(dict(kind=kind, **kw)) + "\\n")
class Axes:
    def errorbar(self, x, y, yerr=None, **kw): _log("errorbar", x=x, y=y, yerr=yerr, label=kw.get("label"))
    def axhline(self, y, **kw): _log("axhline", y=y, label=kw.get("label"))
    def imshow(self, m, **kw): _log("imshow", m=m); return None
    def bar(self, x, y, w, **kw): _log("bar", y=y)
    def __getattr__(self, name): return lambda *a, **kw: None
class Figure:
    def add_subplot(self, *a): return Axes()
    def subplots(self, r, c, squeeze=True): return [[Axes() for _ in range(c)] for _ in range(r)]
    def savefig(self, path, **kw):
        with open(path, "wb") as f: f.write(b"\\x89PNG\\r\\n\\x1a\\n")
    def __getattr__(self, name): return lambda *a, **kw: None
def figure(**kw): return Figure()
def close(fig): pass
"""


def redraw_script(tmp, d):
    script = os.path.join(d, "figure.py")
    check(os.path.isfile(script), "figure.py written beside figure.json")
    r = subprocess.run([sys.executable, "-m", "py_compile", script], capture_output=True, text=True)
    check(r.returncode == 0, "figure.py compiles (%s)" % r.stderr.strip()[-200:])
    out = os.path.join(tmp, "redraw")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    real = subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True).returncode == 0
    if not real:
        stub = os.path.join(tmp, "stub", "matplotlib")
        os.makedirs(stub, exist_ok=True)
        with open(os.path.join(stub, "__init__.py"), "w") as f:
            f.write("def use(name):\n    pass\n")
        with open(os.path.join(stub, "pyplot.py"), "w") as f:
            f.write(STUB_PYPLOT)
        env["PYTHONPATH"] = os.path.dirname(stub)
        env["AM_STUB_LOG"] = os.path.join(tmp, "stub.log")
        print("skip  figure.py under matplotlib (not importable): run against a recording stand-in")
    r = subprocess.run([sys.executable, script, os.path.join(d, "figure.json"), out], capture_output=True, text=True,
                       env=env, timeout=300)
    check(r.returncode == 0, "figure.py runs (%s)" % r.stderr.strip()[-300:])
    with open(os.path.join(d, "figure.json")) as f:
        fig = json.load(f)
    for plot in fig["report"]["plots"]:
        png = os.path.join(out, plot["file"] + ".mpl.png")
        check(os.path.isfile(png) and read_bytes(png)[:8] == b"\x89PNG\r\n\x1a\n", "figure.py wrote " + plot["file"] + ".mpl.png")
    if real:
        return
    log = [json.loads(l) for l in open(env["AM_STUB_LOG"])]
    lines = {e["label"]: e for e in log if e["kind"] == "errorbar"}
    data = {d_["label"]: d_ for d_ in fig["data"] if "label" in d_}
    check(set(lines) == {"RN all", "RN good"} and all(lines[k]["y"] == data[k]["y"] and lines[k]["yerr"] == data[k]["yerr"]
                                                       for k in lines), "figure.py draws figure.json's RN means and s.e.")
    heat = [d_["matrix"] for d_ in fig["data"] if "matrix" in d_]
    check([e["m"] for e in log if e["kind"] == "imshow"] == heat, "figure.py draws figure.json's matrices")
    check(sum(e["kind"] == "axhline" for e in log) == 2, "figure.py draws the two GP reference lines")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def theory_labels(tmp):
    spec = {"task": "markov", "fixed": {"P": 40, "P_test": 40, "seq_len": 10, "feature_dim": 20, "threads": 1},
            "axes": {"width": [10, 100]}, "metrics": ["runs.0.action", "runs.0.gp.action"]}
    path, out = os.path.join(tmp, "labels.json"), os.path.join(tmp, "labels-out")
    with open(path, "w") as f:
        json.dump(spec, f)
    r = subprocess.run([EXE, "sweep", path, "--out", out, "--jobs", "1", "--quiet"], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "labels sweep exits 0 (%s)" % r.stderr.strip()[-200:])
    doc = point_results(out)[0][1]
    labels = doc.get("report", {}).get("labels", {})
    check(labels.get("action") == "action S" and labels.get("gp.action") == "GP action S",
          "theory results.json declares report.labels for action and gp.action (%s)" % labels)
    def svg(name):
        p = os.path.join(out, "plots", name)
        return open(p).read() if os.path.exists(p) else ""

    check(">action S vs width" in svg("runs_0_action_vs_width.svg"), "sweep aggregate title reads 'action S vs width'")
    check(">GP action S vs width" in svg("runs_0_gp_action_vs_width.svg"), "the GP's action has its own label")


def main():
    tmp = tempfile.mkdtemp(prefix="am-figure-")
    try:
        shipped()
        tiny(tmp)
        shipped_tiny(tmp)
        oneshot_tiny(tmp)
        usage_errors(tmp)
        redraw_script(tmp, os.path.join(tmp, "tiny"))
        page_styles(tmp)
        theory_labels(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        sys.exit(1)
    print("all figure checks passed")


main()
