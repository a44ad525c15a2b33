#!/usr/bin/python3
"""Makes the second zoo: models as tools other than a plain PyTorch 1.13 export write them.

Every model of the first zoo (make_zoo.py) is a PyTorch export at opset 13 with fixed shapes. Users
bring models made otherwise: exports with dynamic axes, ONNX Runtime's float16 conversion, its
dynamic and static (QDQ) quantizers, paddle2onnx's weights as `Constant` nodes, a whole model inside
an `If`, nodes out of topological order, opset 17's LayerNormalization. ONNX Runtime's Python tools
are not in Debian, so this script writes the same transformations from ONNX's documented operators
(what each tool writes is said beside each function), on PyTorch exports made here with seeded,
calibrated weights (make_zoo.calibrate). The reference output of each model is ONNX Runtime's
(tests/zoo/check_wild.py runs onnxruntime-node), not PyTorch's: a transformed model means what ONNX
Runtime computes for it.

For each model NAME this writes into the output folder (default build/zoo/wild, never into git):
  NAME.onnx, NAME.<input>.npy (one per graph input), and the manifest models.json:
  {NAME: {"tool", "what", "inputs": [{"name", "file", "shape", "dtype"}], "tolerance"}}.

Usage: /usr/bin/python3 tests/zoo/make_wild.py [--out DIR] [--models a,b] [--force] [--list]
"""

import argparse
import json
import math
import os
import sys

os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"  # as make_zoo.py: OpenBLAS 0.3.21 does not know Zen 5

try:
    import numpy as np  # noqa: E402
    import torch  # noqa: E402
    from torch import nn  # noqa: E402
    import onnx  # noqa: E402
    from onnx import helper, numpy_helper, TensorProto  # noqa: E402
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"make_wild: {e.name or e} is missing: install python3-torch, python3-torchvision, "
          f"python3-onnx and python3-numpy (apt-get) and run with /usr/bin/python3", file=sys.stderr)
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_zoo  # noqa: E402  (the first zoo's architectures and calibration)

kSeed = 4321


# ---- exports ----

def export(model, spec, path, opset=13, dynamic_axes=None, output_names=("output",)):
    """A seeded, calibrated PyTorch export (make_zoo's weights) with optional dynamic axes."""
    make_zoo.calibrate(model, [(n, s, d) for n, s, d in spec])
    arrays = make_zoo.make_inputs(spec)
    tensors = tuple(torch.from_numpy(a) for a in arrays)
    torch.onnx.export(model, tensors, path, opset_version=opset,
                      input_names=[n for n, _, _ in spec], output_names=list(output_names),
                      dynamic_axes=dynamic_axes, do_constant_folding=True, **make_zoo.legacy_exporter())
    return onnx.load(path)


def base(name):
    """A first-zoo architecture with the first zoo's seeded weights."""
    torch.manual_seed(make_zoo.kSeed)
    family, make, spec, _ = make_zoo.kZoo[name]
    return make(), spec


# ---- what other tools write ----

def float_tensor_to_fp16(t):
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)


