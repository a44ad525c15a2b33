#!/usr/bin/python3
"""Exports the benchmark models (ONNX opset 13) with PyTorch, plus a seeded input and PyTorch's output.

For each model NAME this writes, into the output folder (default build/models):
  NAME.onnx        the model, one input named "input", one output named "output", static shapes
  NAME.input.npy   float32, seeded standard normal, the shape the model was exported with
  NAME.torch.npy   float32, PyTorch's output for that input (eval mode, no grad)
and a manifest models.json: {NAME: {"input_name", "input_shape", "output_name", "output_shape"}}.

Run with Debian's interpreter (/usr/bin/python3: python3-torch 1.13, python3-torchvision 0.14).
torch.onnx.export serialises the protobuf itself; the onnx Python package is not needed.
Existing files are kept unless --force is given, so a second run costs nothing.

Usage: /usr/bin/python3 tests/bench/make_models.py [--out DIR] [--models a,b] [--threads N] [--force]
"""

import argparse
import json
import os
import sys

# OpenBLAS reads its core type when the library loads (when torch is imported below). 0.3.21 does
# not know AMD Zen 5 and would fall back to AVX2 kernels; force the AVX-512 ones, as for every
# PyTorch run in the benchmark.
if os.environ.get("OPENBLAS_CORETYPE", "SkylakeX") != "SkylakeX":
    print(f"make_models: overriding OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} with SkylakeX",
          file=sys.stderr)
os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

kOpset = 13
kSeed = 1234


class Mlp(nn.Module):
    """784-512-256-10 with ReLU between the layers."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                    nn.Linear(256, 10))

    def forward(self, x):  # f32 [batch, 784] -> [batch, 10]
        return self.layers(x)


class LeNet5(nn.Module):
    """LeNet-5 on 28x28: conv 6@5x5 pad 2, relu, maxpool 2, conv 16@5x5, relu, maxpool 2, fc 120, 84, 10."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
                                        nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):  # f32 [batch, 1, 28, 28] -> [batch, 10]
        return self.classifier(torch.flatten(self.features(x), 1))


def make_resnet50():
    import torchvision
    return torchvision.models.resnet50(weights=None), (1, 3, 224, 224)


def make_mobilenetv2():
    import torchvision
    return torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224)


def make_transformer():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    # Nested tensors only matter with padding masks; off keeps the exported graph plain.
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False), (1, 128, 256)


def make_mlp():
    return Mlp(), (64, 784)


def make_lenet():
    return LeNet5(), (64, 1, 28, 28)


kModels = {
    "resnet50": make_resnet50,
    "mobilenetv2": make_mobilenetv2,
    "transformer": make_transformer,
    "mlp": make_mlp,
    "lenet": make_lenet,
}


def export_one(name, out_dir, force):
    """Writes NAME.onnx, NAME.input.npy and NAME.torch.npy; returns the manifest entry."""
    paths = {k: os.path.join(out_dir, name + suffix)
             for k, suffix in (("onnx", ".onnx"), ("input", ".input.npy"), ("torch", ".torch.npy"))}
    torch.manual_seed(kSeed)  # the same weights on every run
    model, shape = kModels[name]()
    model.eval()
    if force or not all(os.path.exists(p) for p in paths.values()):
        x = np.random.RandomState(kSeed).standard_normal(shape).astype(np.float32)
        xt = torch.from_numpy(x)
        with torch.no_grad():
            y = model(xt).numpy().astype(np.float32)
        # Exported with grad mode on: under no_grad, eval-mode TransformerEncoderLayer takes its fused
        # fast path (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
        torch.onnx.export(model, (xt,), paths["onnx"], opset_version=kOpset, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
        np.save(paths["input"], x)
        np.save(paths["torch"], y)
        print(f"make_models: {name}: input {list(shape)} -> output {list(y.shape)}, "
              f"{os.path.getsize(paths['onnx']) / 1e6:.1f} MB")
    else:
        y = np.load(paths["torch"])
        print(f"make_models: {name}: up to date")
    return {"input_name": "input", "input_shape": list(shape), "output_name": "output",
            "output_shape": list(y.shape)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/models", help="output folder (default build/models)")
    parser.add_argument("--models", default=",".join(kModels), help="comma-separated subset")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--force", action="store_true", help="re-export even if the files exist")
    args = parser.parse_args()

    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in kModels]
    if unknown:
        print(f"make_models: unknown model(s) {', '.join(unknown)}; known: {', '.join(kModels)}",
              file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)

    manifest_path = os.path.join(args.out, "models.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    for name in names:
        manifest[name] = export_one(name, args.out, args.force)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
