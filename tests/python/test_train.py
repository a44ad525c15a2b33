"""tessera.Trainer on Fashion-MNIST from NumPy arrays and from Debian's IDX folder: losses fall,
callbacks see Python numbers, checkpoints resume, runs are recorded in insight, and errors in
callbacks or data surface as Python exceptions."""

import numpy as np
import pytest

import tessera

from conftest import ROOT


def test_fit_from_arrays_with_callbacks_checkpoint_and_resume(fashion, tmp_path, db):
    x, y, xt, yt = fashion
    steps, epochs = [], []
    t = tessera.Trainer(ROOT / "samples" / "lenet.json", optimizer="momentum", lr=0.02, epochs=1,
                        batch_size=64, seed=3, threads=2, checkpoint_dir=str(tmp_path / "ck"), name="py-lenet")
    r = t.fit(x=x[:6400], y=y[:6400], test=(xt[:1000], yt[:1000]),
              on_step=lambda s: steps.append(s), on_epoch=lambda e: epochs.append(e))
    assert r["steps"] == 100 and t.step == 100
    assert len(steps) == 100 and isinstance(steps[-1]["loss"], float)
    assert steps[-1]["loss"] < steps[0]["loss"]
    assert epochs[0]["test_accuracy"] > 0.6
    assert r["checkpoint"].endswith(".tsc")
    # The run is in insight with its metrics, graph, data sets and checkpoint.
    run = next(run for run in tessera.insight.runs(db) if run["id"] == r["run"])
    assert run["name"] == "py-lenet" and run["status"] == "finished" and run["params"]["optimizer"] == "momentum"
    m = tessera.insight.metrics(r["run"], db=db)
    assert "train/loss" in m and len(m["train/loss"]["step"]) > 0
    # Resume continues from the checkpoint, bit for bit with an uninterrupted second epoch.
    t2 = tessera.Trainer(ROOT / "samples" / "lenet.json", optimizer="momentum", lr=0.02, epochs=2,
                         batch_size=64, seed=3, threads=2, record=False)
    t2.resume(r["checkpoint"])
    assert t2.step == 100
    r2 = t2.fit(x=x[:6400], y=y[:6400], test=False)
    assert r2["steps"] == 200 and t2.step == 200  # steps: where training stands
    assert r2["run"] is None
    trained = t2.graph()
    (logits,) = tessera.InferenceSession(trained).run(None, {"x": xt[:500]})
    assert (logits.argmax(1) == yt[:500]).mean() > 0.65


def test_fit_on_the_idx_folder_of_a_built_graph(db):
    rng = np.random.default_rng(0)
    g = tessera.Graph("tiny")
    x = g.input("x", "f32", ["N", 1, 28, 28])
    w = g.param("w", (rng.standard_normal((784, 10)) * 0.01).astype(np.float32))
    b = g.param("b", np.zeros(10, np.float32))
    g.set_outputs([tessera.ops.Gemm(tessera.ops.Flatten(x), w, b, name="logits")])
    t = tessera.Trainer(g, optimizer="adam", lr=0.003, epochs=1, batch_size=256, max_steps=60, threads=2)
    r = t.fit(data=tessera.FASHION_MNIST)
    assert r["steps"] == 60 and r["stopped"]
    loss, acc = t.evaluate(data=tessera.FASHION_MNIST)
    assert acc > 0.6 and 0 < loss < 1.5


def test_callback_errors_stop_training_and_fail_the_run(fashion, db):
    x, y, _, _ = fashion

    def boom(step):
        if step["step"] == 3:
            raise KeyError("from the callback")

    t = tessera.Trainer(ROOT / "samples" / "mlp.json", lr=0.01, batch_size=32, threads=1, name="boom")
    with pytest.raises(KeyError, match="from the callback"):
        t.fit(x=x[:640], y=y[:640], test=False, on_step=boom)
    assert t.step == 3
    run = [r for r in tessera.insight.runs(db) if r["name"] == "boom"][-1]
    assert run["status"] == "failed" and "from the callback" in run["error"]


def test_gradient_accumulation_sums_micro_batches(fashion):
    """accumulate=2 with batches of 32: one step per 64 examples. On copies of one example every
    batch is the same whatever the shuffle, and two equal micro-batch gradients, summed and halved,
    are the one batch's gradient bit for bit: the same losses and weights as batches of 32."""
    x, y, _, _ = fashion
    kw = dict(optimizer="momentum", lr=0.02, epochs=1, seed=3, threads=1, record=False, batch_size=32)
    a = tessera.Trainer(ROOT / "samples" / "lenet.json", **kw)
    b = tessera.Trainer(ROOT / "samples" / "lenet.json", accumulate=2, **kw)
    la, lb = [], []
    ra = a.fit(x=np.repeat(x[:1], 160, axis=0), y=np.repeat(y[:1], 160), test=False, on_step=lambda s: la.append(s["loss"]))
    rb = b.fit(x=np.repeat(x[:1], 320, axis=0), y=np.repeat(y[:1], 320), test=False, on_step=lambda s: lb.append(s["loss"]))
    assert ra["steps"] == rb["steps"] == 5 and la == lb and la[-1] < la[0]
    wa, wb = a.graph().params, b.graph().params
    assert all(np.array_equal(wa[k], wb[k]) for k in wa)
    # The same 320 examples without accumulation: twice the steps (a step is 32 examples, not 64).
    c = tessera.Trainer(ROOT / "samples" / "lenet.json", **kw)
    assert c.fit(x=np.repeat(x[:1], 320, axis=0), y=np.repeat(y[:1], 320), test=False)["steps"] == 10
    with pytest.raises(ValueError, match="accumulate"):
        tessera.Trainer(ROOT / "samples" / "lenet.json", accumulate=0)


