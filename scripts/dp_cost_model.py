#!/usr/bin/env python3
"""The cost model of data-parallel training (engine/README.md, "Data parallel"): per step, each
rank computes its share of the global batch, then all-reduces 4 bytes per parameter in buckets.

    ring all-reduce of B bytes over W ranks:  T = 2 (W-1)/W * B / bw + 2 (W-1) * lat
    step time with overlap f (0..1):          T_step(W) = T_c / W + max(0, T_comm - f * T_bwd)

Without a measured run it prints the projection for 8 machines of 8 GPUs (NCCL); with one
(`--one` and `--two`: the JSON of a 1-rank `tessera train ... --json` and of `mpirun -n 2 tessera
train ... --json` with the same global batch) it prints the model's 2-rank step and speed-up
beside the measured ones, on this machine's shared-memory link. `--json` prints the model's
figures as one JSON object (bytes per step, all-reduce time, predicted speed-up) for tests:
tests/dist/check_data_parallel.py checks the bytes against the split stage's buckets.

    python3 scripts/dp_cost_model.py [--params N] [--one ONE.json --two TWO.json] [--json]
"""
import argparse
import json

# Links: (name, bus bandwidth in bytes/s, latency per hop in s). NVLink/NVSwitch and InfiniBand
# NDR figures are NCCL's typical all-reduce bus bandwidths on H100 systems (8 GPUs per node,
# 8 x 400 Gb/s NICs per node); shared memory is Open MPI's vader between two processes here.
NVSWITCH = ("NVLink 4 / NVSwitch, in a node", 350e9, 3e-6)
IB_NDR = ("8 x InfiniBand NDR per node, across nodes", 180e9, 8e-6)
SHM = ("shared memory, this machine", 5e9, 3e-6)


def ring(bytes_, world, link):
    _, bw, lat = link
    if world <= 1:
        return 0.0
    return 2 * (world - 1) / world * bytes_ / bw + 2 * (world - 1) * lat


def hierarchical(bytes_, gpus_per_node, nodes):
    """NCCL's two-level all-reduce: reduce-scatter in the node, ring across nodes on 1/g of the
    data, all-gather in the node."""
    inner = ring(bytes_, gpus_per_node, NVSWITCH)
    outer = ring(bytes_ / gpus_per_node, nodes, IB_NDR) if nodes > 1 else 0.0
    return inner + outer


def step(t_compute_1, world, t_comm, t_backward_share=0.6, overlap=0.0):
    t_c = t_compute_1 / world
    return t_c + max(0.0, t_comm - overlap * t_backward_share * t_c)


MODELS = [  # (name, parameters, one GPU's step at the global batch, in s)
    ("ResNet-18 (CIFAR style), global batch 4096, bf16 on one H100 ~53 ms", 11182418, 0.053),
    ("LeNet-5, global batch 4096, ~4 ms on one H100", 61706, 0.004),
]


def projection():
    print("Projection: 8 machines x 8 GPUs (NCCL, hierarchical all-reduce), fixed global batch:")
    for name, params, t1 in MODELS:
        b = 4 * params
        for ov in (0.0, 0.9):
            rows = []
            for gpus in (1, 8, 64):
                comm = hierarchical(b, min(gpus, 8), max(1, gpus // 8)) if gpus > 1 else 0.0
                t = step(t1, gpus, comm, overlap=ov)
                rows.append(f"{gpus:2d} GPUs {t * 1e3:6.2f} ms x{t1 / t:4.1f}")
            print(f"  {name}; {b / 1e6:.2f} MB per all-reduce; overlap {int(ov * 100):2d}%: " + ", ".join(rows))


def measured(one, two, params, batch, quiet=False):
    """The model's 2-rank figures beside the measured ones (`batch`: the global batch of both runs)."""
    b = 4 * params
    steps = max(1, two["steps"])
    speedup = two["images_per_s"] / one["images_per_s"]
    comm_model = ring(b, 2, SHM)
    comm_measured = two["comm_s"] / steps
    # Overlap as measured: the share of MPI's time the step did not wait for.
    overlap = 1.0 - two["comm_wait_s"] / two["comm_s"] if two["comm_s"] > 0 else 0.0
    t1 = batch / one["images_per_s"]  # the 1-rank step
    t2 = step(t1, 2, comm_model, overlap=overlap)
    model = {"bytes_per_step": b, "allreduce_model_s": comm_model, "allreduce_measured_s": comm_measured,
             "overlap_measured": overlap, "step_1_rank_s": t1, "step_2_ranks_model_s": t2,
             "speedup_model": t1 / t2, "speedup_measured": speedup}
    if not quiet:
        print(f"2 ranks on this machine: all-reduce of {b / 1e6:.3f} MB per step: model {comm_model * 1e6:.0f} us, "
              f"measured {comm_measured * 1e6:.0f} us per step (rank 0, including waiting for the slower rank)")
        print(f"speed-up 2 ranks / 1 rank: model {t1 / t2:.2f}x (half the compute, the all-reduce {overlap * 100:.0f}% "
              f"hidden as measured), measured {speedup:.2f}x (the model leaves out the two ranks' contention for "
              f"this machine's caches, memory and cores)")
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", type=int, default=11182418, help="parameters (default: samples/resnet18.json)")
    ap.add_argument("--one")
    ap.add_argument("--two")
    ap.add_argument("--batch", type=int, default=64, help="the global batch of both measured runs")
    ap.add_argument("--json", action="store_true", help="the measured comparison as one JSON object")
    a = ap.parse_args()
    if a.one and a.two:
        with open(a.one) as f1, open(a.two) as f2:
            model = measured(json.load(f1), json.load(f2), a.params, a.batch, quiet=a.json)
        if a.json:
            print(json.dumps(model))
            return
    elif a.json:
        raise SystemExit("dp_cost_model.py: --json needs --one and --two")
    projection()


if __name__ == "__main__":
    main()
