#!/usr/bin/python3
"""Runs Tessera and ONNX Runtime side by side on the exported models and prints one comparison table.

For each model (made by make_models.py into --models-dir):
  1. correctness, once: `tessera run` and ort_bench.js --output-dir write their outputs as .npy; each
     is compared with PyTorch's (NAME.torch.npy) as max|x - torch| / max|torch|;
  2. speed, interleaved: --rounds rounds, each runs `tessera bench --json` and ort_bench.js (and,
     with --torch, torch_bench.py) with --runs timed runs; the order reverses every round so all
     sides share the clock drift; a side's latency is the median of its round medians.
The ratio is ORT ms / Tessera ms: above 1 means Tessera is faster. Every child gets the same thread
count (--threads, also OMP_NUM_THREADS) and OPENBLAS_CORETYPE=SkylakeX.
A side that fails (a missing op, no `bench` subcommand yet) shows "-" and its error is listed under
the table, as is an output further than --tolerance (default 1e-3) from PyTorch's; the exit status
is 1 when any of that happened, 2 on bad arguments or missing model files.

Usage: /usr/bin/python3 tests/bench/compare.py [--tessera BIN] [--models-dir DIR] [--models a,b]
         [--threads N] [--runs R] [--rounds K] [--ort-only] [--torch] [--json-out FILE]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

import numpy as np

kHere = os.path.dirname(os.path.abspath(__file__))
kRepo = os.path.dirname(os.path.dirname(kHere))
kAllModels = ["resnet50", "mobilenetv2", "transformer", "mlp", "lenet"]


# ---- ONNX input/output names, read straight from the protobuf (no onnx Python package needed) ----

def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(buf, start, end):
    """Yields (field number, wire type, value or (begin, end) of a length-delimited field)."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            yield number, wire, (pos, pos + length)
            pos += length
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _name_of(buf, span, name_field):
    for number, wire, value in _fields(buf, *span):
        if number == name_field and wire == 2:
            return bytes(buf[value[0]:value[1]]).decode()
    return ""


def onnx_io_names(path):
    """Returns (graph inputs that are not initializers, graph outputs) of an ONNX model file."""
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    # ModelProto.graph = 7; GraphProto: initializer = 5, input = 11, output = 12;
    # ValueInfoProto.name = 1; TensorProto.name = 8.
    graph = next((v for n, w, v in _fields(buf, 0, len(buf)) if n == 7 and w == 2), None)
    if graph is None:
        raise ValueError(f"{path}: no graph in the model")
    inputs, outputs, initializers = [], [], set()
    for number, wire, value in _fields(buf, *graph):
        if wire != 2:
            continue
        if number == 5:
            initializers.add(_name_of(buf, value, 8))
        elif number == 11:
            inputs.append(_name_of(buf, value, 1))
        elif number == 12:
            outputs.append(_name_of(buf, value, 1))
    return [n for n in inputs if n not in initializers], outputs


# ---- running the two sides ----

class SideError(Exception):
    """One side failed on one model; the message is what to show under the table."""


def first_error_line(proc, cmd):
    """The child's own message: its first output line that is not CLI11's "Run with --help" hint."""
    lines = [l.strip() for l in (proc.stderr + "\n" + proc.stdout).splitlines()]
    lines = [l for l in lines if l and not l.startswith("Run with --help")]
    return lines[0] if lines else " ".join(cmd)


def run_json(cmd, env, timeout):
    """Runs cmd; returns the last JSON object it printed on stdout."""
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SideError(f"timed out after {timeout} s: {' '.join(cmd)}")
    except OSError as e:
        raise SideError(f"{cmd[0]}: {e.strerror}")
    if proc.returncode != 0:
        raise SideError(f"exit {proc.returncode}: {first_error_line(proc, cmd)}")
    for line in reversed(proc.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    raise SideError(f"no JSON on stdout from {' '.join(cmd)}")


def run_plain(cmd, env, timeout):
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SideError(f"timed out after {timeout} s")
    except OSError as e:
        raise SideError(f"{cmd[0]}: {e.strerror}")
    if proc.returncode != 0:
        raise SideError(f"exit {proc.returncode}: {first_error_line(proc, cmd)}")


def load_output(out_dir, output_name):
    """The output .npy a run wrote into out_dir: <output_name>.npy, else the only .npy there."""
    wanted = os.path.join(out_dir, output_name + ".npy")
    if os.path.exists(wanted):
        return np.load(wanted)
    found = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    if len(found) == 1:
        return np.load(os.path.join(out_dir, found[0]))
    raise SideError(f"no {output_name}.npy in the output folder (found {found or 'nothing'})")


def rel_diff(got, reference):
    """max |got - reference| / max |reference|, the measure in the table."""
    if got.shape != reference.shape:
        raise SideError(f"output shape {list(got.shape)}, PyTorch's is {list(reference.shape)}")
    scale = float(np.max(np.abs(reference))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - reference.astype(np.float64)))) / scale


