#!/usr/bin/env python3
"""RunTask -> RUNNING and StopTask -> STOPPED latency of real busybox tasks on a local Paddock.

Starts `paddock server` (release build) on 127.0.0.1:0 in a temp state dir, imports a busybox
rootfs whose command exits promptly on SIGTERM, and runs N tasks one after another: each is timed
from the RunTask call to the first DescribeTasks that reports RUNNING, then from the StopTask call
to the first that reports STOPPED (DescribeTasks is polled every 2 ms, so the figures include up
to 2 ms of polling granularity). Prints p50/p90/p99/max. Needs root, crun and busybox-static.

    sudo python3 bench/run_task_bench.py [--tasks 50]
"""
import argparse
import statistics
import time

from task_bench_node import BenchNode


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def wait_status(ecs, arn, status, deadline_s=30):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        t = ecs.describe_tasks(tasks=[arn])["tasks"][0]
        if t["lastStatus"] == status:
            return t
        if t["lastStatus"] == "STOPPED" and status != "STOPPED":
            raise RuntimeError(f"task stopped: {t.get('stoppedReason')}")
        time.sleep(0.002)
    raise RuntimeError(f"{arn} did not reach {status}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=50)
    args = parser.parse_args()
    with BenchNode(family="bench") as node:
        run_ms, stop_ms = [], []
        for _ in range(args.tasks):
            t0 = time.monotonic()
            arn = node.run(subnets=node.subnets[:1])[0]
            wait_status(node.ecs, arn, "RUNNING")
            t1 = time.monotonic()
            node.ecs.stop_task(task=arn)
            wait_status(node.ecs, arn, "STOPPED")
            t2 = time.monotonic()
            run_ms.append((t1 - t0) * 1000)
            stop_ms.append((t2 - t1) * 1000)
        for name, values in (("RunTask -> RUNNING", run_ms), ("StopTask -> STOPPED", stop_ms)):
            print(f"{name:22} n={len(values):3}  p50 {statistics.median(values):7.1f} ms  "
                  f"p90 {pct(values, 90):7.1f} ms  p99 {pct(values, 99):7.1f} ms  max {max(values):7.1f} ms")


if __name__ == "__main__":
    main()
