#!/usr/bin/env python3
"""The head-importance zoo (issue 40): does attnmech.torch.head_importance rank the heads of models nobody tuned
it on? Twenty small torch models of our own — pure attention stacks (nn.MultiheadAttention) and encoder layers
(nn.TransformerEncoderLayer: residuals, LayerNorm, feed-forward), 1-4 layers, 2-8 heads, on three kinds of data
(sklearn's digits, the markov task's sequences, real protein windows) and several seeds — each trained, ablated
head by head (as trained, and re-fitted at frozen queries and keys) and handed to `head_importance`.

The split into a half for choosing the ranking quantity and a half for reporting it is fixed below (column
"half"), written before any model of the zoo was trained; a study that chooses reads only the "choose" half
(--half choose), and the report half is run once, with the quantity chosen (--half report --quantity Q).

    meson devenv -C build bash -c 'nice /usr/bin/python3 bench/heads/zoo.py --panel PANEL --half choose'
    ... zoo.py --panel PANEL --half report --quantity predicted_drop
    ... zoo.py --smoke --out DIR       # one tiny digits model: seconds (tests/scripts)

PANEL is the folder `python3 bench/msa/panel.py --prep PANEL` fills (globins630.fa: Debian's hmmer2-doc); the
protein models need it. Writes OUT/zoo_<half>.json (every model, resumable: --resume) and OUT/zoo_<half>.md (the
tables). Run time: minutes per model on one core (the theory's solves grow with the number of paths, Π H_l)."""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402

import attnmech.torch as amt  # noqa: E402
from attnmech._importance import QUANTITIES, spearman  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# (name, data, kind, heads per layer, seed, training steps, half). Fixed before the first model was trained: each
# data set and kind in both halves, the depths and head counts spread over both.
ZOO = [("digits mha 4+4 s0", "digits", "mha", [4, 4], 0, 400, "choose"),
       ("digits enc 2+2 s0", "digits", "encoder", [2, 2], 0, 400, "choose"),
       ("digits mha 2+2+2 s1", "digits", "mha", [2, 2, 2], 1, 400, "choose"),
       ("digits mha 8 s0", "digits", "mha", [8], 0, 400, "choose"),
       ("markov mha 4+2 s0", "markov", "mha", [4, 2], 0, 400, "choose"),
       ("markov enc 4+4 s1", "markov", "encoder", [4, 4], 1, 400, "choose"),
       ("markov mha 2+2+2+2 s0", "markov", "mha", [2, 2, 2, 2], 0, 400, "choose"),
       ("protein mha 4+4 s0", "protein", "mha", [4, 4], 0, 400, "choose"),
       ("protein enc 2+2 s1", "protein", "encoder", [2, 2], 1, 400, "choose"),
       ("cancer enc 2+2+2 s0", "breast_cancer", "encoder", [2, 2, 2], 0, 400, "choose"),
       ("digits mha 4+4 s2", "digits", "mha", [4, 4], 2, 400, "report"),
       ("digits enc 4+4 s1", "digits", "encoder", [4, 4], 1, 400, "report"),
       ("digits mha 2+2+2 s3", "digits", "mha", [2, 2, 2], 3, 400, "report"),
       ("digits mha 6 s1", "digits", "mha", [6], 1, 400, "report"),
       ("markov mha 4+2 s2", "markov", "mha", [4, 2], 2, 400, "report"),
       ("markov enc 2+2+2 s0", "markov", "encoder", [2, 2, 2], 0, 400, "report"),
       ("markov mha 3+3 s1", "markov", "mha", [3, 3], 1, 400, "report"),
       ("protein mha 4+4 s2", "protein", "mha", [4, 4], 2, 400, "report"),
       ("protein enc 4+2 s0", "protein", "encoder", [4, 2], 0, 400, "report"),
       ("protein mha 2+2+2 s1", "protein", "mha", [2, 2, 2], 1, 400, "report")]
REFIT_STEPS = 150
SMOKE = ("digits mha 2+2 smoke", "digits", "mha", [2, 2], 0, 20, "smoke")


