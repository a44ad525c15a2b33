#!/usr/bin/python3
"""Runs Tessera and ONNX Runtime side by side on the zoo and prints one comparison table.

For each model of the zoo (tests/zoo/make_zoo.py, its manifest --models-dir/models.json):
  1. correctness, once: `tessera run` and ort_bench.js --output-dir write their outputs as .npy; each
     is compared with PyTorch's (NAME.torch.npy) as max|x - torch| / max|torch|;
  2. speed, interleaved: --rounds rounds, each runs `tessera bench --json` and ort_bench.js (and,
     with --torch, torch_bench.py) with --runs timed runs; the order reverses every round so all
     sides share the clock drift; a side's latency is the median of its round medians.
The ratio is Tessera ms / ORT ms, as the issues state it: below 1 means Tessera is faster; the
geometric mean is over the models both sides ran. Peak memory is each side's process peak RSS
(wait4's ru_maxrss) in its timed runs. Every child gets the same thread count (--threads, also
OMP_NUM_THREADS) and OPENBLAS_CORETYPE=SkylakeX. The CPU's model name and ISA come first.
A side that fails (a missing op) shows "-" and its error is listed under the table, as is an output
further than --tolerance (default 1e-3) from PyTorch's, and the other models still run; a model the
manifest marks as an expected failure is listed with its reason. The exit status is 1 when a side
failed unexpectedly, 2 on bad arguments or missing model files.

Usage: /usr/bin/python3 tests/bench/compare.py [--tessera BIN] [--models-dir DIR] [--models a,b]
         [--threads N] [--runs R] [--rounds K] [--ort-only] [--torch] [--json-out FILE]
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo"))
from zoo_models import ZooError, load_output, load_zoo, rel_diff  # noqa: E402

kHere = os.path.dirname(os.path.abspath(__file__))
kRepo = os.path.dirname(os.path.dirname(kHere))


# ---- running the two sides ----

class SideError(Exception):
    """One side failed on one model; the message is what to show under the table."""


def first_error_line(proc, cmd):
    """The child's own message: its first output line that is not CLI11's "Run with --help" hint."""
    lines = [l.strip() for l in (proc.stderr + "\n" + proc.stdout).splitlines()]
    lines = [l for l in lines if l and not l.startswith("Run with --help")]
    return lines[0] if lines else " ".join(cmd)


class Child:
    """A finished child process: returncode, stdout, stderr (text) and peak_rss (bytes, from wait4)."""

    def __init__(self, cmd, env, timeout):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
            except OSError as e:
                raise SideError(f"{cmd[0]}: {e.strerror}")
            killed = threading.Event()

            def kill():
                killed.set()
                proc.kill()
            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)  # keeps Popen from waiting again
            if killed.is_set():
                raise SideError(f"timed out after {timeout} s: {' '.join(cmd)}")
            self.returncode = proc.returncode
            self.peak_rss = usage.ru_maxrss * 1024  # kilobytes on Linux
            out.seek(0)
            err.seek(0)
            self.stdout = out.read().decode(errors="replace")
            self.stderr = err.read().decode(errors="replace")


def run_json(cmd, env, timeout):
    """Runs cmd; returns the last JSON object it printed on stdout, with "peak_rss_bytes" (the
    child's peak resident set) added."""
    proc = Child(cmd, env, timeout)
    if proc.returncode != 0:
        raise SideError(f"exit {proc.returncode}: {first_error_line(proc, cmd)}")
    for line in reversed(proc.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                stats = json.loads(line)
            except json.JSONDecodeError:
                break
            stats["peak_rss_bytes"] = proc.peak_rss
            return stats
    raise SideError(f"no JSON on stdout from {' '.join(cmd)}")


def run_plain(cmd, env, timeout):
    proc = Child(cmd, env, timeout)
    if proc.returncode != 0:
        raise SideError(f"exit {proc.returncode}: {first_error_line(proc, cmd)}")


def tessera_cmds(args, m, out_dir):
    run = [args.tessera, "run", m.onnx] + m.feed_args() + ["--output-dir", out_dir, "--threads",
                                                           str(args.threads)]
    bench = [args.tessera, "bench", m.onnx] + m.feed_args() + [
        "--threads", str(args.threads), "--runs", str(args.runs), "--warmup", str(args.warmup),
        "--json", "--no-record"]
    return run, bench


def tessera_bf16_cmds(args, m, out_dir):
    return tuple(cmd + ["--precision", "bf16"] for cmd in tessera_cmds(args, m, out_dir))


def ort_cmds(args, m, out_dir):
    base = [args.node, os.path.join(kHere, "ort_bench.js"), m.onnx] + m.feed_args() + [
        "--threads", str(args.threads)]
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
        if args.bf16:
            sides["bf16"] = tessera_bf16_cmds
    sides["ort"] = ort_cmds
    if args.torch:
        sides["torch"] = torch_cmds
    result = {s: {} for s in sides}
    if "tessera" in sides and m.expected_failure:
        for side in ("tessera", "bf16"):
            if side in sides:
                del sides[side]
                result[side] = {"expected_failure": m.expected_failure}
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
                diff = rel_diff(load_output(out_dir, m.output_name), reference, m.unordered_rows)
                result[side]["rel_diff"] = diff
                tolerance = args.bf16_tolerance if side == "bf16" else args.tolerance
                if not diff <= tolerance:  # also catches NaN
                    result[side]["error"] = (f"output differs from PyTorch's by {diff:.1e} "
                                             f"(tolerance {tolerance:g})")
            except (SideError, ZooError, OSError, ValueError) as e:
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
                for key in ("flops", "peak_bytes", "lower_bound_bytes", "compile_ms", "steps",
                            "reference_steps", "reference_ops"):
                    if key in stats:
                        result[side][key] = stats[key]
                result[side]["peak_rss_bytes"] = max(result[side].get("peak_rss_bytes", 0),
                                                     stats["peak_rss_bytes"])
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


def ratio_of(row, side, ours="tessera"):
    """Our latency (`ours`: tessera or bf16) over `side`'s, or None when either is missing."""
    t, o = row.get(ours, {}), row.get(side, {})
    return t["median_ms"] / o["median_ms"] if t.get("median_ms") and o.get("median_ms") else None


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fma_peak():
    """(GFLOP/s, how) of f32 FMAs at the nominal clock /proc/cpuinfo gives: cores x GHz x FLOP per
    cycle (AVX-512 on Intel: 2 FMA units of 16 lanes, 64; AMD Zen 4 runs AVX-512 on 256-bit units
    and AVX2 machines have 2 of 8 lanes: 32). Boost clocks can exceed it. None when unknown."""
    mhz, vendor, flags = None, "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "cpu MHz" and mhz is None:
                    mhz = float(value)
                elif key == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except (OSError, ValueError):
        return None
    if not mhz or "fma" not in flags:
        return None
    per_cycle = 64 if "avx512f" in flags and vendor == "GenuineIntel" else 32
    cores = os.cpu_count() or 1
    return (cores * mhz / 1e3 * per_cycle,
            f"{cores} cores x {mhz / 1e3:.2f} GHz x {per_cycle} FLOP/cycle, at the nominal clock")


def cpu_description():
    """lscpu's model name and the ISA extensions oneDNN cares about, from /proc/cpuinfo."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    isa = [name for flag, name in (("avx2", "AVX2"), ("avx512f", "AVX-512"),
                                    ("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16"),
                                    ("amx_tile", "AMX")) if flag in flags]
    return f"{model}, {os.cpu_count()} logical CPUs, {' '.join(isa) or 'no AVX2'}"


def print_table(args, rows, others):
    header = ["model", "Tessera ms", "ORT ms", "Tessera/ORT", "GFLOP/s", "arena MB", "bound MB",
              "RSS MB", "ORT RSS MB", "ref steps", "diff", "ORT diff"]
    if args.torch:
        header += ["torch ms", "Tessera/torch"]
    if args.bf16:
        header += ["bf16 ms", "fp32/bf16", "bf16/ORT", "bf16 diff"]
    lines = []
    mb = lambda v: fmt(v / 1e6 if v is not None else None, ".1f")  # noqa: E731
    for name, r in rows.items():
        t, o, p = r.get("tessera", {}), r["ort"], r.get("torch", {})
        ref = t.get("reference_steps")
        lines.append([name, fmt(t.get("median_ms"), ".2f"), fmt(o.get("median_ms"), ".2f"),
                      fmt(ratio_of(r, "ort"), ".2f"), fmt(t.get("gflops"), ".1f"),
                      mb(t.get("peak_bytes")), mb(t.get("lower_bound_bytes")),
                      mb(t.get("peak_rss_bytes")), mb(o.get("peak_rss_bytes")),
                      "-" if ref is None else f"{ref}/{t.get('steps', '?')}",
                      fmt(t.get("rel_diff"), ".1e"), fmt(o.get("rel_diff"), ".1e")])
        if args.torch:
            lines[-1] += [fmt(p.get("median_ms"), ".2f"), fmt(ratio_of(r, "torch"), ".2f")]
        if args.bf16:
            b = r.get("bf16", {})
            speedup = ratio_of(r, "bf16")
            lines[-1] += [fmt(b.get("median_ms"), ".2f"), fmt(speedup, ".2f"),
                          fmt(ratio_of(r, "ort", "bf16"), ".2f"), fmt(b.get("rel_diff"), ".1e")]
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
    ratios = [ratio_of(r, "ort") for r in rows.values()]
    g = geomean(ratios)
    if g is not None:
        counted = [x for x in ratios if x]
        print(f"geometric mean of Tessera/ORT over {len(counted)} models: {g:.2f} "
              f"(below 1: Tessera faster); slower than ORT on {sum(x > 1 for x in counted)}")
    if args.bf16 and geomean(ratio_of(r, "bf16") for r in rows.values()) is not None:
        print(f"geometric mean of fp32/bf16 (Tessera's bf16 speed-up): "
              f"{geomean(ratio_of(r, 'bf16') for r in rows.values()):.2f}; of bf16/ORT: "
              f"{geomean(ratio_of(r, 'ort', 'bf16') for r in rows.values()):.2f}")
    if args.torch and geomean(ratio_of(r, "torch") for r in rows.values()) is not None:
        print(f"geometric mean of Tessera/torch: {geomean(ratio_of(r, 'torch') for r in rows.values()):.2f}")
    for name, r in rows.items():
        t = r.get("tessera", {})
        if t.get("reference_ops"):
            print(f"  {name}: reference kernels: " +
                  ", ".join(f"{op} x{n}" for op, n in sorted(t["reference_ops"].items())))
        if "expected_failure" in t:
            print(f"  {name} / tessera: expected failure: {t['expected_failure']}")
    errors = [(name, side, r[side][k]) for name, r in rows.items() for side in r
              for k in ("error", "bench_error") if k in r[side]]
    for name, side, msg in errors:
        print(f"  {name} / {side}: {msg}")
    return not errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tessera", default=os.path.join(kRepo, "build/release/cli/tessera"))
    parser.add_argument("--node", default="node")
    parser.add_argument("--models-dir", default=os.path.join(kRepo, "build/zoo"))
    parser.add_argument("--models", default="", help="comma-separated subset (default: the whole zoo)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per side per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs per side per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest relative output difference from PyTorch that passes")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per child process")
    parser.add_argument("--ort-only", action="store_true", help="skip Tessera")
    parser.add_argument("--bf16", action="store_true",
                        help="also time Tessera with --precision bf16 (a side of its own)")
    parser.add_argument("--bf16-tolerance", type=float, default=0.2,
                        help="bf16's largest difference from PyTorch's f32 output (default 0.2: "
                             "the zoo's random deep CNNs amplify rounding; PyTorch's own bf16 "
                             "autocast is 0.15 from it on ResNet-50)")
    parser.add_argument("--torch", action="store_true",
                        help="also time eager PyTorch (torch_bench.py) in the same rounds")
    parser.add_argument("--json-out", help="also write every number as JSON to this file")
    args = parser.parse_args()
    if min(args.threads, args.runs, args.rounds) < 1 or args.warmup < 0:
        parser.error("--threads, --runs and --rounds must be >= 1, --warmup >= 0")

    env = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX", OMP_NUM_THREADS=str(args.threads))
    try:
        models = load_zoo(args.models_dir, [n for n in args.models.split(",") if n] or None)
    except ZooError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    print(f"CPU: {cpu_description()}")
    peak = fma_peak()
    if peak:
        print(f"f32 FMA peak {peak[0]:.0f} GFLOP/s ({peak[1]}; boost clocks can exceed it)")
    sys.stdout.flush()
    rows = {}
    cpu = CpuShare()
    cpu.start()
    for name, model in models.items():
        print(f"compare: {name} ...", file=sys.stderr, flush=True)
        rows[name] = measure(args, model, env)
    others = cpu.stop()
    ok = print_table(args, rows, others)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"cpu": cpu_description(), "fma_peak_gflops": peak[0] if peak else None,
                       "threads": args.threads, "runs": args.runs, "rounds": args.rounds,
                       "other_cpu_share": others, "models": rows}, f, indent=2)
            f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
