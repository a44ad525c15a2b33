#!/usr/bin/env python3
"""Data parallel across two hosts, with faults (issue 42, item 5): two hosts simulated as network
namespaces joined by a veth pair (addresses only inside them: 10.77.0.1 and 10.77.0.2), Open MPI
over TCP between them with a hostfile, mpirun started in host A's namespace and host B's daemon
started through an rsh agent (`ip netns exec B`, with B's own hostname) instead of ssh. Checks:

  1. 2 ranks on 2 hosts with --deterministic train the weights of 2 ranks on one host and of one
     process accumulating 2 micro-batches, bit for bit (and the gradients did cross the veth);
  2. a slow link (netem delay 20 ms on A's side; where the kernel has no netem, a TUN link
     through a relay in this script delaying A->B by 20 ms) trains the same bits, and
     `runs show` reports the communication time, of each rank;
  3. the link taken down mid-run (`ip link set ... down`), mpirun given TCP keepalives on its
     daemons' connections (`--mca oob_tcp_keepalive_time 5 ...`, as a multi-host job should):
     mpirun and both ranks stop within 30 s, the run is recorded failed, the last checkpoint loads;
  4. that checkpoint resumes on one process (another host count) to the uninterrupted run's bits;
  5. the link taken down under Open MPI's defaults (no keepalives: its daemons notice a dead peer
     after 300 s + 9 x 20 s at best): both ranks stop within 30 s all the same and the run is
     recorded failed.

Every check runs and prints ok/FAIL; exit 1 when any failed.

    check_two_hosts.py TESSERA [--data DIR]
    (exit 77, with the reason: not root, no `ip`, no mpirun, or no network namespaces here;
     `--relay ...` is this script's own delaying link, started by itself)
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "samples", "mlp.json")
PID = os.getpid()
NS_A, NS_B = f"tsA{PID}", f"tsB{PID}"          # network namespaces: the two hosts
VETH_A, VETH_B = f"tvA{PID}", f"tvB{PID}"      # the veth pair (15 characters at most)
TUN_A, TUN_B = f"tdA{PID}", f"tdB{PID}"        # the relay's TUN link (no netem in the kernel)
HOST_B = f"tessera-b{PID}"                     # host B's hostname (its own UTS namespace)
NET, NET_TUN = "10.77.0", "10.78.0"
KEEPALIVE = ["--mca", "oob_tcp_keepalive_time", "5", "--mca", "oob_tcp_keepalive_intvl", "2",
             "--mca", "oob_tcp_keepalive_probes", "3"]
STOP_WITHIN_S = 30
FAILURES = []


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def ok(msg):
    print("ok: " + msg, flush=True)


def check(cond, what, evidence=""):
    if cond:
        ok(what)
    else:
        FAILURES.append(what)
        print(f"FAIL: {what}" + (f"\n      {evidence}" if evidence else ""), flush=True)
    return cond


def ns_pids(ns):
    r = run(["ip", "netns", "pids", ns], timeout=10)
    return [int(x) for x in r.stdout.split()] if r.returncode == 0 else []


def kill_namespace_processes():
    """SIGKILL whatever runs in our two namespaces (hung ranks, daemons cut off from mpirun)."""
    for ns in (NS_A, NS_B):
        for pid in ns_pids(ns):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def remove_stale_namespaces():
    """The namespaces of earlier runs of this script that were killed before their cleanup
    (named after a process id that is gone)."""
    r = run(["ip", "netns", "list"], timeout=10)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if re.fullmatch(r"ts[AB]\d+", name) and not os.path.exists(f"/proc/{name[3:]}"):
            for pid in ns_pids(name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            run(["ip", "netns", "del", name], timeout=20)
            print(f"note: removed the namespace {name} left by a killed run")


def alive(pid):
    """A process that exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return -1.0


