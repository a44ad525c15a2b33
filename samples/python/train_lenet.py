#!/usr/bin/env python3
"""Builds LeNet-5 with tessera.ops, trains it on Fashion-MNIST (Debian's dataset-fashion-mnist),
records the run in insight, saves the trained graph as ONNX and runs it with InferenceSession.

    python3 samples/python/train_lenet.py [--epochs 1] [--out out/py-lenet] [--db insight.db]
"""
import argparse
import os

import numpy as np

import tessera
from tessera import ops


def he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def lenet(seed=0):
    rng = np.random.default_rng(seed)
    g = tessera.Graph("lenet-py")
    x = g.input("x", "f32", ["N", 1, 28, 28])

    def conv(h, name, cin, cout, pad):
        w = g.param(f"{name}.w", he(rng, (cout, cin, 5, 5), cin * 25))
        b = g.param(f"{name}.b", np.zeros(cout, np.float32))
        return ops.Relu(ops.Conv(h, w, b, kernel_shape=[5, 5], pads=[pad] * 4, name=name))

    def dense(h, name, nin, nout, relu=True):
        w = g.param(f"{name}.w", he(rng, (nin, nout), nin))
        b = g.param(f"{name}.b", np.zeros(nout, np.float32))
        y = ops.Gemm(h, w, b, name=name)
        return ops.Relu(y) if relu else y

    h = ops.MaxPool(conv(x, "conv1", 1, 6, 2), kernel_shape=[2, 2], strides=[2, 2])
    h = ops.MaxPool(conv(h, "conv2", 6, 16, 0), kernel_shape=[2, 2], strides=[2, 2])
    h = ops.Flatten(h, axis=1)
    h = dense(dense(h, "fc1", 400, 120), "fc2", 120, 84)
    g.set_outputs([dense(h, "logits", 84, 10, relu=False)])
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--out", default="out/py-lenet")
    ap.add_argument("--db", default=None, help="insight database (default: tessera.insight.default_database())")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    g = lenet()
    print(g, "->", g.outputs[0]["type"])
    t = tessera.Trainer(g, optimizer="momentum", lr=0.01, epochs=a.epochs, batch_size=64, threads=2,
                        max_steps=a.max_steps, checkpoint_dir=os.path.join(a.out, "ck"), db=a.db or "")

    def on_epoch(e):
        print(f"epoch {e['epoch'] + 1}: train loss {e['train_loss']:.4f}, test accuracy "
              f"{100 * e['test_accuracy']:.2f}%, {e['images_per_s']:.0f} images/s")

    r = t.fit(data=tessera.FASHION_MNIST, on_epoch=on_epoch)
    print(f"{r['steps']} steps, run {r['run']} in {a.db or tessera.insight.default_database()}")
    path = os.path.join(a.out, "lenet.onnx")
    t.graph().save(path)
    sess = tessera.InferenceSession(path, threads=2)
    x = np.zeros((1, 1, 28, 28), np.float32)
    print(f"saved {path}; logits of a blank image: {np.round(sess.run(None, {'x': x})[0][0], 2)}")


if __name__ == "__main__":
    main()
