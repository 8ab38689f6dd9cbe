#!/usr/bin/env python3
"""Which theory quantity predicts head importance? Trains small attention networks on held-out data (sklearn
digits even/odd, sklearn breast cancer, the markov task's sequences), measures per head the test accuracy lost
when it is silenced (as trained, and with values/output/readout re-fitted at frozen queries and keys), and ranks
every per-head quantity of attnmech.theory_head_quantities against both by Spearman, per layer and
overall; then the stability of the rankings across the width N and temperature T.

    meson devenv -C build bash -c 'OPENBLAS_NUM_THREADS=1 nice /usr/bin/python3 bench/heads/study.py'  # 43 min wall at load 12-14
    ... study.py --quick                                                     # one small case, ~1 min
    ... study.py --smoke --out DIR       # the quick case on 200 training examples, 20 steps: seconds (tests/scripts)

Writes bench/heads/results.json and bench/heads/results.md (the tables docs/python.md quotes)."""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402

import attnmech as am  # noqa: E402
import attnmech.torch as amt  # noqa: E402
from attnmech._importance import QUANTITIES, spearman, theory_head_quantities  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# (name, data set, model kind, heads per layer, seed, training steps)
CASES = [("cancer enc 3x2 s0", "breast_cancer", "encoder", [2, 2, 2], 0, 400),
         ("digits 2x4 s0", "digits", "mha", [4, 4], 0, 400),
         ("digits 2x4 s1", "digits", "mha", [4, 4], 1, 400),
         ("digits 2x2 s0", "digits", "mha", [2, 2], 0, 400),
         ("markov 4+2 s0", "markov", "mha", [4, 2], 0, 400),
         ("markov 3x2 s0", "markov", "mha", [2, 2, 2], 0, 400)]
# (N, T) for the sensitivity: a centre and a decade either way in each, next to the selected choice
CHOICES = [(100.0, 0.1), (10.0, 0.1), (1000.0, 0.1), (100.0, 0.01), (100.0, 1.0)]
REFIT_STEPS = 150
BASELINES = ("attention_focus", "xi_share", "head_output_norm")


def select(X, att, y, Xv, att_v, yv):
    """(N, T) as head_importance picked them when the study was made (before 3.7): Theory.select over its default
    grid (here on the held-out validation split). Since 3.7 head_importance takes the one-standard-error rule of
    attnmech._importance.select_width_temperature (docs/python.md, "Choosing N and T for head importance")."""
    xi_v = am.xi_from_attention(Xv, att_v, readout="last")
    with am.Theory.from_attention(X, att, y, readout="last", widths=amt.SELECT_WIDTHS[0],
                                  temperature=amt.SELECT_TEMPERATURES[0], threads=1) as th:
        w, t = th.select(xi_v, yv, widths=list(amt.SELECT_WIDTHS), temperatures=list(amt.SELECT_TEMPERATURES))
    return float(w), float(t)


def head_output_norm(model, X):
    """Baseline: RMS of each head's contribution to its layer's output (out_proj columns × head values), on the training set."""
    out = []
    for mod, a in zip(model.attention_modules(), _layer_inputs(model, X)):
        E, d = mod.embed_dim, mod.head_dim
        with torch.no_grad():
            v = a @ mod.in_proj_weight[2 * E:].T
            for h in range(mod.num_heads):
                contrib = v[..., h * d:(h + 1) * d] @ mod.out_proj.weight[:, h * d:(h + 1) * d].T
                out.append(float(contrib.pow(2).mean().sqrt()))
    return np.array(out)


def _layer_inputs(model, X):
    taken, hooks = [], [m.register_forward_pre_hook(lambda mod, args: taken.append(args[0].detach()))
                        for m in model.attention_modules()]
    try:
        with torch.enable_grad():  # keeps the encoder layer off its fused path, which skips self_attn
            model(torch.as_tensor(X, dtype=torch.float32))
    finally:
        for h in hooks:
            h.remove()
    return taken


def correlations(q, drop, layer):
    """Spearman of quantity q vs a drop, overall and per layer."""
    out = {"all": spearman(q, drop)}
    for l in np.unique(layer):
        out[f"L{l}"] = spearman(q[layer == l], drop[layer == l])
    return out


