#!/usr/bin/python3
"""End-to-end checks of `tessera quantize` on the real Fashion-MNIST (Debian's dataset-fashion-mnist).

Usage: check_quantize_cli.py TESSERA SOURCE_DIR
  LeNet-5 (samples/lenet.json, 1 short epoch of training first) quantized with min-max and with
  percentile calibration: the .onnx holds QuantizeLinear/DequantizeLinear around every Conv and
  Gemm, `tessera passes` fuses them into QLinearConv/QLinearMatMul on the int8 kernels, and the
  int8 logits on 1,000 test images pick the same class as fp32 on at least 97% of them; a .tsr
  output works too; and the errors: missing data, a split the data lacks, a graph with nothing to
  quantize, a bad --method.
Exits 77 (skipped) when the dataset is not installed.
"""
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def run(args, expect_ok=True):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect_ok and p.returncode != 0:
        sys.exit("FAIL: %s\nexit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    if not expect_ok and p.returncode == 0:
        sys.exit("FAIL: expected an error from %s\n%s" % (" ".join(args), p.stdout))
    if p.returncode < 0:
        sys.exit("FAIL: %s crashed (signal %d)" % (" ".join(args), -p.returncode))
    return p


def expect_error(args, *needles):
    p = run(args, expect_ok=False)
    for n in needles:
        if n not in p.stderr:
            sys.exit("FAIL: %s\nstderr lacks %r:\n%s" % (" ".join(args), n, p.stderr))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    tessera, src = sys.argv[1], sys.argv[2]
    if not os.path.isdir(DATA):
        print("skipped: %s is not installed (apt-get install dataset-fashion-mnist)" % DATA)
        sys.exit(77)
    lenet = os.path.join(src, "samples", "lenet.json")
    with tempfile.TemporaryDirectory() as tmp:
        run([tessera, "train", lenet, "--data", DATA, "--epochs", "1", "--max-steps", "300", "--optimizer", "momentum",
             "--threads", "2", "--no-eval", "--checkpoint-dir", tmp, "--no-record"])
        ckpt = [f for f in os.listdir(tmp) if f.endswith(".tsc")][0]
        ckpt = os.path.join(tmp, ckpt)
        x = (read_idx(os.path.join(DATA, "t10k-images-idx3-ubyte.gz"))[:1000].astype(np.float32) / 255.0)[:, None]
        xp = os.path.join(tmp, "x.npy")
        np.save(xp, x)
        run([tessera, "run", lenet, "--checkpoint", ckpt, "--input", "x=" + xp, "--output-dir", os.path.join(tmp, "f"),
             "--no-record"])
        ref = np.load(os.path.join(tmp, "f", "logits.npy"))
        for method in ["minmax", "percentile"]:
            out = os.path.join(tmp, "lenet_%s.onnx" % method)
            p = run([tessera, "quantize", lenet, out, "--checkpoint", ckpt, "--calibrate", DATA, "--method", method,
                     "--samples", "256"])
            if "quantized 5 ops" not in p.stdout:
                sys.exit("FAIL: expected 5 quantized ops (2 Conv, 3 Gemm):\n" + p.stdout)
            info = run([tessera, "info", out]).stdout
            if "QuantizeLinear" not in info or "DequantizeLinear" not in info:
                sys.exit("FAIL: no QDQ pairs in the quantized file:\n" + info)
            plan = run([tessera, "passes", out, "--print", "--dim", "N=8", "--no-record"]).stdout
            for k in ["onednn:qlinear_conv", "onednn:qlinear_matmul"]:
                if plan.count(k) < 2:
                    sys.exit("FAIL: %s: expected the int8 kernel %s twice or more in the plan:\n%s" % (method, k, plan))
            run([tessera, "run", out, "--input", "x=" + xp, "--output-dir", os.path.join(tmp, method), "--no-record"])
            q = np.load(os.path.join(tmp, method, "logits.npy"))
            agree = float((q.argmax(1) == ref.argmax(1)).mean())
            if agree < 0.97:
                sys.exit("FAIL: %s: int8 and fp32 agree on %.3f of the test images" % (method, agree))
            print("ok: %s: int8 agrees with fp32 on %.1f%% of 1,000 test images" % (method, 100 * agree))
        tsr = os.path.join(tmp, "lenet_int8.tsr")
        run([tessera, "quantize", lenet, tsr, "--calibrate", DATA, "--samples", "64", "--per-tensor"])
        run([tessera, "run", tsr, "--no-record"])
        # Errors: each names what is wrong.
        out = os.path.join(tmp, "never.onnx")
        expect_error([tessera, "quantize", lenet, out, "--calibrate", os.path.join(tmp, "missing")], "--calibrate",
                     "missing")
        npz = os.path.join(tmp, "train_only.npz")
        np.savez(npz, x=x[:16], labels=np.zeros(16, dtype=np.int64))
        expect_error([tessera, "quantize", lenet, out, "--calibrate", npz, "--split", "test"], "no 'test' split")
        relu = os.path.join(tmp, "relu.json")
        with open(relu, "w") as f:
            f.write('{"format": "tessera-graph", "version": 1, "name": "relu", '
                    '"inputs": [{"name": "x", "type": "f32[N, 1, 28, 28]"}], "params": [], '
                    '"nodes": [{"op": "Relu", "name": "r", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]}')
        expect_error([tessera, "quantize", relu, out, "--calibrate", DATA], "no Conv, Gemm or MatMul")
        expect_error([tessera, "quantize", lenet, out, "--calibrate", DATA, "--method", "entropy"], "--method")
        if os.path.exists(out):
            sys.exit("FAIL: a failed quantize wrote " + out)
        print("ok: tessera quantize (QDQ .onnx and .tsr, errors)")


if __name__ == "__main__":
    main()
