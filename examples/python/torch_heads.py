#!/usr/bin/env python3
"""Which heads does a trained PyTorch model need? Two nn.MultiheadAttention layers trained on scikit-learn's
handwritten digits (even vs odd; each 8×8 image is 8 tokens, its rows), then attnmech.torch.head_importance: the
theory's per-head score and predicted drop beside the measured drops (head silenced as trained; silenced with
values/readout re-fitted, queries and keys frozen), pruning curves, and a results directory with the plots.

    python3 examples/python/torch_heads.py [--heads 4 4] [--seed 0] [--out heads-out] [--smoke]

Needs PyTorch and scikit-learn (Debian: apt-get install python3-torch python3-sklearn) besides attnmech.
Run time, measured on a 2-core machine shared with other jobs (load average 12): 99 s of CPU on one thread, 5 min 33 s
wall — the training 20 s, head_importance 304 s (N, T selection 30 s, theory 19 s, re-fits 70 s, pruning curves
184 s: re-fits too). --smoke (300 training and 300 test images, 2+2 heads, 30 steps, 10 re-fit steps, one random
order): 4 s of CPU, 12 s wall at that load. It prints a line every tenth of the training (loss, elapsed time) and
says what head_importance does before it starts (it prints nothing itself until it returns).
"""
import argparse
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import attnmech.torch as amt


class Net(nn.Module):
    def __init__(self, heads, E=16, S=8):
        super().__init__()
        self.embed, self.pos = nn.Linear(8, E, bias=False), nn.Parameter(0.1 * torch.randn(S, E))
        self.att = nn.ModuleList(nn.MultiheadAttention(E, h, bias=False, batch_first=True) for h in heads)
        self.readout = nn.Linear(E, 1, bias=False)

    def forward(self, x):
        h = self.embed(x) + self.pos
        for a in self.att:
            h = a(h, h, h, need_weights=False)[0]
        return self.readout(h.mean(1)).squeeze(-1)  # the theory's readout="mean"


def main(heads=(4, 4), seed=0, steps=300, out=None, refit_steps=100, quiet=False, n_train=1000, n_test=None,
         random_orders=3):
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))  # noqa: E731
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    d = load_digits()
    X, y = (d.images / 16.0).astype(np.float32), np.where(d.target % 2 == 0, 1.0, -1.0)
    idx = np.random.default_rng(seed).permutation(len(y))
    tr, te = idx[:n_train], idx[n_train:None if n_test is None else n_train + n_test]
    model = Net(heads)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = ((model(torch.as_tensor(X[tr])) - torch.as_tensor(y[tr], dtype=torch.float32)) ** 2).mean()
        loss.backward()
        opt.step()
        if step % max(1, steps // 10) == 0 or step == steps:
            say(f"training: step {step}/{steps}, loss {loss.item():.4f}, {time.perf_counter() - t0:.1f} s")
    H = sum(heads)
    say(f"head_importance ({len(tr)} training, {len(te)} test images, {H} heads): attention maps; N and T on a "
        "validation quarter (one-standard-error rule); the theory with each head removed; each head silenced as "
        f"trained; {H + 1} re-fits of {refit_steps} Adam steps, and more for the pruning curves (by the ranking and "
        f"{random_orders} random order(s)): the re-fits take most of the time; no output until it returns")
    t0 = time.perf_counter()
    imp = amt.head_importance(model.eval(), X[tr], y[tr], X[te], y[te], readout="mean", refit_steps=refit_steps,
                              random_orders=random_orders)
    seconds = time.perf_counter() - t0
    if out:
        imp.save(out)
        say(f"results, plots: {out}/")
    say(f"{imp!r} in {seconds:.1f} s {({k: round(v, 2) for k, v in imp.seconds.items()})}; "
        f"N, T = {imp.settings['widths']}, {imp.settings['temperature']}")
    for k, lab in enumerate(imp.labels):
        lo, hi = imp.predicted_drop_interval[k]
        say(f"{lab}: score {imp.score[k]:.3f}  predicted {imp.predicted_drop[k]:+.3f} [{lo:+.3f}, {hi:+.3f}]  "
            f"measured {imp.measured_drop[k]:+.3f}  re-fitted {imp.refit_drop[k]:+.3f}")
    say("prune order", [imp.labels[k] for k in imp.ranking], "Spearman",
        {k: round(v, 2) for k, v in imp.spearman.items() if "@" not in k})
    say("heads the test data cannot order apart:", [[imp.labels[k] for k in g] for g in imp.groups],
        "; confident:", imp.confident, "; converged:", imp.converged, *imp.notes)
    return imp, seconds


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, nargs="+", default=[4, 4])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: 300 training and 300 test images, "
                    "2+2 heads, "
                    "30 steps, 10 re-fit steps, one random order")
    a = ap.parse_args()
    if a.smoke:
        main([2, 2], a.seed, steps=30, out=a.out, refit_steps=10, n_train=300, n_test=300, random_orders=1)
    else:
        main(a.heads, a.seed, out=a.out)
