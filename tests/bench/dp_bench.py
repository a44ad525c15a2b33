#!/usr/bin/env python3
"""Data-parallel training measured: `mpirun -n RANKS tessera train ... --threads 1` against one
process of 1 thread with the same global batch, runs alternated so that both sides meet the same
machine; beside it, eager PyTorch's loss drift under the same split (DDP's arithmetic: each rank's
shard gives its gradient, summed in rank order and divided by the ranks; train_bench.py's
--torch-worker with "ranks"), from the same initial weights, data order and optimizer.

    dp_bench.py [--tessera build/release/cli/tessera] [--models lenet,resnet18] [--ranks 2]
                [--repeats 3] [--no-torch]

Prints, per model: examples per second of each side (median and best of the repeats), the
speed-ups (ratio of medians, of bests), the ceiling (N independent processes of the per-rank batch
running at once without communication, against the 1-rank run: the most N trainers get from this
machine, whatever the communication costs; and "lockstep", N times the slowest of them: what N
trainers that wait for each other at every step get when the cores are not equally fast), the mean training loss of 1 and RANKS ranks for Tessera
and for PyTorch, and how far each framework's two runs drift apart (float rounding: the sum of
RANKS shard gradients is rounded differently from the gradient of the whole batch), beside the
drift of the single process run with 2 threads instead of 1 (the run's own float noise floor), and
the loss of one process accumulating RANKS micro-batches of the per-rank batch (`--accumulate`),
which does the ranks' arithmetic and must give their loss exactly.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_bench  # noqa: E402

ROOT = train_bench.ROOT
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
# One epoch of LeNet (the measure) and a few ResNet-18 steps (a step takes ~0.8 s on 2 cores).
MODELS = {
    "lenet": dict(train_bench.MODELS["lenet"], epochs=1, batch=64),
    "resnet18": dict(train_bench.MODELS["resnet18"], steps=16, batch=32),
}


def tessera_run(tessera, cfg, ranks, threads=1, accumulate=1, seed=0):
    cmd = [tessera, "train", os.path.join(ROOT, cfg["graph"]), "--data", cfg["data"], "--batch",
           str(cfg["batch"] // ranks // accumulate), "--accumulate", str(accumulate), "--lr", str(cfg["lr"]), "--momentum", str(cfg["momentum"]), "--threads", str(threads),
           "--seed", str(seed), "--no-eval", "--no-record", "--json"]
    cmd += ["--max-steps", str(cfg["steps"])] if cfg.get("steps") else ["--epochs", str(cfg["epochs"])]
    if ranks > 1:
        cmd = MPIRUN + ["-n", str(ranks)] + cmd
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit("dp_bench: %s failed:\n%s" % (" ".join(cmd), out.stderr[-2000:]))
    return json.loads(lines[-1])


def independent_run(tessera, cfg, ranks):
    """RANKS single processes of the per-rank batch at once, no communication: what the machine
    gives RANKS concurrent trainers, the ceiling of the data-parallel speed-up here."""
    cmd = [tessera, "train", os.path.join(ROOT, cfg["graph"]), "--data", cfg["data"], "--batch",
           str(cfg["batch"] // ranks), "--lr", str(cfg["lr"]), "--momentum", str(cfg["momentum"]), "--threads", "1",
           "--seed", "0", "--no-eval", "--no-record", "--json"]
    cmd += ["--max-steps", str(cfg["steps"])] if cfg.get("steps") else ["--epochs", str(cfg["epochs"])]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(ranks)]
    rates = []
    for p in procs:
        out, _ = p.communicate()
        lines = [l for l in out.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not lines:
            sys.exit("dp_bench: %s failed" % " ".join(cmd))
        rates.append(json.loads(lines[-1])["images_per_s"])
    return rates


def torch_loss(cfg, ranks, threads=1):
    r = train_bench.run_torch(dict(cfg, graph=os.path.join(ROOT, cfg["graph"]), threads=threads, seed=0, ranks=ranks))
    return sum(r["losses"]) / len(r["losses"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build/release/cli/tessera"))
    ap.add_argument("--models", default="lenet,resnet18")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch's loss drift")
    ap.add_argument("--seeds", type=int, default=1,
                    help="the loss drifts (Δ, threads Δ) over seeds 0..K-1 too: their median and largest")
    args = ap.parse_args()
    if args.ranks < 2 or args.repeats < 1:
        ap.error("--ranks must be >= 2, --repeats >= 1")
    if not os.path.exists(args.tessera):
        ap.error("no tessera binary at %s (build first: bash scripts/build.sh release)" % args.tessera)
    rows = []
    for name in [m for m in args.models.split(",") if m]:
        if name not in MODELS:
            ap.error("unknown model %s (expected %s)" % (name, ", ".join(MODELS)))
        cfg = MODELS[name]
        if cfg["batch"] % args.ranks:
            ap.error("%s's batch %d does not split over %d ranks" % (name, cfg["batch"], args.ranks))
        one, many, alone = [], [], []
        for _ in range(args.repeats):
            one.append(tessera_run(args.tessera, cfg, 1))
            many.append(tessera_run(args.tessera, cfg, args.ranks))
            alone.append(independent_run(args.tessera, cfg, args.ranks))
            print("  %s: 1 rank %.1f ex/s, %d ranks %.1f ex/s, %d independent processes %.1f ex/s" % (
                name, one[-1]["images_per_s"], args.ranks, many[-1]["images_per_s"], args.ranks, sum(alone[-1])), file=sys.stderr)
        s1 = [r["images_per_s"] for r in one]
        sn = [r["images_per_s"] for r in many]
        row = dict(model=name, one=statistics.median(s1), many=statistics.median(sn), one_best=max(s1), many_best=max(sn),
                   pairs=[b / a for a, b in zip(s1, sn)], ceiling=statistics.median(sum(b) / a for a, b in zip(s1, alone)),
                   lockstep=statistics.median(len(b) * min(b) / a for a, b in zip(s1, alone)), loss_one=one[0]["train_loss"], loss_many=many[0]["train_loss"],
                   comm_s=statistics.median(r.get("comm_s", 0) for r in many))
        # The run's own float noise floor: the same single process with 2 threads (oneDNN then splits
        # its sums differently) against 1 thread.
        row["loss_threads"] = tessera_run(args.tessera, cfg, 1, threads=2)["train_loss"]
        # One process accumulating N micro-batches of the per-rank batch: the same arithmetic as N
        # ranks (their gradients summed, then the mean in the update), so it must agree exactly.
        row["loss_accumulate"] = tessera_run(args.tessera, cfg, 1, accumulate=args.ranks)["train_loss"]
        # One seed's drift is one draw of a chaotic process: over several seeds, its spread.
        row["seed_drifts"] = [(abs(row["loss_one"] - row["loss_many"]), abs(row["loss_one"] - row["loss_threads"]))]
        for seed in range(1, args.seeds):
            one_s = tessera_run(args.tessera, cfg, 1, seed=seed)["train_loss"]
            row["seed_drifts"].append((abs(one_s - tessera_run(args.tessera, cfg, args.ranks, seed=seed)["train_loss"]),
                                       abs(one_s - tessera_run(args.tessera, cfg, 1, threads=2, seed=seed)["train_loss"])))
        if not args.no_torch:
            row["torch_one"], row["torch_many"] = torch_loss(cfg, 1), torch_loss(cfg, args.ranks)
            row["torch_threads"] = torch_loss(cfg, 1, threads=2)
        rows.append(row)
    print("%s, %d ranks x 1 thread against 1 rank x 1 thread, same global batch, %d alternated run(s) per side" %
          (train_bench.cpu_name(), args.ranks, args.repeats))
    print("%-9s %10s %10s %7s %6s %15s %7s %8s %8s %12s %12s %9s %9s %9s %12s %12s %9s %9s" % (
        "model", "1 rank/s", "N ranks/s", "speedup", "best", "pairs", "ceiling", "of ceil", "lockstep", "loss 1", "loss N", "Δ",
        "threads Δ", "accum Δ", "torch 1", "torch N",
        "torch Δ", "torch thr Δ"))
    for r in rows:
        torch_cols = ("%12.6f %12.6f %9.1e %9.1e" % (r["torch_one"], r["torch_many"], abs(r["torch_one"] - r["torch_many"]),
                                                     abs(r["torch_one"] - r["torch_threads"]))
                      if "torch_one" in r else "")
        print("%-9s %10.1f %10.1f %7.2f %6.2f %15s %7.2f %7.0f%% %8.2f %12.6f %12.6f %9.1e %9.1e %9.1e %s" % (
            r["model"], r["one"], r["many"], r["many"] / r["one"], r["many_best"] / r["one_best"],
            "-".join("%.2f" % p for p in sorted(r["pairs"])), r["ceiling"], 100 * r["many"] / r["one"] / r["ceiling"],
            r["lockstep"], r["loss_one"], r["loss_many"],
            abs(r["loss_one"] - r["loss_many"]), abs(r["loss_one"] - r["loss_threads"]),
            abs(r["loss_accumulate"] - r["loss_many"]), torch_cols))
    print("(examples per second: medians, best: the ratio of each side's fastest run, pairs: the speed-up of each"
          " alternated pair; ceiling: N independent processes of the per-rank batch at once, no communication, over"
          " the 1-rank run (median): what this machine gives N trainers; of ceil: the speed-up as a share of the ceiling; lockstep: N times the slowest of those processes over"
          " the 1-rank run: what it gives N trainers that wait for each other every step (the cores are not equally fast);"
          " loss: the mean training loss over the run (one epoch of LeNet, %d ResNet-18 steps);"
          " Δ: |1 rank - N ranks|, the drift float rounding of the split gradient sum builds up; threads Δ: |1 thread - 2 threads|"
          " of the single process, the same run's drift from its kernels splitting their sums differently;"
          " accum Δ: |N ranks - 1 rank accumulating N micro-batches of the per-rank batch|, 0 when the split is exact)" %
          MODELS["resnet18"]["steps"])
    for r in rows:
        if len(r["seed_drifts"]) > 1:
            ranks_d, threads_d = [d[0] for d in r["seed_drifts"]], [d[1] for d in r["seed_drifts"]]
            print("%s over seeds 0-%d: Δ median %.1e (largest %.1e), threads Δ median %.1e (largest %.1e); per seed: %s" % (
                r["model"], len(ranks_d) - 1, statistics.median(ranks_d), max(ranks_d), statistics.median(threads_d),
                max(threads_d), ", ".join("%.1e/%.1e" % d for d in r["seed_drifts"])))


if __name__ == "__main__":
    main()
