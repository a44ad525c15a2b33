#!/usr/bin/env python3
"""Training real architectures: the gradients of the zoo's classifiers (PyTorch exports, tests/zoo)
checked on their own ONNX files, through the `tessera` Python package.

For each model, on its zoo input with one label:
  1. every weight is trained: one SGD step at lr 1 changes every float weight (a gradient rule
     that silently gives zeros, as Slice's INT64_MAX ends once did for 63 of Swin-T's 82 weights,
     leaves some unchanged);
  2. the gradient is the loss's: a small SGD step dw (about -lr g, rounded to f32) moves the loss
     by g . dw to first order (g measured as the lr-1 step's change of the weights), so the loss
     at the new weights minus the loss before is compared with g . dw within 2%.

    check_zoo_training.py --zoo build/zoo [--models swin_t,...]     (exit 77: no zoo or no package)
"""
import argparse
import os
import sys

import numpy as np

# Small and medium classifiers whose graphs cover what real exports use on the gradient path:
# attention with Slice/Gather/ScatterND-made masks and shifted windows (swin_t), depthwise and
# squeeze-excitation blocks (mobilenet_v3_small, efficientnet_b0), channel shuffles
# (shufflenet_v2), concatenations (squeezenet, googlenet, densenet121, inception_v3), layer norm
# over channels-last (convnext_tiny), a class token and 12 attention blocks (vit_b_16).
# inception_v3 passes too (0.4% with a step that moves the loss by 0.1), but its random weights'
# extreme logits (loss 11.3) leave ~1e-4 of kernel rounding in each loss, too much for steps of
# 1e-3: --models inception_v3 runs it.
DEFAULT = ("swin_t,vit_b_16,convnext_tiny,mobilenet_v3_small,mobilenetv2,efficientnet_b0,shufflenet_v2,squeezenet,"
           "googlenet,densenet121,resnet18,regnet_y_400mf,mnasnet")
TARGET = 1e-3    # the loss change the checked step is sized for


def weights(graph):
    return {k: np.array(v, copy=True) for k, v in graph.params.items() if v.dtype == np.float32}


def one_step(tessera, graph, x, y, lr):
    losses = []
    t = tessera.Trainer(graph, lr=lr, batch_size=x.shape[0], max_steps=1, threads=2, record=False)
    t.fit(x=x, y=y, on_step=lambda s: losses.append(s["loss"]))
    assert len(losses) == 1, losses
    return t.graph(), losses[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--models", default=DEFAULT)
    args = ap.parse_args()
    try:
        import tessera
    except ImportError as e:
        print(f"skip: the tessera package does not import ({e})")
        return 77
    names = [m for m in args.models.split(",") if m]
    missing = [m for m in names if not os.path.exists(os.path.join(args.zoo, m + ".onnx"))]
    if missing:
        print(f"skip: {', '.join(missing)} not in {args.zoo} (tests/zoo/make_zoo.py exports them)")
        return 77
    failures = []
    for name in names:
        graph = tessera.load(os.path.join(args.zoo, name + ".onnx"))
        x = np.load(os.path.join(args.zoo, name + ".input.npy"))
        y = np.full((x.shape[0],), 3, dtype=np.int64)
        # Batch normalisation's running statistics are params but not weights (the zoo's exports
        # keep them fixed: momentum 1 in ONNX's terms).
        stats = {n["inputs"][i] for n in graph.nodes if n["op"] == "BatchNormalization" for i in (3, 4)
                 if len(n["inputs"]) > i}
        w0 = {k: v for k, v in weights(graph).items() if k not in stats}
        # 1. Every float weight moves at lr 1: w1 = w0 - g, which also measures g (at lr 1 the
        #    step is far above the weights' f32 spacing; a small step's difference would be mostly
        #    rounding).
        trained, _ = one_step(tessera, graph, x, y, 1.0)
        w1 = weights(trained)
        unchanged = sorted(k for k in w0 if np.array_equal(w0[k], w1[k]))
        # 2. The loss moves as the gradient says, to first order: a step of lr sized so that the
        #    loss moves by about TARGET (far above the f32 loss's rounding, ~5e-7 at 7; small
        #    enough for the curvature's share to stay under 1%) changes it by g . dw.
        grads = {k: w0[k].astype(np.float64) - w1[k] for k in w0}
        g2 = sum(float(np.sum(g * g)) for g in grads.values())
        lr = TARGET / max(g2, 1e-30)
        for _ in range(4):
            after, loss0 = one_step(tessera, graph, x, y, lr)
            # g . dw for the step as taken: w0 - lr g rounded to f32. A tiny lr rounds many
            # elements back to w0 (Inception-v3's |g|^2 is 2e7: lr 5e-11), and the step is then
            # smaller than asked: ten times the lr until it moves the loss by half the target.
            wa = weights(after)
            predicted = sum(float(np.sum(g * (wa[k].astype(np.float64) - w0[k]))) for k, g in grads.items())
            if -predicted >= TARGET / 2:
                break
            lr *= 10
        _, loss1 = one_step(tessera, after, x, y, lr)
        actual = loss1 - loss0
        rel = abs(actual - predicted) / max(abs(predicted), 1e-12)
        ok = not unchanged and rel < 0.02 and predicted < 0
        print(f"{'ok' if ok else 'FAIL'}: {name}: {len(w0)} weights, {len(w0) - len(unchanged)} trained"
              f"{' (unchanged: ' + ', '.join(unchanged[:5]) + ')' if unchanged else ''}; one step at lr {lr:.2g}: "
              f"loss {loss0:.6f} -> {loss1:.6f}, change {actual:.3e} against g.dw {predicted:.3e} ({100 * rel:.2f}% apart)")
        if not ok:
            failures.append(name)
    if failures:
        print("FAIL: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
