#!/usr/bin/python3
"""Exports the model zoo: real architectures with random weights, each with an input and PyTorch's output.

The zoo is the test bed of the engine (tests/zoo/check_zoo.py, ctest label `zoo`), the benchmark
(scripts/bench.sh) and the studio. For each model NAME this writes, into the output folder (default
build/zoo, never into git):
  NAME.onnx            the model (ONNX opset 13 unless the table says otherwise), static shapes
  NAME.<input>.npy     one file per graph input: seeded normal floats, or seeded token ids
  NAME.torch.npy       PyTorch's output for those inputs (eval mode, no grad), float32
and a manifest models.json: {NAME: {"family", "inputs": [{"name", "file", "shape", "dtype"}],
"output_name", "output_shape", "expected_failure" (a reason, or absent)}}.

`expected_failure` marks models the engine cannot run yet (an op it lacks); check_zoo.py requires
them to fail and reports when one starts to pass, so the list shrinks visibly.

Run with Debian's interpreter (/usr/bin/python3: python3-torch 1.13, python3-torchvision 0.14).
torch.onnx.export serialises the protobuf itself; the onnx Python package is not needed. Existing
files are kept unless --force is given, so a second run costs nothing.

--batch N exports every model at batch N instead (the benchmark's batch-32 zoo, build/zoo-b32 by
scripts/bench.sh --batch 32): each input's first axis becomes N; the detectors, which take one image,
are left out.

Usage: /usr/bin/python3 tests/zoo/make_zoo.py [--out DIR] [--models a,b] [--threads N] [--force]
                                              [--batch N] [--list]
"""

import argparse
import json
import math
import os
import sys

# OpenBLAS reads its core type when the library loads (when torch is imported below). 0.3.21 does
# not know AMD Zen 5 and would fall back to AVX2 kernels; force the AVX-512 ones, as for every
# PyTorch run in the benchmark.
if os.environ.get("OPENBLAS_CORETYPE", "SkylakeX") != "SkylakeX":
    print(f"make_zoo: overriding OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} with SkylakeX",
          file=sys.stderr)
os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"

try:
    import numpy as np  # noqa: E402
    import torch  # noqa: E402
    from torch import nn  # noqa: E402
    import torchvision  # noqa: E402
    import torchvision.models.detection as tvd  # noqa: E402
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"make_zoo: {e.name or e} is missing: the zoo is exported with Debian's PyTorch; install "
          f"it with `apt-get install python3-torch python3-torchvision python3-numpy` and run this "
          f"script with /usr/bin/python3 (found {sys.executable})", file=sys.stderr)
    sys.exit(3)

kOpset = 13
kSeed = 1234
kVocab = 1000


def legacy_exporter():
    """The TorchScript exporter the zoo was made with: PyTorch 2.x (scripts/gpu_check.sh runs this
    script with the GPU machine's PyTorch) defaults to the dynamo exporter, which writes other ops."""
    import inspect
    return {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}


# ---- small models written here (the rest is torchvision's own code) ----

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


class SelfAttention(nn.Module):
    """Multi-head attention written out as BERT and GPT-2 implementations do (what ORT's attention
    fusion looks for): q, k, v projections, QK^T / sqrt(d), an additive mask, softmax, times V."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.dk = heads, d // heads
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))

    def split(self, x):  # [b, s, d] -> [b, h, s, dk]
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.dk).transpose(1, 2)

    def forward(self, x, additive_mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dk) + additive_mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        b, h, s, dk = ctx.shape
        return self.out(ctx.transpose(1, 2).reshape(b, s, h * dk))


class BertLayer(nn.Module):
    """Post-norm encoder layer: attention, residual, LayerNorm, FFN with GELU (erf), residual, LayerNorm."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(d, heads)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.ffn(x))