class Model:
    """One exported model's files and its single input and output names; raises OSError or
    ValueError when a file is missing or the model has several inputs or outputs."""

    def __init__(self, name, models_dir):
        self.name = name
        self.onnx = os.path.join(models_dir, name + ".onnx")
        self.input = os.path.join(models_dir, name + ".input.npy")
        self.torch = os.path.join(models_dir, name + ".torch.npy")
        for p in (self.onnx, self.input, self.torch):
            if not os.path.exists(p):
                raise FileNotFoundError(f"{p} is missing (run tests/bench/make_models.py)")
        inputs, outputs = onnx_io_names(self.onnx)
        if len(inputs) != 1 or len(outputs) != 1:
            raise ValueError(f"{self.onnx}: expected one input and one output, "
                             f"found inputs {inputs}, outputs {outputs}")
        self.input_name, self.output_name = inputs[0], outputs[0]


def tessera_cmds(args, m, out_dir):
    run = [args.tessera, "run", m.onnx, "--input", f"{m.input_name}={m.input}", "--output-dir",
           out_dir, "--threads", str(args.threads)]
    bench = [args.tessera, "bench", m.onnx, "--input", f"{m.input_name}={m.input}", "--threads",
             str(args.threads), "--runs", str(args.runs), "--warmup", str(args.warmup), "--json"]
    return run, bench


def ort_cmds(args, m, out_dir):
    base = [args.node, os.path.join(kHere, "ort_bench.js"), m.onnx, "--input", m.input,
            "--input-name", m.input_name, "--threads", str(args.threads)]
    return (base + ["--runs", "1", "--warmup", "0", "--output-dir", out_dir],
            base + ["--runs", str(args.runs), "--warmup", str(args.warmup)])


def torch_cmds(args, m, out_dir):
    bench = ["/usr/bin/python3", os.path.join(kHere, "torch_bench.py"), m.name, "--models-dir",
             os.path.dirname(m.onnx), "--threads", str(args.threads), "--runs", str(args.runs),
             "--warmup", str(args.warmup)]
    return None, bench  # PyTorch made the reference output: nothing to check


def measure(args, m, env):
    """Returns the result row of one model: {side: {...} or {"error": str}}."""
    sides = {}
    if not args.ort_only:
        sides["tessera"] = tessera_cmds
    sides["ort"] = ort_cmds
    if args.torch:
        sides["torch"] = torch_cmds
    result = {s: {} for s in sides}
    reference = np.load(m.torch)
    benches = {}
    with tempfile.TemporaryDirectory(prefix=f"bench-{m.name}-") as tmp:
        for side, make in sides.items():
            out_dir = os.path.join(tmp, side)
            os.makedirs(out_dir)
            run_cmd, bench_cmd = make(args, m, out_dir)
            benches[side] = bench_cmd
            if run_cmd is None:
                continue
            try:
                run_plain(run_cmd, env, args.timeout)
                diff = rel_diff(load_output(out_dir, m.output_name), reference)
                result[side]["rel_diff"] = diff
                if not diff <= args.tolerance:  # also catches NaN
                    result[side]["error"] = (f"output differs from PyTorch's by {diff:.1e} "
                                             f"(tolerance {args.tolerance:g})")
            except (SideError, OSError, ValueError) as e:
                result[side]["error"] = f"run: {e}"
    medians = {s: [] for s in sides}
    gflops = {s: [] for s in sides}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            if "bench_error" in result[side]:
                continue  # failed once, it will fail again
            try:
                stats = run_json(benches[side], env, args.timeout)
                medians[side].append(float(stats["median_ms"]))
                result[side]["min_ms"] = min(result[side].get("min_ms", float("inf")),
                                             float(stats["min_ms"]))
                for key in ("flops", "peak_bytes", "compile_ms"):
                    if key in stats:
                        result[side][key] = stats[key]
                if "gflops" in stats:
                    gflops[side].append(float(stats["gflops"]))
                if side == "torch" and float(stats.get("rel_diff", 0.0)) > 1e-3:
                    raise SideError(f"torch_bench.py's model differs from the exported one "
                                    f"(rel diff {stats['rel_diff']:.1e})")
            except (SideError, KeyError, TypeError, ValueError) as e:
                result[side]["bench_error"] = f"bench: {e}"
    for side in sides:
        if medians[side]:
            result[side]["round_medians_ms"] = medians[side]
            result[side]["median_ms"] = statistics.median(medians[side])
        # GFLOP/s at the reported latency: from the FLOP count where the side gives it, else the
        # median of its per-round figures.
        if result[side].get("flops") and medians[side]:
            result[side]["gflops"] = result[side]["flops"] / (result[side]["median_ms"] * 1e6)
        elif gflops[side]:
            result[side]["gflops"] = statistics.median(gflops[side])
    return result


