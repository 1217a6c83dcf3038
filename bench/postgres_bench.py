#!/usr/bin/env python3
"""The API's throughput with its store on PostgreSQL (issue 16): RegisterTaskDefinition and
DescribeTaskDefinition through one `paddock server --store postgres://…`, and DescribeTaskDefinition
through two servers on the same database at once (their sum against one), with the same driver
(`paddock_load`, SigV4, 16 keep-alive connections) and the same run on SQLite beside it. PostgreSQL is
Debian's, started by the bench on a temp dir (tests/pg_harness.py: fsync on, Unix socket).
Targets (issue 16): RegisterTaskDefinition >= 3,000/s and DescribeTaskDefinition >= 20,000/s per
server; two servers together exceed one.

    python3 bench/postgres_bench.py [--duration 10s] [--connections 16]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import paddock_harness as h  # noqa: E402
import pg_harness  # noqa: E402

LOAD = os.path.join(ROOT, "build/release/bench/paddock_load")


def load(endpoint, key, secret, args, action, family, connections=None):
    out = subprocess.run([LOAD, "--endpoint", endpoint, "--access-key", key, "--secret-key", secret,
                          "--connections", str(connections or args.connections), "--duration", args.duration,
                          "--action", action, "--family", family, "--warmup", "300", "--json"],
                         check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(label, r):
    print(f"{label:48} {r['rps']:9,.0f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  "
          f"errors {r['errors']}", flush=True)
    return r["rps"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--duration", default="10s")
    p.add_argument("--connections", type=int, default=16)
    args = p.parse_args()
    if not os.path.exists(LOAD):
        sys.exit(f"{LOAD} is missing: scripts/build release paddock paddock_load")
    pg = pg_harness.Postgres()
    try:
        with tempfile.TemporaryDirectory(prefix="paddock-pg-bench-") as tmp:
            url = pg.database("bench")
            results = {}
            for store, extra in (("sqlite", []), ("postgres", ["--store", url])):
                state = os.path.join(tmp, store)
                os.makedirs(state)
                cmd = [h.paddock_bin(), "admin", "--state-dir", state] + extra
                acct = json.loads(subprocess.run(cmd + ["create-account"], check=True, capture_output=True).stdout)["account"]
                key = json.loads(subprocess.run(cmd + ["create-access-key", "--account", acct], check=True,
                                                capture_output=True).stdout)
                kid, secret = key["accessKeyId"], key["secretAccessKey"]
                servers = [h.Server(state, extra).start()]
                try:
                    results[store, "register"] = show(f"{store}: RegisterTaskDefinition",
                                                      load(servers[0].endpoint, kid, secret, args,
                                                           "register-task-definition", "bench-reg"))
                    results[store, "describe"] = show(f"{store}: DescribeTaskDefinition",
                                                      load(servers[0].endpoint, kid, secret, args,
                                                           "describe-task-definition", "bench-desc"))
                    if store == "postgres":
                        # A second server on the same database (its own state dir for its node files).
                        other = os.path.join(tmp, "postgres-2")
                        os.makedirs(other)
                        h.share_node_key(state, other)  # one node key per store (docs/scaling.md)
                        servers.append(h.Server(other, extra).start())
                        both = [None, None]

                        def run(i):
                            both[i] = load(servers[i].endpoint, kid, secret, args, "describe-task-definition",
                                           "bench-desc", connections=args.connections // 2)
                        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
                        for t in threads:
                            t.start()
                        for t in threads:
                            t.join()
                        total = sum(r["rps"] for r in both)
                        print(f"{'postgres: DescribeTaskDefinition, two servers':48} {total:9,.0f} req/s  "
                              f"({both[0]['rps']:,.0f} + {both[1]['rps']:,.0f}; "
                              f"{args.connections // 2} connections each)", flush=True)
                        results[store, "describe-two"] = total
                finally:
                    for s in servers:
                        s.stop()
            print(json.dumps({f"{k[0]}:{k[1]}": round(v) for k, v in results.items()}))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
