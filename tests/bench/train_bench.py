#!/usr/bin/python3
"""Side-by-side training benchmark: Tessera (`tessera train`) against eager PyTorch.

Four networks, each a sample of samples/ that `tessera train` runs, each trained by both from the
same initial weights, on the same data in the same order, with the same optimizer, schedule, batch
and thread count, and their losses compared step by step:

  lenet     LeNet-5, Fashion-MNIST, 2 epochs, SGD momentum 0.9, lr 0.01, batch 64
  mlp       MLP 784-128-10, the same
  resnet18  CIFAR-style ResNet-18 (batch normalisation in training mode), Fashion-MNIST padded
            to 32x32 in the graph, 20 steps, SGD momentum 0.9, lr 0.01, batch 64
  charlm    2-layer character transformer LM (d 128, 4 heads, causal attention, GELU) on the
            licence texts of Debian's base-files (samples/data/chars.npz), 100 steps of 32 x 64
            characters, AdamW lr 3e-3 weight decay 0.01, cosine schedule
  (--onnx adds lenet-onnx and mlp-onnx: the same networks exported by torch.onnx, so Tessera
  trains what PyTorch wrote.)

The PyTorch side is a lean eager trainer, as a PyTorch user writes one: the whole data set
preloaded as one tensor, batches taken by index (no DataLoader), an nn.Module that runs the
sample's nodes with torch.nn.functional (read from the same JSON graph, so both sides compute the
same function from the same weights), optimizer.zero_grad(), loss.backward(), optimizer.step().
The data order is Tessera's DataLoader's (SplitMix64 Fisher-Yates, engine/data/rng.h),
reimplemented below; weights drawn at load ("init") are reimplemented too.

Each side runs in a process of its own: images per second count every step but the first
(compilation on Tessera's side, primitive creation on PyTorch's), from the wall clock at each
step's end (Tessera's from its insight database); peak memory is the process's maximum resident
set (ru_maxrss), which includes the data set and, for PyTorch, libtorch. With --repeats R each
side runs R times, alternating, and the median throughput is shown with the ratio of each side's
best run beside the ratio of medians (these machines jump between two speeds from run to run, on
both sides, so a median of 3 can pair one side's fast mode with the other's slow one).

Usage: /usr/bin/python3 tests/bench/train_bench.py [--tessera build/release/cli/tessera]
         [--models lenet,mlp,resnet18,charlm] [--onnx] [--threads 2] [--seed 0] [--repeats 1]
         [--steps N (overrides every model's step count)] [--torch-noise] [--bf16] [--json-out FILE]

--bf16 adds a third side, `tessera train --precision bf16` (CPUs with AVX-512 BF16 or AMX: the
convolutions and matrix products of the step in bf16, the weights and optimizer f32), run in the
same alternation: its throughput, its speed-up over Tessera's f32 and its loss.
"""

import argparse
import gzip
import json
import math
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

# OpenBLAS (PyTorch's BLAS on Debian) reads its core type when it loads; 0.3.21 does not know the
# newest CPUs and falls back to AVX2 kernels: force the AVX-512 ones, as tests/zoo/make_zoo.py.
os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")  # gpu_check.sh points elsewhere
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SHUFFLE_STREAM = 0x53485546464C45

MODELS = {
    "lenet": dict(graph="samples/lenet.json", data=FASHION, epochs=2, batch=64, optimizer="sgd", lr=0.01, momentum=0.9),
    "mlp": dict(graph="samples/mlp.json", data=FASHION, epochs=2, batch=64, optimizer="sgd", lr=0.01, momentum=0.9),
    "resnet18": dict(graph="samples/resnet18.json", data=FASHION, steps=20, batch=64, optimizer="sgd", lr=0.01,
                     momentum=0.9),
    "charlm": dict(graph="samples/charlm.json", data="samples/data/chars.npz", steps=100, batch=32, optimizer="adamw",
                   lr=3e-3, weight_decay=0.01, schedule="cosine", loss="output"),
}


# ---- Tessera's data order and initialisers ------------------------------------------------------

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


