#!/usr/bin/env python3
"""Writes the tiny fixtures of tests/plugins/task-oneshot (run once; the outputs are committed).
IDX: 3 images 4x5 + labels, raw and gzipped, plus corrupt variants. PNG: an Omniglot-like tree
<alphabet>/<character>/<drawing>.png with 2x2 grey images, and a corrupt PNG. Hershey: 3 glyphs of
futural.jhf (first lines of Debian's hershey-fonts-data file, public-domain Hershey data) and broken variants."""
import gzip, os, struct, zlib

here = os.path.dirname(os.path.abspath(__file__))

def w(name, data):
    p = os.path.join(here, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'wb') as f:
        f.write(data)

imgs = bytes((i * 17 + 3) % 256 for i in range(3 * 4 * 5))
idx3 = bytes([0, 0, 8, 3]) + struct.pack('>III', 3, 4, 5) + imgs
idx1 = bytes([0, 0, 8, 1]) + struct.pack('>I', 3) + bytes([2, 0, 1])
w('idx/train-images-idx3-ubyte', idx3)
w('idx/train-labels-idx1-ubyte', idx1)
w('idx/t10k-images-idx3-ubyte.gz', gzip.compress(idx3, mtime=0))
w('idx/t10k-labels-idx1-ubyte.gz', gzip.compress(idx1, mtime=0))
w('bad/truncated-images-idx3-ubyte', idx3[:-7])
w('bad/badmagic-images-idx3-ubyte', bytes([1, 2, 8, 3]) + idx3[4:])
w('bad/float-images-idx3-ubyte', bytes([0, 0, 0x0d, 3]) + idx3[4:])
w('bad/truncated.gz', gzip.compress(idx3, mtime=0)[:40])

def png(wd, ht, pix):
    raw = b''.join(b'\x00' + bytes(pix[r * wd:(r + 1) * wd]) for r in range(ht))
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', wd, ht, 8, 0, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))

for a, chars in (('alpha', ('c1', 'c2')), ('beta', ('c1',))):
    for c in chars:
        for d in range(2):
            v = 40 * (d + 1) + (10 if a == 'beta' else 0) + (5 if c == 'c2' else 0)
            w(f'png/{a}/{c}/{d:02d}.png', png(2, 2, [v, 255, 255, v]))
good = png(2, 2, [0, 0, 0, 0])
w('badpng/a/c/00.png', good[:30])

futural = open('/usr/share/hershey-fonts/futural.jhf', 'rb').read().split(b'\n')
lines = [futural[33], futural[34], futural[0]]   # 'A', 'B', space
w('hershey/three.jhf', b'\n'.join(lines) + b'\n')
# the same three glyphs with the first one wrapped over two lines (classic Hershey layout)
l0 = lines[0]
w('hershey/wrapped.jhf', l0[:20] + b'\n' + l0[20:] + b'\n' + b'\n'.join(lines[1:]) + b'\n')
w('hershey/short.jhf', lines[0][:-4] + b'\n')
w('hershey/badheader.jhf', b'12x45  9MWRFRT RRYQZR[SZRY\n')
w('hershey/extra.jhf', lines[1] + b'QQ\n')