def data(name, rng, heads, panel, smoke):
    """The model's train / validation / test splits, token width padded to a multiple of every head count."""
    pad_to = math.lcm(*heads)
    if name == "protein":
        if not panel:
            raise SystemExit("zoo: the protein models need --panel PANEL (bench/msa/panel.py --prep PANEL)")
        parts = C.protein(rng, os.path.join(panel, "globins630.fa"), pad_to=max(pad_to, 2))
    else:
        parts = getattr(C, name)(rng, pad_to=pad_to)
    if smoke:
        parts = [(X[:n], y[:n]) for (X, y), n in zip(parts, (200, 100, 200))]
    return parts


def run_model(case, panel, quantity, smoke=False):
    """Train one model and measure everything the tables need; the theory through head_importance as users call
    it (N and T chosen by its own rule), every quantity of QUANTITIES kept for the choice."""
    name, data_name, kind, heads, seed, steps, half = case
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    (X, y), (Xv, yv), (Xt, yt) = data(data_name, rng, heads, panel, smoke)
    X, y = np.concatenate([X, Xv]), np.concatenate([y, yv])  # head_importance takes its own validation quarter
    model = C.Stack(X.shape[2], heads, kind)
    t0 = time.process_time()
    C.fit(model, X, y, steps)
    model.eval()
    t_train = time.process_time() - t0
    t0 = time.process_time()
    hi = amt.head_importance(model, X, y, Xt, yt, refit_steps=5 if smoke else REFIT_STEPS, random_orders=0,
                             quantity=quantity, seed=seed)
    t_hi = time.process_time() - t0
    q = {k: np.asarray(hi.theory[k], float).tolist() for k in QUANTITIES if k in hi.theory}
    iv = np.asarray(hi.predicted_drop_interval, float)
    return {"name": name, "half": half, "data": data_name, "kind": kind, "heads": heads, "seed": seed,
            "paths": int(np.prod(heads)), "accuracy": hi.accuracy, "settings": {k: hi.settings.get(k) for k in
                                                                             ("widths", "temperature")},
            "measured_drop": hi.measured_drop.tolist(), "refit_drop": hi.refit_drop.tolist(),
            "quantities": q, "quantity": hi.quantity, "ranking": hi.ranking.tolist(),
            "interval_width": float(np.mean(iv[:, 1] - iv[:, 0])), "confident": hi.confident,
            "groups": hi.groups, "converged": hi.converged, "notes": hi.notes,
            "cpu_seconds": {"train": t_train, "head_importance": t_hi}}


def rho(r, k, against):
    return spearman(r["quantities"][k], r[against]) if k in r["quantities"] else float("nan")


def _f(x):
    return "  —  " if x is None or not np.isfinite(x) else f"{x:+.2f}"


def choice_table(results):
    """Per quantity: mean Spearman against the re-fitted and the as-trained drop, and the share of models with
    ρ ≥ 0.5 against the re-fitted drop — the figures the choice reads."""
    lines = ["| quantity | mean ρ vs re-fitted | share ρ ≥ 0.5 | mean ρ vs trained | models with ρ < 0 (re-fitted) |",
             "|---|---|---|---|---|"]
    best = None
    for k in QUANTITIES:
        a = np.array([rho(r, k, "refit_drop") for r in results])
        b = np.array([rho(r, k, "measured_drop") for r in results])
        if not np.isfinite(a).any():
            continue
        fa = a[np.isfinite(a)]
        share = float(np.mean(np.nan_to_num(a, nan=-1.0) >= 0.5))
        lines.append(f"| {k} | {_f(fa.mean())} | {share:.2f} | {_f(np.nanmean(b))} | {int(np.sum(fa < 0))} |")
        key = (share, fa.mean())
        if best is None or key > best[0]:
            best = (key, k)
    return "\n".join(lines), (best[1] if best else None)