def to_float16(model):
    """ONNX Runtime's float16 converter (onnxconverter_common.float16.convert_float_to_float16 with
    keep_io_types=True): every float initializer, Constant and intermediate value becomes float16;
    Cast nodes to float become Cast to float16; the float graph inputs and outputs stay float32 with
    a Cast appended at the END of the node list (graph_input_cast_N / graph_output_cast_N), so the
    first nodes read values defined after them: the file is not topologically sorted."""
    g = model.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(float_tensor_to_fp16(t))
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(float_tensor_to_fp16(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
            if n.op_type == "ConstantOfShape" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(float_tensor_to_fp16(a.t))
    for vi in g.value_info:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    appended = []
    for k, inp in enumerate(g.input):
        if inp.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        cast_out = f"graph_input_cast_{k}"
        for n in g.node:
            for j, x in enumerate(n.input):
                if x == inp.name:
                    n.input[j] = cast_out
        appended.append(helper.make_node("Cast", [inp.name], [cast_out], name=f"graph_input_cast{k}",
                                         to=TensorProto.FLOAT16))
    for k, out in enumerate(g.output):
        if out.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        inner = f"graph_output_cast_{k}"
        for n in g.node:
            for j, x in enumerate(n.output):
                if x == out.name:
                    n.output[j] = inner
            for j, x in enumerate(n.input):
                if x == out.name:
                    n.input[j] = inner
        appended.append(helper.make_node("Cast", [inner], [out.name], name=f"graph_output_cast{k}",
                                         to=TensorProto.FLOAT))
    g.node.extend(appended)
    return model


def constant_nodes(model):
    """paddle2onnx's habit: every weight is a Constant node's value, not an initializer."""
    g = model.graph
    consts = [helper.make_node("Constant", [], [t.name], name=f"const_{i}", value=t)
              for i, t in enumerate(g.initializer)]
    del g.initializer[:]
    nodes = consts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    return model


def inside_if(model, condition):
    """A whole model inside an If (a voice-activity detector branches on its sample rate): the
    then-branch is the model, reading the outer graph's inputs and initializers as captures; the
    else-branch gives zeros, so a comparison proves the right branch ran. `condition` "input": a bool computed from an int64 input `sr`
    (sr == 16000); "constant": a Constant true."""
    g = model.graph
    out = g.output[0]
    then_g = helper.make_graph(list(g.node), "then_branch", [], [out])
    shape = [d.dim_value for d in out.type.tensor_type.shape.dim]
    zeros = numpy_helper.from_array(np.zeros(shape, np.float32), "else_zeros")
    else_g = helper.make_graph([helper.make_node("Constant", [], [out.name + "_else"], value=zeros)],
                               "else_branch", [], [helper.make_tensor_value_info(
                                   out.name + "_else", TensorProto.FLOAT, shape)])
    then_g.output[0].name = out.name
    nodes = []
    inputs = list(g.input)
    if condition == "input":
        inputs.append(helper.make_tensor_value_info("sr", TensorProto.INT64, [1]))
        nodes.append(helper.make_node("Constant", [], ["sr16k"],
                                      value=numpy_helper.from_array(np.array([16000], np.int64))))
        nodes.append(helper.make_node("Equal", ["sr", "sr16k"], ["is16k_v"]))
        nodes.append(helper.make_node("Squeeze", ["is16k_v"], ["is16k"],))
    else:
        nodes.append(helper.make_node("Constant", [], ["is16k"],
                                      value=numpy_helper.from_array(np.array(True))))
    nodes.append(helper.make_node("If", ["is16k"], [out.name], name="branch_on_rate",
                                  then_branch=then_g, else_branch=else_g))
    outer = helper.make_graph(nodes, g.name, inputs, [out], initializer=list(g.initializer))
    m = helper.make_model(outer, opset_imports=model.opset_import, producer_name="make_wild")
    m.ir_version = model.ir_version
    return m


def shuffled(model):
    """Nodes in reverse order (ONNX Runtime sorts what it reads; a hand-edited or merged file is not
    always sorted)."""
    g = model.graph
    nodes = list(g.node)[::-1]
    del g.node[:]
    g.node.extend(nodes)
    return model


def _const(g, name, array):
    g.initializer.append(numpy_helper.from_array(array, name))
    return name


def dynamic_quantize(model, op_types=("Conv", "MatMul", "Gemm")):
    """ONNX Runtime's dynamic quantizer (quantize_dynamic, per-tensor, weights int8 symmetric,
    activations uint8): for each Conv/MatMul/Gemm with a constant float weight,
      x -> DynamicQuantizeLinear -> (x_q u8, x_scale, x_zp)
      ConvInteger / MatMulInteger(x_q, W_q i8, x_zp, W_zp) -> int32 -> Cast float
      -> Mul (x_scale * W_scale) -> Add bias (Conv: bias reshaped to [C, 1, 1])
    Gemm becomes MatMulInteger on the transposed weight."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    new_nodes = []
    for n in g.node:
        w_name = n.input[1] if len(n.input) > 1 else None
        if n.op_type not in op_types or w_name not in inits or inits[w_name].data_type != TensorProto.FLOAT:
            new_nodes.append(n)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Gemm" and (attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0
                                    or attrs.get("beta", 1.0) != 1.0):
            new_nodes.append(n)
            continue
        w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
        if n.op_type == "Gemm" and attrs.get("transB", 0):
            w = w.T.copy()
        scale = max(float(np.abs(w).max()), 1e-8) / 127.0
        wq = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        p = n.name.replace("/", "_").strip("_") or f"node{len(new_nodes)}"
        x = n.input[0]
        new_nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [f"{p}_xq", f"{p}_xs", f"{p}_xz"],
                                          name=f"{p}_quant"))
        wq_name = _const(g, f"{p}_Wq", wq)
        wz_name = _const(g, f"{p}_Wz", np.array(0, np.int8))
        ws_name = _const(g, f"{p}_Ws", np.array(scale, np.float32))
        if n.op_type == "Conv":
            conv_attrs = {k: v for k, v in attrs.items()}
            new_nodes.append(helper.make_node("ConvInteger", [f"{p}_xq", wq_name, f"{p}_xz", wz_name],
                                              [f"{p}_acc"], name=f"{p}_ConvInteger", **conv_attrs))
        else:
            new_nodes.append(helper.make_node("MatMulInteger", [f"{p}_xq", wq_name, f"{p}_xz", wz_name],
                                              [f"{p}_acc"], name=f"{p}_MatMulInteger"))
        new_nodes.append(helper.make_node("Cast", [f"{p}_acc"], [f"{p}_accf"], to=TensorProto.FLOAT,
                                          name=f"{p}_cast"))
        new_nodes.append(helper.make_node("Mul", [f"{p}_xs", ws_name], [f"{p}_s"], name=f"{p}_scale"))
        bias = n.input[2] if len(n.input) > 2 and n.input[2] else None
        y = n.output[0]
        new_nodes.append(helper.make_node("Mul", [f"{p}_accf", f"{p}_s"], [f"{p}_y" if bias else y],
                                          name=f"{p}_rescale"))
        if bias:
            b = numpy_helper.to_array(inits[bias]).astype(np.float32)
            if n.op_type == "Conv":
                b = b.reshape((-1,) + (1,) * (len(w.shape) - 2))
            b_name = _const(g, f"{p}_bias", b)
            new_nodes.append(helper.make_node("Add", [f"{p}_y", b_name], [y], name=f"{p}_bias_add"))
    del g.node[:]
    g.node.extend(new_nodes)
    used = {x for n in g.node for x in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


def qdq_quantize(model, calib):
    """ONNX Runtime's static quantizer in QDQ format (quantize_static, QuantFormat.QDQ, per-channel
    int8 weights, uint8 activations): each Conv's input and weight go through QuantizeLinear ->
    DequantizeLinear; activation scales from min-max over calibration activations `calib` (a dict
    name -> (min, max) of the float model)."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    new_nodes = []
    for n in g.node:
        if n.op_type != "Conv" or n.input[1] not in inits:
            new_nodes.append(n)
            continue
        p = n.name.replace("/", "_").strip("_")
        x = n.input[0]
        lo, hi = calib[x]
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        s = max(hi - lo, 1e-8) / 255.0
        z = int(np.clip(np.rint(-lo / s), 0, 255))
        xs, xz = _const(g, f"{p}_xs", np.array(s, np.float32)), _const(g, f"{p}_xz", np.array(z, np.uint8))
        new_nodes.append(helper.make_node("QuantizeLinear", [x, xs, xz], [f"{p}_xq"], name=f"{p}_xQ"))
        new_nodes.append(helper.make_node("DequantizeLinear", [f"{p}_xq", xs, xz], [f"{p}_xdq"], name=f"{p}_xDQ"))
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        ws = np.maximum(np.abs(w).reshape(w.shape[0], -1).max(axis=1), 1e-8) / 127.0
        wq = np.clip(np.rint(w / ws.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
        wq_name = _const(g, f"{p}_Wq", wq)
        ws_name = _const(g, f"{p}_Ws", ws.astype(np.float32))
        wz_name = _const(g, f"{p}_Wz", np.zeros(w.shape[0], np.int8))
        new_nodes.append(helper.make_node("DequantizeLinear", [wq_name, ws_name, wz_name], [f"{p}_Wdq"],
                                          name=f"{p}_WDQ", axis=0))
        inputs = [f"{p}_xdq", f"{p}_Wdq"] + list(n.input[2:])
        new_nodes.append(helper.make_node("Conv", inputs, list(n.output), name=n.name,
                                          **{a.name: helper.get_attribute_value(a) for a in n.attribute}))
    del g.node[:]
    g.node.extend(new_nodes)
    used = {x for n in g.node for x in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


# ---- a decoder with a KV cache ----

class GptKv(nn.Module):
    """A GPT-style decoder exported as generation tools export one (past_key_values in, present
    out): input_ids [1, S] and, per layer, past key and value [1, H, P, D/H]; outputs logits
    [1, S, vocab] and the presents [1, H, P + S, D/H]. Positions continue from P; the causal mask
    lets position P + i see the cache and the new tokens up to itself."""

    def __init__(self, d=256, heads=4, layers=2, max_positions=1024):
        super().__init__()
        self.d, self.heads, self.layers = d, heads, layers
        self.tokens, self.positions = nn.Embedding(make_zoo.kVocab, d), nn.Embedding(max_positions, d)
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
                                 for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, make_zoo.kVocab, bias=False)

    def forward(self, input_ids, *past):
        b, s = input_ids.shape
        p = past[0].shape[2]
        dk = self.d // self.heads
        pos = torch.arange(p, p + s).unsqueeze(0)
        x = self.tokens(input_ids) + self.positions(pos)
        query_at = torch.arange(p, p + s).unsqueeze(1)
        key_at = torch.arange(p + s).unsqueeze(0)
        blocked = key_at > query_at
        presents = []
        for i in range(self.layers):
            q, k, v = self.qkv[i](self.ln1[i](x)).split(self.d, dim=2)
            q, k, v = (t.reshape(b, s, self.heads, dk).transpose(1, 2) for t in (q, k, v))
            k = torch.cat([past[2 * i], k], dim=2)
            v = torch.cat([past[2 * i + 1], v], dim=2)
            presents += [k, v]
            att = (q @ k.transpose(2, 3)) / math.sqrt(dk)
            att = att.masked_fill(blocked, float("-inf")).softmax(dim=-1)
            x = x + self.proj[i]((att @ v).transpose(1, 2).reshape(b, s, self.d))
            x = x + self.mlp[i](self.ln2[i](x))
        return (self.head(self.norm(x)),) + tuple(presents)


def make_gpt_kv(path):
    torch.manual_seed(make_zoo.kSeed)
    model = GptKv().eval()
    heads, dk, layers = model.heads, model.d // model.heads, model.layers
    spec = [("input_ids", (1, 3), "int64")] + [(f"past_key_values.{i}.{kv}", (1, heads, 7, dk), "float32")
                                               for i in range(layers) for kv in ("key", "value")]
    arrays = make_zoo.make_inputs(spec)
    names = [n for n, _, _ in spec]
    outputs = ["logits"] + [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    axes = {"input_ids": {1: "sequence"}, "logits": {1: "sequence"}}
    for n in names[1:]:
        axes[n] = {2: "past_sequence"}
    for n in outputs[1:]:
        axes[n] = {2: "total_sequence"}
    torch.onnx.export(model, tuple(torch.from_numpy(a) for a in arrays), path, opset_version=13, input_names=names,
                      output_names=outputs, dynamic_axes=axes, do_constant_folding=True, **make_zoo.legacy_exporter())
    return onnx.load(path), [(n, sh, d) for n, sh, d in spec]


# ---- the table ----

def image_spec(size=224, batch=1, name="input"):
    return [(name, (batch, 3, size, size), "float32")]


def make_dynamic_resnet(path):
    model, _ = base("resnet18")
    spec = image_spec(160)
    return export(model, spec, path, dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"},
                                                   "output": {0: "batch"}}), \
        [("input", (2, 3, 176, 208), "float32")]


def make_dynamic_bert(path):
    model, _ = base("bert")
    spec = [("input_ids", (1, 128), "int64"), ("attention_mask", (1, 128), "int64")]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            "output": {0: "batch"}}
    return export(model, spec, path, dynamic_axes=axes), \
        [("input_ids", (2, 77), "int64"), ("attention_mask", (2, 77), "int64")]


def make_opset17_transformer(path):
    model, spec = base("transformer")
    return export(model, spec, path, opset=17), spec


def transformed(name, transform, extra_inputs=()):
    """A maker: the first-zoo model `name` exported, then rewritten by `transform` (as another
    tool writes it), with `extra_inputs` appended to its inputs."""
    def make(path):
        model, spec = base(name)
        return transform(export(model, spec, path)), spec + list(extra_inputs)
    return make


def make_qdq(name):
    def make(path):
        model, spec = base(name)
        make_zoo.calibrate(model, spec)
        ranges = []  # (min, max) of each Conv's input, in call order

        def hook(_module, inputs, _output):
            x = inputs[0].detach()
            ranges.append((float(x.min()), float(x.max())))
        handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Conv2d)]
        with torch.no_grad():
            model(*(torch.from_numpy(a) for a in make_zoo.make_inputs(spec)))
        for h in handles:
            h.remove()
        m = export(model, spec, path)
        # The trace writes the Convs in the order they ran: the hooks' order.
        convs = [n for n in m.graph.node if n.op_type == "Conv"]
        if len(convs) != len(ranges):
            raise RuntimeError(f"{len(convs)} Conv nodes but {len(ranges)} calibrated Conv calls")
        by_node = {n.input[0]: r for n, r in zip(convs, ranges)}
        return qdq_quantize(m, by_node), spec
    return make


