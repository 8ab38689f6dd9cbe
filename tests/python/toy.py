"""The RNG-free toy problem of spec attention-paths.md §8.0 (the same data as tests/toy.hpp and
tests/plugins/task-npy/npy_test_util.h), in NumPy layout: X[μ, s, i], W[i, j] with i on the key side."""
import numpy as np

P, N0, S = 8, 5, 4
HEADS = [2, 2]
WIDTHS = [3.0, 4.0, 5.0]
VARIANCES = [1.0, 0.8, 1.2, 1.5]
T = 0.1


def example(mu):
    s = np.arange(S)[:, None]
    i = np.arange(N0)[None, :]
    return np.sin(1 + 0.7 * mu + 0.3 * i + 0.2 * s) + 0.1 * i


X = np.stack([example(mu) for mu in range(P)])
X_test = np.stack([example(8.5), example(9.5)])
y = np.array([1.0 if mu % 2 == 0 else -1.0 for mu in range(P)])
_i, _j = np.meshgrid(np.arange(N0), np.arange(N0), indexing="ij")
W = [0.5 * np.eye(N0), np.cos(_i + 2.0 * _j), np.zeros((N0, N0)), np.cos(0.5 * _i - 1.5 * _j)]

# Expected values (spec §8.0, 10 significant digits)
GP = {"U_a": 1.5, "energy": 13.5053894435, "entropy": 4.8383649242,
      "mean": [0.0304151423, 0.0461470535], "var": [0.0444232627, 0.0281440447]}
OPT = {"S_code": 18.0688248255, "energy": 12.9676230395, "entropy": 5.1012017860, "U_a": 1.0475780679,
       "U2": [[1.0186990960, -0.2371839952], [-0.2371839952, 1.0215409733]],
       "U1": [[0.7318460984, -0.2725306110, -0.0830667920, -0.0839248157],
              [-0.2725306110, 0.7350104702, -0.0839158764, -0.0850046155],
              [-0.0830667920, -0.0839158764, 0.7397422973, -0.2645758283],
              [-0.0839248157, -0.0850046155, -0.2645758283, 0.7430133959]],
      "mean": [0.0252733611, 0.0410944365], "var": [0.0396383702, 0.0253947502], "hessian_min_eig": 0.0995837}


def attention(X, W):
    """Per-head attention in PyTorch's layout [μ, h, query t, key s] (rows sum to 1) for one layer's heads:
    logit[s, t] = x_sᵀ W x_t, softmax over the keys s."""
    out = []
    for w in W:
        logits = np.einsum("msi,ij,mtj->mts", X, w, X)
        logits -= logits.max(axis=2, keepdims=True)
        e = np.exp(logits)
        out.append(e / e.sum(axis=2, keepdims=True))
    return np.stack(out, axis=1)
