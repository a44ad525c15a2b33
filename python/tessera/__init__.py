"""Tessera from Python: run, build, train and inspect graphs, and log any training into insight.

    import tessera
    sess = tessera.InferenceSession("model.onnx", threads=2)       # like onnxruntime
    (y,) = sess.run(None, {"x": x})                                 # device="auto": a GPU when there is one
    tessera.devices()                                               # cpu, cuda:N, or why no GPU

    g = tessera.load("lenet.onnx")                                  # .onnx .tsr .json .tir
    c = tessera.compile(g, dims={"N": 64})                          # every stage and pass

    g = tessera.Graph("mlp")                                        # build: one function per op
    x = g.input("x", "f32", ["N", 784])
    y = tessera.ops.Relu(tessera.ops.Gemm(x, g.param("w", w), g.param("b", b), transB=1))
    g.set_outputs([y])

    t = tessera.Trainer(g, optimizer="momentum", lr=0.01, epochs=2)   # recorded in insight
    t.fit(x=images, y=labels)

    ids = tessera.generate(sess, prompt=[1, 2, 3], max_new_tokens=32)   # a decoder with a KV cache

    with tessera.insight.run("my-pytorch-run", params={"lr": 0.1}) as run:
        run.log(step, loss=loss.item())

Engine errors raise tessera.Error (a RuntimeError) with the engine's message, `where` and `node`.
"""

from tessera._tessera import (  # noqa: F401
    Error,
    Graph,
    InferenceSession,
    NodeArg,
    Trainer,
    Value,
    __version__,
    compile,
    devices,
    load,
    op_schemas,
)
from tessera import insight, ops  # noqa: F401
from tessera.generate import generate  # noqa: F401

#: Debian's Fashion-MNIST (package dataset-fashion-mnist), an IDX folder Trainer.fit(data=...) reads.
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"

__all__ = [
    "Error", "Graph", "InferenceSession", "NodeArg", "Trainer", "Value", "compile", "load",
    "op_schemas", "insight", "ops", "generate", "FASHION_MNIST", "__version__",
]
