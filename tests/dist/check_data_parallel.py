#!/usr/bin/env python3
"""Data-parallel training with `mpirun -n 2 tessera train` (engine/dist, Open MPI) against one
process: the same losses and weights, bitwise repeatable runs, checkpoints by rank 0 that resume,
the run recorded once with its world size, and a killed rank that stops the job in bounded time.

    check_data_parallel.py TESSERA [--data DIR]        (exit 77: no mpirun on this machine)
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader,tcp"]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def train(tessera, ranks, batch, extra, data, evaluate=False):
    cmd = [tessera, "train", os.path.join(ROOT, "samples", "mlp.json"), "--data", data, "--batch", str(batch),
           "--lr", "0.05", "--optimizer", "momentum", "--threads", "1", "--json"] + ([] if evaluate else ["--no-eval"]) + extra
    if ranks > 1:
        cmd = MPIRUN + ["-n", str(ranks)] + cmd
    r = run(cmd)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if len(lines) != 1:
        sys.exit(f"FAIL: expected one JSON result (rank 0's), got {len(lines)}:\n{r.stdout}")
    return json.loads(lines[0]), r


def params(path):
    """The weights of a .tsr written by `tessera train --save`, through `tessera convert` to JSON."""
    import zipfile  # noqa: F401  (the npz side file)
    out = path + ".json"
    subprocess.run([ARGS.tessera, "convert", path, out], check=True, capture_output=True)
    npz = out[:-5] + ".npz"
    if os.path.exists(npz):
        with np.load(npz) as z:
            return {k: z[k] for k in z.files}
    with open(out) as f:
        return {p["name"]: np.array(p.get("data", [])) for p in json.load(f).get("params", [])}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("tessera")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ARGS = ap.parse_args()
    if not shutil.which("mpirun"):
        print("skip: no mpirun (Debian's openmpi-bin)")
        return 77
    tmp = tempfile.mkdtemp(prefix="tessera-dp-")
    t = ARGS.tessera

    # 1. Two ranks of batch 32 = one process of batch 64: same losses, same weights.
    one, _ = train(t, 1, 64, ["--max-steps", "60", "--save", f"{tmp}/one.tsr", "--no-record"], ARGS.data)
    two, _ = train(t, 2, 32, ["--max-steps", "60", "--save", f"{tmp}/two.tsr", "--no-record"], ARGS.data)
    assert two["world_size"] == 2 and one["world_size"] == 1, (one, two)
    assert abs(one["train_loss"] - two["train_loss"]) < 1e-4, (one["train_loss"], two["train_loss"])
    a, b = params(f"{tmp}/one.tsr"), params(f"{tmp}/two.tsr")
    assert a.keys() == b.keys() and a
    worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
    assert worst < 1e-5, f"weights differ by {worst}"
    print(f"ok: 1 rank x 64 vs 2 ranks x 32, 60 steps: loss {one['train_loss']:.7f} / {two['train_loss']:.7f}, "
          f"weights within {worst:.1e}; rank 0 spent {two['comm_s'] * 1e3:.1f} ms in MPI")

    # 1e. Evaluation is sharded like DistributedSampler: each rank evaluates its rows of every test
    #     batch and the sums are combined, so 2 ranks report the whole test set's loss and accuracy:
    #     those of one process with the same weights (1 rank accumulating 2 micro-batches, bitwise
    #     the 2 ranks' weights, evaluating all of the test set itself).
    ev = []
    for ranks, extra in ((2, []), (1, ["--accumulate", "2"])):
        res, _ = train(t, ranks, 32, ["--max-steps", "938", "--no-record"] + extra, ARGS.data, evaluate=True)
        ev.append(res)
    for e in ev:
        assert e["test_accuracy"] > 0.7 and e["test_loss"] > 0, e
    assert abs(ev[0]["test_loss"] - ev[1]["test_loss"]) < 1e-9 and ev[0]["test_accuracy"] == ev[1]["test_accuracy"], ev
    assert ev[0]["eval_examples"] == 5000 and ev[1]["eval_examples"] == 10000, ev  # rank 0 evaluated its half
    print(f"ok: sharded evaluation on 2 ranks: test loss {ev[0]['test_loss']:.9f}, accuracy {ev[0]['test_accuracy']:.4f} "
          f"(one process with the same weights: {ev[1]['test_loss']:.9f}, {ev[1]['test_accuracy']:.4f}); rank 0 "
          f"evaluated 5,000 of 10,000 examples in {ev[0]['eval_s']:.2f} s (one process: {ev[1]['eval_s']:.2f} s)")

    # 1a. Two ranks of 32 are one process accumulating 2 micro-batches of 32 (`--accumulate 2`), bit
    #     for bit: the same gradients summed in the same order, the same mean in the update, the
    #     same loss. On the MLP (above) and over a LeNet epoch's first 200 steps (convolutions).
    acc, _ = train(t, 1, 32, ["--max-steps", "60", "--accumulate", "2", "--save", f"{tmp}/acc.tsr", "--no-record"], ARGS.data)
    g = params(f"{tmp}/acc.tsr")
    assert all(np.array_equal(b[k], g[k]) for k in b), "1 rank x 2 micro-batches differs from 2 ranks"
    assert acc["train_loss"] == two["train_loss"], (acc["train_loss"], two["train_loss"])
    lenet = []
    for ranks, extra in ((2, []), (1, ["--accumulate", "2"])):
        cmd = [t, "train", os.path.join(ROOT, "samples", "lenet.json"), "--data", ARGS.data, "--batch", "32", "--lr", "0.01",
               "--momentum", "0.9", "--threads", "1", "--max-steps", "200", "--no-eval", "--no-record", "--json",
               "--save", f"{tmp}/lenet{ranks}.tsr"] + extra
        r = run((MPIRUN + ["-n", "2"] if ranks > 1 else []) + cmd)
        assert r.returncode == 0, r.stderr
        lenet.append(json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])["train_loss"])
    l2, l1 = params(f"{tmp}/lenet2.tsr"), params(f"{tmp}/lenet1.tsr")
    assert all(np.array_equal(l2[k], l1[k]) for k in l2) and lenet[0] == lenet[1], lenet
    print(f"ok: 2 ranks x 32 = 1 rank x 2 micro-batches of 32, bitwise: MLP 60 steps (loss {acc['train_loss']:.7f}), "
          f"LeNet 200 steps (loss {lenet[0]:.7f})")

    # 1d. Dropout: each rank (and each micro-batch) draws its rows of the single process's masks
    #     (the step's "rng_rows"), so the MLP with a Dropout of 0.3 after its hidden layer trains
    #     on 2 ranks x 32 as on 1 rank x 64 (weights within 1e-5 after 60 steps, as without
    #     dropout), and 1 rank x 2 micro-batches is the 2 ranks bit for bit.
    with open(os.path.join(ROOT, "samples", "mlp.json")) as f:
        graph = json.load(f)
    graph["name"] = "mlp_dropout"
    graph["weights_file"] = os.path.join(ROOT, "samples", "mlp.npz")
    graph["params"].append({"name": "drop.ratio", "type": "f32[]", "data": [0.3]})
    fc2 = next(n for n in graph["nodes"] if n["name"] == "fc2")
    fc2["inputs"][0] = "dropped"
    graph["nodes"].insert(graph["nodes"].index(fc2), {"op": "Dropout", "name": "drop", "inputs": ["a1", "drop.ratio"],
                                                      "outputs": ["dropped"], "attrs": {"seed": 5}})
    dropout_graph = f"{tmp}/mlp_dropout.json"
    with open(dropout_graph, "w") as f:
        json.dump(graph, f)
    drop = []
    for ranks, batch, extra in ((1, 64, []), (2, 32, []), (1, 32, ["--accumulate", "2"])):
        cmd = [t, "train", dropout_graph, "--data", ARGS.data, "--batch", str(batch), "--lr", "0.05", "--optimizer", "momentum",
               "--threads", "1", "--max-steps", "60", "--no-eval", "--no-record", "--json", "--save", f"{tmp}/drop{len(drop)}.tsr"] + extra
        r = run((MPIRUN + ["-n", "2"] if ranks > 1 else []) + cmd)
        assert r.returncode == 0, r.stderr
        drop.append(params(f"{tmp}/drop{len(drop)}.tsr"))
    worst = max(float(np.max(np.abs(drop[0][k] - drop[1][k]))) for k in drop[0])
    assert worst < 1e-5, f"dropout: 2 ranks x 32 and 1 rank x 64 differ by {worst}"
    assert all(np.array_equal(drop[1][k], drop[2][k]) for k in drop[1]), "dropout: 1 rank x 2 micro-batches differs from 2 ranks"
    print(f"ok: Dropout 0.3: 2 ranks x 32 = 1 rank x 64 within {worst:.1e} (60 steps), = 1 rank x 2 micro-batches bitwise")

    # 1c'. --sync-bn (SyncBatchNorm): batch norms with the moments of both ranks' rows, so a network
    #      with batch norm trains on 2 ranks of 8 as one process of 16. On a smooth network (conv,
    #      batch norm, tanh: no ReLU or max-pool whose kinks turn 1e-7 roundings into other choices)
    #      the weights after 3 steps agree to float rounding (3e-8); without it they differ by 4e-3.
    bn_graph = os.path.join(ROOT, "tests", "dist", "bn_tanh.tsr")
    bn = []
    for ranks, batch, extra in ((1, 16, []), (2, 8, ["--sync-bn"]), (2, 8, [])):
        cmd = [t, "train", bn_graph, "--data", ARGS.data, "--batch", str(batch), "--lr", "0.1", "--threads", "1",
               "--max-steps", "3", "--no-eval", "--no-record", "--json", "--save", f"{tmp}/bn{len(bn)}.tsr"] + extra
        r = run((MPIRUN + ["-n", "2"] if ranks > 1 else []) + cmd)
        assert r.returncode == 0, r.stderr
        bn.append(params(f"{tmp}/bn{len(bn)}.tsr"))
    trained = [k for k in bn[0] if not (k.endswith(".mean") or k.endswith(".var"))]
    def rel(p, q):
        return max(float(np.linalg.norm(p[k] - q[k]) / max(np.linalg.norm(p[k]), 1e-30)) for k in trained)
    synced, unsynced = rel(bn[0], bn[1]), rel(bn[0], bn[2])
    assert synced < 1e-6 and unsynced > 1e-3, (synced, unsynced)
    print(f"ok: --sync-bn: 2 ranks x 8 = 1 rank x 16 within {synced:.1e} (without it {unsynced:.1e})")

    # 1f. A rank that cannot start, or was started differently, stops the whole job at once and says
    #     which rank and why (it used to fail silently, its stderr silenced, while the others waited
    #     in a collective for ever); data parallel refuses --inter-op above 1 (bucket order).
    mlp = [t, "train", os.path.join(ROOT, "samples", "mlp.json"), "--batch", "32", "--threads", "1", "--max-steps", "20",
           "--no-eval", "--no-record"]
    good = ["--data", ARGS.data]
    for rank1, want in ((["--data", tmp], "error on rank 1 of 2: " + tmp),
                        (good + ["--lr", "0.1"], "error on rank 1 of 2: this rank's lr is 0.1 but rank 0's is 0.01"),
                        (good + ["--seed", "3"], "this rank's seed is 3 but rank 0's is 0")):
        start = time.time()
        r = subprocess.run(MPIRUN + ["-n", "1"] + mlp + good + [":", "-n", "1"] + mlp + rank1, capture_output=True, text=True,
                           timeout=60)
        took = time.time() - start
        assert r.returncode != 0 and want in r.stderr and took < 30, (r.returncode, took, r.stderr[-1500:])
    # Rank 0 records the job that could not start, with the reason (it was left "running").
    db0 = f"{tmp}/differ.db"
    r = subprocess.run(MPIRUN + ["-n", "1"] + mlp[:-1] + good + ["--db", db0, ":", "-n", "1"] + mlp + good + ["--lr", "0.1"],
                       capture_output=True, text=True, timeout=60)
    (differ,) = json.loads(run([t, "runs", "list", "--db", db0, "--json"]).stdout)
    assert differ["status"] == "failed" and "rank 1 of 2 was started otherwise: its lr is 0.1" in differ.get("error", ""), differ
    r = run(MPIRUN + ["-n", "2"] + mlp + good + ["--inter-op", "2"])
    assert r.returncode != 0 and "data parallel needs --inter-op 1" in r.stderr, r.stderr[-1500:]
    print(f"ok: a rank with a bad dataset, another --lr or --seed stops the job in {took:.1f} s naming rank 1 and the setting "
          "(rank 0 records the run failed with it); --inter-op 2 refused")

    # 1b. The cost model (scripts/dp_cost_model.py) against the measured 2-rank run: the bytes it
    #     models per step (4 per parameter) are the bytes the split stage's buckets all-reduce, and
    #     its speed-up and all-reduce time are printed beside the measured ones (timings are never a
    #     test's verdict).
    for name, res in (("one", one), ("two", two)):
        with open(f"{tmp}/{name}.json", "w") as f:
            json.dump(res, f)
    info = json.loads(run([t, "info", os.path.join(ROOT, "samples", "mlp.json"), "--json"]).stdout)
    model = run([sys.executable, os.path.join(ROOT, "scripts", "dp_cost_model.py"), "--params", str(info["parameters"]),
                 "--one", f"{tmp}/one.json", "--two", f"{tmp}/two.json", "--batch", "64", "--json"])
    assert model.returncode == 0, model.stdout + model.stderr
    m = json.loads(model.stdout)
    split = [l for l in run([t, "passes", os.path.join(ROOT, "samples", "mlp.json"), "--train", "--world-size", "2",
                             "--dim", "N=32", "--no-record"]).stdout.splitlines() if l.startswith("split")]
    assert split and f"of {m['bytes_per_step']} bytes over 2 ranks" in split[0], (m, split)
    assert 1.0 < m["speedup_model"] <= 2.0 and m["allreduce_model_s"] > 0, m
    print(f"ok: cost model: {m['bytes_per_step']} bytes a step as the split's buckets; speed-up model "
          f"{m['speedup_model']:.2f}x, measured {m['speedup_measured']:.2f}x; all-reduce model "
          f"{m['allreduce_model_s'] * 1e6:.0f} us, measured {m['allreduce_measured_s'] * 1e6:.0f} us a step")

    # 1c. The split stage's buckets, as `tessera passes` shows them (no MPI needed to compile).
    split = [l for l in run([t, "passes", os.path.join(ROOT, "samples", "resnet18.json"), "--train", "--world-size", "4",
                              "--dim", "N=8", "--no-record"]).stdout.splitlines() if l.startswith("split")]
    assert split and "gradient all-reduce bucket(s) of 44691240 bytes over 4 ranks" in split[0], split
    buckets = int(split[0].split("; ")[-1].split()[0])
    assert buckets >= 3, split  # 1 MiB first, then 25 MiB: 44.7 MB (11,172,810 trained f32) needs three
    print("ok: " + split[0].split("; ")[-1])

    # 2. Repeatable: the same seed and world size give the same bytes.
    again, _ = train(t, 2, 32, ["--max-steps", "60", "--save", f"{tmp}/again.tsr", "--no-record"], ARGS.data)
    c = params(f"{tmp}/again.tsr")
    assert all(np.array_equal(b[k], c[k]) for k in b), "two 2-rank runs differ"
    print("ok: two 2-rank runs give bitwise identical weights")

    # 2a. --no-overlap: one blocking AllReduce per bucket instead of AllReduceStart/Wait, the same
    #     packing and the same sum: the same bytes.
    blocking, _ = train(t, 2, 32, ["--max-steps", "60", "--no-overlap", "--save", f"{tmp}/blocking.tsr", "--no-record"],
                        ARGS.data)
    d = params(f"{tmp}/blocking.tsr")
    assert all(np.array_equal(b[k], d[k]) for k in b), "--no-overlap changes the weights"
    assert blocking["comm_wait_s"] == 0 and blocking["train_loss"] == two["train_loss"], blocking
    print("ok: --no-overlap gives the same weights, bitwise")

    # 2b'. Bucket caps (--first-bucket-mb, --bucket-mb: DDP's bucket_cap_mb) change how gradients are
    #      packed, not what is summed: the MLP's gradients in two buckets instead of one, same bytes.
    #      DDP's rule: a bucket closes once it reaches its cap (so it may pass it by its last gradient).
    printed = run([t, "passes", os.path.join(ROOT, "samples", "resnet18.json"), "--train", "--world-size", "4", "--dim", "N=8",
                   "--bucket-mb", "5", "--first-bucket-mb", "0.5", "--no-record", "--print"]).stdout.splitlines()
    split = [l for l in printed if l.startswith("split")]
    assert split and "6 gradient all-reduce bucket(s) of 44691240 bytes" in split[0], split
    sizes = [int(l.split("bytes = ")[1].split(",")[0]) for l in printed if "= AllReduceStart(" in l]
    assert len(sizes) == 6 and sizes[0] >= 0.5 * 2**20 and all(b >= 5 * 2**20 for b in sizes[1:-1]), sizes
    small, _ = train(t, 2, 32, ["--max-steps", "60", "--first-bucket-mb", "0.1", "--save", f"{tmp}/small.tsr", "--no-record"],
                     ARGS.data)
    e = params(f"{tmp}/small.tsr")
    assert all(np.array_equal(b[k], e[k]) for k in b), "smaller buckets change the weights"
    print(f"ok: bucket caps: ResNet-18 in 6 buckets, each closed on reaching 0.5 MiB (the first) or 5 MiB "
          f"({', '.join('%.1f' % (b / 2**20) for b in sizes)} MiB); the MLP in two, same weights")

    # 2b. --deterministic: the gradients summed in rank order (MPI_Allgather), bitwise repeatable
    #     and the same losses as the default reduction to float rounding.
    d1, _ = train(t, 2, 32, ["--max-steps", "40", "--deterministic", "--save", f"{tmp}/d1.tsr", "--no-record"], ARGS.data)
    d2, _ = train(t, 2, 32, ["--max-steps", "40", "--deterministic", "--save", f"{tmp}/d2.tsr", "--no-record"], ARGS.data)
    p1, p2 = params(f"{tmp}/d1.tsr"), params(f"{tmp}/d2.tsr")
    assert all(np.array_equal(p1[k], p2[k]) for k in p1) and d1["train_loss"] == d2["train_loss"]
    print("ok: --deterministic runs are bitwise identical")

    # 3. Rank 0 writes the checkpoints and records the run once, with its world size; a resumed
    #    2-rank run continues to the uninterrupted run's weights.
    db = f"{tmp}/insight.db"
    train(t, 2, 32, ["--max-steps", "30", "--checkpoint-dir", f"{tmp}/ck", "--db", db], ARGS.data)
    assert os.path.exists(f"{tmp}/ck/last.tsc"), os.listdir(f"{tmp}/ck")
    train(t, 2, 32, ["--max-steps", "60", "--resume", f"{tmp}/ck/last.tsc", "--save", f"{tmp}/resumed.tsr",
                     "--no-record"], ARGS.data)
    d = params(f"{tmp}/resumed.tsr")
    assert all(np.array_equal(b[k], d[k]) for k in b), "the resumed run differs from the uninterrupted one"
    # ... and a different number of ranks resumes it too (checkpoints hold the global batch).
    r1, _ = train(t, 1, 64, ["--max-steps", "60", "--resume", f"{tmp}/ck/last.tsc", "--save", f"{tmp}/r1.tsr",
                             "--no-record"], ARGS.data)
    e = params(f"{tmp}/r1.tsr")
    worst = max(float(np.max(np.abs(b[k] - e[k]))) for k in b)
    assert worst < 1e-5, f"2 ranks -> 1 rank resume drifts by {worst}"
    runs = run([t, "runs", "list", "--db", db, "--json"])
    listed = json.loads(runs.stdout)
    assert len(listed) == 1, f"one run expected (rank 0's), got {len(listed)}"
    show = run([t, "runs", "show", "last", "--db", db])
    assert "world_size" in show.stdout and " 2" in show.stdout, show.stdout
    assert "rank 0" in show.stdout and "rank 1" in show.stdout, "per-rank communication time: " + show.stdout
    shown = json.loads(run([t, "runs", "show", "last", "--db", db, "--json"]).stdout)
    assert [r["rank"] for r in shown["ranks"]] == [0, 1] and all(r["mpi_s"] > 0 and r["allreduce_kernels"] > 0
                                                                for r in shown["ranks"]), shown["ranks"]
    import sqlite3
    with sqlite3.connect(db) as con:
        lanes = dict(con.execute("SELECT d.text, COUNT(*) FROM spans s JOIN strings d ON d.id = s.device "
                                 "JOIN strings o ON o.id = s.op WHERE o.text = 'MPI_Allreduce' GROUP BY 1").fetchall())
    assert set(lanes) == {"rank0/mpi", "rank1/mpi"} and min(lanes.values()) > 0, lanes  # the communication thread's sums
    print("ok: checkpoints from rank 0 resume bit for bit on 2 ranks and within 1e-5 on 1; one run recorded, "
          f"world_size 2, both ranks' spans, their bucket sums on lanes rank0/mpi and rank1/mpi ({lanes['rank0/mpi']} each)")

    # 4. A rank killed mid-run (rank 1, then rank 0) stops the job in bounded time, never a hang;
    # 5. a stop asked on one rank (SIGINT) or through mpirun (SIGUSR1, which it forwards) stops every
    #    rank after the same whole step, with a last checkpoint, the run recorded as stopped; and the
    #    checkpoint of the killed run resumes on 2 ranks.
    def start_lenet(name):
        return subprocess.Popen(MPIRUN + ["-n", "2", t, "train", os.path.join(ROOT, "samples", "lenet.json"), "--data", ARGS.data,
                                          "--batch", "32", "--epochs", "50", "--threads", "1", "--db", f"{tmp}/{name}.db",
                                          "--no-eval", "--checkpoint-dir", f"{tmp}/{name}", "--checkpoint-every", "20"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def ranks_of(p, name):
        deadline = time.time() + 60
        while time.time() < deadline:
            time.sleep(0.5)
            if os.path.exists(f"{tmp}/{name}/step-00000040.tsc"):
                ps = sorted(int(x) for x in run(["pgrep", "-f", "-P", str(p.pid), "tessera"]).stdout.split())
                if len(ps) == 2:
                    return ps
        os.killpg(p.pid, signal.SIGKILL)
        sys.exit(f"FAIL: the 2-rank job {name} did not get going")

    def finish(p, what):
        try:
            return p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            sys.exit(f"FAIL: the job hung after {what}")

    kills = []
    for victim_rank in (1, 0):
        name = f"kill{victim_rank}"
        p = start_lenet(name)
        victim = ranks_of(p, name)[victim_rank]  # the ranks start in rank order
        killed_at = time.time()
        os.kill(victim, signal.SIGKILL)
        _, err = finish(p, f"rank {victim_rank} was killed")
        kills.append(time.time() - killed_at)
        assert p.returncode != 0, "the job reported success with a rank killed"
        assert f"rank {victim_rank}" in err, "mpirun's message names the rank: " + err[-500:]
        # Rank 0 records the run failed when another rank dies; when rank 0 itself dies, rank 1 (on
        # its machine) sees its process gone and records the run failed, naming rank 0 (the run
        # stayed "running" in the table).
        (killed,) = json.loads(run([t, "runs", "list", "--db", f"{tmp}/{name}.db", "--json"]).stdout)
        assert killed["status"] == "failed", killed
        if victim_rank == 0:
            assert "rank 0 died" in killed.get("error", "") and "recorded by rank 1" in killed["error"], killed
    ok = run([t, "run", os.path.join(ROOT, "samples", "lenet.json"), "--checkpoint", f"{tmp}/kill1/step-00000040.tsc",
              "--no-record"])
    assert ok.returncode == 0, "the checkpoint before the kill does not load: " + ok.stderr
    # Only rank 0 reads the checkpoint (on several machines only rank 0's has it): rank 1 is given
    # a path that does not exist.
    lenet_cmd = [t, "train", os.path.join(ROOT, "samples", "lenet.json"), "--data", ARGS.data, "--batch", "32", "--threads", "1",
                 "--no-eval", "--no-record", "--max-steps", "50", "--json"]
    resumed = run(MPIRUN + ["-n", "1"] + lenet_cmd + ["--resume", f"{tmp}/kill1/step-00000040.tsc", ":", "-n", "1"] + lenet_cmd +
                  ["--resume", f"{tmp}/not-on-this-machine.tsc"])
    assert resumed.returncode == 0, resumed.stderr[-1500:]
    assert "resumed at step 40" in resumed.stderr and json.loads(
        [l for l in resumed.stdout.splitlines() if l.startswith("{")][-1])["steps"] == 50, (resumed.stdout, resumed.stderr[-800:])
    print(f"ok: a rank killed with SIGKILL stopped the job in {kills[0]:.1f} s (rank 1) and {kills[1]:.1f} s (rank 0); "
          "the last checkpoint loads and resumes on 2 ranks (read by rank 0 only), the run is marked failed (by rank 1 when rank 0 died)")

    # mpirun itself interrupted (Ctrl-C on it alone, or a batch system's SIGTERM): it terminates the
    # ranks, and rank 0 records the run failed before the SIGKILL that follows (the other ranks outlive
    # their SIGTERM for it: before, 1 run in 2 stayed "running" until the next reader marked it crashed).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):
        name = f"mpirun{sig.name}"
        shutil.rmtree(f"{tmp}/{name}", ignore_errors=True)
        if os.path.exists(f"{tmp}/{name}.db"):
            os.remove(f"{tmp}/{name}.db")
        p = start_lenet(name)
        ranks_of(p, name)
        os.kill(p.pid, sig)
        finish(p, f"{sig.name} to mpirun")
        assert p.returncode != 0, f"{sig.name} to mpirun: the job reported success"
        (ended,) = json.loads(run([t, "runs", "list", "--db", f"{tmp}/{name}.db", "--json"]).stdout)
        assert ended["status"] == "failed" and "terminated by mpirun" in ended.get("error", ""), ended
    print("ok: SIGINT or SIGTERM to mpirun: the run is recorded failed, terminated by mpirun (3 of 3)")

    for how in ("SIGINT to rank 1", "SIGUSR1 to mpirun"):
        name = "stop" + how.split()[0]
        p = start_lenet(name)
        ranks = ranks_of(p, name)
        if how.startswith("SIGINT"):
            os.kill(ranks[1], signal.SIGINT)
        else:
            os.kill(p.pid, signal.SIGUSR1)
        _, err = finish(p, how)
        assert p.returncode == 0 and "stopped by the user at step" in err, (p.returncode, err[-800:])
        assert os.path.exists(f"{tmp}/{name}/last.tsc"), os.listdir(f"{tmp}/{name}")
        (stopped,) = json.loads(run([t, "runs", "list", "--db", f"{tmp}/{name}.db", "--json"]).stdout)
        assert stopped["status"] == "stopped", stopped
    print("ok: SIGINT to one rank and SIGUSR1 to mpirun stop every rank after the same step: last.tsc written, "
          "the run recorded as stopped")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
