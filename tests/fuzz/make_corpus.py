#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<harness>/ (run once; the outputs are committed, < 200 KB in
all). Seeds are small valid files of each format, a few broken ones from tests/data/, and a handful of
hand-made edge cases (huge claimed sizes, deep nesting), so the fuzzer starts next to every branch."""
import gzip
import os
import shutil
import struct
import zlib

here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, '..', 'data')
corpus = os.path.join(here, 'corpus')


def put(harness, name, content):
    d = os.path.join(corpus, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(content)


def read(*parts):
    with open(os.path.join(data, *parts), 'rb') as f:
        return f.read()


# ---------------------------------------------------------------- .npy
def npy(descr, shape, payload, fortran=False, major=1, shape_text=None):
    shape_s = shape_text or '(' + ', '.join(str(s) for s in shape) + (',)' if len(shape) == 1 else ')')
    d = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_s}, }}".encode()
    pre = 10 if major == 1 else 12
    total = pre + len(d) + 1
    pad = (total + 63) // 64 * 64 - total
    hlen = len(d) + pad + 1
    head = b'\x93NUMPY' + bytes([major, 0]) + (struct.pack('<H', hlen) if major == 1 else struct.pack('<I', hlen))
    return head + d + b' ' * pad + b'\n' + payload


def f8(values):
    return b''.join(struct.pack('<d', v) for v in values)


if os.path.isdir(corpus):
    shutil.rmtree(corpus)

for f in sorted(os.listdir(os.path.join(data, 'infra'))):
    if f.endswith('.npy'):
        put('npy', f, read('infra', f))
put('npy', 'f8_huge_claim.npy', npy('<f8', (1 << 40, 1 << 20), f8([1.0])))
put('npy', 'f4_1x1x1x1.npy', npy('<f4', (1, 1, 1, 1), struct.pack('<f', 2.5)))
put('npy', 'nested_shape.npy', npy('<f8', (), f8([1, 2]), shape_text='((((2,),),),)'))
put('npy', 'deep_tuples.npy', npy('<f8', (), b'', shape_text='(' * 3900))  # overflowed the stack before the fix
put('npy', 'v2_f8_3.npy', npy('<f8', (3,), f8([1, 2, 3]), major=2))

# ---------------------------------------------------------------- results.json
report = b'''{
 "attnmech_version": "0.2.0",
 "schema_version": 2,
 "task": "markov",
 "estimator": "theory",
 "seed": 1,
 "params": {"N": [10, 100], "T": 0.5},
 "runs": [
  {"N": 10, "width": 10, "status": "ok", "test": {"accuracy": 0.9, "mean": [0.5, -0.25, 1e-3]},
   "U": [[[1, 0.5], [0.5, 2]]], "labels": ["h1", "h2"]},
  {"N": 100, "width": 100, "status": "warning", "test": {"accuracy": 0.95, "mean": [0.1, null, 3]},
   "U": [[[2, 0.1], [0.1, 1]]], "labels": ["h1", "h2"]}
 ],
 "status": "ok",
 "report": {
  "plots": [
   {"file": "acc", "kind": "lines", "title": "accuracy", "x_label": "N", "y_label": "acc", "x_log": true,
    "series": [{"label": "test", "x": "runs.*.N", "y": "runs.*.test.accuracy", "style": "line+points"},
               {"label": "ref", "y": "=0.8", "style": "hline"}]},
   {"file": "U", "kind": "heatmap", "title": "U", "panels": [{"title": "N=10", "matrix": "runs.0.U.0"},
    {"title": "N=100", "matrix": "runs.1.U.0"}], "row_labels": "runs.0.labels", "col_labels": "runs.0.labels",
    "scale": "diverging", "annotate": true},
   {"file": "bars", "kind": "bars", "categories": "runs.*.N", "series": [{"label": "m", "y": "runs.*.test.mean.0",
    "yerr": "runs.*.test.mean.2"}]},
   {"file": "sc", "kind": "scatter", "diagonal": true, "series": [{"label": "s", "x": "runs.0.test.mean.0:2",
    "y": "runs.1.test.mean.0:2", "style": "points"}]}
  ],
  "summary": [
   {"kind": "table", "title": "runs", "columns": [{"header": "N", "path": "runs.*.N", "format": "%d"},
    {"header": "acc", "path": "runs.*.test.accuracy", "format": "%.4f"}, {"header": "st", "path": "runs.*.status"}]},
   {"kind": "values", "title": "v", "items": [{"label": "T", "path": "params.T", "format": "%8.3g"}]},
   {"kind": "matrix", "title": "U", "path": "runs.0.U.0", "row_labels": "runs.0.labels",
    "col_labels": "runs.0.labels", "format": "%+.2e"},
   {"kind": "text", "text": "done"}
  ]
 }
}
'''
put('results_json', 'report.json', report)
# A one-column page (report.style) with long series names: the legend goes under the plot; generic labels token by
# token (epsilon_star_train) and a labels table.
put('results_json', 'style.json', b'''{"task": "t", "status": "ok", "runs": [{"curves": {"epoch": [0, 1, 2],
 "train_loss": [3, 2, 1], "test_loss": [3, 2.5, 2]}, "epsilon_star_train": 0.5, "epsilon_star": 0.7}],
 "report": {"style": {"width": 246, "height": 185, "font_size": 8, "line_scale": 0.75, "marker_scale": 0.75},
  "labels": {"test_loss": "test loss of a long-named model that needs its own line"},
  "plots": [{"file": "c", "kind": "lines", "title": "curves", "x_label": "epoch", "y_label": "loss", "series": [
   {"label": "train_loss", "x": "runs.0.curves.epoch", "y": "runs.0.curves.train_loss", "style": "line"},
   {"label": "test_loss", "x": "runs.0.curves.epoch", "y": "runs.0.curves.test_loss", "style": "line"},
   {"label": "epsilon_star_train", "y": "runs.0.epsilon_star_train", "style": "hline"},
   {"label": "epsilon_star", "y": "runs.0.epsilon_star", "style": "hline"}]},
  {"file": "b", "kind": "bars", "series": [{"label": "a rather long bar group name", "y": "runs.0.curves.test_loss"},
   {"label": "beta_heads", "y": "runs.0.curves.train_loss"}]}]}}
''')
put('results_json', 'minimal.json', b'{"task": "t", "runs": [], "status": "ok"}\n')
put('results_json', 'arrays.json', b'{"a": [[1, 2, 3], [4, 5, 6]], "b": [[[1], [2]], [[3], [4]]], '
    b'"c": [[1, 2], [3]], "d": [true, false, null], "e": [1e308, -1e-308, 0.5], "f": {}}\n')
put('results_json', 'duplicate.json', b'{"a": 1, "a": 2}\n')
put('results_json', 'deep.json', b'{"a": ' + b'[' * 64 + b'1' + b']' * 64 + b'}\n')
put('results_json', 'too_deep.json', b'{"a": ' * 200 + b'1' + b'}' * 200 + b'\n')
put('results_json', 'too_deep_lists.json', b'{"a": ' + b'[' * 8000 + b'1' + b']' * 8000 + b'}')  # < max_len 16384
put('results_json', 'schema1_head.json', read('report', 'schema1', 'results.json')[:3000])
# .npy references (the harness's directory holds a.npy f8 [2, 3], i.npy i4 [3], a broken bad.npy and link.npy, a
# symlink out of it) and a report with npy_only, files, row selection and a heat map overlay
put('results_json', 'npy_refs.json', b'{"runs": [{"params": {"J": {"npy_file": "a.npy", "shape": [2, 3], "dtype": "<f8"}, '
    b'"n": [{"npy_file": "i.npy", "shape": [3], "dtype": "<i4"}]}}], "report": {"npy_only": ["runs.*.params"], '
    b'"plots": [{"file": "m", "kind": "heatmap", "panels": [{"matrix": "runs.0.params.J"}], "triangle": "upper", '
    b'"overlay": {"x": "runs.0.params.n.0", "y": "runs.0.params.n.0", "label": "o", "limit": 2, '
    b'"where": {"path": "runs.0.params.n.0", "min": 0}}}], "files": [{"file": "c.txt", "columns": '
    b'[{"path": "runs.0.params.n.0", "format": "%c"}, {"path": "=0", "format": "%d"}], "sort_by": ["runs.0.params.n.0"]}], '
    b'"summary": [{"kind": "table", "columns": [{"header": "n", "path": "runs.0.params.n.0", "format": "%3c"}], '
    b'"sort_by": "runs.0.params.n.0", "limit": 1}]}}\n')
put('results_json', 'npy_refs_bad.json', b'{"a": {"npy_file": "../a.npy", "shape": [2, 3], "dtype": "<f8"}, '
    b'"b": {"npy_file": "link.npy", "shape": [1], "dtype": "<f8"}, "c": {"npy_file": "bad.npy", "shape": [1], '
    b'"dtype": "<f8"}, "d": {"npy_file": "a.npy", "shape": [3, 2], "dtype": "<f8"}}\n')

# schema 3: every array of >= 16 elements is a reference (attnmech 3.3); a kernel block drawn with its examples
put('results_json', 'schema3_refs.json', b'{"schema_version": 3, "runs": [{"width": 10, "test": {"accuracy": 0.5, '
    b'"mean": {"npy_file": "a.npy", "shape": [2, 3], "dtype": "<f8"}}, "kernels": {"rn": {"npy_file": "a.npy", '
    b'"shape": [2, 3], "dtype": "<f8"}, "examples": {"npy_file": "e.npy", "shape": [50], "dtype": "<i8"}, '
    b'"min": {"rn": -1, "path": [0.5, -2]}}}], "report": {"plots": [{"file": "k", "kind": "heatmap", "panels": '
    b'[{"matrix": "runs.0.kernels.rn"}], "indices": "runs.0.kernels.examples", "trim": 25}, {"file": "k2", '
    b'"kind": "heatmap", "panels": [{"matrix": "runs.0.test.mean"}], "indices": "runs.0.test.mean.0"}], '
    b'"summary": [{"kind": "matrix", "path": "runs.0.kernels.rn"}]}}\n')
# one bad reference a seed (a read stops at the first): names outside the rule, no such file, another dtype or
# shape, a file cut short, shapes that are not sizes
for name, ref in [('ref_missing', b'"gone.npy", "shape": [1], "dtype": "<f8"'),
                  ('ref_dotdot', b'"..%2Fa.npy", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_slash', b'"sub/a.npy", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_hidden', b'".a.npy", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_empty', b'"", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_long', b'"' + b'a' * 240 + b'.npy", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_not_npy', b'"a.txt", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_name_number', b'7, "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_dtype', b'"a.npy", "shape": [2, 3], "dtype": "<i4"'),
                  ('ref_shape', b'"a.npy", "shape": [6], "dtype": "<f8"'),
                  ('ref_shape_negative', b'"a.npy", "shape": [-2, 3], "dtype": "<f8"'),
                  ('ref_shape_text', b'"a.npy", "shape": "2x3", "dtype": "<f8"'),
                  ('ref_shape_9d', b'"a.npy", "shape": [1, 1, 1, 1, 1, 1, 1, 1, 1], "dtype": "<f8"'),
                  ('ref_truncated', b'"cut.npy", "shape": [2, 3], "dtype": "<f8"'),
                  ('ref_symlink', b'"link.npy", "shape": [1], "dtype": "<f8"')]:
    put('results_json', name + '.json', b'{"runs": [{"x": {"npy_file": ' + ref + b'}}], "status": "ok"}\n')

# ---------------------------------------------------------------- problem directories
qk_model = read('npy', 'qk', 'model.json')
put('problem_model', 'qk.json', qk_model)
put('problem_model', 'full.json', b'{"readout": "last", "heads": [1, 2], "widths": [3, 3, 3], '
    b'"variances": [1, 1, 1, 1], "temperature": 0.05, "form": "qk", "path_labels": ["a", "b"], '
    b'"widths_scan": [10, 100], "extra": 1}\n')
put('problem_model', 'bilinear.json', b'{"readout": "first", "heads": [1], "widths": [2, 2], '
    b'"variances": [1, 1, 1], "temperature": 1, "form": "bilinear"}\n')
put('problem_model', 'bad_types.json', b'{"readout": 3, "heads": "x", "widths": [], "variances": [-1], '
    b'"temperature": null, "form": "qk"}\n')
put('problem_model', 'too_deep.json', b'{"readout": "mean", "heads": ' + b'[' * 200 + b'1' + b']' * 200 + b'}\n')
put('problem_model', 'many_heads.json', b'{"readout": "mean", "heads": [1000000, 1000000, 1000000], '
    b'"widths": [3, 3, 3, 3], "variances": [1, 1, 1, 1, 1], "temperature": 0.05}\n')

# The harness's directory (problem_dir.hpp): X_train [4,3,2], y_train [4], X_test [2,3,2], y_test [2], Q/K [2,2].
# Seed k starts with the byte k (the file it replaces) and holds a valid file of that slot.
slots = [((4, 3, 2), False), ((4,), True), ((2, 3, 2), False), ((2,), True)] + [((2, 2), False)] * 6
for k, (shape, labels) in enumerate(slots):
    n = 1
    for s in shape:
        n *= s
    vals = [(1.0 if i % 2 == 0 else -1.0) if labels else 0.25 * (i % 7) - 0.5 for i in range(n)]
    put('problem_npy', f'slot{k}.bin', bytes([k]) + npy('<f8', shape, f8(vals)))
put('problem_npy', 'slot0_f4_fortran.bin', bytes([0]) + npy('<f4', (4, 3, 2), b''.join(
    struct.pack('<f', 0.5 * i) for i in range(24)), fortran=True))
put('problem_npy', 'slot1_i4.bin', bytes([1]) + npy('<i4', (4,), struct.pack('<4i', 1, -1, 1, -1)))
put('problem_npy', 'slot4_G3.bin', bytes([4]) + npy('<f8', (3, 2), f8([1, 2, 3, 4, 5, 6])))
put('problem_npy', 'slot2_nan.bin', bytes([2]) + npy('<f8', (2, 3, 2), f8([float('nan')] * 12)))
put('problem_npy', 'slot0_huge.bin', bytes([0]) + npy('<f8', (1 << 30, 1 << 30, 16), b''))

# ---------------------------------------------------------------- IDX
raw_idx = {}
for sub in ('idx', 'bad'):
    for f in sorted(os.listdir(os.path.join(data, 'oneshot', sub))):
        b = read('oneshot', sub, f)
        put('idx', f'{sub}_{f}', b)
        raw_idx[f'{sub}_{f}'] = gzip.decompress(b) if f.endswith('.gz') and sub == 'idx' else b
put('idx', 'huge_claim.gz', gzip.compress(bytes([0, 0, 8, 3]) + struct.pack('>III', 1 << 20, 1 << 7, 1 << 7), mtime=0))
put('idx', 'idx4', bytes([0, 0, 8, 4]) + struct.pack('>IIII', 1, 2, 1, 2) + bytes([1, 2, 3, 4]))
for name, b in raw_idx.items():
    if not name.endswith('truncated.gz'):
        put('idx_gz', name.replace('.gz', ''), b)
put('idx_gz', 'overflow', bytes([0, 0, 8, 3]) + struct.pack('>III', 16, 1 << 30, 1 << 30))


# ---------------------------------------------------------------- PNG
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)


def png(w, h, depth, colour, rows, interlace=0, extra=b''):
    """rows: the filtered scanlines' bytes (without the filter byte), one per row."""
    raw = b''.join(b'\x00' + r for r in rows)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, colour, 0, 0, interlace)) +
            extra + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


