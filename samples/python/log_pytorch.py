#!/usr/bin/env python3
"""Trains a small PyTorch CNN on Fashion-MNIST and logs it into Tessera's insight store: its
hyper-parameters, the graph (exported to ONNX), loss and accuracy per step, a checkpoint, and a
torch.profiler trace. The run then appears in `tessera runs list`, in the studio's runs dashboard,
lineage and profiler, like a Tessera run.

    python3 samples/python/log_pytorch.py [--steps 200] [--db insight.db] [--out out/py-torch]
"""
import argparse
import gzip
import os

import numpy as np
import torch
from torch import nn

import tessera

FASHION = tessera.FASHION_MNIST


def read_idx(name):
    with gzip.open(os.path.join(FASHION, name), "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--db", default=None)
    ap.add_argument("--out", default="out/py-torch")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    x = torch.from_numpy(read_idx("train-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0)
    y = torch.from_numpy(read_idx("train-labels-idx1-ubyte.gz").astype(np.int64))

    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(8 * 14 * 14, 10))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    params = {"lr": a.lr, "momentum": 0.9, "batch": a.batch, "steps": a.steps, "framework": "pytorch " + torch.__version__}

    with tessera.insight.run("pytorch-cnn", params=params, db=a.db, seed=0) as run:
        onnx_path = os.path.join(a.out, "cnn.onnx")
        torch.onnx.export(model, x[:1], onnx_path, input_names=["x"], output_names=["logits"],
                          dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
        run.log_graph(onnx_path)
        order = torch.randperm(len(x))
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        for step in range(a.steps):
            idx = order[step * a.batch:(step + 1) * a.batch]
            if step == 10:
                prof.start()
            logits = model(x[idx])
            loss = nn.functional.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step == 14:
                prof.stop()
            acc = (logits.argmax(1) == y[idx]).float().mean()
            run.log(step + 1, **{"train/loss": loss.item(), "train/accuracy": acc.item()})
        ck = os.path.join(a.out, "cnn.pt")
        torch.save(model.state_dict(), ck)
        run.log_checkpoint(ck, a.steps)
        trace = os.path.join(a.out, "trace.json")
        prof.export_chrome_trace(trace)
        spans = run.log_trace(trace)
        print(f"run {run.id} in {run.db}: {a.steps} steps, final loss {loss.item():.4f}, "
              f"{spans['spans']} profiler spans")


if __name__ == "__main__":
    main()
