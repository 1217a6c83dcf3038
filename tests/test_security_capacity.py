"""Finding 7 of the 2026-12 security research: Fargate had no capacity admission, so one tenant's
`run-task --count 10` of 4 vCPU / 30 GiB tasks all reached RUNNING on a 2-core host. Now the node's
Fargate capacity ([fargate] cpu/memory) is reserved per task like an EC2 instance's, a run that does
not fit gets ECS's failures[] entry (no arn, "Capacity is unavailable at this time. ..."), and each
account's Fargate vCPUs are bounded by [quotas] fargate_vcpus_per_account ("You’ve reached the
limit on the number of vCPUs you can run concurrently"). Real busybox tasks on the in-process
Fargate agent (docs/contracts/task.md, "Fargate capacity"). Needs root, crun and busybox-static."""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402

CAPACITY = "Capacity is unavailable at this time. Please try again later or in a different availability zone"
VCPU_LIMIT = "You\u2019ve reached the limit on the number of vCPUs you can run concurrently"
CLUSTER = "cap"


class Tenant:
    """One account's clients and default subnet on the node of `node` (a CapacityTestCase class)."""

    def __init__(self, node, key_id, secret):
        self.node = node
        self.key_id, self.secret = key_id, secret
        self.connect()

    def connect(self):
        endpoint = self.node.server.endpoint
        self.ecs = h.ecs_client(endpoint, self.key_id, self.secret)
        ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        self.subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]

    def setup(self):
        self.ecs.create_cluster(clusterName=CLUSTER)
        for family, cpu, memory in (("small", "256", "512"), ("huge", "4096", "30720")):
            self.ecs.register_task_definition(
                family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu=cpu, memory=memory,
                containerDefinitions=[{"name": "web", "image": "busybox:cap", "stopTimeout": 1}])

    def run(self, family="small", count=1):
        return self.ecs.run_task(cluster=CLUSTER, taskDefinition=family, launchType="FARGATE", count=count,
                                 networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})

    def stop_all(self, timeout=60):
        """Deletes the account's services and stops every task until none is left running or
        stopping (a service's replacements included); False on timeout."""
        for arn in self.ecs.list_services(cluster=CLUSTER)["serviceArns"]:
            self.ecs.delete_service(cluster=CLUSTER, service=arn, force=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = self.ecs.list_tasks(cluster=CLUSTER)["taskArns"]
            for arn in running:
                self.ecs.stop_task(cluster=CLUSTER, task=arn)
            stopping = self.ecs.list_tasks(cluster=CLUSTER, desiredStatus="STOPPED")["taskArns"]
            down = all(t["lastStatus"] == "STOPPED"
                       for i in range(0, len(stopping), 100)
                       for t in self.ecs.describe_tasks(cluster=CLUSTER, tasks=stopping[i:i + 100])["tasks"])
            if not running and down:
                return True
            time.sleep(0.1)
        return False


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class CapacityTestCase(unittest.TestCase):
    """A server with CONFIG and the accounts of TENANTS, each with the `cap` cluster; every task is
    stopped before the server stops, so no container outlives the test."""

    CONFIG = ""
    TENANTS = 1

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="paddock-capacity-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.state_dir = os.path.join(cls.tmp, "state")
        os.makedirs(cls.state_dir)
        cls.config = os.path.join(cls.tmp, "paddock.toml")
        with open(cls.config, "w") as f:
            f.write(cls.CONFIG)
        keys = [h.create_account(cls.state_dir, None, f"tenant{i}")[1:] for i in range(cls.TENANTS)]
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:cap", "capacity\n")
        cls.server = None
        cls.addClassCleanup(cls._shutdown)
        cls.start()
        cls.tenants = [Tenant(cls, key_id, secret) for key_id, secret in keys]
        for t in cls.tenants:
            t.setup()

    @classmethod
    def start(cls):
        cls.server = h.Server(cls.state_dir, ("--config", cls.config)).start()

    @classmethod
    def _shutdown(cls):
        if cls.server is None:
            return
        if cls.server.alive():
            for t in getattr(cls, "tenants", []):
                try:
                    if not t.stop_all():
                        print(f"\nwarning: tasks did not stop: {cls.server.log_tail()}", file=sys.stderr)
                except Exception as e:  # noqa: BLE001 - the server stops regardless
                    print(f"\nwarning: stopping the tasks failed: {e!r}", file=sys.stderr)
        cls.server.stop()

    def wait(self, tenant, arns, status):
        for arn in arns:
            th.wait_for_status(self, tenant.ecs, CLUSTER, arn, status, context=self.server.log_tail)

    def stop(self, tenant, arns):
        for arn in arns:
            tenant.ecs.stop_task(cluster=CLUSTER, task=arn)
        self.wait(tenant, arns, "STOPPED")

    def assertRefused(self, run, reason, count):
        """`run` placed nothing and has `count` failures with `reason` and no arn (ECS's shape)."""
        self.assertEqual(run["tasks"], [])
        self.assertEqual(run["failures"], [{"reason": reason}] * count)


class NodeCapacity(CapacityTestCase):
    """1 vCPU / 2 GiB of Fargate capacity and AWS's generous default quota: the node is the bound."""

    CONFIG = "[fargate]\ncpu = 1024\nmemory = 2048\n"

    def test_1_the_finding_ten_huge_tasks_are_all_refused(self):
        a = self.tenants[0]
        self.assertRefused(a.run("huge", count=10), CAPACITY, 10)
        self.assertEqual(a.ecs.list_tasks(cluster=CLUSTER)["taskArns"], [])

    def test_2_the_fifth_task_is_refused_a_stopped_one_frees_room_and_a_restart_keeps_the_count(self):
        a = self.tenants[0]
        r = a.run(count=5)
        self.assertEqual(len(r["tasks"]), 4, r["failures"])
        self.assertEqual(r["failures"], [{"reason": CAPACITY}])
        arns = [t["taskArn"] for t in r["tasks"]]
        self.wait(a, arns, "RUNNING")
        self.assertRefused(a.run(), CAPACITY, 1)

        # A StopTask gives nothing back until the task is really down; then one more fits.
        self.stop(a, arns[:1])
        r = a.run()
        self.assertEqual(r["failures"], [])
        arns = arns[1:] + [r["tasks"][0]["taskArn"]]
        self.wait(a, arns, "RUNNING")

        # kill -9 and restart: the reservations are in the store; the node is still full.
        self.server.kill()
        type(self).start()
        a.connect()
        self.wait(a, arns, "RUNNING")
        self.assertRefused(a.run(), CAPACITY, 1)

        # Everything stopped: the whole capacity is back, exactly.
        self.stop(a, arns)
        r = a.run(count=5)
        self.assertEqual(len(r["tasks"]), 4, r["failures"])
        self.stop(a, [t["taskArn"] for t in r["tasks"]])

    def test_3_a_service_that_does_not_fit_gets_ecss_event(self):
        a = self.tenants[0]
        a.ecs.create_service(cluster=CLUSTER, serviceName="wide", taskDefinition="small", desiredCount=5,
                             launchType="FARGATE",
                             networkConfiguration={"awsvpcConfiguration": {"subnets": [a.subnet]}})
        expected = (f"(service wide) was unable to place a task. Reason: {CAPACITY}. For more information, see the "
                    "Troubleshooting section of the Amazon ECS Developer Guide.")
        deadline = time.monotonic() + 30
        while True:
            svc = a.ecs.describe_services(cluster=CLUSTER, services=["wide"])["services"][0]
            messages = [e["message"] for e in svc.get("events", [])]
            if expected in messages and svc["runningCount"] == 4:
                break
            if time.monotonic() > deadline:
                self.fail(f"runningCount={svc['runningCount']} events={messages} {self.server.log_tail()}")
            time.sleep(0.2)
        a.ecs.delete_service(cluster=CLUSTER, service="wide", force=True)
        deadline = time.monotonic() + 30
        while a.ecs.list_tasks(cluster=CLUSTER)["taskArns"]:
            if time.monotonic() > deadline:
                self.fail(f"the service's tasks did not stop {self.server.log_tail()}")
            time.sleep(0.2)


class AccountQuota(CapacityTestCase):
    """2 vCPUs / 4 GiB of Fargate capacity, 1 vCPU per account, three accounts. Fairness: each
    account holds at most its quota; within quotas, first come, first served. With the quota at
    the node's capacity divided by the accounts that must coexist (here two), neither can starve
    the other."""

    CONFIG = "[fargate]\ncpu = 2048\nmemory = 4096\n[quotas]\nfargate_vcpus_per_account = 1\n"
    TENANTS = 3

    def test_each_account_is_bounded_by_its_quota_and_none_is_starved_by_another(self):
        a, b, c = self.tenants
        # A asks for more than its quota: four of five, the fifth refused with the quota's reason.
        r = a.run(count=5)
        self.assertEqual(len(r["tasks"]), 4, r["failures"])
        self.assertEqual(r["failures"], [{"reason": VCPU_LIMIT}])
        a_arns = [t["taskArn"] for t in r["tasks"]]
        self.assertRefused(a.run("huge"), VCPU_LIMIT, 1)
        # B gets its whole quota although A asked first: A could not take the node.
        r = b.run(count=4)
        self.assertEqual(r["failures"], [])
        b_arns = [t["taskArn"] for t in r["tasks"]]
        self.wait(a, a_arns, "RUNNING")
        self.wait(b, b_arns, "RUNNING")
        # The node is full: C, well within its quota, gets the capacity failure ...
        self.assertRefused(c.run(), CAPACITY, 1)
        # ... until A stops a task; then C's task runs, and A (back under its quota) finds the node full.
        self.stop(a, a_arns[:1])
        r = c.run()
        self.assertEqual(r["failures"], [])
        self.wait(c, [r["tasks"][0]["taskArn"]], "RUNNING")
        self.assertRefused(a.run(), CAPACITY, 1)
        for t in self.tenants:
            self.assertTrue(t.stop_all())
        # All stopped: each account has its whole quota again.
        for t in (a, b):
            r = t.run(count=4)
            self.assertEqual(r["failures"], [])
            self.stop(t, [x["taskArn"] for x in r["tasks"]])


if __name__ == "__main__":
    unittest.main()