put('png', 'grey8_2x2.png', read('oneshot', 'png', 'alpha', 'c1', '00.png'))
put('png', 'truncated.png', read('oneshot', 'badpng', 'a', 'c', '00.png'))
put('png', 'grey1_8x2.png', png(8, 2, 1, 0, [b'\xa5', b'\x5a']))
put('png', 'grey16_2x1.png', png(2, 1, 16, 0, [b'\x12\x34\xff\xff']))
put('png', 'rgb8_2x1.png', png(2, 1, 8, 2, [b'\xff\x00\x00\x00\x80\xff']))
put('png', 'rgba8_2x1.png', png(2, 1, 8, 6, [b'\x00\x00\x00\x80\xff\xff\xff\x00']))
put('png', 'greya8_2x1.png', png(2, 1, 8, 4, [b'\x00\x40\xff\xff']))
plte = chunk(b'PLTE', b'\x00\x00\x00\xff\xff\xff\x80\x80\x80') + chunk(b'tRNS', b'\xff\x00')
put('png', 'palette2_3x1.png', png(3, 1, 2, 3, [b'\x1b'], extra=plte))
put('png', 'interlaced_3x3.png', png(3, 3, 8, 0, [b'\x10', b'\x20\x30', b'\x40', b'\x50\x60', b'\x70\x80\x90',
                                                 b'\xa0\xb0\xc0', b'\xd0\xe0\xf0'][:7], interlace=1))
