"""Ownership of nodes, host-level grants, Fargate fidelity, values written into containers' files,
and the AWS profile: the attacks of findings 1, 11, 12 and 14 of the 2026-12 security review
(docs/security.md), each performed against a real server and asserted to fail.

- Finding 1: an in-process EC2 instance ([[ec2_instance]]) belongs to the account `paddock up`
  bootstrapped (or its `account` key), never to "the first account by id": a tenant with a lower
  id that creates the cluster first never gets it, across restarts, and its host-path +
  capabilities task finds no instance.
- Host-level grants (host paths, added capabilities, privileged, host namespaces) run only on
  instances whose operator allowed them: placement answers ATTRIBUTE elsewhere (RunTask, StartTask,
  services' events), and the agent refuses by its own option when a task gets there anyway.
- Finding 12: what Fargate refuses is refused at registration with AWS's texts, and a definition
  Fargate cannot run is not FARGATE-compatible (RunTask / CreateService / UpdateService say so).
- Finding 11: newlines in extraHosts / dnsServers / dnsSearchDomains and '=' or NUL in environment
  names are refused at registration and in RunTask's overrides.
- Finding 14: `paddock up` never overwrites another Paddock's `paddock` profile.

Classes that run containers need root, crun and busybox-static (they skip cleanly otherwise).
"""

import configparser
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs, image  # noqa: E402
from test_remote_agent import AgentProcess  # noqa: E402

HOST_ACCESS = "ecs.capability.paddock.host-access"
PRIVILEGED = "com.amazonaws.ecs.capability.privileged-container"
ATTACKER = "000000000001"  # lower than any random bootstrap account id


def wait_until(test, what, fn, timeout=20, context=lambda: ""):
    """Polls fn() until it returns something truthy (returned); fails `test` (a TestCase, or its
    class in setUpClass) after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} {context()}")
        time.sleep(0.1)


def banner(test, server, label):
    """The value of `paddock up`'s banner line `label` ("account", "profile", ...), once printed."""
    def value():
        for line in list(server.stdout_lines):
            parts = line.strip().split(None, 1)
            if len(parts) == 2 and parts[0] == label:
                return parts[1]
        return None
    return wait_until(test, f"the banner's {label}", value, timeout=10, context=lambda: str(server.stdout_lines))


def first_profile_key(path):
    """(access key id, secret) of the one profile in a credentials file Paddock wrote."""
    cp = configparser.ConfigParser()
    cp.read(path)
    section = cp.sections()[0]
    return cp[section]["aws_access_key_id"], cp[section]["aws_secret_access_key"]


def isolated_aws_env(home):
    """An environment whose AWS files live under `home`, so `paddock up` never touches the real ones."""
    env = dict(os.environ)
    env["HOME"] = home
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(home, ".aws", "credentials")
    env["AWS_CONFIG_FILE"] = os.path.join(home, ".aws", "config")
    return env


