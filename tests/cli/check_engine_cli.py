#!/usr/bin/env python3
"""End-to-end checks of the six-stage commands: `tessera run` (threads), `passes`, `bench`, and bad
input through the ONNX reader and the feed checks.

Usage: check_engine_cli.py TESSERA REPO_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

tessera, root = sys.argv[1], sys.argv[2]
lenet = os.path.join(root, "samples", "lenet.json")
failures = []


def run(*args):
    p = subprocess.run([tessera, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    x = np.random.RandomState(0).randn(3, 1, 28, 28).astype(np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    outs = {}
    for mode in (["--threads", "1"], ["--threads", "2"], ["--reference"]):
        d = os.path.join(tmp, "out" + "".join(mode))
        rc, out, err = run("run", lenet, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", d, *mode)
        check(rc == 0, "run %s exits 0 (%s)" % (" ".join(mode), err.strip()))
        outs[" ".join(mode)] = np.load(os.path.join(d, "logits.npy")) if rc == 0 else None
    if all(v is not None for v in outs.values()):
        a, b, r = outs["--threads 1"], outs["--threads 2"], outs["--reference"]
        check(np.array_equal(a, b), "1 and 2 threads give bit-identical outputs")
        check(np.abs(a - r).max() <= 1e-4 * np.abs(r).max(), "six stages match the reference kernels")

    rc, out, err = run("bench", lenet, "--dim", "N=8", "--runs", "3", "--warmup", "1", "--threads", "2", "--json")
    check(rc == 0, "bench --json exits 0 (%s)" % err.strip())
    if rc == 0:
        j = json.loads(out.strip().splitlines()[-1])
        check(all(k in j for k in ("median_ms", "min_ms", "compile_ms", "peak_bytes", "gflops")), "bench prints every key")
        check(j["min_ms"] > 0 and j["median_ms"] >= j["min_ms"] and j["gflops"] > 0, "bench figures are positive and ordered")
        check(j["peak_bytes"] >= j["lower_bound_bytes"] > 0, "arena is at least the lifetime lower bound")

    dump = os.path.join(tmp, "snapshots")
    rc, out, err = run("passes", lenet, "--dump", dump)
    check(rc == 0, "passes exits 0 (%s)" % err.strip())
    check("fuse" in out and "prepare" in out and "load" in out, "passes lists the stages and the fuse pass")
    files = sorted(os.listdir(dump)) if os.path.isdir(dump) else []
    check(any("fuse" in f for f in files) and all(f.endswith(".tir") for f in files), "passes --dump writes snapshots")
    if files:
        text = open(os.path.join(dump, [f for f in files if "fuse" in f][0])).read()
        check("FusedConv" in text, "the fuse snapshot holds FusedConv nodes")
    rc, out, err = run("passes", lenet, "--pipeline", "dce,nonsense")
    check(rc == 1 and "nonsense" in err, "an unknown pass is named (%s)" % err.strip())
    # Data-parallel and accumulation flags that cannot apply are refused, naming the flag.
    rc, out, err = run("passes", lenet, "--sync-bn", "--no-record")
    check(rc == 1 and "--sync-bn needs --world-size" in err, "--sync-bn without ranks is refused (%s)" % err.strip())
    for flag in ("--bucket-mb", "--first-bucket-mb"):
        rc, out, err = run("passes", lenet, "--train", flag, "2", "--no-record")
        check(rc == 1 and flag + " needs --world-size" in err, "%s without ranks is refused (%s)" % (flag, err.strip()))
    rc, out, err = run("passes", lenet, "--accumulate", "2", "--no-record")
    check(rc == 1 and "--accumulate needs --train" in err, "--accumulate without --train is refused (%s)" % err.strip())
    rc, out, err = run("passes", os.path.join(root, "samples", "resnet18.json"), "--train", "--world-size", "2", "--sync-bn",
                       "--accumulate", "2", "--dim", "N=4", "--no-record")
    split = [l for l in out.splitlines() if l.startswith("split")]
    check(rc == 0 and split and "20 batch norms synchronised" in split[0], "passes shows the synchronised batch norms (%s)" % (split or err))

    # Bad input.
    bad = os.path.join(tmp, "truncated.onnx")
    model = os.path.join("/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx")
    if os.path.exists(model):
        data = open(model, "rb").read()
        open(bad, "wb").write(data[: len(data) // 2])
        rc, out, err = run("run", bad)
        check(rc == 1 and "truncated.onnx" in err, "a truncated ONNX file is refused naming it (%s)" % err.strip())
        rc, out, err = run("run", model, "--input", "x=" + os.path.join(tmp, "x.npy"))
        check(rc == 1 and "'x'" in err, "an input of the wrong shape is refused naming it (%s)" % err.strip())
    rc, out, err = run("run", lenet, "--dim", "N=2000000000")
    check(rc == 1 and "bytes" in err, "an absurd batch is refused before allocating, with the size (%s)" % err.strip())
    rc, out, err = run("run", lenet, "--input", "y=" + os.path.join(tmp, "x.npy"))
    check(rc == 1 and "'y'" in err, "an unknown input name is refused (%s)" % err.strip())
    rc, out, err = run("bench", lenet, "--runs", "0")
    check(rc == 2, "bench --runs 0 is a usage error")

    # Strings and sequences: a .npy of NumPy strings in, strings and a sequence's tensors out.
    import onnx
    from onnx import helper, TensorProto
    g = helper.make_graph([
        helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER", stopwords=["monday"]),
        helper.make_node("SplitToSequence", ["y"], ["s"], keepdims=0),
        helper.make_node("SequenceInsert", ["s", "y"], ["t"]),
    ], "strings", [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [None]),
         helper.make_tensor_value_info("t", TensorProto.STRING, None)])
    g.output[1].type.CopyFrom(helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.STRING, None)))
    text_model = os.path.join(tmp, "strings.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), text_model)
    np.save(os.path.join(tmp, "words.npy"), np.array(["Monday", "caf\u00e9", "tuesday"]))
    d = os.path.join(tmp, "strings_out")
    rc, out, err = run("run", text_model, "--input", "x=" + os.path.join(tmp, "words.npy"), "--output-dir", d)
    check(rc == 0, "run of a string and sequence model exits 0 (%s)" % err.strip())
    if rc == 0:
        y = np.load(os.path.join(d, "y.npy"))
        check(y.tolist() == ["CAF\u00c9", "TUESDAY"], "StringNormalizer's output reads back in NumPy (%s)" % y)
        items = sorted(f for f in os.listdir(d) if f.startswith("t_"))
        check(items == ["t_0.npy", "t_1.npy", "t_2.npy"], "a sequence output is written one file per tensor (%s)" % items)
        check(np.load(os.path.join(d, "t_2.npy")).tolist() == ["CAF\u00c9", "TUESDAY"], "the inserted tensor is last")
    # A string constant through .tsr: written by one process, checked (content hash) and run by another.
    words = helper.make_tensor("words", TensorProto.STRING, [2], [b"Monday", b"caf\xc3\xa9"])
    g2 = helper.make_graph([helper.make_node("Constant", [], ["w"], value=words),
                            helper.make_node("Concat", ["x", "w"], ["c"], axis=0),
                            helper.make_node("StringNormalizer", ["c"], ["y"], case_change_action="UPPER")],
                           "constants", [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
                           [helper.make_tensor_value_info("y", TensorProto.STRING, [None])])
    const_model = os.path.join(tmp, "constants.onnx")
    onnx.save(helper.make_model(g2, opset_imports=[helper.make_opsetid("", 17)]), const_model)
    for ext in ("tsr", "json"):
        converted = os.path.join(tmp, "constants." + ext)
        rc, out, err = run("convert", const_model, converted)
        check(rc == 0, "convert of a string constant to .%s exits 0 (%s)" % (ext, err.strip()))
        d = os.path.join(tmp, "const_out_" + ext)
        rc, out, err = run("run", converted, "--input", "x=" + os.path.join(tmp, "words.npy"), "--output-dir", d)
        check(rc == 0, "the .%s reads back in another process and runs (%s)" % (ext, err.strip()))
        if rc == 0:
            y = np.load(os.path.join(d, "y.npy")).tolist()
            check(y == ["MONDAY", "CAF\u00c9", "TUESDAY", "MONDAY", "CAF\u00c9"], "its string constant survived (%s)" % y)
    rc, out, err = run("run", text_model, "--input", "x=" + os.path.join(tmp, "x.npy"))
    check(rc == 1 and "'x'" in err, "a float .npy for a string input is refused naming it (%s)" % err.strip())

# An audio front end whose window (512) is longer than one sample: `info` binds every symbolic
# dimension to 1 for the FLOPs, which this valid model refuses; info still tells the rest.
with tempfile.TemporaryDirectory() as tmp:
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.random.RandomState(1).randn(4, 1, 512).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], strides=[256])], "frontend",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "T"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    audio = os.path.join(tmp, "frontend.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), audio)
    rc, out, err = run("info", audio)
    check(rc == 0 and "FLOPs per sample: unknown" in out and "parameters: 2048" in out,
          "info on a model whose window exceeds one sample still reports, FLOPs unknown (%s)" % (out + err).strip()[-300:])
    rc, out, err = run("info", audio, "--json")
    j = json.loads(out) if rc == 0 else {}
    check(rc == 0 and j.get("flops_per_sample") is None and j.get("flops_unknown"), "its --json says null and why (%s)" % out[-300:])
    rc, out, err = run("run", audio, "--dim", "T=2048", "--device", "cpu")
    check(rc == 0, "and it runs with T=2048 (%s)" % err.strip())
    rc, out, err = run("info", audio, "--dim", "T=2048")
    check(rc == 0 and "FLOPs per sample (T=2048): 28.67K (28672)" in out,
          "info --dim T=2048 counts its FLOPs and says the size assumed (%s)" % (out + err).strip()[-300:])
    rc, out, err = run("info", audio, "--dim", "Q=3")
    check(rc == 1 and "no symbolic dimension 'Q'" in err, "a --dim naming no input symbol is refused (%s)" % err.strip())

# tessera generate refuses what is not a decoder with a KV cache, and bad prompts, in one line.
rc, out, err = run("generate", lenet, "--prompt", "1,2")
check(rc == 1 and "no token input" in err and "lenet.json" in err, "generate on a CNN says it is no decoder (%s)" % err.strip())
rc, out, err = run("generate", lenet, "--prompt", "1,x")
check(rc == 1 and "'x' is not a token id" in err, "a prompt that is not ids is refused naming the item (%s)" % err.strip())
rc, out, err = run("generate", lenet)
check(rc == 2 and "--prompt" in err, "generate without a prompt is a usage error (%s)" % err.strip())

# Reshape targets computed from the input's shape (Shape -> Gather -> Unsqueeze -> Concat), as
# exporters write them: the batch dimension survives into the MatMul, which counts 2 * N * 4 * 4 * 8
# FLOPs (it counted 0 when the Reshape's output was [?, ?, ?]: Swin-T showed 32 MFLOPs).
with tempfile.TemporaryDirectory() as tmp:
    from onnx import TensorProto, helper, numpy_helper
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    g = helper.make_graph([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "four"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("MatMul", ["r", "w"], ["y"])], "shape_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [i64("zero", 0), i64("axes", [0]), i64("four", [4, 4]),
         numpy_helper.from_array(np.ones((4, 8), np.float32), "w")])
    chain = os.path.join(tmp, "chain.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), chain)
    rc, out, err = run("info", chain)
    check(rc == 0 and "FLOPs per sample (N=1): 256 (256)" in out, "FLOPs through a computed Reshape target (%s)" % (out + err).strip()[-300:])
    rc, out, err = run("info", chain, "--dim", "N=3", "--json")
    j = json.loads(out) if rc == 0 else {}
    check(j.get("flops_per_sample") == 768 and j.get("dims_assumed") == {"N": 3}, "with --dim N=3 in JSON (%s)" % out[-300:])

# Weights kept as Constant nodes (paddle2onnx's habit) and inside If branches (a voice-activity
# detector's whole body) are parameters too: 32 + 4 + 4.
with tempfile.TemporaryDirectory() as tmp:
    from onnx import TensorProto, helper, numpy_helper
    rs = np.random.RandomState(2)
    const = lambda name, a: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(a.astype(np.float32), name + "_v"))
    then_g = helper.make_graph([const("c1", rs.randn(4)), helper.make_node("Add", ["y", "c1"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 4])])
    else_g = helper.make_graph([helper.make_node("Add", ["y", "b"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 4])],
                               [numpy_helper.from_array(rs.randn(4).astype(np.float32), "b")])
    g = helper.make_graph([const("w", rs.randn(8, 4)), helper.make_node("MatMul", ["x", "w"], ["y"]),
                           helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g)], "weights_elsewhere",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])])
    model = os.path.join(tmp, "weights_elsewhere.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
    rc, out, err = run("info", model, "--json")
    j = json.loads(out) if rc == 0 else {}
    check(rc == 0 and j.get("parameters") == 40, "weights in Constant nodes and If branches count as parameters (%s)" % (out + err)[-300:])
    # FLOPs: the MatMul's 2 * 2 * 8 * 4 and the If's larger branch (an Add of [2, 4]): 128 + 8.
    check(rc == 0 and j.get("flops_per_sample") == 136, "an If counts its larger branch's FLOPs (%s)" % (out + err)[-300:])

# Devices: --device on every command, `info --devices`, and the CUDA plugin loaded at run time.
rc, out, err = run("info", "--devices", "--json")
check(rc == 0, "info --devices --json exits 0 (%s)" % err.strip())
devices = json.loads(out) if rc == 0 else {"devices": [], "cuda_unavailable": ""}
names = [d["name"] for d in devices["devices"]]
check(names[:1] == ["cpu"] and all(d["description"] for d in devices["devices"]), "the CPU is listed first, described (%s)" % out)
has_gpu = any(n.startswith("cuda:") for n in names)
check(has_gpu or devices["cuda_unavailable"], "without a GPU, info says why (%s)" % devices["cuda_unavailable"])
for cmd in (["run", lenet], ["bench", lenet, "--runs", "1", "--warmup", "0"], ["passes", lenet]):
    rc, out, err = run(*cmd, "--device", "tpu")
    check(rc == 1 and "expected cpu, cuda, cuda:N or auto" in err, "%s --device tpu is refused (%s)" % (cmd[0], err.strip()))
    rc, out, err = run(*cmd, "--device", "cuda:99")
    check(rc == 1 and "cuda:99" in err, "%s --device cuda:99 is refused naming it (%s)" % (cmd[0], err.strip()))
    rc, out, err = run(*cmd, "--device", "cpu")
    check(rc == 0, "%s --device cpu exits 0 (%s)" % (cmd[0], err.strip()))
if not has_gpu:
    rc, out, err = run("run", lenet, "--device", "cuda")
    check(rc == 1 and devices["cuda_unavailable"] in err, "run --device cuda says why there is no GPU (%s)" % err.strip())
    rc, out, err = run("bench", lenet, "--runs", "1", "--warmup", "0")
    check(rc == 0 and "device: cpu" in out and "no CUDA device: " in out, "bench (auto) runs on the CPU and says why (%s)" % out)
plugin = os.environ.get("TESSERA_TEST_CUDA_PLUGIN", "")
if plugin and not has_gpu:
    # The plugin loads here (no driver): CUDA itself says what is missing, not the loader.
    env = dict(os.environ, TESSERA_CUDA_PLUGIN=plugin)
    p = subprocess.run([tessera, "info", "--devices", "--json"], capture_output=True, text=True, env=env, timeout=60)
    why = json.loads(p.stdout)["cuda_unavailable"] if p.returncode == 0 else p.stderr
    check(p.returncode == 0 and why.startswith("cuda") and "cannot be loaded" not in why,
          "the CUDA plugin loads and reports the runtime's reason (%s)" % why)
    env["TESSERA_CUDA_PLUGIN"] = os.path.join(root, "no-such-plugin.so")
    p = subprocess.run([tessera, "info", "--devices"], capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 0 and "does not exist" in p.stdout, "a missing TESSERA_CUDA_PLUGIN is named (%s)" % p.stdout.strip())

# Reading an ONNX file holds its weights once: the message's raw bytes become the tensors (the file
# is parsed as a stream, not read whole first). Two 128 MB initializers must cost `info` at most
# 1.6x their size over a tiny model's peak: it was 3.3x (the file's bytes, the message and the
# tensors); 1.4x remains, protobuf growing a string past its 50 MB reserve by doubling (the old and
# the new buffer live at once while it copies).
def peak_rss_kb(*args):
    # Through a fresh interpreter: a child's ru_maxrss counts the pages it shared with its parent
    # before exec, and this process holds hundreds of MB by now.
    probe = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", probe, tessera, *args], capture_output=True, text=True,
                         timeout=120).stdout.split()
    return int(out[0]), int(out[1])

if os.environ.get("TESSERA_TEST_SANITIZED"):
    print("skip the ONNX reader's peak memory: AddressSanitizer's allocator keeps freed memory in quarantine")
else:
    with tempfile.TemporaryDirectory() as tmp:
        from onnx import TensorProto, helper
        def model(n, path):
            inits = [helper.make_tensor("w%d" % i, TensorProto.FLOAT, [n], np.full(n, 0.5, np.float32).tobytes(), raw=True)
                     for i in range(2)]
            nodes = [helper.make_node("Add", ["x", "w0"], ["y0"]), helper.make_node("Add", ["y0", "w1"], ["y"])]
            g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], inits)
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        small, big = os.path.join(tmp, "small.onnx"), os.path.join(tmp, "big.onnx")
        model(4, small)
        model(32 << 20, big)  # 2 x 128 MB
        rc0, base = peak_rss_kb("info", small)
        rc1, peak = peak_rss_kb("info", big)
        weights_kb = 2 * (32 << 20) * 4 // 1024
        check(rc0 == 0 and rc1 == 0 and peak - base <= 1.6 * weights_kb,
              "info holds an ONNX file's weights once (%d MB over a tiny model for %d MB of weights)"
              % ((peak - base) // 1024, weights_kb // 1024))

# --precision bf16: refused (naming the reason) where oneDNN may not use AVX-512 BF16 or AMX, which
# ONEDNN_MAX_CPU_ISA forces on any CPU; where the CPU has them, LeNet runs rounded to bf16 (close to
# f32, not equal) and the plan names oneDNN's bf16 kernels.
with tempfile.TemporaryDirectory() as tmp:
    x = np.random.RandomState(1).randn(4, 1, 28, 28).astype(np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    p = subprocess.run([tessera, "run", lenet, "--precision", "bf16", "--device", "cpu"], capture_output=True,
                       text=True, env=env, timeout=120)
    check(p.returncode == 1 and "lenet.json" in p.stderr and "without AVX-512 BF16 or AMX" in p.stderr
          and "ONEDNN_MAX_CPU_ISA=AVX2" in p.stderr, "--precision bf16 is refused on AVX2 (%s)" % p.stderr.strip())
    rc, out, err = run("run", lenet, "--precision", "fp16")
    check(rc != 0 and "fp16" in err, "--precision fp16 is not a precision (%s)" % err.strip())
    flags = open("/proc/cpuinfo").read()
    if "avx512_bf16" in flags or "amx_bf16" in flags:
        res = {}
        for prec in ("fp32", "bf16"):
            d = os.path.join(tmp, prec)
            rc, out, err = run("run", lenet, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", d,
                               "--precision", prec, "--device", "cpu")
            check(rc == 0, "run --precision %s exits 0 (%s)" % (prec, err.strip()))
            res[prec] = np.load(os.path.join(d, "logits.npy")) if rc == 0 else None
        if all(v is not None for v in res.values()):
            diff = np.abs(res["bf16"] - res["fp32"]).max() / np.abs(res["fp32"]).max()
            check(1e-6 < diff < 2e-2, "bf16 logits within 2e-2 of f32 and rounded (%.1e)" % diff)
        rc, out, err = run("passes", lenet, "--precision", "bf16", "--dim", "N=4", "--print")
        check(rc == 0 and ("avx512_core_bf16" in out or "amx" in out),
              "passes --precision bf16 shows oneDNN's bf16 kernels (%s)" % (err.strip() or out[-300:]))
    else:
        print("skip bf16 runs: this CPU has neither AVX-512 BF16 nor AMX")

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
