#!/usr/bin/env python3
"""Test excess over ε* against the number of training sequences M, log-log, as one small SVG (no dependencies).

usage: plot_vs_m.py OUT.svg TITLE LABEL=RUN,RUN,... [LABEL=RUN,...] [--factored]
A series is a list of run names of docs/vanilla/runs.json (one point per run, at its M; a run given as
RUN+RUN+... is the mean of those runs, drawn with its standard error). --factored adds the factored-attention
fits of docs/vanilla/factored.json (summarise.py writes it from $FACTORED_RUNS)."""
import json, math, os, sys

here = os.path.dirname(os.path.abspath(__file__))
runs = {r['name']: r for r in json.load(open(os.path.join(here, 'runs.json')))}
out, title, args = sys.argv[1], sys.argv[2], sys.argv[3:]
series = []
for a in args:
    if a == '--factored':
        f = json.load(open(os.path.join(here, 'factored.json')))
        series.append(('factored attention (L-BFGS)', [(x['M'], x['excess'], 0.0) for x in f]))
        continue
    label, _, names = a.partition('=')
    pts = []
    for group in names.split(','):
        rs = [runs[n] for n in group.split('+')]
        ex = [r['excess'] for r in rs]
        m = sum(ex) / len(ex)
        se = (math.sqrt(sum((e - m) ** 2 for e in ex) / (len(ex) - 1) / len(ex)) if len(ex) > 1 else 0.0)
        pts.append((rs[0]['M'], m, se))
    series.append((label, pts))
W, H, x0, x1, y0, y1 = 760, 420, 70, 520, 40, 370
colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b']
allm = [p[0] for _, s in series for p in s]
alle = [p[1] for _, s in series for p in s if p[1] > 0]
lx0, lx1 = math.log10(min(allm)) - 0.1, math.log10(max(allm)) + 0.1
ly0, ly1 = math.floor(math.log10(min(alle)) * 2) / 2, math.ceil(math.log10(max(alle)) * 2) / 2
X = lambda m: x0 + (x1 - x0) * (math.log10(m) - lx0) / (lx1 - lx0)
Y = lambda v: y1 - (y1 - y0) * (math.log10(max(v, 10 ** ly0)) - ly0) / (ly1 - ly0)
o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
     'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
     f'<rect width="{W}" height="{H}" fill="white"/>',
     f'<text x="{(x0 + x1) / 2}" y="22" font-size="14" text-anchor="middle">{title}</text>',
     f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#333"/>']
for k in range(int(math.floor(ly0)), int(math.ceil(ly1)) + 1):
    for mult in (1, 2, 5):
        v = mult * 10 ** k
        if not (10 ** ly0 <= v <= 10 ** ly1):
            continue
        o.append(f'<line x1="{x0}" x2="{x1}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#eee"/>'
                 f'<text x="{x0 - 5}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
for k in range(2, 7):
    for mult in (1, 3):
        m = mult * 10 ** k
        if 10 ** lx0 <= m <= 10 ** lx1:
            o.append(f'<line x1="{X(m):.1f}" x2="{X(m):.1f}" y1="{y0}" y2="{y1}" stroke="#eee"/>'
                     f'<text x="{X(m):.1f}" y="{y1 + 16}" text-anchor="middle">{m:g}</text>')
o.append(f'<text x="{(x0 + x1) / 2}" y="{y1 + 34}" text-anchor="middle">training sequences M</text>')
o.append(f'<text x="18" y="{(y0 + y1) / 2}" text-anchor="middle" transform="rotate(-90 18 {(y0 + y1) / 2})">'
         'test loss − ε* (nats per site)</text>')
for k, (label, pts) in enumerate(series):
    c = colors[k % len(colors)]
    pts = sorted(pts)
    o.append(f'<polyline points="{" ".join(f"{X(m):.1f},{Y(e):.1f}" for m, e, _ in pts)}" fill="none" '
             f'stroke="{c}" stroke-width="1.6"/>')
    for m, e, se in pts:
        o.append(f'<circle cx="{X(m):.1f}" cy="{Y(e):.1f}" r="3.5" fill="{c}"/>')
        if se > 0:
            o.append(f'<line x1="{X(m):.1f}" x2="{X(m):.1f}" y1="{Y(e - se):.1f}" y2="{Y(e + se):.1f}" '
                     f'stroke="{c}" stroke-width="1.5"/>')
    ly = y0 + 14 + 16 * k
    o.append(f'<line x1="{x1 + 10}" x2="{x1 + 30}" y1="{ly - 4}" y2="{ly - 4}" stroke="{c}" stroke-width="2"/>'
             f'<text x="{x1 + 34}" y="{ly}">{label}</text>')
o.append('</svg>')
open(out, 'w').write('\n'.join(o) + '\n')
