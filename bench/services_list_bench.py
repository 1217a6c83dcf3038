#!/usr/bin/env python3
"""A deploy controller's full read of a big cluster on a local Paddock.

Starts `paddock server` like bench/service_rollout_bench.py ([scheduler] settle 0, resync every 2 s),
creates --services Fargate services in one cluster (default 5,000, the AWS quota per cluster), all
with desiredCount 0 except --running of them (default 50) with one real busybox task each, and waits
until those run. Then times, --rounds times, the read a reconcile tick does: ListServices over every
page (maxResults 100) and DescribeServices for all of them in batches of 10 — one connection, calls
one after another (the `sequential` figure), the same spread over --concurrency connections, and the
same sequential read as raw signed HTTP without boto3 (botocore's response parsing costs more than the
server's answer). Each figure also gives the server process's CPU time (/proc) during the read.
Target: <= 2 s for the sequential read of 5,000. Also reports the scheduler's CPU time for one
periodic resync over all services if the server logs it ("scheduler resync: N services, X ms CPU"),
else n/a. Needs root, crun and busybox-static.

    sudo python3 bench/services_list_bench.py [--services 5000] [--running 50] [--rounds 5]
"""
import argparse
import concurrent.futures
import json
import os
import re
import statistics
import sys
import time

from service_rollout_bench import ServiceNode, pct

import paddock_harness as h

RESYNC = re.compile(r"scheduler resync: (\d+) services, ([\d.]+) ms CPU")


def list_all(ecs):
    arns, token = [], None
    pages = 0
    while True:
        kw = {"nextToken": token} if token else {}
        r = ecs.list_services(maxResults=100, **kw)
        pages += 1
        arns += r["serviceArns"]
        token = r.get("nextToken")
        if not token:
            return arns, pages


def describe_batch(ecs, batch):
    r = ecs.describe_services(services=batch)
    if r["failures"]:
        raise RuntimeError(f"DescribeServices failures: {r['failures'][:3]}")
    return r["services"]


def cpu_ms(pid):
    """User + system CPU time of process `pid` so far, in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def raw_read(conn):
    """The same full read over one keep-alive connection without boto3 (SigV4 signing by botocore,
    JSON by the standard library): what is left is closer to the server's own time."""
    t0 = time.monotonic()
    arns, token = [], None
    while True:
        req = {"maxResults": 100}
        if token:
            req["nextToken"] = token
        status, body = conn.call("ListServices", req)
        if status != 200:
            raise RuntimeError(f"ListServices {status}: {body[:200]!r}")
        r = json.loads(body)
        arns += r["serviceArns"]
        token = r.get("nextToken")
        if not token:
            break
    n = 0
    for i in range(0, len(arns), 10):
        status, body = conn.call("DescribeServices", {"services": arns[i:i + 10]})
        if status != 200:
            raise RuntimeError(f"DescribeServices {status}: {body[:200]!r}")
        n += len(json.loads(body)["services"])
    return time.monotonic() - t0, n


def full_read(ecs, clients=None):
    t0 = time.monotonic()
    arns, pages = list_all(ecs)
    batches = [arns[i:i + 10] for i in range(0, len(arns), 10)]
    if clients is None:
        services = [s for b in batches for s in describe_batch(ecs, b)]
    else:
        with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
            futs = [pool.submit(describe_batch, clients[i % len(clients)], b) for i, b in enumerate(batches)]
            services = [s for f in futs for s in f.result()]
    return time.monotonic() - t0, len(arns), pages, len(batches), services


