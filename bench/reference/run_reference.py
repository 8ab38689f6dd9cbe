#!/usr/bin/python3
"""Run the authors' reference theory code (tiberilor/attention-paths-interplay) on an `npy` task directory.

Usage:
    [PYTHONPATH=SHIM] /usr/bin/python3 run_reference.py --lib LIBDIR --dir PROBLEM --out OUT.json
(SHIM: stand-ins for the modules the reference library imports but the theory path never runs, when they are
not installed: bench/reference/compare.py --shim, docs/reference-check.md)

LIBDIR is the folder holding the reference library `LIB_convergent_summation_heads.py` (e.g.
.../hidden_markov_chain_classification/4paths/data/all_paths/without_samples of an exported work tree);
it is imported from there, never copied. PROBLEM is a directory in the format of docs/tasks.md (`npy` task):
X_train.npy [P, S, N0], y_train.npy, X_test.npy, y_test.npy, W_l<l>_h<h>.npy [N0, N0] (logit[s,t] =
x_s^T W x_t, first index = key side) and model.json.

What is run (as the authors' Markov training driver does it; docs/reference-check.md): float64 on CPU, the
library's model class with the user-defined bilinear heads, order parameters at the GP point (perturbation
0, seed 10, scale 1), Adam (lr 0.1 by default, default betas/eps) with the never-firing ReduceLROnPlateau
(factor 0.1, patience 100000, min_lr 1e-3) stepped on the max gradient; every iteration computes energy and
entropy, backpropagates them separately and sums the gradients, stops as soon as max|grad| < tol (the
parameters at which that gradient was measured are the result), else takes an Adam step; at most 50000
iterations. Then the library's predictor statistics on the test split (T not added to the test variance).

Writes JSON: U (list [U_1, U_2, ...] in packing order, h_1 most significant), U_a, S_code (energy +
entropy, i.e. (E + S_ent)/W_max), energy, entropy, iterations (Adam steps taken), gradient evaluations,
grad_max, test {mean, var, accuracy}, gp {test {accuracy}}, times in seconds: process (since this script's
first line; Python start-up and the torch import done by the shim's sitecustomize come before it), import
(numpy, torch, the library), read (the .npy files and model.json), setup (model, attentioned input of the
training set),
minimise, predict (test attentioned input + renormalised predictor), gp_predict (the same at the GP point).
"""
import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, help="folder of LIB_convergent_summation_heads.py")
    ap.add_argument("--dir", required=True, help="npy task directory")
    ap.add_argument("--out", required=True, help="output JSON")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--epochs", type=int, default=50000)
    ap.add_argument("--torch_threads", type=int, default=0, help="0 = torch's default")
    ap.add_argument("--quiet", action="store_true", help="silence the library's prints")
    args = ap.parse_args()

    t_import0 = time.perf_counter()
    import numpy as np
    import torch
    sys.path.insert(0, os.path.abspath(args.lib))
    import LIB_convergent_summation_heads as lib
    t_import = time.perf_counter() - t_import0

    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.set_default_dtype(torch.float64)
    device = "cpu"

    devnull = open(os.devnull, "w") if args.quiet else None
    real_stdout = sys.stdout

    def mute():
        if devnull is not None:
            sys.stdout = devnull

    def unmute():
        sys.stdout = real_stdout

    # ---- problem files (the same ones attnmech reads)
    t_setup0 = time.perf_counter()  # first: reading the files
    d = args.dir
    with open(os.path.join(d, "model.json")) as f:
        model_json = json.load(f)
    heads = [int(h) for h in model_json["heads"]]
    widths = [int(round(w)) for w in model_json["widths"]]
    variances = [float(v) for v in model_json["variances"]]
    temperature = float(model_json["temperature"])
    readout = {"last": "last_token", "first": "first_token", "mean": "average_pooling"}[model_json["readout"]]
    L = len(heads)

    def load_x(name):
        # [P, S, N0] -> the library's [P, N0, S]
        x = np.load(os.path.join(d, name)).astype(np.float64)
        return torch.from_numpy(np.ascontiguousarray(np.transpose(x, (0, 2, 1))))

    x_train = load_x("X_train.npy")
    y_train = torch.from_numpy(np.load(os.path.join(d, "y_train.npy")).astype(np.float64))
    x_test = load_x("X_test.npy")
    y_test = np.load(os.path.join(d, "y_test.npy")).astype(np.float64)
    # The library's bilinear heads: per layer a tensor [H_l, N0, N0] with
    # pre_attention[b,h,s,t] = sum_ij x[b,i,s] W[h,i,j] x[b,j,t], softmax over s (key) -- the file's convention.
    w_layers = []
    for l in range(1, L + 1):
        w_layers.append(torch.stack([torch.from_numpy(np.load(os.path.join(d, f"W_l{l}_h{h}.npy")).astype(np.float64))
                                     for h in range(1, heads[l - 1] + 1)], dim=0))
    N0 = x_train.size()[1]
    t_read = time.perf_counter() - t_setup0

    t_setup0 = time.perf_counter()
    c_setup0 = time.process_time()
    mute()
    model = lib.ConvergentSummationHeads(heads, widths, L, N0, variances, attention_nonlinearity="softmax",
                                         temperature=temperature, token_readout_style=readout)
    model.set_w(w_layers)
    model.set_order_parameters_gp_perturbed(perturbation_strength=0.0, seed=10, scale=1.0)
    model.load(x_train, {"dataset": "npy", "dir": os.path.abspath(d)})
    model.to_device(device)
    unmute()
    labels = y_train.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.1, patience=100000, min_lr=0.001)
    t_setup = time.perf_counter() - t_setup0
    c_setup = time.process_time() - c_setup0

    # ---- minimisation, as the training driver does it
    t_min0 = time.perf_counter()
    c_min0 = time.process_time()
    achieved = False
    steps = 0
    evaluations = 0
    max_grad = float("nan")
    energy_v = entropy_v = float("nan")
    for t in range(args.epochs):
        optimizer.zero_grad()
        energy, entropy = model.compute_loss_action(labels, return_energy_entropy=True)
        evaluations += 1
        energy.backward(retain_graph=True)
        energy_grads = [p.grad.clone() if p.grad is not None else torch.zeros(p.size()) for p in model.parameters()]
        optimizer.zero_grad()
        entropy.backward()
        entropy_grads = [p.grad.clone() if p.grad is not None else torch.zeros(p.size()) for p in model.parameters()]
        for p, ge, gs in zip(model.parameters(), energy_grads, entropy_grads):
            p.grad = ge + gs
        max_grad = float(np.max([torch.max(torch.abs(p.grad)).detach().cpu().numpy() for p in model.parameters()]))
        energy_v, entropy_v = energy.item(), entropy.item()
        if max_grad < args.tol:
            achieved = True
            break
        if t != args.epochs - 1:
            optimizer.step()
            steps += 1
        scheduler.step(max_grad)
    t_min = time.perf_counter() - t_min0
    c_min = time.process_time() - c_min0

    # ---- results at the parameters where the final gradient was measured
    with torch.no_grad():
        sym = model.compute_symmetrized_order_parameters()  # [U_L, ..., U_1]
        U = [u.detach().cpu().numpy() for u in reversed(sym)]  # [U_1, ..., U_L]
        U_a = float(model.current_scalar_order_parameter.reshape(-1)[0])

    # predictor statistics: each call recomputes the test attentioned input, as the plotting scripts do
    mute()
    t_pred0 = time.perf_counter()
    c_pred0 = time.process_time()
    with torch.no_grad():
        mean, var = model.compute_predictor_statistics(x_test, labels)
    t_pred = time.perf_counter() - t_pred0
    c_pred = time.process_time() - c_pred0
    t_gp0 = time.perf_counter()
    with torch.no_grad():
        gp_mean, gp_var = model.compute_predictor_statistics(x_test, labels, gp_limit=True)
    t_gp = time.perf_counter() - t_gp0
    unmute()
    mean = mean.detach().cpu().numpy()
    var = var.detach().cpu().numpy()
    gp_mean = gp_mean.detach().cpu().numpy()

    out = {
        "reference": "tiberilor/attention-paths-interplay LIB_convergent_summation_heads.ConvergentSummationHeads",
        "lib": os.path.abspath(args.lib),
        "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "settings": {"lr": args.lr, "tol": args.tol, "epochs": args.epochs, "heads": heads, "widths": widths,
                     "variances": variances, "temperature": temperature, "readout": readout},
        "converged": achieved,
        "iterations": steps,
        "gradient_evaluations": evaluations,
        "grad_max": max_grad,
        "S_code": energy_v + entropy_v,
        "energy": energy_v,
        "entropy": entropy_v,
        "U_a": U_a,
        "U": [u.tolist() for u in U],
        "test": {"mean": mean.tolist(), "var": var.tolist(),
                 "accuracy": float(np.mean(np.sign(mean) == np.sign(y_test)))},
        "gp": {"test": {"accuracy": float(np.mean(np.sign(gp_mean) == np.sign(y_test)))}},
        "times_s": {"import": t_import, "read": t_read, "setup": t_setup, "minimise": t_min, "predict": t_pred,
                    "gp_predict": t_gp},
        "cpu_times_s": {"setup": c_setup, "minimise": c_min, "predict": c_pred},
    }
    out["times_s"]["process"] = time.perf_counter() - T_START
    with open(args.out, "w") as f:
        json.dump(out, f)
    print(f"reference: {'converged' if achieved else 'NOT converged'} after {steps} Adam steps, max|grad| "
          f"{max_grad:.3e}, S_code {energy_v + entropy_v:.10f}, U_a {U_a:.6f}, test accuracy "
          f"{out['test']['accuracy']:.4f}; minimise {t_min:.2f} s, process {out['times_s']['process']:.2f} s")


if __name__ == "__main__":
    main()
