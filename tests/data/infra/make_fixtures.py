# One-off generator of the .npy fixtures in this folder (run once with NumPy; the tests never run it).
#   python3 make_fixtures.py
import numpy as np
from numpy.lib import format as npf

a = np.arange(6, dtype='<f8').reshape(2, 3) * 0.5 - 1.0          # [[-1,-0.5,0],[0.5,1,1.5]]
np.save('f8_c_2x3.npy', a)
np.save('f8_f_2x3.npy', np.asfortranarray(a))
np.save('f4_3.npy', np.array([1.5, -2.25, 3.0], dtype='<f4'))
np.save('i8_2x2.npy', np.array([[1, -2], [3, 2**40]], dtype='<i8'))
np.save('i4_f_2x3x4.npy', np.asfortranarray(np.arange(24, dtype='<i4').reshape(2, 3, 4) - 5))
np.save('f8_scalar.npy', np.float64(3.25))
np.save('f8_empty_0x3.npy', np.zeros((0, 3)))
with open('f8_v2.npy', 'wb') as f:
    npf.write_array(f, a, version=(2, 0))
with open('f8_v3.npy', 'wb') as f:
    npf.write_array(f, a, version=(3, 0))
# error cases
np.save('f8_bigendian.npy', a.astype('>f8'))
np.save('object.npy', np.array([1, 'x'], dtype=object), allow_pickle=True)
np.save('u1_3.npy', np.array([1, 2, 3], dtype='u1'))
raw = open('f8_c_2x3.npy', 'rb').read()
open('f8_truncated.npy', 'wb').write(raw[:-5])
open('bad_magic.npy', 'wb').write(b'PK\x03\x04 this is not a npy file')
hdr = b"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3 }"
hdr = hdr + b' ' * (118 - len(hdr)) + b'\n'
open('bad_header.npy', 'wb').write(b'\x93NUMPY\x01\x00' + len(hdr).to_bytes(2, 'little') + hdr + raw[128:])
