"""tessera.insight from any Python program: a PyTorch training script logs into the store, and the
store's readers (the queries the studio's dashboard runs, `tessera runs`, the profiler's trace
export) see its metrics, graph, checkpoint and trace."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tessera

from conftest import ROOT

CLI = os.environ.get("TESSERA_CLI", str(ROOT / "build" / "release" / "cli" / "tessera"))


def test_pytorch_script_is_recorded_like_a_tessera_run(tmp_path, db):
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(ROOT / "samples" / "python" / "log_pytorch.py"), "--steps", "40",
                          "--db", str(db), "--out", str(tmp_path / "torch")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (run,) = tessera.insight.runs(db)
    assert run["name"] == "pytorch-cnn" and run["status"] == "finished"
    assert run["params"]["momentum"] == "0.9" and run["params"]["framework"].startswith("pytorch")
    assert run["metrics"]["train/loss"]["final_step"] == 40  # Tessera's names: curves overlay
    assert run["graph_hash"]
    m = tessera.insight.metrics("pytorch-cnn", db=db)
    assert list(m["train/loss"]["step"]) == list(range(1, 41))
    assert m["train/loss"]["value"][-1] < m["train/loss"]["value"][0]
    g = tessera.insight.graph(run["id"], db=db)
    assert "Conv" in g["text"] and "Gemm" in g["text"] or "MatMul" in g["text"]
    # The command line reads the same store: the run, its metrics and its checkpoint.
    show = subprocess.run([CLI, "runs", "show", str(run["id"]), "--db", str(db)], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert "pytorch-cnn" in show.stdout and "cnn.pt" in show.stdout and "loss" in show.stdout
    # The profiler's spans: exported as the studio's timeline reads them.
    trace = tmp_path / "export.json"
    ex = subprocess.run([CLI, "runs", "export-trace", str(run["id"]), "--chrome", str(trace), "--db", str(db)],
                        capture_output=True, text=True)
    assert ex.returncode == 0, ex.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert any("conv" in (n or "").lower() for n in names), "PyTorch's aten::conv2d spans are in the store"


def test_log_everything_and_read_it_back(tmp_path, db):
    g = tmp_path / "g.json"
    tessera.load(ROOT / "samples" / "mlp.json").save(g)
    ck = tmp_path / "ck.bin"
    ck.write_bytes(b"weights")
    with tessera.insight.run("manual", params={"lr": 0.1, "opt": "sgd"}, db=db) as run:
        for step in range(1, 101):
            run.log(step, loss=1.0 / step, accuracy=np.float32(step / 100))
        run.log_metric("test/accuracy", 100, 0.75, epoch=0)
        run.log_param("note", "extra")
        h = run.log_graph(g)
        run.log_checkpoint(ck, 100)
        run.log_dataset("train", ck, 60000)
        rid = run.id
    assert len(h) == 16
    (r,) = [r for r in tessera.insight.runs(db) if r["id"] == rid]
    assert r["status"] == "finished" and r["params"] == {"lr": "0.1", "opt": "sgd", "note": "extra"}
    assert r["metrics"]["test/accuracy"]["final"] == pytest.approx(0.75)
    m = tessera.insight.metrics(rid, "loss", db=db)
    assert list(m) == ["loss"] and m["loss"]["value"][-1] == pytest.approx(0.01)
    assert run.finished
    with pytest.raises(ValueError, match="finished"):
        run.log(1, loss=1.0)


def test_exceptions_mark_the_run(db):
    with pytest.raises(ZeroDivisionError):
        with tessera.insight.run("crashes", db=db) as run:
            run.log(1, loss=2.0)
            1 / 0
    (r,) = [r for r in tessera.insight.runs(db) if r["name"] == "crashes"]
    assert r["status"] == "failed" and "ZeroDivisionError" in r["error"]


def test_bad_input(tmp_path, db):
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(tessera.Error, match="file/i.db"):
        tessera.insight.start_run("x", db=tmp_path / "file" / "i.db")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(tessera.Error, match="ro"):
            tessera.insight.start_run("x", db=ro / "i.db")
    notdb = tmp_path / "notdb.db"
    notdb.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(tessera.Error, match="notdb.db"):
        tessera.insight.start_run("x", db=notdb)
    with tessera.insight.run("bad-logs", db=db) as run:
        with pytest.raises(TypeError):
            run.log(1, loss="high")
        with pytest.raises(tessera.Error, match="missing.json"):
            run.log_trace(tmp_path / "missing.json")
        bad = tmp_path / "bad.json"
        bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1')
        with pytest.raises(tessera.Error, match="bad.json.*byte"):
            run.log_trace(bad)
        with pytest.raises(tessera.Error, match="missing.pt"):
            run.log_checkpoint(tmp_path / "missing.pt", 1)
        with pytest.raises(ValueError, match="status"):
            run.finish("great")
    with pytest.raises(tessera.Error):
        tessera.insight.metrics("no-such-run", db=db)


def test_chrome_trace_begin_end_pairs(tmp_path, db):
    t = tmp_path / "t.json"
    t.write_text(json.dumps([
        {"ph": "B", "name": "step", "cat": "step", "ts": 0, "pid": 1, "tid": 1},
        {"ph": "X", "name": "matmul", "cat": "cpu_op", "ts": 5, "dur": 10, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 20, "pid": 1, "tid": 1},
        {"ph": "C", "name": "mem", "ts": 3, "pid": 1, "args": {"v": 1}},
    ]))
    with tessera.insight.run("trace", db=db) as run:
        r = run.log_trace(t)
    assert r == {"spans": 2, "skipped": 1, "invalid": 0}


def test_nan_and_inf_metrics_are_kept_with_their_batch(db):
    """One NaN made finish() raise 'NOT NULL constraint failed' and lost the 299 points around it."""
    import math
    with tessera.insight.run("nan-loss", db=db) as run:
        for step in range(299):
            run.log(step, loss=1.0 / (step + 1))
        run.log(299, loss=float("nan"), grad=np.float32("inf"))
        run.log(300, loss=np.float32("nan"))
        rid = run.id
    m = tessera.insight.metrics(rid, db=db)
    assert len(m["loss"]["value"]) == 301
    assert math.isnan(m["loss"]["value"][299]) and math.isnan(m["loss"]["value"][300])
    assert m["grad"]["value"][0] == math.inf
    r = next(r for r in tessera.insight.runs(db) if r["id"] == rid)
    assert r["status"] == "finished"


def test_fifos_and_foreign_databases_are_refused_without_blocking(tmp_path, db):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with tessera.insight.run("fifo", db=db) as run:
        for call in (lambda: run.log_trace(fifo), lambda: run.log_checkpoint(fifo, 1),
                     lambda: run.log_dataset("train", fifo)):
            with pytest.raises(tessera.Error, match="FIFO"):
                call()
    with pytest.raises(tessera.Error, match="FIFO"):
        tessera.insight.runs(db=fifo)
    with pytest.raises(tessera.Error, match="FIFO"):
        tessera.insight.start_run("x", db=fifo)
    import sqlite3
    foreign = tmp_path / "photos.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE photos(id INTEGER)")
    con.commit()
    con.close()
    for call in (lambda: tessera.insight.runs(db=foreign), lambda: tessera.insight.start_run("x", db=foreign)):
        with pytest.raises(tessera.Error, match="not an insight database"):
            call()
    con = sqlite3.connect(foreign)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["photos"]
    con.close()


def test_invalid_trace_spans_are_skipped_with_a_warning(tmp_path, db):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "ok", "ts": 1, "dur": 2, "pid": 1, "tid": 1},
        {"ph": "X", "name": "neg", "ts": 1, "dur": -2, "pid": 1, "tid": 1},
        {"ph": "X", "name": "far", "ts": 1e300, "dur": 2, "pid": 1, "tid": 1}]}))
    with tessera.insight.run("bad-spans", db=db) as run:
        with pytest.warns(UserWarning, match="2 invalid span"):
            r = run.log_trace(trace)
    assert r["spans"] == 1 and r["invalid"] == 2


def test_a_forked_child_cannot_log_to_its_parents_run(db):
    """A PyTorch DataLoader worker (fork) inherits the run: SQLite connections must not cross fork()."""
    with tessera.insight.run("forked", db=db) as run:
        run.log(0, loss=1.0)
        run.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                run.log(1, loss=2.0)
            except tessera.Error as e:
                code = 0 if "forked" in str(e) else 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        run.log(2, loss=0.5)
        rid = run.id
    m = tessera.insight.metrics(rid, db=db)
    assert list(m["loss"]["step"]) == [0, 2]
