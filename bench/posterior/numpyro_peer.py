#!/usr/bin/env python3
"""attnmech's posterior sampler against NumPyro's NUTS on the same network posterior (issue 15).

Runs `attnmech run markov --estimator posterior` (it exports the model it samples with
`--set export_dir=...`), builds the same posterior in NumPyro from the exported .npy files, runs NUTS
(float64, CPU, diagonal mass matrix, max tree depth 10, target acceptance 0.8, init_to_uniform(2)) and
prints, per sampler: wall and CPU seconds, min/median bulk ESS over the U entries, bulk ESS of the log
posterior, ESS per CPU-second, max R-hat, tree depth, step size, gradient evaluations per effective
sample; then the agreement of the posterior means of U and of the test predictions (z-scores with
ESS-based Monte-Carlo standard errors, sd/sqrt(ESS_bulk), combined in quadrature).

The full comparison is not part of CI. NumPyro is a peer, never a dependency: run this with the Python of a venv of its own (any
directory outside the repository; here ~/numpyro-venv), with PYTHONPATH unset so that no stand-in jax or numpyro
package shadows the real ones (docs/posterior.md):
    python3 -m venv ~/numpyro-venv && ~/numpyro-venv/bin/pip install jax numpyro
    env -u PYTHONPATH ~/numpyro-venv/bin/python bench/posterior/numpyro_peer.py \
        --attnmech build/tools/attnmech --width 10 --out /tmp/peer10
N = 100 within a CPU budget:  ... --width 100 --budget 1200   (NumPyro samples in chunks until the budget
is spent; each sampler's ESS per CPU-second is computed from the draws it reached).

attnmech's results.json (schema 3: arrays of 16 elements or more are .npy references) is read with attnmech.load:
the venv's attnmech package if it has one, else this checkout's python/, over the libraries of the build tree the
--attnmech CLI belongs to (bench/attnmech_import.py). CI runs `--smoke` (tests/scripts): tiny sizes, both attnmech
samplers and their agreement report, NumPyro's half skipped with a message when numpyro is not importable.
"""
import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("JAX_ENABLE_X64", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from attnmech_import import attnmech_for  # noqa: E402


# --smoke: the markov task at tiny sizes (seconds for the two samplers)
SMOKE_SETS = ["P=30", "P_test=30", "seq_len=8", "feature_dim=20"]


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def find_posterior(doc):
    for run in doc.get("runs", []):
        if "posterior" in run:
            return run["posterior"]
    raise SystemExit("no posterior in the attnmech results")


# ---------------------------------------------------------------- diagnostics (Vehtari et al. 2021)
def _rank_normal(x):
    """x: chains x draws -> normal scores of the joint ranks (average ranks for ties)."""
    from scipy.stats import rankdata, norm
    r = rankdata(x.ravel(), method="average").reshape(x.shape)
    return norm.ppf((r - 0.375) / (x.size + 0.25))


def _split(x):
    n = x.shape[1] // 2
    return np.concatenate([x[:, :n], x[:, x.shape[1] - n:]], axis=0)


def ess_bulk(x):
    from numpyro.diagnostics import effective_sample_size
    return float(effective_sample_size(_rank_normal(_split(np.asarray(x)))))


def rhat(x):
    from numpyro.diagnostics import split_gelman_rubin
    x = np.asarray(x)
    z = _rank_normal(x)
    f = np.abs(x - np.median(x))
    zf = _rank_normal(f)
    return float(max(split_gelman_rubin(z), split_gelman_rubin(zf)))


# ---------------------------------------------------------------- attnmech
def run_attnmech(args, model, export_dir, out_dir):
    cmd = [args.attnmech, "run", "markov", "--estimator", "posterior", "--width", str(args.width),
           "--set", f"chains={args.chains}", "--set", f"warmup={args.warmup}", "--set", f"samples={args.samples}",
           "--set", f"seed={args.seed}", "--set", f"model={model}", "--out", out_dir]
    for kv in args.set:
        cmd += ["--set", kv]
    if export_dir:
        cmd += ["--set", f"export_dir={export_dir}"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    c0, t0 = cpu_children(), time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall, cpu = time.time() - t0, cpu_children() - c0
    if p.returncode not in (0,):
        sys.stderr.write(p.stdout[-3000:])
        raise SystemExit(f"attnmech exited {p.returncode}")
    # schema 3: arrays of 16 elements or more are .npy references; the project's loader resolves them
    post = find_posterior(attnmech_for(args.attnmech).load(out_dir))
    d = post["diagnostics"]
    H = len(post["U"])
    ess_u = np.array(d["U"]["ess_bulk"], dtype=float)
    iu = np.triu_indices(H)
    depth, grads, steps = [], 0, []
    for c in d["chains"]:
        h = np.array(c["tree_depth_histogram"], dtype=float)
        depth.append((h * np.arange(len(h))).sum() / max(h.sum(), 1))
        grads += c["gradient_evaluations"]
        steps.append(c["step_size"])
    test_idx = d.get("test", {}).get("indices", [])
    return {
        "name": f"attnmech ({model})", "wall": wall, "cpu": cpu,
        "U": np.array(post["U"]), "U_se": np.array(post["U_stderr"]),
        "ess_U_min": float(ess_u[iu].min()), "ess_U_med": float(np.median(ess_u[iu])),
        "ess_logp": float(d["log_posterior"]["ess_bulk"]), "rhat_max": float(d["max_rhat"]),
        "logp_mean": float(d["log_posterior"]["mean"]), "logp_se": float(d["log_posterior"]["mcse"]),
        "depth": float(np.mean(depth)), "step": float(np.mean(steps)), "grads": grads,
        "draws": int(post["draws"]),
        "test_mean": np.array(post["test"]["mean"]), "test_var": np.array(post["test"]["var"]),
        "test_idx": [int(i) for i in test_idx],
        "test_ess": np.array(d.get("test", {}).get("ess_bulk", []), dtype=float),
    }


# ---------------------------------------------------------------- NumPyro
def run_numpyro(args, export_dir):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS, init_to_uniform

    jax.config.update("jax_enable_x64", True)
    spec = json.load(open(os.path.join(export_dir, "model.json")))
    xi = jnp.asarray(np.load(os.path.join(export_dir, "xi_train.npy")))  # (H, N0, P)
    y = jnp.asarray(np.load(os.path.join(export_dir, "y_train.npy")))
    xi_t = np.load(os.path.join(export_dir, "xi_test.npy"))
    L, heads, W, s, T, N0 = (spec["layers"], spec["heads"], spec["widths"], spec["variances"],
                             spec["temperature"], spec["N0"])
    fscale = 1.0 / np.sqrt(s[0] * W[0])

    def effective_weights(V0, Vs, a):
        w = a[:, None]  # W_L x 1
        for l in range(L, 0, -1):  # w^(l)[:, h block] = V_hᵀ w^(l+1) / sqrt(W_l), h most significant
            w = jnp.concatenate([Vs[l][h].T @ w for h in range(heads[l - 1])], axis=1) / np.sqrt(W[l])
        return w  # W0 x H

    def forward(V0, Vs, a, xi_):
        w = effective_weights(V0, Vs, a)
        Z = V0.T @ w  # N0 x H
        return jnp.einsum("pnm,np->m", xi_, Z) * fscale

    def model():
        V0 = numpyro.sample("V0", dist.Normal(0.0, np.sqrt(s[0])).expand([W[0], N0]).to_event(2))
        Vs = {}
        for l in range(1, L + 1):
            Vs[l] = [numpyro.sample(f"V{l}_{h}", dist.Normal(0.0, np.sqrt(s[l])).expand([W[l], W[l - 1]])
                                    .to_event(2)) for h in range(heads[l - 1])]
        a = numpyro.sample("a", dist.Normal(0.0, np.sqrt(s[L + 1])).expand([W[L]]).to_event(1))
        f = forward(V0, Vs, a, xi)
        numpyro.sample("y", dist.Normal(f, np.sqrt(T)), obs=y)

    kernel = NUTS(model, max_tree_depth=10, target_accept_prob=0.8, init_strategy=init_to_uniform(radius=2),
                  dense_mass=False)
    c0, t0 = cpu_self(), time.time()
    chunk = args.samples if not args.budget else min(args.samples, args.chunk)
    mcmc = MCMC(kernel, num_warmup=args.warmup, num_samples=chunk, num_chains=args.chains,
                chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(args.seed), extra_fields=("num_steps", "potential_energy", "adapt_state.step_size"))
    samples = [mcmc.get_samples(group_by_chain=True)]
    extras = [mcmc.get_extra_fields(group_by_chain=True)]
    done = chunk
    while args.budget and done < args.samples and cpu_self() - c0 < args.budget:
        mcmc.post_warmup_state = mcmc.last_state
        mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps", "potential_energy",
                                                               "adapt_state.step_size"))
        samples.append(mcmc.get_samples(group_by_chain=True))
        extras.append(mcmc.get_extra_fields(group_by_chain=True))
        done += chunk
    wall, cpu = time.time() - t0, cpu_self() - c0
    cat = lambda key, src: np.concatenate([np.asarray(x[key]) for x in src], axis=1)  # noqa: E731
    draws = {k: cat(k, samples) for k in samples[0]}
    C, S = draws["a"].shape[:2]
    H = int(np.prod(heads))
    Uc = np.zeros((C, S, H, H))
    ft = np.zeros((C, S, xi_t.shape[2]))
    fw = jax.jit(lambda V0, Vs, a: (effective_weights(V0, Vs, a), forward(V0, Vs, a, jnp.asarray(xi_t))))
    for c in range(C):
        for k in range(S):
            Vs = {l: [draws[f"V{l}_{h}"][c, k] for h in range(heads[l - 1])] for l in range(1, L + 1)}
            w, f = fw(draws["V0"][c, k], Vs, draws["a"][c, k])
            w = np.asarray(w)
            Uc[c, k] = w.T @ w / W[0]
            ft[c, k] = np.asarray(f)
    # NumPyro's potential energy includes the normalising constants of the likelihood and the priors; attnmech's
    # log posterior drops them: add them back so the two means are comparable
    dims = [W[0] * N0] + [heads[l - 1] * W[l] * W[l - 1] for l in range(1, L + 1)] + [W[L]]
    const = 0.5 * len(y) * np.log(2 * np.pi * T) + sum(0.5 * n * np.log(2 * np.pi * v) for n, v in zip(dims, s))
    logp = -cat("potential_energy", extras) + const
    nsteps = cat("num_steps", extras)
    step = cat("adapt_state.step_size", extras)
    iu = np.triu_indices(H)
    ess_u = np.array([[ess_bulk(Uc[:, :, i, j]) for j in range(H)] for i in range(H)])
    sd_u = Uc.reshape(C * S, H, H).std(axis=0, ddof=1)
    r = [rhat(Uc[:, :, i, j]) for i, j in zip(*iu)] + [rhat(logp)]
    return {
        "name": "NumPyro NUTS", "wall": wall, "cpu": cpu,
        "U": Uc.mean(axis=(0, 1)), "U_se": sd_u / np.sqrt(ess_u),
        "ess_U_min": float(ess_u[iu].min()), "ess_U_med": float(np.median(ess_u[iu])),
        "ess_logp": ess_bulk(logp), "rhat_max": float(max(r)),
        "logp_mean": float(logp.mean()), "logp_se": float(logp.std(ddof=1) / np.sqrt(ess_bulk(logp))),
        "depth": float(np.mean(np.log2(nsteps + 1))), "step": float(np.mean(step)), "grads": int(nsteps.sum()),
        "draws": C * S, "test_draws": ft,
    }


