#!/usr/bin/env python3
"""End-to-end checks of `tessera convert` and `tessera info` across the formats: every sample goes
JSON -> .tsr -> JSON, -> .tsr with a side file, -> .tir, -> ONNX -> .tsr, and every copy runs with
bit-identical outputs to the original; a corrupt weight, a foreign file, a newer version and bad
flags give clear errors naming the file.

Usage: check_convert_cli.py TESSERA REPO_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

tessera, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def run(*args):
    p = subprocess.run([tessera, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def outputs(graph, x_path, out_dir):
    rc, out, err = run("run", graph, "--input", "x=" + x_path, "--output-dir", out_dir, "--threads", "1", "--no-record")
    if rc != 0:
        return None, err.strip()
    return {f: np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))}, ""


samples = {"lenet": (3, 1, 28, 28), "mlp": (3, 1, 28, 28), "rnn": (3, 8, 2)}
with tempfile.TemporaryDirectory() as tmp:
    for name, shape in samples.items():
        src = os.path.join(root, "samples", name + ".json")
        x = os.path.join(tmp, name + "_x.npy")
        np.save(x, np.random.RandomState(1).randn(*shape).astype(np.float32))
        want, err = outputs(src, x, os.path.join(tmp, name + "_want"))
        check(want is not None, "%s runs from JSON (%s)" % (name, err))
        chain = [
            (src, name + ".tsr", []),
            (name + ".tsr", name + "_back.json", []),
            (name + "_back.json", name + "_ext.tsr", ["--external-data"]),
            (name + "_ext.tsr", name + ".tir", []),
            (name + ".tir", name + ".onnx", []),
            (name + ".onnx", name + "_from_onnx.tsr", []),
            (name + ".tsr", name + "_as_json.bin", ["--to", "json"]),
        ]
        for a, b, flags in chain:
            a_path = a if os.path.isabs(a) else os.path.join(tmp, a)
            rc, out, err = run("convert", a_path, os.path.join(tmp, b), *flags)
            check(rc == 0 and "wrote" in out, "%s: convert %s -> %s %s (%s)" % (name, os.path.basename(a), b, " ".join(flags), err.strip()))
        check(os.path.exists(os.path.join(tmp, name + "_ext.tsr.data")), "%s: --external-data writes the side file" % name)
        for copy in (name + ".tsr", name + "_back.json", name + "_ext.tsr", name + ".tir", name + ".onnx", name + "_from_onnx.tsr"):
            got, err = outputs(os.path.join(tmp, copy), x, os.path.join(tmp, copy + "_out"))
            same = got is not None and want is not None and got.keys() == want.keys() and all(
                np.array_equal(got[k], want[k]) for k in want)
            check(same, "%s: %s runs with bit-identical outputs (%s)" % (name, copy, err))
        rc, out, err = run("info", os.path.join(tmp, name + ".tsr"), "--json")
        check(rc == 0, "%s: info --json on .tsr exits 0 (%s)" % (name, err.strip()))
        if rc == 0:
            j = json.loads(out)
            check(j["metadata"].get("producer") == "tessera convert" and j["metadata"]["properties"]["source"] == name + ".json",
                  "%s: info shows the producer and the source" % name)
            check(len(j["content_hash"]) == 16 and j["weight_bytes"] > 0, "%s: info shows the content hash and weight bytes" % name)

    lenet_tsr = os.path.join(tmp, "lenet.tsr")
    # A flipped byte in the middle of conv1's weights: caught by the checksum, with the param's name.
    data = bytearray(open(lenet_tsr, "rb").read())
    bad = os.path.join(tmp, "bad.tsr")
    at = len(data) // 2
    data[at] ^= 0x40
    open(bad, "wb").write(bytes(data))
    rc, out, err = run("info", bad)
    check(rc == 1 and bad in err and ("checksum mismatch" in err or "content hash mismatch" in err or "not a .tsr file" in err),
          "a flipped byte is caught and the file named (%s)" % err.strip())
    ext_data = os.path.join(tmp, "lenet_ext.tsr.data")
    blob = bytearray(open(ext_data, "rb").read())
    blob[100] ^= 0x01
    open(ext_data, "wb").write(bytes(blob))
    rc, out, err = run("run", os.path.join(tmp, "lenet_ext.tsr"), "--no-record")
    check(rc == 1 and "checksum mismatch" in err and "lenet_ext.tsr.data" in err and "'conv2.w'" in err,  # conv1.w (600 bytes) stays inline
          "a corrupt side file names the weight and the file (%s)" % err.strip())
    newer = os.path.join(tmp, "newer.tsr")
    data = bytearray(open(lenet_tsr, "rb").read())
    data[1] = 9
    open(newer, "wb").write(bytes(data))
    rc, out, err = run("info", newer)
    check(rc == 1 and "format version 9 is newer than this reader (2)" in err, "a newer version is refused with both versions (%s)" % err.strip())
    foreign = os.path.join(tmp, "foreign.tsr")
    open(foreign, "w").write("hello, I am text\n")
    rc, out, err = run("info", foreign)
    check(rc == 1 and foreign in err and "not a .tsr file" in err, "a foreign file is refused (%s)" % err.strip())
    rc, out, err = run("convert", lenet_tsr, os.path.join(tmp, "x.png"))
    check(rc == 1 and "--to" in err, "an unknown output extension asks for --to (%s)" % err.strip())
    rc, out, err = run("convert", lenet_tsr, os.path.join(tmp, "x.json"), "--opset", "13")
    check(rc == 1 and "--opset applies to ONNX" in err, "--opset with JSON output is refused (%s)" % err.strip())
    rc, out, err = run("convert", lenet_tsr, os.path.join(tmp, "x.onnx"), "--opset", "12")
    check(rc == 2, "--opset out of 13..17 is a usage error")
    rc, out, err = run("convert", lenet_tsr, os.path.join(tmp, "o13.onnx"), "--opset", "13")
    check(rc == 0, "lenet exports at opset 13 (%s)" % err.strip())

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
