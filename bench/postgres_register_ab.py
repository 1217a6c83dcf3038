#!/usr/bin/env python3
"""RegisterTaskDefinition on the PostgreSQL store, several `paddock` builds compared on a shared,
noisy machine: the builds take turns (round after round, each on a fresh database of one
PostgreSQL), 16 connections (--connections) of `paddock_load` for 5 s each, and every run also
reports what its server and PostgreSQL spent in CPU per request and how many cores everything else
took meanwhile ("others", the kernel's own I/O threads among them): a run beside a compile shows it
there, not only in a lower rate.

    python3 bench/postgres_register_ab.py [--connections N] ROUNDS NAME=PADDOCK_BINARY [NAME=...]
    python3 bench/postgres_register_ab.py 5 before=/tmp/paddock-main after=build/release/src/cli/paddock

Needs `scripts/build release paddock_load` (this tree's driver drives every build).
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import paddock_harness as h  # noqa: E402
import pg_harness  # noqa: E402

LOAD = os.path.join(ROOT, "build/release/bench/paddock_load")
HZ = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count()


def busy_jiffies():
    """CPU time the whole machine spent busy, in jiffies."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]  # minus idle, iowait


def proc_cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return int(parts[11]) + int(parts[12])
    except OSError:
        return 0


def tree(pid):
    """pid and its descendants."""
    out = [pid]
    try:
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    except OSError:
        kids = []
    for k in kids:
        out += tree(int(k))
    return out


def main():
    argv = sys.argv[1:]
    connections = 16
    if argv[:1] == ["--connections"]:
        connections, argv = int(argv[1]), argv[2:]
    if len(argv) < 2 or not os.path.exists(LOAD):
        sys.exit(__doc__)
    rounds = int(argv[0])
    variants = [a.split("=", 1) for a in argv[1:]]
    pg = pg_harness.Postgres()
    results = {name: [] for name, _ in variants}
    try:
        with tempfile.TemporaryDirectory(prefix="regbench-") as tmp:
            for r in range(rounds):
                for name, binary in variants:
                    os.environ["PADDOCK_BIN"] = os.path.abspath(binary)  # for h.Server
                    url = pg.database(f"b_{name}_{r}")
                    state = os.path.join(tmp, f"{name}-{r}")
                    os.makedirs(state)
                    cmd = [os.path.abspath(binary), "admin", "--state-dir", state, "--store", url]
                    acct = json.loads(subprocess.run(cmd + ["create-account"], check=True,
                                                     capture_output=True).stdout)["account"]
                    key = json.loads(subprocess.run(cmd + ["create-access-key", "--account", acct], check=True,
                                                    capture_output=True).stdout)
                    server = h.Server(state, ["--store", url]).start()
                    try:
                        args = [LOAD, "--endpoint", server.endpoint, "--access-key", key["accessKeyId"], "--secret-key",
                                key["secretAccessKey"], "--connections", str(connections), "--duration", "5s",
                                "--action", "register-task-definition", "--family", "bench-reg", "--warmup", "300",
                                "--json"]
                        pg_pids = tree(pg.proc.pid)
                        load0 = open("/proc/loadavg").read().split()[0]
                        b0, s0, p0 = busy_jiffies(), proc_cpu(server.proc.pid), sum(proc_cpu(p) for p in pg_pids)
                        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                        t0 = time.monotonic()
                        out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=300)
                        t1 = time.monotonic()
                        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                        pg_pids = set(pg_pids) | set(tree(pg.proc.pid))
                        b1, s1, p1 = busy_jiffies(), proc_cpu(server.proc.pid), sum(proc_cpu(p) for p in pg_pids)
                        res = json.loads(out.stdout.strip().splitlines()[-1])
                        loader = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
                        wall = t1 - t0
                        total = (b1 - b0) / HZ
                        srv = (s1 - s0) / HZ
                        pgc = (p1 - p0) / HZ
                        others = total - srv - pgc - loader
                        n = res["rps"] * wall  # requests, roughly (the warmup's 300 among them)
                        row = dict(rps=res["rps"], p99=res["p99_ms"], load=load0,
                                   busy=total / wall / CORES, others=others / wall,
                                   srv_us=srv / n * 1e6, pg_us=pgc / n * 1e6, errors=res["errors"])
                        results[name].append(row)
                        print(f"{name:6} r{r} {res['rps']:7,.0f} req/s p99 {res['p99_ms']:5.1f} ms  load {load0}  "
                              f"cpu busy {row['busy']*100:4.0f}%  others {row['others']:4.2f} cores  "
                              f"server {row['srv_us']:4.0f} us/req  pg {row['pg_us']:4.0f} us/req  "
                              f"errors {res['errors']}",
                              flush=True)
                    finally:
                        server.stop()
    finally:
        pg.stop()
    for name, rows in results.items():
        rps = sorted(x["rps"] for x in rows)
        print(f"{name}: median {rps[len(rps)//2]:,.0f}  all {[round(x) for x in rps]}")


if __name__ == "__main__":
    main()
