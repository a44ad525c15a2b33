#!/usr/bin/python3
"""ONNX Runtime check of the ONNX export (ctest formats.ort_export).

Exports every sample and a few ONNX conformance models with `tessera convert X Y.onnx`, computes
their outputs with `tessera run` on fixed inputs (random from a seed for the samples, the test's
own test_data_set_0 for the conformance models), then runs the exported model in onnxruntime-node
(tests/formats/ort_check.js) and compares (rtol 1e-4, atol 1e-5).

Usage: check_ort_export.py --tessera build/release/cli/tessera [--source-dir .] [--work DIR]
                           [--testdata /usr/share/libonnx-testdata/data] [--node node]
Exit status: 0 all match, 1 a mismatch or failure, 2 bad usage, 77 (ctest: skipped) when node or
build/npm/node_modules/onnxruntime-node is missing (scripts/npm.sh installs both).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

SKIP = 77
SAMPLES = ["lenet", "mlp", "rnn", "lstm"]
# Conformance cases (folders under the testdata root) that cover convolution, pooling, norms,
# control flow with captures, casts, indexing and opset-13+ forms.
CONFORMANCE = [
    "node/test_conv_with_strides_padding",
    "node/test_maxpool_2d_pads",
    "node/test_averagepool_2d_pads",
    "node/test_batchnorm_example",
    "node/test_gemm_default_matrix_bias",
    "node/test_softmax_axis_0",
    "node/test_slice",
    "node/test_if",
    "node/test_loop11",
    "node/test_range_float_type_positive_delta_expanded",
    "node/test_cast_FLOAT_to_DOUBLE",
    "node/test_resize_upsample_scales_nearest",
    "node/test_layer_normalization_2d_axis0",
    "node/test_shape_start_1_end_negative_1",
    "node/test_einsum_batch_matmul",
    "node/test_scatter_elements_with_axis",
    "node/test_cumsum_1d",
    "simple/test_single_relu_model",
    "pytorch-converted/test_Conv2d",
    "pytorch-operator/test_operator_maxpool",
]
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "i8": np.int8,
          "u8": np.uint8, "bool": np.bool_}


def run(cmd, what):
    """Runs cmd; returns (ok, combined output)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return False, f"{what} failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout.strip()}"
    return True, p.stdout


def random_input(type_text, rng, batch=3):
    """An array for a Tessera type string such as 'f32[N, 1, 28, 28]' (symbols and ? -> batch)."""
    m = re.fullmatch(r"(\w+)\[(.*)\]", type_text.replace(" ", ""))
    if not m or m.group(1) not in DTYPES or m.group(2) == "*":
        raise ValueError(f"cannot make an input of type {type_text}")
    dims = [int(d) if d.isdigit() else batch for d in m.group(2).split(",") if d]
    dt = DTYPES[m.group(1)]
    if dt == np.bool_:
        return rng.random(dims) < 0.5
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 4, size=dims).astype(dt)
    return rng.standard_normal(dims).astype(dt)


def check(name, tessera, ort_check, node, model_in, work, make_inputs, opset=None):
    """Exports model_in (at `opset`, default 17), computes Tessera's outputs, runs ORT. Returns (ok, lines)."""
    case = os.path.join(work, name.replace("/", "_") + (f"_opset{opset}" if opset else ""))
    shutil.rmtree(case, ignore_errors=True)
    inputs, expected = os.path.join(case, "inputs"), os.path.join(case, "expected")
    os.makedirs(inputs)
    exported = os.path.join(case, os.path.basename(case) + ".onnx")
    ok, out = run([tessera, "convert", model_in, exported] + (["--opset", str(opset)] if opset else []), "export")
    if not ok:
        return False, [f"FAIL {name}: {out}"]
    try:
        feeds = make_inputs()
    except Exception as e:  # noqa: BLE001 - report any reading problem as this case's failure
        return False, [f"FAIL {name}: cannot make inputs: {e}"]
    cmd = [tessera, "run", model_in, "--no-record", "--threads", "1", "--output-dir", expected]
    for input_name, arr in feeds.items():
        path = os.path.join(inputs, f"{input_name}.npy")
        np.save(path, arr)
        cmd += ["--input", f"{input_name}={path}"]
    ok, out = run(cmd, "tessera run")
    if not ok:
        return False, [f"FAIL {name}: {out}"]
    p = subprocess.run([node, ort_check, exported, "--inputs", inputs, "--expected", expected],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode == 0, p.stdout.strip().splitlines()


def testdata_inputs(case_dir):
    """{graph input name: array} from test_data_set_0 (names from the tensors or the model)."""
    import onnx  # python3-onnx, only needed for the conformance models
    from onnx import numpy_helper
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    init = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in init]
    feeds = {}
    k = 0
    while os.path.exists(os.path.join(case_dir, "test_data_set_0", f"input_{k}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(case_dir, "test_data_set_0", f"input_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[t.name or names[k]] = numpy_helper.to_array(t)
        k += 1
    return feeds


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessera", required=True, help="the tessera CLI")
    ap.add_argument("--source-dir", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--work", default=None, help="folder for the exported models (default: a temp folder)")
    ap.add_argument("--testdata", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--node", default="node")
    args = ap.parse_args()

    node = shutil.which(args.node)
    ort_dir = os.path.join(args.source_dir, "build", "npm", "node_modules", "onnxruntime-node")
    if node is None:
        print(f"check_ort_export: skipped: no '{args.node}' on PATH (scripts/npm.sh installs nodejs)")
        return SKIP
    if not os.path.isfile(os.path.join(ort_dir, "package.json")) and not os.environ.get("NODE_PATH"):
        print(f"check_ort_export: skipped: {ort_dir} is missing (scripts/npm.sh installs onnxruntime-node)")
        return SKIP
    if not os.access(args.tessera, os.X_OK):
        print(f"check_ort_export: {args.tessera} is not an executable", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="tessera-ort-export-")
    os.makedirs(work, exist_ok=True)
    ort_check = os.path.join(here, "ort_check.js")

    results = []
    for s in SAMPLES:
        model = os.path.join(args.source_dir, "samples", f"{s}.json")

        def sample_inputs(model=model, seed=len(results)):
            ok, out = run([args.tessera, "info", "--json", model], "tessera info")
            if not ok:
                raise RuntimeError(out)
            rng = np.random.default_rng(seed)
            return {i["name"]: random_input(i["type"], rng) for i in json.loads(out)["inputs"]}

        results.append(check(s, args.tessera, ort_check, node, model, work, sample_inputs))
        results.append(check(s, args.tessera, ort_check, node, model, work, sample_inputs, opset=13))
    have_testdata = os.path.isdir(args.testdata)
    if have_testdata:
        for c in CONFORMANCE:
            case_dir = os.path.join(args.testdata, c)
            if not os.path.isdir(case_dir):
                results.append((False, [f"FAIL {c}: {case_dir} is missing"]))
                continue
            results.append(check(c, args.tessera, ort_check, node, os.path.join(case_dir, "model.onnx"), work,
                                 lambda d=case_dir: testdata_inputs(d)))
    for _, lines in results:
        for line in lines:
            print(line)
    passed = sum(1 for ok, _ in results if ok)
    print(f"ort export check: {passed}/{len(results)} models match ONNX Runtime"
          + ("" if have_testdata else f" (no conformance models: {args.testdata} is missing)"))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
