#!/usr/bin/python3
"""Writes the sample networks: samples/mlp.json + mlp.npz, lenet.json + lenet.npz, rnn.json + rnn.npz, lstm.json,
resnet18.json and charlm.json (weights drawn at load), and their data in samples/data.

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

    def init(self, name, shape, bound=None, constant=None):
        """A param drawn when the graph loads (formats/README.md, "init"): uniform in [-bound, bound)
        from its own seed, or a constant. Nothing goes to the side file."""
        entry = {"name": name, "type": type_str(shape)}
        if bound is not None:
            entry["init"] = {"uniform": float(np.float32(bound)), "seed": SEED * 1000 + len(self.params)}
        else:
            entry["init"] = {"constant": constant}
        self.params.append(entry)
        return name

    def ints(self, name, values):
        """An i64 param (shapes, indices): not trained (only float params are)."""
        self.params.append({"name": name, "type": "i64[%d]" % len(values), "data": list(values)})
        return name

    def constant(self, name, value, output):
        return self.node("Constant", name, [], output, value={"tensor": {"type": "f32[]", "data": [value]}})

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
        if not self.weights:
            del graph["weights_file"]
        with open(os.path.join(HERE, self.name + ".json"), "w") as f:
            f.write(pretty(graph) + "\n")
        if self.weights:
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


def lstm():
    """The sequence task of rnn.json with ONNX's LSTM op: x [N, 8, 2] -> Transpose to time-major
    [8, N, 2] (as PyTorch exports batch_first; ONNX Runtime refuses LSTM's layout 1) -> LSTM of 32
    units -> its last hidden state [1, N, 32] -> Squeeze -> Gemm 32x2 -> logits. PyTorch's
    initialisation (uniform in +-1/sqrt(hidden)), drawn at load."""
    b = Builder("lstm", SEED + 6)
    steps, feats, hidden = 8, 2, 32
    x = b.input("x", "f32[N, %d, %d]" % (steps, feats))
    bound = 1.0 / np.sqrt(hidden)
    w = b.init("lstm.W", (1, 4 * hidden, feats), bound=bound)
    r = b.init("lstm.R", (1, 4 * hidden, hidden), bound=bound)
    bias = b.init("lstm.B", (1, 8 * hidden), bound=bound)
    xt = b.node("Transpose", "time_major", [x], "xt", perm=[1, 0, 2])
    b.nodes.append({"op": "LSTM", "name": "lstm", "inputs": [xt, w, r, bias], "outputs": ["y", "h_last"],
                    "attrs": {"hidden_size": hidden}})
    axes = b.ints("squeeze.axes", [0])
    h = b.node("Squeeze", "squeeze", ["h_last", axes], "h")
    fc_w = b.init("fc.w", (hidden, 2), bound=bound)
    fc_b = b.init("fc.b", (2,), bound=bound)
    logits = b.node("Gemm", "fc", [h, fc_w, fc_b], "logits")
    b.write([logits])


def resnet18():
    """ResNet-18 in the CIFAR style (3x3 stem, no max-pool; He et al. 2016, section 4.2 widths
    64-128-256-512) for Fashion-MNIST padded to 32x32 in the graph, with batch normalisation.
    Weights are drawn at load (He-uniform convolutions, PyTorch's default for the classifier)."""
    b = Builder("resnet18", SEED + 4)
    x = b.input("x", "f32[N, 1, 28, 28]")
    b.ints("pad.pads", [0, 0, 2, 2, 0, 0, 2, 2])
    h = b.node("Pad", "pad", [x, "pad.pads"], "x32")                  # [N, 1, 32, 32]

    def conv_bn(name, x, cin, cout, k, stride, relu, output):
        w = b.init(name + ".w", (cout, cin, k, k), bound=np.sqrt(6.0 / (cin * k * k)))
        p = k // 2
        c = b.node("Conv", name, [x, w], name + ".out", kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p])
        bn = name.replace("conv", "bn")
        ins = [c, b.init(bn + ".scale", (cout,), constant=1.0), b.init(bn + ".bias", (cout,), constant=0.0),
               b.init(bn + ".mean", (cout,), constant=0.0), b.init(bn + ".var", (cout,), constant=1.0)]
        y = b.node("BatchNormalization", bn, ins, output if not relu else bn + ".out", epsilon=1e-5, momentum=0.9)
        return b.node("Relu", name.replace("conv", "relu"), [y], output) if relu else y

    h = conv_bn("conv1", h, 1, 64, 3, 1, True, "stem")
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            p = "layer%d.%d." % (stage, block)
            y = conv_bn(p + "conv1", h, cin, cout, 3, stride, True, p + "a")
            y = conv_bn(p + "conv2", y, cout, cout, 3, 1, False, p + "b")
            short = conv_bn(p + "downsample.conv", h, cin, cout, 1, stride, False, p + "short") if stride != 1 or cin != cout else h
            s = b.node("Add", p + "add", [y, short], p + "sum")
            h = b.node("Relu", p + "relu", [s], p + "out")
            cin = cout
    g = b.node("GlobalAveragePool", "pool", [h], "pooled")              # [N, 512, 1, 1]
    f = b.node("Flatten", "flatten", [g], "features", axis=1)
    w = b.init("fc.w", (512, 10), bound=1.0 / np.sqrt(512))
    bias = b.init("fc.b", (10,), bound=1.0 / np.sqrt(512))
    logits = b.node("Gemm", "fc", [f, w, bias], "logits")
    b.write([logits])


def charlm(seq=64, vocab=128, d=128, heads=4, layers=2, ff=512):
    """A character-level transformer language model (GPT-style pre-norm blocks, causal attention,
    exact GELU): byte ids [N, 64] in, the mean next-byte cross-entropy out (train it with --loss
    output). Trained on samples/data/chars.npz."""
    b = Builder("charlm", SEED + 5)
    ids = b.input("x", "i64[N, %d]" % seq)
    targets = b.input("labels", "i64[N, %d]" % seq)
    emb = b.init("embed", (vocab, d), bound=1.0)
    pos = b.init("pos", (seq, d), bound=0.1)
    h = b.node("Gather", "embed", [emb, ids], "tok", axis=0)            # [N, T, d]
    h = b.node("Add", "add_pos", [h, pos], "h0")
    b.ints("heads_shape", [0, seq, heads, d // heads])
    b.ints("model_shape", [0, seq, d])
    b.ints("mask_shape", [seq, seq])
    b.node("ConstantOfShape", "mask_fill", ["mask_shape"], "mask_fill", value={"tensor": {"type": "f32[1]", "data": [-1e9]}})
    b.params.append({"name": "one", "type": "i64[]", "data": [1]})
    mask = b.node("Trilu", "causal_mask", ["mask_fill", "one"], "mask", upper=1)   # -1e9 above the diagonal
    scale = b.constant("attn_scale", float(np.float32(1.0 / np.sqrt(d // heads))), "scale")

    def linear(name, x, fin, fout, output):
        w = b.init(name + ".w", (fin, fout), bound=1.0 / np.sqrt(fin))
        bias = b.init(name + ".b", (fout,), bound=1.0 / np.sqrt(fin))
        m = b.node("MatMul", name, [x, w], name + ".mm")
        return b.node("Add", name + ".bias", [m, bias], output)

    def norm(name, x, output):
        return b.node("LayerNormalization", name, [x, b.init(name + ".g", (d,), constant=1.0), b.init(name + ".b", (d,), constant=0.0)],
                      output, axis=-1, epsilon=1e-5)

    for l in range(layers):
        p = "block%d." % l
        a = norm(p + "ln1", h, p + "a")
        def heads_of(name, perm):
            y = linear(p + name, a, d, d, p + name + ".y")
            y = b.node("Reshape", p + name + ".split", [y, "heads_shape"], p + name + ".heads")
            return b.node("Transpose", p + name + ".t", [y], p + name + ".bhtd", perm=perm)
        q = heads_of("q", [0, 2, 1, 3])                                   # [N, h, T, dh]
        k = heads_of("k", [0, 2, 3, 1])                                   # [N, h, dh, T]
        v = heads_of("v", [0, 2, 1, 3])
        s = b.node("MatMul", p + "scores", [q, k], p + "s")
        s = b.node("Mul", p + "scaled", [s, scale], p + "s_scaled")
        s = b.node("Add", p + "masked", [s, mask], p + "s_masked")
        att = b.node("Softmax", p + "softmax", [s], p + "att", axis=-1)
        o = b.node("MatMul", p + "mix", [att, v], p + "o")               # [N, h, T, dh]
        o = b.node("Transpose", p + "merge", [o], p + "o_t", perm=[0, 2, 1, 3])
        o = b.node("Reshape", p + "concat", [o, "model_shape"], p + "o_cat")
        o = linear(p + "proj", o, d, d, p + "attn_out")
        h = b.node("Add", p + "residual1", [h, o], p + "h1")
        f = norm(p + "ln2", h, p + "f_in")
        f = linear(p + "fc1", f, d, ff, p + "f1")
        f = b.node("Gelu", p + "gelu", [f], p + "f_act")
        f = linear(p + "fc2", f, ff, d, p + "f2")
        h = b.node("Add", p + "residual2", [h, f], p + "h2")
    h = norm("ln_f", h, "h_final")
    logits = linear("head", h, d, vocab, "logits")                       # [N, T, V]
    scores = b.node("Transpose", "classes_first", [logits], "scores", perm=[0, 2, 1])   # [N, V, T]
    loss = b.node("SoftmaxCrossEntropyLoss", "loss", [scores, targets], "loss")
    b.write([loss])


def chars(seq=64):
    """samples/data/chars.npz: windows of 65 bytes of the licence texts Debian ships in every
    installation (/usr/share/common-licenses, package base-files), x = bytes 0..63 and labels =
    bytes 1..64 of each window, as int32 (the loader reads integer x as token ids); bytes above 127
    become '?'. The last tenth is the test split."""
    root = "/usr/share/common-licenses"
    text = b"".join(open(os.path.join(root, n), "rb").read() for n in sorted(os.listdir(root))
                    if os.path.isfile(os.path.join(root, n)) and not os.path.islink(os.path.join(root, n)))
    data = np.frombuffer(text, dtype=np.uint8).copy()
    data = data.astype(np.int32)
    data[data > 127] = ord("?")
    n = (len(data) - 1) // seq
    x = data[:n * seq].reshape(n, seq)
    y = data[1:n * seq + 1].reshape(n, seq)
    cut = n - n // 10
    np.savez_compressed(os.path.join(HERE, "data", "chars.npz"), x=x[:cut], labels=y[:cut], x_test=x[cut:], labels_test=y[cut:])


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
    lstm()
    sequences()
    resnet18()
    charlm()
    chars()
