#!/usr/bin/env python3
"""Collect the finished runs: docs/vanilla/runs.json (finals + curves) and a markdown table on stdout."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
R = os.environ.get('VANILLA_RUNS', os.path.join(os.path.dirname(SRC), 'vanilla-runs'))
out = []
for name in sorted(os.listdir(os.path.join(R, 'meta'))):
    m = os.path.join(R, 'meta', name)
    res = os.path.join(R, name, 'results.json')
    if 'rc=' not in open(os.path.join(m, 'log')).read() or not os.path.exists(res):
        continue
    u, s, w = map(float, open(os.path.join(m, 'time')).read().split())
    args = open(os.path.join(m, 'args')).read().split()
    J = json.load(open(res))
    r = J['runs'][0]
    o = r.get('optimizer', {})
    c = r['curves']
    ce = [t - c['epsilon_star'] for t in c['test_loss']]
    kv = dict(a.split('=', 1) for a in args if '=' in a)
    extra = []
    if o.get('name', 'adam') != 'adam':
        extra.append(o['name'] + (f" momentum {o['momentum']:g}" if o.get('momentum') else ''))
    if float(kv.get('dropout', 0)) > 0:
        extra.append(f"dropout {float(kv['dropout']):g}")
    if int(kv.get('train_seed', 0)) > 0:
        extra.append(f"train_seed {kv['train_seed']}")
    # distance of the averaged attention maps to J (relative to mean J²): first layer, last layer (layers > 1)
    J, L = r['J'], r['L']
    def rel(A):
        e = sum((A[i][j] - J[i][j] / r['r']) ** 2 for i in range(L) for j in range(L) if i != j) / (L * (L - 1))
        return e / r['mean_J2']
    recon = [rel(r['A'])] + ([rel(r['A_last_layer'])] if r['layers'] > 1 else [])
    kbest = min(range(len(ce)), key=lambda k: ce[k])
    out.append(dict(name=name, args=' '.join(args), M=r['M'], layers=r['layers'], d=r['d'], norm=r.get('norm', 'post'),
                    lr=o.get('lr'), epochs=o.get('epochs'), warmup=o.get('warmup_epochs', 0), l2=float(kv.get('l2', 0)),
                    batch=o.get('batch'), extra=', '.join(extra), optimizer=o.get('name', 'adam'),
                    dropout=float(kv.get('dropout', 0)), train_seed=int(kv.get('train_seed', 0)), recon_rel=recon,
                    n_params=r['n_params'], cpu_s=round(u + s, 1), wall_s=w,
                    train_loss=r['train_loss'], test_loss=r['test_loss'], epsilon_star=r['epsilon_star'],
                    epsilon_star_train=r['epsilon_star_train'], excess=r['excess'],
                    train_excess=r['train_loss'] - r['epsilon_star_train'],
                    best_curve_excess=ce[kbest], best_curve_epoch=c['epoch'][kbest],
                    curves=dict(epoch=c['epoch'], train_loss=c['train_loss'], test_loss=c['test_loss'],
                                epsilon_star=c['epsilon_star'])))
out.sort(key=lambda x: (x['M'], x['optimizer'] != 'adam', x['dropout'], x['d'], x['epochs'], x['warmup'], x['l2'],
                        x['norm'] != 'post', x['lr'], x['train_seed'], x['layers']))
json.dump(out, open(os.path.join(HERE, 'runs.json'), 'w'), indent=0)
# factored-attention fits beside them ($FACTORED_RUNS/f_M: `attnmech run potts --estimator pseudolikelihood` with
# the same task settings, see docs/vanilla.md): docs/vanilla/factored.json
FR = os.environ.get('FACTORED_RUNS', os.path.join(os.path.dirname(SRC), 'factored-runs'))
if os.path.isdir(FR):
    fac = []
    for name in sorted(os.listdir(FR)):
        res = os.path.join(FR, name, 'results.json')
        if name.startswith('f_') and os.path.exists(res):
            r = json.load(open(res))['runs'][0]
            fac.append(dict(M=r['M'], excess=r['excess'], train_excess=r['train_loss'] - r['epsilon_star_train'],
                            recon_error_rel=r['recon_error_rel'], fit_time_s=r['fit_time_s']))
    fac.sort(key=lambda x: x['M'])
    json.dump(fac, open(os.path.join(HERE, 'factored.json'), 'w'), indent=0)
rows = []
P = rows.append
P('| run | M | layers | norm | d | lr | epochs | warm-up | l2 | other | params | CPU s | train loss | train − ε*_train | test loss | excess | best curve excess (epoch) | A↔J rel. error, first / last layer |')
P('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for x in out:
    P(f"| {x['name']} | {x['M']} | {x['layers']} | {x['norm']} | {x['d']} | {x['lr']:g} | {x['epochs']} | {x['warmup']:g} | {x['l2']:g} | {x['extra']} | "
          f"{x['n_params']} | {x['cpu_s']:.0f} | {x['train_loss']:.4f} | {x['train_excess']:+.4f} | {x['test_loss']:.4f} | "
          f"**{x['excess']:.4f}** | {x['best_curve_excess']:.4f} ({x['best_curve_epoch']}) | "
          f"{' / '.join(f'{v:.2f}' for v in x['recon_rel'])} |")

table = '\n'.join(rows)
print(table)
doc = os.path.join(SRC, 'docs', 'vanilla.md')
if os.path.exists(doc):
    t = open(doc).read()
    a, b = '<!-- table -->', '<!-- /table -->'
    if a in t and b in t:
        t = t[:t.index(a) + len(a)] + '\n' + table + '\n' + t[t.index(b):]
        open(doc, 'w').write(t)