put('png', 'grey8_huge_claim.png', png(1000000, 1000000, 8, 0, [b'\x00']))
put('png', 'rgb16_huge_claim.png', png(50000, 40000, 16, 2, [b'\x00' * 6]))

# ---------------------------------------------------------------- Hershey
for sub in ('hershey', 'fonts'):
    for f in sorted(os.listdir(os.path.join(data, 'oneshot', sub))):
        put('hershey', f'{sub}_{f}', read('oneshot', sub, f))
put('hershey', 'pen_up.jhf', b'  100  6I[RFRT RRYQZ\n')
put('hershey', 'crlf.jhf', b'  101  3I[RFRT\r\n  102  2JZ\r\n')

# ---------------------------------------------------------------- sweep and figure specs
examples = os.path.join(here, '..', '..', 'examples')
for f in sorted(os.listdir(os.path.join(examples, 'sweeps'))):
    with open(os.path.join(examples, 'sweeps', f), 'rb') as fh:
        put('sweep_spec', f, fh.read())
put('sweep_spec', 'ranges.json', b'{"task": "markov", "fixed": {"P": 10, "xi": [1, 2]}, "axes": {"seed": {"range": '
    b'[0, 3]}, "T": {"range": [0.5, 2, 0.5]}}, "zip": [{"a": [1, 2], "b": ["x", "y"]}], "cost": {"P": 2}, '
    b'"average": ["seed"], "warm_axes": ["T"], "warm_start": true, "metrics": ["runs.0.x"]}\n')
