#!/usr/bin/python3
"""Writes the NumPy fixtures that tests/formats/npy_test.cpp and npz_test.cpp read.

Run from anywhere: /usr/bin/python3 tests/formats/data/make_fixtures.py
The files are committed; the tests compare them with values written out by hand, so rerunning
this script must not change what the arrays hold.
"""
import io
import os
import struct
import zipfile

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
    # The 16-bit and wide unsigned integers.
    save("u16.npy", np.array([1, 2], dtype="<u2"))
    save("u64.npy", np.array([18446744073709551615, 0], dtype="<u8"))
    # Fixed-width strings: UTF-32 code points and bytes.
    save("str_u.npy", np.array([["a", "h\u00e9llo"], ["\U0001F600", ""]], dtype="<U5"))
    save("str_s.npy", np.array([b"ab", b"\xff"], dtype="|S2"))
    # A dtype Tessera does not read.
    save("c64.npy", np.array([1 + 2j], dtype="<c8"))
    # Archives: stored and deflated.
    a = np.array([[1, 2], [3, 4]], dtype="<i8")
    b = np.array([0.5, 0.25, -8.0], dtype="<f4")
    np.savez(os.path.join(HERE, "stored.npz"), a=a, b=b)
    np.savez_compressed(os.path.join(HERE, "deflated.npz"), a=a, b=b, **{"nested/c": np.array(True)})
    bad_archives()


def npy_bytes(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def plain_zip(name, members):
    """A zip of stored members without zip64 extras, so that tests can patch its fields."""
    path = os.path.join(HERE, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for member, data in members:
            z.writestr(zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return path


def bad_archives():
    three = npy_bytes(np.array([1.0, 2.0, 3.0], dtype="<f4"))
    # A member that is not a .npy file.
    plain_zip("not_npy.npz", [("a.npy", three), ("readme.txt", b"hello")])
    # A member whose header declares far more data than it holds.
    header = npy_bytes(np.zeros((1000, 1000), dtype="<f4"))[:128]
    plain_zip("lying_header.npz", [("w.npy", header + bytes(12))])
    # A member whose recorded uncompressed size (local and central headers) is 10**9 bytes.
    path = plain_zip("lying_size.npz", [("w.npy", three)])
    data = bytearray(open(path, "rb").read())
    local = data.find(b"PK\x03\x04")
    struct.pack_into("<I", data, local + 22, 10**9)
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 10**9)
    open(path, "wb").write(bytes(data))
    # A member whose data no longer matches its CRC (last byte of the array changed).
    path = plain_zip("bad_crc.npz", [("w.npy", three)])
    data = bytearray(open(path, "rb").read())
    local = data.find(b"PK\x03\x04")
    name_len, extra_len = struct.unpack_from("<HH", data, local + 26)
    data[local + 30 + name_len + extra_len + len(three) - 1] ^= 0x01
    open(path, "wb").write(bytes(data))


if __name__ == "__main__":
    main()