def model_table(results, k):
    lines = [f"| model | paths | acc. torch / theory | N, T chosen | ρ({k}, re-fitted) | ρ({k}, trained) | "
             "mean 95 % interval width | confident | converged |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["settings"]
        lines.append(f"| {r['name']} | {r['paths']} | {r['accuracy']['trained']:.3f} / {r['accuracy']['theory']:.3f} | "
                     f"{s['widths']}, {s['temperature']} | {_f(rho(r, k, 'refit_drop'))} | "
                     f"{_f(rho(r, k, 'measured_drop'))} | {r['interval_width']:.3f} | {r['confident']} | "
                     f"{r['converged']} |")
    return "\n".join(lines)


def markdown(results, half, quantity, command):
    cpu = sum(sum(r["cpu_seconds"].values()) for r in results)
    text = [f"Command: `{command}`; {cpu / 60:.1f} CPU-min over {len(results)} models.", ""]
    table, best = choice_table(results)
    text += [f"Per quantity, over the {half} half:", "", table, ""]
    if half == "choose":
        text += [f"Chosen by the rule (the largest share of models with ρ ≥ 0.5 against the re-fitted drop, then the "
                 f"largest mean): **{best}**.", ""]
    k = quantity or best
    text += [f"Per model ({k}):", "", model_table(results, k), ""]
    a = np.array([rho(r, k, "refit_drop") for r in results])
    conf_neg = [r["name"] for r in results if r["confident"] and rho(r, k, "refit_drop") < 0]
    text += [f"ρ ≥ 0.5 against the re-fitted drop on {int(np.sum(np.nan_to_num(a, nan=-1) >= 0.5))} of "
             f"{len(results)} models; a confident ranking with ρ < 0: {', '.join(conf_neg) or 'none'}.", ""]
    return "\n".join(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--half", choices=("choose", "report"), default="choose", help="which half of the zoo to run")
    ap.add_argument("--quantity", default=None, help="the ranking quantity head_importance uses (default: its own)")
    ap.add_argument("--panel", default=os.environ.get("AM_PANEL"), help="the panel folder (globins630.fa)")
    ap.add_argument("--models", default=None, help="comma-separated model names (default: the whole half)")
    ap.add_argument("--resume", action="store_true", help="keep the finished models of OUT/zoo_<half>.json")
    ap.add_argument("--smoke", action="store_true", help="one tiny digits model, 20 steps: seconds")
    ap.add_argument("--out", default=None, help="output folder (default: bench/heads; --smoke: a temporary one)")
    return C.run_in_out_dir(ap.parse_args(), "am-zoo-smoke-", HERE, run)


def run(args):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    todo = [SMOKE] if args.smoke else [c for c in ZOO if c[6] == args.half]
    if args.models:
        want = set(args.models.split(","))
        unknown = want - {c[0] for c in todo}
        if unknown:
            raise SystemExit(f"zoo: not in the {args.half} half: {', '.join(sorted(unknown))}")
        todo = [c for c in todo if c[0] in want]
    half = "smoke" if args.smoke else args.half
    path = os.path.join(args.out, f"zoo_{half}.json")
    done = {}
    if args.resume and os.path.exists(path):
        with open(path) as f:
            done = {r["name"]: r for r in json.load(f)["models"]}
    results = []
    for c in todo:
        r = done.get(c[0])
        if r is None:
            print(f"zoo: {c[0]} ...", flush=True)
            r = run_model(c, args.panel, args.quantity, smoke=args.smoke)
        results.append(r)
        print(f"zoo: {r['name']}: {sum(r['cpu_seconds'].values()):.0f} CPU-s", flush=True)
        with open(path, "w") as f:
            json.dump({"half": half, "quantity": args.quantity, "models": results}, f, indent=1, default=str)
    cmd = "python3 bench/heads/zoo.py" + (" --smoke" if args.smoke else f" --half {args.half}") + \
        (f" --quantity {args.quantity}" if args.quantity else "")
    md = markdown(results, half, args.quantity, cmd)
    with open(os.path.join(args.out, f"zoo_{half}.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
