#!/usr/bin/env python3
"""Runs an ONNX file with tessera.InferenceSession, as one would with ONNX Runtime, and prints what
the engine compiled: stages, kernels and memory.

    python3 samples/python/run_onnx.py model.onnx [--threads 2] [--dim N=8]

Inputs are random (seeded) with symbolic dims from --dim (default 1); outputs are summarised.
"""
import argparse
import time

import numpy as np

import tessera


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dim", action="append", default=[], help="SYMBOL=SIZE for symbolic dims (default 1)")
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    dims = dict((k, int(v)) for k, v in (d.split("=") for d in a.dim))

    sess = tessera.InferenceSession(a.model, threads=a.threads)
    rng = np.random.default_rng(0)
    feeds = {}
    for arg in sess.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in arg.shape]
        if arg.dtype.startswith("f"):
            feeds[arg.name] = rng.random(shape, dtype=np.float32).astype(arg.dtype.replace("f", "float"))
        elif arg.dtype == "bool":
            feeds[arg.name] = rng.random(shape) < 0.5
        else:
            feeds[arg.name] = rng.integers(0, 2, shape).astype(np.dtype(arg.dtype.replace("i", "int").replace("u", "uint")))
        print(f"input  {arg.name}: {arg.type} {arg.shape} -> fed {list(feeds[arg.name].shape)}")

    outs = sess.run(None, feeds)
    times = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    for arg, out in zip(sess.get_outputs(), outs):
        print(f"output {arg.name}: {out.dtype}{list(out.shape)} mean {float(np.mean(out)):.5g}")
    print(f"median {1e3 * float(np.median(times)):.3f} ms over {a.runs} runs, {a.threads} thread(s)")
    print("stages:", ", ".join(f"{s['stage']} {1e3 * s['seconds']:.1f} ms" for s in sess.stages))
    plan = sess.plan
    kernels = sum(1 for s in plan["steps"] if s["kind"] == "kernel")
    print(f"{len(plan['steps'])} steps ({kernels} fast kernels), arena {plan['peak_bytes'] / 1e6:.2f} MB")
    for s in plan["steps"]:
        if s["kind"] == "reference":
            print(f"  reference kernel: {s['node']} ({s['op']}): {s['why_reference']}")


if __name__ == "__main__":
    main()
