#!/usr/bin/env python3
"""attnmech with PyTorch (docs/python.md): take the per-head attention matrices of a small torch.nn attention
network by forward hooks, hand them to attnmech.Theory.from_attention, and read off the order parameters U and
the theory's test accuracy.

    python3 examples/python/torch_attention.py [--smoke]   # Debian: apt-get install python3-torch

(A few seconds on a 2-core machine, most of it importing torch; --smoke: 40 training and 40 test sequences.)

The task: sequences of S random tokens in R^N0, the first one marked (coordinate 1 = 1); the label is the sign of
the first token's coordinate 0, so the readout (last token) must look back at the first one through attention."""
import argparse
import time

import numpy as np
import torch
from torch import nn

import attnmech as am


def make_data(P, S, N0, rng):
    X = rng.normal(size=(P, S, N0)) / np.sqrt(N0)
    X[:, 0, 1] = 1.0  # a marker on the first token, so attention can find it
    y = np.sign(X[:, 0, 0] + 1e-12)
    return X, y


class AttentionNet(nn.Module):
    """L layers of multi-head self-attention (no value mixing across layers' heads is needed by the theory: we
    only read the attention weights), then a linear readout of the last token."""

    def __init__(self, N0, heads):
        super().__init__()
        self.layers = nn.ModuleList(nn.MultiheadAttention(N0, h, bias=False, batch_first=True) for h in heads)
        self.readout = nn.Linear(N0, 1, bias=False)

    def forward(self, x):
        h = x
        for att in self.layers:
            h, _ = att(h, h, h, need_weights=True, average_attn_weights=False)
        return self.readout(h[:, -1]).squeeze(-1)


def attention_by_hooks(model, X):
    """Per-layer attention weights [example, head, query, key] of a forward pass, taken by forward hooks."""
    taken = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: taken.append(out[1].detach().double().numpy()))
             for m in model.layers]
    try:
        with torch.no_grad():
            model(torch.as_tensor(X, dtype=torch.float32))
    finally:
        for h in hooks:
            h.remove()
    return taken


def train(model, X, y, steps, lr=0.01):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(Xt) - yt) ** 2).mean()
        loss.backward()
        opt.step()
    return float(loss)


def main(P=200, P_test=400, S=6, N0=8, heads=(2, 2), width=50.0, temperature=0.05, steps=100, seed=0, quiet=False):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X, y = make_data(P, S, N0, rng)
    Xt, yt = make_data(P_test, S, N0, rng)
    model = AttentionNet(N0, heads)
    loss = train(model, X, y, steps)
    att, att_t = attention_by_hooks(model, X), attention_by_hooks(model, Xt)
    t0 = time.perf_counter()
    with am.Theory.from_attention(X, att, y, readout="last", widths=width, temperature=temperature,
                                  X_test=Xt, attention_test=att_t) as th:
        sol = th.solve()
        acc = th.accuracy(y_test=yt)
        acc_gp = th.accuracy(y_test=yt, U=th.gp_point())
        scores = th.head_scores()
    seconds = time.perf_counter() - t0
    if not quiet:
        print(f"torch model trained {steps} Adam steps (train MSE {loss:.3f}); attention of {len(att)} layers "
              f"with heads {list(heads)} taken by hooks")
        print(f"Theory: {sol.status} in {sol.iterations} Newton iterations, S = {sol.action:.6f}, "
              f"U_a = {sol.U_a:.4f} ({seconds * 1e3:.1f} ms for build + solve + metrics)")
        print("U_1 (paths h_1 h_2 = 11 12 21 22):")
        print(np.array2string(sol.U[0], precision=4, suppress_small=True))
        print(f"test accuracy: theory (renormalised) {acc:.3f}, GP limit {acc_gp:.3f}; head scores {scores.round(3)}")
    return {"solution": sol, "U": sol.U, "accuracy": acc, "accuracy_gp": acc_gp, "H_tot": int(np.prod(heads)),
            "seconds": seconds}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: 40 training and 40 test sequences")
    main(**(dict(P=40, P_test=40) if ap.parse_args().smoke else {}))
