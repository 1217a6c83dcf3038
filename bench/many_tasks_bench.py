#!/usr/bin/env python3
"""Many concurrently running tasks on one node: starts --tasks busybox tasks (RunTask count=10 at
a time), waits until all are RUNNING, reports the time that took and the Paddock process's memory
per running task (VmRSS growth / tasks; the containers' own memory is charged to their cgroups, not
to Paddock), then stops them all and times how long until every one is STOPPED.
Needs root, crun and busybox-static.

    sudo python3 bench/many_tasks_bench.py [--tasks 200]
"""
import argparse
import time

from procfs import rss_kib
from task_bench_node import BenchNode


def statuses(ecs, arns):
    out = {}
    for i in range(0, len(arns), 100):
        for t in ecs.describe_tasks(tasks=arns[i:i + 100])["tasks"]:
            out[t["taskArn"]] = t["lastStatus"]
    return out


def wait_all(ecs, arns, status, deadline_s):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        s = statuses(ecs, arns)
        if all(v == status for v in s.values()) and len(s) == len(arns):
            return
        bad = [a for a, v in s.items() if v == "STOPPED" and status != "STOPPED"]
        if bad:
            raise RuntimeError(f"{len(bad)} tasks stopped early")
        time.sleep(0.05)
    raise RuntimeError(f"not all tasks reached {status} in {deadline_s} s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    with BenchNode(family="many") as node:
        ecs = node.ecs
        before = rss_kib(node.server.proc.pid)
        t0 = time.monotonic()
        arns = []
        while len(arns) < args.tasks:
            arns += node.run(count=min(10, args.tasks - len(arns)))
        wait_all(ecs, arns, "RUNNING", 300)
        t1 = time.monotonic()
        after = rss_kib(node.server.proc.pid)
        print(f"{len(arns)} tasks RUNNING in {t1 - t0:.1f} s ({len(arns) / (t1 - t0):.1f} tasks/s)")
        print(f"paddock RSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB: "
              f"{(after - before) / len(arns):.0f} KiB per running task")
        t2 = time.monotonic()
        for arn in arns:
            ecs.stop_task(task=arn)
        wait_all(ecs, arns, "STOPPED", 300)
        t3 = time.monotonic()
        print(f"all {len(arns)} STOPPED {t3 - t2:.1f} s after the first StopTask")


if __name__ == "__main__":
    main()