def tessera_pids(tag):
    """The ranks of the job whose command line holds `tag` (its unique checkpoint folder)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == PID:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == b"train" and tag.encode() in argv and alive(int(d)):
            pids.append(int(d))
    return sorted(pids)


def weights(tessera, tsr):
    """The arrays of a trained graph, as the .npy bytes `tessera convert` writes (bitwise)."""
    out = tsr[:-4] + ".json"
    r = run([tessera, "convert", tsr, out], timeout=60)
    if r.returncode != 0 or not os.path.exists(out[:-5] + ".npz"):
        return {}
    with zipfile.ZipFile(out[:-5] + ".npz") as z:
        return {n: z.read(n) for n in z.namelist()}


def tx_bytes(ns, dev):
    r = run(["ip", "-n", ns, "-j", "-s", "link", "show", dev], timeout=10)
    try:
        return json.loads(r.stdout)[0]["stats64"]["tx"]["bytes"]
    except (ValueError, LookupError):
        return -1


def relay(ns_a, ns_b, dev_a, dev_b, delay_ab):
    """--relay mode: a point-to-point link between two namespaces through two TUN devices, packets
    from A to B held `delay_ab` seconds (netem's delay on A's side, where the kernel has no netem).
    The devices vanish with this process."""
    import ctypes
    import fcntl
    import heapq
    import select
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the test, whatever kills it
    if os.getppid() == 1:
        return

    def enter(path):
        fd = os.open(path, os.O_RDONLY)
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            sys.exit(f"relay: setns {path}: {os.strerror(ctypes.get_errno())}")
        os.close(fd)

    def tun(dev):
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, 0x400454CA, struct.pack("16sH", dev.encode(), 0x0001 | 0x1000))  # TUNSETIFF, IFF_TUN|IFF_NO_PI
        return fd

    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    enter(f"/var/run/netns/{ns_a}")
    a = tun(dev_a)
    enter(f"/var/run/netns/{ns_b}")
    b = tun(dev_b)
    libc.setns(home, 0x40000000)  # back home: `ip netns pids` lists only the hosts' processes
    print("ready", flush=True)
    queue, n = [], 0
    while True:
        wait = max(0.0, queue[0][0] - time.monotonic()) if queue else None
        ready, _, _ = select.select([a, b], [], [], wait)
        now = time.monotonic()
        for fd in ready:
            try:
                packet = os.read(fd, 65536)
            except OSError:
                continue
            n += 1
            heapq.heappush(queue, (now + (delay_ab if fd == a else 0.0), n, b if fd == a else a, packet))
        while queue and queue[0][0] <= time.monotonic():
            _, _, fd, packet = heapq.heappop(queue)
            try:
                os.write(fd, packet)
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tessera", nargs="?")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--relay", nargs=5, metavar=("NS_A", "NS_B", "DEV_A", "DEV_B", "DELAY_S"))
    args = ap.parse_args()
    if args.relay:
        relay(*args.relay[:4], float(args.relay[4]))
        return 0
    if not args.tessera:
        ap.error("TESSERA is required")
    if os.geteuid() != 0:
        print("skip: network namespaces need root")
        return 77
    for tool, package in (("ip", "iproute2"), ("mpirun", "openmpi-bin")):
        if not shutil.which(tool):
            print(f"skip: no {tool} ({package})")
            return 77
    # `ip netns exec` makes / a slave mount: in a chroot whose root is not a mount point it fails,
    # after `ip netns add` has already mounted /run/netns (left behind, it keeps the chroot busy).
    try:
        with open("/proc/self/mountinfo") as f:
            root_mounted = any(line.split()[4] == "/" for line in f if len(line.split()) > 4)
    except OSError:
        root_mounted = False
    if not root_mounted:
        print("skip: / is not a mount point here (a chroot): network namespaces cannot be entered")
        return 77
    tessera = os.path.abspath(args.tessera)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # (the finally below cleans up)
    remove_stale_namespaces()
    tmp = tempfile.mkdtemp(prefix="tessera-2h-")
    relay_proc = None
    made = []
    try:
        # -- The two hosts. ----------------------------------------------------------------------
        for ns in (NS_A, NS_B):
            r = run(["ip", "netns", "add", ns], timeout=20)
            if r.returncode != 0:
                print(f"skip: cannot make a network namespace here: ip netns add: {r.stderr.strip()}")
                return 77
            made.append(ns)
        r = run(["ip", "link", "add", VETH_A, "netns", NS_A, "type", "veth", "peer", "name", VETH_B, "netns", NS_B], timeout=20)
        if r.returncode != 0:
            print(f"skip: cannot make a veth pair here: {r.stderr.strip()}")
            return 77
        for ns, dev, ip in ((NS_A, VETH_A, f"{NET}.1"), (NS_B, VETH_B, f"{NET}.2")):
            for cmd in (["addr", "add", f"{ip}/24", "dev", dev], ["link", "set", dev, "up"], ["link", "set", "lo", "up"]):
                r = run(["ip", "-n", ns] + cmd, timeout=20)
                if r.returncode != 0:  # (a chroot without its own /run/netns mounts, say)
                    print(f"skip: cannot set up the namespaces' network here: ip -n {ns} {' '.join(cmd)}: "
                          f"{(r.stderr or r.stdout).strip()}")
                    return 77

        # The rsh agent mpirun starts host B's daemon with (there is no sshd): `agent HOST COMMAND...`
        # runs COMMAND in HOST's namespace, host B under its own hostname as a real host has.
        unshare = shutil.which("unshare")
        b_prefix = f'{unshare} --uts /bin/sh -c "hostname {HOST_B} && exec $*"' if unshare else '/bin/sh -c "$*"'
        agent = os.path.join(tmp, "agent.sh")
        with open(agent, "w") as f:
            f.write(f"""#!/bin/sh