def uniform_init(seed, n, bound):
    """A param's {"uniform": bound, "seed": seed} (formats/README.md), in NumPy: the same bytes."""
    u64 = np.uint64
    with np.errstate(over="ignore"):
        z = u64(seed) + np.arange(1, n + 1, dtype=u64) * u64(GOLDEN)
        z = (z ^ (z >> u64(30))) * u64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
        z = z ^ (z >> u64(31))
    u = (z >> u64(11)).astype(np.float64) * 2.0 ** -53
    return (bound * (2.0 * u - 1.0)).astype(np.float32)


# ---- data ---------------------------------------------------------------------------------------

def read_idx(path):
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_train_split(data):
    """x as stored (u8 images [N, 1, 28, 28], scaled per batch as Tessera's loader does; integer
    token ids [N, T]) and labels as i64."""
    if data.endswith(".npz"):
        z = np.load(data)
        return z["x"].astype(np.int64), z["labels"].astype(np.int64), False
    def find(stem):
        for name in (stem, stem + ".gz"):
            if os.path.exists(os.path.join(data, name)):
                return os.path.join(data, name)
        sys.exit("train_bench: %s[.gz] not found in %s" % (stem, data))
    x = read_idx(find("train-images-idx3-ubyte"))[:, None, :, :].copy()
    y = read_idx(find("train-labels-idx1-ubyte")).astype(np.int64)
    return x, y, True


# ---- the PyTorch side ----------------------------------------------------------------------------

def graph_module(path):
    """An nn.Module that runs the Tessera JSON graph at `path` with torch.nn.functional, holding its
    weights (the same bytes as Tessera's) as parameters. Returns (module, graph JSON)."""
    import torch
    import torch.nn.functional as F
    with open(path) as f:
        g = json.load(f)
    npz = np.load(os.path.join(os.path.dirname(path), g["weights_file"])) if g.get("weights_file") else {}

    class GraphModule(torch.nn.Module):
        """Runs a Tessera JSON graph's nodes with torch.nn.functional."""

        def __init__(self):
            super().__init__()
            self.weights = torch.nn.ParameterDict()
            self.consts = {}
            self.bn_stats = set()
            for n in g["nodes"]:
                if n["op"] == "BatchNormalization":
                    self.bn_stats.update(n["inputs"][3:5])
            for p in g["params"]:
                dtype, dims = p["type"].split("[", 1)
                shape = [int(d) for d in dims[:-1].split(",")] if dims[:-1].strip() else []
                count = int(np.prod(shape)) if shape else 1
                if "npz" in p:
                    arr = npz[p["npz"]]
                elif "data" in p:
                    arr = np.asarray(p["data"], dtype=np.float32 if dtype == "f32" else np.int64)
                elif "uniform" in p["init"]:
                    arr = uniform_init(p["init"].get("seed", 0), count, p["init"]["uniform"])
                else:
                    arr = np.full(count, p["init"]["constant"], dtype=np.float32)
                t = torch.from_numpy(np.array(arr).reshape(shape).copy())
                if dtype == "f32" and p["name"] not in self.bn_stats:
                    self.weights[self.key(p["name"])] = torch.nn.Parameter(t)
                else:
                    self.consts[p["name"]] = t  # running statistics (updated in place), shapes, indices

        @staticmethod
        def key(name):
            return name.replace(".", "_")

        def device(self):
            return next(iter(self.weights.values())).device

        def value(self, env, name):
            if name in env:
                return env[name]
            if self.key(name) in self.weights:
                return self.weights[self.key(name)]
            return self.consts[name]

        def forward(self, inputs):
            env = dict(inputs)
            for n in g["nodes"]:
                a = n.get("attrs", {})
                ins = [self.value(env, i) if i else None for i in n.get("inputs", [])]
                op = n["op"]
                if op == "Conv":
                    pads = a.get("pads", [0, 0, 0, 0])
                    y = F.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, stride=a.get("strides", [1, 1]),
                                 padding=(pads[0], pads[1]))
                elif op == "Relu":
                    y = F.relu(ins[0])
                elif op == "MaxPool":
                    y = F.max_pool2d(ins[0], a["kernel_shape"], a.get("strides", a["kernel_shape"]))
                elif op == "Flatten":
                    y = torch.flatten(ins[0], a.get("axis", 1))
                elif op == "Gemm":
                    y = torch.addmm(ins[2], ins[0], ins[1])
                elif op == "Pad":
                    p = ins[1].tolist()
                    half = len(p) // 2
                    torch_pads = []
                    for d in reversed(range(half)):
                        torch_pads += [p[d], p[d + half]]
                    y = F.pad(ins[0], torch_pads)
                elif op == "BatchNormalization":
                    y = F.batch_norm(ins[0], ins[3], ins[4], ins[1], ins[2], training=True,
                                     momentum=1.0 - a.get("momentum", 0.9), eps=a.get("epsilon", 1e-5))
                elif op == "Add":
                    y = ins[0] + ins[1]
                elif op == "Mul":
                    y = ins[0] * ins[1]
                elif op == "GlobalAveragePool":
                    y = ins[0].mean(dim=(2, 3), keepdim=True)
                elif op == "Gather":
                    y = F.embedding(ins[1], ins[0])
                elif op == "LayerNormalization":
                    y = F.layer_norm(ins[0], ins[0].shape[-1:], ins[1], ins[2], a.get("epsilon", 1e-5))
                elif op == "MatMul":
                    y = torch.matmul(ins[0], ins[1])
                elif op == "Reshape":
                    shape = [ins[0].shape[i] if s == 0 else s for i, s in enumerate(ins[1].tolist())]
                    y = ins[0].reshape(shape)
                elif op == "Transpose":
                    y = ins[0].permute(*a["perm"])
                elif op == "Softmax":
                    y = F.softmax(ins[0], dim=a.get("axis", -1))
                elif op == "Gelu":
                    y = F.gelu(ins[0])
                elif op == "Constant":
                    y = torch.tensor(a["value"]["tensor"]["data"][0], dtype=torch.float32, device=self.device())
                elif op == "ConstantOfShape":
                    y = torch.full(ins[0].tolist(), a["value"]["tensor"]["data"][0], dtype=torch.float32,
                                   device=self.device())
                elif op == "Trilu":
                    k = int(ins[1]) if len(ins) > 1 else 0
                    y = torch.triu(ins[0], k) if a.get("upper", 1) else torch.tril(ins[0], k)
                elif op == "SoftmaxCrossEntropyLoss":
                    y = F.cross_entropy(ins[0], ins[1])
                else:
                    raise SystemExit("train_bench: op %s is not supported here" % op)
                env[n["outputs"][0]] = y
            return [env[o] for o in g["outputs"]]

    return GraphModule(), g


