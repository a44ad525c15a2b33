#!/usr/bin/python3
"""A hostile-input campaign: structure-aware mutants of real ONNX models through the CLI.

Each mutant is a real model (ONNX's backend-test models from libonnx-testdata, and the PyTorch
exports of tests/zoo/make_zoo.py when build/zoo has them) with one to three structural
mutations (dims, dtypes, ranks, attributes, names, node order, duplicated outputs, opsets, op
types, initializer data, nested graphs), saved as .onnx and run through
  tessera info M;  tessera run M;  tessera convert M M.tsr;  tessera run M.tsr
each under a 20 s limit. Per mutant, the worst outcome over its commands is counted:
  crash     killed by a signal, or an exit code other than 0, 1 or 2, or an error without a message
  hang      still running after 20 s, twice in a row
  blow-up   peak memory (max RSS) over 2 GB
  silent    ONNX's checker (onnx.checker.check_model, full_check) refuses the mutant, yet `info`
            or `run` exits 0
  clean     an error (exit 1 or 2) with a one-line message naming the file
  success   every command exits 0 and the checker accepts the model
Usage:
  /usr/bin/python3 tests/fuzz/campaign.py --tessera build/release/cli/tessera [--count 5000]
      [--seed 1] [--jobs 2] [--out build/campaign] [--keep]
Prints the table and writes every non-clean finding (the mutant and the command) to OUT/findings.
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

import onnx
from onnx import TensorProto

LIMIT_S = 20
BLOWUP_KB = 2 * 1024 * 1024
EXTREME_INTS = [0, -1, 1, 2, 3, 7, 13, 64, 65, 2**31 - 1, 2**31, 2**32, 2**62, -2**62, 2**63 - 1, -2**63]
OPS = ["Relu", "Conv", "Gemm", "MatMul", "Add", "Reshape", "Transpose", "Concat", "Slice", "Gather", "Pad",
       "MaxPool", "AveragePool", "Softmax", "BatchNormalization", "ConvTranspose", "Resize", "Split", "Expand",
       "If", "Loop", "Scan", "LSTM", "NonZero", "TopK", "Unique", "Einsum", "Where", "Tile", "Range",
       "ConstantOfShape", "ReduceSum", "Cast", "Identity", "Flatten", "Squeeze", "Unsqueeze", "NoSuchOp"]
BAD_NAMES = ["", "x", "\x00nul", "new\nline", "\xff\xfe", "../../etc/passwd", "a" * 5000, "%1", "é"]


def graphs_of(graph):
    """The graph and every graph nested in its nodes' attributes."""
    out = [graph]
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out += graphs_of(a.g)
            for g in a.graphs:
                out += graphs_of(g)
    return out


def value_infos(graph):
    return list(graph.input) + list(graph.output) + list(graph.value_info)


def mutate_dim(rng, model):
    vis = [vi for g in graphs_of(model.graph) for vi in value_infos(g) if vi.type.HasField("tensor_type")]
    if not vis:
        return False
    shape = rng.choice(vis).type.tensor_type.shape
    choice = rng.random()
    if choice < 0.15 or not shape.dim:
        for _ in range(rng.choice([1, 5, 13, 70])):
            shape.dim.add().dim_value = rng.choice([1, 2])
    elif choice < 0.25:
        del shape.dim[rng.randrange(len(shape.dim))]
    elif choice < 0.4:
        shape.dim[rng.randrange(len(shape.dim))].dim_param = rng.choice(["N", "", "\xff", "N M"])
    else:
        shape.dim[rng.randrange(len(shape.dim))].dim_value = rng.choice(EXTREME_INTS)
    return True


def mutate_dtype(rng, model):
    g = model.graph
    targets = [vi.type.tensor_type for vi in value_infos(g) if vi.type.HasField("tensor_type")]
    if g.initializer and rng.random() < 0.5:
        rng.choice(g.initializer).data_type = rng.randrange(0, 20)
        return True
    if not targets:
        return False
    rng.choice(targets).elem_type = rng.randrange(0, 20)
    return True


