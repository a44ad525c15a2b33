#!/usr/bin/env python3
"""The Python package's overheads (issue targets; printed, never asserted):

1. session.run on LeNet-5 batch 1 against the same C++ Session::run called in a C++ loop, in one
   process (median of many calls each): the difference is what Python adds.
2. insight logging: scalar points per second through run.log(step, loss=..., accuracy=...), and how
   much it slows a caller doing ~0.2 ms of NumPy work per step.

    PYTHONPATH=build/release/python python3 scripts/python_bench.py
"""
import os
import pathlib
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np

import tessera

ROOT = pathlib.Path(__file__).resolve().parents[1]


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name"))
    except Exception:
        return platform.processor()


def bench_session(runs=20000):
    sess = tessera.InferenceSession(ROOT / "samples" / "lenet.json", threads=1)
    x = np.random.default_rng(0).random((1, 1, 28, 28), dtype=np.float32)
    feeds = {"x": x}
    for _ in range(200):
        sess.run(None, feeds)
    py, cpp = [], []
    for _ in range(5):  # interleaved rounds: the machine's drift hits both alike
        cpp += sess._time_cpp(feeds, runs // 5)
        for _ in range(runs // 5):
            t0 = time.perf_counter_ns()
            sess.run(None, feeds)
            py.append(time.perf_counter_ns() - t0)
    mp, mc = statistics.median(py), statistics.median(cpp)
    print(f"session.run LeNet-5 batch 1, 1 thread: Python {mp / 1e3:.2f} us, C++ {mc / 1e3:.2f} us, "
          f"overhead {(mp - mc) / 1e3:.2f} us (median of {len(py)} calls each)")


def bench_logging(points=300000):
    with tempfile.TemporaryDirectory() as d:
        with tessera.insight.run("bench", db=os.path.join(d, "i.db")) as run:
            t0 = time.perf_counter()
            for step in range(points // 2):
                run.log(step, loss=0.5, accuracy=0.9)
            dt = time.perf_counter() - t0
            run.flush()
            print(f"run.log: {points / dt:,.0f} scalar points/s from Python (2 per call)")
            a = np.random.default_rng(0).random((96, 96), dtype=np.float32)

            def work():
                b = a
                for _ in range(3):
                    b = np.tanh(b @ a)
                return float(b[0, 0])

            steps = 3000
            plain, logged = [], []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(steps):
                    work()
                plain.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                for s in range(steps):
                    v = work()
                    run.log(s, loss=v, accuracy=v)
                logged.append(time.perf_counter() - t0)
            p, l = min(plain) / steps, min(logged) / steps
            print(f"a {p * 1e3:.3f} ms NumPy step: {l * 1e3:.3f} ms with 2 points logged per step "
                  f"({100 * (l - p) / p:+.2f}%)")


if __name__ == "__main__":
    print(f"CPU: {cpu_name()}")
    bench_session()
    bench_logging()
