#!/usr/bin/python3
"""The second zoo in CI: models as other tools write them (make_wild.py) against ONNX Runtime.

Makes what is missing (make_wild.py into --zoo, default build/zoo/wild), runs ONNX Runtime
(onnxruntime-node through tests/bench/ort_bench.js) once per model for the reference outputs (kept
as NAME.ort/<output>.npy, remade when the model is newer), then `tessera run` on the same inputs, and
compares every output: max |Tessera - ORT| / max |ORT| within the model's tolerance (1e-4; float16
models 1e-2; quantized 1e-3). With --bench it also times both (`tessera bench` and ort_bench.js, 2
threads) and prints the ratio and Tessera's steps on reference kernels.

Exit 77 (skipped) without PyTorch/onnx to make the models or without node and onnxruntime-node.

Usage: /usr/bin/python3 tests/zoo/check_wild.py --tessera BIN [--zoo DIR] [--models a,b] [--bench]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

kHere = os.path.dirname(os.path.abspath(__file__))
kRoot = os.path.dirname(os.path.dirname(kHere))


def node_env():
    env = dict(os.environ)
    if "NODE_PATH" not in env:
        env["NODE_PATH"] = os.path.join(kRoot, "build", "npm", "node_modules")
    return env


def have_ort():
    try:
        proc = subprocess.run(["node", "-e", "require('onnxruntime-node')"], env=node_env(),
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def feed_args(zoo, entry):
    args = []
    for i in entry["inputs"]:
        args += ["--input", f"{i['name']}={os.path.join(zoo, i['file'])}"]
    return args


def ort_reference(zoo, name, entry):
    """NAME.ort/ with ONNX Runtime's outputs, made when missing or older than the model."""
    model = os.path.join(zoo, name + ".onnx")
    out = os.path.join(zoo, name + ".ort")
    stamp = os.path.join(out, "done")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(model):
        return out, None
    os.makedirs(out, exist_ok=True)
    cmd = ["node", os.path.join(kRoot, "tests", "bench", "ort_bench.js"), model, "--runs", "1",
           "--warmup", "0", "--output-dir", out] + feed_args(zoo, entry)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=node_env(), timeout=600)
    if proc.returncode != 0:
        return None, (proc.stderr.strip() or proc.stdout.strip())[-400:]
    with open(stamp, "w") as f:
        f.write("ok\n")
    return out, None


def rel_diff(got, want):
    if got.shape != want.shape:
        return float("inf"), f"shape {list(got.shape)} vs ONNX Runtime's {list(want.shape)}"
    if got.dtype.kind in "biu" or want.dtype.kind in "biu":
        bad = int(np.count_nonzero(got != want))
        return (0.0 if bad == 0 else float("inf")), f"{bad} integers differ"
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    d = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    return (d / scale if scale > 0 else d), None


def bench(args, zoo, name, entry):
    model = os.path.join(zoo, name + ".onnx")
    t = subprocess.run([args.tessera, "bench", model, "--threads", "2", "--runs", str(args.runs), "--json",
                        "--no-record"] + feed_args(zoo, entry), capture_output=True, text=True, timeout=900)
    if t.returncode != 0:
        return f"tessera bench failed: {(t.stderr or t.stdout).strip()[:200]}"
    tj = json.loads(t.stdout.strip().splitlines()[-1])
    o = subprocess.run(["node", os.path.join(kRoot, "tests", "bench", "ort_bench.js"), model, "--threads", "2",
                        "--runs", str(args.runs)] + feed_args(zoo, entry),
                       capture_output=True, text=True, env=node_env(), timeout=900)
    if o.returncode != 0:
        return f"ort_bench failed: {(o.stderr or o.stdout).strip()[:200]}"
    oj = json.loads(o.stdout.strip().splitlines()[-1])
    tm, om = tj.get("median_ms"), oj.get("median_ms")
    ref = tj["reference_steps"]
    return f"tessera {tm:.2f} ms, ORT {om:.2f} ms, {tm / om:.2f}x, steps on reference kernels {ref}"