put('sweep_spec', 'huge_range.json', b'{"task": "markov", "axes": {"seed": {"range": [0, 1e7]}}}\n')
put('sweep_spec', 'range_overflow.json', b'{"task": "markov", "axes": {"seed": {"range": [1e19, 1.1e19, 1e18]}}}\n')
put('sweep_spec', 'grid_product.json', b'{"task": "t", "axes": {"a": [1,2,3,4,5,6,7,8,9,10], "b": [1,2,3,4,5,6,7,8,'
    b'9,10], "c": [1,2,3,4,5,6,7,8,9,10], "d": [1,2,3,4,5,6,7,8,9,10], "e": [1,2,3,4,5,6,7,8,9,10]}}\n')
put('sweep_spec', 'nul_task.json', b'{"task": "markov\\u0000x"}\n')
put('sweep_spec', 'too_deep_plot.json', b'{"task": "markov", "plot": ' + b'[' * 200 + b']' * 200 + b'}\n')
for f in ('markov-alignment.json', 'markov-U.json', 'potts-perturbation.json', 'replica-curve.json'):
    with open(os.path.join(examples, 'figures', f), 'rb') as fh:
        put('figure_spec', f, fh.read())
figure_head = (b'{"title": "t", "paper_ref": "p", "runtime": "1 s", "caption": {"paper": "a", "ours": "b", '
               b'"numbers": [{"sweep": "s", "metric": "m", "label": "L", "digits": 3}]}, '
               b'"sweeps": {"s": {"task": "markov", "axes": {"seed": [0, 1], "P": [10, 20]}}}, ')
