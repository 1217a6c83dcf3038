"""`paddock agent` as a second process: it registers as an EC2 container instance with its own
credentials and state directory, runs the EC2 task placed on it (RunTask -> RUNNING at once
through the assignment long-poll, served at its awsvpc IP, StopTask -> STOPPED), keeps
agentConnected true while it runs and false after kill -9, and a kill -9 loses no task: the
restarted agent re-registers as the same instance, and the task still stops normally
(docs/agent-protocol.md, docs/contracts/container-instance.md). ECS's own SubmitTaskStateChange
refuses a Fargate task (only the node's agent reports those). And [[ec2_instance]]: an EC2
container instance whose agent runs inside the server, registered once its cluster exists, runs EC2
tasks end to end and is the same instance after a server restart. Needs root, crun and
busybox-static.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
import task_harness as th  # noqa: E402

PAGE = "hello from a remote paddock agent\n"
AGENT_TIMEOUT = 6  # agent_timeout_seconds: agentConnected goes false this long after the last poll
# (and the server caps one long-poll at a third of it: 2 s)


def skip_reason():
    return th.skip_reason()


def write_agent_credentials(state_dir, account, path):
    """A new access key of `account` (`paddock admin create-access-key`), written to `path` as the
    profile "agent" of an AWS credentials file (`paddock agent --credentials PATH --profile agent`).
    Returns the key's accessKeyId."""
    key = h.admin(state_dir, "create-access-key", "--account", account)[0]
    with open(path, "w") as f:
        f.write(f"[agent]\naws_access_key_id = {key['accessKeyId']}\n"
                f"aws_secret_access_key = {key['secretAccessKey']}\n")
    return key["accessKeyId"]


