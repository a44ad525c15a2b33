"""Log any Python program's training into Tessera's insight store, and read runs back.

    import tessera
    with tessera.insight.run("resnet-pytorch", params={"lr": 0.1, "batch": 64}) as run:
        run.log_graph("resnet.onnx")                 # the graph (any format tessera.load reads)
        for step in range(steps):
            ...
            run.log(step, loss=loss.item(), accuracy=acc)
        run.log_checkpoint("ck.pt", step)
        run.log_trace("trace.json")                  # a Chrome trace, e.g. torch.profiler's export

The run appears in the studio's runs dashboard, lineage and profiler, and in `tessera runs`, like a
run of `tessera train`. Leaving the block with an exception records the run as failed with the
error (KeyboardInterrupt: stopped). The database is `db`, else tessera.insight.default_database()
($TESSERA_DB, $XDG_DATA_HOME/tessera/insight.db or ~/.local/share/tessera/insight.db).
"""

import contextlib as _contextlib
import os as _os
import sys as _sys

from tessera import _tessera
from tessera._tessera import Run, default_database  # noqa: F401


def _log(self, step, epoch=-1, **metrics):
    """Records scalar points at `step`: run.log(10, loss=0.3, accuracy=0.91). Values are numbers
    (Python, NumPy scalars, or anything with __float__ such as a 0-d torch tensor)."""
    self._log(int(step), metrics, int(epoch))


Run.log = _log


def start_run(name, params=None, db=None, kind="train", command=None, seed=0, graph_name=""):
    """Starts a run and returns it (finish it with run.finish()); run() is the context-manager form."""
    params = {str(k): str(v) for k, v in (params or {}).items()}
    if command is None:
        command = " ".join([_os.path.basename(_sys.executable)] + _sys.argv)
    db = _os.fspath(db) if db is not None else ""
    return _tessera._start_run(db, str(name), kind, params, command, int(seed), graph_name)


@_contextlib.contextmanager
def run(name, params=None, db=None, kind="train", command=None, seed=0, graph_name=""):
    """A run of the insight store for the duration of a `with` block (see the module's doc)."""
    r = start_run(name, params=params, db=db, kind=kind, command=command, seed=seed, graph_name=graph_name)
    try:
        yield r
    except KeyboardInterrupt:
        r.finish("stopped", "KeyboardInterrupt")
        raise
    except BaseException as e:
        r.finish("failed", f"{type(e).__name__}: {e}")
        raise
    else:
        if not r.finished:
            r.finish("finished")


def runs(db=None):
    """Every run of the database, oldest first: dicts with id, name, kind, status, command, started,
    ended (seconds since the epoch), params, metrics (name -> final value and step), graph_hash."""
    return _tessera._runs(_os.fspath(db) if db is not None else "")


def metrics(run, name="", db=None):
    """A run's metric series: name -> {"step", "epoch", "value"} NumPy arrays. `run` is an id, a
    name (the newest run of that name) or "last"; `name` keeps one metric."""
    dbp = _os.fspath(db) if db is not None else ""
    rid = run if isinstance(run, int) else _tessera._resolve_run(dbp, str(run))
    return _tessera._metrics(dbp, rid, name)


def graph(run, db=None):
    """The graph a run recorded: {"hash", "name", "format", "role", "text"} (IR text, weights as inputs)."""
    dbp = _os.fspath(db) if db is not None else ""
    rid = run if isinstance(run, int) else _tessera._resolve_run(dbp, str(run))
    return _tessera._run_graph(dbp, rid)


__all__ = ["Run", "run", "start_run", "runs", "metrics", "graph", "default_database"]
