"""Network modes and the task metadata endpoint end to end (docs/contracts/task.md, Networking and
Task metadata endpoint rows). On an in-process EC2 container instance ([[ec2_instance]]): bridge-mode
tasks with a dynamic and a static host port serve busybox httpd at 127.0.0.1:<hostPort> as
DescribeTasks' networkBindings say; a second task wanting the static port is not placed
(RESOURCE:PORTS); a containerPortRange is served on a contiguous host range in bridge mode and at the
task's address on its own ports in awsvpc mode, both reported as containerPortRange/hostPortRange; a
bridge container's hostname, /etc/hostname and /etc/hosts line are its runtime id (Docker's name for
it), and it reads $ECS_CONTAINER_METADATA_URI_V4/taskWithTags: its tags, its
volume, the node's ClockDrift; a host-mode task serves on a host port and reports no networkBindings; after
StopTask nothing of them is left (no iptables rule naming the task, no netns). On Fargate (awsvpc):
networkBindings at the task's address with hostPort = containerPort, and a container reads
$ECS_CONTAINER_METADATA_URI_V4/task with busybox wget: its TaskARN, Cluster, container names and
IPv4Addresses match DescribeTasks. On `paddock agent`: a bridge-mode task's published port and its
metadata (Task from DescribeTasks with the agent's credentials; Ports from its networkBindings); after
kill -9 and a new agent the task is re-adopted and still served, and the leftovers of a task the
agent does not have under its prefix (published port, bridge address, namespaces) are removed
(another prefix's namespace is not). Needs root, crun, iptables and busybox-static."""

import json
import os
import socket
import subprocess
import sys
import time
import unittest
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402

PAGE = "hello from a paddock network mode\n"


def skip_reason():
    return th.skip_reason(tools=("crun", "iptables"))