def mutate_initializer(rng, model):
    inits = [t for g in graphs_of(model.graph) for t in g.initializer]
    for node in model.graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                inits.append(a.t)
    if not inits:
        return False
    t = rng.choice(inits)
    choice = rng.random()
    if choice < 0.2:
        t.dims.append(rng.choice([0, 1, 2, 2**31, 2**40]))
    elif choice < 0.35 and t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice(EXTREME_INTS)
    elif choice < 0.5 and t.raw_data:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)]
    elif choice < 0.6:
        t.float_data.extend([1.0, float("nan")])
    elif choice < 0.7:
        while len(t.dims) < 20:
            t.dims.append(1)
    elif choice < 0.8:
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", rng.choice(["../../../etc/passwd", "missing.bin", "/dev/zero", ""])
    else:
        t.name = rng.choice([t.name + "_renamed"] + BAD_NAMES)
    return True


def mutate_attribute(rng, model):
    nodes = [n for g in graphs_of(model.graph) for n in g.node if n.attribute]
    if not nodes:
        return False
    node = rng.choice(nodes)
    a = rng.choice(node.attribute)
    choice = rng.random()
    if choice < 0.1:
        node.attribute.remove(a)
    elif a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(EXTREME_INTS)
    elif a.type == onnx.AttributeProto.INTS:
        if a.ints and rng.random() < 0.7:
            a.ints[rng.randrange(len(a.ints))] = rng.choice(EXTREME_INTS)
        else:
            a.ints.extend([rng.choice(EXTREME_INTS)] * rng.choice([1, 3, 70]))
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"\xff\xfe", b"NOTSET", b"nonsense", b"x" * 1000])
    else:
        a.type = rng.randrange(0, 15)
    return True


def mutate_names(rng, model):
    g = rng.choice(graphs_of(model.graph))
    if not g.node:
        return False
    node = rng.choice(g.node)
    choice = rng.random()
    outputs = [o for n in g.node for o in n.output]
    if choice < 0.3 and node.output and outputs:
        node.output[rng.randrange(len(node.output))] = rng.choice(outputs)  # duplicated definition
    elif choice < 0.55 and node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(BAD_NAMES + ["undefined_value"])
    elif choice < 0.7 and node.output:
        node.output[rng.randrange(len(node.output))] = rng.choice(BAD_NAMES)
    elif choice < 0.85:
        node.input.append(rng.choice(outputs + [""]))
    else:
        if g.output:
            g.output[rng.randrange(len(g.output))].name = rng.choice(BAD_NAMES + outputs)
    return True


def mutate_nodes(rng, model):
    g = rng.choice(graphs_of(model.graph))
    if not g.node:
        return False
    choice = rng.random()
    i = rng.randrange(len(g.node))
    if choice < 0.3 and len(g.node) > 1:
        j = rng.randrange(len(g.node))
        a, b = copy.deepcopy(g.node[i]), copy.deepcopy(g.node[j])
        g.node[i].CopyFrom(b)
        g.node[j].CopyFrom(a)
    elif choice < 0.5:
        del g.node[i]
    elif choice < 0.7:
        g.node.append(copy.deepcopy(g.node[i]))
    elif choice < 0.9:
        g.node[i].op_type = rng.choice(OPS)
    else:
        g.node[i].domain = rng.choice(["ai.onnx.ml", "com.microsoft", "nonsense"])
    return True


def mutate_opset(rng, model):
    if not model.opset_import or rng.random() < 0.1:
        op = model.opset_import.add()
        op.domain, op.version = "", rng.choice([1, 7, 13, 30])
        return True
    op = rng.choice(model.opset_import)
    if rng.random() < 0.8:
        op.version = rng.choice([0, 1, 3, 6, 7, 9, 11, 13, 17, 18, 19, 25, 1000, -1])
    else:
        op.domain = rng.choice(["nonsense", "ai.onnx"])
    model.ir_version = rng.choice([model.ir_version, 0, 3, 8, 100])
    return True


