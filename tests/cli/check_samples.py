#!/usr/bin/env python3
"""End-to-end check of `tessera run` on the samples against an independent NumPy implementation.

Usage: check_samples.py TESSERA SAMPLE.json [SAMPLE.json ...]

For each sample: reads the JSON graph and its weights with Python's json and numpy (not with
Tessera's readers), evaluates the graph with the NumPy functions below, runs
`tessera run SAMPLE --input x=INPUT.npy --output-dir DIR`, and compares the outputs.
Then checks that bad input gives a clear error and exit code 1.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def conv2d(x, w, b, pads, strides, dilations, group):
    n, c, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (x.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (x.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, oc, oh, ow), dtype=np.float64)
    ocg = oc // group
    for g in range(group):
        xs = x[:, g * icg:(g + 1) * icg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dilations[0]: i * dilations[0] + strides[0] * oh: strides[0],
                           j * dilations[1]: j * dilations[1] + strides[1] * ow: strides[1]]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def maxpool(x, kernel, strides, pads):
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=-np.inf)
    oh = (x.shape[2] - kernel[0]) // strides[0] + 1
    ow = (x.shape[3] - kernel[1]) // strides[1] + 1
    out = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            out = np.maximum(out, x[:, :, i:i + strides[0] * oh:strides[0], j:j + strides[1] * ow:strides[1]])
    return out


def evaluate(graph, weights, feeds):
    env = dict(feeds)
    for p in graph.get("params", []):
        if "data" in p:
            shape = [int(d) for d in p["type"].split("[")[1].rstrip("]").split(",") if d.strip()]
            env[p["name"]] = np.array(p["data"], dtype=np.float64).reshape(shape)
        else:
            env[p["name"]] = weights[p.get("npz", p["name"])].astype(np.float64)
    for node in graph["nodes"]:
        ins = [env[i] if i else None for i in node["inputs"]]
        a = node.get("attrs", {})
        op = node["op"]
        if op == "Conv":
            k = ins[1].shape[2:]
            y = conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("pads", [0, 0, 0, 0]),
                       a.get("strides", [1, 1]), a.get("dilations", [1, 1]), a.get("group", 1))
        elif op == "Relu":
            y = np.maximum(ins[0], 0)
        elif op == "MaxPool":
            y = maxpool(ins[0], a["kernel_shape"], a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0]))
        elif op == "Flatten":
            axis = a.get("axis", 1)
            y = ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
        elif op == "Gemm":
            A = ins[0].T if a.get("transA", 0) else ins[0]
            B = ins[1].T if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "MatMul":
            y = ins[0] @ ins[1]
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Softmax":
            e = np.exp(ins[0] - ins[0].max(axis=a.get("axis", -1), keepdims=True))
            y = e / e.sum(axis=a.get("axis", -1), keepdims=True)
        else:
            raise SystemExit(f"check_samples.py: no NumPy implementation of {op}")
        env[node["outputs"][0]] = y
    return [env[o] for o in graph["outputs"]]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def expect_error(cmd, *needles):
    r = run(cmd)
    msg = r.stderr
    if r.returncode != 1 or not all(n in msg for n in needles):
        raise SystemExit(f"FAIL: {' '.join(cmd)}\n  expected exit 1 and {needles} in stderr, got {r.returncode}:\n{msg}")
    print(f"ok: error for {' '.join(cmd[1:3])}...: {msg.strip().splitlines()[0]}")


def main():
    tessera, samples = sys.argv[1], sys.argv[2:]
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            graph = json.load(open(sample))
            weights = {}
            if "weights_file" in graph:
                weights = dict(np.load(os.path.join(os.path.dirname(sample), graph["weights_file"])))
            x = rng.standard_normal((3, 1, 28, 28)).astype(np.float32)
            xin = os.path.join(tmp, "x.npy")
            np.save(xin, x)
            out_dir = os.path.join(tmp, "out_" + os.path.basename(sample))
            r = run([tessera, "run", sample, "--input", f"{graph['inputs'][0]['name']}={xin}", "--output-dir", out_dir])
            if r.returncode != 0:
                raise SystemExit(f"FAIL: tessera run {sample}: {r.stderr}")
            expected = evaluate(graph, weights, {graph["inputs"][0]["name"]: x.astype(np.float64)})
            for name, want in zip(graph["outputs"], expected):
                got = np.load(os.path.join(out_dir, name + ".npy"))
                if got.shape != want.shape:
                    raise SystemExit(f"FAIL: {sample} output {name}: shape {got.shape}, NumPy gives {want.shape}")
                err = np.abs(got - want).max()
                scale = max(1.0, np.abs(want).max())
                if not err <= 1e-4 * scale:
                    raise SystemExit(f"FAIL: {sample} output {name}: max abs error {err} vs NumPy")
                print(f"ok: {sample} output {name} {got.shape} matches NumPy (max abs error {err:.2e})")

        sample = samples[0]
        name = json.load(open(sample))["inputs"][0]["name"]
        missing = os.path.join(tmp, "missing.json")
        expect_error([tessera, "info", missing], missing)
        bad_json = os.path.join(tmp, "bad.json")
        open(bad_json, "w").write('{"format": "tessera-graph", "version": 1, "nodes": [')
        expect_error([tessera, "info", bad_json], bad_json)
        base = {"format": "tessera-graph", "version": 1, "name": "bad",
                "inputs": [{"name": "x", "type": "f32[2]"}, {"name": "y", "type": "f32[3]"}]}
        cases = [
            ([{"op": "Add", "inputs": ["x", "b"], "outputs": ["a"]},
              {"op": "Relu", "inputs": ["a"], "outputs": ["b"]}], ["b"], "/nodes/0: node #0: the graph has a cycle"),
            ([{"op": "Add", "inputs": ["x", "y"], "outputs": ["a"]}], ["a"], "/nodes/0: node #0: Add: shapes cannot be broadcast"),
            ([{"op": "Frob", "inputs": ["x"], "outputs": ["a"]}], ["a"], "/nodes/0: node #0: Frob (#0): unknown op 'Frob'"),
            ([{"op": "LeakyRelu", "inputs": ["x"], "outputs": ["a"], "attrs": {"alpha": "big"}}], ["a"],
             "attribute 'alpha' must be float, got string"),
            ([{"inputs": ["x"], "outputs": ["a"]}], ["a"], "/nodes/0: node #0: missing field \"op\""),
        ]
        for i, (nodes, outputs, needle) in enumerate(cases):
            path = os.path.join(tmp, f"bad{i}.json")
            json.dump(dict(base, nodes=nodes, outputs=outputs), open(path, "w"))
            expect_error([tessera, "info", path], path + ":" + needle if needle.startswith("/") else needle)
        wrong = os.path.join(tmp, "wrong.npy")
        np.save(wrong, np.zeros((3, 28, 28), np.float32))
        expect_error([tessera, "run", sample, "--input", f"{name}={wrong}"], f"input '{name}' expects", "[3, 28, 28]")
        expect_error([tessera, "run", sample, "--input", f"nosuch={wrong}"], "no input named 'nosuch'")
        truncated = os.path.join(tmp, "truncated.npy")
        np.save(truncated, np.zeros((1, 1, 28, 28), np.float32))
        data = open(truncated, "rb").read()
        open(truncated, "wb").write(data[: len(data) // 2])
        expect_error([tessera, "run", sample, "--input", f"{name}={truncated}"], truncated)
        expect_error([tessera, "run", sample, "--input", "x"], "NAME=VALUE")
        r = run([tessera, "run", "--help"])
        if r.returncode != 0 or "--output-dir" not in r.stdout:
            raise SystemExit("FAIL: tessera run --help")
        r = run([tessera, "frobnicate"])
        if r.returncode != 2:
            raise SystemExit(f"FAIL: unknown subcommand exit code {r.returncode}, expected 2")
    print("all checks passed")


if __name__ == "__main__":
    main()
