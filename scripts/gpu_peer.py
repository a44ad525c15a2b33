#!/usr/bin/env python3
"""The PyTorch side of scripts/gpu_check.sh, run with the GPU machine's PyTorch (2.x, CUDA).

For each zoo model (tests/zoo/make_zoo.py's table) and batch size: exports the model with those
shapes to ONNX (the TorchScript exporter, opset 13, as the zoo), saves its inputs as .npy, and
times PyTorch eager on the GPU (TF32 on, as Tessera's default; median of --runs after warm-up,
synchronised). Also measures the device's matrix peak through cuBLAS (torch.matmul of 8192^3,
TF32 and bf16). Prints one JSON object per line.

Usage: python3 scripts/gpu_peer.py --out DIR [--models resnet50,vit_b_16,bert,mobilenetv2]
                                   [--batches 1,64] [--runs 50]
"""

import argparse
import inspect
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "zoo"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import make_zoo  # noqa: E402


def timed(fn, runs, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def peak(n=8192):
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    for label, dtype, tf32 in (("tf32", torch.float32, True), ("fp32", torch.float32, False), ("bf16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        ms = timed(lambda: torch.matmul(a, b), 10, 3)
        out[f"peak_{label}_tflops"] = 2 * n ** 3 / (ms * 1e-3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = True
    return out


def with_batch(spec, batch):
    return [(name, (batch,) + tuple(shape[1:]), dtype) for name, shape, dtype in spec]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,vit_b_16,bert,mobilenetv2")
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    print(json.dumps(peak()), flush=True)
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    for name in [m for m in args.models.split(",") if m]:
        family, ctor, spec = make_zoo.MODELS[name][:3]
        for batch in [int(b) for b in args.batches.split(",")]:
            row = {"model": name, "batch": batch}
            try:
                torch.manual_seed(make_zoo.kSeed)
                model = ctor().eval()
                s = with_batch(spec, batch)
                arrays = make_zoo.make_inputs(s)
                tensors = tuple(torch.from_numpy(a) for a in arrays)
                path = os.path.join(args.out, f"{name}.b{batch}.onnx")
                torch.onnx.export(model, tensors, path, opset_version=make_zoo.kOpset,
                                  input_names=[n for n, _, _ in s], output_names=["output"],
                                  do_constant_folding=True, **legacy)
                row["onnx"] = path
                row["inputs"] = {}
                for (n, _, _), a in zip(s, arrays):
                    f = os.path.join(args.out, f"{name}.b{batch}.{n}.npy")
                    np.save(f, a)
                    row["inputs"][n] = f
                model = model.cuda()
                dev = tuple(t.cuda() for t in tensors)
                with torch.inference_mode():
                    row["torch_eager_ms"] = timed(lambda: model(*dev), args.runs)
            except Exception as e:  # one model failing must not lose the others
                row["error"] = f"{type(e).__name__}: {e}"[:300]
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