def mutate_nesting(rng, model):
    """Wraps the graph's first node in an If whose branches hold it (or nests an If deeply)."""
    g = model.graph
    if not g.node or not g.input:
        return False
    inner = copy.deepcopy(g.node[0])
    depth = rng.choice([1, 2, 40])
    branch = onnx.helper.make_graph([inner], "b", [], [onnx.helper.make_tensor_value_info(o, 0, None) for o in inner.output])
    leaf = copy.deepcopy(branch)  # the else branch stays one level deep (both would double per level)
    for _ in range(depth - 1):
        cond = onnx.helper.make_node("Constant", [], ["c"], value=onnx.helper.make_tensor("c", TensorProto.BOOL, [], [True]))
        node = onnx.helper.make_node("If", ["c"], list(inner.output), then_branch=branch, else_branch=leaf)
        branch = onnx.helper.make_graph([cond, node], "b", [], [onnx.helper.make_tensor_value_info(o, 0, None) for o in inner.output])
    cond = onnx.helper.make_node("Constant", [], ["__cond"], value=onnx.helper.make_tensor("c", TensorProto.BOOL, [], [True]))
    wrap = onnx.helper.make_node("If", ["__cond"], list(inner.output), then_branch=branch, else_branch=leaf)
    del g.node[0]
    g.node.insert(0, wrap)
    g.node.insert(0, cond)
    return True


MUTATORS = [mutate_dim, mutate_dtype, mutate_initializer, mutate_attribute, mutate_names, mutate_nodes,
            mutate_opset, mutate_nesting]


def seeds(root):
    files = sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*/model.onnx"))
    files += sorted(glob.glob("/usr/share/libonnx-testdata/data/simple/*/model.onnx"))
    real = [p for p in sorted(glob.glob(os.path.join(root, "build/zoo/*.onnx"))) if os.path.getsize(p) < 20 << 20]
    return files, real


def make_mutant(rng, files, real, path):
    src = rng.choice(real) if real and rng.random() < 0.15 else rng.choice(files)
    model = onnx.load(src, load_external_data=False)
    applied = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        m = rng.choice(MUTATORS)
        if m(rng, model):
            applied.append(m.__name__[len("mutate_"):])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return src, applied


def checker_refuses(path):
    try:
        onnx.checker.check_model(onnx.load(path, load_external_data=False), full_check=True)
        return False
    except Exception:  # noqa: BLE001 -- every refusal of the checker counts, whatever its type
        return True


