#!/usr/bin/python3
"""int8 against fp32: `tessera quantize` (static, calibrated) measured for accuracy and speed.

1. Accuracy: LeNet-5 (samples/lenet.json) trained 2 epochs on Fashion-MNIST by `tessera train`
   (seed 0), quantized with min-max and with percentile calibration on 512 training images; test
   accuracy on the 10,000 test images of the fp32 graph, of each int8 file in Tessera, and of the
   same int8 file in ONNX Runtime.
2. Speed: zoo CNNs (tests/zoo, PyTorch exports, batch 1) and LeNet at batch 64, quantized on 32
   random inputs of the zoo's distribution; median latency of the fp32 and the int8 file in
   Tessera and in ONNX Runtime, interleaved rounds, 2 threads each; and how far the int8 outputs
   of each engine are from Tessera's fp32 ones (max |int8 - fp32| / max |fp32|).

Usage: tests/bench/quant_bench.py --tessera build/release/cli/tessera [--models resnet18,mobilenetv2]
       [--rounds 3] [--runs 20] [--work build/quant_bench] [--no-ort]
Prints the CPU first (lscpu's model name), then the two tables. Needs numpy, the zoo
(tests/zoo/make_zoo.py) and Fashion-MNIST (Debian's dataset-fashion-mnist); ONNX Runtime through
node and build/npm/node_modules (scripts/npm.sh), else the ORT columns show "-".
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

from train_bench import read_idx  # the same IDX reader

kHere = os.path.dirname(os.path.abspath(__file__))
kRoot = os.path.dirname(os.path.dirname(kHere))
kFashion = "/usr/share/datasets/fashion-mnist"


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("quant_bench: %s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


class Ort:
    def __init__(self, node):
        self.node = node
        self.env = dict(os.environ)
        self.env.setdefault("NODE_PATH", os.path.join(kRoot, "build", "npm", "node_modules"))
        self.ok = node is not None and os.path.isdir(os.path.join(self.env["NODE_PATH"], "onnxruntime-node"))

    def cmd(self, model, inputs, extra):
        c = [self.node, os.path.join(kHere, "ort_bench.js"), model]
        for i in inputs:
            c += ["--input", i]
        return c + extra

    def outputs(self, model, inputs, out):
        run(self.cmd(model, inputs, ["--runs", "1", "--warmup", "0", "--output", out]), env=self.env)
        return np.load(out)

    def time(self, model, inputs, runs):
        p = run(self.cmd(model, inputs, ["--runs", str(runs), "--threads", "2"]), env=self.env)
        return json.loads(p.stdout.strip().splitlines()[-1])["median_ms"]


def tessera_outputs(tessera, model, inputs, out_dir, extra=()):
    cmd = [tessera, "run", model, "--threads", "2", "--no-record", "--output-dir", out_dir] + list(extra)
    for i in inputs:
        cmd += ["--input", i]
    run(cmd)
    files = [f for f in os.listdir(out_dir) if f.endswith(".npy")]
    return np.load(os.path.join(out_dir, sorted(files)[0]))


def tessera_time(tessera, model, inputs, runs):
    cmd = [tessera, "bench", model, "--threads", "2", "--runs", str(runs), "--json", "--no-record"]
    for i in inputs:
        cmd += ["--input", i]
    return json.loads(run(cmd).stdout.strip().splitlines()[-1])["median_ms"]


def accuracy(tessera, ort, work):
    ckpt_dir = os.path.join(work, "lenet_run")
    ckpt = os.path.join(ckpt_dir, "epoch-0002.tsc")
    if not os.path.exists(ckpt):
        run([tessera, "train", os.path.join(kRoot, "samples", "lenet.json"), "--data", kFashion, "--epochs", "2",
             "--optimizer", "momentum", "--lr", "0.01", "--batch", "64", "--seed", "0", "--threads", "2",
             "--checkpoint-dir", ckpt_dir, "--no-record"])
    x = (read_idx(os.path.join(kFashion, "t10k-images-idx3-ubyte.gz")).astype(np.float32) / 255.0)[:, None, :, :]
    labels = read_idx(os.path.join(kFashion, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    x_path = os.path.join(work, "fashion_test_x.npy")
    np.save(x_path, x)
    rows = []
    fp32 = tessera_outputs(tessera, os.path.join(kRoot, "samples", "lenet.json"), ["x=" + x_path],
                           os.path.join(work, "out_fp32"), ["--checkpoint", ckpt])
    acc_fp32 = float((fp32.argmax(1) == labels).mean())
    rows.append(("fp32 (samples/lenet.json + checkpoint)", acc_fp32, None))
    for method in ["minmax", "percentile"]:
        model = os.path.join(work, "lenet_int8_%s.onnx" % method)
        run([tessera, "quantize", os.path.join(kRoot, "samples", "lenet.json"), model, "--checkpoint", ckpt,
             "--calibrate", kFashion, "--method", method, "--samples", "512"])
        t = tessera_outputs(tessera, model, ["x=" + x_path], os.path.join(work, "out_" + method))
        acc_ort = None
        if ort.ok:
            o = ort.outputs(model, [x_path], os.path.join(work, "ort_%s.npy" % method))
            acc_ort = float((o.argmax(1) == labels).mean())
        rows.append(("int8 %s" % method, float((t.argmax(1) == labels).mean()), acc_ort))
    return rows


def speed(tessera, ort, work, models, rounds, runs):
    zoo = os.path.join(kRoot, "build", "zoo")
    manifest = json.load(open(os.path.join(zoo, "models.json")))
    rows = []
    for name in models:
        if name == "lenet":
            fp32 = os.path.join(work, "lenet_fp32.onnx")
            run([tessera, "convert", os.path.join(kRoot, "samples", "lenet.json"), fp32])
            x = np.random.default_rng(1).random((64, 1, 28, 28), dtype=np.float32)
            inp = "x=" + os.path.join(work, "lenet_x64.npy")
            np.save(inp[2:], x)
        else:
            m = manifest[name]
            fp32 = os.path.join(zoo, name + ".onnx")
            inp = m["inputs"][0]["name"] + "=" + os.path.join(zoo, m["inputs"][0]["file"])
            x = np.load(inp.split("=", 1)[1])
        calib = os.path.join(work, name + "_calib.npz")
        rng = np.random.default_rng(2)
        cx = rng.standard_normal((32,) + x.shape[1:]).astype(np.float32) * x.std() + x.mean()
        np.savez(calib, x=cx, labels=np.zeros(32, dtype=np.int64))
        int8 = os.path.join(work, name + "_int8.onnx")
        run([tessera, "quantize", fp32, int8, "--calibrate", calib, "--samples", "32"])
        ref = tessera_outputs(tessera, fp32, [inp], os.path.join(work, name + "_o32"))
        q = tessera_outputs(tessera, int8, [inp], os.path.join(work, name + "_o8"))
        diff = float(np.abs(q - ref).max() / max(1e-30, np.abs(ref).max()))
        ort_diff = None
        if ort.ok:
            o = ort.outputs(int8, [inp], os.path.join(work, name + "_ort8.npy"))
            ort_diff = float(np.abs(o - ref).max() / max(1e-30, np.abs(ref).max()))
        times = {k: [] for k in ["t32", "t8", "o32", "o8"]}
        for _ in range(rounds):
            times["t32"].append(tessera_time(tessera, fp32, [inp], runs))
            times["t8"].append(tessera_time(tessera, int8, [inp], runs))
            if ort.ok:
                times["o32"].append(ort.time(fp32, [inp], runs))
                times["o8"].append(ort.time(int8, [inp], runs))
        med = {k: (statistics.median(v) if v else None) for k, v in times.items()}
        rows.append((name, med, diff, ort_diff))
    return rows


def fmt(v, digits=2):
    return "-" if v is None else ("%.*f" % (digits, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tessera", default=os.path.join(kRoot, "build", "release", "cli", "tessera"))
    ap.add_argument("--models", default="resnet18,resnet50,mobilenetv2,lenet")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--work", default=os.path.join(kRoot, "build", "quant_bench"))
    ap.add_argument("--no-ort", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ort = Ort(None if args.no_ort else shutil.which("node"))
    print("CPU: %s; threads 2; ONNX Runtime %s" % (cpu_name(), "onnxruntime-node" if ort.ok else "not found"))
    print()
    print("| LeNet-5 on Fashion-MNIST's 10,000 test images | Tessera | ONNX Runtime (same file) |")
    print("|---|---|---|")
    for label, acc, acc_ort in accuracy(args.tessera, ort, args.work):
        print("| %s | %s%% | %s |" % (label, fmt(100 * acc), "-" if acc_ort is None else fmt(100 * acc_ort) + "%"))
    print()
    print("| model | Tessera fp32 ms | Tessera int8 ms | speed-up | ORT fp32 ms | ORT int8 ms | int8 vs fp32 output, "
          "Tessera / ORT |")
    print("|---|---|---|---|---|---|---|")
    for name, med, diff, ort_diff in speed(args.tessera, ort, args.work, args.models.split(","), args.rounds, args.runs):
        print("| %s | %s | %s | %sx | %s | %s | %.1e / %s |" % (
            name, fmt(med["t32"]), fmt(med["t8"]), fmt(med["t32"] / med["t8"]), fmt(med["o32"]), fmt(med["o8"]), diff,
            "-" if ort_diff is None else "%.1e" % ort_diff))


if __name__ == "__main__":
    main()