put('figure_spec', 'panels.json', figure_head + b'"panels": [{"id": "a", "kind": "lines", "title": "x", '
    b'"x_log": true, "series": [{"sweep": "s", "metric": "m", "x": "P", "y_scale": 2, "abs": true, '
    b'"group": ["seed"], "where": {"seed": [0]}, "colors": ["#000"], "label": "{seed} {value}"}]}, '
    b'{"id": "b", "kind": "heatmap", "panels": [{"sweep": "s", "array": "a.b", "title": "h"}], '
    b'"row_labels": ["r"]}, {"id": "c", "kind": "bars", "series": [{"sweep": "s", "array": "q"}], '
    b'"categories": {"sweep": "s", "strings": "names"}}]}\n')
put('figure_spec', 'bad_types.json', figure_head + b'"plot": {"kind": "lines", "series": [{"sweep": "s", '
    b'"metric": "m", "x": "P", "digits": "3", "y_scale": "2"}]}}\n')
put('figure_spec', 'too_deep_plot.json', figure_head + b'"plot": ' + b'[' * 200 + b']' * 200 + b'}\n')

# ---------------------------------------------------------------- alignments (task msa)
for f in ('focus.a2m', 'inserts.a3m', 'interleaved.sto', 'interleaved.sto.gz'):
    put('msa', f, read('msa', f))