# ---- the table ----

def fmt(value, spec):
    return "-" if value is None else format(value, spec)


class CpuShare:
    """How much of the machine's CPU time went to processes other than this one and its children
    between start() and stop(), from /proc/stat and getrusage (None where /proc/stat is missing)."""

    def _sample(self):
        try:
            with open("/proc/stat") as f:
                # user nice system idle iowait irq softirq steal (guest time is inside user)
                ticks = [int(v) for v in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
        ours = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
                   for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        return sum(ticks) / hz, (sum(ticks) - idle) / hz, ours

    def start(self):
        self.begin = self._sample()

    def stop(self):
        """Fraction of all CPU time (every core) spent by other work; None when unknown."""
        end = self._sample()
        if self.begin is None or end is None or end[0] <= self.begin[0]:
            return None
        total, busy, ours = (e - b for e, b in zip(end, self.begin))
        return max(0.0, busy - ours) / total


def print_table(args, rows, others):
    header = ["model", "Tessera ms", "ORT ms", "ORT/Tessera", "Tessera GFLOP/s", "arena MB",
              "Tessera diff", "ORT diff"]
    if args.torch:
        header += ["torch ms", "torch/Tessera"]
    lines = []
    for name, r in rows.items():
        t, o, p = r.get("tessera", {}), r["ort"], r.get("torch", {})
        ratio = (o["median_ms"] / t["median_ms"]
                 if t.get("median_ms") and o.get("median_ms") else None)
        peak = t.get("peak_bytes")
        lines.append([name, fmt(t.get("median_ms"), ".2f"), fmt(o.get("median_ms"), ".2f"),
                      fmt(ratio, ".2f"), fmt(t.get("gflops"), ".1f"),
                      fmt(peak / 1e6 if peak is not None else None, ".1f"),
                      fmt(t.get("rel_diff"), ".1e"), fmt(o.get("rel_diff"), ".1e")])
        if args.torch:
            torch_ratio = (p["median_ms"] / t["median_ms"]
                           if t.get("median_ms") and p.get("median_ms") else None)
            lines[-1] += [fmt(p.get("median_ms"), ".2f"), fmt(torch_ratio, ".2f")]
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    busy = "unknown" if others is None else f"{others:.0%}"
    print(f"threads {args.threads}, {args.rounds} rounds x {args.runs} runs per side, "
          f"latency = median of round medians; other work used {busy} of the CPU meanwhile")
    if others is not None and others > 0.05:
        print("warning: other work shared the CPU during the runs: latencies are noisy, "
              "rerun on a quiet machine before quoting them")
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for l in lines:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(l, widths))))
    errors = [(name, side, r[side][k]) for name, r in rows.items() for side in r
              for k in ("error", "bench_error") if k in r[side]]
    for name, side, msg in errors:
        print(f"  {name} / {side}: {msg}")
    return not errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tessera", default=os.path.join(kRepo, "build/release/cli/tessera"))
    parser.add_argument("--node", default="node")
    parser.add_argument("--models-dir", default=os.path.join(kRepo, "build/models"))
    parser.add_argument("--models", default=",".join(kAllModels))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per side per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs per side per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest relative output difference from PyTorch that passes")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per child process")
    parser.add_argument("--ort-only", action="store_true", help="skip Tessera")
    parser.add_argument("--torch", action="store_true",
                        help="also time eager PyTorch (torch_bench.py) in the same rounds")
    parser.add_argument("--json-out", help="also write every number as JSON to this file")
    args = parser.parse_args()
    if min(args.threads, args.runs, args.rounds) < 1 or args.warmup < 0:
        parser.error("--threads, --runs and --rounds must be >= 1, --warmup >= 0")

    env = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX", OMP_NUM_THREADS=str(args.threads))
    rows = {}
    cpu = CpuShare()
    cpu.start()
    for name in (n for n in args.models.split(",") if n):
        try:
            model = Model(name, args.models_dir)
        except (OSError, ValueError, IndexError) as e:
            print(f"compare: {e}", file=sys.stderr)
            return 2
        print(f"compare: {name} ...", file=sys.stderr, flush=True)
        rows[name] = measure(args, model, env)
    others = cpu.stop()
    ok = print_table(args, rows, others)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"threads": args.threads, "runs": args.runs, "rounds": args.rounds,
                       "other_cpu_share": others, "models": rows}, f, indent=2)
            f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
