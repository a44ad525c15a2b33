#!/usr/bin/python3
"""The zoo in CI: runs every zoo model through `tessera run` and compares with PyTorch's output.

Exports the zoo first when it is missing (tests/zoo/make_zoo.py, skipped per model when present),
then for each model: `tessera run MODEL.onnx --input NAME=FILE ... --output-dir TMP`, and
max |Tessera - PyTorch| / max |PyTorch| must be at most --tolerance (default 1e-4; make_zoo.py
widens it for a model where float32 rounding alone exceeds it, with the reason). A model the
manifest marks as an expected failure must still fail: when it starts to pass, this test fails and
says to remove the mark from make_zoo.py, so the list only shrinks.

Exit status: 0 when every model behaved, 1 otherwise, 77 (ctest's skip) when PyTorch is absent
and no zoo exists to check.

Usage: /usr/bin/python3 tests/zoo/check_zoo.py --tessera BIN [--zoo DIR] [--models a,b]
         [--tolerance T] [--threads N] [--no-export] [--python PY] [--run-args "--device cuda"]

--python: the interpreter that exports (default Debian's; scripts/gpu_check.sh passes the GPU
machine's PyTorch 2.x). --run-args: more arguments of `tessera run` (a device, a precision).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
kHere = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, kHere)
import numpy as np  # noqa: E402

from zoo_models import ZooError, load_output, load_zoo, rel_diff  # noqa: E402


def export(zoo, models, python="/usr/bin/python3"):
    cmd = [python, os.path.join(kHere, "make_zoo.py"), "--out", zoo]
    if models:
        cmd += ["--models", models]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--zoo", default=os.path.join(os.path.dirname(os.path.dirname(kHere)), "build/zoo"))
    parser.add_argument("--models", default="", help="comma-separated subset (default: all)")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per model")
    parser.add_argument("--no-export", action="store_true", help="use the zoo as it is")
    parser.add_argument("--python", default="/usr/bin/python3", help="the interpreter that exports the zoo")
    parser.add_argument("--run-args", default="", help="more arguments of tessera run, e.g. \"--device cuda\"")
    args = parser.parse_args()

    if not args.no_export:
        rc = export(args.zoo, args.models, args.python)
        if rc == 3 and not os.path.exists(os.path.join(args.zoo, "models.json")):
            print("check_zoo: skipped: PyTorch is missing and there is no zoo to check")
            return 77
        if rc != 0:
            print(f"check_zoo: make_zoo.py exited {rc}; checking the models it exported")
    try:
        models = load_zoo(args.zoo, [n for n in args.models.split(",") if n] or None)
    except ZooError as e:
        print(f"check_zoo: {e}")
        return 1
    failures = []
    for name, m in models.items():
        with tempfile.TemporaryDirectory(prefix=f"zoo-{name}-") as tmp:
            cmd = [args.tessera, "run", m.onnx] + m.feed_args() + [
                "--output-dir", tmp, "--threads", str(args.threads), "--no-record"] + args.run_args.split()
            t0 = time.monotonic()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                failures.append(f"{name}: timed out after {args.timeout} s")
                print(f"FAIL  {name}: timed out")
                continue
            seconds = time.monotonic() - t0
            message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            message = message[0] if message else f"exit {proc.returncode}"
            if m.expected_failure:
                if proc.returncode == 0:
                    failures.append(f"{name}: expected to fail ({m.expected_failure}) but runs now: "
                                    f"remove its expected failure in tests/zoo/make_zoo.py")
                    print(f"FAIL  {name}: passes unexpectedly")
                elif proc.returncode < 0 or proc.returncode > 2:
                    failures.append(f"{name}: expected a clean refusal, got exit {proc.returncode}: {message}")
                    print(f"FAIL  {name}: exit {proc.returncode}")
                else:
                    print(f"xfail {name}: {message}")
                continue
            if proc.returncode != 0:
                failures.append(f"{name}: tessera run exited {proc.returncode}: {message}")
                print(f"FAIL  {name}: exit {proc.returncode}: {message}")
                continue
            try:
                diff = rel_diff(load_output(tmp, m.output_name), np.load(m.torch), m.unordered_rows)
            except ZooError as e:
                failures.append(f"{name}: {e}")
                print(f"FAIL  {name}: {e}")
                continue
            tolerance = max(args.tolerance, m.tolerance or 0.0)
            ok = diff <= tolerance  # NaN fails
            print(f"{'ok   ' if ok else 'FAIL '} {name}: diff {diff:.1e} ({seconds:.1f} s)"
                  + (f", tolerance {tolerance:g}" if tolerance != args.tolerance else ""))
            if not ok:
                failures.append(f"{name}: output differs from PyTorch's by {diff:.1e} "
                                f"(tolerance {tolerance:g})")
    print(f"check_zoo: {len(models) - len(failures)} of {len(models)} models as expected")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