put('msa', 'ragged.fa', b'>a\nACDEF\n>b\nACD\n')
put('msa', 'crlf_bom.fa', b'\xef\xbb\xbf\r\n>a/3-9 x\r\nAC DE\r\n>b\r\nA-.EF\r\n')
put('msa', 'rna.fa', b'>q/5-9\nAcG.U-\n>t\nacgu.A\n')
put('msa', 'two_stockholm.sto', b'# STOCKHOLM 1.0\na AC\nb AD\n//\n# STOCKHOLM 1.0\nc AC\n//\n')
put('msa', 'two_members.gz', gzip.compress(b'>a\nAC', mtime=0) + gzip.compress(b'DE\n>b\nACDE\n', mtime=0))
put('msa', 'cr_only.fa', b'>a\rACDE\r>b\rAC-E\r')
put('msa', 'mixed_ends.sto', b'# STOCKHOLM 1.0\r\na AC\rb AD\n\r\na EF\r\nb EG\n//\r')
put('msa', 'utf8_residue.fa', b'>caf\xc3\xa9\nAC\xc3\xa9DE\n>b\nACDEF\n')
put('msa', 'dup_in_block.sto', b'# STOCKHOLM 1.0\na ACDE\nb ACDE\na FGHI\nb FGHI\n//\n')
put('msa', 'interleaved3.sto', b'# STOCKHOLM 1.0\n\nx/1-4 AC\ny/2-5 AD\n\n#=GC SS ..\nx/1-4 EF\ny/2-5 EG\n\nx/1-4 H\ny/2-5 K\n//\n')
put('msa', 'long_row.gz', gzip.compress(b'>a\n' + b'A' * (1 << 20) + b'\n', mtime=0))
put('msa', 'tiny_records.gz', gzip.compress(b'>\nA\n' * (1 << 16), mtime=0))
put('msa', 'copies.fa', b''.join(b'>s%d\nAC-DEFG\n' % k for k in range(200)))

total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(corpus) for f in fs)
print(f'corpus: {total} bytes')
