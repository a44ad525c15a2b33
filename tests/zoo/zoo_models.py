"""The zoo's manifest as Python objects, shared by check_zoo.py (ctest) and tests/bench/compare.py.

    models = load_zoo("build/zoo")            # {name: ZooModel}, in the manifest's order
    m = models["bert"]
    m.onnx, m.inputs                          # path, [(input name, .npy path)]
    m.expected_failure                        # reason string, or None
    d = rel_diff(load_output(out_dir, m.output_name), np.load(m.torch))
"""

import json
import os

import numpy as np


class ZooError(Exception):
    """A missing or malformed zoo file; the message names it."""


class ZooModel:
    def __init__(self, name, entry, models_dir):
        self.name = name
        self.family = entry.get("family", "")
        self.onnx = os.path.join(models_dir, name + ".onnx")
        self.torch = os.path.join(models_dir, name + ".torch.npy")
        self.inputs = [(i["name"], os.path.join(models_dir, i["file"])) for i in entry["inputs"]]
        self.output_name = entry.get("output_name", "output")
        self.expected_failure = entry.get("expected_failure")
        self.tolerance = entry.get("tolerance")  # a wider tolerance for this model, or None
        # Rows (detections) may come in another order: compared as a set (rel_diff).
        self.unordered_rows = bool(entry.get("unordered_rows", False))
        for path in [self.onnx, self.torch] + [p for _, p in self.inputs]:
            if not os.path.exists(path):
                raise ZooError(f"{path} is missing (run tests/zoo/make_zoo.py)")

    def feed_args(self):
        """`--input NAME=FILE` pairs for `tessera run` / `tessera bench`."""
        args = []
        for name, path in self.inputs:
            args += ["--input", f"{name}={path}"]
        return args


def load_zoo(models_dir, names=None):
    """{name: ZooModel} for the manifest's models (all, or `names` in that order)."""
    path = os.path.join(models_dir, "models.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except OSError as e:
        raise ZooError(f"{path}: {e.strerror} (run tests/zoo/make_zoo.py)")
    except ValueError as e:
        raise ZooError(f"{path}: not JSON: {e}")
    if names is None:
        names = list(manifest)
    unknown = [n for n in names if n not in manifest]
    if unknown:
        raise ZooError(f"{path}: no model {', '.join(unknown)} (known: {', '.join(manifest)})")
    try:
        return {n: ZooModel(n, manifest[n], models_dir) for n in names}
    except (KeyError, TypeError) as e:
        raise ZooError(f"{path}: malformed entry ({e})")


def load_output(out_dir, output_name):
    """The output .npy a run wrote into out_dir: <output_name>.npy, else the only .npy there."""
    wanted = os.path.join(out_dir, output_name + ".npy")
    if os.path.exists(wanted):
        return np.load(wanted)
    found = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    if len(found) == 1:
        return np.load(os.path.join(out_dir, found[0]))
    raise ZooError(f"no {output_name}.npy in the output folder (found {found or 'nothing'})")


def rel_diff(got, reference, unordered_rows=False):
    """max |got - reference| / max |reference|: the error relative to the output's scale. With
    unordered_rows, each row of `got` is paired with the closest unpaired row of `reference` (a
    detector's boxes whose scores tie to float rounding may come in either order)."""
    if got.shape != reference.shape:
        raise ZooError(f"output shape {list(got.shape)}, PyTorch's is {list(reference.shape)}")
    if reference.size == 0:
        return 0.0
    scale = float(np.max(np.abs(reference))) or 1.0
    g, r = got.astype(np.float64), reference.astype(np.float64)
    if not unordered_rows or g.ndim < 2:
        return float(np.max(np.abs(g - r))) / scale
    g, r = g.reshape(len(g), -1), r.reshape(len(r), -1)
    free = np.ones(len(r), bool)
    worst = 0.0
    for row in g:
        err = np.where(free, np.max(np.abs(r - row), axis=1), np.inf)
        j = int(np.argmin(err))
        free[j] = False
        worst = max(worst, float(err[j]))
    return worst / scale
