"""Issue 16 §3, "Losing a host" (docs/contracts/task.md, docs/agent-protocol.md "Fencing"): two
`paddock agent`s of one cluster; the one running a service's task is killed with SIGKILL. Once its
agent has been gone host_lost_seconds, the server records the task STOPPED as ECS does when a host
goes away (stopCode TerminationNotice, "Host EC2 (instance i-…) terminated."), and the service gets
a replacement on the other agent — and the killed agent's container was stopped before that, by
its watchdog (`paddock fence-watch`: nobody took its state directory over within its fence time).
The killed agent, started again, finds its task no longer assigned and removes the containers it
left; the task stays STOPPED. Then the server goes
away: the surviving agent, cut off for longer than its fence time, stops its task's containers on
its own. Needs root, crun and busybox-static.
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_remote_agent import AgentProcess, write_agent_credentials  # noqa: E402
from test_security_lifecycle import crun_containers, wait_until  # noqa: E402

PAGE = "host loss\n"
AGENT_TIMEOUT = 3  # agent_timeout_seconds (a long-poll waits at most 1 s)
HOST_LOST = 6  # host_lost_seconds: the agents' fence time is (6 - 3/4) / 2 = 2.625 s
BOUND = 20  # seconds within which the sweep, a replacement or an agent's teardown must have happened


def crun_running(state_dir, task_id):
    """The running crun containers of the agent at `state_dir` whose id names `task_id`."""
    r = subprocess.run(["crun", "--root", os.path.join(state_dir, "containers", "crun"), "list", "--format", "json"],
                       capture_output=True, timeout=10)
    if r.returncode != 0 or not r.stdout.strip():
        return []
    return [c["id"] for c in json.loads(r.stdout) if task_id in c["id"] and c.get("status") == "running"]


def skip_reason():
    return th.skip_reason()


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class HostLoss(h.PaddockTestCase):

    CONFIG = (f"agent_timeout_seconds = {AGENT_TIMEOUT}\nhost_lost_seconds = {HOST_LOST}\n"
              "[scheduler]\nresync_seconds = 1\nbackoff_base_seconds = 1\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.creds = os.path.join(cls.tmp, "agent-credentials")
        write_agent_credentials(cls.state_dir, cls.account, cls.creds)
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="hosts")
        cls.agents = {}
        for name in ("a", "b"):
            agent_dir = os.path.join(cls.tmp, f"agent-{name}")
            os.makedirs(agent_dir)
            th.httpd_image(agent_dir, agent_dir + "-work", "busybox:hostloss", PAGE)
        cls.addClassCleanup(cls.cleanup)
        cls.agents["a"] = cls.start_agent("a")
        cls.td = cls.ecs.register_task_definition(
            family="hostloss", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:hostloss", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]

    @classmethod
    def start_agent(cls, name):
        return AgentProcess(["--endpoint", cls.server.endpoint, "--cluster", "hosts", "--state-dir",
                             os.path.join(cls.tmp, f"agent-{name}"), "--credentials", cls.creds, "--profile", "agent"],
                            os.path.join(cls.tmp, f"agent-{name}.log")).start()

    @classmethod
    def cleanup(cls):
        # With the server up, the service goes and the agents stop its tasks; with it gone (test_2),
        # the agents have fenced themselves already. Then the agents.
        try:
            if cls.server.alive():
                arns = cls.ecs.list_tasks(cluster="hosts")["taskArns"]
                cls.ecs.delete_service(cluster="hosts", service="web", force=True)
                th.wait_all_stopped(cls.ecs, "hosts", arns)
        finally:
            for agent in cls.agents.values():
                agent.stop()

    def context(self):
        return "".join(f"\nagent {n}: {a.log_tail()}" for n, a in self.agents.items()) + \
            f"\nserver: {self.server.log_tail()}"

    def service_tasks(self):
        arns = self.ecs.list_tasks(cluster="hosts", serviceName="web", desiredStatus="RUNNING")["taskArns"]
        return self.ecs.describe_tasks(cluster="hosts", tasks=arns)["tasks"] if arns else []

    def test_1_a_killed_agents_task_is_stopped_as_ecs_does_and_replaced_on_another_agent(self):
        a = self.agents["a"]
        self.ecs.create_service(
            cluster="hosts", serviceName="web", taskDefinition=self.td, desiredCount=1, launchType="EC2",
            networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}},
            deploymentConfiguration={"maximumPercent": 100, "minimumHealthyPercent": 0})
        first = wait_until(lambda: [t for t in self.service_tasks() if t["lastStatus"] == "RUNNING"], BOUND,
                           "the service's task RUNNING")[0]
        self.assertEqual(first["containerInstanceArn"], a.arn)
        first_id = first["taskArn"].rsplit("/", 1)[1]
        a_dir = os.path.join(self.tmp, "agent-a")
        self.assertEqual(len(crun_containers(a_dir, first_id)), 1)
        ec2_id = self.ecs.describe_container_instances(
            cluster="hosts", containerInstances=[a.arn])["containerInstances"][0]["ec2InstanceId"]
        b = self.agents["b"] = self.start_agent("b")

        a.kill()  # it cannot fence its container: its watchdog does, once its fence time has passed
        killed = time.monotonic()
        stopped = th.wait_for_status(self, self.ecs, "hosts", first["taskArn"], "STOPPED", BOUND, self.context)
        self.assertEqual(crun_running(a_dir, first_id), [], "recorded STOPPED while the dead agent's container ran")
        print(f"\nagent SIGKILLed -> its task STOPPED by the server: {time.monotonic() - killed:.1f} s "
              f"(host_lost_seconds = {HOST_LOST})", file=sys.stderr)
        self.assertGreaterEqual(time.monotonic() - killed, HOST_LOST - 1)  # not before the grace time
        self.assertEqual(stopped["desiredStatus"], "STOPPED")
        self.assertEqual(stopped["stopCode"], "TerminationNotice")
        self.assertEqual(stopped["stoppedReason"], f"Host EC2 (instance {ec2_id}) terminated.")
        self.assertIn("stoppedAt", stopped)
        for c in stopped["containers"]:
            self.assertEqual(c["lastStatus"], "STOPPED")
            self.assertNotIn("exitCode", c)
        self.assertEqual(stopped["attachments"][0]["status"], "DELETED")

        replacement = wait_until(lambda: [t for t in self.service_tasks() if t["lastStatus"] == "RUNNING"], BOUND,
                                 "a replacement RUNNING")[0]
        self.assertEqual(replacement["containerInstanceArn"], b.arn, self.context())
        instance_a = self.ecs.describe_container_instances(
            cluster="hosts", containerInstances=[a.arn])["containerInstances"][0]
        self.assertFalse(instance_a["agentConnected"])
        self.assertEqual(instance_a["runningTasksCount"] + instance_a["pendingTasksCount"], 0)

        # The lost agent comes back (same state directory: the same instance): the task is no longer
        # assigned to it, so it removes the container it left; its reports change nothing.
        self.assertEqual(len(crun_containers(a_dir, first_id)), 1, "the killed agent's (fenced) container was not left for it to remove")
        a = self.agents["a"] = self.start_agent("a")
        wait_until(lambda: crun_containers(a_dir, first_id) == {}, BOUND, "the returning agent removing the container")
        after = self.ecs.describe_tasks(cluster="hosts", tasks=[first["taskArn"]])["tasks"][0]
        self.assertEqual((after["lastStatus"], after["stopCode"], after["stoppedReason"], after["stoppedAt"]),
                         (stopped["lastStatus"], stopped["stopCode"], stopped["stoppedReason"], stopped["stoppedAt"]))

    def test_2_an_agent_cut_off_from_the_control_plane_stops_its_containers_within_its_fence_time(self):
        running = [t for t in self.service_tasks() if t["lastStatus"] == "RUNNING"]
        self.assertEqual(len(running), 1, "test_1 leaves the replacement running")
        task_id = running[0]["taskArn"].rsplit("/", 1)[1]
        agent_name = "a" if running[0]["containerInstanceArn"] == self.agents["a"].arn else "b"
        agent_dir = os.path.join(self.tmp, f"agent-{agent_name}")
        self.assertEqual(len(crun_containers(agent_dir, task_id)), 1)

        self.server.stop()
        cut_off = time.monotonic()
        wait_until(lambda: crun_containers(agent_dir, task_id) == {}, BOUND,
                   f"the cut-off agent stopping its task's container{self.context()}")
        print(f"\nserver stopped -> the agent's containers gone: {time.monotonic() - cut_off:.1f} s "
              f"(fence time {(HOST_LOST - AGENT_TIMEOUT / 4) / 2} s)", file=sys.stderr)
        # Its last answered poll was sent at most a long-poll (1 s) before the stop.
        self.assertGreaterEqual(time.monotonic() - cut_off, (HOST_LOST - AGENT_TIMEOUT / 4) / 2 - 1)
        self.assertIn("no answer from the control plane", self.agents[agent_name].log_tail())
        self.assertIsNone(self.agents[agent_name].proc.poll(), "the agent keeps running, waiting for the control plane")


if __name__ == "__main__":
    unittest.main()
