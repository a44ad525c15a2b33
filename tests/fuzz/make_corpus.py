#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets other than onnx_fuzz (tests/fuzz/README.md).

Run from anywhere: /usr/bin/python3 tests/fuzz/make_corpus.py
The files are committed; rerunning gives the same bytes. Seeds are small valid files (plus a few
near misses), so that libFuzzer starts from the interesting parts of each format:
  corpus/npy/         the .npy fixtures of tests/formats/data (every dtype, versions, fortran order)
  corpus/npz/         the .npz fixtures of tests/formats/data (stored, deflated, lying sizes)
  corpus/json_graph/  samples/rnn.json with its weights inline, and small graphs written here
  corpus/idx/         tiny idx3 image and idx1 label files, plain and gzipped
  corpus/tir/         the IR text goldens of tests/golden
"""
import glob
import gzip
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(HERE, "corpus")


def fresh(name):
    path = os.path.join(CORPUS, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy_fixtures(name, pattern):
    out = fresh(name)
    for src in sorted(glob.glob(os.path.join(ROOT, pattern))):
        shutil.copy(src, out)


def idx(dims, data):
    head = struct.pack(">I", 0x800 | len(dims)) + b"".join(struct.pack(">I", d) for d in dims)
    return head + bytes(data)


def gz(data):
    return gzip.compress(data, mtime=0)


def make_idx():
    out = fresh("idx")
    pixels = [(7 * i) % 256 for i in range(3 * 4 * 4)]
    write(os.path.join(out, "images-idx3"), idx([3, 4, 4], pixels))
    write(os.path.join(out, "images-idx3.gz"), gz(idx([3, 4, 4], pixels)))
    write(os.path.join(out, "labels-idx1"), idx([3], [7, 0, 9]))
    write(os.path.join(out, "labels-idx1.gz"), gz(idx([3], [7, 0, 9])))
    write(os.path.join(out, "empty-idx3"), idx([0, 28, 28], []))
    write(os.path.join(out, "truncated-idx3"), idx([2, 2, 2], [1, 2, 3]))
    # Two gzip members joined (gzread reads them as one stream).
    whole = idx([2], [5, 6])
    write(os.path.join(out, "two-members-idx1.gz"), gz(whole[:5]) + gz(whole[5:]))


def doc(name, **members):
    d = {"format": "tessera-graph", "version": 1, "name": name}
    d.update(members)
    return json.dumps(d, indent=1)


def make_json_graph():
    out = fresh("json_graph")
    # samples/rnn.json (Loop with captures) with its one .npz param written inline.
    with open(os.path.join(ROOT, "samples", "rnn.json")) as f:
        rnn = json.load(f)
    for p in rnn["params"]:
        if "npz" in p:
            del p["npz"]
            p["data"] = [0.25] * 256
    del rnn["weights_file"]
    write(os.path.join(out, "rnn.json"), json.dumps(rnn, indent=1))

    x = {"name": "x", "type": "f32[N, 16]"}
    write(os.path.join(out, "mlp.json"), doc(
        "mlp", inputs=[x],
        params=[{"name": "w", "type": "f32[16, 4]", "data": [0.5] * 64},
                {"name": "b", "type": "f32[4]", "data": [0.0, 1.0, "nan", "-inf"]}],
        nodes=[{"op": "Gemm", "name": "fc", "inputs": ["x", "w", "b"], "outputs": ["h"],
                "attrs": {"alpha": 1.0, "transB": 0}},
               {"op": "Relu", "inputs": ["h"], "outputs": ["a"]},
               {"op": "Softmax", "inputs": ["a"], "outputs": ["y"], "attrs": {"axis": -1}}],
        outputs=["y"]))
    write(os.path.join(out, "conv.json"), doc(
        "conv", inputs=[{"name": "x", "type": "f32[N, 1, 8, 8]"}],
        params=[{"name": "w", "type": "f32[2, 1, 3, 3]", "data": [0.125] * 18},
                {"name": "b", "type": "f32[2]", "data": [0.0, 0.5]}],
        nodes=[{"op": "Conv", "inputs": ["x", "w", "b"], "outputs": ["c"],
                "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}},
               {"op": "MaxPool", "inputs": ["c"], "outputs": ["p"],
                "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}},
               {"op": "Flatten", "inputs": ["p"], "outputs": ["f"], "attrs": {"axis": 1}},
               {"op": "ReduceMean", "inputs": ["f"], "outputs": ["m"], "attrs": {"axes": [1]}}],
        outputs=["m"]))
    write(os.path.join(out, "dtypes.json"), doc(
        "dtypes", inputs=[{"name": "i", "type": "i64[?, 3]"}, {"name": "u", "type": "f32[*]"}],
        params=[{"name": "h", "type": "f16[2]", "data": [0.333251953, 65504.0]},
                {"name": "bf", "type": "bf16[2]", "data": [1.0, -2.5]},
                {"name": "flags", "type": "bool[3]", "data": [True, False, 1]},
                {"name": "i8", "type": "i8[2]", "data": [-128, 127]},
                {"name": "u8", "type": "u8[2]", "data": [0, 255]},
                {"name": "i32", "type": "i32[1]", "data": [-2147483648]},
                {"name": "d", "type": "f64[]", "data": [1e300]},
                {"name": "shape", "type": "i64[2]", "data": [3, -1]}],
        nodes=[{"op": "Cast", "inputs": ["i"], "outputs": ["fi"], "attrs": {"to": "f32"}},
               {"op": "Reshape", "inputs": ["fi", "shape"], "outputs": ["r"]},
               {"op": "Transpose", "inputs": ["r"], "outputs": ["t"], "attrs": {"perm": [1, 0]}},
               {"op": "Add", "inputs": ["u", "t"], "outputs": ["s"]}],
        outputs=["s", ""]))
    write(os.path.join(out, "if.json"), doc(
        "branches", inputs=[{"name": "c", "type": "bool[]"}, {"name": "x", "type": "f32[3]"}],
        nodes=[{"op": "Relu", "inputs": ["x"], "outputs": ["r"]},
               {"id": 7, "op": "If", "inputs": ["c"], "outputs": ["y"], "from": [0, 3],
                "attrs": {"then_branch": {"graph": {
                              "captures": [{"name": "r", "type": "f32[3]"}],
                              "nodes": [{"op": "Neg", "inputs": ["r"], "outputs": ["t"]}],
                              "outputs": ["t"]}},
                          "else_branch": {"graph": {
                              "name": "other", "captures": [{"name": "x", "type": "f32[3]"}],
                              "outputs": ["x"]}}}},
               {"op": "Relu", "inputs": ["y"], "outputs": ["z"]}],
        outputs=["z"]))
    write(os.path.join(out, "attrs.json"), doc(
        "attrs", _comment="every attribute kind",
        nodes=[{"op": "Constant", "outputs": ["k"], "attrs": {
                    "value": {"tensor": {"type": "i32[2, 2]", "data": [1, 2, 3, 4]}}}},
               {"op": "Any", "inputs": ["k", ""], "outputs": [""], "attrs": {
                    "i": -3, "f": 0.5, "whole": 2.0, "s": "text", "ints": [1, -2],
                    "floats": [1, 2.5], "strings": ["a", "b"], "empty": [], "xi": {"int": 4},
                    "xf": {"float": "-inf"}, "xs": {"string": "s"}, "xints": {"ints": []},
                    "xfloats": {"floats": ["nan", 1]}, "xstrings": {"strings": []},
                    "a/b~c": 1}}],
        outputs=["k"]))
    write(os.path.join(out, "weights_file.json"), doc(
        "side", weights_file="w.npz", inputs=[x],
        params=[{"name": "w", "type": "f32[16, 4]", "npz": "w"}],
        nodes=[{"op": "MatMul", "inputs": ["x", "w"], "outputs": ["y"]}], outputs=["y"]))
    write(os.path.join(out, "empty.json"), doc("empty"))


def main():
    copy_fixtures("npy", "tests/formats/data/*.npy")
    copy_fixtures("npz", "tests/formats/data/*.npz")
    copy_fixtures("tir", "tests/golden/*/*.tir")
    make_idx()
    make_json_graph()


if __name__ == "__main__":
    main()
