#!/usr/bin/env python3
"""bench/msa — an A2M alignment in plmc's focus mode as .npy files for bench/msa/fit_npy (measurement only; the
task `msa` is the real reader): rows with letters outside the protein alphabet dropped, columns where the focus
sequence is lowercase or a gap dropped, site numbers from the focus name's /START-END region, θ-cluster weights
(weight = 1 / #{t : identity(s, t) ≥ (1 − θ)·L}, gaps matching gaps count).

usage: a2m_to_npy.py FILE.a2m FOCUS_ID OUTDIR [theta=0.2]
writes OUTDIR/{tokens.npy (i32 [M, L]), weights.npy, site_numbers.npy, focus.txt}"""
import os
import sys

import numpy as np

ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"


def read_fasta(path):
    names, seqs = [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(">"):
                names.append(line[1:])
                seqs.append([])
            elif names:
                seqs[-1].append(line.strip())
    return names, ["".join(s) for s in seqs]


def main():
    path, focus, out = sys.argv[1:4]
    theta = float(sys.argv[4]) if len(sys.argv) > 4 else 0.2
    names, seqs = read_fasta(path)
    t = next(k for k, n in enumerate(names) if n.startswith(focus))
    code = {c: k for k, c in enumerate(ALPHABET)}
    code["."] = 0
    valid = [all(c.upper() in code for c in s) for s in seqs]
    fs = seqs[t]
    keep = [i for i, c in enumerate(fs) if c.isupper()]
    start = 1
    rest = names[t][len(focus):]
    if rest.startswith("/") and rest[1:2].isdigit():
        start = int(rest[1:].split("-")[0])
    sites = np.array([i + start for i in keep], dtype=np.float64)
    rows = [s for s, v in zip(seqs, valid) if v]
    tok = np.array([[code[s[i].upper()] for i in keep] for s in rows], dtype=np.int32)
    M, L = tok.shape
    ident = np.zeros((M, M), dtype=np.int32)
    for i in range(L):  # identity counts, one column at a time (M² int32 stays small)
        col = tok[:, i]
        ident += col[:, None] == col[None, :]
    w = 1.0 / (ident >= (1 - theta) * L).sum(axis=1) if theta > 0 else np.ones(M)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "tokens.npy"), tok)
    np.save(os.path.join(out, "weights.npy"), w.astype(np.float64))
    np.save(os.path.join(out, "site_numbers.npy"), sites)
    with open(os.path.join(out, "focus.txt"), "w") as f:
        f.write("".join(fs[i] for i in keep))
    print(f"M = {M}, L = {L}, Neff = {w.sum():.1f}")


if __name__ == "__main__":
    main()
