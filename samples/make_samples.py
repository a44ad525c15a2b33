#!/usr/bin/python3
"""Writes the sample networks: samples/mlp.json + mlp.npz and samples/lenet.json + lenet.npz.

Run from anywhere: /usr/bin/python3 samples/make_samples.py
Weights are He-initialised (normal, std = sqrt(2 / fan_in)) from a fixed seed and biases are
zero, so running the script again writes the same files. The JSON follows the Tessera JSON graph
format (formats/README.md) and is laid out the way `save_json_graph` lays it out: params with
more than 64 elements go to the side .npz, the rest are inline.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20250601
INLINE_LIMIT = 64


def type_str(shape, dtype="f32"):
    return "%s[%s]" % (dtype, ", ".join(str(d) for d in shape))


class Builder:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.inputs, self.params, self.nodes = [], [], []
        self.weights = {}

    def input(self, name, type_):
        self.inputs.append({"name": name, "type": type_})
        return name

    def param(self, name, array):
        array = np.ascontiguousarray(array, dtype=np.float32)
        entry = {"name": name, "type": type_str(array.shape)}
        if array.size > INLINE_LIMIT:
            entry["npz"] = name
            self.weights[name] = array
        else:
            # Shortest decimal that reads back to the same float32.
            entry["data"] = [float(np.format_float_positional(v, unique=True)) for v in array.ravel()]
        self.params.append(entry)
        return name

    def he(self, name, shape, fan_in):
        return self.param(name, self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in))

    def node(self, op, name, inputs, output, **attrs):
        entry = {"op": op, "name": name, "inputs": inputs, "outputs": [output]}
        if attrs:
            entry["attrs"] = attrs
        self.nodes.append(entry)
        return output

    def gemm(self, name, x, fan_in, fan_out, output):
        w = self.he(name + ".w", (fan_in, fan_out), fan_in)
        b = self.param(name + ".b", np.zeros(fan_out))
        return self.node("Gemm", name, [x, w, b], output)

    def conv(self, name, x, cin, cout, k, output, **attrs):
        w = self.he(name + ".w", (cout, cin, k, k), cin * k * k)
        b = self.param(name + ".b", np.zeros(cout))
        return self.node("Conv", name, [x, w, b], output, kernel_shape=[k, k], **attrs)

    def write(self, outputs):
        graph = {
            "format": "tessera-graph",
            "version": 1,
            "name": self.name,
            "inputs": self.inputs,
            "params": self.params,
            "weights_file": self.name + ".npz",
            "nodes": self.nodes,
            "outputs": outputs,
        }
        with open(os.path.join(HERE, self.name + ".json"), "w") as f:
            f.write(pretty(graph) + "\n")
        np.savez(os.path.join(HERE, self.name + ".npz"), **self.weights)


def is_flat(v):
    return not isinstance(v, (dict, list)) or (
        isinstance(v, list) and all(not isinstance(e, (dict, list)) for e in v))


def pretty(v, indent=0):
    """2-space indent; arrays of scalars on one line; small flat objects on one line."""
    pad = " " * (indent + 2)
    if isinstance(v, list):
        if is_flat(v):
            return "[" + ", ".join(json.dumps(e) for e in v) + "]"
        return "[\n" + ",\n".join(pad + pretty(e, indent + 2) for e in v) + "\n" + " " * indent + "]"
    if isinstance(v, dict):
        if all(is_flat(e) for e in v.values()):
            line = "{" + ", ".join(json.dumps(k) + ": " + pretty(e) for k, e in v.items()) + "}"
            if len(line) + indent <= 100:
                return line
        items = [pad + json.dumps(k) + ": " + pretty(e, indent + 2) for k, e in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return json.dumps(v)


def mlp():
    b = Builder("mlp", SEED)
    x = b.input("x", "f32[N, 1, 28, 28]")
    flat = b.node("Flatten", "flatten", [x], "flat", axis=1)
    h1 = b.gemm("fc1", flat, 784, 128, "h1")
    a1 = b.node("Relu", "relu1", [h1], "a1")
    logits = b.gemm("fc2", a1, 128, 10, "logits")
    b.write([logits])


def lenet():
    b = Builder("lenet", SEED + 1)
    x = b.input("x", "f32[N, 1, 28, 28]")
    c1 = b.conv("conv1", x, 1, 6, 5, "c1", pads=[2, 2, 2, 2])     # [N, 6, 28, 28]
    r1 = b.node("Relu", "relu1", [c1], "r1")
    p1 = b.node("MaxPool", "pool1", [r1], "p1", kernel_shape=[2, 2], strides=[2, 2])  # [N, 6, 14, 14]
    c2 = b.conv("conv2", p1, 6, 16, 5, "c2")                      # [N, 16, 10, 10]
    r2 = b.node("Relu", "relu2", [c2], "r2")
    p2 = b.node("MaxPool", "pool2", [r2], "p2", kernel_shape=[2, 2], strides=[2, 2])  # [N, 16, 5, 5]
    f = b.node("Flatten", "flatten", [p2], "f", axis=1)          # [N, 400]
    h1 = b.gemm("fc1", f, 400, 120, "h1")
    a1 = b.node("Relu", "relu3", [h1], "a1")
    h2 = b.gemm("fc2", a1, 120, 84, "h2")
    a2 = b.node("Relu", "relu4", [h2], "a2")
    logits = b.gemm("fc3", a2, 84, 10, "logits")
    b.write([logits])


def rnn():
    """An Elman RNN over 8 steps of 2 features, as an ONNX-style Loop whose body captures the
    sequence and the weights: h_{t+1} = tanh(x[:, t] Wx + h_t Wh + b), logits = h_8 Wo + bo."""
    b = Builder("rnn", SEED + 2)
    steps, feats, hidden = 8, 2, 16
    x = b.input("x", "f32[N, %d, %d]" % (steps, feats))
    b.param("wx", b.rng.standard_normal((feats, hidden)) * np.sqrt(1.0 / feats))
    b.param("wh", b.rng.standard_normal((hidden, hidden)) * np.sqrt(1.0 / hidden))
    b.param("bh", np.zeros(hidden))
    b.params.append({"name": "trips", "type": "i64[]", "data": [steps]})
    b.params.append({"name": "hidden_size", "type": "i64[1]", "data": [hidden]})
    # h0 = zeros [N, hidden], sized from x at run time.
    n = b.node("Shape", "batch_size", [x], "n", start=0, end=1)
    h0_shape = b.node("Concat", "h0_shape", [n, "hidden_size"], "h0_shape", axis=0)
    b.node("ConstantOfShape", "h0", [h0_shape], "h0", value={"tensor": {"type": "f32[1]", "data": [0.0]}})
    body = {
        "name": "step",
        "inputs": [{"name": "t", "type": "i64[]"}, {"name": "cond_in", "type": "bool[]"},
                   {"name": "h", "type": "f32[N, %d]" % hidden}],
        "captures": [{"name": "x", "type": "f32[N, %d, %d]" % (steps, feats)},
                     {"name": "wx", "type": "f32[%d, %d]" % (feats, hidden)},
                     {"name": "wh", "type": "f32[%d, %d]" % (hidden, hidden)},
                     {"name": "bh", "type": "f32[%d]" % hidden}],
        "nodes": [
            {"op": "Gather", "name": "x_t", "inputs": ["x", "t"], "outputs": ["xt"], "attrs": {"axis": 1}},
            {"op": "MatMul", "name": "input_proj", "inputs": ["xt", "wx"], "outputs": ["xw"]},
            {"op": "MatMul", "name": "state_proj", "inputs": ["h", "wh"], "outputs": ["hw"]},
            {"op": "Add", "name": "sum", "inputs": ["xw", "hw"], "outputs": ["s"]},
            {"op": "Add", "name": "bias", "inputs": ["s", "bh"], "outputs": ["sb"]},
            {"op": "Tanh", "name": "tanh", "inputs": ["sb"], "outputs": ["h_next"]},
            {"op": "Identity", "name": "keep_going", "inputs": ["cond_in"], "outputs": ["cond_out"]},
        ],
        "outputs": ["cond_out", "h_next"],
    }
    b.nodes.append({"op": "Loop", "name": "rnn", "inputs": ["trips", "", "h0"], "outputs": ["h_last"],
                    "attrs": {"body": {"graph": body}}})
    logits = b.gemm("fc", "h_last", hidden, 2, "logits")
    b.write([logits])


def sequences():
    """samples/data/sequences.npz: 8 steps of 2 normal features; the label says whether feature
    0 summed over the steps exceeds feature 1 (an accumulator the RNN has to learn)."""
    rng = np.random.default_rng(SEED + 3)
    def split(n):
        x = rng.standard_normal((n, 8, 2)).astype(np.float32)
        y = (x[:, :, 0].sum(1) > x[:, :, 1].sum(1)).astype(np.int64)
        return x, y
    x, y = split(4096)
    xt, yt = split(1024)
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    np.savez(os.path.join(HERE, "data", "sequences.npz"), x=x, labels=y, x_test=xt, labels_test=yt)


if __name__ == "__main__":
    mlp()
    lenet()
    rnn()
    sequences()
