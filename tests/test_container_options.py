"""Container options end to end on the in-process Fargate agent with real containers: task volumes
shared between containers (mountPoints, readOnly, volumesFrom), the generated /etc/hosts,
resolv.conf and hostname (the ENI's private DNS name), linuxParameters (capabilities,
initProcessEnabled, tmpfs), ulimits, the task's memory bounding its containers together, and what
the agent refuses (ResourceInitializationError). What Fargate does not take (extraHosts, dnsServers,
dnsSearchDomains, sharedMemorySize) runs on an in-process EC2 instance, in bridge mode.
Needs root, crun, busybox-static and Debian's tini (scripts/setup)."""

import glob
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402

TINI = "/usr/bin/tini-static"
APPLETS = ("grep", "touch", "sleep", "head", "tail", "wc", "chown", "ping", "hostname", "tr", "id", "dd")


def skip_reason():
    return th.skip_reason(files=(TINI,))


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class ContainerOptions(h.PaddockTestCase):

    ACCOUNT_ID = "210000000005"  # the EC2 instance's owner (a plain `paddock server` has no bootstrap account)
    CONFIG = "[[ec2_instance]]\ncluster = \"opts\"\naccount = \"210000000005\"\ncpu = 1024\nmemory = 512\n"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        root = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"), applets=APPLETS)
        os.makedirs(os.path.join(root, "tmp"))
        image(cls.state_dir, "import-rootfs", root, "--name", "bb:opts", "--cmd", "sh")
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="opts")
        cls.task_ids = []

    # -- helpers ---------------------------------------------------------------------------------

    def run_task(self, family, containers, volumes=(), memory="512"):
        for c in containers:
            c.setdefault("image", "bb:opts")
            c.setdefault("stopTimeout", 2)
        td = self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
            memory=memory, containerDefinitions=containers, volumes=list(volumes))
        r = self.ecs.run_task(cluster="opts", taskDefinition=td["taskDefinition"]["taskDefinitionArn"],
                              launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.task_ids.append(arn.rsplit("/", 1)[1])
        return arn

    def wait_stopped(self, arn, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            task = self.ecs.describe_tasks(cluster="opts", tasks=[arn])["tasks"][0]
            if task["lastStatus"] == "STOPPED":
                return task
            if time.monotonic() > deadline:
                self.fail(f"task did not stop: {task} {self.server.log_tail()}")
            time.sleep(0.05)

    def logs(self, arn, container):
        r = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn.rsplit("/", 1)[1],
                            "--container", container], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def exit_codes(self, task):
        return {c["name"]: c.get("exitCode") for c in task["containers"]}

    # -- cases -----------------------------------------------------------------------------------

    def test_1_task_volume_shared_read_only_and_volumes_from(self):
        arn = self.run_task("opts-volumes", [
            {"name": "writer", "essential": False,
             "mountPoints": [{"sourceVolume": "shared", "containerPath": "/data"}],
             "command": ["sh", "-c", "echo from-writer > /data/msg"]},
            {"name": "reader",
             "mountPoints": [{"sourceVolume": "shared", "containerPath": "/data", "readOnly": True}],
             "command": ["sh", "-c", "while [ ! -s /data/msg ]; do sleep 0.05; done; cat /data/msg; "
                                     "touch /data/other && echo wrote || echo refused"]},
            {"name": "follower", "essential": False,
             "volumesFrom": [{"sourceContainer": "writer", "readOnly": True}],
             "command": ["sh", "-c", "while [ ! -s /data/msg ]; do sleep 0.05; done; cat /data/msg; "
                                     "touch /data/x && echo wrote || echo refused"]},
        ], volumes=[{"name": "shared"}])
        task = self.wait_stopped(arn)
        self.assertEqual(task["stopCode"], "EssentialContainerExited", task)
        self.assertEqual(self.exit_codes(task)["reader"], 0, task)
        self.assertEqual(self.exit_codes(task)["writer"], 0, task)
        reader = self.logs(arn, "reader")
        self.assertTrue(reader.startswith("from-writer\n"), reader)
        self.assertIn("Read-only file system", reader)
        self.assertTrue(reader.endswith("refused\n"), reader)
        follower = self.logs(arn, "follower")
        self.assertTrue(follower.startswith("from-writer\n"), follower)
        self.assertIn("refused\n", follower)
        # The volume directory went with the task.
        self.assertFalse(os.path.exists(os.path.join(self.state_dir, "tasks", arn.rsplit("/", 1)[1])))

    def test_2_etc_files_capabilities_init_tmpfs_shm_and_ulimits(self):
        probe = ("cat /etc/hosts; echo ==; cat /etc/resolv.conf; echo ==; hostname; cat /etc/hostname; echo ==; "
                 "tr '\\0' ' ' < /proc/1/cmdline; echo; echo ==; ulimit -n; ulimit -Hn; echo ==; "
                 "grep -E ' /scratch | /dev/shm ' /proc/mounts; echo ==; "
                 "touch /tmp/f; chown 1000 /tmp/f && echo chowned || echo chown-refused; "
                 "ping -c 1 -W 1 127.0.0.1 >/dev/null 2>&1 && echo pinged || echo ping-refused")
        arn = self.run_task("opts-probe", [{
            "name": "probe", "command": ["sh", "-c", probe],
            "linuxParameters": {"capabilities": {"drop": ["CHOWN", "NET_RAW"]}, "initProcessEnabled": True,
                                "tmpfs": [{"containerPath": "/scratch", "size": 4, "mountOptions": ["noexec"]}]},
            "ulimits": [{"name": "nofile", "softLimit": 1234, "hardLimit": 2345}]}])
        plain = self.run_task("opts-plain", [{"name": "plain", "command": ["sh", "-c", probe]}])
        task = self.wait_stopped(arn)
        plain_task = self.wait_stopped(plain)
        self.assertEqual(self.exit_codes(task)["probe"], 0, task)
        details = {d["name"]: d["value"] for d in task["attachments"][0]["details"]}
        ip, dns_name = details["privateIPv4Address"], details["privateDnsName"]

        hosts, resolv, hostname, cmdline, ulimits, mounts, caps = self.logs(arn, "probe").split("==\n")
        self.assertIn("127.0.0.1\tlocalhost\n", hosts)
        self.assertTrue(hosts.endswith(f"{ip}\t{dns_name} {dns_name.split('.')[0]}\n"), hosts)
        self.assertIn("search ", resolv)
        self.assertEqual(hostname, f"{dns_name}\n{dns_name}\n")
        self.assertTrue(cmdline.startswith("/dev/init -- sh -c "), cmdline)
        self.assertEqual(ulimits, "1234\n2345\n")
        self.assertIn("tmpfs /scratch tmpfs rw,nosuid,nodev,noexec,relatime,size=4096k", mounts)
        self.assertIn("/dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k", mounts)
        self.assertEqual(caps, "chown: /tmp/f: Operation not permitted\nchown-refused\nping-refused\n")

        # The same probe without the options: defaults (Docker's caps, sh as PID 1, the host's
        # resolvers minus loopback ones, the region's search domain).
        self.assertEqual(self.exit_codes(plain_task)["plain"], 0, plain_task)
        hosts, resolv, hostname, cmdline, _, mounts, caps = self.logs(plain, "plain").split("==\n")
        self.assertIn("search ", resolv)
        self.assertTrue(cmdline.startswith("sh -c "), cmdline)
        self.assertNotIn("/scratch", mounts)
        self.assertIn("/dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k", mounts)
        self.assertEqual(caps, "chowned\npinged\n")

    def test_3_task_memory_bounds_its_containers_together(self):
        # Each container alone fits the task's 512 MiB; together they do not. dd holds its 300 MiB
        # buffer while its write to the pipe blocks ("hold" marks it once the buffer is full).
        arn = self.run_task("opts-memory", [
            {"name": "hold", "mountPoints": [{"sourceVolume": "sync", "containerPath": "/v"}],
             "command": ["sh", "-c", "dd if=/dev/zero bs=300M count=1 2>/dev/null | "
                                     "(head -c 1 >/dev/null; touch /v/held; echo held; sleep 60)"]},
            {"name": "grow", "mountPoints": [{"sourceVolume": "sync", "containerPath": "/v"}],
             "command": ["sh", "-c", "while [ ! -e /v/held ]; do sleep 0.05; done; echo growing; "
                                     "dd if=/dev/zero of=/dev/null bs=300M count=1"]},
        ], volumes=[{"name": "sync"}])
        task = self.wait_stopped(arn)
        reasons = [c.get("reason", "") for c in task["containers"]]
        self.assertTrue(any(r.startswith("OutOfMemoryError") for r in reasons), task)
        self.assertIn("held", self.logs(arn, "hold"))  # "hold" got its 300 MiB first
        self.assertIn("growing", self.logs(arn, "grow"))

    def test_4_what_the_agent_cannot_provide_fails_the_task(self):
        cases = [
            ({"name": "a", "command": ["true"],
              "environmentFiles": [{"value": "arn:aws:s3:::bucket/app.env", "type": "s3"}]}, [],
             "ResourceInitializationError: container 'a': failed to download env files: environmentFiles from "
             "Amazon S3 (arn:aws:s3:::bucket/app.env) cannot be fetched"),
            ({"name": "a", "command": ["true"]}, [{"name": "e", "efsVolumeConfiguration": {"fileSystemId": "fs-1"}}],
             "ResourceInitializationError: volume 'e': Amazon EFS volumes (efsVolumeConfiguration) are not "
             "supported"),
        ]
        arns = [self.run_task(f"opts-refused-{i}", [c], volumes=v) for i, (c, v, _) in enumerate(cases)]
        for arn, (_, _, reason) in zip(arns, cases):
            task = self.wait_stopped(arn)
            self.assertEqual(task["stopCode"], "TaskFailedToStart", task)
            self.assertTrue(task["stoppedReason"].startswith(reason), task["stoppedReason"])
            self.assertNotIn("exitCode", task["containers"][0])  # never started

    def test_5_etc_files_and_shm_on_an_ec2_instance(self):
        # Fargate refuses these options at registration (and awsvpc refuses extraHosts and
        # dnsServers): they are an EC2 task's, here in bridge mode on the in-process instance.
        deadline = time.monotonic() + 15
        while not self.ecs.list_container_instances(cluster="opts")["containerInstanceArns"]:
            if time.monotonic() > deadline:
                self.fail(f"the in-process instance did not register: {self.server.log_tail()}")
            time.sleep(0.1)
        probe = "cat /etc/hosts; echo ==; cat /etc/resolv.conf; echo ==; grep ' /dev/shm ' /proc/mounts"
        td = self.ecs.register_task_definition(
            family="opts-etc", networkMode="bridge", requiresCompatibilities=["EC2"], containerDefinitions=[{
                "name": "probe", "image": "bb:opts", "memory": 64, "stopTimeout": 2, "command": ["sh", "-c", probe],
                "extraHosts": [{"hostname": "db.internal", "ipAddress": "10.99.0.7"}],
                "dnsServers": ["10.99.0.2"], "dnsSearchDomains": ["corp.example"],
                "linuxParameters": {"sharedMemorySize": 32}}])["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="opts", taskDefinition=td, launchType="EC2")
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.task_ids.append(arn.rsplit("/", 1)[1])
        task = self.wait_stopped(arn)
        self.assertEqual(self.exit_codes(task)["probe"], 0, task)
        hosts, resolv, mounts = self.logs(arn, "probe").split("==\n")
        self.assertIn("127.0.0.1\tlocalhost\n", hosts)
        self.assertTrue(hosts.endswith("10.99.0.7\tdb.internal\n"), hosts)
        self.assertEqual(resolv, "nameserver 10.99.0.2\nsearch corp.example\n")
        self.assertIn("/dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=32768k", mounts)

    def test_9_nothing_is_left_behind(self):
        # Runs last (by name): every task of this class is STOPPED.
        tasks_dir = os.path.join(self.state_dir, "tasks")
        if os.path.isdir(tasks_dir):
            self.assertEqual(os.listdir(tasks_dir), [])
        for task_id in self.task_ids:
            self.assertEqual(glob.glob(f"/sys/fs/cgroup/*/paddock/*/{task_id}"), [], task_id)


if __name__ == "__main__":
    unittest.main()
