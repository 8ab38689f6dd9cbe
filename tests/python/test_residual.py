"""Residual connections and LayerNorm in the attention-path theory (issue 40, 3.8): `attnmech.torch.theory_attention`
takes a residual connection as one more head of its layer whose attention is the identity matrix, and a
LayerNorm as a per-token scale. Checked three ways: the paths reproduce a residual network's output exactly; the
LayerNorm scales equal an independent recomputation of the encoder layer; and the theory with the identity heads
describes the Bayesian network with residual connections in its own setting (linear values, frozen attention,
Gaussian prior = weight decay), sampled by the posterior estimator."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import attnmech as am  # noqa: E402
import attnmech.torch as amt  # noqa: E402
from attnmech import theory_head_quantities  # noqa: E402
from attnmech._theory import xi_from_attention  # noqa: E402

S, F = 4, 4
N0 = F + S  # features, then a one-hot position code


def _data(rng, n):
    """Tokens of F Gaussian features and a one-hot position; the label needs token 0 (attention) and the last
    token (the skip path)."""
    X = np.zeros((n, S, N0))
    X[:, :, :F] = rng.normal(size=(n, S, F)) / math.sqrt(F)
    X[:, np.arange(S), F + np.arange(S)] = 1.0
    y = np.where(X[:, 0, 0] + 0.5 * X[:, -1, 1] > 0, 1.0, -1.0)
    return X, y


class ResidualStack(nn.Module):
    """Attention layers with linear values and a residual connection, h ← h + attention(h), each layer's attention
    computed from the input tokens X (the theory's frozen attention: the value is h, query and key X), and a
    linear readout of the last token."""

    def __init__(self, heads):
        super().__init__()
        self.layers = nn.ModuleList(nn.MultiheadAttention(N0, H, bias=False, batch_first=True) for H in heads)
        self.readout = nn.Linear(N0, 1, bias=False)

    def forward(self, x):
        h = x
        for m in self.layers:
            h = h + m(x, x, h, need_weights=False)[0]
        return self.readout(h[:, -1]).squeeze(-1)


def _set_bilinear(m, W):
    """One-head attention module whose logits are x_sᵀ W x_t (key s, query t), the npy task's bilinear head:
    q_t = √E·x_t and k_s = Wᵀx_s, so q_t·k_s/√E = x_tᵀWᵀx_s = x_sᵀ W x_t."""
    with torch.no_grad():
        m.in_proj_weight[:N0] = math.sqrt(N0) * torch.eye(N0)
        m.in_proj_weight[N0:2 * N0] = torch.as_tensor(W.T, dtype=torch.float32)


def test_paths_through_identity_heads_reproduce_a_residual_network():
    # f(X) = a · Σ_π M_π X A_π over the paths of the heads plus the identity head of every layer, M_π the product
    # of the heads' value-and-output matrices along the path (the identity for a skip): the residual network's
    # output exactly. Tolerance: float32 forward pass, |f| ~ 1: 1e-5 relative.
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    heads = [2, 1]
    model = ResidualStack(heads).eval()
    X, _ = _data(rng, 12)
    att, X0, res = amt.theory_attention(model, X, residual=True, warn=False)
    assert res == [True, True] and [a.shape[1] for a in att] == [3, 2]
    assert np.array_equal(att[0][:, 2], np.broadcast_to(np.eye(S), (12, S, S)))
    taken, _ = amt.attention(model, X, warn=False)
    assert all(np.array_equal(a[:, :-1], t) for a, t in zip(att, taken))
    H_tot = 6
    z = xi_from_attention(X0, att, readout="last") * math.sqrt(N0 * H_tot)  # X A_π, (P, N0, paths)
    mats = []
    for m in model.layers:
        E, H = N0, m.num_heads
        Wv = m.in_proj_weight[2 * E:].detach().double().numpy()
        Wo = m.out_proj.weight.detach().double().numpy()
        d = E // H
        mats.append([Wo[:, h * d:(h + 1) * d] @ Wv[h * d:(h + 1) * d] for h in range(H)] + [np.eye(E)])
    a = model.readout.weight.detach().double().numpy()[0]
    f = sum(a @ mats[1][h2] @ mats[0][h1] @ z[:, :, h1 * 2 + h2].T for h1 in range(3) for h2 in range(2))
    # with grad enabled: torch 1.13's fused inference kernel refuses bias-free attention under no_grad
    out = model(torch.as_tensor(X, dtype=torch.float32)).detach().double().numpy()
    assert np.allclose(f, out, rtol=1e-5, atol=1e-5 * np.abs(out).max())


def test_layer_norm_scales_of_an_encoder_layer():
    # The per-token scales folded into the attention rows equal 1/√(Var + eps) of each norm's input recomputed
    # by hand from the layer's own modules (post-norm: the output token t of layer l carries c1_t·c2_t on every
    # head and the identity). Tolerance: float32 arithmetic of the two routes, 1e-5 relative.
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    enc = nn.TransformerEncoderLayer(N0 + 1, 1, dim_feedforward=16, dropout=0.0, batch_first=True).eval()
    model = nn.Sequential(enc)
    X = np.concatenate([_data(rng, 10)[0], rng.normal(size=(10, S, 1))], axis=2)
    att, _, res = amt.theory_attention(model, X, warn=False)
    assert res == [True] and att[0].shape[1] == 2
    plain, _, _ = amt.theory_attention(model, X, layer_norm=False, warn=False)
    x = torch.as_tensor(X, dtype=torch.float32)
    with torch.no_grad():
        z1 = x + enc.self_attn(x, x, x, need_weights=False)[0]
        h1 = enc.norm1(z1)
        z2 = h1 + enc.linear2(enc.activation(enc.linear1(h1)))
    c = [1.0 / torch.sqrt(z.double().var(dim=-1, unbiased=False) + enc.norm1.eps).numpy() for z in (z1, z2)]
    want = plain[0] * (c[0] * c[1])[:, None, :, None]
    assert np.allclose(att[0], want, rtol=1e-5, atol=0)


def _posterior_problem(tmp_path, N, T):
    """The same network twice: a torch ResidualStack with one bilinear head per layer (for the adapter), and the
    npy task's problem with that head and the identity as a second head (logit 60 on s = t: softmax = identity to
    e⁻⁶⁰·S) for the posterior sampler."""
    rng = np.random.default_rng(2)
    X, y = _data(rng, 40)
    Xt, yt = _data(rng, 200)
    W1 = np.zeros((N0, N0))
    W1[F, F:] = 3.0                       # every query attends to token 0
    W2 = rng.normal(size=(N0, N0)) * 0.5
    Id = np.zeros((N0, N0))
    Id[F:, F:] = 60.0 * np.eye(S)
    model = ResidualStack([1, 1]).eval()
    for m, W in zip(model.layers, (W1, W2)):
        _set_bilinear(m, W)
    am.write_problem(tmp_path / "p", X, y, Xt, yt, heads=[2, 2], W=[W1, Id, W2, Id], widths=N, temperature=T)
    return model, (X, y, Xt, yt)


def test_residual_theory_matches_the_sampled_residual_network(tmp_path):
    # The Bayesian network with a residual connection in every layer (its own value weights on the skip, every
    # weight Gaussian: weight decay = the prior), sampled by the posterior estimator (NUTS), against the theory the
    # adapter builds from the torch model of the same network (identity head appended per layer).
    N, T = 30.0, 0.1
    model, (X, y, Xt, yt) = _posterior_problem(tmp_path, N, T)
    att, X0, res = amt.theory_attention(model, X, residual=True, warn=False)
    att_t, X0t, _ = amt.theory_attention(model, Xt, residual=True, warn=False)
    with am.Theory.from_attention(X0, att, y, readout="last", widths=N, temperature=T) as th:
        U = th.solve().U[0]
        mean, _ = th.predict(xi_from_attention(X0t, att_t), U)
    r = am.run("npy", "posterior", dir=str(tmp_path / "p"), widths=[N], chains=2, warmup=300, samples=300,
               threads=1, seed=1, progress=False)
    run = r["runs"][0]
    # 1. the adapter's theory is the task's theory of the same network: attention in float32 (torch) against
    #    float64 (the task), logits O(3): U and the means agree to ~1e-6; 1e-4 relative leaves room.
    assert np.allclose(U, run["U"][0], rtol=1e-4, atol=1e-4 * np.abs(U).max())
    assert np.allclose(mean, run["test"]["mean"], rtol=1e-4, atol=1e-4)
    # 2. sampled U against the theory: 4 Monte-Carlo standard errors (the sampler's sd/√ESS) for the sampling, and
    #    the finite-width correction the saddle point drops, O(1/N) relative: docs/posterior.md measured ≤ 1.2/N on
    #    the markov task (9.8 % at N = 10, 3.9 % at 30, 0.8 % at 100); 2/N of max|U| bounds it here.
    post = run["posterior"]
    Us, se = np.asarray(post["U"]), np.asarray(post["U_stderr"])
    tol = 4 * se + 2.0 / N * np.abs(U).max()
    assert np.all(np.abs(Us - U) <= tol), (Us - U, tol)
    # the skip paths carry weight: U's diagonal is O(1) on every path, so a theory without them would miss them
    assert np.all(np.diag(Us) > 0.5)
    # 3. predictions: the sampled posterior mean against the theory's, next to the theory that ignores the
    #    residual (3.7: the attention heads alone). The residual theory is several times closer.
    sampled = np.asarray(post["test"]["mean"])
    att0, _ = amt.attention(model, X, warn=False)
    att0_t, _ = amt.attention(model, Xt, warn=False)
    with am.Theory.from_attention(X0, att0, y, readout="last", widths=N, temperature=T) as th0:
        th0.solve()
        mean0, _ = th0.predict(xi_from_attention(X0t, att0_t))
    err, err0 = np.sqrt(np.mean((sampled - mean) ** 2)), np.sqrt(np.mean((sampled - mean0) ** 2))
    print(f"U deviation / tolerance: max {np.max(np.abs(Us - U) / tol):.2f}; prediction RMS error {err:.4f} "
          f"against {err0:.4f} without the identity heads")
    assert err < 0.25 * err0, (err, err0)
    assert abs(post["test"]["accuracy"] - run["test"]["accuracy"]) <= 0.03  # 6 of 200 test signs


def test_head_quantities_skip_identity_heads():
    # With skip, the identity head is in the theory but gets no row: the per-head arrays cover the network heads,
    # and they equal the rows of the same theory computed without skip (the identity's row dropped).
    rng = np.random.default_rng(3)
    X, y = _data(rng, 60)
    Xt, yt = _data(rng, 60)
    model = ResidualStack([2, 1]).eval()
    att, X0, res = amt.theory_attention(model, X, residual=True, warn=False)
    att_t, X0t, _ = amt.theory_attention(model, Xt, residual=True, warn=False)
    kw = dict(readout="last", widths=10.0, temperature=0.1)
    q = theory_head_quantities(X0, att, y, X0t, att_t, yt, skip=res, **kw)
    full = theory_head_quantities(X0, att, y, X0t, att_t, yt, **kw)
    net = np.array([0, 1, 3])  # L1H0, L1H1, L2H0 (L1H2 and L2H1 are the identities)
    assert q["heads"] == [2, 1] and q["theory_heads"] == [3, 2]
    for k in ("predicted_drop", "predicted_loss_rise", "predicted_drop_gp", "alignment_drop", "xi_share"):
        assert np.array_equal(q[k], full[k][net]), k
    assert np.array_equal(q["layer"], [1, 1, 2]) and sorted(q["ranking"]) == [0, 1, 2]
    with pytest.raises(ValueError, match="skip"):
        theory_head_quantities(X0, att, y, X0t, att_t, yt, skip=[True], **kw)


def test_head_importance_on_an_encoder_ranks_network_heads_only(tmp_path):
    # head_importance on a TransformerEncoder (residuals and LayerNorm found by themselves): the theory has one
    # identity head per layer more than the model, every per-head array and the ranking cover the model's heads,
    # the warning no longer lists residual paths, and saving works.
    torch.manual_seed(5)
    rng = np.random.default_rng(5)
    X, y = _data(rng, 80)
    Xt, yt = _data(rng, 40)
    layer = nn.TransformerEncoderLayer(N0, 2, dim_feedforward=8, dropout=0.0, batch_first=True)

    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.TransformerEncoder(layer, num_layers=2)
            self.readout = nn.Linear(N0, 1)

        def forward(self, x):
            return self.readout(self.enc(x)[:, -1]).squeeze(-1)
    model = Enc().eval()
    with pytest.warns(amt.ModelPartsWarning) as w:
        imp = amt.head_importance(model, X, y, Xt, yt, widths=10.0, temperature=0.1, refit_steps=0,
                                  random_orders=0)
    msg = " ".join(str(x.message) for x in w if issubclass(x.category, amt.ModelPartsWarning))
    assert "feed-forward" in msg and "residual paths" not in msg
    assert imp.theory["theory_heads"] == [3, 3] and imp.theory["heads"] == [2, 2]
    assert imp.theory["skip"] == [True, True]
    assert imp.predicted_drop.shape == (4,) and sorted(imp.ranking) == [0, 1, 2, 3] and len(imp.labels) == 4
    imp.save(tmp_path / "out")
    # 3.7's theory on request: no identity heads
    with pytest.warns(amt.ModelPartsWarning, match="residual paths"):
        plain = amt.head_importance(model, X, y, Xt, yt, widths=10.0, temperature=0.1, refit_steps=0,
                                    random_orders=0, residual=False, layer_norm=False)
    assert plain.theory["theory_heads"] == [2, 2]
