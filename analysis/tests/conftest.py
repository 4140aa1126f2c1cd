"""conftest.py - makes kval_analysis (analysis/) and the synthetic-file writer (tests/synth.py)
importable without installing the package, and provides fixtures for synthetic kval files."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
for path in (ANALYSIS, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

import synth  # noqa: E402

# A flipped output bit on one case of rank 2 and a 30% slower rank 4 (6 ranks on 3 hosts).
FLIP = ("gemm", {"variant": "kval-mma", "precision": "bf16:fp32", "shape": "512x512x1024"}, 2)
SLOW_RANK, FLIP_RANK = 4, 2


@pytest.fixture
def make_file(tmp_path):
    """make_file(name, **synth options) -> path of a synthetic kval file in tmp_path."""
    def make(name="run.h5", **kwargs):
        return synth.write_kval_file(str(tmp_path / name), **kwargs)
    return make


@pytest.fixture
def clean_file(make_file):
    return make_file("clean.h5", nranks=6)


@pytest.fixture
def faulty_file(make_file):
    return make_file("faulty.h5", nranks=6, slow={SLOW_RANK: 1.3}, flips=[FLIP])
