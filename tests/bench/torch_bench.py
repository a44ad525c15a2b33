#!/usr/bin/python3
"""Times one benchmark model in eager PyTorch (the third, optional peer of compare.py --torch).

Rebuilds the model exactly as tests/zoo/make_zoo.py does (same constructor, same seed, eval mode),
feeds its inputs (NAME.<input>.npy) under torch.no_grad() (inference mode: TransformerEncoder takes its fused fast path),
and prints {"median_ms", "min_ms", "mean_ms", "runs", "threads", "rel_diff"} as one JSON line
(rel_diff: this run's output against NAME.torch.npy, as compare.py measures it: about 0).
OPENBLAS_CORETYPE is forced to SkylakeX by importing make_zoo before torch loads.

Usage: /usr/bin/python3 tests/bench/torch_bench.py NAME [--models-dir DIR] [--threads N] [--runs R]
         [--warmup W]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo"))
import make_zoo  # noqa: E402  (sets OPENBLAS_CORETYPE, then imports torch)

import numpy as np  # noqa: E402
import torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(make_zoo.kZoo))
    parser.add_argument("--models-dir", default="build/zoo")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    if args.threads < 1 or args.runs < 1 or args.warmup < 0:
        parser.error("--threads and --runs must be >= 1, --warmup >= 0")

    torch.set_num_threads(args.threads)
    torch.manual_seed(make_zoo.kSeed)
    _, make, spec, _ = make_zoo.kZoo[args.name]
    model = make()
    make_zoo.calibrate(model, spec)
    x = [torch.from_numpy(np.load(os.path.join(args.models_dir, f"{args.name}.{n}.npy"))) for n, _, _ in spec]
    times = []
    with torch.no_grad():
        y = model(*x).numpy()
        for _ in range(args.warmup):
            model(*x)
        for _ in range(args.runs):
            t = time.perf_counter()
            model(*x)
            times.append((time.perf_counter() - t) * 1e3)
    # Guards against this model drifting from the exported one (another seed, another constructor).
    reference = np.load(os.path.join(args.models_dir, args.name + ".torch.npy"))
    rel_diff = float(np.max(np.abs(y - reference)) / (np.max(np.abs(reference)) or 1.0))
    print(json.dumps({"median_ms": round(statistics.median(times), 3), "min_ms": round(min(times), 3),
                      "mean_ms": round(statistics.fmean(times), 3), "runs": args.runs,
                      "threads": torch.get_num_threads(), "rel_diff": rel_diff}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
