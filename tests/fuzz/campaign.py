#!/usr/bin/python3
"""A hostile-input campaign: structure-aware mutants of real ONNX models through the CLI.

Each mutant is a real model (ONNX's backend-test models from libonnx-testdata, and the PyTorch
exports of tests/zoo/make_zoo.py when build/zoo has them, those under 20 MB) changed by one
mutation family (--mutations; `all` takes them in turn, mutant i from family i mod 3):

structure  one to three structural mutations (dims, dtypes, ranks, attributes, names, node order,
           duplicated outputs, opsets, op types, initializer data, nested graphs), run through
             tessera info M;  tessera run M --seed 1;  tessera convert M M.tsr;  tessera run M.tsr --seed 1
numerics   (seeds without random ops: Bernoulli, Dropout, Multinomial, Random*)
           special values in float tensors (f32, f64, f16): NaN, +inf, -inf, huge finite values
           (+-3e38 in f32; +-1.7e308 in f64, +-65504 in f16) or denormals (+-1e-40 in f32; 1e-310,
           1e-7), from one palette per mutant: {NaN}, {+inf}, {-inf}, {+inf, -inf}, {NaN, +inf,
           -inf}, {huge}, {denormal} or {huge, denormal} (huge values never share a mutant with NaN
           or an infinity), at one position, five, a quarter or all of a tensor. They go into one to
           three float initializers or Constant/attribute tensors (re-encoded as raw_data or as
           float_data / double_data / int32_data) with random inputs drawn by `run`, or into a .npy
           per graph input (ONNX's own test inputs, or the zoo's, where the seed has them, so that
           index inputs stay valid; random normal values for float inputs otherwise; non-float
           inputs without test data are left to `run`), fed with -i NAME=FILE.npy, or both. Run as
             tessera info M
             tessera run M [-i ...] --seed 1 -t 1 -o compiled --no-record
             tessera run M --reference [-i ...] --seed 1 -t 1 -o reference --no-record
             tessera convert M M.tsr;  tessera run M.tsr [-i ...] --seed 1 -t 1 -o tsr --no-record
           and the outputs compared with numpy (below).
sizes      one size that overflows, in an attribute or in the constant (or fed .npy) input that
           holds it, on a seed that has the op: Resize/Upsample scales 1e9 (1e20, 3e38), Resize sizes
           2^31 .. 2^63-1, Pad pads 2^31 / 2^62 / -2^62 / 2^63-1 (input, or attribute before opset
           11), Conv/ConvTranspose/MaxPool/AveragePool/LpPool pads, strides, dilations, kernel_shape
           (output_padding, output_shape) 2^31 .. 2^63-1, Tile repeats 2^31, Expand shape [2^31,
           2^31], ConstantOfShape shape [2^40, 2^40], Reshape to huge shapes, Range with a huge
           limit, a tiny delta, or limit - start overflowing; half the time the graph's declared
           shapes are dropped (value_info removed, the outputs' dims made symbolic, rank kept) so
           that the op's own arithmetic is reached.
           Same commands as numerics but without -o and the reference run. Expected: a clean
           error within the time limit and without a blow-up.
Each command runs under a 20 s limit and an 8 GB address-space limit. Per mutant, the worst
outcome over its commands is counted, worst first:
  crash     killed by a signal, or an exit code other than 0, 1 or 2, or an error without a message
  hang      still running after 20 s, twice in a row
  blow-up   peak memory (max RSS) over 2 GB
  silent numerics (numerics only)  the compiled and the reference run both exit 0, yet a float
            output differs between them: NaN in one and not in the other at some position, or
            infinities of opposite signs, or the output is missing, of another shape or of another
            dtype on one side; likewise the .tsr run against the compiled .onnx run (same
            executor: nothing is exempt there). Finite values are not compared (inf against a
            finite value is not counted). When the graph has a Conv, the compiled run is repeated
            with TESSERA_CONV_ALGO=direct (oneDNN's Winograd off); a difference that this run does
            not have stays a finding, marked "gone with TESSERA_CONV_ALGO=direct: Winograd" and
            counted on a line under the table: Winograd's inf - inf = NaN spreads over the whole
            4x4 output tile, so it also gives NaN where the direct sum is finite, which is more
            than the documented difference below. Two documented differences are exempt and
            counted apart, not as findings:
    exempt (inf to NaN)  every differing position has NaN in the compiled output and +inf or -inf
            in the reference, and the mutant's palette held an infinity (Winograd's transforms
            and other summation orders make inf - inf = NaN where the direct sum gives inf);
    exempt (overflow)    the palette was finite-only with huge values in it ({huge} or {huge,
            denormal}: no NaN or infinity was put in) and the graph (nested graphs included) has
            a Conv, ConvTranspose, Gemm or MatMul: finite inputs whose products or sums overflow
            give inf or NaN depending on the summation order. Any difference qualifies then,
            including one from another op of that graph.
  silent    ONNX's checker (onnx.checker.check_model, full_check) refuses the mutant, its seed
            passes the checker, yet `info` or `run` exits 0
  clean     an error (exit 1 or 2) with a message
  success   every command exits 0 and the checker accepts the model
Notes counted on lines under the table, not as outcomes: errors (exit 1 or 2) whose message
names no file (neither the model, a fed .npy nor an output), numerics mutants whose compiled and
reference runs disagree on success (one exits 0, the other 1), and the silent numerics that go
away with direct convolutions.
Usage:
  /usr/bin/python3 tests/fuzz/campaign.py --tessera build/release/cli/tessera [--count 5000]
      [--mutations structure|numerics|sizes|all] [--seed 1] [--jobs 2] [--out build/campaign]
Prints the table and writes every finding (crash, hang, blow-up, silent, silent numerics) to
OUT/findings: NNNNN-OUTCOME.onnx, NNNNN-OUTCOME.onnx.txt (seed, mutations, detail and the commands
that reproduce it) and, for fed inputs and numerics, NNNNN-OUTCOME.d/ (inputs/, and the compiled/,
reference/ and tsr/ outputs). Exempt numerics go to OUT/exempt.jsonl, and every mutant's outcome
to OUT/results.jsonl, one line each.
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import os
import random
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

LIMIT_S = 20
BLOWUP_KB = 2 * 1024 * 1024
EXTREME_INTS = [0, -1, 1, 2, 3, 7, 13, 64, 65, 2**31 - 1, 2**31, 2**32, 2**62, -2**62, 2**63 - 1, -2**63]
OPS = ["Relu", "Conv", "Gemm", "MatMul", "Add", "Reshape", "Transpose", "Concat", "Slice", "Gather", "Pad",
       "MaxPool", "AveragePool", "Softmax", "BatchNormalization", "ConvTranspose", "Resize", "Split", "Expand",
       "If", "Loop", "Scan", "LSTM", "NonZero", "TopK", "Unique", "Einsum", "Where", "Tile", "Range",
       "ConstantOfShape", "ReduceSum", "Cast", "Identity", "Flatten", "Squeeze", "Unsqueeze", "NoSuchOp"]
BAD_NAMES = ["", "x", "\x00nul", "new\nline", "\xff\xfe", "../../etc/passwd", "a" * 5000, "%1", "é"]


def graphs_of(graph):
    """The graph and every graph nested in its nodes' attributes."""
    out = [graph]
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out += graphs_of(a.g)
            for g in a.graphs:
                out += graphs_of(g)
    return out


