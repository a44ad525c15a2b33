#!/usr/bin/python3
"""Side-by-side training benchmark: Tessera (`tessera train`) against eager PyTorch on Fashion-MNIST.

Both train the same sample network (samples/<model>.json, read here into an equivalent torch
module), from the same initial weights, with the same optimizer (SGD, momentum), learning rate,
batch size, thread count and the same data order: the epoch permutations are Tessera's data
loader's (SplitMix64 Fisher-Yates, engine/data/rng.h), reimplemented below. Images are scaled to
[0, 1] in both. Images per second count the training steps only (data already in memory for
PyTorch; Tessera's loader runs in a worker thread); evaluation on the 10,000 test images follows
each run. Prints one table and, with --json-out, the figures as JSON.

Usage: /usr/bin/python3 tests/bench/train_bench.py --tessera build/release/cli/tessera
         [--models lenet,mlp] [--epochs 2] [--batch 64] [--lr 0.01] [--momentum 0.9]
         [--threads 2] [--seed 0] [--data /usr/share/datasets/fashion-mnist] [--json-out FILE]
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

# OpenBLAS (PyTorch's BLAS on Debian) reads its core type when it loads; 0.3.21 does not know the
# newest CPUs and falls back to AVX2 kernels: force the AVX-512 ones, as tests/zoo/make_zoo.py.
os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SHUFFLE_STREAM = 0x53485546464C45


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def epoch_order(n, seed, epoch):
    """Tessera's DataLoader order for (seed, epoch): engine/data/loader.cpp make_order."""
    s = mix((seed + GOLDEN) & MASK)
    s = mix(s ^ ((SHUFFLE_STREAM + 2 * GOLDEN) & MASK))
    s = mix(s ^ ((epoch + 3 * GOLDEN) & MASK))
    s = mix(s ^ ((0 + 4 * GOLDEN) & MASK))
    state = s
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        bound = i + 1
        limit = MASK - (MASK % bound)
        while True:
            state = (state + GOLDEN) & MASK
            r = mix(state)
            if r < limit:
                break
        j = r % bound
        order[i], order[j] = order[j], order[i]
    return order


def read_idx(path):
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, prefix):
    def find(stem):
        for name in (stem, stem + ".gz"):
            if os.path.exists(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        sys.exit("train_bench: %s[.gz] not found in %s" % (stem, data_dir))
    x = read_idx(find(prefix + "-images-idx3-ubyte")).astype(np.float32) / 255.0
    y = read_idx(find(prefix + "-labels-idx1-ubyte")).astype(np.int64)
    return torch.from_numpy(x[:, None, :, :].copy()), torch.from_numpy(y.copy())


class GraphModule(torch.nn.Module):
    """A chain of Conv/Relu/MaxPool/Flatten/Gemm nodes read from a Tessera JSON graph."""

    def __init__(self, path):
        super().__init__()
        with open(path) as f:
            g = json.load(f)
        weights = np.load(os.path.join(os.path.dirname(path), g["weights_file"])) if g.get("weights_file") else {}
        self.params = torch.nn.ParameterDict()
        for p in g["params"]:
            arr = np.asarray(weights[p["npz"]] if "npz" in p else p["data"], dtype=np.float32)
            shape = [int(d) for d in p["type"][p["type"].index("[") + 1:-1].split(",")]
            self.params[p["name"].replace(".", "_")] = torch.nn.Parameter(torch.from_numpy(arr.reshape(shape).copy()))
        self.nodes = g["nodes"]

    def p(self, name):
        return self.params[name.replace(".", "_")]

    def forward(self, x):
        for n in self.nodes:
            a = n.get("attrs", {})
            if n["op"] == "Conv":
                pads = a.get("pads", [0, 0, 0, 0])
                x = F.conv2d(x, self.p(n["inputs"][1]), self.p(n["inputs"][2]), stride=a.get("strides", [1, 1]),
                             padding=(pads[0], pads[1]))
            elif n["op"] == "Relu":
                x = F.relu(x)
            elif n["op"] == "MaxPool":
                x = F.max_pool2d(x, a["kernel_shape"], a.get("strides", a["kernel_shape"]))
            elif n["op"] == "Flatten":
                x = torch.flatten(x, a.get("axis", 1))
            elif n["op"] == "Gemm":
                x = torch.addmm(self.p(n["inputs"][2]), x, self.p(n["inputs"][1]))
            else:
                raise SystemExit("train_bench: op %s is not supported here" % n["op"])
        return x


def torch_train(model_path, train, test, args):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model = GraphModule(model_path)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    x_all, y_all = train
    n = x_all.shape[0]
    steps, seconds, losses = 0, 0.0, []
    for epoch in range(args.epochs):
        order = torch.tensor(epoch_order(n, args.seed, epoch))
        xs, ys = x_all[order], y_all[order]  # the permutation, applied before timing starts
        model.train()
        epoch_loss, batches = 0.0, 0
        t0 = time.perf_counter()
        for k in range(0, n, args.batch):
            xb, yb = xs[k:k + args.batch], ys[k:k + args.batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            epoch_loss += loss.item()
            batches += 1
            steps += 1
        seconds += time.perf_counter() - t0
        losses.append(epoch_loss / batches)
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(test[0][k:k + 1000]).argmax(1) == test[1][k:k + 1000]).sum())
                      for k in range(0, test[0].shape[0], 1000))
    return {"images_per_s": n * args.epochs / seconds, "train_loss": losses[-1],
            "test_accuracy": correct / test[0].shape[0], "seconds": seconds}


def tessera_train(model_path, args):
    cmd = [args.tessera, "train", model_path, "--data", args.data, "--epochs", str(args.epochs), "--batch",
           str(args.batch), "--lr", str(args.lr), "--optimizer", "sgd", "--momentum", str(args.momentum),
           "--threads", str(args.threads), "--seed", str(args.seed), "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit("train_bench: %s failed:\n%s" % (" ".join(cmd), out.stderr))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build/release/cli/tessera"))
    ap.add_argument("--models", default="lenet,mlp")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.threads < 1:
        ap.error("--epochs, --batch and --threads must be >= 1")
    train = load_split(args.data, "train")
    test = load_split(args.data, "t10k")
    rows = []
    for name in args.models.split(","):
        path = os.path.join(ROOT, "samples", name + ".json")
        if not os.path.exists(path):
            ap.error("no sample %s" % path)
        t = tessera_train(path, args)
        p = torch_train(path, train, test, args)
        rows.append({"model": name, "tessera": t, "torch": p})
    print("Fashion-MNIST, %d epoch(s), batch %d, SGD lr %g momentum %g, %d thread(s), seed %d, torch %s"
          % (args.epochs, args.batch, args.lr, args.momentum, args.threads, args.seed, torch.__version__))
    print("%-6s %14s %14s %7s %14s %14s %12s %12s" % ("model", "tessera img/s", "torch img/s", "ratio",
                                                       "tessera acc", "torch acc", "tessera loss", "torch loss"))
    for r in rows:
        t, p = r["tessera"], r["torch"]
        print("%-6s %14.0f %14.0f %7.2f %13.2f%% %13.2f%% %12.4f %12.4f" % (
            r["model"], t["images_per_s"], p["images_per_s"], t["images_per_s"] / p["images_per_s"],
            100 * t["test_accuracy"], 100 * p["test_accuracy"], t["train_loss"], p["train_loss"]))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