# name: (tool, what it exercises, maker, relative tolerance against ONNX Runtime). The QDQ model's
# tolerance is one quantization step: float32 Convs that differ by 3e-6 (oneDNN's summation order
# against ONNX Runtime's) round a handful of the next QuantizeLinear's values to the neighbouring
# uint8, a step of 1/255 of the range, and 20 layers carry that to 5e-3 of the output (measured
# layer by layer; the reference kernels are 1e-2 from ONNX Runtime the same way).
kWild = {
    "resnet18_dynamic": ("PyTorch, dynamic_axes", "batch, height and width known only at run time; run at 2x3x176x208",
                         make_dynamic_resnet, 1e-4),
    "bert_dynamic": ("PyTorch, dynamic_axes", "batch and sequence known only at run time; run at 2x77",
                     make_dynamic_bert, 1e-4),
    "transformer_opset17": ("PyTorch, opset 17", "LayerNormalization as one op", make_opset17_transformer, 1e-4),
    "mobilenetv2_fp16": ("ONNX Runtime float16 converter", "float16 weights and values, float32 I/O, unsorted Casts",
                         transformed("mobilenetv2", to_float16), 1e-2),
    "bert_fp16": ("ONNX Runtime float16 converter", "float16 transformer with a padding mask",
                  transformed("bert", to_float16), 1e-2),
    "resnet18_dynq": ("ONNX Runtime dynamic quantizer", "DynamicQuantizeLinear + ConvInteger/MatMulInteger",
                      transformed("resnet18", dynamic_quantize), 1e-3),
    "bert_dynq": ("ONNX Runtime dynamic quantizer", "DynamicQuantizeLinear + MatMulInteger",
                  transformed("bert", dynamic_quantize), 1e-3),
    "resnet18_qdq": ("ONNX Runtime static quantizer (QDQ)", "per-channel int8 weights, uint8 activations",
                     make_qdq("resnet18"), 1e-2),
    "mobilenetv2_constants": ("paddle2onnx style", "every weight a Constant node", transformed("mobilenetv2", constant_nodes), 1e-4),
    "squeezenet_if": ("voice-activity style", "the whole model inside an If on an input (sr == 16000)",
                      transformed("squeezenet", lambda m: inside_if(m, "input"), [("sr", (1,), "sr")]), 1e-4),
    "squeezenet_if_const": ("exporter of a traced branch", "the whole model inside an If on a constant",
                            transformed("squeezenet", lambda m: inside_if(m, "constant")), 1e-4),
    "gpt_unsorted": ("hand-merged file", "nodes in reverse topological order", transformed("gpt", shuffled), 1e-4),
    "gpt_kv": ("PyTorch, past_key_values", "a decoder with a KV cache: 3 new tokens after 7 cached (tessera generate)",
               make_gpt_kv, 1e-4),
}