def value_infos(graph):
    return list(graph.input) + list(graph.output) + list(graph.value_info)


def mutate_dim(rng, model):
    vis = [vi for g in graphs_of(model.graph) for vi in value_infos(g) if vi.type.HasField("tensor_type")]
    if not vis:
        return False
    shape = rng.choice(vis).type.tensor_type.shape
    choice = rng.random()
    if choice < 0.15 or not shape.dim:
        for _ in range(rng.choice([1, 5, 13, 70])):
            shape.dim.add().dim_value = rng.choice([1, 2])
    elif choice < 0.25:
        del shape.dim[rng.randrange(len(shape.dim))]
    elif choice < 0.4:
        shape.dim[rng.randrange(len(shape.dim))].dim_param = rng.choice(["N", "", "\xff", "N M"])
    else:
        shape.dim[rng.randrange(len(shape.dim))].dim_value = rng.choice(EXTREME_INTS)
    return True


def mutate_dtype(rng, model):
    g = model.graph
    targets = [vi.type.tensor_type for vi in value_infos(g) if vi.type.HasField("tensor_type")]
    if g.initializer and rng.random() < 0.5:
        rng.choice(g.initializer).data_type = rng.randrange(0, 20)
        return True
    if not targets:
        return False
    rng.choice(targets).elem_type = rng.randrange(0, 20)
    return True


def mutate_initializer(rng, model):
    inits = [t for g in graphs_of(model.graph) for t in g.initializer]
    for node in model.graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                inits.append(a.t)
    if not inits:
        return False
    t = rng.choice(inits)
    choice = rng.random()
    if choice < 0.2:
        t.dims.append(rng.choice([0, 1, 2, 2**31, 2**40]))
    elif choice < 0.35 and t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice(EXTREME_INTS)
    elif choice < 0.5 and t.raw_data:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)]
    elif choice < 0.6:
        t.float_data.extend([1.0, float("nan")])
    elif choice < 0.7:
        while len(t.dims) < 20:
            t.dims.append(1)
    elif choice < 0.8:
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", rng.choice(["../../../etc/passwd", "missing.bin", "/dev/zero", ""])
    else:
        t.name = rng.choice([t.name + "_renamed"] + BAD_NAMES)
    return True


def mutate_attribute(rng, model):
    nodes = [n for g in graphs_of(model.graph) for n in g.node if n.attribute]
    if not nodes:
        return False
    node = rng.choice(nodes)
    a = rng.choice(node.attribute)
    choice = rng.random()
    if choice < 0.1:
        node.attribute.remove(a)
    elif a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(EXTREME_INTS)
    elif a.type == onnx.AttributeProto.INTS:
        if a.ints and rng.random() < 0.7:
            a.ints[rng.randrange(len(a.ints))] = rng.choice(EXTREME_INTS)
        else:
            a.ints.extend([rng.choice(EXTREME_INTS)] * rng.choice([1, 3, 70]))
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"\xff\xfe", b"NOTSET", b"nonsense", b"x" * 1000])
    else:
        a.type = rng.randrange(0, 15)
    return True


def mutate_names(rng, model):
    g = rng.choice(graphs_of(model.graph))
    if not g.node:
        return False
    node = rng.choice(g.node)
    choice = rng.random()
    outputs = [o for n in g.node for o in n.output]
    if choice < 0.3 and node.output and outputs:
        node.output[rng.randrange(len(node.output))] = rng.choice(outputs)  # duplicated definition
    elif choice < 0.55 and node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(BAD_NAMES + ["undefined_value"])
    elif choice < 0.7 and node.output:
        node.output[rng.randrange(len(node.output))] = rng.choice(BAD_NAMES)
    elif choice < 0.85:
        node.input.append(rng.choice(outputs + [""]))
    else:
        if g.output:
            g.output[rng.randrange(len(g.output))].name = rng.choice(BAD_NAMES + outputs)
    return True


def mutate_nodes(rng, model):
    g = rng.choice(graphs_of(model.graph))
    if not g.node:
        return False
    choice = rng.random()
    i = rng.randrange(len(g.node))
    if choice < 0.3 and len(g.node) > 1:
        j = rng.randrange(len(g.node))
        a, b = copy.deepcopy(g.node[i]), copy.deepcopy(g.node[j])
        g.node[i].CopyFrom(b)
        g.node[j].CopyFrom(a)
    elif choice < 0.5:
        del g.node[i]
    elif choice < 0.7:
        g.node.append(copy.deepcopy(g.node[i]))
    elif choice < 0.9:
        g.node[i].op_type = rng.choice(OPS)
    else:
        g.node[i].domain = rng.choice(["ai.onnx.ml", "com.microsoft", "nonsense"])
    return True