def torch_worker(cfg):
    """Trains one configuration with eager PyTorch; prints a JSON result line."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(cfg["seed"])
    torch.set_num_threads(cfg["threads"])
    model, g = graph_module(cfg["graph"])
    device = torch.device("cuda" if cfg.get("device", "cpu").startswith("cuda") else "cpu")
    if device.type == "cuda":  # TF32 as Tessera's default (--precision tf32)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    model.to(device)
    model.consts = {k: v.to(device) for k, v in model.consts.items()}
    model.train()
    params = list(model.weights.values())
    if cfg["optimizer"] == "adamw":
        opt = torch.optim.AdamW(params, lr=cfg["lr"], weight_decay=cfg.get("weight_decay", 0.01))
    else:
        opt = torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg.get("momentum", 0.0))
    x_all, y_all, images = load_train_split(cfg["data"])
    x_all, y_all = torch.from_numpy(x_all).to(device), torch.from_numpy(y_all).to(device)
    n, batch = x_all.shape[0], cfg["batch"]
    batches = (n + batch - 1) // batch
    total = cfg.get("steps") or batches * cfg["epochs"]
    input_name = g["inputs"][0]["name"]
    graph_loss = cfg.get("loss") == "output"
    ranks = cfg.get("ranks", 1)
    losses, ends = [], []
    step = 0
    for epoch in range(cfg.get("epochs", 1)):
        order = torch.tensor(epoch_order(n, cfg["seed"], epoch), device=device)
        for k in range(0, n, batch):
            if step >= total:
                break
            if cfg.get("schedule") == "cosine":
                for group in opt.param_groups:
                    group["lr"] = cfg["lr"] * (1.0 + math.cos(math.pi * step / total)) / 2.0
            idx = order[k:k + batch]
            xb, yb = x_all[idx], y_all[idx]
            if images:
                xb = xb.float().div_(255.0)
            opt.zero_grad()
            # With ranks > 1, DDP's arithmetic in one process: each rank's shard of the batch
            # (contiguous, as `tessera train` under mpirun reads it) gives its gradient, the
            # gradients are summed in rank order and divided by the ranks; the loss is their mean.
            shard = -(-xb.shape[0] // ranks)
            loss_sum = 0.0
            for r in range(ranks):
                xs, ys = xb[r * shard:(r + 1) * shard], yb[r * shard:(r + 1) * shard]
                if graph_loss:
                    loss = model({input_name: xs, "labels": ys})[0]
                else:
                    loss = F.cross_entropy(model({input_name: xs})[0], ys)
                loss.backward()
                loss_sum += loss.item()
            if ranks > 1:
                for q in params:
                    q.grad.div_(ranks)
            opt.step()
            losses.append(loss_sum / ranks)
            ends.append(time.perf_counter())
            step += 1
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"losses": losses, "ends": ends, "batch": batch, "n": n, "maxrss_kb": maxrss,
                      "torch": torch.__version__}))


def run_torch(cfg):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-worker", json.dumps(cfg)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("train_bench: the PyTorch worker failed:\n" + out.stderr)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return finish(r["losses"], r["ends"], r["batch"], r["n"], r["maxrss_kb"], extra={"torch": r["torch"], "n_examples": r["n"]})


# ---- the Tessera side ----------------------------------------------------------------------------

def run_tessera(tessera, cfg, graph):
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        cmd = [tessera, "train", graph, "--data", cfg["data"], "--batch", str(cfg["batch"]), "--lr", str(cfg["lr"]),
               "--optimizer", cfg["optimizer"], "--seed", str(cfg["seed"]), "--no-eval", "--db", db, "--json"]
        if not cfg.get("tessera_auto"):
            cmd += ["--threads", str(cfg["threads"])]
        if cfg.get("device"):
            cmd += ["--device", cfg["device"]]
        if cfg.get("steps"):
            cmd += ["--max-steps", str(cfg["steps"])]
        else:
            cmd += ["--epochs", str(cfg["epochs"])]
        if "momentum" in cfg:
            cmd += ["--momentum", str(cfg["momentum"])]
        if "weight_decay" in cfg:
            cmd += ["--weight-decay", str(cfg["weight_decay"])]
        if "schedule" in cfg:
            cmd += ["--schedule", cfg["schedule"]]
        if "loss" in cfg:
            cmd += ["--loss", cfg["loss"]]
        if cfg.get("bf16"):
            cmd += ["--precision", "bf16"]
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "w") as fo, open(err_path, "w") as fe:
            proc = subprocess.Popen(cmd, stdout=fo, stderr=fe)
            _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak memory
            proc.returncode = os.waitstatus_to_exitcode(status)
        stdout, stderr = open(out_path).read(), open(err_path).read()
        if proc.returncode != 0:
            sys.exit("train_bench: %s failed:\n%s" % (" ".join(cmd), stderr))
        rows = sqlite3.connect(db).execute(
            "SELECT value, wall_ns FROM metrics WHERE name = 'train/loss' ORDER BY step").fetchall()
    n = json.loads(stdout.strip().splitlines()[-1]).get("steps", len(rows))
    return finish([r[0] for r in rows], [r[1] * 1e-9 for r in rows], cfg["batch"], None, usage.ru_maxrss,
                  extra={"steps_reported": n})


def finish(losses, ends, batch, n, maxrss_kb, extra):
    """Throughput over every step but the first (the last batch of an epoch may be smaller: the
    count of examples is exact when n is known, else steps * batch)."""
    steps = len(losses)
    seconds = ends[-1] - ends[0] if steps > 1 else float("nan")
    examples = (steps - 1) * batch
    r = {"losses": losses, "steps": steps, "images_per_s": examples / seconds if seconds > 0 else float("nan"),
         "seconds": seconds, "peak_mb": maxrss_kb / 1024.0}
    r.update(extra)
    return r


def onnx_worker(graph, out):
    """Exports the sample at `graph` with torch.onnx (opset 13, batch axis symbolic) to `out`."""
    import torch
    model, g = graph_module(graph)
    name = g["inputs"][0]["name"]

    class One(torch.nn.Module):  # torch.onnx wants positional inputs and one output
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            return self.inner({name: x})[0]

    shape = [1] + [int(d) for d in g["inputs"][0]["type"].split("[", 1)[1][:-1].split(",")[1:]]
    torch.onnx.export(One(), torch.zeros(shape), out, input_names=[name], output_names=[g["outputs"][0]],
                      dynamic_axes={name: {0: "N"}, g["outputs"][0]: {0: "N"}}, opset_version=13)


def export_onnx(name, cfg, out_dir):
    """The sample exported by torch.onnx with the sample's weights, so that Tessera trains a file
    PyTorch wrote. Returns its path."""
    path = os.path.join(out_dir, name + ".onnx")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--onnx-worker", cfg["graph"], path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("train_bench: exporting %s to ONNX failed:\n%s" % (name, out.stderr))
    return path


EARLY_STEPS = 20


def compare(t, p):
    """Largest relative difference of the step losses over the first EARLY_STEPS steps (later,
    float rounding alone makes two runs drift apart: see --torch-noise)."""
    k = min(len(t), len(p), EARLY_STEPS)
    return max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(t[:k], p[:k])) if k else float("nan")


def final_loss(r, cfg):
    """The mean loss of the last epoch (epoch runs, as `tessera train` prints it) or of the last 10
    steps: one batch's loss alone varies by tens of percent from batch to batch."""
    losses = r["losses"]
    tail = min(len(losses), 10)
    if not cfg.get("steps") and cfg.get("epochs"):
        tail = min(len(losses), -(-r.get("n_examples", 0) // cfg["batch"])) or tail
    return sum(losses[-tail:]) / tail


def cpu_name():
    try:
        for line in subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--torch-worker":
        torch_worker(json.loads(sys.argv[2]))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--onnx-worker":
        onnx_worker(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build/release/cli/tessera"))
    ap.add_argument("--models", default="lenet,mlp,resnet18,charlm")
    ap.add_argument("--onnx", action="store_true", help="also train lenet and mlp from torch.onnx exports")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="train every model this many steps (0: the defaults)")
    ap.add_argument("--torch-noise", action="store_true",
                    help="also train with PyTorch on 1 thread: how far two PyTorch runs drift apart (the floor of max step Δ)")
    ap.add_argument("--bf16", action="store_true", help="also train with tessera --precision bf16 (a third side)")
    ap.add_argument("--json-out")
    ap.add_argument("--device", default="cpu", help="cpu or cuda: both sides train there (scripts/gpu_check.sh)")
    ap.add_argument("--busy", type=int, default=0,
                    help="keep N cores busy with busy-loop processes for the whole benchmark (training under load)")
    ap.add_argument("--tessera-auto", action="store_true",
                    help="run tessera without --threads: its default, one per core, fewer while other processes hold cores")
    args = ap.parse_args()
    if args.threads < 1 or args.repeats < 1 or args.steps < 0:
        ap.error("--threads and --repeats must be >= 1, --steps >= 0")
    if not os.path.exists(args.tessera):
        ap.error("no tessera binary at %s (build first: bash scripts/build.sh release)" % args.tessera)
    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in MODELS:
            ap.error("unknown model %s (expected %s)" % (m, ", ".join(MODELS)))
    rows = []
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        run_all(args, names, rows)
    finally:
        for b in busy:
            b.kill()
    report(args, rows)


def run_all(args, names, rows):
    with tempfile.TemporaryDirectory() as tmp:
        plan = [(m, None) for m in names]
        if args.onnx:
            plan += [(m + "-onnx", m) for m in ("lenet", "mlp") if m in names]
        for label, onnx_of in plan:
            base = onnx_of or label
            cfg = dict(MODELS[base], threads=args.threads, seed=args.seed, tessera_auto=args.tessera_auto,
                       device=args.device)
            cfg["graph"] = os.path.join(ROOT, cfg["graph"])
            if not cfg["data"].startswith("/"):
                cfg["data"] = os.path.join(ROOT, cfg["data"])
            if args.steps:
                cfg["steps"] = args.steps
            graph = export_onnx(base, cfg, tmp) if onnx_of else cfg["graph"]
            ts, ps, bs = [], [], []
            for _ in range(args.repeats):
                ts.append(run_tessera(args.tessera, cfg, graph))
                ps.append(run_torch(cfg))
                if args.bf16:
                    bs.append(run_tessera(args.tessera, dict(cfg, bf16=True), graph))
                print("  %s: tessera %.0f img/s, torch %.0f img/s%s" % (
                    label, ts[-1]["images_per_s"], ps[-1]["images_per_s"],
                    ", tessera bf16 %.0f img/s" % bs[-1]["images_per_s"] if bs else ""), file=sys.stderr)
            t = dict(ts[0], images_per_s=statistics.median(r["images_per_s"] for r in ts),
                     peak_mb=max(r["peak_mb"] for r in ts))
            p = dict(ps[0], images_per_s=statistics.median(r["images_per_s"] for r in ps),
                     peak_mb=max(r["peak_mb"] for r in ps))
            t["best_images_per_s"] = max(r["images_per_s"] for r in ts)
            p["best_images_per_s"] = max(r["images_per_s"] for r in ps)
            t["n_examples"] = p["n_examples"]
            t["final_loss"], p["final_loss"] = final_loss(t, cfg), final_loss(p, cfg)
            row = {"model": label, "config": {k: v for k, v in cfg.items() if k != "graph"}, "tessera": t, "torch": p,
                   "max_step_loss_rel_diff": compare(t["losses"], p["losses"])}
            if bs:
                b = dict(bs[0], images_per_s=statistics.median(r["images_per_s"] for r in bs),
                         peak_mb=max(r["peak_mb"] for r in bs))
                b["n_examples"] = p["n_examples"]
                b["final_loss"] = final_loss(b, cfg)
                row["bf16"] = b
            if args.torch_noise:
                row["torch_1_thread_rel_diff"] = compare(run_torch(dict(cfg, threads=1))["losses"], p["losses"])
            rows.append(row)


def report(args, rows):
    torch_version = rows[0]["torch"].get("torch", "?") if rows else "?"
    print("%s, %d thread(s)%s, seed %d, torch %s, median of %d run(s) per side%s" %
          (cpu_name(), args.threads, " (tessera: its default, following the load)" if args.tessera_auto else "", args.seed,
           torch_version, args.repeats, ", %d core(s) kept busy by other processes" % args.busy if args.busy else ""))
    noise = args.torch_noise
    bf16 = any("bf16" in r for r in rows)
    print("%-10s %6s %12s %12s %6s %6s %10s %10s %12s %12s %10s%s%s" % (
        "model", "steps", "tessera/s", "torch/s", "ratio", "best", "tessera MB", "torch MB", "tessera loss",
        "torch loss", "max step Δ", " torch 1t Δ" if noise else "",
        " %10s %9s %9s %10s" % ("bf16/s", "bf16/f32", "bf16/torch", "bf16 loss") if bf16 else ""))
    for r in rows:
        t, p = r["tessera"], r["torch"]
        print("%-10s %6d %12.1f %12.1f %6.2f %6.2f %10.0f %10.0f %12.4f %12.4f %10.1e%s%s" % (
            r["model"], t["steps"], t["images_per_s"], p["images_per_s"], t["images_per_s"] / p["images_per_s"],
            t["best_images_per_s"] / p["best_images_per_s"], t["peak_mb"], p["peak_mb"], t["final_loss"], p["final_loss"], r["max_step_loss_rel_diff"],
            " %10.1e" % r["torch_1_thread_rel_diff"] if noise else "",
            " %10.1f %9.2f %9.2f %10.4f" % (r["bf16"]["images_per_s"], r["bf16"]["images_per_s"] / t["images_per_s"],
                                            r["bf16"]["images_per_s"] / p["images_per_s"], r["bf16"]["final_loss"])
            if "bf16" in r else ""))
    print("(images or sequences per second, every step but the first (medians; best: the ratio of each side's fastest"
          " run, steadier on a machine whose speed jumps between runs); peak resident memory of each process;"
          " loss: the mean over the last epoch, or the last 10 steps; max step Δ: the largest relative difference of"
          " the two losses at the same step over the first %d%s)" % (EARLY_STEPS,
          "; torch 1t Δ: the same between PyTorch on 1 thread and on --threads, the drift of float rounding alone" if noise else ""))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
