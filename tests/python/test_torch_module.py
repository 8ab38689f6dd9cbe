"""attnmech.torch: attention taken from torch models (plain nn.MultiheadAttention stacks, nn.TransformerEncoder
with masks, both batch layouts) against PyTorch's own need_weights=True output, head ablation against an
independent NumPy implementation of multi-head attention, the re-fit's frozen queries/keys, the measured drops,
the model-parts warning, bad arguments, and head_importance end to end on a tiny model. Tiny models and few steps
(the file runs in a few seconds on one core); fixed seeds; no sklearn."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import attnmech.torch as amt  # noqa: E402

torch.set_num_threads(1)


class Stack(nn.Module):
    """An embedding, L plain attention layers (no residual), a linear readout of the last token."""

    def __init__(self, N_in=3, E=4, heads=(2, 2), batch_first=True, bias=False, readout=1, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.batch_first = batch_first
        self.embed = nn.Linear(N_in, E, bias=False)
        self.att = nn.ModuleList(nn.MultiheadAttention(E, h, bias=bias, batch_first=batch_first) for h in heads)
        self.readout = nn.Linear(E, readout, bias=False)

    def forward(self, x):
        h = self.embed(x)
        if not self.batch_first:
            h = h.transpose(0, 1)
        for a in self.att:
            h = a(h, h, h, need_weights=False)[0]
        if not self.batch_first:
            h = h.transpose(0, 1)
        out = self.readout(h[:, -1])
        return out.squeeze(-1) if out.shape[-1] == 1 else out


def data(P=24, S=5, N_in=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(P, S, N_in)).astype(np.float32)
    y = np.where(X[:, 0, 0] > 0, 1.0, -1.0)
    return X, y


def mha_numpy(m, x, silenced=()):
    """Independent multi-head self-attention (batch first, float64) with heads in `silenced` removed:
    returns (output [N, S, E], weights [N, H, S, S])."""
    E, H = m.embed_dim, m.num_heads
    d = E // H
    W = m.in_proj_weight.detach().double().numpy()
    b = np.zeros(3 * E) if m.in_proj_bias is None else m.in_proj_bias.detach().double().numpy()
    q, k, v = (x @ W[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E] for i in range(3))
    out = np.zeros(x.shape[:2] + (E,))
    Wo = m.out_proj.weight.detach().double().numpy()
    weights = []
    for h in range(H):
        s = slice(h * d, (h + 1) * d)
        logits = np.einsum("ntd,nsd->nts", q[..., s], k[..., s]) / np.sqrt(d)
        a = np.exp(logits - logits.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        weights.append(a)
        if h not in silenced:
            out += np.einsum("nts,nsd->ntd", a, v[..., s]) @ Wo[:, s].T
    if m.out_proj.bias is not None:
        out += m.out_proj.bias.detach().double().numpy()
    return out, np.stack(weights, 1)


EPS32 = float(np.finfo(np.float32).eps)


def mha_float32_bound(m, x, silenced=()):
    """Bounds on how far PyTorch's float32 multi-head attention (any kernels: blocking, SIMD width, FMA) can be from
    mha_numpy's float64 (weights [N, H, S, S], output [N, S, E]), by running error analysis on the actual
    magnitudes: a sum of n products carries ≤ n·ε32 of the sum of their |terms|; q, k, v are sums of E, a logit
    of d = E/H (then one scaling), so |Δlogit| ≤ (2E + d + 1)·ε32·Σ_d |q||k|/√d; a softmax weight moves by ≤
    2·max|Δlogit| of its size plus (S + 2)·ε32 (exp, the sum of S, the division); the output sums S weighted
    values and E output columns: (|Δa|·|v| + a·(E + S)·ε32·|v|)·|W_o| + E·ε32 of its magnitude."""
    E, H = m.embed_dim, m.num_heads
    d, S = E // H, x.shape[1]
    W = np.abs(m.in_proj_weight.detach().double().numpy())
    b = np.zeros(3 * E) if m.in_proj_bias is None else np.abs(m.in_proj_bias.detach().double().numpy())
    qa, ka, va = (np.abs(x) @ W[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E] for i in range(3))
    Wo = np.abs(m.out_proj.weight.detach().double().numpy())
    a = mha_numpy(m, x)[1]
    da, out = np.zeros_like(a), np.zeros(x.shape[:2] + (E,))
    for h in range(H):
        s = slice(h * d, (h + 1) * d)
        dlogit = (2 * E + d + 1) * EPS32 * np.einsum("ntd,nsd->nts", qa[..., s], ka[..., s]) / np.sqrt(d)
        da[:, h] = a[:, h] * 2 * dlogit.max(-1, keepdims=True) + (S + 2) * EPS32 * a[:, h]
        if h not in silenced:
            mix = np.einsum("nts,nsd->ntd", da[:, h] + (E + S) * EPS32 * a[:, h], va[..., s])
            out += mix @ Wo[:, s].T + E * EPS32 * np.einsum("nts,nsd->ntd", a[:, h], va[..., s]) @ Wo[:, s].T
    return da, out


# ------------------------------------------------------------------------------------------------ import
def test_import_attnmech_does_not_import_torch_and_missing_torch_is_named():
    code = ("import sys; import attnmech; assert 'torch' not in sys.modules; sys.modules['torch'] = None\n"
            "try:\n    import attnmech.torch\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert "python3-torch" in out.stdout and "pip install torch" in out.stdout


# --------------------------------------------------------------------------------------------- attention
@pytest.mark.parametrize("batch_first", [True, False])
def test_attention_equals_pytorch_need_weights(batch_first):
    model = Stack(batch_first=batch_first, heads=(2, 1)).eval()
    X, _ = data()
    att, X0 = amt.attention(model, X, batch_size=7)  # batches of 7: the concatenation is tested too
    assert [a.shape for a in att] == [(24, 2, 5, 5), (24, 1, 5, 5)] and X0.shape == (24, 5, 4)
    with torch.enable_grad():  # torch 1.13's fused no-grad path fails on bias=False attention
        x = model.embed(torch.as_tensor(X)).detach()
        assert np.array_equal(X0, x.double().numpy())  # layer 1's input is the embedding's output, exactly
        for a, m in zip(att, model.att):
            xin = x if batch_first else x.transpose(0, 1)
            out, w = m(xin, xin, xin, need_weights=True, average_attn_weights=False)
            # the same module on the same input: PyTorch's own weights, bit for bit
            assert np.array_equal(a, w.detach().double().numpy())
            x = (out if batch_first else out.transpose(0, 1)).detach()
    # and PyTorch's weights are softmax(QKᵀ/√d): the independent implementation agrees to float32 round-off
    # (mha_float32_bound: ≤ 1.3e-6 here, 3e-8 seen; at least 9.8 times each difference seen)
    ref = mha_numpy(model.att[0], X0)[1]
    assert np.all(np.abs(att[0] - ref) <= mha_float32_bound(model.att[0], X0)[0])


def test_attention_uniform_and_one_hot_closed_forms():
    """Zero query weights give logits 0, so every weight is exactly 1/S; an attn_mask leaving one key per
    query gives exactly one-hot rows."""
    model = Stack(heads=(2,)).eval()
    with torch.no_grad():
        model.att[0].in_proj_weight[:4] = 0.0
    X, _ = data(S=5)
    att, _ = amt.attention(model, X, warn=False)
    assert np.all(att[0] == np.float32(1.0) / np.float32(5.0))  # 1/S rounded once, in float32

    class Masked(Stack):
        def forward(self, x):
            h = self.embed(x)
            mask = torch.full((5, 5), float("-inf"))
            mask[:, 2] = 0.0  # every query may only see key 2
            h = self.att[0](h, h, h, attn_mask=mask, need_weights=False)[0]
            return self.readout(h[:, -1]).squeeze(-1)

    att, _ = amt.attention(Masked(heads=(2,)).eval(), X, warn=False)
    expect = np.zeros((24, 2, 5, 5))
    expect[..., 2] = 1.0
    assert np.array_equal(att[0], expect)


def test_attention_inside_transformer_encoder_with_padding_mask():
    """nn.TransformerEncoder calls its attention with need_weights=False (and in eval mode may take a fused
    path): the weights still come out, equal to self_attn(need_weights=True) on the layer's input, the padding
    mask applied (masked keys get weight exactly 0)."""
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=8, dropout=0.0, batch_first=True)

    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.TransformerEncoder(layer, num_layers=2)
            self.readout = nn.Linear(4, 1)

        def forward(self, x):
            pad = torch.zeros(x.shape[:2], dtype=torch.bool)
            pad[:, -1] = True  # the last token is padding
            return self.readout(self.enc(x, src_key_padding_mask=pad)[:, 0]).squeeze(-1)

    model = Enc().eval()
    X = np.random.default_rng(2).normal(size=(10, 6, 4)).astype(np.float32)
    with pytest.warns(amt.ModelPartsWarning, match="residual paths") as rec:
        att, X0 = amt.attention(model, X)
    assert len(rec) == 1 and "LayerNorm" in str(rec[0].message)
    assert np.array_equal(X0, X.astype(np.float64))
    pad = torch.zeros((10, 6), dtype=torch.bool)
    pad[:, -1] = True
    x = torch.as_tensor(X)
    with torch.enable_grad():  # the layers' unfused path, as during extraction
        for a, lay in zip(att, model.enc.layers):
            w = lay.self_attn(x, x, x, key_padding_mask=pad, need_weights=True, average_attn_weights=False)[1]
            # the same module on the same input by the same unfused route attnmech.torch extracts on: PyTorch's
            # own weights bit for bit, as for the plain stack above
            assert np.array_equal(a, w.detach().double().numpy())
            x = lay(x, src_key_padding_mask=pad).detach()
    assert np.all(att[0][..., -1] == 0.0) and np.all(att[1][..., -1] == 0.0)
    # float32 rows: each weight within (S + 2)·u of its exact share (exp, a sum of S = 6, the division; u = ε32/2),
    # so a row's sum within (S + 2)·u = 4.8e-7 of 1
    assert np.allclose(att[1].sum(-1), 1.0, rtol=0, atol=1e-6)


def test_attention_call_order_and_bad_models():
    class Reversed(Stack):
        def forward(self, x):
            h = self.embed(x)
            for a in reversed(self.att):
                h = a(h, h, h)[0]
            return self.readout(h[:, -1]).squeeze(-1)

    X, _ = data()
    model = Reversed().eval()
    with pytest.raises(ValueError, match="order"):
        amt.attention(model, X, warn=False)
    att, _ = amt.attention(model, X, layers=list(reversed(model.att)), warn=False)  # layers= fixes it
    assert len(att) == 2
    with pytest.raises(ValueError, match="no nn.MultiheadAttention"):
        amt.attention(nn.Linear(3, 1), X)
    with pytest.raises(TypeError, match=r"layers\[0\]"):
        amt.attention(model, X, layers=[model.embed])
    with pytest.raises(ValueError, match="batch_size"):
        amt.attention(model, X, batch_size=0, layers=list(reversed(model.att)))


def test_model_parts_warning_lists_parts_once():
    X, _ = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        amt.attention(Stack().eval(), X)  # attention with linear values and a linear readout: no warning

    class WithMLP(Stack):
        def __init__(self):
            super().__init__(bias=True)
            self.mlp = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            h = self.drop(self.embed(x))
            for a in self.att:
                h = a(h, h, h)[0]
            return self.readout(self.mlp(h)[:, -1]).squeeze(-1)

    with torch.no_grad():
        model = WithMLP()
        model.att[0].in_proj_bias.fill_(0.1)
    with pytest.warns(amt.ModelPartsWarning) as rec:
        amt.attention(model.train(), X)
    assert len(rec) == 1
    msg = str(rec[0].message)
    for part in ("Linear, ReLU", "value/output biases (layers [1])", "dropout in train mode", "integrated out"):
        assert part in msg


# ------------------------------------------------------------------------------------------------ ablation
def test_ablate_equals_removing_the_head_and_restores():
    model = Stack(E=6, heads=(3, 2)).eval()
    X, _ = data()
    x = model.embed(torch.as_tensor(X)).detach().double().numpy()
    m = model.att[0]
    before = [p.detach().clone() for p in model.parameters()]
    with amt.ablate(model, [(1, 1)]) as silenced, torch.enable_grad():
        assert silenced == [(1, 1)]
        out = m(*(torch.as_tensor(x, dtype=torch.float32),) * 3)[0].detach().double().numpy()
    ref = mha_numpy(m, x, silenced={1})[0]
    assert np.all(np.abs(out - ref) <= mha_float32_bound(m, x, silenced={1})[1])  # float32 vs float64 (2.4e-8 seen)
    for p, q in zip(model.parameters(), before):
        assert torch.equal(p, q)  # restored bit for bit
    with pytest.raises(RuntimeError, match="boom"):
        with amt.ablate(model, [3, (2, 1), 3]):  # flat index 3 = layer 2 head 0; repeats are harmless
            assert torch.all(model.att[1].out_proj.weight == 0)
            raise RuntimeError("boom")
    for p, q in zip(model.parameters(), before):
        assert torch.equal(p, q)  # restored after the exception too


@pytest.mark.parametrize("bad, match", [([(0, 0)], "layer 0 out of range 1..2"), ([(3, 0)], "layer 3"),
                                        ([(1, 3)], "head 3 out of range 0..2"), ([5], "flat head index 5"),
                                        (["x"], "pair"), ([(1.0, 0)], "integers")])
def test_ablate_bad_heads(bad, match):
    model = Stack(E=6, heads=(3, 2))
    with pytest.raises(ValueError, match=match):
        with amt.ablate(model, bad):
            pass


def test_ablate_inside_transformer_encoder_layer():
    torch.manual_seed(0)
    enc = nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=8, dropout=0.0, batch_first=True).eval()
    x = torch.randn(3, 5, 4)
    with torch.no_grad():
        full = enc(x)
        with amt.ablate(enc, [(1, 0), (1, 1)]):  # both heads gone: the block is x + out_proj.bias, then norms
            gone = enc(x)
        sa = x + enc.self_attn.out_proj.bias
        ref = enc.norm2(enc.norm1(sa) + enc._ff_block(enc.norm1(sa)))
    # the same modules on the same input (equal bits unless the eval fast path fuses them); a fused path's float32
    # chain (two LayerNorms of d = 4, a feed-forward of 8) stays within ~30·ε32 of these O(1) outputs, 4e-6; the
    # heads' removal moves the outputs by 0.39
    assert torch.allclose(gone, ref, rtol=0, atol=1e-5) and not torch.allclose(full, gone, atol=1e-3)


# ------------------------------------------------------------------------------------------- measured drops
def trained(heads=(2, 2), steps=60, seed=0):
    model = Stack(heads=heads, seed=seed)
    X, y = data(P=64, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        ((model(torch.as_tensor(X)) - torch.as_tensor(y, dtype=torch.float32)) ** 2).mean().backward()
        opt.step()
    return model.eval(), X, y


def test_measured_drop_zero_for_a_head_with_no_values():
    model, X, y = trained()
    with torch.no_grad():
        model.att[0].in_proj_weight[8:10] = 0.0  # layer 1 head 0's value rows (E = 4, d = 2): it outputs 0
    drops = amt.measured_drop(model, X, y)
    assert drops.shape == (4,) and drops[0] == 0.0
    base = amt.accuracy(model, X, y)
    with amt.ablate(model, [(2, 1)]):
        assert drops[3] == base - amt.accuracy(model, X, y)


def test_refit_freezes_queries_keys_and_is_deterministic():
    model, X, y = trained()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    a = amt.refit(model, X, y, silenced=[(1, 1)], steps=15)
    b = amt.refit(model, X, y, silenced=[(1, 1)], steps=15)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])  # the model itself is untouched
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k])  # deterministic
    for l in range(2):
        w, w0 = a.att[l].in_proj_weight, model.att[l].in_proj_weight
        assert torch.equal(w[:8], w0[:8]) and not torch.equal(w[8:], w0[8:])  # Q, K frozen; V re-fitted
    assert torch.all(a.att[0].out_proj.weight[:, 2:4] == 0)  # the silenced head stays silent
    assert not torch.equal(a.readout.weight, model.readout.weight)
    # zero steps: the re-fit is the silenced model, so the re-fit drop is the measured drop
    assert np.array_equal(amt.refit_drop(model, X, y, X, y, refit_steps=0), amt.measured_drop(model, X, y))


def test_several_outputs_argmax_and_cross_entropy():
    model = Stack(heads=(2,), readout=3).eval()
    X, _ = data(P=30)
    y = np.arange(30) % 3
    with torch.enable_grad():
        out = model(torch.as_tensor(X)).detach()
    assert amt.accuracy(model, X, y) == np.mean(out.argmax(-1).numpy() == y)
    fit = amt.refit(model, X, y, steps=30, lr=0.05)
    assert amt.accuracy(fit, X, y) >= amt.accuracy(model, X, y)
    with pytest.raises(ValueError, match="3 classes"):
        amt._theory_labels(y, y, None)
    t, _ = amt._theory_labels(y, y, lambda v: np.where(v == 2, 1.0, -1.0))
    assert np.array_equal(t, np.where(y == 2, 1.0, -1.0))
    t, _ = amt._theory_labels(y % 2, y % 2, None)  # two classes: the larger is +1
    assert np.array_equal(t, np.where(y % 2 == 1, 1.0, -1.0))
    nan = np.where(y % 2 == 1, 1.0, -1.0)
    nan[4] = np.nan  # counted as a third class ("3 classes") before
    with pytest.raises(ValueError, match=r"^y_test: label nan at index 4; labels must be finite"):
        amt._theory_labels(y % 2, nan, None)


def test_pruning_curve_and_spearman():
    model, X, y = trained()
    curve = amt.pruning_curve(model, [3, 0, 2, 1], X, y)
    assert curve[0] == amt.accuracy(model, X, y) and len(curve) == 5
    assert curve[-1] == np.mean(np.where(np.zeros(len(y)) >= 0, 1.0, -1.0) == y)  # all heads gone: output 0 → +1
    with pytest.raises(ValueError, match="X_train and y_train"):
        amt.pruning_curve(model, [0], X, y, refit_steps=3)
    assert amt.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert amt.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert amt.spearman([1, 1, 2], [3, 3, 5]) == pytest.approx(1.0)
    assert np.isnan(amt.spearman([1, 1, 1], [1, 2, 3]))


# ------------------------------------------------------------------------------------------ head_importance
def test_head_importance_end_to_end(tmp_path):
    model, X, y = trained(steps=80)
    Xt, yt = data(P=48, seed=5)
    was = [p.detach().clone() for p in model.parameters()]
    imp = amt.head_importance(model, X, y, Xt, yt, refit_steps=10, random_orders=2, seed=3)
    for p, q in zip(model.parameters(), was):
        assert torch.equal(p, q)  # the model is not changed
    for a in (imp.score, imp.predicted_drop, imp.measured_drop, imp.refit_drop):
        assert a.shape == (4,) and np.all(np.isfinite(a))
    assert sorted(imp.ranking.tolist()) == [0, 1, 2, 3] and imp.heads == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert imp.settings["widths"] in amt.SELECT_WIDTHS and imp.settings["temperature"] in amt.SELECT_TEMPERATURES
    # the same numbers as the public calls (the re-fits are shared and cached inside head_importance)
    assert np.array_equal(imp.measured_drop, amt.measured_drop(model, Xt, yt))
    assert np.array_equal(imp.refit_drop, amt.refit_drop(model, X, y, Xt, yt, refit_steps=10))
    assert np.array_equal(imp.pruning["ranking_trained"], amt.pruning_curve(model, imp.ranking, Xt, yt))
    assert np.array_equal(imp.pruning["ranking_refit"],
                          amt.pruning_curve(model, imp.ranking, Xt, yt, X_train=X, y_train=y, refit_steps=10))
    assert imp.pruning["random_trained"].shape == (2, 5) and imp.accuracy["trained"] == amt.accuracy(model, Xt, yt)
    # with N and T given, the theory side is theory_head_quantities' own
    fixed = amt.head_importance(model, X, y, Xt, yt, widths=10.0, temperature=0.1, refit_steps=0, random_orders=0)
    from attnmech._importance import theory_head_quantities
    att, X0 = amt.attention(model, X)
    att_t, X0t = amt.attention(model, Xt)
    q = theory_head_quantities(X0, att, y, X0t, att_t, yt, widths=10.0, temperature=0.1)
    assert np.array_equal(fixed.score, q["score"]) and np.array_equal(fixed.ranking, q["ranking"])
    assert np.all(np.isnan(fixed.refit_drop)) and "ranking_refit" not in fixed.pruning
    out = imp.save(tmp_path / "imp")
    names = set(os.listdir(out))
    assert {"results.json", "pruning.svg", "drops.svg", "predicted_vs_measured.svg"} <= names
    import attnmech as am
    doc = am.load(out)
    assert np.allclose(doc["refit_drop"], imp.refit_drop) and list(doc["labels"]) == imp.labels
    assert "L2H1" in doc.summary()
    fixed.save(tmp_path / "fixed")  # no re-fit, no random orders: the plots leave those series out


def test_head_importance_refuses_several_classes_without_target():
    model = Stack(heads=(2,), readout=3).eval()
    X, _ = data(P=30)
    y = np.arange(30) % 3
    with pytest.raises(ValueError, match="3 classes.*target="):
        amt.head_importance(model, X, y, X, y, refit_steps=0)
    with pytest.raises(ValueError, match="target: must map"):
        amt.head_importance(model, X, y, X, y, target=lambda v: v, refit_steps=0)


def test_head_importance_intervals_notes_selection_and_plots(tmp_path):
    model, X, y = trained(steps=80)
    Xt, yt = data(P=48, seed=5)
    imp = amt.head_importance(model, X, y, Xt, yt, refit_steps=5, random_orders=1, seed=3)
    iv = imp.predicted_drop_interval
    assert iv.shape == (4, 2) and np.all(iv[:, 0] <= imp.predicted_drop) and np.all(imp.predicted_drop <= iv[:, 1])
    np.testing.assert_array_equal(iv, imp.theory["predicted_drop_interval"])
    assert imp.distinct.shape == (3,) and imp.confident == bool(np.all(imp.distinct))
    assert sum(imp.groups, []) == imp.ranking.tolist() and len(imp.groups) == 1 + int(np.sum(imp.distinct))
    assert imp.converged and all("round-off" in n for n in imp.notes)
    sel = imp.selection
    i, j = sel["index"]
    assert (imp.settings["widths"], imp.settings["temperature"]) == (amt.SELECT_WIDTHS[i], amt.SELECT_TEMPERATURES[j])
    assert sel["accuracy"].shape == (5, 5) and sel["tied"][i, j]
    out = imp.save(tmp_path / "imp")
    import attnmech as am
    doc = am.load(out)
    np.testing.assert_array_equal(doc["predicted_drop_interval"], iv)
    assert list(doc["group"]) == [next(g for g, m in enumerate(imp.groups) if k in m) for k in range(4)]
    svg = open(os.path.join(out, "predicted_vs_measured.svg")).read()
    assert "measured test accuracy drop" in svg and "predicted drop" in svg and "y = x" in svg
    assert "test accuracy drop (fraction)" in open(os.path.join(out, "drops.svg")).read()
    assert not os.path.exists(os.path.join(out, "score_vs_drop.svg"))


def test_head_importance_cost_counts_and_warning(monkeypatch):
    # The estimate's counts are what head_importance then does: its solves and re-fits (each refit call counted;
    # the estimate's own one-step re-fit is the first), and a CostWarning with the numbers above the threshold.
    model, X, y = trained(steps=40)
    Xt, yt = data(P=40, seed=5)
    cost = amt.head_importance_cost(model, X, y, refit_steps=5, random_orders=2)
    assert cost["paths"] == 4 and cost["u_entries"] == 13 and cost["solves"] == {"select": 25, "full": 1, "heads": 4}
    assert cost["refits"] == 1 + 4 + 3 + 2 * 2
    assert cost["seconds_total"] == cost["seconds"] + cost["seconds_refit"]
    assert cost["seconds_refit"] == cost["refits"] * 5 * cost["seconds_per_refit_step"]
    calls = []
    orig = amt.refit

    def counting(*a, **kw):
        calls.append(kw.get("steps"))
        return orig(*a, **kw)
    monkeypatch.setattr(amt, "refit", counting)
    monkeypatch.setattr(amt, "COST_WARN_SECONDS", 0.0)
    with pytest.warns(amt.CostWarning, match=r"expected to take about .* \(ETA \d\d:\d\d\): the theory .*\(4 paths, "
                                             r"13 entries of U, 25 \+ 1 \+ 4 solves .* 12 re-fits"):
        imp = amt.head_importance(model, X, y, Xt, yt, refit_steps=5, random_orders=2)
    # the re-fits made: one per distinct set of silenced heads (none, each head, every prefix of each order); the
    # estimate counts prefixes as if no two orders shared one: an upper bound
    orders = [imp.ranking.tolist()] + imp.pruning["random_orders"].tolist()
    sets = {frozenset()} | {frozenset([k]) for k in range(4)} | {frozenset(o[:k]) for o in orders for k in range(5)}
    assert calls[0] == 1 and calls[1:] == [5] * len(sets) and len(sets) <= cost["refits"]
    assert imp.cost["refits"] == cost["refits"] and imp.cost["u_entries"] == 13


def test_head_importance_falls_back_and_says_so(monkeypatch, tmp_path):
    # No solve accepted at all (capped at 0 iterations, no looser tolerance): the call still returns, in the GP
    # limit, with converged False, notes and a warning; its document's status is "warning".
    import attnmech._importance as imp_mod
    model, X, y = trained(steps=40)
    Xt, yt = data(P=40, seed=5)
    monkeypatch.setattr(imp_mod, "MAX_ITER", 0)
    monkeypatch.setattr(imp_mod, "LOOSE_GRAD_TOL", 0.0)
    with pytest.warns(am_warning(), match="GP limit"):
        imp = amt.head_importance(model, X, y, Xt, yt, widths=10.0, temperature=0.1, refit_steps=0,
                                  random_orders=0)
    assert not imp.converged and any("GP limit" in n for n in imp.notes) and "converged=False" in repr(imp)
    np.testing.assert_array_equal(imp.predicted_drop, imp.theory["predicted_drop_gp"])
    import attnmech as am
    assert am.load(imp.save(tmp_path / "gp"))["status"] == "warning"


def am_warning():
    import attnmech as am
    return am.AttnmechWarning


_TORCH_BITS = r'''
import hashlib, sys, numpy as np, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import test_torch_module as t, attnmech.torch as amt
from attnmech._lib import core
torch.set_num_threads(int(sys.argv[2]))  # after the import: the test module sets 1
model = t.Stack(E=16, heads=(2, 2), seed=0).eval()  # E = 16, P = 300: OpenBLAS threads torch's products here
X, y = t.data(P=300, seed=1)
Xt, yt = t.data(P=100, seed=5)
att, _ = amt.attention(model, X, warn=False)  # the control: outside head_importance, the caller's threads
imp = amt.head_importance(model, X, y, Xt, yt, widths=10.0, temperature=0.1, refit_steps=3, random_orders=1)
d = imp.to_dict()
h = hashlib.sha256(repr([d[k] for k in sorted(d) if k not in ("seconds", "cost")]).encode())
for k in sorted(imp.theory):
    v = imp.theory[k]
    if isinstance(v, np.ndarray):
        h.update(np.ascontiguousarray(v).tobytes())
print(h.hexdigest(), hashlib.sha256(b"".join(a.tobytes() for a in att)).hexdigest(), torch.get_num_threads(),
      core.am_blas_threads_set(0))
'''


def test_head_importance_bits_do_not_depend_on_thread_counts():
    # head_importance runs BLAS and torch on one thread (deterministic=True): the same bits with
    # OPENBLAS_NUM_THREADS=1 and torch on 1 thread as with 2 and 2; both counts are the caller's again after. The
    # control: the same model's attention taken outside head_importance differs in its last bits between the two
    # (measured: and so did head_importance's whole result with deterministic=False, at 15 times the time on a
    # loaded 2-core machine).
    here = os.path.dirname(os.path.abspath(__file__))
    got = []
    for threads in (1, 2):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
        out = subprocess.run([sys.executable, "-c", _TORCH_BITS, here, str(threads)], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        assert int(out[2]) == threads and int(out[3]) in (0, threads)
        got.append(out)
    assert got[0][0] == got[1][0]
    if int(got[1][3]) == 2:
        assert got[0][1] != got[1][1]