def mutate_opset(rng, model):
    if not model.opset_import or rng.random() < 0.1:
        op = model.opset_import.add()
        op.domain, op.version = "", rng.choice([1, 7, 13, 30])
        return True
    op = rng.choice(model.opset_import)
    if rng.random() < 0.8:
        op.version = rng.choice([0, 1, 3, 6, 7, 9, 11, 13, 17, 18, 19, 25, 1000, -1])
    else:
        op.domain = rng.choice(["nonsense", "ai.onnx"])
    model.ir_version = rng.choice([model.ir_version, 0, 3, 8, 100])
    return True


def mutate_nesting(rng, model):
    """Wraps the graph's first node in an If whose branches hold it (or nests an If deeply)."""
    g = model.graph
    if not g.node or not g.input:
        return False
    inner = copy.deepcopy(g.node[0])
    depth = rng.choice([1, 2, 40])
    branch = onnx.helper.make_graph([inner], "b", [], [onnx.helper.make_tensor_value_info(o, 0, None) for o in inner.output])
    leaf = copy.deepcopy(branch)  # the else branch stays one level deep (both would double per level)
    for _ in range(depth - 1):
        cond = onnx.helper.make_node("Constant", [], ["c"], value=onnx.helper.make_tensor("c", TensorProto.BOOL, [], [True]))
        node = onnx.helper.make_node("If", ["c"], list(inner.output), then_branch=branch, else_branch=leaf)
        branch = onnx.helper.make_graph([cond, node], "b", [], [onnx.helper.make_tensor_value_info(o, 0, None) for o in inner.output])
    cond = onnx.helper.make_node("Constant", [], ["__cond"], value=onnx.helper.make_tensor("c", TensorProto.BOOL, [], [True]))
    wrap = onnx.helper.make_node("If", ["__cond"], list(inner.output), then_branch=branch, else_branch=leaf)
    del g.node[0]
    g.node.insert(0, wrap)
    g.node.insert(0, cond)
    return True


MUTATORS = [mutate_dim, mutate_dtype, mutate_initializer, mutate_attribute, mutate_names, mutate_nodes,
            mutate_opset, mutate_nesting]


def seeds(root):
    files = sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*/model.onnx"))
    files += sorted(glob.glob("/usr/share/libonnx-testdata/data/simple/*/model.onnx"))
    real = [p for p in sorted(glob.glob(os.path.join(root, "build/zoo/*.onnx"))) if os.path.getsize(p) < 20 << 20]
    return files, real


def make_mutant(rng, files, real, path):
    src = rng.choice(real) if real and rng.random() < 0.15 else rng.choice(files)
    model = onnx.load(src, load_external_data=False)
    applied = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        m = rng.choice(MUTATORS)
        if m(rng, model):
            applied.append(m.__name__[len("mutate_"):])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return src, applied


def checker_refuses(path):
    try:
        onnx.checker.check_model(onnx.load(path, load_external_data=False), full_check=True)
        return False
    except Exception:  # noqa: BLE001 -- every refusal of the checker counts, whatever its type
        return True


EXEC_FAILED = "campaign.py: exec failed: "


def run_measured(cmd, cwd, env=None):
    """Runs cmd with a limit; returns (outcome, rc, seconds, peak RSS in KB from wait4, stderr).
    When the binary cannot be executed (being relinked: missing, empty, busy), waits for it (up to
    10 minutes) and runs the command again rather than report a crash."""
    for _ in range(300):
        result = run_once(cmd, cwd, env)
        if not result[4].startswith(EXEC_FAILED):
            return result
        time.sleep(2)
    return result


