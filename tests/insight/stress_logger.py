"""One Python process of the store's stress harness (stress_store.py): several threads, each a run
of tessera.insight logging metrics (NaN and inf among them), a Chrome trace and a checkpoint, and
reading the runs back, while other processes write and read the same database and any process may
be killed. After every acknowledged flush a thread appends "RUN METRICS SPANS" to the ledger
(fsync'd): the harness checks that the database never holds less than the ledger says.

    python3 stress_logger.py DB LEDGER TRACE SEED
"""

import math
import os
import random
import sys
import threading

import tessera


def ledger_line(ledger, lock, text):
    with lock:
        with open(ledger, "a") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())


def worker(db, ledger, trace, seed, lock, errors):
    rng = random.Random(seed)
    try:
        run = tessera.insight.start_run(f"stress-py-{seed}", params={"seed": seed}, db=db)
        ledger_line(ledger, lock, f"{run.id} 0 0")
        metrics = spans = 0
        for burst in range(rng.randint(2, 6)):
            for _ in range(rng.randint(20, 300)):
                step = metrics
                value = rng.random()
                if step % 37 == 5:
                    value = math.nan
                elif step % 53 == 7:
                    value = math.inf
                run.log(step, loss=value)
                metrics += 1
            if rng.random() < 0.3:
                spans += run.log_trace(trace)["spans"]
            if rng.random() < 0.3:
                tessera.insight.runs(db=db)  # a reader in the writer's process
            run.flush()
            ledger_line(ledger, lock, f"{run.id} {metrics} {spans}")
        run.finish("finished")
    except tessera.Error as e:  # a lock held past the busy timeout is an answer, not a loss
        errors.append(str(e))


def main():
    db, ledger, trace, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    lock = threading.Lock()
    errors = []
    threads = [threading.Thread(target=worker, args=(db, ledger, trace, seed * 16 + i, lock, errors))
               for i in range(random.Random(seed).randint(1, 4))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        print("stress_logger:", e, file=sys.stderr)
    sys.exit(0)


if __name__ == "__main__":
    main()