def test_bad_training_input():
    with pytest.raises(tessera.Error, match="optimizer"):
        tessera.Trainer(ROOT / "samples" / "mlp.json", optimizer="adagrad")
    with pytest.raises(ValueError, match="epochs"):
        tessera.Trainer(ROOT / "samples" / "mlp.json", epochs=0)
    t = tessera.Trainer(ROOT / "samples" / "mlp.json", record=False)
    with pytest.raises(ValueError, match="no training data"):
        t.fit()
    with pytest.raises(tessera.Error, match="/nonexistent"):
        t.fit(data="/nonexistent")
    with pytest.raises(tessera.Error, match="labels|x"):
        t.fit(x=np.zeros((10, 1, 28, 28), np.float32), y=np.zeros(9, np.int64), test=False)
    with pytest.raises(tessera.Error, match="nope.tsc"):
        t.resume("/tmp/nope.tsc")


def test_fit_refuses_mpirun_and_an_unwritable_checkpoint_folder(monkeypatch, tmp_path):
    x, y = np.zeros((64, 1, 28, 28), np.float32), np.zeros(64, np.int64)
    # Under mpirun -n 2 each process would train alone into the same files: refused, naming the CLI.
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    t = tessera.Trainer(ROOT / "samples" / "mlp.json", record=False, epochs=1, batch_size=32)
    with pytest.raises(tessera.Error, match="mpirun -n N tessera train"):
        t.fit(x=x, y=y, test=False)
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE")
    # A checkpoint folder under a regular file fails before the first step, naming the folder.
    (tmp_path / "file").write_text("")
    steps = []
    t = tessera.Trainer(ROOT / "samples" / "mlp.json", record=False, epochs=1, batch_size=32,
                        checkpoint_dir=str(tmp_path / "file" / "ck"))
    with pytest.raises(tessera.Error, match="file/ck.*cannot create the folder"):
        t.fit(x=x, y=y, test=False, on_step=lambda s: steps.append(s))
    assert steps == []


def test_a_trainer_does_one_call_at_a_time():
    """Two threads in fit() segfaulted in bind_feeds; fit() from its own on_step trained 7 steps of
    a 4-batch epoch. Both are refused now; reads between steps from a callback still work."""
    import threading
    x, y = np.zeros((256, 1, 28, 28), np.float32), np.zeros(256, np.int64)
    t = tessera.Trainer(ROOT / "samples" / "mlp.json", record=False, epochs=1, batch_size=64, threads=1)
    inner, reads = [], []

    def on_step(s):
        try:
            t.fit(x=x, y=y, test=False)
        except RuntimeError as e:
            inner.append(str(e))
        reads.append(t.graph() is not None)

    r = t.fit(x=x, y=y, test=False, on_step=on_step)
    assert r["steps"] == 4 and t.step == 4
    assert len(inner) == 4 and all("is in fit()" in m for m in inner)
    assert reads == [True] * 4

    # A fresh trainer (the first one has trained its one epoch: a second fit() has no steps left).
    t = tessera.Trainer(ROOT / "samples" / "mlp.json", record=False, epochs=1, batch_size=64, threads=1)
    started, results = threading.Event(), []

    def slow_step(s):
        started.set()
        import time
        time.sleep(0.05)

    def first():
        results.append(t.fit(x=x, y=y, test=False, on_step=slow_step))

    th = threading.Thread(target=first)
    th.start()
    assert started.wait(60)
    with pytest.raises(RuntimeError, match="is in fit"):
        t.fit(x=x, y=y, test=False)
    th.join(120)
    assert results and results[0]["steps"] == 4
    assert t.evaluate(x=x, y=y) is not None  # free again


def test_trainer_ranges_are_the_clis():
    mlp = ROOT / "samples" / "mlp.json"
    for kwargs, match in [({"momentum": 5.0}, "momentum must be in"), ({"momentum": -0.1}, "momentum must be in"),
                          ({"weight_decay": -1.0}, "weight_decay must be in"), ({"lr": float("inf")}, "lr"),
                          ({"lr": float("nan")}, "lr"), ({"threads": 100000}, "threads"), ({"threads": 1024}, "threads")]:
        with pytest.raises(ValueError, match=match):
            tessera.Trainer(mlp, record=False, **kwargs)