def run_case(case, quick, smoke=False):
    name, data_name, kind, heads, seed, steps = case
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    (X, y), (Xv, yv), (Xt, yt) = getattr(C, data_name)(rng)
    if smoke:  # the first 200 / 100 / 200 examples of each split
        (X, y), (Xv, yv), (Xt, yt) = (X[:200], y[:200]), (Xv[:100], yv[:100]), (Xt[:200], yt[:200])
    model = C.Stack(X.shape[2], heads, kind)
    t0 = time.perf_counter()
    C.fit(model, X, y, steps)
    model.eval()
    mods = model.attention_modules()
    refit_steps = 5 if smoke else 30 if quick else REFIT_STEPS
    acc = amt.accuracy(model, Xt, yt)
    md = amt.measured_drop(model, Xt, yt, layers=mods)
    rd = amt.refit_drop(model, X, y, Xt, yt, refit_steps=refit_steps, layers=mods)
    t_torch = time.perf_counter() - t0
    (att, X0), (att_v, X0v), (att_t, X0t) = (amt.attention(model, Z, layers=mods, warn=False) for Z in (X, Xv, Xt))
    t0 = time.perf_counter()
    best = CHOICES[0] if quick else select(X0, att, y, X0v, att_v, yv)
    choices = [best] + ([] if quick else [c for c in CHOICES if c != best])
    per_choice = {c: theory_head_quantities(X0, att, y, X0t, att_t, yt, readout="last", widths=c[0],
                                            temperature=c[1], threads=1) for c in choices}
    t_theory = time.perf_counter() - t0
    q = per_choice[best]
    layer = q["layer"]
    values = {k: np.asarray(q[k], dtype=float) for k in QUANTITIES}
    values["head_output_norm"] = head_output_norm(model, X)
    table = {k: {"measured": correlations(v, md, layer), "refit": correlations(v, rd, layer)}
             for k, v in values.items()}
    stability = {k: _pairwise_spearman([per_choice[c][k] for c in choices]) for k in QUANTITIES}
    return {"name": name, "heads": heads, "kind": kind, "accuracy_torch": acc, "accuracy_theory": q["accuracy"],
            "choice": best, "choices": [list(c) for c in choices],
            "measured_drop": md.tolist(), "refit_drop": rd.tolist(),
            "quantities": {k: v.tolist() for k, v in values.items()}, "spearman": table, "stability": stability,
            "seconds_torch": t_torch, "seconds_theory": t_theory}


def _pairwise_spearman(vals):
    """Min and mean Spearman between the rankings of the (N, T) choices (NaN pairs left out)."""
    s = [spearman(a, b) for i, a in enumerate(vals) for b in vals[i + 1:]]
    s = [x for x in s if np.isfinite(x)]
    return {"min": min(s) if s else float("nan"), "mean": float(np.mean(s)) if s else float("nan")}


def _f(x):
    return "  —  " if not np.isfinite(x) else f"{x:+.2f}"


KEY = ("predicted_loss_rise", "predicted_drop", "predicted_drop_gp", "score", "score_layer", "attention_focus",
       "head_output_norm")


def summary(results):
    """One row per case: overall Spearman (vs measured / vs refit) of the key quantities."""
    lines = ["| case | " + " | ".join(KEY) + " |", "|---" * (len(KEY) + 1) + "|"]
    for r in results:
        t = r["spearman"]
        lines.append(f"| {r['name']} | " + " | ".join(f"{_f(t[k]['measured']['all'])} / {_f(t[k]['refit']['all'])}"
                                                      for k in KEY) + " |")
    return lines


def per_layer(results, keys=("predicted_drop", "score")):
    """One row per case and quantity: Spearman within each layer, vs measured / vs refit."""
    L = max(len(r["heads"]) for r in results)
    lines = ["| case | quantity | " + " | ".join(f"L{l}" for l in range(1, L + 1)) + " |", "|---" * (L + 2) + "|"]
    for r in results:
        for k in keys:
            t = r["spearman"][k]
            cells = [f"{_f(t['measured'].get(f'L{l}', np.nan))} / {_f(t['refit'].get(f'L{l}', np.nan))}"
                     for l in range(1, L + 1)]
            lines.append(f"| {r['name']} | {k} | " + " | ".join(cells) + " |")
    return lines