def free_port():
    """A TCP port nothing listens on now (the kernel's choice for port 0)."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


fetch = th.fetch


def stop_all(ecs, cluster, timeout=30):
    """Stops every task of `cluster` and waits for STOPPED, so that a failed test leaves nothing
    running (a class cleanup: it runs while the server and agent are still up)."""
    arns = ecs.list_tasks(cluster=cluster)["taskArns"]
    for arn in arns:
        ecs.stop_task(cluster=cluster, task=arn)
    deadline = time.monotonic() + timeout
    while arns and time.monotonic() < deadline:
        if all(t["lastStatus"] == "STOPPED" for t in ecs.describe_tasks(cluster=cluster, tasks=arns)["tasks"]):
            return
        time.sleep(0.1)


def nat_rules():
    return subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True, text=True, check=True).stdout


def netns_list():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class NetworkModes(h.PaddockTestCase):

    # The instance belongs to the test's account (a plain `paddock server` has no bootstrap account)
    # and allows host access: host-mode tasks share the node's network namespace.
    ACCOUNT_ID = "210000000001"
    CONFIG = ("[[ec2_instance]]\ncluster = \"netmodes\"\naccount = \"210000000001\"\nhost_access = true\n"
              "cpu = 4096\nmemory = 2048\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:net", PAGE, applets=("wget", "sleep", "hostname"))
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="netmodes")
        cls.addClassCleanup(lambda: stop_all(cls.ecs, "netmodes"))
        cls.wait_instance()

    @classmethod
    def wait_instance(cls, timeout=15):
        th.connected_instance(cls.ecs, "netmodes", timeout, cls.server.log_tail)

    def wait_for(self, cluster, arn, status, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            task = self.ecs.describe_tasks(cluster=cluster, tasks=[arn])["tasks"][0]
            if task["lastStatus"] == status:
                return task
            if task["lastStatus"] == "STOPPED" or time.monotonic() > deadline:
                self.fail(f"task did not reach {status}: {task} {self.server.log_tail()}")
            time.sleep(0.05)

    def register(self, family, mode, container, compat="EC2", cpu="256", memory="128"):
        container.setdefault("image", "busybox:net")
        container.setdefault("essential", True)
        container.setdefault("stopTimeout", 2)
        return self.ecs.register_task_definition(
            family=family, networkMode=mode, requiresCompatibilities=[compat], cpu=cpu, memory=memory,
            containerDefinitions=[container])["taskDefinition"]["taskDefinitionArn"]

    def run_ec2(self, td):
        r = self.ecs.run_task(cluster="netmodes", taskDefinition=td, launchType="EC2")
        self.assertEqual(r["failures"], [])
        return r["tasks"][0]["taskArn"]

    def stop_and_check_gone(self, arn, cluster="netmodes"):
        self.ecs.stop_task(cluster=cluster, task=arn)
        self.wait_for(cluster, arn, "STOPPED")
        task_id = arn.rsplit("/", 1)[1]
        self.assertNotIn(task_id, nat_rules())
        self.assertNotIn(task_id, netns_list())

    def test_bridge_dynamic_and_static_host_ports(self):
        static = free_port()
        dyn_td = self.register("nm-bridge-dyn", "bridge", {"name": "web", "portMappings": [{"containerPort": 8080}]})
        static_td = self.register("nm-bridge-static", "bridge", {
            "name": "web", "portMappings": [{"containerPort": 8080, "hostPort": static, "protocol": "tcp"}]})
        dyn = self.run_ec2(dyn_td)
        fixed = self.run_ec2(static_td)
        for arn, want_port in ((dyn, None), (fixed, static)):
            task = self.wait_for("netmodes", arn, "RUNNING")
            bindings = task["containers"][0]["networkBindings"]
            self.assertEqual(len(bindings), 1, task)
            b = bindings[0]
            self.assertEqual((b["bindIP"], b["containerPort"], b["protocol"]), ("0.0.0.0", 8080, "tcp"))
            if want_port is None:
                self.assertGreater(b["hostPort"], 0)
                self.assertNotEqual(b["hostPort"], 8080)
            else:
                self.assertEqual(b["hostPort"], want_port)
            self.assertEqual(fetch(f"http://127.0.0.1:{b['hostPort']}/"), PAGE)
            self.assertIn(arn.rsplit("/", 1)[1], nat_rules())

        # The static port is the instance's now: a second task wanting it is not placed.
        r = self.ecs.run_task(cluster="netmodes", taskDefinition=static_td, launchType="EC2")
        self.assertEqual(r["tasks"], [])
        self.assertEqual([f["reason"] for f in r["failures"]], ["RESOURCE:PORTS"])

        for arn in (dyn, fixed):
            self.stop_and_check_gone(arn)
        with self.assertRaises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{static}/", timeout=2)

    def test_port_ranges_in_bridge_and_awsvpc_modes(self):
        # One container serving on the first and last ports of its containerPortRange.
        serve = ["sh", "-c", "httpd -p 9000 -h /www && exec httpd -f -p 9002 -h /www"]
        bridge_td = self.register("nm-bridge-range", "bridge", {
            "name": "web", "command": serve, "portMappings": [{"containerPortRange": "9000-9002"}]})
        awsvpc_td = self.register("nm-awsvpc-range", "awsvpc", {
            "name": "web", "command": serve, "portMappings": [{"containerPortRange": "9000-9002"}]},
            compat="FARGATE", memory="512")
        for td in (bridge_td, awsvpc_td):  # stored as given: no hostPort, the default protocol
            self.assertEqual(self.ecs.describe_task_definition(taskDefinition=td)["taskDefinition"]
                             ["containerDefinitions"][0]["portMappings"],
                             [{"containerPortRange": "9000-9002", "protocol": "tcp"}])
        bridge = self.run_ec2(bridge_td)
        r = self.ecs.run_task(cluster="netmodes", taskDefinition=awsvpc_td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        awsvpc = r["tasks"][0]["taskArn"]

        # Bridge: a block of 3 contiguous host ports the agent chose, DNATed port by port.
        task = self.wait_for("netmodes", bridge, "RUNNING")
        [b] = task["containers"][0]["networkBindings"]
        first, last = (int(p) for p in b["hostPortRange"].split("-"))
        self.assertEqual(b, {"bindIP": "0.0.0.0", "containerPortRange": "9000-9002",
                             "hostPortRange": f"{first}-{first + 2}", "protocol": "tcp"})
        self.assertNotEqual(first, 9000)  # from the ephemeral range, not the container's
        self.assertEqual(fetch(f"http://127.0.0.1:{first}/"), PAGE)
        self.assertEqual(fetch(f"http://127.0.0.1:{last}/"), PAGE)

        # awsvpc: hostPortRange = containerPortRange, served at the task's address.
        task = self.wait_for("netmodes", awsvpc, "RUNNING")
        ip = {d["name"]: d["value"] for d in task["attachments"][0]["details"]}["privateIPv4Address"]
        self.assertEqual(task["containers"][0]["networkBindings"],
                         [{"bindIP": ip, "containerPortRange": "9000-9002", "hostPortRange": "9000-9002",
                           "protocol": "tcp"}])
        self.assertEqual(fetch(f"http://{ip}:9000/"), PAGE)
        self.assertEqual(fetch(f"http://{ip}:9002/"), PAGE)

        self.stop_and_check_gone(bridge)
        self.stop_and_check_gone(awsvpc)
        with self.assertRaises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{first}/", timeout=2)

    def test_a_static_host_port_in_use_on_the_host_fails_the_task(self):
        with socket.socket() as taken:
            taken.bind(("0.0.0.0", 0))
            taken.listen()
            port = taken.getsockname()[1]
            td = self.register("nm-bridge-taken", "bridge", {
                "name": "web", "portMappings": [{"containerPort": 8080, "hostPort": port}]})
            arn = self.run_ec2(td)
            task = self.wait_for("netmodes", arn, "STOPPED")
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertTrue(task["stoppedReason"].startswith("CannotStartContainerError: "), task["stoppedReason"])
        task_id = arn.rsplit("/", 1)[1]
        self.assertNotIn(task_id, nat_rules())
        self.assertNotIn(task_id, netns_list())

    def test_host_mode_serves_on_a_host_port(self):
        port = free_port()
        td = self.register("nm-host", "host", {
            "name": "web", "command": ["httpd", "-f", "-p", str(port), "-h", "/www"],
            "portMappings": [{"containerPort": port, "hostPort": port}]})
        arn = self.run_ec2(td)
        task = self.wait_for("netmodes", arn, "RUNNING")
        self.assertEqual(task["containers"][0]["networkBindings"], [])  # ECS's agent submits none for host
        self.assertEqual(fetch(f"http://127.0.0.1:{port}/"), PAGE)
        self.assertIn(arn.rsplit("/", 1)[1], nat_rules())  # the reservation
        self.stop_and_check_gone(arn)

    def test_bridge_containers_are_named_by_their_runtime_id(self):
        # Docker names a container it is given no hostname for by its id, and ECS on EC2 gives a
        # bridge container none: the hostname is the runtime id DescribeTasks and the metadata
        # endpoint show, in /etc/hostname and, with the task's address, in /etc/hosts. The probe
        # also reads /taskWithTags: the task's tags, its container's volume, the node's clock.
        probe = ('until t=$(wget -q -O - "$ECS_CONTAINER_METADATA_URI_V4/taskWithTags") && '
                 'case "$t" in *Volumes*) true;; *) false;; esac; do sleep 0.2; done; '
                 'echo; echo "$t"; echo "NAME $(hostname)"; echo "FILE $(cat /etc/hostname)"; cat /etc/hosts; '
                 'echo PROBE-END; sleep 3600')
        td = self.ecs.register_task_definition(
            family="nm-bridge-name", networkMode="bridge", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            volumes=[{"name": "data"}],
            containerDefinitions=[{"name": "probe", "image": "busybox:net", "essential": True, "stopTimeout": 2,
                                   "command": ["sh", "-c", probe],
                                   "mountPoints": [{"sourceVolume": "data", "containerPath": "/data"}]}]
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="netmodes", taskDefinition=td, launchType="EC2",
                              tags=[{"key": "team", "value": "blue"}])
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        task = self.wait_for("netmodes", arn, "RUNNING")
        runtime_id = task["containers"][0]["runtimeId"]
        deadline = time.monotonic() + 30
        while True:
            out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn.rsplit("/", 1)[1]],
                                 capture_output=True, text=True, timeout=30).stdout
            if "PROBE-END" in out:
                break
            if time.monotonic() > deadline:
                self.fail(f"the probe printed nothing: {out!r} {self.server.log_tail()}")
            time.sleep(0.2)
        self.assertIn(f"NAME {runtime_id}\n", out)
        self.assertIn(f"FILE {runtime_id}\n", out)
        doc = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        container = doc["Containers"][0]
        self.assertEqual(container["DockerId"], runtime_id)
        ip = container["Networks"][0]["IPv4Addresses"][0]
        self.assertIn(f"{ip}\t{runtime_id}\n", out)
        self.assertEqual(doc["TaskTags"], {"team": "blue"})
        self.assertEqual([v["Destination"] for v in container["Volumes"]], ["/data"])
        self.assertTrue(container["Volumes"][0]["Source"].endswith("/volumes/data"), container["Volumes"])
        self.assertNotIn("VPCID", doc)  # a bridge task: no VPC
        self.assertIn(doc["ClockDrift"]["ClockSynchronizationStatus"], ("SYNCHRONIZED", "NOT_SYNCHRONIZED"))
        self.stop_and_check_gone(arn)

    def test_fargate_bindings_and_metadata_endpoint(self):
        # Until the probe's own facts are in (they are recorded once its start returns).
        probe = ('until t=$(wget -q -O - "$ECS_CONTAINER_METADATA_URI_V4/task") && '
                 'case "$t" in *\'"Name":"probe"\'*) true;; *) false;; esac; do sleep 0.2; done; '
                 'echo; echo "$t"; echo METADATA-END; sleep 3600')
        td = self.ecs.register_task_definition(
            family="nm-fargate", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
            memory="512", containerDefinitions=[
                {"name": "web", "image": "busybox:net", "essential": True, "stopTimeout": 2,
                 "portMappings": [{"containerPort": 8080}]},
                {"name": "probe", "image": "busybox:net", "essential": False, "stopTimeout": 2,
                 "command": ["sh", "-c", probe]}])["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="netmodes", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        task = self.wait_for("netmodes", arn, "RUNNING")
        ip = {d["name"]: d["value"] for d in task["attachments"][0]["details"]}["privateIPv4Address"]
        web = next(c for c in task["containers"] if c["name"] == "web")
        self.assertEqual(web["networkBindings"],
                         [{"bindIP": ip, "containerPort": 8080, "hostPort": 8080, "protocol": "tcp"}])
        self.assertEqual(fetch(f"http://{ip}:8080/"), PAGE)

        deadline = time.monotonic() + 30
        while True:
            out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn.rsplit("/", 1)[1],
                                  "--container", "probe"], capture_output=True, text=True, timeout=30).stdout
            if "METADATA-END" in out:
                break
            if time.monotonic() > deadline:
                self.fail(f"the probe printed no metadata: {out!r} {self.server.log_tail()}")
            time.sleep(0.2)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        self.assertTrue(lines, out)
        doc = json.loads(lines[-1])
        self.assertEqual(doc["TaskARN"], arn)
        self.assertEqual(doc["Cluster"], task["clusterArn"])  # Fargate: the ARN, as AWS
        self.assertEqual(sorted(c["Name"] for c in doc["Containers"]), ["probe", "web"])
        for c in doc["Containers"]:
            self.assertEqual(c["Networks"][0]["IPv4Addresses"], [ip], c)
        self.assertNotIn("VPCID", doc)  # Fargate: only for tasks on EC2 instances, as AWS
        self.assertIn(doc["ClockDrift"]["ClockSynchronizationStatus"], ("SYNCHRONIZED", "NOT_SYNCHRONIZED"))
        self.stop_and_check_gone(arn)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RemoteAgentBridge(h.PaddockTestCase):
    """`paddock agent`: a bridge-mode task's port published on the host, and its metadata endpoint,
    whose Task comes from DescribeTasks with the agent's credentials."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        from test_remote_agent import AgentProcess, write_agent_credentials
        creds = os.path.join(cls.tmp, "agent-credentials")
        write_agent_credentials(cls.state_dir, cls.account, creds)
        cls.agent_dir = os.path.join(cls.tmp, "agent")
        os.makedirs(cls.agent_dir)
        th.httpd_image(cls.agent_dir, cls.tmp, "busybox:net", PAGE, applets=("wget", "sleep"))
        cls.ecs.create_cluster(clusterName="remote-net")
        cls.agent_args = ["--endpoint", cls.server.endpoint, "--cluster", "remote-net", "--state-dir", cls.agent_dir,
                          "--credentials", creds, "--profile", "agent"]
        cls.agent_process = AgentProcess
        cls.agent = AgentProcess(cls.agent_args, os.path.join(cls.tmp, "agent.log")).start()
        cls.addClassCleanup(lambda: cls.agent.stop())
        cls.addClassCleanup(lambda: stop_all(cls.ecs, "remote-net"))

    def wait_for(self, arn, status, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            task = self.ecs.describe_tasks(cluster="remote-net", tasks=[arn])["tasks"][0]
            if task["lastStatus"] == status:
                return task
            if task["lastStatus"] == "STOPPED" or time.monotonic() > deadline:
                self.fail(f"task did not reach {status}: {task}\nagent: {self.agent.log_tail()}")
            time.sleep(0.05)

    def test_bridge_task_port_and_metadata(self):
        # The probe waits for Ports: the bindings arrive with the container's RUNNING report, after
        # the container has started.
        probe = ('until t=$(wget -q -O - "$ECS_CONTAINER_METADATA_URI_V4/task") && '
                 'case "$t" in *HostPort*) true;; *) false;; esac; do sleep 0.2; done; '
                 'echo; echo "$t"; echo METADATA-END; exec httpd -f -p 8080 -h /www')
        td = self.ecs.register_task_definition(
            family="rn-bridge", networkMode="bridge", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "web", "image": "busybox:net", "essential": True, "stopTimeout": 2,
                                   "command": ["sh", "-c", probe],
                                   "portMappings": [{"containerPort": 8080}]}])["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="remote-net", taskDefinition=td, launchType="EC2")
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        task = self.wait_for(arn, "RUNNING")
        b = task["containers"][0]["networkBindings"]
        self.assertEqual(len(b), 1, task)
        self.assertEqual(fetch(f"http://127.0.0.1:{b[0]['hostPort']}/"), PAGE)

        deadline = time.monotonic() + 30
        while True:
            out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.agent_dir, arn.rsplit("/", 1)[1]],
                                 capture_output=True, text=True, timeout=30).stdout
            if "METADATA-END" in out:
                break
            if time.monotonic() > deadline:
                self.fail(f"no metadata printed: {out!r}\nagent: {self.agent.log_tail()}")
            time.sleep(0.2)
        doc = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        self.assertEqual(doc["TaskARN"], arn)
        self.assertEqual(doc["Cluster"], "remote-net")  # EC2: the name, as AWS
        self.assertEqual([c["Name"] for c in doc["Containers"]], ["web"])
        self.assertEqual(doc["Containers"][0]["Ports"],
                         [{"ContainerPort": 8080, "Protocol": "tcp", "HostPort": b[0]["hostPort"], "HostIp": "0.0.0.0"}])

        # kill -9 and a new agent: the task is re-adopted (its published port keeps serving), and
        # the leftovers of a task it does not have under its prefix — a published port, a bridge
        # address with its namespace, a bare namespace — are removed at start; another prefix's
        # namespace is not.
        task_id = arn.rsplit("/", 1)[1]
        ns = next(line.split()[0] for line in netns_list().splitlines() if task_id in line)
        prefix = ns[:-len(task_id)]
        gone_id, bare_id = uuid.uuid4().hex, uuid.uuid4().hex
        gone, bare, other = prefix + gone_id, prefix + bare_id, "q0000z-" + uuid.uuid4().hex
        for name in (gone, bare, other):
            subprocess.run(["ip", "netns", "add", name], check=True)
            self.addCleanup(subprocess.run, ["ip", "netns", "delete", name], capture_output=True)
        rule = next(line for line in nat_rules().splitlines() if task_id in line and "DNAT" in line)
        rule = rule.replace(task_id, gone_id).replace(f"--dport {b[0]['hostPort']} ", f"--dport {free_port()} ")
        subprocess.run(["iptables", "-w", "-t", "nat", *rule.split()], check=True)
        self.addCleanup(subprocess.run, ["iptables", "-w", "-t", "nat", "-D", *rule.split()[1:]], capture_output=True)
        book = "/run/paddock/net/bridge-addresses"
        subprocess.run(["flock", book + ".lock", "sh", "-c", f"echo '172.17.255.250 {gone_id}' >> {book}"], check=True)
        self.addCleanup(subprocess.run, ["flock", book + ".lock", "sed", "-i", f"/ {gone_id}$/d", book])

        self.agent.kill()
        type(self).agent = self.agent_process(self.agent_args, os.path.join(self.tmp, "agent.log")).start()
        deadline = time.monotonic() + 20
        while bare in netns_list():
            if time.monotonic() > deadline:
                self.fail(f"the leftover namespace {bare} is still there\nagent: {self.agent.log_tail()}")
            time.sleep(0.1)
        self.assertNotIn(gone, netns_list())
        self.assertNotIn(gone_id, nat_rules())
        with open(book) as f:
            self.assertNotIn(gone_id, f.read())
        self.assertIn(other, netns_list())
        self.assertIn(ns, netns_list())
        self.assertEqual(fetch(f"http://127.0.0.1:{b[0]['hostPort']}/"), PAGE)
        self.assertEqual(self.wait_for(arn, "RUNNING")["lastStatus"], "RUNNING")

        self.ecs.stop_task(cluster="remote-net", task=arn)
        self.wait_for(arn, "STOPPED")
        self.assertNotIn(task_id, nat_rules())
        self.assertNotIn(task_id, netns_list())


if __name__ == "__main__":
    unittest.main()
