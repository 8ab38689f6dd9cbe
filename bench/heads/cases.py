"""Data sets, torch models and their training for the head-importance study (bench/heads/study.py; the
attention, ablations and re-fits are attnmech.torch's). Everything offline: scikit-learn's bundled digits and breast-cancer sets, and a
NumPy copy of the markov task's generator (docs/tasks.md); real protein windows from a FASTA file (bench/heads/zoo.py)."""
import tempfile

import numpy as np
import torch
from torch import nn


def _with_positions(tokens, pad_to):
    """Tokens (P, S, F) with a one-hot position code appended and zero-padded to a width divisible by `pad_to`
    (attention alone cannot tell positions apart)."""
    P, S, F = tokens.shape
    N0 = -(-(F + S) // pad_to) * pad_to
    X = np.zeros((P, S, N0))
    X[:, :, :F] = tokens
    X[:, np.arange(S), F + np.arange(S)] = 1.0
    return X


def digits(rng, pad_to=4):
    """sklearn digits, even (+1) vs odd (−1): 8 tokens = the 8 pixel rows (scaled to [0, 1]) + positions."""
    from sklearn.datasets import load_digits
    d = load_digits()
    X = _with_positions(d.images / 16.0, pad_to)
    y = np.where(d.target % 2 == 0, 1.0, -1.0)
    return _split(X, y, rng, n_train=1000)


def breast_cancer(rng, pad_to=2):
    """sklearn breast cancer (malignant −1, benign +1): 30 standardised features as 10 tokens of 3 + positions."""
    from sklearn.datasets import load_breast_cancer
    d = load_breast_cancer()
    f = (d.data - d.data.mean(0)) / d.data.std(0)
    X = _with_positions(f.reshape(-1, 10, 3) / np.sqrt(3), pad_to)
    y = np.where(d.target == 1, 1.0, -1.0)
    return _split(X, y, rng, n_train=350)


def markov(rng, P=1200, seq_len=11, feature_dim=12, noise=1.0, pad_to=4):
    """The markov task's sequences (docs/tasks.md): two-state chains staying with probability 0.7 (+1) or 0.3
    (−1), emissions √2 on one half of the features plus N(0, noise²), a BOS token with zero features first."""
    y = np.where(np.arange(P) < P // 2, 1.0, -1.0)
    stay = np.where(y > 0, 0.7, 0.3)
    state = np.empty((P, seq_len), dtype=int)
    state[:, 0] = rng.integers(0, 2, P)
    for t in range(1, seq_len):
        flip = rng.random(P) >= stay
        state[:, t] = np.where(flip, 1 - state[:, t - 1], state[:, t - 1])
    half = feature_dim // 2
    emit = np.zeros((2, feature_dim))
    emit[0, :half] = emit[1, half:] = np.sqrt(2.0)
    tok = emit[state] + noise * rng.normal(size=(P, seq_len, feature_dim))
    tok = np.concatenate([np.zeros((P, 1, feature_dim)), tok], axis=1) / np.sqrt(feature_dim)
    return _split(_with_positions(tok, pad_to), y, rng, n_train=800)


HYDROPHOBIC = set("IVLFCMA")  # Kyte-Doolittle hydropathy > 0
AMINO = "ACDEFGHIKLMNPQRSTVWY"


def read_fasta(path):
    """Sequences of a FASTA file (upper case; gaps and characters outside the 20 amino acids dropped)."""
    seqs, cur = [], []
    with open(path) as f:
        for line in f:
            if line.startswith(">"):
                if cur:
                    seqs.append("".join(cur))
                cur = []
            else:
                cur.append("".join(c for c in line.strip().upper() if c in AMINO))
    if cur:
        seqs.append("".join(cur))
    return [s for s in seqs if s]


def protein(rng, fasta, window=9, n=2000, pad_to=4):
    """Real protein windows: is the residue at a window's centre hydrophobic (Kyte-Doolittle > 0: +1) or not (−1),
    from the other window - 1 residues? Tokens: the context residues one-hot (20 colours) in sequence order, then
    the centre as a masked token (21st colour) last, where the models read out; + positions. n windows drawn
    without replacement from every full window of the FASTA's sequences (bench/msa/panel.py --prep writes
    globins630.fa: Debian's hmmer2-doc)."""
    seqs = read_fasta(fasta)
    half = window // 2
    sites = [(i, c) for i, s in enumerate(seqs) for c in range(half, len(s) - half)]
    if len(sites) < n:
        raise ValueError(f"{fasta}: {len(sites)} windows of {window} residues, {n} needed")
    pick = rng.choice(len(sites), size=n, replace=False)
    tok = np.zeros((n, window, 21))
    y = np.empty(n)
    order = [o for o in range(-half, half + 1) if o != 0]
    for r, k in enumerate(pick):
        i, c = sites[k]
        for t, o in enumerate(order):
            tok[r, t, AMINO.index(seqs[i][c + o])] = 1.0
        tok[r, window - 1, 20] = 1.0
        y[r] = 1.0 if seqs[i][c] in HYDROPHOBIC else -1.0
    return _split(_with_positions(tok / np.sqrt(2.0), pad_to), y, rng, n_train=1000)


def _split(X, y, rng, n_train):
    """Shuffled train / validation (1/4 of the rest) / test split."""
    idx = rng.permutation(len(y))
    rest = idx[n_train:]
    n_val = len(rest) // 4
    parts = (idx[:n_train], rest[:n_val], rest[n_val:])
    return [(X[p], y[p]) for p in parts]


class Stack(nn.Module):
    """Attention layers (nn.MultiheadAttention, no biases; or nn.TransformerEncoderLayer) and a linear readout of
    the last token's representation."""

    def __init__(self, N0, heads, kind="mha", ff=32):
        super().__init__()
        if kind == "mha":
            self.layers = nn.ModuleList(nn.MultiheadAttention(N0, h, bias=False, batch_first=True) for h in heads)
        else:
            self.layers = nn.ModuleList(nn.TransformerEncoderLayer(N0, h, dim_feedforward=ff, dropout=0.0,
                                                                   batch_first=True) for h in heads)
        self.kind = kind
        self.readout = nn.Linear(N0, 1)

    def attention_modules(self):
        return [m if self.kind == "mha" else m.self_attn for m in self.layers]

    def forward(self, x):
        h = x
        for m in self.layers:
            h = m(h, h, h, need_weights=False)[0] if self.kind == "mha" else m(h)
        return self.readout(h[:, -1]).squeeze(-1)


def fit(model, X, y, steps, lr=0.01, grad_masks=None):
    """Full-batch Adam on the squared error to ±1 labels; grad_masks {param: 0/1 tensor} keep parts fixed."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(Xt) - yt) ** 2).mean()
        loss.backward()
        for p, m in (grad_masks or {}).items():
            p.grad.mul_(m)
        opt.step()
    return float(loss)


def run_in_out_dir(args, prefix, default, fn):
    """fn(args) with args.out set: a temporary folder (removed after) for a --smoke run without --out, else
    args.out or `default`."""
    if args.smoke and args.out is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            args.out = tmp
            return fn(args)
    args.out = args.out or default
    return fn(args)