def generation(args, model, prompt_len=64, tokens=128):
    """`tessera generate` against the same greedy loop in ONNX Runtime (tests/bench/ort_generate.js):
    the same tokens; "generation: ..." with both speeds, or why not."""
    prompt = ",".join(str((7 * i + 3) % 1000) for i in range(prompt_len))
    t = subprocess.run([args.tessera, "generate", model, "--prompt", prompt, "--tokens", str(tokens), "--threads",
                        str(args.threads), "--json"], capture_output=True, text=True, timeout=600)
    if t.returncode != 0:
        return f"tessera generate failed: {(t.stderr or t.stdout).strip()[:300]}"
    o = subprocess.run(["node", os.path.join(kRoot, "tests", "bench", "ort_generate.js"), model, "--prompt", prompt,
                        "--tokens", str(tokens), "--threads", str(args.threads)],
                       capture_output=True, text=True, env=node_env(), timeout=600)
    if o.returncode != 0:
        return f"ort_generate failed: {(o.stderr or o.stdout).strip()[:300]}"
    tj, oj = json.loads(t.stdout.strip().splitlines()[-1]), json.loads(o.stdout.strip().splitlines()[-1])
    if tj["generated"] != oj["generated"]:
        first = next(i for i, (a, b) in enumerate(zip(tj["generated"] + [None], oj["generated"] + [None])) if a != b)
        return f"generated tokens differ from ONNX Runtime's from token {first}"
    # A cache of the wrong length (the key of layer 0 longer than its value): one line naming both.
    with tempfile.TemporaryDirectory(prefix="wild-kv-") as tmp:
        k = os.path.join(tmp, "k.npy")
        np.save(k, np.zeros((1, 4, 9, 64), np.float32))
        zoo = os.path.dirname(model)
        feeds = ["--input", f"input_ids={os.path.join(zoo, 'gpt_kv.input_ids.npy')}", "--input", f"past_key_values.0.key={k}"]
        for n in ("past_key_values.0.value", "past_key_values.1.key", "past_key_values.1.value"):
            feeds += ["--input", f"{n}={os.path.join(zoo, 'gpt_kv.' + n + '.npy')}"]
        bad = subprocess.run([args.tessera, "run", model, "--no-record"] + feeds, capture_output=True, text=True, timeout=120)
        if bad.returncode != 1 or "past_sequence = " not in bad.stderr or len(bad.stderr.strip().splitlines()) != 1:
            return f"a cache of the wrong length: exit {bad.returncode}, {bad.stderr.strip()[:300]!r}"
    return (f"generation: {tokens} tokens as ONNX Runtime's; tokens/s tessera {tj['tokens_per_second']:.0f}, "
            f"ORT {oj['tokens_per_second']:.0f} (median {tj['median_token_ms']:.3f} vs {oj['median_token_ms']:.3f} ms)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--zoo", default=os.path.join(kRoot, "build", "zoo", "wild"))
    parser.add_argument("--models", default="")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--bench", action="store_true", help="also time Tessera and ONNX Runtime")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per side with --bench")
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()

    if not have_ort():
        print("check_wild: skipped: node or onnxruntime-node is missing (scripts/npm.sh installs it)")
        return 77
    cmd = [args.python, os.path.join(kHere, "make_wild.py"), "--out", args.zoo]
    if args.models:
        cmd += ["--models", args.models]
    made = subprocess.run(cmd, capture_output=True, text=True)
    if made.returncode == 3 and not os.path.exists(os.path.join(args.zoo, "models.json")):
        print(f"check_wild: skipped: {made.stderr.strip()}")
        return 77
    if made.returncode != 0:
        print(f"check_wild: make_wild.py exited {made.returncode}:\n{made.stderr.strip()}")
    try:
        with open(os.path.join(args.zoo, "models.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_wild: cannot read the manifest: {e}")
        return 1
    names = [n for n in args.models.split(",") if n] or sorted(manifest)
    failures = [f"{n}: not made (see make_wild.py's message above)" for n in names if n not in manifest]
    for name in [n for n in names if n in manifest]:
        entry = manifest[name]
        ref, why = ort_reference(args.zoo, name, entry)
        if ref is None:
            failures.append(f"{name}: ONNX Runtime failed: {why}")
            print(f"FAIL  {name}: ONNX Runtime failed: {why}")
            continue
        with tempfile.TemporaryDirectory(prefix=f"wild-{name}-") as tmp:
            cmd = [args.tessera, "run", os.path.join(args.zoo, name + ".onnx")] + feed_args(args.zoo, entry) + [
                "--output-dir", tmp, "--threads", str(args.threads), "--no-record"]
            t0 = time.monotonic()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                failures.append(f"{name}: tessera run timed out after {args.timeout} s")
                print(f"FAIL  {name}: timed out")
                continue
            seconds = time.monotonic() - t0
            if proc.returncode != 0:
                msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
                msg = msg[0] if msg else f"exit {proc.returncode}"
                failures.append(f"{name}: tessera run exited {proc.returncode}: {msg}")
                print(f"FAIL  {name}: {msg}")
                continue
            worst, problems = 0.0, []
            for out in entry["outputs"]:
                safe = re.sub(r"[^A-Za-z0-9_.-]", "_", out)
                try:
                    got = np.load(os.path.join(tmp, safe + ".npy"))
                    want = np.load(os.path.join(ref, safe + ".npy"))
                except OSError as e:
                    problems.append(f"output {out}: {e}")
                    continue
                d, why = rel_diff(got, want)
                worst = max(worst, d)
                if why and d > entry["tolerance"]:
                    problems.append(f"output {out}: {why}")
            ok = not problems and worst <= entry["tolerance"]
            line = f"{'ok   ' if ok else 'FAIL '} {name}: diff {worst:.1e} (tolerance {entry['tolerance']:g}, {seconds:.1f} s)"
            if problems:
                line += "; " + "; ".join(problems)
            if ok and name == "gpt_kv":  # the decoder also generates, token by token, as ORT does
                why = generation(args, os.path.join(args.zoo, name + ".onnx"))
                ok = why.startswith("generation:")
                line = line.replace("ok   ", "ok   " if ok else "FAIL ", 1) + "; " + why
            if args.bench and ok:
                line += "; " + bench(args, args.zoo, name, entry)
            print(line, flush=True)
            if not ok:
                failures.append(line[6:])
    print(f"check_wild: {len(names) - len(failures)} of {len(names)} models match ONNX Runtime")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
