#!/usr/bin/env python3
"""CLI abuse suite: every value option of every subcommand, read from its own --help, given a
missing, empty, malformed, out-of-range, NaN, infinite, huge and flag-like value, on top of a
command line that works. Every command must end by itself (60 s) with
  2 and exactly one line on stderr, naming the subcommand, for a usage error;
  1 and a message for a runtime error;
  0 only when the value is one the option may take (never NaN, infinity or a flag-like value);
and never by a signal. The options are discovered, not listed here, so a new option is covered
the day it is added.

Usage: check_cli_abuse.py TESSERA REPO_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

tessera, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
lenet = os.path.join(root, "samples", "lenet.json")
mlp = os.path.join(root, "samples", "mlp.json")
failures = []
BAD = ["", "nan", "NaN", "inf", "-inf", "1e400", "-1", "0", "99999999999999999999", "abc", "--json", "-x", "1.5",
       "N=", "=3", "\xff", "a" * 5000]
NUMERIC_NEVER = {"nan", "NaN", "inf", "-inf", "1e400", "", "abc", "--json", "-x", "99999999999999999999"}


def run(args, cwd):
    try:
        p = subprocess.run([tessera, *args], capture_output=True, timeout=60, cwd=cwd)
    except subprocess.TimeoutExpired:
        return "hang", "", ""
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def value_options(sub):
    """(flag, type) of each option of `tessera SUB` that takes a value, from its --help."""
    rc, out, _ = run(sub.split() + ["--help"], None)
    assert rc == 0, sub
    opts = []
    for line in out.splitlines():
        m = re.match(r"\s+(?:-\w,)?(--[\w-]+) (TEXT|INT|UINT|FLOAT)\b", line)
        if m:
            opts.append((m.group(1), m.group(2)))
    return opts


def main():
    tmp = tempfile.mkdtemp(prefix="tessera-abuse-")
    rs = np.random.RandomState(0)
    data = os.path.join(tmp, "tiny.npz")
    np.savez(data, x=rs.rand(16, 1, 28, 28).astype(np.float32), labels=rs.randint(0, 10, 16).astype(np.int64))
    db = os.path.join(tmp, "abuse.db")
    out = os.path.join(tmp, "out")
    # A working command line per subcommand; the abused option is appended to it.
    base = {
        "info": ["info", lenet],
        "print": ["print", lenet],
        "run": ["run", lenet, "-o", out, "--db", db],
        "passes": ["passes", lenet, "--db", db],
        "bench": ["bench", lenet, "--runs", "1", "--warmup", "0", "--db", db],
        "convert": ["convert", lenet, os.path.join(tmp, "x.tsr")],
        "train": ["train", mlp, "--data", data, "--epochs", "1", "--batch", "8", "--max-steps", "2", "--no-eval",
                  "--db", db],
        "runs list": ["runs", "list", "--db", db],
        "runs show": ["runs", "show", "1", "--db", db],
        "runs metrics": ["runs", "metrics", "1", "--db", db],
    }
    for sub, args in base.items():
        rc, _, err = run(args, tmp)
        if rc != 0:
            print("FAIL the base command of %s works (rc %s, %s)" % (sub, rc, err.strip()[-300:]))
            failures.append(sub)
    counts = {0: 0, 1: 0, 2: 0}
    cases = 0
    for sub, args in base.items():
        for flag, kind in value_options(sub):
            for value in BAD + [None]:
                cmd = args + ([flag] if value is None else [flag, value])
                rc, _, err = run(cmd, tmp)
                cases += 1
                shown = "%s %s %r" % (sub, flag, "(missing)" if value is None else value[:20])
                lines = [l for l in err.splitlines() if l.strip()]
                if rc not in (0, 1, 2):
                    failures.append(shown)
                    print("FAIL %s: ended by %s (%s)" % (shown, rc, err.strip()[-300:]))
                    continue
                counts[rc] += 1
                if rc == 0 and os.environ.get("VERBOSE"):
                    print("accepted: " + shown)
                if rc == 2 and (len(lines) != 1 or not lines[0].startswith("tessera " + sub.split()[0])):
                    failures.append(shown)
                    print("FAIL %s: a usage error is one line naming the subcommand, got %r" % (shown, err[:300]))
                elif rc == 1 and not lines:
                    failures.append(shown)
                    print("FAIL %s: exit 1 without a message" % shown)
                elif rc == 0 and (value is None or (kind != "TEXT" and value in NUMERIC_NEVER) or value in ("--json", "-x")):
                    failures.append(shown)
                    print("FAIL %s: accepted (exit 0)" % shown)
    print("%d abusive command lines: %d usage errors (2), %d runtime errors (1), %d accepted (0)"
          % (cases, counts[2], counts[1], counts[0]))
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


main()