def run_once(cmd, cwd, env):
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
            fd = os.open(os.path.join(cwd, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.chdir(cwd)
            try:
                os.execve(cmd[0], cmd, dict(os.environ, **(env or {})))
            except OSError as e:
                os.write(2, (EXEC_FAILED + str(e)).encode())
        finally:
            os._exit(127)
    while True:
        wpid, status, usage = os.wait4(pid, os.WNOHANG)
        if wpid:
            break
        if time.monotonic() - start > LIMIT_S:
            os.killpg(pid, signal.SIGKILL)
            os.wait4(pid, 0)
            return "hang", None, LIMIT_S, 0, ""
        time.sleep(0.01)
    with open(os.path.join(cwd, "stderr"), "rb") as f:
        err = f.read().decode("utf-8", "replace")
    rc = os.waitstatus_to_exitcode(status)
    return "done", rc, time.monotonic() - start, usage.ru_maxrss, err


FAMILIES = ("structure", "numerics", "sizes")


def zoo_inputs(src):
    """For a zoo model NAME.onnx, its fixtures NAME.INPUT.npy (input name -> path)."""
    stem = os.path.splitext(src)[0]
    return {os.path.basename(p)[len(os.path.basename(stem)) + 1:-4]: p for p in glob.glob(stem + ".*.npy")
            if not p.endswith(".torch.npy")}


def test_inputs(src, inputs):
    """ONNX's test inputs for a backend-test seed (test_data_set_0/input_K.pb), or the zoo's:
    input name -> array of the declared element type (others are left out)."""
    out = {}
    d = os.path.join(os.path.dirname(src), "test_data_set_0")
    for k, vi in enumerate(inputs):
        p = os.path.join(d, "input_%d.pb" % k)
        if not os.path.exists(p):
            continue
        try:
            t = TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            out[t.name or vi.name] = numpy_helper.to_array(t)
        except Exception:  # noqa: BLE001 -- a sequence or optional input: left to `run`
            pass
    if src.endswith(".onnx") and not out:
        for name, p in zoo_inputs(src).items():
            try:
                out[name] = np.load(p, allow_pickle=False)
            except Exception:  # noqa: BLE001
                pass
    keep = {}
    for vi in inputs:
        arr = out.get(vi.name)
        et = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        np_type = NP_TYPES.get(et)
        if arr is not None and np_type is not None and arr.dtype == np_type:
            keep[vi.name] = arr
    return keep


# ---- numerics ----

FLOAT_TYPES = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16}
NP_TYPES = {**FLOAT_TYPES, TensorProto.INT64: np.int64, TensorProto.INT32: np.int32, TensorProto.INT16: np.int16,
            TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.BOOL: np.bool_,
            TensorProto.UINT16: np.uint16, TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64}
CONTRACTIONS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
RANDOM_OPS = {"Bernoulli", "Dropout", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
              "RandomUniformLike"}  # their outputs need not agree between two runs: not numerics seeds
PALETTES = [("nan",), ("+inf",), ("-inf",), ("+inf", "-inf"), ("nan", "+inf", "-inf"), ("huge",), ("denormal",),
            ("huge", "denormal")]
HUGE = {np.float32: 3e38, np.float64: 1.7e308, np.float16: 65504.0}
DENORMAL = {np.float32: 1e-40, np.float64: 1e-310, np.float16: 1e-7}


def special_values(kind, np_type):
    if kind == "nan":
        return [np.nan]
    if kind == "+inf":
        return [np.inf]
    if kind == "-inf":
        return [-np.inf]
    v = HUGE[np_type] if kind == "huge" else DENORMAL[np_type]
    return [v, -v]


def inject(rng, arr, palette):
    """A copy of float array arr with the palette's values at one, five, a quarter or all of its
    positions; returns (array, how) or (arr, None) when arr is empty or not float."""
    if arr.size == 0 or arr.dtype.type not in HUGE:
        return arr, None
    arr = np.array(arr, copy=True)
    flat = arr.reshape(-1)
    values = np.array([v for k in palette for v in special_values(k, arr.dtype.type)], dtype=arr.dtype)
    how = rng.choice(["one", "one", "five", "quarter", "all"])
    n = {"one": 1, "five": min(flat.size, 5), "quarter": max(1, flat.size // 4), "all": flat.size}[how]
    g = np.random.default_rng(rng.randrange(2**32))
    pos = g.choice(flat.size, n, replace=False) if n < flat.size else np.arange(flat.size)
    flat[pos] = np.resize(values, n)
    return arr, how


def set_tensor(rng, t, arr):
    """Writes arr (same shape) into TensorProto t as raw_data or as the typed repeated field."""
    raw = numpy_helper.from_array(arr, t.name).raw_data
    for field in ("raw_data", "float_data", "double_data", "int32_data"):
        t.ClearField(field)
    if rng.random() < 0.5:
        t.raw_data = raw
        return "raw_data"
    flat = arr.reshape(-1)
    if t.data_type == TensorProto.FLOAT:
        t.float_data.extend(flat.tolist())
        return "float_data"
    if t.data_type == TensorProto.DOUBLE:
        t.double_data.extend(flat.tolist())
        return "double_data"
    t.int32_data.extend(flat.view(np.uint16).tolist())  # float16: the bits, one per int32
    return "int32_data"


def float_tensors(model):
    """Float initializers of every graph and float tensor attributes (Constant's value, ...)."""
    out = []
    for g in graphs_of(model.graph):
        out += list(g.initializer)
        for node in g.node:
            out += [a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    return [t for t in out if t.data_type in FLOAT_TYPES and t.data_location != TensorProto.EXTERNAL]


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def write_inputs(rng, src, model, palette, work):
    """A .npy per graph input (test data, or random normal values for float inputs), special values
    put into the float ones; returns ([(name, path)], [descriptions])."""
    inputs = graph_inputs(model)
    data = test_inputs(src, inputs)
    g = np.random.default_rng(rng.randrange(2**32))
    feeds, applied = [], []
    for vi in inputs:
        if "=" in vi.name or not vi.type.HasField("tensor_type"):
            continue
        arr = data.get(vi.name)
        np_type = FLOAT_TYPES.get(vi.type.tensor_type.elem_type)
        if arr is None:
            if np_type is None or not vi.type.tensor_type.HasField("shape"):
                continue
            shape = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
            if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.float64)) > 1 << 22:
                continue
            arr = g.standard_normal(shape).astype(np_type)
        arr, how = inject(rng, arr, palette)
        if how:
            applied.append("input %s: %s" % (vi.name[:40], how))
        path = os.path.join(work, "in%d.npy" % len(feeds))
        np.save(path, arr)
        feeds.append((vi.name, path))
    return feeds, applied


def make_numerics(rng, files, real, path, work):
    """Returns (seed, applied, meta): special values in initializers, fed inputs or both."""
    feeds, applied, palette = [], [], ()
    for _ in range(20):  # seeds without a float tensor to hold them are drawn again
        src = rng.choice(real) if real and rng.random() < 0.15 else rng.choice(files)
        model = onnx.load(src, load_external_data=False)
        if {n.op_type for g in graphs_of(model.graph) for n in g.node} & RANDOM_OPS:
            continue
        palette = rng.choice(PALETTES)
        where = rng.choice(["initializers", "inputs", "inputs", "both"])
        applied = ["palette " + "+".join(palette)]
        targets = float_tensors(model)
        if where in ("initializers", "both") and targets:
            for t in rng.sample(targets, min(len(targets), rng.choice([1, 1, 2, 3]))):
                arr, how = inject(rng, numpy_helper.to_array(t), palette)
                if how:
                    applied.append("initializer %s: %s, %s" % (t.name[:40], how, set_tensor(rng, t, arr)))
        for f in glob.glob(os.path.join(work, "in*.npy")):
            os.remove(f)
        feeds = []
        if where in ("inputs", "both"):
            feeds, more = write_inputs(rng, src, model, palette, work)
            applied += more
        if len(applied) > 1:
            break
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    ops = {n.op_type for g in graphs_of(model.graph) for n in g.node}
    return src, applied, {"feeds": feeds, "palette": list(palette), "contraction": bool(ops & CONTRACTIONS),
                          "conv": "Conv" in ops}


def kind_of(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return "%.6g" % v


def compare_outputs(a_dir, b_dir, a_name, b_name):
    """Differences of NaN placement and infinity signs between the float outputs (.npy) of two runs:
    a list of (output, description, {(a kind, b kind): count}), the counts None for a missing
    output or another shape or dtype."""
    def listing(d):
        return {f for f in os.listdir(d) if f.endswith(".npy")} if os.path.isdir(d) else set()
    na, nb = listing(a_dir), listing(b_dir)
    diffs = []
    for name in sorted(na | nb):
        try:
            x = np.load(os.path.join(a_dir, name), allow_pickle=False) if name in na else None
            y = np.load(os.path.join(b_dir, name), allow_pickle=False) if name in nb else None
        except Exception:  # noqa: BLE001 -- an output numpy cannot read is not compared
            continue
        floats = [v for v in (x, y) if v is not None and v.dtype.kind == "f"]
        if not floats:
            continue
        if x is None or y is None:
            diffs.append((name, "only in the %s run" % (a_name if y is None else b_name), None))
            continue
        if x.dtype != y.dtype or x.shape != y.shape:
            diffs.append((name, "%s %s %s, %s %s %s" % (a_name, x.dtype, list(x.shape), b_name, y.dtype,
                                                     list(y.shape)), None))
            continue
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        nan_x, nan_y = np.isnan(x64), np.isnan(y64)
        bad = (nan_x != nan_y) | (np.isinf(x64) & np.isinf(y64) & (np.sign(x64) != np.sign(y64)))
        idx = np.flatnonzero(bad)
        if not idx.size:
            continue
        kinds = np.array(["finite", "nan", "+inf", "-inf"])
        def code(v):
            return np.where(np.isnan(v), 1, np.where(v == np.inf, 2, np.where(v == -np.inf, 3, 0)))
        keys, first_at, n_at = np.unique(code(x64.flat[idx]) * 4 + code(y64.flat[idx]), return_index=True,
                                          return_counts=True)
        pairs, first = {}, {}
        for key, f, cnt in zip(keys, first_at, n_at):
            k = (str(kinds[key // 4]), str(kinds[key % 4]))
            pairs[k] = int(cnt)
            i = int(idx[f])
            first[k] = (i, kind_of(x64.flat[i]), kind_of(y64.flat[i]))
        text = "; ".join("%d x %s %s, %s %s (first at flat %d)" % (n, a_name, first[k][1], b_name, first[k][2],
                                                                 first[k][0])
                         for k, n in sorted(pairs.items(), key=lambda kv: -kv[1]))
        diffs.append((name, text, pairs))
    return diffs


def numerics_verdict(diffs, meta):
    """(outcome, detail) for the compiled-vs-reference differences: 'numerics' or an exemption."""
    infinity = "+inf" in meta["palette"] or "-inf" in meta["palette"]
    pairs_ok = all(p is not None and all(k[0] == "nan" and k[1] in ("+inf", "-inf") for k in p) for _, _, p in diffs)
    detail = "compiled vs reference: " + " | ".join("%s: %s" % (n, t) for n, t, _ in diffs)
    if infinity and pairs_ok:
        return "exempt-inf", detail
    if set(meta["palette"]) <= {"huge", "denormal"} and "huge" in meta["palette"] and meta["contraction"]:
        return "exempt-overflow", detail
    return "numerics", detail


# ---- sizes ----

SIZE_KINDS = {"resize_scales": ("Resize", "Upsample"), "resize_sizes": ("Resize",), "pad": ("Pad",),
              "window": ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"), "tile": ("Tile",),
              "expand": ("Expand",), "constantofshape": ("ConstantOfShape",), "reshape": ("Reshape",),
              "range": ("Range",)}
HUGE_SIZES = [2**31, 2**31, 2**31 - 1, 2**32, 2**40, 2**62, 2**63 - 1]


def seeds_by_op(files, real):
    """op type -> [(seed, is_zoo)] for the ops the sizes mutations need."""
    want = {op for ops in SIZE_KINDS.values() for op in ops}
    out = {}
    for is_zoo, paths in ((False, files), (True, real)):
        for p in paths:
            try:
                m = onnx.load(p, load_external_data=False)
            except Exception:  # noqa: BLE001
                continue
            for op in {n.op_type for g in graphs_of(m.graph) for n in g.node if n.domain in ("", "ai.onnx")} & want:
                out.setdefault(op, []).append((p, is_zoo))
    return out


def opset_of(model):
    return max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] or [1])


def type_map(model):
    """value name -> list of dims (None where unknown; the list None where the rank is unknown)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001
        inferred = model
    out = {}
    for g in graphs_of(inferred.graph):
        for vi in value_infos(g):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                out[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        for t in g.initializer:
            out[t.name] = list(t.dims)
    return out


def elem_type_of(model, name):
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001
        inferred = model
    for g in graphs_of(inferred.graph):
        for vi in value_infos(g):
            if vi.name == name and vi.type.HasField("tensor_type"):
                return vi.type.tensor_type.elem_type
        for t in g.initializer:
            if t.name == name:
                return t.data_type
        for n in g.node:
            if n.op_type == "Constant" and name in n.output:
                for a in n.attribute:
                    if a.name == "value":
                        return a.t.data_type
    return TensorProto.INT64


def rank_of(tm, name, default=4):
    dims = tm.get(name)
    return len(dims) if dims is not None else default


def length_of(tm, name, default):
    dims = tm.get(name)
    return dims[0] if dims and len(dims) == 1 and dims[0] else default


def huge_vector(rng, n, base, values, positions=None):
    """base (a list of n numbers) with one, or every (or the given), position set from values."""
    v = list(base)
    where = positions if positions is not None else (range(n) if rng.random() < 0.4 or n == 0 else [rng.randrange(n)])
    for i in where:
        v[i] = rng.choice(values)
    return v


def make_sizes(rng, by_op, path, work):
    """Returns (seed, applied, meta): one size that overflows on a seed that has the op."""
    kind = rng.choice([k for k in SIZE_KINDS if any(op in by_op for op in SIZE_KINDS[k])])
    candidates = [s for op in SIZE_KINDS[kind] for s in by_op.get(op, [])]
    zoo = [p for p, z in candidates if z]
    src = rng.choice(zoo) if zoo and rng.random() < 0.15 else rng.choice([p for p, z in candidates if not z] or zoo)
    model = onnx.load(src, load_external_data=False)
    tm = type_map(model)
    opset = opset_of(model)
    nodes = [n for g in graphs_of(model.graph) for n in g.node if n.op_type in SIZE_KINDS[kind]
             and n.domain in ("", "ai.onnx")]
    node = rng.choice(nodes)
    feeds, applied = [], ["%s on %s" % (kind, node.op_type)]
    top_inputs = {vi.name for vi in graph_inputs(model)}

    def put(idx, arr):
        """Input idx of node holds arr: fed as a .npy when it is a graph input (half the time; its
        declared length kept), else a fresh initializer the node reads."""
        while len(node.input) <= idx:
            node.input.append("")
        name = node.input[idx]
        if name in top_inputs and "=" not in name and rng.random() < 0.5:
            n = length_of(tm, name, None)
            if n and arr.ndim == 1 and arr.size != n:
                arr = np.resize(arr, n)
            p = os.path.join(work, "in%d.npy" % len(feeds))
            np.save(p, arr)
            feeds.append((name, p))
            applied.append("input %d fed %s" % (idx, arr.tolist()))
            return
        new = "__size%d" % len(model.graph.initializer)
        model.graph.initializer.append(numpy_helper.from_array(arr, new))
        node.input[idx] = new
        applied.append("input %d = initializer %s" % (idx, arr.tolist()))

    def set_ints(name, values):
        for a in list(node.attribute):
            if a.name == name:
                node.attribute.remove(a)
        node.attribute.append(onnx.helper.make_attribute(name, values))
        applied.append("%s = %s" % (name, values))

    x = node.input[0] if node.input else ""
    n = rank_of(tm, x)
    spatial = list(range(2, n)) if n > 2 else list(range(n))
    if kind == "resize_scales":
        scales = huge_vector(rng, n, [1.0] * n, [1e9, 1e9, 1e20, 3e38], spatial if rng.random() < 0.5 else None)
        if node.op_type == "Upsample" or opset < 11:
            put(1, np.array(scales, dtype=np.float32))
        else:
            del node.input[3:]
            put(2, np.array(scales, dtype=np.float32))
    elif kind == "resize_sizes":
        dims = [d or 1 for d in (tm.get(x) or [1] * n)]
        sizes = huge_vector(rng, n, dims, HUGE_SIZES, spatial if rng.random() < 0.5 else None)
        while len(node.input) < 4:
            node.input.append("")
        node.input[2] = ""
        put(3, np.array(sizes, dtype=np.int64))
    elif kind == "pad":
        pads = huge_vector(rng, 2 * n, [0] * (2 * n), [2**31, 2**62, -2**62, 2**63 - 1, 2**31 - 1])
        if opset >= 11:
            put(1, np.array(pads, dtype=np.int64))
        else:
            set_ints("pads" if opset >= 2 else "paddings", pads)
    elif kind == "window":
        attrs = {a.name: list(a.ints) for a in node.attribute if a.type == onnx.AttributeProto.INTS}
        s = len(attrs.get("kernel_shape") or attrs.get("strides") or attrs.get("dilations") or []) or \
            (rank_of(tm, node.input[1], 4) - 2 if len(node.input) > 1 and node.op_type.startswith("Conv") else n - 2)
        s = max(s, 1)
        names = ["pads", "strides", "dilations", "kernel_shape"] + (["output_padding", "output_shape"]
                                                                   if node.op_type == "ConvTranspose" else [])
        name = rng.choice(names)
        length = 2 * s if name == "pads" else s
        base = attrs.get(name) or ([0] * length if name in ("pads", "output_padding") else
                                   [1] * length if name in ("strides", "dilations") else [3] * length)
        set_ints(name, huge_vector(rng, len(base), base, HUGE_SIZES))
        if name == "pads" and rng.random() < 0.5:
            for a in list(node.attribute):
                if a.name == "auto_pad":
                    node.attribute.remove(a)
    elif kind == "tile":
        put(1, np.array(huge_vector(rng, n, [1] * n, [2**31, 2**31, 2**32, 2**62]), dtype=np.int64))
    elif kind == "expand":
        k = length_of(tm, node.input[1], 2) if len(node.input) > 1 else 2
        base = [1] * k
        put(1, np.array(huge_vector(rng, k, base, [2**31, 2**31, 2**62], list(range(max(0, k - 2), k))
                                    if rng.random() < 0.6 else None), dtype=np.int64))
    elif kind == "constantofshape":
        shape = rng.choice([[2**40, 2**40], [2**31, 2**31], [2**31] * 3, [2**63 - 1], [2**62, 0, 2**62],
                            [2**40, 2**40, 2**40]])
        put(0, np.array(shape, dtype=np.int64))
    elif kind == "reshape":
        shape = rng.choice([[2**31, 2**31], [2**62, -1], [-1, 2**40, 2**40], [2**63 - 1], [2**31] * max(n, 1),
                            [2**62, 0], [-1, 2**62, 2**62]])
        put(1, np.array(shape, dtype=np.int64))
    elif kind == "range":
        et = elem_type_of(model, node.input[0])
        np_type = NP_TYPES.get(et, np.int64)
        if np.dtype(np_type).kind == "f":
            big = float(np.finfo(np_type).max) * 0.9
            start, limit, delta = rng.choice([(0, 1e9, 1), (0, 1e20, 1), (0, big, 1), (0, 1, 1e-30), (-big, big, 1)])
        else:
            info = np.iinfo(np_type)
            start, limit, delta = rng.choice([(0, info.max, 1), (info.min, info.max, 1), (0, 2**31 - 1, 1),
                                              (info.max, info.min, -1), (0, info.max, 2)])
        for i, v in enumerate((start, limit, delta)):
            put(i, np.array(v, dtype=np_type))
    if rng.random() < 0.5:  # the declared shapes would stop most of these first: drop them (outputs
        # keep their rank with symbolic dims, since onnx.checker wants a shape on them)
        for g in graphs_of(model.graph):
            del g.value_info[:]
            for vi in g.output:
                if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                    for k, d in enumerate(vi.type.tensor_type.shape.dim):
                        d.dim_param = "%s_%d" % (vi.name[:20], k)
        applied.append("declared shapes dropped")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return src, applied, {"feeds": feeds}


# ---- running and judging ----

SEVERITY = {"crash": 3, "hang": 2, "blow-up": 1}
WINOGRAD = "gone with TESSERA_CONV_ALGO=direct: Winograd"


def commands_for(family, tessera, model, tsr, feeds, outs):
    """The commands run on one mutant; feeds [(name, .npy)], outs {'compiled'|'reference'|'tsr': dir}."""
    if family == "structure":
        return [[tessera, "info", model], [tessera, "run", model, "--seed", "1"],
                [tessera, "convert", model, tsr], [tessera, "run", tsr, "--seed", "1"]]
    fed = [a for name, p in feeds for a in ("-i", "%s=%s" % (name, p))]
    common = ["--seed", "1", "-t", "1", "--no-record"] + fed

    def out(k):
        return ["-o", outs[k]] if family == "numerics" else []
    cmds = [[tessera, "info", model], [tessera, "run", model] + common + out("compiled")]
    if family == "numerics":
        cmds.append([tessera, "run", model, "--reference"] + common + out("reference"))
    return cmds + [[tessera, "convert", model, tsr], [tessera, "run", tsr] + common + out("tsr")]


def classify(family, tessera, path, workdir, seed_valid, meta):
    """Runs the commands on one mutant; returns (outcome, detail, notes), notes {'unnamed': an error
    whose message names no file (model, fed input, output), 'split': numerics' compiled and reference
    runs disagreeing on success, 'winograd': a silent numerics that TESSERA_CONV_ALGO=direct makes
    go away} ('' when none)."""
    tsr = os.path.join(workdir, "m.tsr")
    outs = {k: os.path.join(workdir, k) for k in ("compiled", "reference", "tsr")}
    feeds = meta.get("feeds", [])
    commands = commands_for(family, tessera, path, tsr, feeds, outs)
    worst, detail, codes, last_err, notes = None, "", [], [], {"unnamed": "", "split": "", "winograd": ""}
    for cmd in commands:
        if cmd[2] == tsr and not os.path.exists(tsr):
            codes.append(None)
            last_err.append("")
            continue
        outcome, rc, secs, rss, err = run_measured(cmd, workdir)
        if outcome == "hang":  # a loaded machine can stall anything once: a hang is twice over the limit
            outcome, rc, secs, rss, err = run_measured(cmd, workdir)
        what = f"{cmd[1]} {os.path.basename(cmd[2])}" + (" --reference" if "--reference" in cmd else "")
        found = None
        if outcome == "hang":
            found = ("hang", f"{what}: over {LIMIT_S} s")
        elif rc not in (0, 1, 2) or (rc != 0 and not err.strip()):
            found = ("crash", f"{what}: exit {rc}: {err.strip()[-300:]}")
        elif rss > BLOWUP_KB:
            found = ("blow-up", f"{what}: {rss // 1024} MB, {secs:.1f} s")
        elif rc in (1, 2) and not notes["unnamed"] and \
                not any(os.path.basename(p) in err for p in [cmd[2]] + [f for _, f in feeds] + list(outs.values())):
            notes["unnamed"] = f"{what}: {err.strip()[-300:]}"
        if found and (worst is None or SEVERITY[found[0]] > SEVERITY[worst]):
            worst, detail = found
        codes.append(rc)
        last_err.append(err.strip().splitlines()[-1][:200] if err.strip() else "")
    if worst:
        return worst, detail, notes
    if family == "numerics":
        verdict = None
        if (codes[1] == 0) != (codes[2] == 0):
            notes["split"] = "compiled exit %s, reference exit %s: %s" % (codes[1], codes[2],
                                                                          last_err[1 if codes[1] else 2])
        if codes[1] == 0 and codes[2] == 0:
            diffs = compare_outputs(outs["compiled"], outs["reference"], "compiled", "reference")
            if diffs:
                verdict = numerics_verdict(diffs, meta)
            if verdict and verdict[0] == "numerics" and meta["conv"]:
                # Whether oneDNN's Winograd made it: the compiled run again with direct convolutions.
                direct = os.path.join(workdir, "direct")
                cmd = commands[1][:-1] + [direct]
                outcome, rc, _, _, _ = run_measured(cmd, workdir, {"TESSERA_CONV_ALGO": "direct"})
                if outcome == "done" and rc == 0 and \
                        not compare_outputs(direct, outs["reference"], "direct", "reference"):
                    verdict = ("numerics", verdict[1] + " [" + WINOGRAD + "]")
                    notes["winograd"] = verdict[1][:300]
        if codes[1] == 0 and codes[4] == 0:
            diffs = compare_outputs(outs["tsr"], outs["compiled"], "tsr", "compiled")
            if diffs:
                text = "tsr vs compiled .onnx: " + " | ".join("%s: %s" % (n, t) for n, t, _ in diffs)
                verdict = ("numerics", (verdict[1] + " || " if verdict else "") + text)
        if verdict and verdict[0] == "numerics":
            return verdict[0], verdict[1], notes
    # Silent acceptance: the checker refuses a mutant of a model it accepts, and info or run took it.
    refused = seed_valid and checker_refuses(path)
    if refused and 0 in codes[:2]:
        return "silent", "info/run exit 0 on what onnx.checker refuses: " + " ".join(map(str, codes)), notes
    if family == "numerics" and verdict:
        return verdict[0], verdict[1], notes
    return ("success" if all(c == 0 for c in codes if c is not None) else "clean"), "", notes


def keep_finding(i, outcome, family, tessera, work, out, record):
    """Copies a finding (mutant, fed inputs, outputs) to OUT/findings with its reproducing commands."""
    base = os.path.join(out, "findings", "%05d-%s" % (i, outcome))
    shutil.copy(os.path.join(work, "m.onnx"), base + ".onnx")
    feeds = []
    if record["feeds"] or family == "numerics":
        os.makedirs(base + ".d/inputs", exist_ok=True)
        for name, p in record["feeds"]:
            dest = os.path.join(base + ".d/inputs", os.path.basename(p))
            shutil.copy(p, dest)
            feeds.append((name, dest))
    outs = {k: os.path.join(base + ".d", k) for k in ("compiled", "reference", "tsr")}
    if family == "numerics":
        for k in outs:
            if os.path.isdir(os.path.join(work, k)):
                shutil.copytree(os.path.join(work, k), outs[k], dirs_exist_ok=True)
    cmds = commands_for(family, tessera, base + ".onnx", base + ".d/m.tsr" if family != "structure" else
                        base + ".tsr", feeds, outs)
    record = dict(record, feeds=feeds, reproduce=[" ".join(shlex.quote(a) for a in c) for c in cmds])
    with open(base + ".onnx.txt", "w") as f:
        f.write(json.dumps(record, indent=1) + "\n")


def worker(args, root, tessera, out):
    """Makes and classifies mutants START..END-1, one JSON line each on stdout. Runs in its own
    process: onnx's Python bindings (the checker, protobuf) can crash on hostile models, and such a
    crash must cost one mutant, not the campaign."""
    files, real = seeds(root)
    by_op = None
    seed_valid = {}  # seed model -> accepted by onnx.checker (mutants of refused seeds are not "silent")
    for i in range(args.start, args.end):
        family = args.mutations if args.mutations != "all" else FAMILIES[i % len(FAMILIES)]
        rng = random.Random(args.seed * 1_000_003 + i)
        work = os.path.join(out, "w%d" % i)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        path = os.path.join(work, "m.onnx")
        meta = {"feeds": []}
        if family == "structure":
            src, applied = make_mutant(rng, files, real, path)
        elif family == "numerics":
            src, applied, meta = make_numerics(rng, files, real, path, work)
        else:
            if by_op is None:
                by_op = seeds_by_op(files, real)
            src, applied, meta = make_sizes(rng, by_op, path, work)
        if src not in seed_valid:
            seed_valid[src] = not checker_refuses(src)
        outcome, detail, notes = classify(family, tessera, path, work, seed_valid[src], meta)
        record = {"family": family, "seed": src, "mutations": applied, "outcome": outcome, "detail": detail,
                  "feeds": meta.get("feeds", [])}
        if outcome not in ("clean", "success") and not outcome.startswith("exempt"):
            keep_finding(i, outcome, family, tessera, work, out, record)
        elif outcome.startswith("exempt"):
            with open(os.path.join(out, "exempt.%d.jsonl" % args.start), "a") as f:
                f.write(json.dumps(dict(record, i=i)) + "\n")
        shutil.rmtree(work)
        print(json.dumps({"i": i, "outcome": outcome, "family": family, "seed": src, "mutations": applied,
                          "detail": detail, "notes": notes}), flush=True)


def run_chunk(start, end, args, out):
    """Runs a worker over [start, end), restarting it past a mutant that crashed Python itself."""
    results = []
    while start < end:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--tessera", args.tessera, "--seed",
               str(args.seed), "--out", out, "--start", str(start), "--end", str(end), "--mutations", args.mutations]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        done = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        results += done
        start = (done[-1]["i"] + 1) if done else start
        if p.returncode != 0 and start < end:
            results.append({"i": start, "outcome": "tool-crash", "seed": "", "mutations": [], "notes": {},
                            "detail": f"the campaign's own Python (onnx bindings) died: exit {p.returncode}"})
            start += 1
    return results


FINDINGS = ("crash", "hang", "blow-up", "numerics", "tool-crash")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--mutations", choices=("all",) + FAMILIES, default="structure",
                    help="mutation family (default structure; all: mutant i from family i mod 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="build/campaign")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args.tessera = os.path.abspath(args.tessera)
    out = os.path.abspath(args.out)
    if args.worker:
        worker(args, root, args.tessera, out)
        return 0
    if not seeds(root)[0]:
        sys.exit("campaign.py: no seed models (install libonnx-testdata)")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "findings"))
    counts = {k: 0 for k in ("clean", "success", "crash", "hang", "blow-up", "silent", "numerics", "exempt-inf",
                             "exempt-overflow", "tool-crash")}
    notes = {"unnamed": [], "split": [], "winograd": []}
    start = time.monotonic()
    chunk = 100
    chunks = [(b, min(b + chunk, args.count)) for b in range(0, args.count, chunk)]
    n = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool, open(os.path.join(out, "results.jsonl"), "w") as log:
        for results in pool.map(lambda c: run_chunk(c[0], c[1], args, out), chunks):
            for r in results:
                log.write(json.dumps(r) + "\n")
                counts[r["outcome"]] += 1
                n += 1
                for k, v in r.get("notes", {}).items():
                    if v:
                        notes[k].append((r["i"], v))
                if r["outcome"] in FINDINGS:
                    print(f"  {r['i']} {r['outcome']}: {r['seed']} {r['mutations']}: {r['detail'][:300]}", flush=True)
            print(f"  {n} mutants, {time.monotonic() - start:.0f} s: {counts}", flush=True)
    exempt = sorted(glob.glob(os.path.join(out, "exempt.*.jsonl")))
    if exempt:
        with open(os.path.join(out, "exempt.jsonl"), "w") as f:
            for p in exempt:
                with open(p) as part:
                    f.write(part.read())
                os.remove(p)
    print(f"mutations: {args.mutations}")
    print("| inputs | clean errors | successes | crashes | hangs | blow-ups | silent | silent numerics | "
          "exempt (inf to NaN) | exempt (overflow) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {n - counts['tool-crash']} | {counts['clean']} | {counts['success']} | {counts['crash']} | {counts['hang']} | "
          f"{counts['blow-up']} | {counts['silent']} | {counts['numerics']} | {counts['exempt-inf']} | "
          f"{counts['exempt-overflow']} |")
    if counts["tool-crash"]:
        print(f"({counts['tool-crash']} mutants not counted: the onnx Python bindings crashed on them)")
    for k, what in (("unnamed", "had an error naming no file (model, fed input or output)"),
                    ("split", "had the compiled and the reference run disagree on success (not counted)"),
                    ("winograd", "of the silent numerics went away with TESSERA_CONV_ALGO=direct (Winograd)")):
        if notes[k]:
            print(f"{len(notes[k])} mutants {what}, e.g.:")
            for i, text in notes[k][:5]:
                print(f"  {i}: {text[:200]}")
    print(f"campaign.py: {time.monotonic() - start:.0f} s, findings in {out}/findings")
    return 1 if any(counts[k] for k in ("crash", "hang", "blow-up", "numerics")) else 0


if __name__ == "__main__":
    sys.exit(main())
