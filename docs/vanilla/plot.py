#!/usr/bin/env python3
"""Training curves of docs/vanilla/runs.json as one small SVG (no dependencies).

usage: plot.py OUT.svg TITLE RUN[=LABEL] ...   (RUN = a run name in runs.json)
Solid: test loss (curve test sequences), dashed: training loss (curve training sequences); grey line: ε* of
the curve's test sequences. The y range is zoomed onto [ε* − 0.02, ε* + 0.14]."""
import json, os, sys

runs = {r['name']: r for r in json.load(open(os.path.join(os.path.dirname(__file__), 'runs.json')))}
out, title, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
W, H, x0, x1, y0, y1 = 760, 420, 70, 560, 40, 370
colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf']
sel = []
for s in specs:
    name, _, label = s.partition('=')
    sel.append((runs[name], label or name))
eps = sel[0][0]['curves']['epsilon_star']
lo, hi = eps - 0.02, eps + 0.14
xmax = max(r['curves']['epoch'][-1] for r, _ in sel)
X = lambda e: x0 + (x1 - x0) * e / xmax
Y = lambda v: y1 - (y1 - y0) * (min(max(v, lo), hi) - lo) / (hi - lo)
o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
     'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
     f'<rect width="{W}" height="{H}" fill="white"/>',
     f'<text x="{(x0 + x1) / 2}" y="22" font-size="14" text-anchor="middle">{title}</text>',
     f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#333"/>']
t = lo
while t <= hi + 1e-9:
    o.append(f'<line x1="{x0}" x2="{x1}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="#eee"/>'
             f'<text x="{x0 - 5}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
    t += 0.02
step = 50 if xmax > 200 else (20 if xmax > 80 else 10)
for e in range(0, int(xmax) + 1, step):
    o.append(f'<text x="{X(e):.1f}" y="{y1 + 16}" text-anchor="middle">{e}</text>')
o.append(f'<text x="{(x0 + x1) / 2}" y="{y1 + 34}" text-anchor="middle">epoch</text>')
o.append(f'<text x="18" y="{(y0 + y1) / 2}" text-anchor="middle" transform="rotate(-90 18 {(y0 + y1) / 2})">'
         'loss (nats per site)</text>')
o.append(f'<line x1="{x0}" x2="{x1}" y1="{Y(eps):.1f}" y2="{Y(eps):.1f}" stroke="#777" stroke-width="1.5"/>'
         f'<text x="{x1 - 4}" y="{Y(eps) - 4:.1f}" text-anchor="end" fill="#555">ε* (test)</text>')
for k, (r, label) in enumerate(sel):
    c = colors[k % len(colors)]
    cv = r['curves']
    for key, dash in (('test_loss', ''), ('train_loss', ' stroke-dasharray="5,3"')):
        pts = ' '.join(f'{X(e):.1f},{Y(v):.1f}' for e, v in zip(cv['epoch'], cv[key]))
        o.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.6"{dash}/>')
    ly = y0 + 14 + 16 * k
    o.append(f'<line x1="{x1 + 10}" x2="{x1 + 30}" y1="{ly - 4}" y2="{ly - 4}" stroke="{c}" stroke-width="2"/>'
             f'<text x="{x1 + 34}" y="{ly}">{label}</text>')
ly = y0 + 14 + 16 * len(sel) + 10
o.append(f'<text x="{x1 + 10}" y="{ly}" fill="#555">solid: test, dashed: train</text>')
o.append(f'<text x="{x1 + 10}" y="{ly + 14}" fill="#555">final test excess:</text>')
for k, (r, label) in enumerate(sel):
    o.append(f'<text x="{x1 + 10}" y="{ly + 28 + 14 * k}" fill="{colors[k % len(colors)]}">'
             f'{label.split(",")[0]}: {r["excess"]:.4f}</text>')
o.append('</svg>')
open(out, 'w').write('\n'.join(o) + '\n')