def report(results, attn, npy):
    print(f"{'sampler':<22}{'wall s':>9}{'CPU s':>9}{'draws':>7}{'ESS U min':>11}{'ESS U med':>11}{'ESS logp':>10}"
          f"{'maxRhat':>9}{'depth':>7}{'step':>9}{'grad/ESS':>10}{'ESS/CPUs':>10}")
    for r in results:
        ess = min(r["ess_U_min"], r["ess_logp"])
        print(f"{r['name']:<22}{r['wall']:9.1f}{r['cpu']:9.1f}{r['draws']:7d}{r['ess_U_min']:11.0f}"
              f"{r['ess_U_med']:11.0f}{r['ess_logp']:10.0f}{r['rhat_max']:9.3f}{r['depth']:7.2f}{r['step']:9.4f}"
              f"{r['grads'] / ess:10.1f}{ess / r['cpu']:10.2f}")
    print("ESS/CPUs = min(min bulk ESS over U, bulk ESS of the log posterior) per CPU-second (process CPU time,")
    print("JIT compilation included for NumPyro; the attnmech figure includes data generation and the theory fit).")
    if npy is not None:
        base = min(npy["ess_U_min"], npy["ess_logp"]) / npy["cpu"]
        for r in results:
            if r is not npy:
                print(f"{r['name']} / NumPyro ESS per CPU-second: "
                      f"{min(r['ess_U_min'], r['ess_logp']) / r['cpu'] / base:.1f}x")
    # agreement of the posterior means
    others = [r for r in results if r is not attn]
    for o in others:
        z = (attn["U"] - o["U"]) / np.sqrt(attn["U_se"] ** 2 + o["U_se"] ** 2)
        H = z.shape[0]
        iu = np.triu_indices(H)
        print(f"U: {attn['name']} vs {o['name']}: max |z| = {np.abs(z[iu]).max():.2f} over {len(iu[0])} entries "
              f"(z = difference / sqrt(se1^2 + se2^2), se = sd/sqrt(ESS_bulk))")
        for i, j in zip(*iu):
            print(f"   U[{i},{j}] {attn['U'][i, j]:9.4f} +- {attn['U_se'][i, j]:.4f}   {o['U'][i, j]:9.4f} +- "
                  f"{o['U_se'][i, j]:.4f}   z = {z[i, j]:+.2f}")
        lz = (attn["logp_mean"] - o["logp_mean"]) / np.hypot(attn["logp_se"], o["logp_se"])
        print(f"   log posterior mean {attn['logp_mean']:.2f} +- {attn['logp_se']:.2f} vs {o['logp_mean']:.2f} +- "
              f"{o['logp_se']:.2f}   z = {lz:+.2f}")
        if "test_draws" in o:
            ft = o["test_draws"]
            m = ft.mean(axis=(0, 1))
            se_o = np.array([ft[:, :, i].std(ddof=1) / np.sqrt(ess_bulk(ft[:, :, i])) for i in attn["test_idx"]])
            zs = []
            for k, i in enumerate(attn["test_idx"]):
                se_a = np.sqrt(attn["test_var"][i] / attn["test_ess"][k])
                zs.append((attn["test_mean"][i] - m[i]) / np.hypot(se_a, se_o[k]))
            print(f"   test predictions at the {len(zs)} tracked inputs: z = " + ", ".join(f"{v:+.2f}" for v in zs))
            acc_o = np.mean(np.sign(m) == np.sign(np.load(os.path.join(args.out, "export", "y_test.npy"))))
            print(f"   test accuracy of the posterior mean: {np.mean(np.sign(attn['test_mean']) == np.sign(np.load(os.path.join(args.out, 'export', 'y_test.npy')))):.3f} vs {acc_o:.3f}")
        elif "test_mean" in o:
            zs = []
            for k, i in enumerate(attn["test_idx"]):
                se_a = np.sqrt(attn["test_var"][i] / attn["test_ess"][k])
                se_o = np.sqrt(o["test_var"][i] / o["test_ess"][k])
                zs.append((attn["test_mean"][i] - o["test_mean"][i]) / np.hypot(se_a, se_o))
            print(f"   test predictions at the {len(zs)} tracked inputs: z = " + ", ".join(f"{v:+.2f}" for v in zs))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnmech", default="build/tools/attnmech")
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=0, help="NumPyro CPU-second budget (0: run all samples)")
    ap.add_argument("--chunk", type=int, default=25, help="NumPyro draws per chain between budget checks")
    ap.add_argument("--full", action="store_true", help="also run attnmech's full sampler (model=full)")
    ap.add_argument("--no-numpyro", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting passed on to `attnmech run markov` (task or estimator)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, seconds (tests/scripts): P = P_test = 30, 2 chains x (40 + 40), --full; "
                         "NumPyro's half only when numpyro is importable")
    ap.add_argument("--out", default="/tmp/attnmech-numpyro-peer")
    args = ap.parse_args()
    if args.smoke:
        args.chains, args.warmup, args.samples, args.full = 2, 40, 40, True
        args.set = SMOKE_SETS + args.set
        if not args.no_numpyro and importlib.util.find_spec("numpyro") is None:
            print("numpyro_peer: numpyro is not importable: NumPyro's half skipped (--smoke)")
            args.no_numpyro = True
    if not args.no_numpyro and importlib.util.find_spec("numpyro") is None:
        raise SystemExit("numpyro_peer: numpyro is not importable: run this with the venv of the header, or pass "
                         "--no-numpyro for attnmech's half only")
    os.makedirs(args.out, exist_ok=True)
    export = os.path.join(args.out, "export")
    res = [run_attnmech(args, "marginal", export, os.path.join(args.out, "marginal"))]
    if args.full:
        res.append(run_attnmech(args, "full", None, os.path.join(args.out, "full")))
    npy = None
    if not args.no_numpyro:
        npy = run_numpyro(args, export)
        res.append(npy)
    report(res, res[0], npy)