class AgentProcess:
    """One `paddock agent` process; its first stdout line names the instance it registered as."""

    PREFIX = "paddock agent registered as "

    def __init__(self, args, log_path, prefix=()):
        self.args = args
        self.log_path = log_path
        self.prefix = list(prefix)  # e.g. ["nsenter", "--net=/var/run/netns/H"]: a simulated host
        self.proc = None
        self.arn = None

    def start(self, timeout=20):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([*self.prefix, h.paddock_bin(), "agent", *self.args], stdout=subprocess.PIPE, stderr=log,
                                     stdin=subprocess.DEVNULL)
        log.close()
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            line = self.proc.stdout.readline().decode().strip()
        finally:
            timer.cancel()
        if not line.startswith(self.PREFIX):
            raise AssertionError(f"paddock agent did not register: {line!r} {self.log_tail()!r}")
        self.arn = line[len(self.PREFIX):]
        return self

    def log_tail(self, n=3000):
        return h.log_tail(self.log_path, n)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc.stdout.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stdout.close()


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RemoteAgent(h.PaddockTestCase):

    CONFIG = f"agent_timeout_seconds = {AGENT_TIMEOUT}\n"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The agent's own key (same account) in its own credentials file.
        cls.creds = os.path.join(cls.tmp, "agent-credentials")
        write_agent_credentials(cls.state_dir, cls.account, cls.creds)
        # The image lives in the AGENT's state directory, not the server's.
        cls.agent_dir = os.path.join(cls.tmp, "agent")
        os.makedirs(cls.agent_dir)
        th.httpd_image(cls.agent_dir, cls.tmp, "busybox:remote", PAGE)
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="remote")
        cls.agent = cls.start_agent()
        cls.addClassCleanup(cls.cleanup)
        cls.td = cls.ecs.register_task_definition(
            family="remote-web", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:remote", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]

    @classmethod
    def start_agent(cls):
        return AgentProcess(["--endpoint", cls.server.endpoint, "--cluster", "remote", "--state-dir", cls.agent_dir,
                             "--credentials", cls.creds, "--profile", "agent"],
                            os.path.join(cls.tmp, "agent.log")).start()

    @classmethod
    def cleanup(cls):
        # Stop what still runs while an agent is there to tear it down, then the agent.
        try:
            if cls.agent.proc.poll() is not None:
                cls.agent = cls.start_agent()
            arns = cls.ecs.list_tasks(cluster="remote")["taskArns"]
            for arn in arns:
                cls.ecs.stop_task(cluster="remote", task=arn)
            deadline = time.monotonic() + 30
            while arns and time.monotonic() < deadline:
                tasks = cls.ecs.describe_tasks(cluster="remote", tasks=arns)["tasks"]
                if all(t["lastStatus"] == "STOPPED" for t in tasks):
                    break
                time.sleep(0.1)
        finally:
            cls.agent.stop()

    def instance(self):
        r = self.ecs.describe_container_instances(cluster="remote", containerInstances=[self.agent.arn])
        self.assertEqual(r["failures"], [])
        return r["containerInstances"][0]

    def why_refused(self):
        """What a refused RunTask is judged on: the instance (agentConnected) and both sides' logs."""
        return (f"\ninstance: {self.instance()}\nagent alive: {self.agent.proc.poll() is None}\n"
                f"agent: {self.agent.log_tail()}\nserver: {self.server.log_tail()}")

    def wait_for(self, arn, status, timeout=30):
        return th.wait_for_status(self, self.ecs, "remote", arn, status, timeout,
                                  lambda: f"\nagent: {self.agent.log_tail()}")

    def wait_connected(self, want, timeout):
        deadline = time.monotonic() + timeout
        while self.instance()["agentConnected"] != want:
            if time.monotonic() > deadline:
                self.fail(f"agentConnected did not become {want}: {self.instance()}")
            time.sleep(0.2)

    def run_web(self):
        started = time.monotonic()
        r = self.ecs.run_task(cluster="remote", taskDefinition=self.td, launchType="EC2",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [], self.why_refused())
        arn = r["tasks"][0]["taskArn"]
        self.assertEqual(r["tasks"][0]["containerInstanceArn"], self.agent.arn)
        task = self.wait_for(arn, "RUNNING")
        return arn, task, time.monotonic() - started

    def get_page(self, ip, timeout=10):
        return th.fetch(f"http://{ip}:8080/", timeout)

    def test_1_registers_as_an_ec2_instance_with_honest_resources_and_attributes(self):
        ci = self.instance()
        self.assertEqual(ci["status"], "ACTIVE")
        self.assertTrue(ci["agentConnected"])
        resources = {r["name"]: r for r in ci["registeredResources"]}
        self.assertEqual(resources["CPU"]["integerValue"], os.cpu_count() * 1024)
        with open("/proc/meminfo") as f:
            mem_kib = int(next(l for l in f if l.startswith("MemTotal:")).split()[1])
        self.assertEqual(resources["MEMORY"]["integerValue"], mem_kib // 1024 - 256)
        self.assertEqual(resources["PORTS"]["stringSetValue"], ["22"])
        names = {a["name"] for a in ci["attributes"]}
        for minor in (17, 44):
            self.assertIn(f"com.amazonaws.ecs.capability.docker-remote-api.1.{minor}", names)
        self.assertIn("ecs.capability.task-eni", names)
        self.assertEqual(ci["versionInfo"]["agentVersion"], "1.0.0")

    def test_2_an_ec2_task_runs_at_once_serves_at_its_ip_and_stops(self):
        arn, task, elapsed = self.run_web()
        print(f"\nRunTask (EC2, remote agent) -> RUNNING: {elapsed * 1000:.0f} ms", file=sys.stderr)
        # The waiting long-poll hands the task over at once; were it answered only when its 2 s wait
        # ran out, this would take about a second on average and up to 2 s.
        self.assertLess(elapsed, 1.5)
        details = {d["name"]: d["value"] for d in task["attachments"][0]["details"]}
        self.assertEqual(self.get_page(details["privateIPv4Address"]), PAGE)
        self.ecs.stop_task(cluster="remote", task=arn, reason="remote test done")
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "UserInitiated")
        self.assertEqual(task["containers"][0]["lastStatus"], "STOPPED")
        self.assertIn("exitCode", task["containers"][0])
        # The reservation went back with the task.
        remaining = {r["name"]: r for r in self.instance()["remainingResources"]}
        self.assertEqual(remaining["CPU"]["integerValue"], os.cpu_count() * 1024)

    def test_3_kill_9_of_the_agent_loses_no_task(self):
        arn, task, _ = self.run_web()
        ip = {d["name"]: d["value"] for d in task["attachments"][0]["details"]}["privateIPv4Address"]
        self.wait_connected(True, 5)
        self.agent.kill()
        # Disconnected once its last poll is older than the timeout.
        self.wait_connected(False, AGENT_TIMEOUT + 5)
        # The task is not lost: still RUNNING, still assigned, still serving.
        task = self.ecs.describe_tasks(cluster="remote", tasks=[arn])["tasks"][0]
        self.assertEqual(task["lastStatus"], "RUNNING")
        self.assertEqual(task["desiredStatus"], "RUNNING")
        self.assertEqual(self.get_page(ip), PAGE)
        # The restarted agent is the same instance (instance.json) and is connected again.
        arn_before = self.agent.arn
        type(self).agent = self.start_agent()
        self.assertEqual(self.agent.arn, arn_before)
        self.wait_connected(True, 5)
        listed = self.ecs.list_container_instances(cluster="remote")["containerInstanceArns"]
        self.assertEqual(listed, [arn_before])
        # ...and the task it had still stops normally.
        self.ecs.stop_task(cluster="remote", task=arn)
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task["stopCode"], "UserInitiated")

    def test_5_a_task_gets_its_secrets_and_ships_its_logs_through_the_control_plane(self):
        # GetExecutionResources and ShipLogs (docs/agent-protocol.md): the remote node reads no
        # secret and writes no log itself; the control plane does both as the task's execution role.
        iam = h.client("iam", self.server.endpoint, self.key_id, self.secret)
        ssm = h.client("ssm", self.server.endpoint, self.key_id, self.secret)
        logs = h.client("logs", self.server.endpoint, self.key_id, self.secret)
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                        "Principal": {"Service": "ecs-tasks.amazonaws.com"}}]}
        role = iam.create_role(RoleName="remote-exec", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        iam.put_role_policy(RoleName="remote-exec", PolicyName="exec", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*", "Action": [
                "ssm:GetParameters", "logs:CreateLogStream", "logs:PutLogEvents"]}]}))
        ssm.put_parameter(Name="/remote/db", Value="postgres://db.remote/app", Type="SecureString")
        logs.create_log_group(logGroupName="/remote/app")
        td = self.ecs.register_task_definition(
            family="remote-secrets", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            executionRoleArn=role,
            containerDefinitions=[{"name": "app", "image": "busybox:remote", "essential": True,
                                   "command": ["sh", "-c", 'echo "db=$DB"; echo second'],
                                   "secrets": [{"name": "DB", "valueFrom": "/remote/db"}],
                                   "logConfiguration": {"logDriver": "awslogs", "options": {
                                       "awslogs-group": "/remote/app", "awslogs-stream-prefix": "r"}}}],
        )["taskDefinition"]["taskDefinitionArn"]
        # This test is about secrets and logs, not the heartbeat (test_3's): an agent between polls on
        # a loaded machine is waited for, and said so (CI once saw an AGENT refusal here).
        if not self.instance()["agentConnected"]:
            print(f"\nnote: the agent was not connected before RunTask: {self.why_refused()}", file=sys.stderr)
            self.wait_connected(True, AGENT_TIMEOUT + 5)
        r = self.ecs.run_task(cluster="remote", taskDefinition=td, launchType="EC2",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [], self.why_refused())
        arn = r["tasks"][0]["taskArn"]
        self.assertEqual(r["tasks"][0]["containerInstanceArn"], self.agent.arn)
        task = self.wait_for(arn, "STOPPED")
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        self.assertEqual(task["containers"][0].get("exitCode"), 0)
        self.assertNotIn("postgres://db.remote/app", json.dumps(task, default=str))
        events = logs.get_log_events(logGroupName="/remote/app", logStreamName=f"r/app/{arn.rsplit('/', 1)[1]}",
                                     startFromHead=True)["events"]
        self.assertEqual([e["message"] for e in events], ["db=postgres://db.remote/app", "second"])

    def test_4_ecs_submit_task_state_change_refuses_a_fargate_task(self):
        fargate_td = self.ecs.register_task_definition(
            family="remote-fargate", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
            memory="512", containerDefinitions=[{"name": "web", "image": "busybox:remote", "essential": True}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="remote", taskDefinition=fargate_td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        arn = r["tasks"][0]["taskArn"]
        with self.assertRaises(ClientError) as cm:
            self.ecs.submit_task_state_change(cluster="remote", task=arn, status="RUNNING")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDeniedException")
        self.assertNotEqual(self.ecs.describe_tasks(cluster="remote", tasks=[arn])["tasks"][0]["lastStatus"], "RUNNING")
        self.ecs.stop_task(cluster="remote", task=arn)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class InProcessEc2Instance(h.PaddockTestCase):

    ACCOUNT_ID = "210000000003"  # the instance's owner (a plain `paddock server` has no bootstrap account)
    CONFIG = (f"agent_timeout_seconds = {AGENT_TIMEOUT}\n"
              "[[ec2_instance]]\ncluster = \"inproc\"\naccount = \"210000000003\"\ncpu = 1024\nmemory = 600\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:inproc", PAGE)
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]

    def wait_instance(self, timeout=15):
        return th.connected_instance(self.ecs, "inproc", timeout, self.server.log_tail)

    def wait_for(self, arn, status, timeout=30):
        return th.wait_for_status(self, self.ecs, "inproc", arn, status, timeout, self.server.log_tail)

    def test_registers_once_the_cluster_exists_and_runs_ec2_tasks(self):
        # Registration waits for the cluster (it is the user's to create).
        self.ecs.create_cluster(clusterName="inproc")
        ci = self.wait_instance()
        resources = {r["name"]: r for r in ci["registeredResources"]}
        self.assertEqual(resources["CPU"]["integerValue"], 1024)
        self.assertEqual(resources["MEMORY"]["integerValue"], 600)
        td = self.ecs.register_task_definition(
            family="inproc-web", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:inproc", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="inproc", taskDefinition=td, launchType="EC2",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.assertEqual(r["tasks"][0]["containerInstanceArn"], ci["containerInstanceArn"])
        task = self.wait_for(arn, "RUNNING")
        self.assertEqual(th.fetch(f"http://{th.task_ip(task)}:8080/"), PAGE)
        self.ecs.stop_task(cluster="inproc", task=arn)
        self.assertEqual(self.wait_for(arn, "STOPPED")["stopCode"], "UserInitiated")

        # A restarted server re-registers the same instance rather than adding one.
        self.server.stop()
        self.server.start()
        type(self).ecs = h.ecs_client(self.server.endpoint, self.key_id, self.secret)
        again = self.wait_instance()
        self.assertEqual(again["containerInstanceArn"], ci["containerInstanceArn"])
        self.assertEqual(self.ecs.list_container_instances(cluster="inproc")["containerInstanceArns"],
                         [ci["containerInstanceArn"]])


if __name__ == "__main__":
    unittest.main()