def run_measured(cmd, cwd):
    """Runs cmd with a limit; returns (outcome, rc, seconds, peak RSS in KB from wait4, stderr)."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
            fd = os.open(os.path.join(cwd, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.chdir(cwd)
            os.execv(cmd[0], cmd)
        finally:
            os._exit(127)
    while True:
        wpid, status, usage = os.wait4(pid, os.WNOHANG)
        if wpid:
            break
        if time.monotonic() - start > LIMIT_S:
            os.killpg(pid, signal.SIGKILL)
            os.wait4(pid, 0)
            return "hang", None, LIMIT_S, 0, ""
        time.sleep(0.01)
    with open(os.path.join(cwd, "stderr"), "rb") as f:
        err = f.read().decode("utf-8", "replace")
    rc = os.waitstatus_to_exitcode(status)
    return "done", rc, time.monotonic() - start, usage.ru_maxrss, err


SEVERITY = {"crash": 3, "hang": 2, "blow-up": 1}


def classify(tessera, path, workdir, seed_valid):
    """Runs the four commands on one mutant; returns (outcome, detail)."""
    tsr = os.path.join(workdir, "m.tsr")
    commands = [[tessera, "info", path], [tessera, "run", path, "--seed", "1"],
                [tessera, "convert", path, tsr], [tessera, "run", tsr, "--seed", "1"]]
    worst, detail, codes = None, "", []
    for i, cmd in enumerate(commands):
        if i == 3 and not os.path.exists(tsr):
            break
        outcome, rc, secs, rss, err = run_measured(cmd, workdir)
        if outcome == "hang":  # a loaded machine can stall anything once: a hang is twice over the limit
            outcome, rc, secs, rss, err = run_measured(cmd, workdir)
        what = f"{cmd[1]} {os.path.basename(cmd[2])}"
        found = None
        if outcome == "hang":
            found = ("hang", f"{what}: over {LIMIT_S} s")
        elif rc not in (0, 1, 2) or (rc != 0 and not err.strip()):
            found = ("crash", f"{what}: exit {rc}: {err.strip()[-300:]}")
        elif rss > BLOWUP_KB:
            found = ("blow-up", f"{what}: {rss // 1024} MB, {secs:.1f} s")
        if found and (worst is None or SEVERITY[found[0]] > SEVERITY[worst]):
            worst, detail = found
        codes.append(rc)
    if worst:
        return worst, detail
    # Silent acceptance: the checker refuses a mutant of a model it accepts, and info or run took it.
    refused = seed_valid and checker_refuses(path)
    if refused and 0 in codes[:2]:
        return "silent", "info/run exit 0 on what onnx.checker refuses: " + " ".join(map(str, codes))
    return ("success" if all(c == 0 for c in codes) else "clean"), ""


def worker(args, root, tessera, out):
    """Makes and classifies mutants START..END-1, one JSON line each on stdout. Runs in its own
    process: onnx's Python bindings (the checker, protobuf) can crash on hostile models, and such a
    crash must cost one mutant, not the campaign."""
    files, real = seeds(root)
    seed_valid = {}  # seed model -> accepted by onnx.checker (mutants of refused seeds are not "silent")
    for i in range(args.start, args.end):
        rng = random.Random(args.seed * 1_000_003 + i)
        work = os.path.join(out, "w%d" % i)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        path = os.path.join(work, "m.onnx")
        src, applied = make_mutant(rng, files, real, path)
        if src not in seed_valid:
            seed_valid[src] = not checker_refuses(src)
        outcome, detail = classify(tessera, path, work, seed_valid[src])
        if outcome not in ("clean", "success"):
            dest = os.path.join(out, "findings", "%05d-%s.onnx" % (i, outcome))
            shutil.copy(path, dest)
            with open(dest + ".txt", "w") as f:
                f.write(json.dumps({"seed": src, "mutations": applied, "outcome": outcome, "detail": detail}) + "\n")
        shutil.rmtree(work)
        print(json.dumps({"i": i, "outcome": outcome, "seed": src, "mutations": applied, "detail": detail}), flush=True)


def run_chunk(start, end, args, out):
    """Runs a worker over [start, end), restarting it past a mutant that crashed Python itself."""
    results = []
    while start < end:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--tessera", args.tessera, "--seed",
               str(args.seed), "--out", out, "--start", str(start), "--end", str(end)]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        done = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        results += done
        start = (done[-1]["i"] + 1) if done else start
        if p.returncode != 0 and start < end:
            results.append({"i": start, "outcome": "tool-crash", "seed": "", "mutations": [],
                            "detail": f"the campaign's own Python (onnx bindings) died: exit {p.returncode}"})
            start += 1
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="build/campaign")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args.tessera = os.path.abspath(args.tessera)
    out = os.path.abspath(args.out)
    if args.worker:
        worker(args, root, args.tessera, out)
        return 0
    if not seeds(root)[0]:
        sys.exit("campaign.py: no seed models (install libonnx-testdata)")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "findings"))
    counts = {k: 0 for k in ("clean", "success", "crash", "hang", "blow-up", "silent", "tool-crash")}
    start = time.monotonic()
    chunk = 100
    chunks = [(b, min(b + chunk, args.count)) for b in range(0, args.count, chunk)]
    n = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for results in pool.map(lambda c: run_chunk(c[0], c[1], args, out), chunks):
            for r in results:
                counts[r["outcome"]] += 1
                n += 1
                if r["outcome"] in ("crash", "hang", "blow-up", "tool-crash"):
                    print(f"  {r['i']} {r['outcome']}: {r['seed']} {r['mutations']}: {r['detail'][:200]}", flush=True)
            print(f"  {n} mutants, {time.monotonic() - start:.0f} s: {counts}", flush=True)
    print("| inputs | clean errors | successes | crashes | hangs | blow-ups | silent |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {n - counts['tool-crash']} | {counts['clean']} | {counts['success']} | {counts['crash']} | {counts['hang']} | "
          f"{counts['blow-up']} | {counts['silent']} |")
    if counts["tool-crash"]:
        print(f"({counts['tool-crash']} mutants not counted: the onnx Python bindings crashed on them)")
    print(f"campaign.py: {time.monotonic() - start:.0f} s, findings in {out}/findings")
    return 1 if counts["crash"] or counts["hang"] or counts["blow-up"] else 0


if __name__ == "__main__":
    sys.exit(main())
