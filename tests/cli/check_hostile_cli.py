#!/usr/bin/env python3
"""Hostile but well-formed input through the `tessera` program (issue: hostile input end to end):
each case once crashed, hung, destroyed a file or was silently accepted. Every command must end
by itself (20 s), with exit 0 and the right result, 1 and a message naming the reason, or 2 for a
usage error; never by a signal.

Usage: check_hostile_cli.py TESSERA REPO_ROOT   (TESSERA_DB: the database recorded runs go to)
"""
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

tessera, root = sys.argv[1], sys.argv[2]
lenet = os.path.join(root, "samples", "lenet.json")
mlp = os.path.join(root, "samples", "mlp.json")
failures = []


def run(*args, cwd=None):
    try:
        p = subprocess.run([tessera, *args], capture_output=True, timeout=20, cwd=cwd)
    except subprocess.TimeoutExpired:
        return "hang", "", ""
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def parses_as_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def save_model(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="check_hostile_cli")
    model.ir_version = 8
    onnx.save(model, path)


with tempfile.TemporaryDirectory() as tmp:
    # 1. A zero-size batch ran into oneDNN's primitive creation and died of SIGFPE.
    out = os.path.join(tmp, "zero")
    rc, _, err = run("run", lenet, "--dim", "N=0", "--output-dir", out, "--no-record")
    check(rc == 0, "run with --dim N=0 exits 0 (rc %s, %s)" % (rc, err.strip()))
    if rc == 0:
        check(np.load(os.path.join(out, "logits.npy")).shape == (0, 10), "its output is an empty (0, 10) tensor")
    for cmd in (["bench", lenet, "--dim", "N=0", "--runs", "1", "--warmup", "0", "--no-record"],
                ["passes", lenet, "--dim", "N=0", "--no-record"]):
        rc, _, err = run(*cmd)
        check(rc == 0, "%s with --dim N=0 exits 0 (rc %s, %s)" % (cmd[0], rc, err.strip()[-200:]))

    # 2. Rank 13 on a oneDNN kernel (Relu) aborted with an uncaught dnnl::error.
    shape = [1] * 12 + [3]
    relu13 = os.path.join(tmp, "relu13.onnx")
    save_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu13",
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]), relu13)
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32).reshape(shape)
    np.save(os.path.join(tmp, "x13.npy"), x)
    out = os.path.join(tmp, "rank13")
    rc, _, err = run("run", relu13, "--input", "x=" + os.path.join(tmp, "x13.npy"), "--output-dir", out, "--no-record")
    check(rc == 0, "a rank-13 Relu runs (rc %s, %s)" % (rc, err.strip()))
    if rc == 0:
        check(np.array_equal(np.load(os.path.join(out, "y.npy")), np.maximum(x, 0)), "and gives max(x, 0)")

    # 2b. Shape arithmetic: Conv pads of 2^62 gave a dim of 4.6e18, a wrapped element count and
    # negative FLOPs; a rank over 64 was imported, and converted to a .tsr its own reader refuses.
    huge = os.path.join(tmp, "huge_pads.onnx")
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [0.1] * 9)
    save_model(helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[2 ** 62, 0, 0, 0])], "huge",
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w]), huge)
    rc, out_text, err = run("info", huge)
    check(rc == 1 and "2^48" in err and "conv" in err, "Conv pads of 2^62 are refused at the node (rc %s, %s)" % (rc, err.strip()))
    rank65 = os.path.join(tmp, "rank65.onnx")
    save_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "rank65",
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 65)],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1] * 65)]), rank65)
    rc, _, err = run("convert", rank65, os.path.join(tmp, "rank65.tsr"))
    check(rc == 1 and "rank 65" in err and not os.path.exists(os.path.join(tmp, "rank65.tsr")),
          "a rank-65 model is refused, and convert writes nothing (rc %s, %s)" % (rc, err.strip()))

    # 2c. Two nodes defining the same name were accepted (consumers bound by file order).
    dup = os.path.join(tmp, "duplicate_output.onnx")
    save_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Neg", ["x"], ["y"], name="b")],
                                 "dup", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]), dup)
    rc, _, err = run("info", dup)
    check(rc == 1 and "'y'" in err and "'b'" in err, "two nodes defining 'y' are refused (rc %s, %s)" % (rc, err.strip()))
    both = os.path.join(tmp, "raw_and_typed.onnx")
    wt = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    wt.raw_data = np.array([3.0, 4.0], np.float32).tobytes()
    save_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "both",
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [wt]), both)
    rc, _, err = run("info", both)
    check(rc == 1 and "raw_data" in err and "'w'" in err, "an initializer with raw_data and float_data is refused (rc %s, %s)" % (rc, err.strip()))

    # 3. A name that is not valid UTF-8 aborted `info --json`, and `runs list --json` for good once
    # such a run was recorded.
    bad = os.path.join(tmp, "bad_utf8.onnx")
    save_model(helper.make_graph([helper.make_node("Relu", ["x"], ["QQQQ"], name="NNNN")], "GGGG",
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                 [helper.make_tensor_value_info("QQQQ", TensorProto.FLOAT, [2])]), bad + ".src")
    data = open(bad + ".src", "rb").read()
    open(bad, "wb").write(data.replace(b"QQQQ", b"Q\xff\xfeQ").replace(b"GGGG", b"G\xc3(G"))
    rc, out_text, err = run("info", bad, "--json")
    check(rc == 0 and parses_as_json(out_text), "info --json on non-UTF-8 names prints valid JSON (rc %s, %s)" % (rc, err.strip()))
    rc, _, err = run("run", bad, "--output-dir", os.path.join(tmp, "bad_out"))
    check(rc in (0, 1), "run records a graph with non-UTF-8 names (rc %s, %s)" % (rc, err.strip()))
    rc, out_text, err = run("runs", "list", "--json")
    check(rc == 0 and parses_as_json(out_text), "runs list --json reads that database (rc %s, %s)" % (rc, err.strip()))

    # 4. Test labels at or above the number of classes were read out of bounds: a garbage test loss,
    # exit 0, recorded as a metric.
    rs = np.random.RandomState(0)
    data_npz = os.path.join(tmp, "labels.npz")
    np.savez(data_npz, x=rs.rand(64, 1, 28, 28).astype(np.float32), labels=rs.randint(0, 10, 64).astype(np.int64),
             x_test=rs.rand(8, 1, 28, 28).astype(np.float32), labels_test=np.array([0, 1, 2, 3, 4, 5, 6, 10], np.int64))
    rc, _, err = run("train", mlp, "--data", data_npz, "--epochs", "1", "--batch", "32", "--no-record")
    check(rc == 1 and "out of range" in err and "10" in err,
          "a test label of 10 for 10 classes is an error naming it (rc %s, %s)" % (rc, err.strip()[-300:]))

    # 4b. `run --checkpoint` applied a checkpoint that missed tensors of the graph (the rest kept the
    # graph's weights, silently).
    clean_npz = os.path.join(tmp, "clean.npz")
    np.savez(clean_npz, x=rs.rand(64, 1, 28, 28).astype(np.float32), labels=rs.randint(0, 10, 64).astype(np.int64))
    ck = os.path.join(tmp, "ck")
    rc, _, err = run("train", mlp, "--data", clean_npz, "--epochs", "1", "--batch", "32", "--checkpoint-dir", ck, "--no-record")
    check(rc == 0, "mlp trains for the checkpoint case (rc %s, %s)" % (rc, err.strip()[-200:]))
    # 10b. The same graph file named by another path string was a different graph to --resume.
    rc, _, err = run("train", os.path.join(".", "samples", "mlp.json"), "--data", clean_npz, "--epochs", "2", "--batch", "32",
                     "--resume", os.path.join(ck, "epoch-0001.tsc"), "--no-record", cwd=root)
    check(rc == 0, "--resume accepts the graph named ./samples/mlp.json instead of its absolute path (rc %s, %s)"
          % (rc, err.strip()[-300:]))
    # 14e. After a resume, --json counted only the resumed epochs.
    rc, out_text, err = run("train", mlp, "--data", clean_npz, "--epochs", "3", "--batch", "32",
                            "--resume", os.path.join(ck, "epoch-0001.tsc"), "--no-record", "--json")
    last = json.loads(out_text.strip().splitlines()[-1]) if rc == 0 else {}
    check(last.get("epochs") == 3 and last.get("epochs_run") == 2 and last.get("steps") == 6,
          "--json after a resume gives 3 epochs (2 of them run now) and 6 steps (%s)" % last)
    renamed = os.path.join(tmp, "mlp_renamed.json")
    open(renamed, "w").write(open(mlp).read().replace('"fc2.b"', '"fc2.bias"'))
    shutil.copy(os.path.join(root, "samples", "mlp.npz"), os.path.join(tmp, "mlp.npz"))
    rc, _, err = run("run", renamed, "--checkpoint", os.path.join(ck, "epoch-0001.tsc"), "--no-record")
    check(rc == 1 and "'fc2.bias'" in err, "a checkpoint missing a param of the graph is refused, naming it (rc %s, %s)" % (rc, err.strip()))
    rc, _, err = run("run", mlp, "--checkpoint", os.path.join(ck, "epoch-0001.tsc"), "--no-record")
    check(rc == 0, "the checkpoint runs on its own graph (rc %s, %s)" % (rc, err.strip()))

    # 5. Outputs were written as OUT.tmp and renamed over OUT, replacing a symlink, FIFO or device.
    target = os.path.join(tmp, "target.txt")
    open(target, "w").write("keep")
    link = os.path.join(tmp, "link.tsr")
    os.symlink(target, link)
    rc, _, err = run("convert", lenet, link)
    check(rc == 1 and "symbolic link" in err, "convert refuses to replace a symlink (rc %s, %s)" % (rc, err.strip()))
    check(os.path.islink(link) and open(target).read() == "keep", "the symlink and its target are unchanged")
    fifo_dir = os.path.join(tmp, "fifo_out")
    os.mkdir(fifo_dir)
    os.mkfifo(os.path.join(fifo_dir, "logits.npy"))
    rc, _, err = run("run", lenet, "--output-dir", fifo_dir, "--no-record")
    check(rc == 1 and "FIFO" in err, "run refuses to replace a FIFO output (rc %s, %s)" % (rc, err.strip()))
    check(stat.S_ISFIFO(os.lstat(os.path.join(fifo_dir, "logits.npy")).st_mode), "the FIFO is still there")
    check(not os.path.exists(os.path.join(fifo_dir, "logits.npy.tmp")), "no .tmp file is left")

    # 6. Inputs that are not regular files: a FIFO blocked forever, /dev/zero was read until memory
    # ran out (as a checkpoint: an uncaught bad_alloc).
    fifo = os.path.join(tmp, "model.onnx")
    os.mkfifo(fifo)
    rc, _, err = run("info", fifo)
    check(rc == 1 and "FIFO" in err, "info on a FIFO is refused at once (rc %s, %s)" % (rc, err.strip()))
    empty = os.path.join(tmp, "empty.onnx")
    open(empty, "wb").close()
    rc, _, err = run("info", empty)
    check(rc == 1 and "empty" in err and "ir_version" not in err, "a 0-byte .onnx is called empty (rc %s, %s)" % (rc, err.strip()))
    rc, _, err = run("run", lenet, "--checkpoint", "/dev/zero", "--no-record")
    check(rc == 1 and "character device" in err, "run --checkpoint /dev/zero is refused (rc %s, %s)" % (rc, err.strip()))
    rc, _, err = run("run", lenet, "--input", "x=/dev/zero", "--no-record")
    check(rc == 1 and "character device" in err, "an input of /dev/zero is refused (rc %s, %s)" % (rc, err.strip()))

    # 8. Commands that only read created the database and its folder.
    missing = os.path.join(tmp, "nonexistent", "dir", "x.db")
    rc, out_text, err = run("runs", "list", "--db", missing)
    check(rc == 0 and "no runs" in out_text, "runs list on a missing database says there are none (rc %s, %s)" % (rc, err.strip()))
    rc, _, err = run("runs", "show", "last", "--db", missing)
    check(rc == 1 and "no insight database" in err, "runs show on a missing database is an error (rc %s, %s)" % (rc, err.strip()))
    check(not os.path.exists(os.path.join(tmp, "nonexistent")), "and neither made a folder or a file")

    # 7. Command-line values: an option taken as the previous option's value, NaN, negative or
    # 20-digit seeds were accepted.
    rc, _, err = run("run", lenet, "--output-dir", "--no-record", cwd=tmp)
    check(rc == 2 and not os.path.exists(os.path.join(tmp, "--no-record")),
          "--output-dir --no-record is a usage error and makes no folder (rc %s, %s)" % (rc, err.strip()))
    for flag, value in (("--lr", "nan"), ("--lr", "inf"), ("--momentum", "nan"), ("--weight-decay", "nan"),
                        ("--seed", "-1"), ("--seed", "99999999999999999999")):
        rc, _, err = run("train", mlp, "--data", data_npz, flag, value, "--no-record")
        check(rc == 2, "train %s %s is a usage error (rc %s, %s)" % (flag, value, rc, err.strip()[-200:]))
    rc, _, err = run("run", lenet, "--seed", "-1", "--no-record")
    check(rc == 2, "run --seed -1 is a usage error (rc %s)" % rc)
    for spec in ("N=abc", "N", "=4", "N=-1", "N=99999999999"):
        rc, _, err = run("run", lenet, "--dim", spec, "--no-record")
        check(rc == 2, "--dim %s is a usage error (rc %s, %s)" % (spec, rc, err.strip()))
    rc, _, err = run("run", lenet, "--dim", "M=4", "--no-record")
    check(rc == 1 and "'M'" in err and "N" in err, "--dim of a symbol the graph lacks is refused, naming both (rc %s, %s)" % (rc, err.strip()))

    # 14b. Names with a newline or NUL were printed raw: a name could fake a line of the output.
    nl = os.path.join(tmp, "newline.onnx")
    save_model(helper.make_graph([helper.make_node("Relu", ["x\nfake: line"], ["y\x00z"], name="r")], "g\nname",
                                 [helper.make_tensor_value_info("x\nfake: line", TensorProto.FLOAT, [1, 2])],
                                 [helper.make_tensor_value_info("y\x00z", TensorProto.FLOAT, [1, 2])]), nl)
    for cmd in (["info", nl], ["run", nl, "--no-record"]):
        rc, out_text, err = run(*cmd)
        check(rc == 0 and "\x00" not in out_text and "fake: line" in out_text and
              not any(line.startswith("fake: line") for line in out_text.splitlines()),
              "%s prints names with a newline or NUL escaped (rc %s, %r)" % (cmd[0], rc, out_text[:200]))

    # 14c. A test split with one of its two files missing was dropped without a word.
    half = os.path.join(tmp, "half_test.npz")
    np.savez(half, x=rs.rand(16, 1, 28, 28).astype(np.float32), labels=rs.randint(0, 10, 16).astype(np.int64),
             x_test=rs.rand(4, 1, 28, 28).astype(np.float32))
    rc, _, err = run("train", mlp, "--data", half, "--epochs", "1", "--batch", "8", "--no-record")
    check(rc == 1 and "labels_test" in err, "an .npz with x_test but no labels_test is an error naming it (rc %s, %s)" % (rc, err.strip()[-200:]))
    idx_dir = os.path.join(tmp, "idx")
    os.makedirs(idx_dir)
    for name, arr, magic in (("train-images-idx3-ubyte", rs.randint(0, 255, (16, 28, 28)).astype(np.uint8), 0x0803),
                             ("train-labels-idx1-ubyte", rs.randint(0, 10, 16).astype(np.uint8), 0x0801),
                             ("t10k-labels-idx1-ubyte", rs.randint(0, 10, 4).astype(np.uint8), 0x0801)):
        with open(os.path.join(idx_dir, name), "wb") as f:
            f.write(magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in arr.shape) + arr.tobytes())
    rc, _, err = run("train", mlp, "--data", idx_dir, "--epochs", "1", "--batch", "8", "--no-record")
    check(rc == 1 and "t10k-images" in err, "an IDX folder with t10k labels but no images is an error naming them (rc %s, %s)"
          % (rc, err.strip()[-200:]))

    # 14d. Every member of a graph's side .npz was inflated on each load, used or not: a member no
    # param names is now only listed (here it is not even a valid .npy, and the graph still loads).
    import zipfile
    side_dir = os.path.join(tmp, "side")
    os.makedirs(side_dir)
    shutil.copy(lenet, side_dir)
    shutil.copy(os.path.join(root, "samples", "lenet.npz"), side_dir)
    with zipfile.ZipFile(os.path.join(side_dir, "lenet.npz"), "a") as z:
        z.writestr("unused_huge.npy", b"\x93NUMPY not really")
    rc, _, err = run("info", os.path.join(side_dir, "lenet.json"))
    check(rc == 0, "a side .npz member no param names is never decoded (rc %s, %s)" % (rc, err.strip()))

    # 11a. A database the user may read but not write: `runs list` failed ("cannot write").
    ro_dir = os.path.join(tmp, "ro")
    os.makedirs(ro_dir)
    ro_db = os.path.join(ro_dir, "x.db")
    rc, _, err = run("run", lenet, "--db", ro_db)
    check(rc == 0, "a run is recorded for the read-only case (rc %s, %s)" % (rc, err.strip()))
    os.chmod(ro_db, 0o444)
    os.chmod(ro_dir, 0o555)
    os.chmod(tmp, 0o755)
    # Root writes whatever the mode bits say: read as the unprivileged user where we are root.
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    probe = subprocess.run(as_user + [tessera, "--version"], capture_output=True) if shutil.which("setpriv") or not as_user else None
    if probe is None or probe.returncode != 0:
        print("skip the read-only database case: cannot run tessera as an unprivileged user here")
    else:
        for action in (["list"], ["show", "last"], ["metrics", "last"]):
            p = subprocess.run(as_user + [tessera, "runs", *action, "--db", ro_db], capture_output=True, timeout=20)
            check(p.returncode == 0, "runs %s reads a database its user may not write (rc %s, %s)"
                  % (action[0], p.returncode, p.stderr.decode("utf-8", "replace").strip()))
    os.chmod(ro_dir, 0o755)

    # 11b. A disk that fills during a recorded run left it "finished" with most metrics missing.
    # The file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes every write past it fail as a full
    # disk does.
    full_db = os.path.join(tmp, "full.db")
    rc, _, err = run("run", lenet, "--db", full_db)  # the schema and one run: what fits
    size = 32768  # the WAL cannot grow past 32 KB: the run starts, its metrics do not all fit

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    p = subprocess.run([tessera, "train", mlp, "--data", clean_npz, "--epochs", "3", "--batch", "8", "--db", full_db],
                       capture_output=True, timeout=120, preexec_fn=small_disk)
    perr = p.stderr.decode("utf-8", "replace")
    check(p.returncode in (0, 1) and "not fully recorded" in perr,
          "training on a full disk says the run was not fully recorded (rc %s, %s)" % (p.returncode, perr.strip()[-300:]))
    rc, out_text, err = run("runs", "list", "--db", full_db, "--json")
    rows = json.loads(out_text) if rc == 0 else []
    train_rows = [r for r in rows if r["kind"] == "train"]
    check(bool(train_rows) and (train_rows[0]["status"] != "finished" or "incomplete record" in train_rows[0]["error"]),
          "and its record is not a complete 'finished' one (%s)" % ([(r["status"], r["error"][:120]) for r in train_rows]))

    # 12. Round three (issue 42): silent cases and messages.
    # 12a. Quantizing on NaN or inf calibration data, or with a NaN weight, exited 0 (all-NaN data
    # gave scale 1.0 everywhere).
    for bad, what in ((np.nan, "NaN"), (np.inf, "an infinity")):
        xs = rs.rand(16, 1, 28, 28).astype(np.float32)
        xs[3, 0, 5, 5] = bad
        cal = os.path.join(tmp, "cal_%s.npz" % what.split()[-1])
        np.savez(cal, x=xs, labels=rs.randint(0, 10, 16).astype(np.int64))
        rc, _, err = run("quantize", mlp, os.path.join(tmp, "q.onnx"), "--calibrate", cal)
        check(rc == 1 and "'x' holds %s (example 3)" % what in err,
              "quantize on calibration data holding %s is refused naming the input and example (rc %s, %s)"
              % (what, rc, err.strip()[-200:]))
    with open(mlp) as f:
        doc = json.load(f)
    doc["params"][3]["data"][4] = "NaN"  # JSON has no NaN literal: the reader's spelling of it
    nan_w = os.path.join(tmp, "nan_weight.json")
    with open(nan_w, "w") as f:
        json.dump(doc, f)
    shutil.copy(os.path.join(root, "samples", "mlp.npz"), os.path.join(tmp, "mlp.npz"))
    rc, _, err = run("quantize", nan_w, os.path.join(tmp, "q2.onnx"), "--calibrate", clean_npz)
    check(rc == 1 and "the bias 'fc2.b' of Gemm 'fc2'" in err and "holds NaN at element 4" in err,
          "quantize with a NaN weight is refused naming it (rc %s, %s)" % (rc, err.strip()[-200:]))
    # 12b. Converting to .json turned string bytes that are not UTF-8 into U+FFFD.
    bad_utf8 = os.path.join(tmp, "bad_utf8.onnx")
    save_model(helper.make_graph(
        [helper.make_node("Identity", ["s"], ["y"])], "strings", [],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
        [helper.make_tensor("s", TensorProto.STRING, [2], [b"ok", b"\xff\xfe bad"])]), bad_utf8)
    rc, _, err = run("convert", bad_utf8, os.path.join(tmp, "bad_utf8.json"))
    check(rc == 1 and "not valid UTF-8" in err and not os.path.exists(os.path.join(tmp, "bad_utf8.json")),
          "convert to .json refuses string bytes that are not UTF-8, writing nothing (rc %s, %s)" % (rc, err.strip()[-200:]))
    rc, _, err = run("convert", bad_utf8, os.path.join(tmp, "bad_utf8.tsr"))
    check(rc == 0, "while .tsr keeps them (rc %s, %s)" % (rc, err.strip()[-200:]))
    # 12c. (An error in a .tsr names the file read, then the origin: tests/formats/tsr_test.cpp.)
    # 12d. An .npy of the wrong shape was named by its input only.
    wrong = os.path.join(tmp, "wrong_shape.npy")
    np.save(wrong, np.zeros((2, 3), np.float32))
    rc, _, err = run("run", mlp, "-i", "x=" + wrong, "--no-record")
    check(rc == 1 and wrong in err and "input 'x' expects" in err,
          "an .npy of the wrong shape is named with its input (rc %s, %s)" % (rc, err.strip()[-200:]))
    # 12e. An option a command lacks was "The following arguments were not expected: 1 --threads".
    rc, _, err = run("passes", mlp, "--dim", "N=2", "--threads", "1")
    check(rc == 2 and "'--threads' is not an option of tessera passes" in err,
          "an option the command lacks is named as such (rc %s, %s)" % (rc, err.strip()))
    rc, _, err = run("passes", mlp, "--dim", "N=2147483648", "--no-record")
    check(rc == 1 and "input 'x'" in err, "a --dim too large for memory names the input (rc %s, %s)" % (rc, err.strip()))

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
