#!/usr/bin/python3
"""Reading and running a graph stays linear in its size, in every format.

A chain of N Relu nodes (made with onnx.helper, as another exporter would write it) at N = 10,000
and 100,000, as .onnx and converted by `tessera convert` to .tsr and .json, through
`tessera info` and `tessera run`. Each command's CPU time (user + system of the child, which other
processes on the machine barely change) less that of a 1-node chain is divided by N: the time per
node. Linear code keeps it flat from 10k to 100k; code that looks every name up by a scan (what
made a 100k-node .onnx take over 120 s in `info`) multiplies it by 10. The check fails when the
time per node at 100k exceeds 3x the one at 10k: a complexity class, not a speed, so a slow or
busy machine does not fail it. The table of figures is printed either way.

    check_scale.py TESSERA [--sizes 10000,100000]
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper


def chain(n, path):
    nodes = [helper.make_node("Relu", ["x" if i == 0 else "v%d" % (i - 1)], ["y" if i == n - 1 else "v%d" % i],
                              name="r%d" % i) for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="check_scale"), path)


def timed(cmd):
    """(CPU seconds, wall seconds) of one command, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tessera")
    ap.add_argument("--sizes", default="10000,100000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    env_cmd = lambda *a: [args.tessera, *a]  # noqa: E731
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for n in [1] + sizes:
            onnx_path = os.path.join(tmp, "chain%d.onnx" % n)
            chain(n, onnx_path)
            files[(n, "onnx")] = onnx_path
            for ext in ("tsr", "json"):
                out = os.path.join(tmp, "chain%d.%s" % (n, ext))
                timed(env_cmd("convert", onnx_path, out))
                files[(n, ext)] = out
        print("%-6s %-5s %8s %10s %10s %12s" % ("format", "cmd", "nodes", "cpu s", "wall s", "us per node"))
        for ext in ("onnx", "tsr", "json"):
            for cmd in ("info", "run"):
                extra = ["--threads", "1", "--no-record"] if cmd == "run" else []
                base_cpu, _ = timed(env_cmd(cmd, files[(1, ext)], *extra))
                per_node = {}
                for n in sizes:
                    cpu, wall = timed(env_cmd(cmd, files[(n, ext)], *extra))
                    per_node[n] = max(cpu - base_cpu, 0.0) / n * 1e6
                    print("%-6s %-5s %8d %10.2f %10.2f %12.2f" % (ext, cmd, n, cpu, wall, per_node[n]))
                lo, hi = per_node[sizes[0]], per_node[sizes[-1]]
                if hi > 3 * max(lo, 1.0):  # under 1 us a node, noise: compare against 1 us
                    failures.append("%s %s: %.2f us per node at %d nodes, %.2f at %d: grows with the size"
                                    % (ext, cmd, hi, sizes[-1], lo, sizes[0]))
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print("ok: time per node flat from %d to %d nodes in .onnx, .tsr and .json (info and run)" % (sizes[0], sizes[-1]))


if __name__ == "__main__":
    main()