def escape_definition(scratch, family="esc"):
    """The finding's attack: the host's / at /host, SYS_ADMIN and NET_ADMIN, a file written as root."""
    return dict(
        family=family, networkMode="none", requiresCompatibilities=["EC2"],
        volumes=[{"name": "h", "host": {"sourcePath": "/"}}],
        containerDefinitions=[{
            "name": "c", "image": "busybox:own", "memory": 64, "stopTimeout": 2,
            "mountPoints": [{"sourceVolume": "h", "containerPath": "/host"}],
            "linuxParameters": {"capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}},
            "command": ["/bin/sh", "-c", f"id > /host{scratch}/PWNED; grep CapEff /proc/self/status >> /host{scratch}/PWNED"],
        }])


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class Ec2InstanceOwnership(unittest.TestCase):
    """Finding 1 as reproduced: `paddock up` with an [[ec2_instance]] and no `account` key; a tenant
    whose id is lower than the bootstrap account's creates the instance's cluster first."""

    CONFIG = ("agent_timeout_seconds = 3\n"  # the registration loop runs every second
              "[[ec2_instance]]\ncluster = \"ec2c\"\ncpu = 1024\nmemory = 512\n")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="paddock-own-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.state_dir = os.path.join(cls.tmp, "state")
        cls.scratch = os.path.join(cls.tmp, "scratch")
        os.makedirs(cls.scratch)
        cls.config = os.path.join(cls.tmp, "paddock.toml")
        with open(cls.config, "w") as f:
            f.write(cls.CONFIG)
        cls.env = isolated_aws_env(os.path.join(cls.tmp, "home"))
        cls.server = cls.start()
        cls.addClassCleanup(lambda: cls.server.stop())
        cls.owner = banner(cls, cls.server, "account")
        cls.owner_key = first_profile_key(os.path.join(cls.state_dir, "credentials"))
        _, akey, asecret = h.create_account(cls.state_dir, ATTACKER, "attacker")
        cls.attacker_key = (akey, asecret)
        cls.connect()
        root = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"), applets=("id", "grep"))
        image(cls.state_dir, "import-rootfs", root, "--name", "busybox:own", "--cmd", "sh")

    @classmethod
    def start(cls, config=None):
        return h.Server(cls.state_dir, ["--config", config or cls.config], mode="up", env=cls.env).start()

    @classmethod
    def connect(cls):
        cls.ecs = h.ecs_client(cls.server.endpoint, *cls.owner_key)
        cls.attacker = h.ecs_client(cls.server.endpoint, *cls.attacker_key)

    @classmethod
    def restart(cls, config=None):
        cls.server.stop()
        cls.server = cls.start(config)
        cls.connect()

    def instances(self, client):
        arns = client.list_container_instances(cluster="ec2c")["containerInstanceArns"]
        if not arns:
            return []
        return client.describe_container_instances(cluster="ec2c", containerInstances=arns)["containerInstances"]

    def connected_instance(self, client=None):
        client = client or self.ecs
        found = wait_until(self, "the in-process instance in the owner's cluster",
                           lambda: [ci for ci in self.instances(client) if ci["agentConnected"]],
                           context=self.server.log_tail)
        self.assertEqual(len(found), 1, found)
        return found[0]

    def test_1_the_instance_never_registers_in_a_lower_account_id(self):
        self.assertLess(ATTACKER, self.owner)
        self.attacker.create_cluster(clusterName="ec2c")  # first, as in the finding
        self.ecs.create_cluster(clusterName="ec2c")
        ci = self.connected_instance()
        self.assertIn(f":{self.owner}:container-instance/ec2c/", ci["containerInstanceArn"])
        self.assertEqual(self.instances(self.attacker), [])
        self.assertNotIn(ATTACKER, self.server.log_tail())

        # The attack itself: host path + capabilities on EC2 in the attacker's cluster finds nothing.
        self.attacker.register_task_definition(**escape_definition(self.scratch))
        with self.assertRaises(ClientError) as cm:
            self.attacker.run_task(cluster="ec2c", taskDefinition="esc", launchType="EC2")
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidParameterException")
        self.assertEqual(cm.exception.response["Error"]["Message"], "No Container Instances were found in your cluster.")
        self.assertEqual(self.instances(self.attacker), [])
        self.assertFalse(os.path.exists(os.path.join(self.scratch, "PWNED")))

    def test_2_a_restart_keeps_it_where_it_was(self):
        before = self.connected_instance()
        self.restart()
        after = self.connected_instance()
        self.assertEqual(after["containerInstanceArn"], before["containerInstanceArn"])
        self.assertEqual(self.instances(self.attacker), [])

    def test_3_a_changed_account_key_registers_it_in_the_new_account(self):
        ops, okey, osecret = h.create_account(self.state_dir, None, "ops")
        h.ecs_client(self.server.endpoint, okey, osecret).create_cluster(clusterName="ec2c")
        config = os.path.join(self.tmp, "ops.toml")
        with open(config, "w") as f:
            f.write(self.CONFIG + f"account = \"{ops}\"\n")
        self.restart(config)
        try:
            ci = self.connected_instance(h.ecs_client(self.server.endpoint, okey, osecret))
            self.assertIn(f":{ops}:container-instance/ec2c/", ci["containerInstanceArn"])
            self.assertEqual(self.instances(self.attacker), [])
        finally:
            self.restart()


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class NoOwnerNoRegistration(h.PaddockTestCase):
    """A plain `paddock server` with real credentials on a state directory `paddock up` never
    bootstrapped: an [[ec2_instance]] without `account` registers nowhere (not in the only, nor
    the first, account) and says once what it needs."""

    CONFIG = "agent_timeout_seconds = 3\n[[ec2_instance]]\ncluster = \"orphan\"\n"

    def test_it_says_it_needs_an_account(self):
        self.ecs.create_cluster(clusterName="orphan")
        needs = 'set account = "<12-digit account id>"'
        log = wait_until(self, "the instance's message", lambda: needs in self.server.log_tail(20000) and
                         self.server.log_tail(20000), context=self.server.log_tail)
        self.assertEqual(log.count("[[ec2_instance]] orphan: not registered yet"), 1, log)
        self.assertEqual(self.ecs.list_container_instances(cluster="orphan")["containerInstanceArns"], [])


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class HostLevelGrants(h.PaddockTestCase):
    """Two in-process instances of one account: "locked" (host_access off, the default) and "open"
    (host_access = true). Grants run only on "open"; on "locked" placement says ATTRIBUTE, services
    say ECS's event, and the agent refuses by its own option when the attribute is forged."""

    ACCOUNT_ID = "210000000010"
    CONFIG = ("agent_timeout_seconds = 3\n[scheduler]\nresync_seconds = 1\nbackoff_base_seconds = 1\n"
              "[[ec2_instance]]\ncluster = \"locked\"\naccount = \"210000000010\"\ncpu = 1024\nmemory = 512\n"
              "[[ec2_instance]]\ncluster = \"open\"\naccount = \"210000000010\"\nhost_access = true\n"
              "cpu = 1024\nmemory = 512\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        root = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"), applets=("id", "grep", "readlink", "head", "wc"))
        image(cls.state_dir, "import-rootfs", root, "--name", "busybox:own", "--cmd", "sh")
        cls.scratch = os.path.join(cls.tmp, "scratch")
        os.makedirs(cls.scratch)
        cls.ecs.create_cluster(clusterName="locked")
        cls.ecs.create_cluster(clusterName="open")
        cls.ecs.register_task_definition(**escape_definition(cls.scratch))
        cls.ecs.register_task_definition(
            family="caps", networkMode="none", requiresCompatibilities=["EC2"],
            containerDefinitions=[{"name": "c", "image": "busybox:own", "memory": 64, "command": ["true"],
                                   "linuxParameters": {"capabilities": {"add": ["NET_ADMIN"]}}}])
        cls.ecs.register_task_definition(
            family="priv", networkMode="none", requiresCompatibilities=["EC2"],
            containerDefinitions=[{"name": "c", "image": "busybox:own", "memory": 64, "command": ["true"],
                                   "privileged": True}])
        cls.ecs.register_task_definition(
            family="hostnet", networkMode="host", requiresCompatibilities=["EC2"],
            containerDefinitions=[{"name": "c", "image": "busybox:own", "memory": 64, "command": ["true"]}])
        cls.ecs.register_task_definition(
            family="dev", networkMode="none", requiresCompatibilities=["EC2"],
            containerDefinitions=[{"name": "c", "image": "busybox:own", "memory": 64,
                                   "command": ["sh", "-c", "head -c 3 /dev/myzero | wc -c"],
                                   "linuxParameters": {"devices": [{"hostPath": "/dev/zero",
                                                                    "containerPath": "/dev/myzero",
                                                                    "permissions": ["read"]}]}}])

    def instance(self, cluster):
        def connected():
            arns = self.ecs.list_container_instances(cluster=cluster)["containerInstanceArns"]
            if not arns:
                return None
            ci = self.ecs.describe_container_instances(cluster=cluster, containerInstances=arns)["containerInstances"][0]
            return ci if ci["agentConnected"] else None
        return wait_until(self, f"the {cluster} instance", connected, context=self.server.log_tail)

    def test_1_only_the_open_instance_advertises_host_access(self):
        locked = {a["name"] for a in self.instance("locked")["attributes"]}
        opened = {a["name"] for a in self.instance("open")["attributes"]}
        self.assertNotIn(HOST_ACCESS, locked)
        self.assertNotIn(PRIVILEGED, locked)
        self.assertIn(HOST_ACCESS, opened)
        self.assertIn(PRIVILEGED, opened)
        td = self.ecs.describe_task_definition(taskDefinition="esc")["taskDefinition"]
        self.assertIn({"name": HOST_ACCESS}, td["requiresAttributes"])
        self.assertNotIn("FARGATE", td["compatibilities"])
        priv = self.ecs.describe_task_definition(taskDefinition="priv")["taskDefinition"]
        self.assertIn({"name": PRIVILEGED}, priv["requiresAttributes"])

    def test_2_placement_refuses_grants_on_the_locked_instance(self):
        ci = self.instance("locked")
        for family in ("esc", "caps", "priv", "hostnet", "dev"):
            r = self.ecs.run_task(cluster="locked", taskDefinition=family, launchType="EC2")
            self.assertEqual(r["tasks"], [], family)
            self.assertEqual(r["failures"], [{"arn": ci["containerInstanceArn"], "reason": "ATTRIBUTE"}], family)
            r = self.ecs.start_task(cluster="locked", taskDefinition=family, containerInstances=[ci["containerInstanceArn"]])
            self.assertEqual(r["tasks"], [], family)
            self.assertEqual(r["failures"], [{"arn": ci["containerInstanceArn"], "reason": "ATTRIBUTE"}], family)
        self.assertFalse(os.path.exists(os.path.join(self.scratch, "PWNED")))

    def test_3_the_open_instance_runs_them(self):
        self.instance("open")
        r = self.ecs.run_task(cluster="open", taskDefinition="esc", launchType="EC2")
        self.assertEqual(r["failures"], [])
        task = th.wait_for_status(self, self.ecs, "open", r["tasks"][0]["taskArn"], "STOPPED",
                                  context=self.server.log_tail)
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        with open(os.path.join(self.scratch, "PWNED")) as f:
            written = f.read()
        os.remove(os.path.join(self.scratch, "PWNED"))
        self.assertIn("uid=0", written)

    def test_3b_privileged_host_namespaces_and_devices_are_honoured_where_allowed(self):
        self.instance("open")
        probe = ("grep CapEff /proc/self/status; readlink /proc/self/ns/pid; readlink /proc/self/ns/ipc; "
                 f"readlink /proc/self/ns/pid > /host{self.scratch}/ns")
        self.ecs.register_task_definition(
            family="hostns", networkMode="none", requiresCompatibilities=["EC2"], pidMode="host", ipcMode="host",
            volumes=[{"name": "h", "host": {"sourcePath": "/"}}],
            containerDefinitions=[{"name": "c", "image": "busybox:own", "memory": 64, "privileged": True,
                                   "mountPoints": [{"sourceVolume": "h", "containerPath": "/host"}],
                                   "command": ["sh", "-c", probe]}])
        r = self.ecs.run_task(cluster="open", taskDefinition="hostns", launchType="EC2")
        self.assertEqual(r["failures"], [])
        task = th.wait_for_status(self, self.ecs, "open", r["tasks"][0]["taskArn"], "STOPPED",
                                  context=self.server.log_tail)
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        with open(os.path.join(self.scratch, "ns")) as f:
            pid_ns = f.read().strip()
        os.remove(os.path.join(self.scratch, "ns"))
        self.assertEqual(pid_ns, os.readlink("/proc/self/ns/pid"))  # the host's PID namespace
        out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, task["taskArn"].rsplit("/", 1)[1]],
                             capture_output=True, text=True, timeout=30).stdout
        cap_eff = int(out.split("CapEff:")[1].split()[0], 16)
        self.assertTrue(cap_eff & (1 << 21), out)  # CAP_SYS_ADMIN: privileged
        self.assertIn(os.readlink("/proc/self/ns/ipc"), out)  # the host's IPC namespace

        # A host device, read through its container path.
        r = self.ecs.run_task(cluster="open", taskDefinition="dev", launchType="EC2")
        self.assertEqual(r["failures"], [])
        task = th.wait_for_status(self, self.ecs, "open", r["tasks"][0]["taskArn"], "STOPPED",
                                  context=self.server.log_tail)
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, task["taskArn"].rsplit("/", 1)[1]],
                             capture_output=True, text=True, timeout=30).stdout
        self.assertEqual(out.strip(), "3")

    def test_4_the_agent_refuses_by_its_own_option_when_the_attribute_is_forged(self):
        ci = self.instance("locked")
        # The account puts the attributes on its own instance: placement is satisfied...
        self.ecs.put_attributes(cluster="locked", attributes=[
            {"name": HOST_ACCESS, "targetType": "container-instance", "targetId": ci["containerInstanceArn"]}])
        self.ecs.register_task_definition(
            family="pidhost", networkMode="none", requiresCompatibilities=["EC2"], pidMode="host",
            containerDefinitions=[{"name": "c", "image": "busybox:own", "memory": 64, "command": ["true"]}])
        tasks = {}
        try:
            for family in ("esc", "pidhost"):
                r = self.ecs.run_task(cluster="locked", taskDefinition=family, launchType="EC2")
                self.assertEqual(r["failures"], [])
                tasks[family] = th.wait_for_status(self, self.ecs, "locked", r["tasks"][0]["taskArn"], "STOPPED",
                                                   context=self.server.log_tail)
        finally:
            self.ecs.delete_attributes(cluster="locked", attributes=[
                {"name": HOST_ACCESS, "targetType": "container-instance", "targetId": ci["containerInstanceArn"]}])
        # ...and the agent, which knows its operator's option, refuses.
        suffix = (": host-level access is not allowed on this container instance (its operator allows it with "
                  "host_access = true in [[ec2_instance]] or paddock agent --allow-host-access; Fargate never does)")
        for family, what in (("esc", "volume 'h' binds the host path '/'"), ("pidhost", "pidMode 'host'")):
            task = tasks[family]
            self.assertEqual(task["stopCode"], "TaskFailedToStart", task)
            self.assertEqual(task["stoppedReason"], "ResourceInitializationError: " + what + suffix)
            self.assertNotIn("exitCode", task["containers"][0])
        self.assertFalse(os.path.exists(os.path.join(self.scratch, "PWNED")))

    def test_5_a_service_of_grants_on_the_locked_instance_gets_ecs_event(self):
        ci = self.instance("locked")
        self.ecs.create_service(cluster="locked", serviceName="esc-svc", taskDefinition="caps", desiredCount=1,
                                launchType="EC2")
        try:
            want = ("(service esc-svc) was unable to place a task because no container instance met all of its "
                    f"requirements. The closest matching (container-instance {ci['containerInstanceArn'].rsplit('/', 1)[1]}) "
                    "is missing an attribute required by your task.")

            def event():
                events = self.ecs.describe_services(cluster="locked", services=["esc-svc"])["services"][0]["events"]
                return [e["message"] for e in events if e["message"].startswith(want)]
            wait_until(self, "the service's placement event", event, context=self.server.log_tail)
            self.assertEqual(self.ecs.list_tasks(cluster="locked", serviceName="esc-svc")["taskArns"], [])
        finally:
            self.ecs.delete_service(cluster="locked", service="esc-svc", force=True)


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class RemoteAgentHostAccess(h.PaddockTestCase):
    """`paddock agent` advertises host access only with --allow-host-access, and a restart without
    the flag withdraws it."""

    def test_the_flag_decides_the_attributes(self):
        self.ecs.create_cluster(clusterName="remote")
        from test_remote_agent import write_agent_credentials
        creds = os.path.join(self.tmp, "agent-credentials")
        write_agent_credentials(self.state_dir, self.account, creds)
        agent_dir = os.path.join(self.tmp, "agent")
        base = ["--endpoint", self.server.endpoint, "--cluster", "remote", "--state-dir", agent_dir,
                "--credentials", creds, "--profile", "agent"]

        def names(arn):
            ci = self.ecs.describe_container_instances(cluster="remote", containerInstances=[arn])["containerInstances"][0]
            return {a["name"] for a in ci["attributes"]}
        for flags, has in (((), False), (("--allow-host-access",), True), ((), False)):
            agent = AgentProcess(base + list(flags), os.path.join(self.tmp, "agent.log")).start()
            try:
                self.assertEqual(HOST_ACCESS in names(agent.arn), has, flags)
                self.assertEqual(PRIVILEGED in names(agent.arn), has, flags)
            finally:
                agent.stop()