def resync_lines(node):
    lines = []
    try:
        with open(node.server._log_path, "rb") as f:
            lines += f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        pass
    lines += list(node.server.stdout_lines)
    return [(int(m.group(1)), float(m.group(2))) for m in map(RESYNC.search, lines) if m]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--services", type=int, default=5000)
    parser.add_argument("--running", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with ServiceNode() as node:
        ecs = node.ecs
        td = node.register("listbench", 1)
        net = node.network()
        t0 = time.monotonic()
        for i in range(args.services):
            ecs.create_service(serviceName=f"svc-{i:05d}", taskDefinition=td, launchType="FARGATE",
                               desiredCount=1 if i < args.running else 0, networkConfiguration=net)
        created_s = time.monotonic() - t0
        print(f"created {args.services} services ({args.running} with one task) in {created_s:.1f} s "
              f"({args.services / created_s:.0f}/s)", flush=True)
        deadline = time.monotonic() + 300
        while True:
            running = [a for page in ecs.get_paginator("list_tasks").paginate() for a in page["taskArns"]]
            live = []
            for i in range(0, len(running), 100):
                live += [t for t in ecs.describe_tasks(tasks=running[i:i + 100])["tasks"] if t["lastStatus"] == "RUNNING"]
            if len(live) >= args.running:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(live)} of {args.running} tasks RUNNING")
            time.sleep(0.2)
        print(f"{len(live)} tasks RUNNING after {time.monotonic() - t0:.1f} s", flush=True)

        clients = [h.ecs_client(node.server.endpoint, node.key, node.secret, validate=False)
                   for _ in range(args.concurrency)]
        results = {}
        pid = node.server.proc.pid
        for mode, cl in (("sequential", None), (f"{args.concurrency} connections", clients)):
            times, server_cpu = [], []
            for _ in range(args.rounds):
                c0 = cpu_ms(pid)
                elapsed, n, pages, batches, services = full_read(ecs, cl)
                server_cpu.append(cpu_ms(pid) - c0)
                if n != args.services or len(services) != n:
                    raise RuntimeError(f"read {n} arns / {len(services)} services, expected {args.services}")
                times.append(elapsed * 1000)
            results[mode] = times
            print(f"full read ({mode:14}): {n} services, {pages} ListServices pages + {batches} DescribeServices "
                  f"calls: p50 {statistics.median(times):7.0f} ms  max {max(times):7.0f} ms  "
                  f"(n={len(times)}); server CPU p50 {statistics.median(server_cpu):.0f} ms", flush=True)
        conn = h.RawConn(node.server.port, h.RawSigner(node.key, node.secret))
        times, server_cpu = [], []
        for _ in range(args.rounds):
            c0 = cpu_ms(pid)
            elapsed, n = raw_read(conn)
            server_cpu.append(cpu_ms(pid) - c0)
            if n != args.services:
                raise RuntimeError(f"raw read saw {n} services")
            times.append(elapsed * 1000)
        conn.close()
        print(f"full read (raw HTTP, 1 conn): p50 {statistics.median(times):7.0f} ms  max {max(times):7.0f} ms  "
              f"(n={len(times)}); server CPU p50 {statistics.median(server_cpu):.0f} ms", flush=True)
        seq = statistics.median(results["sequential"])
        raw = statistics.median(times)
        print(f"target: full read of {args.services} services <= 2 s: boto3 sequential p50 {seq / 1000:.2f} s "
              f"({'met' if seq <= 2000 else 'NOT met'}), raw HTTP p50 {raw / 1000:.2f} s "
              f"({'met' if raw <= 2000 else 'NOT met'})")

        # The scheduler's periodic resync: wait for one that saw every service.
        deadline = time.monotonic() + 15
        seen = []
        while time.monotonic() < deadline:
            seen = [x for x in resync_lines(node) if x[0] >= args.services]
            if seen:
                break
            time.sleep(0.5)
        if seen:
            cpu = [ms for _, ms in seen[-10:]]
            print(f"scheduler resync over {seen[-1][0]} services: CPU p50 {statistics.median(cpu):.1f} ms, "
                  f"max {max(cpu):.1f} ms (last {len(cpu)} resyncs in the server log)")
        else:
            other = resync_lines(node)
            print("scheduler resync CPU: n/a" + (f" (log lines seen only for fewer services: {other[-3:]})" if other
                                                 else " (the server logs no 'scheduler resync:' line)"))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
