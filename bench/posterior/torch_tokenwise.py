"""Baseline for bench_posterior: gradient evaluations per second of the network log posterior with
PyTorch autograd on the token-wise forward pass of the paper's network (float64, one thread).
Usage: torch_tokenwise.py N P N0 S H1 H2 seconds   → prints "grads_per_second <value>"."""
import sys
import time

try:
    import torch
except ImportError:
    print("skip torch not installed")
    sys.exit(0)

N, P, N0, S, H1, H2 = (int(v) for v in sys.argv[1:7])
budget = float(sys.argv[7])
torch.set_num_threads(1)
torch.manual_seed(0)
dt = torch.float64
X = torch.randn(P, N0, S, dtype=dt)
Om1 = torch.softmax(torch.randn(H1, P, S, S, dtype=dt), dim=2)  # [h, μ, key s, query t], columns sum to 1
Om2 = torch.softmax(torch.randn(H2, P, S, S, dtype=dt), dim=2)
y = torch.sign(torch.randn(P, dtype=dt))
T = 0.01
V0 = torch.randn(N, N0, dtype=dt, requires_grad=True)
V1 = torch.randn(H1, N, N, dtype=dt, requires_grad=True)
V2 = torch.randn(H2, N, N, dtype=dt, requires_grad=True)
a = torch.randn(N, dtype=dt, requires_grad=True)


def log_post():
    x = torch.einsum("wn,pns->pws", V0, X) / N0 ** 0.5
    x1 = sum(torch.einsum("vw,pws,pst->pvt", V1[h], x, Om1[h]) for h in range(H1)) / (H1 * N) ** 0.5
    x2 = sum(torch.einsum("vw,pws,pst->pvt", V2[h], x1, Om2[h]) for h in range(H2)) / (H2 * N) ** 0.5
    f = x2[:, :, S - 1] @ a / N ** 0.5  # last-token readout
    lp = -((f - y) ** 2).sum() / (2 * T)
    lp = lp - 0.5 * ((V0 ** 2).sum() + (V1 ** 2).sum() + (V2 ** 2).sum() + (a ** 2).sum())
    return lp


def grad():
    for t in (V0, V1, V2, a):
        t.grad = None
    log_post().backward()


grad()  # warm-up
n = 0
t0 = time.perf_counter()
while True:
    grad()
    n += 1
    el = time.perf_counter() - t0
    if el > budget or (n >= 2 and el > budget / 4 and N >= 1000):
        break
print("grads_per_second %.6g" % (n / el))
