"""A Paddock node for the task benchmarks: `paddock server` on 127.0.0.1:0 in a temp state dir,
an account, a busybox image whose command exits promptly on SIGTERM, a cluster and an awsvpc
Fargate task definition. Needs root, crun and busybox-static.

    with BenchNode(family="bench") as node:
        node.ecs.run_task(taskDefinition="bench", ...)
"""
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("PADDOCK_BIN", os.path.join(ROOT, "build/release/src/cli/paddock"))

import boto3  # noqa: E402

import paddock_harness as h  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402


class BenchNode:
    def __init__(self, family):
        self.family = family
        self.tmp = tempfile.mkdtemp(prefix="paddock-task-bench-")
        self.server = None

    def __enter__(self):
        try:
            state = os.path.join(self.tmp, "state")
            os.makedirs(state)
            _, key, secret = h.create_account(state)
            root = os.path.join(self.tmp, "rootfs")
            busybox_rootfs(root)
            os.symlink("busybox", os.path.join(root, "bin", "sleep"))
            image(state, "import-rootfs", root, "--name", "busybox:bench",
                  "--cmd", '["/bin/sh","-c","trap \'exit 0\' TERM; sleep 3600 & wait"]')
            # Admission still runs for every task, but the host's Fargate capacity (default 1024
            # per core) must not refuse the hundreds of small tasks the benchmarks start.
            config = os.path.join(self.tmp, "paddock.toml")
            with open(config, "w") as f:
                f.write("[fargate]\novercommit = 100\n")
            self.server = h.Server(state, ("--config", config))
            self.server.start()
            self.ecs = h.ecs_client(self.server.endpoint, key, secret, validate=False)
            ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=key, aws_secret_access_key=secret)
            self.subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]]
            self.ecs.create_cluster()
            self.ecs.register_task_definition(
                family=self.family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
                memory="512", containerDefinitions=[{"name": "c", "image": "busybox:bench", "stopTimeout": 5}])
            return self
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def run(self, count=1, subnets=None):
        """RunTask of `count` tasks; returns their ARNs (raises on failures[])."""
        r = self.ecs.run_task(taskDefinition=self.family, launchType="FARGATE", count=count,
                              networkConfiguration={"awsvpcConfiguration": {"subnets": subnets or self.subnets}})
        if r["failures"]:
            raise RuntimeError(f"RunTask failures: {r['failures']}")
        return [t["taskArn"] for t in r["tasks"]]

    def __exit__(self, *exc):
        if self.server is not None:
            self.server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False
