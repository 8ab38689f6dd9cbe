#!/usr/bin/env python3
"""Which heads does a trained PyTorch model need? Two nn.MultiheadAttention layers trained on scikit-learn's
handwritten digits (even vs odd; each 8×8 image is 8 tokens, its rows), then attnmech.torch.head_importance: the
theory's per-head score and predicted drop beside the measured drops (head silenced as trained; silenced with
values/readout re-fitted, queries and keys frozen), pruning curves, and a results directory with the plots.

    python3 examples/python/torch_heads.py [--heads 4 4] [--seed 0] [--out heads-out]   # python3-torch, -sklearn
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


def main(heads=(4, 4), seed=0, steps=300, out=None, refit_steps=100, quiet=False):
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    d = load_digits()
    X, y = (d.images / 16.0).astype(np.float32), np.where(d.target % 2 == 0, 1.0, -1.0)
    idx = np.random.default_rng(seed).permutation(len(y))
    tr, te = idx[:1000], idx[1000:]
    model = Net(heads)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        ((model(torch.as_tensor(X[tr])) - torch.as_tensor(y[tr], dtype=torch.float32)) ** 2).mean().backward()
        opt.step()
    t0 = time.perf_counter()
    imp = amt.head_importance(model.eval(), X[tr], y[tr], X[te], y[te], readout="mean", refit_steps=refit_steps)
    seconds = time.perf_counter() - t0
    if out:
        imp.save(out)
    if not quiet:
        print(f"{imp!r} in {seconds:.1f} s {({k: round(v, 2) for k, v in imp.seconds.items()})}; "
              f"N, T = {imp.settings['widths']}, {imp.settings['temperature']}")
        for k, lab in enumerate(imp.labels):
            print(f"{lab}: score {imp.score[k]:.3f}  predicted {imp.predicted_drop[k]:+.3f}  "
                  f"measured {imp.measured_drop[k]:+.3f}  re-fitted {imp.refit_drop[k]:+.3f}")
        print("prune order", [imp.labels[k] for k in imp.ranking], "Spearman",
              {k: round(v, 2) for k, v in imp.spearman.items() if "@" not in k})
    return imp, seconds


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, nargs="+", default=[4, 4])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args()
    main(a.heads, a.seed, out=a.out)
