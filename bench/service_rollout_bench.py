#!/usr/bin/env python3
"""Rolling-update latency of a service of real busybox tasks on a local Paddock.

Starts `paddock server` (release build unless PADDOCK_BIN says otherwise) on 127.0.0.1:0 in a temp
state dir with the default [scheduler] settle_seconds (40 s, for tasks WITHOUT health checks), imports
a busybox rootfs whose command exits promptly on SIGTERM, creates a Fargate service of --tasks tasks
(default 10, the default 100 %/200 % bounds) whose container has a health check (`kill -0 1` every
second: HEALTHY about a second after start; AWS's minimum interval is 5 s, Paddock accepts 1) and
waits for its steady state. Then, --rounds times, UpdateService to the other of two revisions and
time from the UpdateService call to the first DescribeServices that shows the new deployment PRIMARY
with rolloutState COMPLETED (DescribeServices is polled every 5 ms), and on to the old deployment's
last task STOPPED. Prints p50/p90/max; the target is rollout <= 5 s (issue 10: health-checked tasks
are healthy once HEALTHY, with no settle wait). Needs root, crun and busybox-static.

    sudo python3 bench/service_rollout_bench.py [--tasks 10] [--rounds 10]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("PADDOCK_BIN", os.path.join(ROOT, "build/release/src/cli/paddock"))

import boto3  # noqa: E402

import paddock_harness as h  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

# The node's Fargate capacity (the host's by default) must not throttle the rollout being measured.
# (services_list_bench.py's tasks have no health check: it keeps settle 0.)
CONFIG = ("[scheduler]\nsettle_seconds = 0\nresync_seconds = 2\nbackoff_base_seconds = 1\nbackoff_cap_seconds = 4\n"
          "[fargate]\novercommit = 100\n")
# The rollout's: the default settle time (it must not matter for health-checked tasks).
ROLLOUT_CONFIG = "[scheduler]\nresync_seconds = 2\n[fargate]\novercommit = 100\n"
HEALTH_CHECK = {"command": ["CMD-SHELL", "kill -0 1"], "interval": 1, "timeout": 2, "retries": 3}
CMD = ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


class ServiceNode:
    """paddock server with the [scheduler] settings above, an account, the image, a cluster."""

    def __init__(self, config=CONFIG):
        self.config = config
        self.tmp = tempfile.mkdtemp(prefix="paddock-svc-bench-")
        self.server = None

    def __enter__(self):
        try:
            self.state = os.path.join(self.tmp, "state")
            os.makedirs(self.state)
            _, key, secret = h.create_account(self.state)
            self.key, self.secret = key, secret
            root = busybox_rootfs(os.path.join(self.tmp, "rootfs"), ("sleep",))
            image(self.state, "import-rootfs", root, "--name", "busybox:bench", "--cmd", json.dumps(CMD))
            config = os.path.join(self.tmp, "paddock.toml")
            with open(config, "w") as f:
                f.write(self.config)
            self.server = h.Server(self.state, ("--config", config)).start()
            self.ecs = h.ecs_client(self.server.endpoint, key, secret, validate=False)
            ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=key, aws_secret_access_key=secret)
            self.subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]]
            self.ecs.create_cluster()
            return self
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def register(self, family, version, health_check=None):
        container = {"name": "c", "image": "busybox:bench", "stopTimeout": 5,
                     "environment": [{"name": "VERSION", "value": str(version)}]}
        if health_check is not None:
            container["healthCheck"] = health_check
        return self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[container],
        )["taskDefinition"]["taskDefinitionArn"]

    def network(self):
        return {"awsvpcConfiguration": {"subnets": self.subnets}}

    def stop_everything(self):
        """Deletes every service (force) and waits until no task runs: no container outlives the bench."""
        if self.server is None or not self.server.alive():
            return
        arns = [a for page in self.ecs.get_paginator("list_services").paginate() for a in page["serviceArns"]]
        for i in range(0, len(arns), 10):
            for svc in self.ecs.describe_services(services=arns[i:i + 10])["services"]:
                if svc["desiredCount"] or svc["runningCount"] or svc["pendingCount"]:
                    self.ecs.delete_service(service=svc["serviceArn"], force=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            arns = [a for page in self.ecs.get_paginator("list_tasks").paginate() for a in page["taskArns"]]
            arns += [a for page in self.ecs.get_paginator("list_tasks").paginate(desiredStatus="STOPPED")
                     for a in page["taskArns"]]
            live = []
            for i in range(0, len(arns), 100):
                live += [t for t in self.ecs.describe_tasks(tasks=arns[i:i + 100])["tasks"]
                         if t["lastStatus"] != "STOPPED"]
            if not live:
                return
            time.sleep(0.2)
        print(f"warning: {len(live)} tasks still running", file=sys.stderr)

    def __exit__(self, *exc):
        if self.server is not None:
            try:
                self.stop_everything()
            finally:
                self.server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False


def wait(ecs, pred, what, deadline_s=120, interval=0.005):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        svc = ecs.describe_services(services=["bench"])["services"][0]
        if pred(svc):
            return svc
        time.sleep(interval)
    raise RuntimeError(f"service never {what}: {svc['deployments']} {[e['message'] for e in svc['events'][:5]]}")


def completed(svc, dep_id, n):
    d = svc["deployments"]
    return (d[0]["id"] == dep_id and d[0].get("rolloutState") == "COMPLETED" and d[0]["runningCount"] == n)


def check_healthy(ecs, n):
    """Every RUNNING task reports HEALTHY: the rollout really went through the health checks."""
    arns = [a for page in ecs.get_paginator("list_tasks").paginate(desiredStatus="RUNNING") for a in page["taskArns"]]
    health = [t.get("healthStatus") for i in range(0, len(arns), 100)
              for t in ecs.describe_tasks(tasks=arns[i:i + 100])["tasks"] if t["lastStatus"] == "RUNNING"]
    if health.count("HEALTHY") < n:
        raise RuntimeError(f"expected {n} HEALTHY tasks, got {health}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    n = args.tasks
    with ServiceNode(ROLLOUT_CONFIG) as node:
        ecs = node.ecs
        tds = [node.register("bench", 1, HEALTH_CHECK), node.register("bench", 2, HEALTH_CHECK)]
        t0 = time.monotonic()
        svc = ecs.create_service(serviceName="bench", taskDefinition=tds[0], desiredCount=n, launchType="FARGATE",
                                 networkConfiguration=node.network())["service"]
        first = svc["deployments"][0]["id"]
        wait(ecs, lambda s: completed(s, first, n) and len(s["deployments"]) == 1, "stable")
        print(f"CreateService -> {n} tasks COMPLETED: {(time.monotonic() - t0) * 1000:.0f} ms")
        check_healthy(ecs, n)
        rollout_ms, drained_ms = [], []
        for r in range(args.rounds):
            td = tds[(r + 1) % 2]
            t0 = time.monotonic()
            dep = ecs.update_service(service="bench", taskDefinition=td)["service"]["deployments"][0]["id"]
            wait(ecs, lambda s: completed(s, dep, n), "COMPLETED")
            t1 = time.monotonic()
            wait(ecs, lambda s: len(s["deployments"]) == 1 and s["runningCount"] == n, "down to one deployment")
            old = [a for page in ecs.get_paginator("list_tasks").paginate(desiredStatus="STOPPED") for a in page["taskArns"]]
            end = time.monotonic() + 60
            while True:
                live = [t for i in range(0, len(old), 100)
                        for t in ecs.describe_tasks(tasks=old[i:i + 100])["tasks"] if t["lastStatus"] != "STOPPED"]
                if not live or time.monotonic() > end:
                    break
                time.sleep(0.005)
            t2 = time.monotonic()
            check_healthy(ecs, n)
            rollout_ms.append((t1 - t0) * 1000)
            drained_ms.append((t2 - t0) * 1000)
            print(f"round {r + 1:2}: COMPLETED {rollout_ms[-1]:7.0f} ms, old tasks STOPPED {drained_ms[-1]:7.0f} ms",
                  flush=True)
        for name, values in (("UpdateService -> COMPLETED", rollout_ms), ("UpdateService -> old STOPPED", drained_ms)):
            print(f"{name:30} n={len(values):3}  p50 {statistics.median(values):7.0f} ms  "
                  f"p90 {pct(values, 90):7.0f} ms  max {max(values):7.0f} ms")
        verdict = "met" if max(rollout_ms) <= 5000 else "NOT met"
        print(f"target: {n}-task rollout COMPLETED <= 5 s: {verdict} (max {max(rollout_ms) / 1000:.2f} s)")


if __name__ == "__main__":
    main()
