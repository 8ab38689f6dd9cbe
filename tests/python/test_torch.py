"""The PyTorch example (examples/python/torch_attention.py) end to end on a tiny problem: attention taken from a
torch.nn model by hooks → Theory.from_attention → U and accuracy. Skipped when torch is not installed (Debian
python3-torch is not part of the suite's requirements)."""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))


def test_torch_example_small():
    import torch_attention as ex
    out = ex.main(P=40, P_test=40, quiet=True)
    assert out["solution"].status in ("converged", "converged_roundoff")
    assert out["U"][0].shape == (out["H_tot"], out["H_tot"])
    assert 0.0 <= out["accuracy"] <= 1.0 and np.isfinite(out["solution"].action)
