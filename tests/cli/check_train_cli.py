#!/usr/bin/python3
"""End-to-end checks of `tessera train` on the real Fashion-MNIST (Debian's dataset-fashion-mnist).

Usage: check_train_cli.py TESSERA SOURCE_DIR [--accuracy]
  default      short runs: determinism, bit-for-bit resume from a mid-epoch checkpoint, running a
               checkpoint, and the errors (missing data, corrupt or foreign checkpoint, NaN loss)
  --accuracy   the issue's recipe: LeNet-5, SGD momentum 0.9, lr 0.01, batch 64, 2 epochs, seed 0;
               the test accuracy must reach 85% (labelled "long" in ctest)
Exits 77 (skipped) when the dataset is not installed.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def run(args, expect_ok=True):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect_ok and p.returncode != 0:
        sys.exit("FAIL: %s\nexit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    if not expect_ok and p.returncode == 0:
        sys.exit("FAIL: expected an error from %s\n%s" % (" ".join(args), p.stderr))
    return p


def expect_error(args, *needles):
    p = run(args, expect_ok=False)
    for n in needles:
        if n not in p.stderr:
            sys.exit("FAIL: %s\nstderr lacks %r:\n%s" % (" ".join(args), n, p.stderr))
    if "Segmentation" in p.stderr or p.returncode < 0:
        sys.exit("FAIL: %s crashed (%d)" % (" ".join(args), p.returncode))


def weights(npz):
    with np.load(npz) as z:
        return {k: z[k].copy() for k in z.files}


def main():
    tessera, src = sys.argv[1], sys.argv[2]
    if not os.path.isdir(DATA):
        print("skipped: %s is not installed (dataset-fashion-mnist)" % DATA)
        sys.exit(77)
    lenet = os.path.join(src, "samples", "lenet.json")
    mlp = os.path.join(src, "samples", "mlp.json")
    base = [tessera, "train", "--data", DATA, "--batch", "64", "--lr", "0.01", "--optimizer", "momentum",
            "--threads", "2", "--seed", "3"]

    if "--accuracy" in sys.argv:
        p = run([tessera, "train", lenet, "--data", DATA, "--epochs", "2", "--batch", "64", "--lr", "0.01",
                 "--optimizer", "sgd", "--momentum", "0.9", "--threads", "2", "--seed", "0", "--json"])
        result = json.loads(p.stdout.strip().splitlines()[-1])
        print(p.stderr.strip().splitlines()[-1])
        print(result)
        for key in ("test_accuracy", "train_loss", "images_per_s", "epochs"):
            if key not in result:
                sys.exit("FAIL: --json lacks %s" % key)
        if result["epochs"] != 2 or not result["test_accuracy"] >= 0.85:
            sys.exit("FAIL: LeNet-5 reached %.4f test accuracy after 2 epochs, the target is 0.85" % result["test_accuracy"])
        print("ok: LeNet-5 %.2f%% after 2 epochs" % (100 * result["test_accuracy"]))
        return

    with tempfile.TemporaryDirectory() as tmp:
        # Two runs of 60 steps with the same seed give the same weights, bit for bit.
        a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
        ck = os.path.join(tmp, "ck")
        p = run([*base[:2], mlp, *base[2:], "--max-steps", "60", "--no-eval", "--save", a])
        assert "stopped at --max-steps 60 (epoch 1, batch 60 of 938): train loss" in p.stderr, p.stderr[-500:]
        run([*base[:2], mlp, *base[2:], "--max-steps", "60", "--no-eval", "--save", b,
             "--checkpoint-dir", ck, "--checkpoint-every", "25"])
        wa, wb = weights(a.replace(".json", ".npz")), weights(b.replace(".json", ".npz"))
        assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa), "same seed, different weights"
        for name in ("step-00000025.tsc", "step-00000050.tsc", "last.tsc"):
            assert os.path.exists(os.path.join(ck, name)), "missing checkpoint " + name
        # Resumed from step 25 (mid-epoch), it ends with the same bytes.
        c = os.path.join(tmp, "c.json")
        p = run([*base[:2], mlp, *base[2:], "--max-steps", "60", "--no-eval", "--save", c,
                 "--resume", os.path.join(ck, "step-00000025.tsc")])
        assert "resumed at step 25" in p.stderr, p.stderr
        wc = weights(c.replace(".json", ".npz"))
        assert all(np.array_equal(wa[k], wc[k]) for k in wa), "resume is not bit for bit"
        # Data-parallel flags on one process say they do nothing (and change nothing).
        e = os.path.join(tmp, "e.json")
        p = run([*base[:2], mlp, *base[2:], "--max-steps", "60", "--no-eval", "--save", e, "--deterministic", "--no-overlap"])
        assert "note: no effect on one process: --deterministic, --no-overlap" in p.stderr, p.stderr
        we = weights(e.replace(".json", ".npz"))
        assert all(np.array_equal(wa[k], we[k]) for k in wa), "--deterministic changed a one-process run"
        # A different seed gives different weights.
        d = os.path.join(tmp, "d.json")
        run([*base[:2], mlp, *[x if x != "3" else "4" for x in base[2:]], "--max-steps", "60", "--no-eval", "--save", d])
        wd = weights(d.replace(".json", ".npz"))
        assert any(not np.array_equal(wa[k], wd[k]) for k in wa), "the seed changes nothing"
        # The checkpoint runs.
        p = run([tessera, "run", mlp, "--checkpoint", os.path.join(ck, "last.tsc"), "--json"])
        out = json.loads(p.stdout)
        assert out["outputs"][0]["shape"] == [1, 10], out
        print("ok: deterministic, resume bit for bit, checkpoints run")

        # Errors name the file and the reason; nothing crashes.
        expect_error([tessera, "train", mlp, "--data", os.path.join(tmp, "nowhere")], "nowhere", "no such file")
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        expect_error([tessera, "train", mlp, "--data", empty], "empty")
        bad = os.path.join(tmp, "bad.tsc")
        with open(os.path.join(ck, "last.tsc"), "rb") as f:
            blob = bytearray(f.read())
        blob[len(blob) // 2] ^= 0x10
        with open(bad, "wb") as f:
            f.write(blob)
        expect_error([*base[:2], mlp, *base[2:], "--resume", bad], "bad.tsc", "checksum mismatch")
        expect_error([*base[:2], lenet, *base[2:], "--resume", os.path.join(ck, "last.tsc")],
                     "last.tsc", "different structure")
        expect_error([*base[:2], mlp, *[x if x != "3" else "9" for x in base[2:]], "--resume",
                      os.path.join(ck, "last.tsc")], "seed is 3 in the checkpoint and 9")
        expect_error([tessera, "train", mlp, "--data", DATA, "--optimizer", "rmsprop"], "unknown optimizer 'rmsprop'")
        # Outputs that cannot be written fail before the first step (they used to fail at the
        # first checkpoint or after the last step, losing the run); a nested checkpoint folder is made.
        for flag, path, why in (("--checkpoint-dir", os.path.join(a, "ck"), "cannot create the folder"),
                                ("--save", os.path.join(tmp, "missing", "w.json"), "no such folder"),
                                ("--save", tmp, "is a directory")):
            p = run([*base[:2], mlp, *base[2:], "--epochs", "1", flag, path, "--no-record"], expect_ok=False)
            assert flag in p.stderr and why in p.stderr and "epoch 1" not in p.stderr, p.stderr
        nested = os.path.join(tmp, "new", "deeper")
        run([*base[:2], mlp, *base[2:], "--max-steps", "2", "--no-eval", "--checkpoint-dir", nested, "--no-record"])
        assert os.path.exists(os.path.join(nested, "last.tsc")), os.listdir(nested)
        expect_error([tessera, "train", mlp, "--data", DATA, "--lr", "1e30", "--max-steps", "20", "--no-eval"],
                     "the loss is", "first non-finite value is the output of")
        expect_error([tessera, "train", mlp, "--data", DATA, "--loss", "output", "--max-steps", "2"], "must hold one value")
        # NaN survives the network (Relu used to make it 0 and train on silently: loss 2.32).
        rng = np.random.RandomState(0)
        x = rng.rand(32, 1, 28, 28).astype(np.float32)
        x[5, 0, 3, 4] = np.nan
        nan_data = os.path.join(tmp, "nan_pixel.npz")
        np.savez(nan_data, x=x, labels=rng.randint(0, 10, 32).astype(np.int64))
        expect_error([tessera, "train", mlp, "--data", nan_data, "--max-steps", "2", "--no-eval", "--no-record"],
                     "step 1: the loss is", "the input 'x' already holds a non-finite value")
        # A gradient that is infinite while the loss is finite: logits * sqrt(s) with s = 0.
        sqrt_graph = os.path.join(tmp, "sqrt_scale.json")
        with open(sqrt_graph, "w") as f:
            json.dump({"format": "tessera-graph", "version": 1, "name": "sqrt_scale",
                       "inputs": [{"name": "x", "type": "f32[N, 1, 28, 28]"}],
                       "params": [{"name": "w", "type": "f32[784, 10]",
                                   "data": (rng.randn(7840) * 0.01).astype(np.float32).tolist()},
                                  {"name": "s", "type": "f32[1]", "data": [0.0]}],
                       "nodes": [{"op": "Flatten", "name": "flatten", "inputs": ["x"], "outputs": ["flat"], "attrs": {"axis": 1}},
                                 {"op": "MatMul", "name": "fc", "inputs": ["flat", "w"], "outputs": ["z"]},
                                 {"op": "Sqrt", "name": "root", "inputs": ["s"], "outputs": ["r"]},
                                 {"op": "Mul", "name": "scale", "inputs": ["z", "r"], "outputs": ["logits"]}],
                       "outputs": ["logits"]}, f)
        sqrt_run = [tessera, "train", sqrt_graph, "--data", DATA, "--max-steps", "5", "--no-eval", "--no-record"]
        # Without the check the next step's loss is NaN, and the message says which weight broke.
        expect_error(sqrt_run, "step 2: the loss is", "the weight 's' already holds a non-finite value", "--check-numerics")
        # With it, the update that broke it stops training, naming the gradient node and its forward node.
        expect_error(sqrt_run + ["--check-numerics"], "step 1: the loss is finite but the update made 's' non-finite",
                     "the first non-finite value is the output of", "Sqrt 'root'")
        print("ok: errors")

    # The larger samples: the character transformer LM learns (AdamW, cosine, its loss computed in
    # the graph, weights drawn at load) and reports its memory and data waits; ResNet-18 (batch
    # normalisation in training mode) makes finite steps.
    charlm = os.path.join(src, "samples", "charlm.json")
    chars = os.path.join(src, "samples", "data", "chars.npz")
    p = run([tessera, "train", charlm, "--data", chars, "--loss", "output", "--optimizer", "adamw", "--lr", "0.003",
             "--schedule", "cosine", "--batch", "32", "--max-steps", "40", "--threads", "2", "--no-eval", "--json"])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    if not result["train_loss"] < 3.2:  # ln(128) = 4.85 at the start; 2.9 when written
        sys.exit("FAIL: the char LM's mean loss over 40 steps is %.4f" % result["train_loss"])
    # state: the weights and Adam's m and v (the i64 shape params are not trained)
    if result["state_bytes"] != 437888 * 4 * 3 or result["arena_bytes"] <= 0 or not 0 <= result["data_wait_s"] < 5:
        sys.exit("FAIL: memory and data-wait figures: %s" % result)
    if " acc " in p.stderr:
        sys.exit("FAIL: accuracy printed for a graph whose output is its loss:\n" + p.stderr)
    resnet = os.path.join(src, "samples", "resnet18.json")
    p = run([tessera, "train", resnet, "--data", DATA, "--optimizer", "momentum", "--batch", "16", "--max-steps", "2",
             "--threads", "2", "--no-eval", "--json"])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    if result["steps"] != 2 or not 0 < result["train_loss"] < 10:
        sys.exit("FAIL: ResNet-18: %s" % result)
    print("ok: char LM trains to %.3f, ResNet-18 steps" % result["train_loss"])

    # The recurrent sample: gradients through a Loop (8 steps, weights shared by every step).
    rnn = os.path.join(src, "samples", "rnn.json")
    seqs = os.path.join(src, "samples", "data", "sequences.npz")
    p = run([tessera, "train", rnn, "--data", seqs, "--epochs", "5", "--batch", "64", "--lr", "0.05",
             "--optimizer", "momentum", "--threads", "2", "--json"])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    if not result["test_accuracy"] >= 0.85:  # chance is 0.5; 0.899 when written
        sys.exit("FAIL: the RNN sample reached %.4f test accuracy" % result["test_accuracy"])
    print("ok: RNN over Loop trains to %.2f%%" % (100 * result["test_accuracy"]))

    # The same task with ONNX's LSTM op (oneDNN forward, LSTMGrad's backpropagation through time).
    lstm = os.path.join(src, "samples", "lstm.json")
    p = run([tessera, "train", lstm, "--data", seqs, "--epochs", "5", "--batch", "64", "--lr", "0.05",
             "--optimizer", "momentum", "--threads", "2", "--json"])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    if not result["test_accuracy"] >= 0.9:  # chance is 0.5; 0.949 when written
        sys.exit("FAIL: the LSTM sample reached %.4f test accuracy" % result["test_accuracy"])
    print("ok: LSTM trains to %.2f%%" % (100 * result["test_accuracy"]))


if __name__ == "__main__":
    main()
