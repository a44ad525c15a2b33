"""Fixtures of the Python package's tests: the repository, the zoo (build/zoo, made by
tests/zoo/make_zoo.py) and a fresh insight database per test. PYTHONPATH must hold the build's
python/ folder (ctest sets it; see tests/CMakeLists.txt)."""

import gzip
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ZOO = pathlib.Path(os.environ.get("TESSERA_ZOO", ROOT / "build" / "zoo"))
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "insight.db"
    monkeypatch.setenv("TESSERA_DB", str(path))
    return path


@pytest.fixture(scope="session")
def zoo():
    if not (ZOO / "resnet18.onnx").exists():
        pytest.skip(f"the zoo is not exported to {ZOO} (python3 tests/zoo/make_zoo.py --out build/zoo)")
    return ZOO


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="session")
def fashion():
    """(x_train f32 [N,1,28,28] in [0,1], y_train i64, x_test, y_test)."""
    x = read_idx(FASHION / "train-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0
    y = read_idx(FASHION / "train-labels-idx1-ubyte.gz").astype(np.int64)
    xt = read_idx(FASHION / "t10k-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0
    yt = read_idx(FASHION / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
    return x, y, xt, yt
