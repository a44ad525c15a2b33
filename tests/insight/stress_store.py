"""Stress harness of the insight store: every writer and reader Tessera has, at once, on one
database, with processes killed (SIGKILL and SIGTERM) at random moments. After every round:
PRAGMA integrity_check is "ok", nothing committed has gone (every run seen before is there, with
at least the metrics, spans and checkpoints it had, and a finished run is unchanged), every flush a
Python logger acknowledged is in the database, and no run is left "running".

Writers and readers, each a process started at random while the round lasts:
  tessera train (LeNet on Fashion-MNIST, a few steps) / run / bench / passes, recording
  mpirun -n 2 tessera train (the ranks attach to rank 0's run; when mpirun is there, --mpi)
  Python: stress_logger.py, 1-4 threads each a tessera.insight run (NaN and inf metrics, a trace,
          reads of insight.runs() in the writer's process), with a ledger of acknowledged flushes
  tessera runs list / show last / metrics last --csv / check, and the read-only open of
          tessera.insight.runs()

    python3 stress_store.py --tessera build/release/cli/tessera --root . [--seconds 40] [--seed 1]
    (PYTHONPATH: the build's python/ folder)

Prints the counts at the end; exit 1 at the first failed check, naming it.
"""

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

FASHION = "/usr/share/datasets/fashion-mnist"
TERMINAL = {"finished", "failed", "stopped"}


def trace_file(folder):
    """A small valid Chrome trace (what torch.profiler exports), for log_trace."""
    path = os.path.join(folder, "trace.json")
    events = [{"name": f"op{i % 7}", "ph": "X", "cat": "cpu_op", "ts": 1000.0 + 10 * i, "dur": 8.0,
               "pid": 1, "tid": i % 3} for i in range(200)]
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    return path


