#!/usr/bin/python3
"""Writes the NumPy fixtures that tests/formats/npy_test.cpp and npz_test.cpp read.

Run from anywhere: /usr/bin/python3 tests/formats/data/make_fixtures.py
The files are committed; the tests compare them with values written out by hand, so rerunning
this script must not change what the arrays hold.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, arr, version=None):
    path = os.path.join(HERE, name)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


def main():
    # One small array per supported dtype (values chosen to be exact in every type).
    save("f32.npy", np.array([[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], dtype="<f4"))
    save("f64.npy", np.array([0.1, -2.0, 1e300], dtype="<f8"))
    save("f16.npy", np.array([1.0, -0.5, 65504.0, 0.0], dtype="<f2"))
    save("i8.npy", np.array([-128, -1, 0, 127], dtype="i1"))
    save("u8.npy", np.array([0, 1, 200, 255], dtype="u1"))
    save("i32.npy", np.array([[-2147483648, 0], [1, 2147483647]], dtype="<i4"))
    save("i64.npy", np.array([-9007199254740993, 0, 9007199254740993], dtype="<i8"))
    save("bool.npy", np.array([True, False, True], dtype="?"))
    # Header versions 2.0 and 3.0 of the same array as f32.npy.
    f32 = np.array([[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], dtype="<f4")
    save("f32_v2.npy", f32, version=(2, 0))
    save("f32_v3.npy", f32, version=(3, 0))
    # Column-major storage: element [i, j] is 10 * i + j.
    save("f64_fortran.npy", np.asfortranarray(np.array([[0, 1, 2], [10, 11, 12]], dtype="<f8")))
    # Big-endian data.
    save("i32_big.npy", np.array([1, -2, 70000], dtype=">i4"))
    save("f64_big.npy", np.array([1.5, -0.25], dtype=">f8"))
    # A 0-d array and an empty one.
    save("f32_scalar.npy", np.array(3.25, dtype="<f4"))
    save("f32_empty.npy", np.zeros((0, 3), dtype="<f4"))
    # A dtype Tessera does not read.
    save("u16.npy", np.array([1, 2], dtype="<u2"))
    # Archives: stored and deflated.
    a = np.array([[1, 2], [3, 4]], dtype="<i8")
    b = np.array([0.5, 0.25, -8.0], dtype="<f4")
    np.savez(os.path.join(HERE, "stored.npz"), a=a, b=b)
    np.savez_compressed(os.path.join(HERE, "deflated.npz"), a=a, b=b, **{"nested/c": np.array(True)})


if __name__ == "__main__":
    main()