def make_feeds(spec):
    rng = np.random.RandomState(kSeed)
    arrays = []
    for name, shape, dtype in spec:
        if dtype == "sr":
            arrays.append(np.array([16000], np.int64))
        elif name == "attention_mask":
            a = np.ones(shape, np.int64)
            a[..., shape[-1] * 3 // 4:] = 0
            arrays.append(a)
        elif dtype == "int64":
            arrays.append(rng.randint(0, make_zoo.kVocab, size=shape).astype(np.int64))
        else:
            arrays.append(rng.standard_normal(shape).astype(np.float32))
    return arrays


def make_one(name, out_dir, force):
    tool, what, maker, tol = kWild[name]
    path = os.path.join(out_dir, name + ".onnx")
    if force or not os.path.exists(path):
        tmp = path + ".part"
        model, spec = maker(tmp)
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:
            if "topologically sorted" not in str(e):  # unsorted is what some models are made to be
                raise
        onnx.save(model, tmp)
        feeds = make_feeds(spec)
        for (n, _, _), a in zip(spec, feeds):
            np.save(os.path.join(out_dir, f"{name}.{n}.npy"), a)
        os.replace(tmp, path)
        print(f"make_wild: {name}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    else:
        print(f"make_wild: {name}: up to date", flush=True)
    m = onnx.load(path, load_external_data=False)
    inputs = [{"name": i.name, "file": f"{name}.{i.name}.npy"} for i in m.graph.input]
    return {"tool": tool, "what": what, "tolerance": tol, "inputs": inputs,
            "outputs": [o.name for o in m.graph.output]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/zoo/wild")
    parser.add_argument("--models", default=",".join(kWild))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for name, (tool, what, _, tol) in kWild.items():
            print(f"{name:24} {tool:36} {what} (rtol {tol})")
        return 0
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in kWild]
    if unknown:
        print(f"make_wild: unknown model(s) {', '.join(unknown)}; known: {', '.join(kWild)}", file=sys.stderr)
        return 2
    torch.set_num_threads(2)
    os.makedirs(args.out, exist_ok=True)
    import warnings
    warnings.filterwarnings("ignore")
    return make_zoo.make_all(names, args.out, lambda name: make_one(name, args.out, args.force), "make_wild")


if __name__ == "__main__":
    sys.exit(main())