def snapshot(db):
    """{run: (status, metrics, nan metrics, spans, checkpoints)} read through SQLite, read-only."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        ok = con.execute("PRAGMA integrity_check").fetchall()
        if ok != [("ok",)]:
            return None, [r[0] for r in ok][:20]
        runs = {r[0]: [r[1], 0, 0, 0, 0] for r in con.execute("SELECT id, status FROM runs")}
        for run, n, nan in con.execute("SELECT run, COUNT(*), SUM(value IS NULL) FROM metrics GROUP BY run"):
            runs[run][1], runs[run][2] = n, nan
        for run, n in con.execute("SELECT run, COUNT(*) FROM spans GROUP BY run"):
            runs[run][3] = n
        for run, n in con.execute("SELECT run, COUNT(*) FROM checkpoints GROUP BY run"):
            runs[run][4] = n
        return {k: tuple(v) for k, v in runs.items()}, []
    finally:
        con.close()


class Harness:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.tmp = tempfile.mkdtemp(prefix="tessera-stress-")
        self.db = os.path.join(self.tmp, "insight.db")
        self.ledger = os.path.join(self.tmp, "ledger.txt")
        self.trace = trace_file(self.tmp)
        self.ckdir = os.path.join(self.tmp, "ck")
        self.counts = {"rounds": 0, "started": 0, "sigkill": 0, "sigterm": 0, "checks": 0}
        self.kinds = {}
        self.env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", PYTHONDONTWRITEBYTECODE="1")
        self.mpirun = shutil.which("mpirun") if args.mpi else None

    def command(self):
        t, root, db = self.args.tessera, self.args.root, self.db
        lenet = os.path.join(root, "samples", "lenet.json")
        kinds = [("train", 3), ("run", 2), ("bench", 1), ("passes", 1), ("python", 4), ("list", 2),
                 ("show", 1), ("metrics", 1), ("check", 1), ("py-read", 1)]
        if self.mpirun:
            kinds.append(("mpirun", 1))
        names = [k for k, w in kinds for _ in range(w)]
        kind = self.rng.choice(names)
        steps = str(self.rng.randint(5, 60))
        train = ["train", lenet, "--data", FASHION, "--max-steps", steps, "--threads", "1", "--db", db,
                 "--checkpoint-dir", os.path.join(self.ckdir, str(self.counts["started"])), "--checkpoint-every", "10"]
        cmd = {
            "train": [t] + train,
            "mpirun": [self.mpirun or "mpirun", "--allow-run-as-root", "-n", "2", t] + train,
            "run": [t, "run", lenet, "--db", db],
            "bench": [t, "bench", lenet, "--runs", "30", "--warmup", "2", "--threads", "1", "--db", db],
            "passes": [t, "passes", lenet, "--db", db],
            "python": [sys.executable, os.path.join(os.path.dirname(__file__), "stress_logger.py"), db, self.ledger,
                       self.trace, str(self.rng.randint(0, 1 << 30))],
            "list": [t, "runs", "list", "--db", db],
            "show": [t, "runs", "show", "last", "--db", db],
            "metrics": [t, "runs", "metrics", "last", "--csv", "--db", db],
            "check": [t, "runs", "check", "--db", db],
            "py-read": [sys.executable, "-c", f"import tessera; tessera.insight.runs(db={db!r})"],
        }[kind]
        return kind, cmd

    def round(self, seconds):
        procs = []
        end = time.time() + seconds
        while time.time() < end:
            if sum(p.poll() is None for _, p, _ in procs) < self.args.parallel:
                kind, cmd = self.command()
                err = tempfile.TemporaryFile(dir=self.tmp)  # a pipe left unread could block a writer
                p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=self.env, start_new_session=True)
                procs.append((kind, p, err))
                self.counts["started"] += 1
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
            time.sleep(self.rng.uniform(0.02, 0.25))
            live = [(k, p) for k, p, _ in procs if p.poll() is None]
            if live and self.rng.random() < self.args.kill_rate:
                k, p = self.rng.choice(live)
                sig = signal.SIGKILL if self.rng.random() < 0.5 else signal.SIGTERM
                try:
                    os.killpg(p.pid, sig)  # mpirun with its ranks
                    self.counts["sigkill" if sig == signal.SIGKILL else "sigterm"] += 1
                except ProcessLookupError:
                    pass
        deadline = time.time() + 60
        for k, p, f in procs:
            try:
                p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                self.fail(f"a '{k}' process did not end within 60 s of the round's end (a hang)")
            f.seek(0)
            err = f.read().decode(errors="replace")
            f.close()
            for bad in ("malformed", "disk image", "Segmentation", "AddressSanitizer", "runtime error:"):
                if bad in err:
                    self.fail(f"a '{k}' process printed '{bad}':\n{err[-2000:]}")
        # Processes started by those (the ranks of an mpirun killed with SIGKILL end on their own,
        # when they notice) must end too before the check: a live rank's run is rightly "running".
        while True:
            left = self.writers_alive()
            if not left:
                break
            if time.time() > deadline:
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.fail(f"processes {left} of this database did not end within 60 s of the round's end (a hang)")
            time.sleep(0.2)

    def writers_alive(self):
        """Pids of processes whose command line names this database (orphaned ranks among them)."""
        out = subprocess.run(["pgrep", "-f", self.db], capture_output=True, text=True).stdout.split()
        return [int(p) for p in out if int(p) != os.getpid()]

    def fail(self, what):
        print(f"stress_store: FAILED after {self.counts['rounds']} round(s): {what}\n  (database kept: {self.db})")
        sys.exit(1)

    def check(self, before):
        # A writer's open marks the dead runs crashed; afterwards nothing may be "running".
        subprocess.run([self.args.tessera, "runs", "list", "--db", self.db], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=self.env, timeout=120)
        runs, problems = snapshot(self.db)
        self.counts["checks"] += 1
        if runs is None:
            self.fail("PRAGMA integrity_check: " + "; ".join(problems))
        for run, old in before.items():
            if run not in runs:
                self.fail(f"run {run} ({old[0]}) has gone")
            new = runs[run]
            for i, what in ((1, "metrics"), (3, "spans"), (4, "checkpoints")):
                if new[i] < old[i]:
                    self.fail(f"run {run} had {old[i]} {what} and now {new[i]}")
            if old[0] in TERMINAL and new != old:
                self.fail(f"run {run} was {old} and is now {new}")
        running = [r for r, v in runs.items() if v[0] == "running"]
        if running:
            self.fail(f"runs {running} are still 'running' with every process ended")
        if os.path.exists(self.ledger):
            with open(self.ledger) as f:
                for line in f:
                    run, metrics, spans = (int(x) for x in line.split())
                    have = runs.get(run)
                    if have is None:
                        self.fail(f"run {run}, started by a Python logger, is not in the database")
                    if have[1] < metrics or have[3] < spans:
                        self.fail(f"run {run}: a flush acknowledged {metrics} metrics and {spans} spans; the database "
                                  f"holds {have[1]} and {have[3]}")
        return runs

    def main(self):
        os.makedirs(self.ckdir)
        runs = {}
        start = time.time()
        while time.time() - start < self.args.seconds:
            self.round(min(self.args.round_seconds, max(1.0, self.args.seconds - (time.time() - start))))
            self.counts["rounds"] += 1
            runs = self.check(runs)
            shutil.rmtree(self.ckdir, ignore_errors=True)
            os.makedirs(self.ckdir)
        totals = [0, 0, 0, 0]
        status = {}
        for v in runs.values():
            status[v[0]] = status.get(v[0], 0) + 1
            for i in range(4):
                totals[i] += v[i + 1]
        print(f"stress_store: {self.counts['rounds']} rounds in {time.time() - start:.0f} s, "
              f"{self.counts['started']} processes ({', '.join(f'{k} {v}' for k, v in sorted(self.kinds.items()))}), "
              f"{self.counts['sigkill']} SIGKILL + {self.counts['sigterm']} SIGTERM; {self.counts['checks']} integrity "
              f"checks ok; {len(runs)} runs ({', '.join(f'{k} {v}' for k, v in sorted(status.items()))}), "
              f"{totals[0]} metrics ({totals[1]} NaN), {totals[2]} spans, {totals[3]} checkpoints, none lost")
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--round-seconds", type=float, default=8)
    ap.add_argument("--parallel", type=int, default=6, help="processes at once")
    ap.add_argument("--kill-rate", type=float, default=0.15, help="chance of a kill at each tick (about 8 a second)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mpi", action="store_true", help="add mpirun -n 2 tessera train among the writers")
    args = ap.parse_args()
    if not os.path.isdir(FASHION):
        print(f"stress_store: skipped: no Fashion-MNIST at {FASHION}")
        sys.exit(77)
    Harness(args).main()


if __name__ == "__main__":
    main()