# mpirun's rsh agent: HOST COMMAND... -> COMMAND in HOST's network namespace
host=$1; shift
case "$host" in
  {NET}.1|{NET_TUN}.1) exec ip netns exec {NS_A} /bin/sh -c "$*" ;;
  {NET}.2|{NET_TUN}.2) exec ip netns exec {NS_B} {b_prefix} ;;
  *) echo "agent: unknown host $host" >&2; exit 255 ;;
esac
""")
        os.chmod(agent, 0o755)
        if not unshare:
            print("note: no unshare (util-linux): host B keeps this machine's hostname, so rank 1 records to rank 0's database")

        def hostfile(net):
            path = os.path.join(tmp, f"hosts-{net}")
            with open(path, "w") as f:
                f.write(f"{net}.1 slots=1\n{net}.2 slots=1\n")
            return path

        def mpirun2(net=NET, keepalive=True):
            return (["ip", "netns", "exec", NS_A, "mpirun", "--allow-run-as-root", "--hostfile", hostfile(net), "-n", "2",
                     "--mca", "plm_rsh_agent", agent, "--mca", "btl", "self,tcp",
                     "--mca", "btl_tcp_if_include", f"{net}.0/24", "--mca", "oob_tcp_if_include", f"{net}.0/24"]
                    + (KEEPALIVE if keepalive else []))

        def train(extra, batch=32):
            return [tessera, "train", MLP, "--data", args.data, "--batch", str(batch), "--lr", "0.05", "--optimizer",
                    "momentum", "--threads", "1", "--no-eval", "--json"] + extra

        def result(r, what):
            lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
            if r.returncode != 0 or len(lines) != 1:
                check(False, what, f"rc {r.returncode}, {len(lines)} JSON lines\n{r.stdout[-1500:]}\n{r.stderr[-2500:]}")
                return None
            return json.loads(lines[0])

        def bounded(cmd, timeout=120):
            """A job that may hang on a cut link: on timeout, everything in the namespaces is killed."""
            try:
                return run(cmd, timeout=timeout)
            except subprocess.TimeoutExpired as e:
                kill_namespace_processes()
                return subprocess.CompletedProcess(cmd, 124, e.stdout or "", (e.stderr or "") + f"\n(timed out after {timeout} s)")

        # -- 1. Bit for bit: 2 hosts = 2 ranks on one host = one process with 2 micro-batches. --------
        det = ["--max-steps", "60", "--deterministic"]
        before = tx_bytes(NS_A, VETH_A)
        start = time.time()
        two_host = result(bounded(mpirun2() + train(det + ["--save", f"{tmp}/two_host.tsr", "--db", f"{tmp}/two_host.db"])),
                          "2 ranks on 2 hosts (mpirun over the veth) trained")
        took = time.time() - start
        sent = tx_bytes(NS_A, VETH_A) - before
        one_host = result(run(["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader,tcp", "-n", "2"]
                              + train(det + ["--save", f"{tmp}/one_host.tsr", "--no-record"])), "2 ranks on one host trained")
        single = result(run(train(det + ["--accumulate", "2", "--save", f"{tmp}/single.tsr", "--no-record"])),
                        "one process, 2 micro-batches, trained")
        if two_host and one_host and single:
            w2, w1, w0 = (weights(tessera, f"{tmp}/{n}.tsr") for n in ("two_host", "one_host", "single"))
            check(two_host["world_size"] == 2 and sent >= 60 * 200_000,  # 407,080 bytes of gradients a step
                  f"the 2-host run had world size 2 and sent its gradients over the veth ({sent / 1e6:.1f} MB in 60 steps)",
                  f"world_size {two_host['world_size']}, {sent} bytes sent by {VETH_A}")
            check(w2 and w2 == w1 == w0 and two_host["train_loss"] == one_host["train_loss"] == single["train_loss"],
                  f"--deterministic, 60 steps: 2 hosts = 2 ranks on one host = 1 process x 2 micro-batches, bit for bit "
                  f"(loss {two_host['train_loss']!r}; {32e3 / two_host['images_per_s']:.1f} ms a step, rank 0 {two_host['comm_s']:.2f} s "
                  f"in MPI; mpirun {took:.1f} s in all)",
                  f"losses {two_host['train_loss']!r} / {one_host['train_loss']!r} / {single['train_loss']!r}; weights equal: "
                  f"2h=1h {w2 == w1}, 1h=single {w1 == w0}")

        # -- 2. A slow link: 20 ms from A to B. -----------------------------------------------------
        steps = 20
        netem = run(["ip", "netns", "exec", NS_A, "tc", "qdisc", "add", "dev", VETH_A, "root", "netem", "delay", "20ms"], timeout=20)
        net = NET
        if netem.returncode == 0:
            how = f"netem delay 20ms on {VETH_A}"
        elif os.path.exists("/dev/net/tun"):
            how = f"a TUN link through a relay holding A->B packets 20 ms (no netem here: {netem.stderr.strip()})"
            relay_proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--relay", NS_A, NS_B, TUN_A, TUN_B, "0.020"],
                                          stdout=subprocess.PIPE, text=True)
            if relay_proc.stdout.readline().strip() != "ready":
                check(False, "the delaying relay started", f"relay exit {relay_proc.poll()}")
            for ns, dev, ip in ((NS_A, TUN_A, f"{NET_TUN}.1"), (NS_B, TUN_B, f"{NET_TUN}.2")):
                for cmd in (["addr", "add", f"{ip}/24", "dev", dev], ["link", "set", dev, "up"]):
                    subprocess.run(["ip", "-n", ns] + cmd, check=True, capture_output=True, timeout=20)
            net = NET_TUN
        else:
            how = None
            print(f"note: slow link not checked: no netem ({netem.stderr.strip()}) and no /dev/net/tun")
        if how:
            db = f"{tmp}/slow.db"
            start = time.time()
            slow = result(bounded(mpirun2(net) + train(["--max-steps", str(steps), "--deterministic", "--save", f"{tmp}/slow.tsr",
                                                        "--db", db])), f"2 hosts over a slow link ({how}) trained")
            took = time.time() - start
            ref = result(run(train(["--max-steps", str(steps), "--deterministic", "--accumulate", "2", "--save", f"{tmp}/ref20.tsr",
                                    "--no-record"])), "one process, 20 steps, trained")
            if slow and ref:
                ws, wr = weights(tessera, f"{tmp}/slow.tsr"), weights(tessera, f"{tmp}/ref20.tsr")
                check(ws and ws == wr and slow["train_loss"] == ref["train_loss"],
                      f"slow link ({how}): {steps} steps bit for bit as one process (loss {slow['train_loss']!r}); "
                      f"{32e3 / slow['images_per_s']:.1f} ms a step, rank 0 {slow['comm_s']:.2f} s in MPI (mpirun {took:.1f} s)",
                      f"losses {slow['train_loss']!r} / {ref['train_loss']!r}")
                # images_per_s: this rank's examples (--batch 32 a step) over its steps' time
                check(32 / slow["images_per_s"] >= 0.020, "the delay was in effect: at least 20 ms a step",
                      f"{slow['images_per_s']} examples/s of 32 a step")
                text = run([tessera, "runs", "show", "last", "--db", db])
                shown = run([tessera, "runs", "show", "last", "--db", db, "--json"])
                ranks = json.loads(shown.stdout).get("ranks", []) if shown.returncode == 0 else []
                rows = [l for l in text.stdout.splitlines() if l.strip().startswith(("ranks", "rank ", "dist/"))]
                check(any(r.get("rank") == 0 and r.get("mpi_s", 0) > 0 for r in ranks) and "MPI time" in text.stdout,
                      f"`runs show` reports rank 0's communication time ({ranks[0]['mpi_s'] if ranks else '?'} s)",
                      "\n      ".join(rows) or text.stdout[-1500:])
                check(sorted(r.get("rank") for r in ranks) == [0, 1] and all(r.get("mpi_s", 0) > 0 for r in ranks),
                      "`runs show` reports each rank's communication time, rank 1's on the other host too",
                      "runs show --json ranks: " + json.dumps(ranks) + "\n      " + "\n      ".join(rows))
            if relay_proc:
                relay_proc.kill()
                relay_proc.wait(timeout=10)
                relay_proc = None
            else:
                run(["ip", "netns", "exec", NS_A, "tc", "qdisc", "del", "dev", VETH_A, "root"], timeout=20)

        # -- 3./5. The link taken down mid-run. ----------------------------------------------------
        def cut(name, keepalive, ns, dev):
            """Starts a long 2-host run, takes the link down after its second checkpoint, and
            returns what stopped when, the run's record and its checkpoint folder."""
            ck, db = f"{tmp}/{name}", f"{tmp}/{name}.db"
            cmd = mpirun2(keepalive=keepalive) + train(["--epochs", "5", "--deterministic", "--checkpoint-dir", ck,
                                                        "--checkpoint-every", "50", "--db", db])
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
            out = {"name": name, "ck": ck, "stopped": {}, "evidence": ""}
            deadline = time.time() + 60
            ranks = []
            while time.time() < deadline and p.poll() is None:
                ranks = tessera_pids(ck)
                if os.path.exists(f"{ck}/step-00000100.tsc") and len(ranks) == 2:
                    break
                time.sleep(0.2)
            if len(ranks) != 2 or p.poll() is not None:
                kill_namespace_processes()
                check(False, f"{name}: the 2-host job got going", (p.communicate(timeout=20)[0] or "")[-2000:])
                return None
            cpu0 = {r: cpu_s(r) for r in ranks}
            run(["ip", "netns", "exec", ns, "ip", "link", "set", dev, "down"], timeout=20)
            down = time.time()
            watched = {"mpirun": p.pid, "rank 0": ranks[0], "rank 1": ranks[1]}
            while time.time() < down + STOP_WITHIN_S + 2 and len(out["stopped"]) < 3:
                p.poll()
                for what, pid in watched.items():
                    if what not in out["stopped"] and not alive(pid):
                        out["stopped"][what] = time.time() - down
                time.sleep(0.1)
            left = [w for w in watched if w not in out["stopped"]]
            out["left"] = left
            out["evidence"] = "; ".join(f"{w} (pid {watched[w]}) still running after {time.time() - down:.0f} s"
                                        + (f", {cpu_s(watched[w]) - cpu0[watched[w]]:.1f} s of CPU since the cut"
                                           if watched[w] in cpu0 else "") for w in left)
            # What the database says while the job is (or was) in this state, before any kill of ours.
            listed = run([tessera, "runs", "list", "--db", db, "--json"])
            out["run"] = (json.loads(listed.stdout) or [{}])[0] if listed.returncode == 0 else {"status": listed.stderr.strip()}
            out["remote_left"] = [open(f"/proc/{q}/comm").read().strip() for q in ns_pids(NS_B) if alive(q)]
            kill_namespace_processes()
            try:
                out["log"] = p.communicate(timeout=20)[0] or ""
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out["log"] = p.communicate(timeout=20)[0] or ""
            out["rc"] = p.returncode
            run(["ip", "netns", "exec", ns, "ip", "link", "set", dev, "up"], timeout=20)
            return out

        def judge(o, how):
            if not o:
                return None
            times = ", ".join(f"{w} {t:.1f} s" for w, t in sorted(o["stopped"].items(), key=lambda x: x[1]))
            print(f"      {how}: stopped after the cut: {times or 'nothing'}; processes left on host B: "
                  f"{o['remote_left'] or 'none'}; run {o['run'].get('status')}: {o['run'].get('error', '')}", flush=True)
            return times

        # 3. Keepalives on the daemons' connections: Open MPI notices the dead link and ends the job.
        o = cut("cut_keepalive", True, NS_B, VETH_B)
        times = judge(o, f"{VETH_B} down, mpirun with " + " ".join(f"{k}={v}" for k, v in zip(KEEPALIVE[1::3], KEEPALIVE[2::3])))
        last = None
        if o:
            check(not o["left"] and max(o["stopped"].values()) <= STOP_WITHIN_S,
                  f"link down (mpirun with TCP keepalives): mpirun and both ranks stopped within {STOP_WITHIN_S} s ({times})",
                  o["evidence"] + "\n      " + o["log"][-1500:])
            check(o["rc"] != 0, "link down: mpirun exits non-zero", f"rc {o['rc']}")
            check(o["run"].get("status") == "failed", "link down: the run is recorded failed", json.dumps(o["run"])[:800])
            cks = sorted(f for f in os.listdir(o["ck"]) if f.startswith("step-") and f.endswith(".tsc"))
            last = os.path.join(o["ck"], cks[-1]) if cks else None
            loads = last and run([tessera, "run", MLP, "--checkpoint", last, "--no-record"], timeout=60)
            check(loads and loads.returncode == 0, f"link down: the last checkpoint ({cks[-1] if cks else 'none'}) loads",
                  loads.stderr[-800:] if loads else f"{o['ck']}: {os.listdir(o['ck'])}")

        # -- 4. Resume on another host count: one process, the same global batch (32 x 2). -----------
        if last:
            at = int(os.path.basename(last)[5:13])
            extra = ["--epochs", "5", "--max-steps", str(at + 50), "--deterministic", "--accumulate", "2", "--no-record"]
            resumed = result(run(train(extra + ["--resume", last, "--save", f"{tmp}/resumed.tsr"])),
                             "the checkpoint of the cut run resumed on one process")
            whole = result(run(train(extra + ["--save", f"{tmp}/whole.tsr"])), "one process trained uninterrupted")
            if resumed and whole:
                wa, wb = weights(tessera, f"{tmp}/resumed.tsr"), weights(tessera, f"{tmp}/whole.tsr")
                # (train_loss is the mean over the steps this process ran, so the two differ)
                check(wa and wa == wb,
                      f"the cut 2-host run's step {at} resumes on 1 host (1 process x 2 micro-batches) to step {at + 50}: "
                      "the uninterrupted run's weights, bit for bit",
                      "weights differ in " + ", ".join(k for k in wb if wa.get(k) != wb[k]))

        # 5. Open MPI's defaults: the ranks themselves must not wait for ever on a dead link.
        o = cut("cut_default", False, NS_A, VETH_A)
        times = judge(o, f"{VETH_A} down, Open MPI's defaults")
        if o:
            ranks_stopped = [o["stopped"].get(w) for w in ("rank 0", "rank 1")]
            check(all(t is not None and t <= STOP_WITHIN_S for t in ranks_stopped),
                  f"link down (Open MPI's defaults): both ranks stopped within {STOP_WITHIN_S} s ({times or 'none'})",
                  o["evidence"] + "\n      " + o["log"][-1200:])
            check(o["run"].get("status") == "failed",
                  f"link down (Open MPI's defaults): the run is recorded failed within {STOP_WITHIN_S} s",
                  json.dumps(o["run"])[:800])
    finally:
        if relay_proc:
            relay_proc.kill()
            relay_proc.wait(timeout=10)
        kill_namespace_processes()
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed:\n  " + "\n  ".join(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