class FargateFidelity(h.PaddockTestCase):
    """Finding 12: host-level options are refused for Fargate with AWS's texts, never dropped."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        cls.network = {"awsvpcConfiguration": {"subnets": [cls.subnet]}}
        cls.ecs.create_cluster(clusterName="fg", capacityProviders=["FARGATE"])

    def definition(self, family, container=None, **task):
        c = {"name": "c", "image": "busybox:own", "command": ["true"]}
        c.update(container or {})
        d = dict(family=family, networkMode="awsvpc", cpu="256", memory="512", containerDefinitions=[c])
        d.update(task)
        return d

    def test_requires_compatibilities_fargate_refuses_with_aws_texts(self):
        cases = [
            ({"privileged": True}, {}, "Fargate requires that the 'privileged' setting be 'false'"),
            ({}, {"pidMode": "host"},
             "Tasks using the Fargate launch type do not support pidMode 'host'. The supported value for pidMode is 'task'."),
            ({}, {"ipcMode": "host"}, "Tasks using the Fargate launch type do not support ipcMode."),
            ({}, {"volumes": [{"name": "h", "host": {"sourcePath": "/"}}]},
             "Fargate compatible task definitions do not support sourcePath"),
            ({"linuxParameters": {"devices": [{"hostPath": "/dev/fuse"}]}}, {},
             "Fargate compatible task definitions do not support devices"),
            ({"linuxParameters": {"capabilities": {"add": ["SYS_ADMIN"]}}}, {}, "SYS_ADMIN is not allowed on Fargate."),
            ({"dockerSecurityOptions": ["apparmor=unconfined"]}, {},
             "Fargate compatible task definitions do not support dockerSecurityOptions"),
            ({"systemControls": [{"namespace": "kernel.panic", "value": "1"}]}, {},
             "Fargate compatible task definitions do not support the systemControls namespace 'kernel.panic' (only "
             "net.*, fs.mqueue.* and the IPC kernel.* parameters are namespaced)"),
            ({"linuxParameters": {"sharedMemorySize": 64}}, {},
             "Fargate compatible task definitions do not support sharedMemorySize"),
        ]
        for container, task, message in cases:
            self.assertClientError("ClientException", self.ecs.register_task_definition,
                                   **self.definition("fg-bad", container, requiresCompatibilities=["FARGATE"], **task),
                                   message=message)
        # SYS_PTRACE is what Fargate adds.
        self.ecs.register_task_definition(**self.definition(
            "fg-ptrace", {"linuxParameters": {"capabilities": {"add": ["SYS_PTRACE"]}}}, requiresCompatibilities=["FARGATE"]))

    def test_a_definition_fargate_cannot_run_is_not_run_on_fargate(self):
        # The finding's definition, without requiresCompatibilities: registered, for EC2 only.
        td = self.ecs.register_task_definition(**self.definition(
            "fg-host", {"privileged": True, "user": "0", "dockerSecurityOptions": ["no-new-privileges"],
                        "systemControls": [{"namespace": "net.core.somaxconn", "value": "1024"}]},
            pidMode="host", ipcMode="host"))["taskDefinition"]
        self.assertEqual(td["compatibilities"], ["EC2"])
        message = "Task definition does not support launch_type FARGATE."
        self.assertClientError("InvalidParameterException", self.ecs.run_task, cluster="fg", taskDefinition="fg-host",
                               launchType="FARGATE", networkConfiguration=self.network, message=message)
        self.assertClientError("InvalidParameterException", self.ecs.run_task, cluster="fg", taskDefinition="fg-host",
                               capacityProviderStrategy=[{"capacityProvider": "FARGATE"}],
                               networkConfiguration=self.network, message=message)
        self.assertClientError("InvalidParameterException", self.ecs.create_service, cluster="fg", serviceName="s1",
                               taskDefinition="fg-host", desiredCount=0, launchType="FARGATE",
                               networkConfiguration=self.network, message=message)
        # A Fargate service cannot be moved onto it either.
        self.ecs.register_task_definition(**self.definition("fg-ok", requiresCompatibilities=["FARGATE"]))
        self.ecs.create_service(cluster="fg", serviceName="s2", taskDefinition="fg-ok", desiredCount=0,
                                launchType="FARGATE", networkConfiguration=self.network)
        self.assertClientError("InvalidParameterException", self.ecs.update_service, cluster="fg", service="s2",
                               taskDefinition="fg-host", message=message)
        self.assertEqual(self.ecs.list_tasks(cluster="fg")["taskArns"], [])


class ValuesWrittenIntoContainers(h.PaddockTestCase):
    """Finding 11: the t5/t6 definitions of the reproduction, and the same through RunTask's overrides."""

    def bridge(self, family, **container):
        c = {"name": "c", "image": "busybox:own", "memory": 64}
        c.update(container)
        return dict(family=family, networkMode="bridge", containerDefinitions=[c])

    def test_injections_are_refused_at_registration(self):
        cases = [
            ({"extraHosts": [{"hostname": "a\n6.6.6.6 evil", "ipAddress": "1.2.3.4"}]},
             "Invalid extraHosts entry for container 'c': hostname 'a\\x0a6.6.6.6 evil' may contain only letters, "
             "digits, '-', '.' and '_' (1 to 255 characters, not starting with '-' or '.')."),
            ({"extraHosts": [{"hostname": "a", "ipAddress": "1.2.3.4\n5.5.5.5 injected"}]},
             "Invalid extraHosts entry for container 'c': ipAddress '1.2.3.4\\x0a5.5.5.5 injected' is not an IPv4 or "
             "IPv6 address."),
            ({"dnsServers": ["8.8.8.8\nnameserver 6.6.6.6\noptions ndots:15"]},
             "Invalid dnsServers entry for container 'c': '8.8.8.8\\x0anameserver 6.6.6.6\\x0aoptions ndots:15' is not "
             "an IPv4 or IPv6 address."),
            ({"dnsSearchDomains": ["x\nnameserver 7.7.7.7"]},
             "Invalid dnsSearchDomains entry for container 'c': 'x\\x0anameserver 7.7.7.7' is not a domain name "
             "(letters, digits, '-' and '.', 1 to 253 characters)."),
            ({"environment": [{"name": "LD_PRELOAD=/x", "value": "1"}]},
             "Invalid environment variable name for container 'c': 'LD_PRELOAD=/x' must not be empty or contain '=', "
             "a NUL character or a line break."),
            ({"environment": [{"name": "A\x00B", "value": "1"}]},
             "Invalid environment variable name for container 'c': 'A\\x00B' must not be empty or contain '=', a NUL "
             "character or a line break."),
        ]
        for container, message in cases:
            self.assertClientError("InvalidParameterException", self.ecs.register_task_definition,
                                   **self.bridge("t5", **container), message=message)
        self.assertEqual(self.ecs.list_task_definitions(familyPrefix="t5")["taskDefinitionArns"], [])

    def test_injections_are_refused_in_run_task_overrides(self):
        self.ecs.create_cluster(clusterName="vals")
        self.ecs.register_task_definition(**self.bridge("t6"))
        self.assertClientError(
            "InvalidParameterException", self.ecs.run_task, cluster="vals", taskDefinition="t6", launchType="EC2",
            overrides={"containerOverrides": [{"name": "c", "environment": [{"name": "LD_PRELOAD=/x", "value": "1"}]}]},
            message="Invalid environment variable name for container 'c': 'LD_PRELOAD=/x' must not be empty or "
                    "contain '=', a NUL character or a line break.")


