"""Graphs from Python: every format loads and saves, ops generated from the schemas build a
network whose outputs match NumPy, and mistakes raise errors that name the node."""

import inspect

import numpy as np
import pytest

import tessera

from conftest import ROOT


@pytest.mark.parametrize("ext", ["tsr", "json", "tir", "onnx"])
def test_every_format_round_trips_a_zoo_model(zoo, tmp_path, ext):
    g = tessera.load(zoo / "mobilenetv2.onnx")
    path = tmp_path / f"m.{ext}"
    g.save(path)
    back = tessera.load(path)
    assert len(back.nodes) == len(g.nodes)
    assert [i["name"] for i in back.inputs] == [i["name"] for i in g.inputs]
    x = np.load(zoo / "mobilenetv2.input.npy")
    feeds = {g.inputs[0]["name"]: x}
    if ext == "tir":  # the IR text keeps no weights: run the original only
        assert "Conv" in back.text()
        return
    a = tessera.InferenceSession(g, threads=2).run(None, feeds)[0]
    b = tessera.InferenceSession(back, threads=2).run(None, feeds)[0]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_graph_inspection():
    g = tessera.load(ROOT / "samples" / "lenet.json")
    assert g.inputs[0]["name"] == "x" and g.inputs[0]["shape"] == ["N", 1, 28, 28]
    assert g.outputs[0]["dtype"] == "f32"
    ops = [n["op"] for n in g.nodes]
    assert ops.count("Conv") == 2 and ops.count("Gemm") == 3
    conv = next(n for n in g.nodes if n["op"] == "Conv")
    assert "pads" in conv["attrs"] or "kernel_shape" in conv["attrs"]
    params = g.params
    assert sum(p.size for p in params.values()) == 61706
    assert "lenet" in repr(g).lower() or "nodes" in repr(g)


def build_mlp(rng):
    g = tessera.Graph("mlp")
    x = g.input("x", "f32", ["N", 1, 28, 28])
    w1 = rng.standard_normal((784, 64)).astype(np.float32) * 0.05
    w2 = rng.standard_normal((64, 10)).astype(np.float32) * 0.05
    b1 = np.zeros(64, np.float32)
    b2 = np.zeros(10, np.float32)
    f = tessera.ops.Flatten(x, axis=1)
    h = tessera.ops.Relu(tessera.ops.Gemm(f, g.param("w1", w1), g.param("b1", b1)))
    y = tessera.ops.Gemm(h, g.param("w2", w2), g.param("b2", b2), name="logits")
    g.set_outputs([y])
    return g, (w1, b1, w2, b2)


def test_built_graph_matches_numpy(tmp_path):
    rng = np.random.default_rng(1)
    g, (w1, b1, w2, b2) = build_mlp(rng)
    assert g.value("logits").type == "f32[N, 10]"
    x = rng.random((5, 1, 28, 28), dtype=np.float32)
    (y,) = tessera.InferenceSession(g).run(None, {"x": x})
    want = np.maximum(x.reshape(5, -1) @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    g.check()
    g.save(tmp_path / "mlp.onnx")
    (y2,) = tessera.InferenceSession(tmp_path / "mlp.onnx").run(None, {"x": x})
    np.testing.assert_allclose(y, y2, rtol=1e-6)


def test_op_functions_come_from_the_schemas():
    schemas = {s["name"]: s for s in tessera.op_schemas()}
    assert len(schemas) >= 190
    for name in schemas:
        assert callable(getattr(tessera.ops, name))
    sig = inspect.signature(tessera.ops.Conv)
    assert sig.parameters["strides"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "auto_pad" in sig.parameters and sig.parameters["auto_pad"].default == "NOTSET"
    doc = tessera.ops.Conv.__doc__
    assert "kernel_shape" in doc and "Inputs:" in doc and "Differentiable." in doc
    assert tessera.ops.Concat.__doc__.count("variadic") >= 1


def test_mistakes_name_the_node():
    g = tessera.Graph("bad")
    x = g.input("x", "f32", ["N", 3, 8, 8])
    w = g.param("w", np.zeros((4, 3, 3), np.float32))  # rank 3: not a 2-D conv weight
    with pytest.raises(tessera.Error, match="node 'conv1' \\(Conv\\)"):
        tessera.ops.Conv(x, w, name="conv1")
    assert g.nodes == [], "a refused node is not left in the graph"
    with pytest.raises(TypeError, match="unexpected attribute 'kernel'"):
        tessera.ops.Conv(x, w, kernel=3)
    with pytest.raises(TypeError, match="attribute 'alpha': expected float"):
        tessera.ops.LeakyRelu(x, alpha="big")
    other = tessera.Graph("other").input("z", "f32", [1])
    with pytest.raises(ValueError, match="another graph"):
        tessera.ops.Add(x, other)
    with pytest.raises(TypeError, match="not a graph value"):
        g.op("Relu", [np.zeros(3)])
    with pytest.raises(ValueError, match="unknown op 'Frobnicate'"):
        g.op("Frobnicate", [x])
    with pytest.raises(ValueError, match="already has a value named 'x'"):
        g.input("x", "f32", [1])
    with pytest.raises(TypeError, match="element type"):
        g.input("q", "complex", [1])


def test_every_public_name_is_documented():
    import tessera.insight

    def documented(obj, name):
        doc = (getattr(obj, "__doc__", None) or "").strip()
        if doc.startswith(name.split(".")[-1] + "("):  # pybind11 puts the signature first
            doc = doc.split("\n", 1)[1].strip() if "\n" in doc else ""
        return bool(doc)

    missing = []
    for mod, names in [(tessera, tessera.__all__), (tessera.insight, tessera.insight.__all__)]:
        for n in names:
            obj = getattr(mod, n)
            if n.startswith("__") or isinstance(obj, str) or inspect.ismodule(obj):
                continue
            if not documented(obj, n):
                missing.append(n)
            if inspect.isclass(obj):
                for m, v in vars(obj).items():
                    if not m.startswith("_") and not documented(v, m):
                        missing.append(f"{n}.{m}")
    assert missing == []
    assert "InferenceSession" in (tessera.__doc__ or "")