def markdown(results, seconds, command):
    lines = [f"Command: `{command}`; {seconds / 60:.1f} min wall (one thread, nice, on a shared 2-core machine).", "",
             "Overall Spearman vs measured drop / vs refit drop:", ""] + summary(results) + [
             "", "Per layer, vs measured / vs refit:", ""] + per_layer(results) + [""]
    for r in results:
        L = len(r["heads"])
        lines += [f"### {r['name']} ({r['kind']}, heads {r['heads']}): torch test accuracy {r['accuracy_torch']:.3f} "
                  f"theory {r['accuracy_theory']:.3f} at N = {r['choice'][0]:g}, "
                  f"T = {r['choice'][1]:g} (Theory.select, validation likelihood)", "",
                  "measured drop " + " ".join(f"{x:.3f}" for x in r["measured_drop"]) + "; refit drop "
                  + " ".join(f"{x:.3f}" for x in r["refit_drop"]), "",
                  "| quantity | vs measured: all | " + " | ".join(f"L{l}" for l in range(1, L + 1))
                  + " | vs refit: all | " + " | ".join(f"L{l}" for l in range(1, L + 1)) + " | N/T stability min (mean) |",
                  "|---" * (2 * L + 4) + "|"]
        for k, t in r["spearman"].items():
            st = r["stability"].get(k)
            cells = [_f(t[w][c]) for w in ("measured", "refit") for c in ["all"] + [f"L{l}" for l in range(1, L + 1)]]
            stab = f"{_f(st['min'])} ({_f(st['mean'])})" if st else ""
            lines.append(f"| {k} | " + " | ".join(cells) + f" | {stab} |")
        lines.append("")
    lines += ["### Mean over cases of the overall Spearman", "", "| quantity | vs measured | vs refit | N/T stability (min over cases) |",
              "|---|---|---|---|"]
    for k in results[0]["spearman"]:
        m = np.nanmean([r["spearman"][k]["measured"]["all"] for r in results])
        f = np.nanmean([r["spearman"][k]["refit"]["all"] for r in results])
        st = [r["stability"][k]["min"] for r in results if k in r["stability"]]
        st = min((x for x in st if np.isfinite(x)), default=np.nan)
        lines.append(f"| {k} | {_f(m)} | {_f(f)} | {_f(st)} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one small case, few steps, one (N, T): ~1 min")
    ap.add_argument("--smoke", action="store_true", help="--quick on 200 training examples, 20 steps, 5 re-fit steps: "
                    "seconds; writes OUT/results_smoke.* (OUT: a temporary directory unless --out is given)")
    ap.add_argument("--resume", action="store_true", help="reuse the finished cases in OUT/cases.json")
    ap.add_argument("--report-only", action="store_true", help="only write the tables of the cases in OUT/cases.json")
    ap.add_argument("--out", default=None, help="directory for results.json and results.md (default: bench/heads)")
    C.run_in_out_dir(ap.parse_args(), "am-heads-smoke-", HERE, study)


def study(args):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    args.quick = args.quick or args.smoke
    todo = [c[:5] + (20 if args.smoke else 60,) for c in CASES if c[0] == "digits 2x2 s0"] if args.quick else CASES
    suffix = "_smoke" if args.smoke else "_quick" if args.quick else ""
    cache = os.path.join(args.out, f"cases{suffix}.json")  # each finished case, so --resume can skip it
    done = {}
    if (args.resume or args.report_only) and os.path.exists(cache):
        with open(cache) as f:
            done = {r["name"]: r for r in json.load(f)}
    results = []
    for c in todo:
        if args.report_only and c[0] not in done:
            continue
        r = done.get(c[0]) or run_case(c, args.quick, args.smoke)
        print(f"{r['name']}: torch {r['seconds_torch']:.0f} s, theory {r['seconds_theory']:.0f} s", flush=True)
        results.append(r)
        with open(cache, "w") as f:
            json.dump(results + [v for k, v in done.items() if k not in {x["name"] for x in results}], f,
                      indent=1, default=str)
    seconds = sum(r["seconds_torch"] + r["seconds_theory"] for r in results)
    with open(os.path.join(args.out, f"results{suffix}.json"), "w") as f:
        json.dump({"seconds": seconds, "cases": results}, f, indent=1, default=str)
    cmd = "python3 bench/heads/study.py" + (" --smoke" if args.smoke else " --quick" if args.quick else "")
    with open(os.path.join(args.out, f"results{suffix}.md"), "w") as f:
        f.write(markdown(results, seconds, cmd))
    print(markdown(results, seconds, cmd))


if __name__ == "__main__":
    main()