class Bert(nn.Module):
    """A BERT-style encoder: token and position embeddings, padding mask, 2 layers of d 256."""

    def __init__(self, d=256, heads=4, ffn=1024, layers=2, seq=128):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(kVocab, d), nn.Embedding(seq, d)
        self.norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(BertLayer(d, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(d, d)

    def forward(self, input_ids, attention_mask):  # i64 [b, s], i64 [b, s] -> f32 [b, d]
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(input_ids) + self.positions(positions))
        # HF BERT's extended attention mask: 0 where attended, -10000 on padding.
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return torch.tanh(self.pooler(x[:, 0]))


class GptBlock(nn.Module):
    """Pre-norm decoder block with GELU (tanh form), as GPT-2."""

    def __init__(self, d, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        x = x + self.attn(self.norm1(x), mask)
        return x + self.mlp(self.norm2(x))


class Gpt(nn.Module):
    """A GPT-style decoder: causal mask, 2 blocks of d 256, tied-free LM head over 1000 tokens."""

    def __init__(self, d=256, heads=4, layers=2, seq=128):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(kVocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(GptBlock(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, kVocab, bias=False)
        causal = torch.full((seq, seq), float("-inf")).triu(1)
        self.register_buffer("causal", causal)

    def forward(self, input_ids):  # i64 [b, s] -> f32 [b, s, vocab]
        s = input_ids.shape[1]
        x = self.tokens(input_ids) + self.positions(torch.arange(s).unsqueeze(0))
        mask = self.causal[:s, :s]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


class UNet(nn.Module):
    """A small UNet: three levels (16, 32, 64 channels), one ConvTranspose up-sampling, one bilinear
    Resize, skip connections joined by Concat, a 1x1 head of 2 classes."""

    @staticmethod
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    def __init__(self):
        super().__init__()
        self.enc1, self.enc2, self.mid = self.block(3, 16), self.block(16, 32), self.block(32, 64)
        self.pool = nn.MaxPool2d(2)
        self.up1 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.dec1 = self.block(64, 32)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = self.block(48, 16)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):  # f32 [b, 3, h, w] -> [b, 2, h, w]
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d1 = self.dec1(torch.cat([self.up1(m), e2], dim=1))
        d2 = self.dec2(torch.cat([self.up2(d1), e1], dim=1))
        return self.head(d2)


class Recurrent(nn.Module):
    """A 2-layer LSTM or GRU over a [b, t, 64] sequence, then a linear classifier of the last step."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=64, hidden_size=128, num_layers=2, batch_first=True)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):  # f32 [b, t, 64] -> [b, 10]
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class Detector(nn.Module):
    """A torchvision detector on a batch-of-one image tensor [1, 3, H, W], returning the boxes of
    its detections ([K, 4], x1 y1 x2 y2; K known at run time). Training mode switches only the
    batch norms (what calibrate() needs: a detector in training mode wants targets)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def train(self, mode=True):
        super().train(False)
        for m in self.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.train(mode)
        return self

    def forward(self, x):
        return self.model(list(x))[0]["boxes"]


class OutOnly(nn.Module):
    """torchvision's segmentation models return {"out": ...}; the zoo exports that tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


# ---- the table ----

def tv(name, **kwargs):
    return lambda: getattr(torchvision.models, name)(weights=None, **kwargs)


def seg(name):
    return lambda: OutOnly(getattr(torchvision.models.segmentation, name)(
        weights=None, weights_backbone=None, **({} if name.startswith("lraspp") else {"aux_loss": False})))


def image(size=224, batch=1):
    return [("input", (batch, 3, size, size), "float32")]


# name: (family, constructor, inputs [(name, shape, dtype)], expected failure or None)
kZoo = {
    "alexnet": ("classic CNN", tv("alexnet"), image(), None),
    "vgg11": ("classic CNN", tv("vgg11"), image(), None),
    "squeezenet": ("classic CNN", tv("squeezenet1_1"), image(), None),
    "googlenet": ("Inception", tv("googlenet", aux_logits=False, init_weights=True), image(), None),
    "inception_v3": ("Inception", tv("inception_v3", aux_logits=False, init_weights=True), image(299), None),
    "densenet121": ("DenseNet", tv("densenet121"), image(), None),
    "resnet18": ("ResNet", tv("resnet18"), image(), None),
    "resnet50": ("ResNet", tv("resnet50"), image(), None),
    "resnext50": ("ResNet", tv("resnext50_32x4d"), image(), None),
    "wide_resnet50": ("ResNet", tv("wide_resnet50_2"), image(), None),
    "shufflenet_v2": ("mobile CNN", tv("shufflenet_v2_x1_0"), image(), None),
    "mnasnet": ("mobile CNN", tv("mnasnet1_0"), image(), None),
    "mobilenetv2": ("mobile CNN", tv("mobilenet_v2"), image(), None),
    "mobilenet_v3_large": ("mobile CNN", tv("mobilenet_v3_large"), image(), None),
    "mobilenet_v3_small": ("mobile CNN", tv("mobilenet_v3_small"), image(), None),
    "efficientnet_b0": ("EfficientNet", tv("efficientnet_b0"), image(), None),
    "efficientnet_v2_s": ("EfficientNet", tv("efficientnet_v2_s"), image(), None),
    "regnet_y_400mf": ("RegNet", tv("regnet_y_400mf"), image(), None),
    "convnext_tiny": ("ConvNeXt", tv("convnext_tiny"), image(), None),
    "swin_t": ("vision transformer", tv("swin_t"), image(), None),
    "vit_b_16": ("vision transformer", tv("vit_b_16"), image(), None),
    "lraspp": ("segmentation", seg("lraspp_mobilenet_v3_large"), image(), None),
    "deeplabv3": ("segmentation", seg("deeplabv3_mobilenet_v3_large"), image(), None),
    "fcn_resnet50": ("segmentation", seg("fcn_resnet50"), image(), None),
    "r3d_18": ("video", lambda: torchvision.models.video.r3d_18(weights=None),
               [("input", (1, 3, 8, 112, 112), "float32")], None),
    "unet": ("segmentation", UNet, image(128), None),
    "bert": ("language", Bert, [("input_ids", (1, 128), "int64"), ("attention_mask", (1, 128), "int64")],
             None),
    "gpt": ("language", Gpt, [("input_ids", (1, 128), "int64")], None),
    "transformer": ("language", lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True),
        num_layers=2, enable_nested_tensor=False), [("input", (1, 128, 256), "float32")], None),
    "lstm": ("recurrent", lambda: Recurrent(nn.LSTM), [("input", (1, 32, 64), "float32")], None),
    "gru": ("recurrent", lambda: Recurrent(nn.GRU), [("input", (1, 32, 64), "float32")], None),
    # Detection (random weights: the score threshold is 0 so that Faster R-CNN keeps its 100 best).
    "ssdlite": ("detection", lambda: Detector(tvd.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)),
                [("input", (1, 3, 320, 320), "float32")], None),
    "fasterrcnn": ("detection", lambda: Detector(tvd.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, box_score_thresh=0.0)), [("input", (1, 3, 320, 320), "float32")], None),
    "mlp": ("MLP", Mlp, [("input", (64, 784), "float32")], None),
    "lenet": ("classic CNN", LeNet5, [("input", (64, 1, 28, 28), "float32")], None),
}


# Models whose float32 rounding alone exceeds check_zoo.py's 1e-4 of the output's scale, with the
# tolerance they get and why (ONNX Runtime is as far from PyTorch on them).
kTolerance = {
    "fcn_resnet50": (5e-4, "dilated ResNet-50 at output stride 8: sums of up to 4.7 million terms "
                           "per output; ONNX Runtime differs from PyTorch by 1.6e-4 too"),
}


def make_inputs(spec):
    """Seeded inputs: standard normal floats; token ids in [0, vocab); an attention mask of ones
    with the last quarter padded (zeros)."""
    rng = np.random.RandomState(kSeed)
    arrays = []
    for name, shape, dtype in spec:
        if name == "attention_mask":
            a = np.ones(shape, np.int64)
            a[..., shape[-1] * 3 // 4:] = 0
        elif dtype == "int64":
            a = rng.randint(0, kVocab, size=shape).astype(np.int64)
        else:
            a = rng.standard_normal(shape).astype(np.float32)
        arrays.append(a)
    return arrays


def calibrate(model, spec):
    """Makes random weights behave like trained ones, so every model's output has a healthy scale
    (an output of 0 or 1e-14 would make the comparison with PyTorch meaningless): weights that
    torchvision initialises to zero (ViT's head) get N(0, 0.02), and batch-norm statistics are set
    from a forward pass in training mode over a batch of 2 other seeded inputs (without it,
    Inception-v3's output reached 3e12 and EfficientNet-B0's 4e-14)."""
    for module in model.modules():
        w = getattr(module, "weight", None)
        if isinstance(w, nn.Parameter) and w.dim() >= 2 and not bool(w.detach().any()):
            nn.init.normal_(w, std=0.02)
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if norms:
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average: exactly the calibration batch's statistics
        rng = np.random.RandomState(kSeed + 1)
        batch = [torch.from_numpy(rng.standard_normal((max(2, s[0]),) + tuple(s[1:])).astype(np.float32))
                 for _, s, _ in spec]
        model.train()
        with torch.no_grad():
            model(*batch)
    model.eval()


def batched(spec, batch):
    """The input spec with every input's first axis set to `batch` (None: unchanged)."""
    return spec if batch is None else [(n, (batch,) + tuple(s[1:]), d) for n, s, d in spec]


def export_one(name, out_dir, force, batch=None):
    """Writes NAME.onnx, its inputs and NAME.torch.npy; returns the manifest entry."""
    family, make, spec, expected_failure = kZoo[name]
    spec = batched(spec, batch)
    files = {n: f"{name}.{n}.npy" for n, _, _ in spec}
    paths = [os.path.join(out_dir, name + ".onnx"), os.path.join(out_dir, name + ".torch.npy")]
    paths += [os.path.join(out_dir, f) for f in files.values()]
    if force or not all(os.path.exists(p) for p in paths):
        torch.manual_seed(kSeed)  # the same weights on every run
        model = make()
        calibrate(model, spec)
        arrays = make_inputs(spec)
        tensors = tuple(torch.from_numpy(a) for a in arrays)
        with torch.no_grad():
            y = model(*tensors).numpy().astype(np.float32)
        # Exported with grad mode on: under no_grad, eval-mode TransformerEncoderLayer takes its fused
        # fast path (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
        tmp = paths[0] + ".part"
        torch.onnx.export(model, tensors, tmp, opset_version=kOpset,
                          input_names=[n for n, _, _ in spec], output_names=["output"],
                          do_constant_folding=True, **legacy_exporter())
        os.replace(tmp, paths[0])
        for (n, _, _), a in zip(spec, arrays):
            np.save(os.path.join(out_dir, files[n]), a)
        np.save(paths[1], y)
        print(f"make_zoo: {name}: {', '.join(str(list(s)) for _, s, _ in spec)} -> {list(y.shape)}, "
              f"{os.path.getsize(paths[0]) / 1e6:.1f} MB", flush=True)
    else:
        y = np.load(paths[1], mmap_mode="r")
        print(f"make_zoo: {name}: up to date", flush=True)
    entry = {"family": family, "output_name": "output", "output_shape": list(y.shape),
             "inputs": [{"name": n, "file": files[n], "shape": list(s), "dtype": d} for n, s, d in spec]}
    if expected_failure:
        entry["expected_failure"] = expected_failure
    if name in kTolerance:
        entry["tolerance"], entry["tolerance_reason"] = kTolerance[name]
    if family == "detection":
        # Detections whose scores tie to the last bits of float32 may come in either order.
        entry["unordered_rows"] = True
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/zoo", help="output folder (default build/zoo)")
    parser.add_argument("--models", default=",".join(kZoo), help="comma-separated subset")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--force", action="store_true", help="re-export even if the files exist")
    parser.add_argument("--batch", type=int, help="export at this batch size (detectors left out)")
    parser.add_argument("--list", action="store_true", help="print the zoo's names and families")
    args = parser.parse_args()
    if args.batch is not None and not 1 <= args.batch <= 4096:
        parser.error("--batch must be in [1, 4096]")

    if args.list:
        for name, (family, _, spec, failure) in kZoo.items():
            print(f"{name:20} {family:20} {' '.join(str(list(s)) for _, s, _ in spec)}"
                  + (f"  (expected failure: {failure})" if failure else ""))
        return 0
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in kZoo]
    if unknown:
        print(f"make_zoo: unknown model(s) {', '.join(unknown)}; known: {', '.join(kZoo)}",
              file=sys.stderr)
        return 2
    if args.batch is not None:
        left = [n for n in names if kZoo[n][0] == "detection"]
        if left:
            print(f"make_zoo: --batch: {', '.join(left)} take one image; left out", file=sys.stderr)
        names = [n for n in names if n not in left]
    if args.threads < 1:
        parser.error("--threads must be >= 1")
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)

    import warnings
    warnings.filterwarnings("ignore")  # torch.onnx's tracer warnings say nothing about the zoo
    return make_all(names, args.out, lambda name: export_one(name, args.out, args.force, args.batch),
                    "make_zoo")


def make_all(names, out_dir, make_one, label):
    """Makes each model with make_one(name) -> its manifest entry, into out_dir/models.json (kept
    entries of other models stay; a damaged manifest is rewritten). One model failing is reported
    and the others are still made. Returns the exit status: 1 when any failed. Shared with
    make_wild.py."""
    manifest_path = os.path.join(out_dir, "models.json")
    manifest = {}
    if os.path.exists(manifest_path):
        try:
            with open(manifest_path) as f:
                manifest = json.load(f)
        except (OSError, ValueError):
            manifest = {}  # rewritten below
    failed = []
    for name in names:
        try:
            manifest[name] = make_one(name)
        except Exception as e:  # one model failing must not lose the others
            print(f"{label}: {name}: failed: {type(e).__name__}: {e}", file=sys.stderr)
            manifest.pop(name, None)
            failed.append(name)
    tmp = manifest_path + ".part"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, manifest_path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