class ProfileNeverOverwritten(unittest.TestCase):
    """Finding 14: two `paddock up` on one host, sharing the user's AWS files."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-prof-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env = isolated_aws_env(os.path.join(self.tmp, "home"))
        self.servers = []

    def up(self, project):
        state = os.path.join(self.tmp, project, ".paddock")
        s = h.Server(state, mode="up", env=self.env).start()
        self.servers.append(s)
        self.addCleanup(s.stop)
        return s

    def ini(self, name):
        cp = configparser.ConfigParser()
        cp.read(self.env["AWS_SHARED_CREDENTIALS_FILE" if name == "credentials" else "AWS_CONFIG_FILE"])
        return cp

    def test_the_second_paddock_gets_its_own_profile(self):
        first = self.up("proj-a")
        key_a, _ = first_profile_key(os.path.join(first.state_dir, "credentials"))
        self.assertEqual(self.ini("credentials")["paddock"]["aws_access_key_id"], key_a)

        second = self.up("proj-b")  # its files are written before it prints its endpoint
        key_b, _ = first_profile_key(os.path.join(second.state_dir, "credentials"))
        creds, config = self.ini("credentials"), self.ini("config")
        self.assertEqual(creds["paddock"]["aws_access_key_id"], key_a)  # untouched
        self.assertEqual(config["profile paddock"]["endpoint_url"], first.endpoint)
        self.assertEqual(banner(self, second, "profile"), "paddock-proj-b")
        wait_until(self, "the note", lambda: any("belongs to another Paddock" in line for line in second.stdout_lines))
        self.assertEqual(creds["paddock-proj-b"]["aws_access_key_id"], key_b)
        self.assertEqual(config["profile paddock-proj-b"]["endpoint_url"], second.endpoint)
        # The state directory's own files hold the same one profile.
        own = configparser.ConfigParser()
        own.read(os.path.join(second.state_dir, "credentials"))
        self.assertEqual(own.sections(), ["paddock-proj-b"])
        own.read(os.path.join(second.state_dir, "config"))
        self.assertEqual(own["profile paddock-proj-b"]["endpoint_url"], second.endpoint)
        # The key written works.
        ecs = h.ecs_client(second.endpoint, key_b, own["paddock-proj-b"]["aws_secret_access_key"])
        self.assertEqual(ecs.list_clusters()["clusterArns"], [])

        # Restarted, each keeps its own name (the first on a new port keeps "paddock").
        first.stop()
        again = self.up("proj-a")
        self.assertEqual(banner(self, again, "profile"), "paddock")
        self.assertEqual(self.ini("config")["profile paddock"]["endpoint_url"], again.endpoint)
        self.assertEqual(self.ini("credentials")["paddock-proj-b"]["aws_access_key_id"], key_b)


if __name__ == "__main__":
    unittest.main()
