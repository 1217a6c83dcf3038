"""Many hosts (issue 16 §3 and §4), simulated on one machine: three "hosts", each a network namespace
of its own on an underlay bridge, each running a `paddock agent` with `--overlay-address` (its
address on the underlay); two `paddock server` replicas on one PostgreSQL in the machine's own
namespace, reached by the agents over the underlay. A 9-task awsvpc service spreads over the three
hosts; its tasks reach each other by their VPC addresses across hosts through the VPC's VXLAN
overlay; another account's task on the same hosts neither reaches them nor is reached. Needs root,
crun, busybox-static, nsenter and PostgreSQL.
"""

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import pg_harness  # noqa: E402
import task_harness as th  # noqa: E402
from test_multi_server import admin, containers_of, shared_database, stop_every_task  # noqa: E402
from test_remote_agent import AgentProcess  # noqa: E402
from test_security_lifecycle import crun_containers  # noqa: E402
from test_security_network import netns_of, tcp_from  # noqa: E402

PAGE = "hello from a host of three\n"
HOSTS = 3
AGENT_TIMEOUT, HOST_LOST = 3, 6
CONFIG = (f"agent_timeout_seconds = {AGENT_TIMEOUT}\nhost_lost_seconds = {HOST_LOST}\n"
          "[scheduler]\nlease_seconds = 3\nresync_seconds = 5\n")
NETNS_DIR = "/var/run/netns"


def skip_reason():
    reason = th.skip_reason(tools=("crun", "nsenter", "ip"))
    if reason:
        return reason
    try:
        pg_harness._bindir()
    except RuntimeError as e:
        return str(e)
    return None


def run(*args, netns=None):
    cmd = list(args) if netns is None else ["nsenter", f"--net={NETNS_DIR}/{netns}", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"{cmd}: {r.stdout} {r.stderr}")
    return r.stdout


class Underlay:
    """A bridge in the machine's namespace (the hosts' shared network, its .1 the servers' address)
    and one namespace per host with a veth onto it (the host's .10 + i). `kind` (one letter) keeps
    the names and the subnet of one test class's underlay apart from another's."""

    def __init__(self, hosts=HOSTS, kind="m"):
        tag = f"{kind}{os.getpid() % 1000:03d}"
        self.octet = 20 + (os.getpid() + ord(kind)) % 200
        self.bridge = f"pdul{tag}"
        self.gateway = f"10.250.{self.octet}.1"
        self.hosts = [f"pdhost{tag}{i}" for i in range(1, hosts + 1)]
        self.veths = [f"pdh{tag}{i}" for i in range(1, hosts + 1)]

    def address(self, i):
        return f"10.250.{self.octet}.{10 + i}"

    def create(self):
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for i, (ns, veth) in enumerate(zip(self.hosts, self.veths), start=1):
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p")
            run("ip", "link", "set", veth + "p", "netns", ns)
            run("ip", "link", "set", veth, "master", self.bridge, "up")
            run("ip", "link", "set", "lo", "up", netns=ns)
            run("ip", "link", "set", veth + "p", "name", "eth0", netns=ns)
            run("ip", "addr", "add", f"{self.address(i)}/24", "dev", "eth0", netns=ns)
            run("ip", "link", "set", "eth0", "up", netns=ns)
            run("ip", "route", "add", "default", "via", self.gateway, netns=ns)
            # A host forwards its tasks' traffic, as scripts/setup prepares a real one.
            run("sysctl", "-qw", "net.ipv4.ip_forward=1", netns=ns)

    def on_host(self, i):
        """The command prefix that runs a program as on host i: in its network namespace, with a sysfs
        of its own (a real host's /sys shows its own interfaces; the agent reads them there) with the
        machine's cgroup hierarchies moved below it. A mount namespace of its own with the machine's
        propagation, so the network namespaces the agent makes (bind mounts in /run/netns) are seen
        by everyone while its /sys is private."""
        return ["nsenter", f"--net={NETNS_DIR}/{self.hosts[i - 1]}", "unshare", "--mount", "--propagation", "unchanged",
                "sh", "-c", 'mount --make-rprivate /sys && d=$(mktemp -d) && mount --rbind /sys/fs/cgroup "$d" && '
                            'mount -t sysfs sysfs /sys && mount --move "$d" /sys/fs/cgroup && rmdir "$d" && '
                            'exec "$0" "$@"']

    def remove(self):
        for ns, veth in zip(self.hosts, self.veths):
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


class UnixProxy:
    """A TCP listener on `host` that relays each connection to the Unix socket `path`: a database on a
    Unix socket reached over a simulated host's network, so cutting the host's link cuts its server
    off the database as a lost host would be."""

    def __init__(self, host, path):
        self.path = path
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.path)
            self.sockets += [client, upstream]
            h.relay(client, upstream)

    def close(self):
        self.listener.close()
        for sock in self.sockets:
            sock.close()


def fetch_from(task_arn, ip):
    """GET http://ip:8080/ from inside task `task_arn`'s network namespace: (ok, what it got)."""
    got = tcp_from(netns_of(task_arn), ip, 8080, b"GET / HTTP/1.0\r\nHost: x\r\n\r\n", timeout=3)
    return got != b"", got.decode(errors="replace")


def wait_running(test, ecs, cluster, arns, timeout):
    """Polls DescribeTasks until every task of `arns` is RUNNING and returns them; fails `test` (with
    its context()) when one stops first or the timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        tasks = ecs.describe_tasks(cluster=cluster, tasks=arns)["tasks"]
        if all(t["lastStatus"] == "RUNNING" for t in tasks):
            return tasks
        if any(t["lastStatus"] == "STOPPED" for t in tasks) or time.monotonic() > deadline:
            test.fail(f"not RUNNING: {[(t['lastStatus'], t.get('stoppedReason')) for t in tasks]}" + test.context())
        time.sleep(0.2)


def task_ip(task):
    return task["containers"][0]["networkInterfaces"][0]["privateIpv4Address"]


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class MultiHost(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shared_database(cls, "multihost")
        cls.underlay = Underlay()
        cls.addClassCleanup(cls.underlay.remove)
        cls.underlay.create()
        cls.config = os.path.join(cls.tmp, "paddock.toml")
        with open(cls.config, "w") as f:
            f.write(CONFIG)
        cls.servers, cls.agents = {}, {}
        cls.addClassCleanup(cls.stop_everything)
        for name in ("a", "b"):
            d = os.path.join(cls.tmp, name)
            os.makedirs(d)
            if name == "a":
                cls.main = admin(d, cls.url, "create-account", "--name", "main")["account"]
                cls.other = admin(d, cls.url, "create-account", "--name", "other")["account"]
            if name != "a":
                h.share_node_key(cls.servers["a"].state_dir, d)
            server = h.Server(d, ["--store", cls.url, "--config", cls.config], listen=f"{cls.underlay.gateway}:0")
            server.start()
            cls.servers[name] = server
        cls.keys = {}
        for account in (cls.main, cls.other):
            key = admin(cls.servers["a"].state_dir, cls.url, "create-access-key", "--account", account)
            cls.keys[account] = (key["accessKeyId"], key["secretAccessKey"])
        cls.ecs = {account: h.ecs_client(cls.endpoint("a"), *cls.keys[account]) for account in cls.keys}
        cls.subnets = {a: h.client("ec2", cls.endpoint("a"), *cls.keys[a]).describe_subnets()["Subnets"][0]["SubnetId"]
                       for a in cls.keys}
        cls.ecs[cls.main].create_cluster(clusterName="hosts")
        cls.ecs[cls.other].create_cluster(clusterName="hosts")
        # One agent of the main account per host — host 2's on replica b, the others on a (an agent
        # names one endpoint: agents of a dead server cannot report, so they fence themselves) —
        # and one agent of the other account on host 3.
        for i in range(1, HOSTS + 1):
            cls.start_agent(f"main{i}", cls.main, i, "b" if i == 2 else "a")
        cls.start_agent("other3", cls.other, 3, "a")
        for account in cls.keys:
            cls.ecs[account].register_task_definition(
                family="hosts-web", networkMode="awsvpc", requiresCompatibilities=["EC2"], cpu="128", memory="64",
                containerDefinitions=[{"name": "web", "image": "busybox:hosts", "essential": True, "stopTimeout": 2}])

    @classmethod
    def endpoint(cls, server):
        return f"http://{cls.underlay.gateway}:{cls.servers[server].port}"

    @classmethod
    def start_agent(cls, name, account, host, server):
        d = os.path.join(cls.tmp, "agent-" + name)
        os.makedirs(d, exist_ok=True)
        os.makedirs(d + "-work", exist_ok=True)
        creds = os.path.join(d, "credentials")
        if not os.path.exists(creds):  # a host's first start
            th.httpd_image(d, d + "-work", "busybox:hosts", PAGE)
        with open(creds, "w") as f:
            f.write(f"[agent]\naws_access_key_id = {cls.keys[account][0]}\n"
                    f"aws_secret_access_key = {cls.keys[account][1]}\n")
        agent = AgentProcess(["--endpoint", cls.endpoint(server), "--cluster", "hosts", "--state-dir", d,
                              "--credentials", creds, "--profile", "agent", "--cpu", "2048", "--memory", "2048",
                              "--overlay-address", "auto"],
                             os.path.join(cls.tmp, f"agent-{name}.log"),
                             prefix=cls.underlay.on_host(host))
        cls.agents[name] = agent.start()
        return agent

    @classmethod
    def stop_everything(cls):
        try:
            for account, ecs in getattr(cls, "ecs", {}).items():
                stop_every_task(ecs, "hosts")
        finally:
            for agent in cls.agents.values():
                agent.stop()
            # A host "lost" by test 3 comes back with its link up: its agent cleans up what it left.
            for server in cls.servers.values():
                server.stop()
            # The agents' VPC router namespaces (each host's own) go with their hosts' agents.
            for name in os.listdir(NETNS_DIR):
                if name.startswith("pdv-") and cls.owned_by_a_host(name):
                    subprocess.run(["ip", "netns", "del", name], capture_output=True)

    @classmethod
    def owned_by_a_host(cls, vpc_netns):
        # A VPC router namespace's transit host end (named as the namespace) is in its host's namespace.
        for ns in cls.underlay.hosts:
            r = subprocess.run(["nsenter", f"--net={NETNS_DIR}/{ns}", "ip", "-o", "link", "show", vpc_netns],
                               capture_output=True)
            if r.returncode == 0:
                return True
        return False

    def context(self):
        return "".join(f"\nagent {n}: {a.log_tail(1500)}" for n, a in self.agents.items()) + \
            "".join(f"\nserver {n}: {s.log_tail(1500)}" for n, s in self.servers.items())

    def wait_running(self, account, arns, timeout=60):
        return wait_running(self, self.ecs[account], "hosts", arns, timeout)

    def service_tasks(self, count, timeout=90):
        ecs = self.ecs[self.main]
        deadline = time.monotonic() + timeout
        while True:
            arns = ecs.list_tasks(cluster="hosts", serviceName="web", desiredStatus="RUNNING")["taskArns"]
            if len(arns) == count:
                tasks = ecs.describe_tasks(cluster="hosts", tasks=arns)["tasks"]
                if all(t["lastStatus"] == "RUNNING" for t in tasks):
                    return tasks
            if time.monotonic() > deadline:
                svc = ecs.describe_services(cluster="hosts", services=["web"])["services"][0]
                instances = ecs.describe_container_instances(
                    cluster="hosts", containerInstances=ecs.list_container_instances(cluster="hosts")["containerInstanceArns"])
                stopped = ecs.list_tasks(cluster="hosts", serviceName="web", desiredStatus="STOPPED")["taskArns"][:3]
                reasons = [(t["stoppedReason"], [c.get("reason") for c in t["containers"]])
                           for t in ecs.describe_tasks(cluster="hosts", tasks=stopped)["tasks"]] if stopped else []
                self.fail(f"the service did not reach {count} RUNNING tasks ({len(arns)} listed): {reasons} "
                          f"{[e['message'] for e in svc['events'][:5]]} "
                          f"{[(i['ec2InstanceId'], i['agentConnected'], i['runningTasksCount']) for i in instances['containerInstances']]}"
                          + self.context())
            time.sleep(0.3)

    def host_of(self, task):
        for name, agent in self.agents.items():
            if agent.arn == task["containerInstanceArn"]:
                return name
        self.fail(f"no agent runs {task['taskArn']}")

    def test_1_a_service_spreads_over_the_hosts_and_its_tasks_reach_each_other_across_hosts(self):
        ecs = self.ecs[self.main]
        ecs.create_service(cluster="hosts", serviceName="web", taskDefinition="hosts-web", desiredCount=9,
                           launchType="EC2",
                           placementStrategy=[{"type": "spread", "field": "instanceId"}],
                           networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnets[self.main]]}})
        tasks = self.service_tasks(9, timeout=60)
        per_host = {}
        for t in tasks:
            per_host.setdefault(self.host_of(t), []).append(t)
        self.assertEqual(sorted(len(v) for v in per_host.values()), [3, 3, 3], per_host.keys())
        # Every host reaches a task of every other host by its VPC address, through the overlay.
        for src in ("main1", "main2", "main3"):
            for dst in ("main1", "main2", "main3"):
                if src == dst:
                    continue
                ok, body = fetch_from(per_host[src][0]["taskArn"], task_ip(per_host[dst][0]))
                self.assertTrue(ok, f"{src} -> {dst} ({task_ip(per_host[dst][0])}): {body}" + self.context())
                self.assertIn(PAGE.strip(), body)

    def test_2_another_accounts_task_on_the_same_hosts_neither_reaches_nor_is_reached(self):
        main_tasks = self.service_tasks(9)
        other = self.ecs[self.other]
        r = other.run_task(cluster="hosts", taskDefinition="hosts-web", launchType="EC2",
                           networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnets[self.other]]}})
        self.assertEqual(r["failures"], [], self.context())
        theirs = self.wait_running(self.other, [r["tasks"][0]["taskArn"]])[0]
        by_host = {self.host_of(t): t for t in main_tasks}
        mine = by_host["main1"]
        # Across hosts (main1 <-> other3) and on one host (main3 <-> other3): no packet crosses VPCs.
        for peer in (mine, by_host["main3"]):
            ok, body = fetch_from(theirs["taskArn"], task_ip(peer))
            self.assertFalse(ok, f"the other account reached {task_ip(peer)}: {body}")
            ok, body = fetch_from(peer["taskArn"], task_ip(theirs))
            if ok:  # the same address may exist in the main account's VPC: then it must be that task's
                self.assertIn(task_ip(theirs), [task_ip(t) for t in main_tasks], body)
        other.stop_task(cluster="hosts", task=theirs["taskArn"])

    def test_3_losing_a_server_and_a_host_loses_nothing_acknowledged_and_the_service_converges_on_the_others(self):
        ecs_b = h.ecs_client(self.endpoint("b"), *self.keys[self.main], retries=0)
        # Writes through replica b while it is killed: every acknowledged one must be readable through a.
        acknowledged, stop = [], threading.Event()

        def write():
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    r = ecs_b.register_task_definition(
                        family="acked", containerDefinitions=[{"name": "c", "image": "busybox", "memory": 32,
                                                               "environment": [{"name": "N", "value": str(n)}]}])
                    acknowledged.append(r["taskDefinition"]["taskDefinitionArn"])
                except Exception:  # the replica died mid-call: unacknowledged
                    return

        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 20
        while len(acknowledged) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.servers["b"].proc.send_signal(signal.SIGKILL)
        self.servers["b"].proc.wait()
        stop.set()
        writer.join(30)
        self.assertGreaterEqual(len(acknowledged), 20)

        # Host 2 goes: its agent and its containers die, its link goes down.
        lost = self.agents["main2"]
        left = [os.path.basename(netns_of(t["taskArn"])) for t in self.service_tasks(9) if self.host_of(t) == "main2"]
        self.assertEqual(len(left), 3)
        lost_dir = os.path.join(self.tmp, "agent-main2")
        lost.kill()
        for container in crun_containers(lost_dir, ""):
            subprocess.run(["crun", "--root", os.path.join(lost_dir, "containers", "crun"), "kill", container, "KILL"],
                           capture_output=True)
        run("ip", "link", "set", "eth0", "down", netns=self.underlay.hosts[1])
        lost_at = time.monotonic()

        ecs = self.ecs[self.main]
        for arn in acknowledged:
            self.assertEqual(ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"]["taskDefinitionArn"], arn)
        # The lost host's tasks are STOPPED as ECS writes it, and replaced on hosts 1 and 3.
        tasks = self.service_tasks_on(9, {"main1", "main3"}, timeout=60)
        print(f"\nhost lost -> service back at 9 on the other hosts: {time.monotonic() - lost_at:.1f} s", file=sys.stderr)
        stopped = ecs.list_tasks(cluster="hosts", serviceName="web", desiredStatus="STOPPED")["taskArns"]
        reasons = {t["stoppedReason"] for t in ecs.describe_tasks(cluster="hosts", tasks=stopped)["tasks"]
                   if t["containerInstanceArn"] == lost.arn}
        self.assertEqual(len(reasons), 1, reasons)
        self.assertRegex(reasons.pop(), r"^Host EC2 \(instance i-[0-9a-f]+\) terminated\.$")
        # The replacements reach each other across the remaining hosts.
        by_host = {}
        for t in tasks:
            by_host.setdefault(self.host_of(t), []).append(t)
        ok, body = fetch_from(by_host["main1"][-1]["taskArn"], task_ip(by_host["main3"][-1]))
        self.assertTrue(ok, f"{body}" + self.context())

        # The host comes back: its agent (on replica a now) re-registers as the same instance and removes
        # what it left, its tasks staying STOPPED.
        run("ip", "link", "set", "eth0", "up", netns=self.underlay.hosts[1])
        run("ip", "route", "replace", "default", "via", self.underlay.gateway, netns=self.underlay.hosts[1])  # gone with the link
        back = type(self).start_agent("main2", self.main, 2, "a")
        self.assertEqual(back.arn, lost.arn)
        deadline = time.monotonic() + 60
        while crun_containers(lost_dir, "") or set(left) & set(os.listdir(NETNS_DIR)):
            if time.monotonic() > deadline:
                self.fail("the returning host kept what its lost tasks left" + self.context())
            time.sleep(0.2)

    def service_tasks_on(self, count, hosts, timeout):
        deadline = time.monotonic() + timeout
        while True:
            tasks = self.service_tasks(count, timeout=max(1, deadline - time.monotonic()))
            if {self.host_of(t) for t in tasks} <= hosts:
                return tasks
            if time.monotonic() > deadline:
                self.fail(f"service tasks still on {sorted({self.host_of(t) for t in tasks})}" + self.context())
            time.sleep(0.3)


FARGATE_PAGE = "hello from a Fargate host\n"
# A host is lost 20 s after its server last renewed its offer; the server fences its Fargate agent
# (stops its containers) 9.6 s after that, once its database calls have failed (about 10 s).
FARGATE_CONFIG = ("agent_timeout_seconds = 3\nhost_lost_seconds = 20\n"
                  "[scheduler]\nlease_seconds = 3\nresync_seconds = 5\n")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class FargateHosts(unittest.TestCase):
    """Fargate capacity spread over the hosts that offer it (issue 16 §3): two `paddock server`
    replicas on one PostgreSQL, each on a host of its own (a namespace on the underlay, its own
    sysfs, `[agent] overlay_address` its underlay address), each offering its host's Fargate capacity
    — host 1 room for two 256-CPU tasks, host 2 for four. Tasks placed through either server go to
    the host with the most room left, run on that host's server, and reach each other across the
    hosts by their VPC addresses; another account's do not."""

    CAPACITY = {1: 512, 2: 1024}  # CPU units: 2 and 4 tasks of 256

    @classmethod
    def setUpClass(cls):
        shared_database(cls, "fargatehosts")
        cls.underlay = Underlay(hosts=2, kind="f")
        cls.addClassCleanup(cls.underlay.remove)
        cls.underlay.create()
        cls.proxy = UnixProxy(cls.underlay.gateway, os.path.join(cls.pg.dir, ".s.PGSQL.5432"))
        cls.addClassCleanup(cls.proxy.close)
        cls.servers = {}
        cls.addClassCleanup(cls.stop_everything)
        for i in (1, 2):
            d = os.path.join(cls.tmp, f"server{i}")
            os.makedirs(d)
            os.makedirs(d + "-work")
            # Images are each server's own (its state directory).
            th.httpd_image(d, d + "-work", "busybox:fargate", FARGATE_PAGE)
            config = os.path.join(cls.tmp, f"server{i}.toml")
            with open(config, "w") as f:
                f.write(FARGATE_CONFIG + f"[agent]\noverlay_address = \"{cls.underlay.address(i)}\"\n"
                        f"[fargate]\ncpu = {cls.CAPACITY[i]}\nmemory = {cls.CAPACITY[i] * 2}\n")
            if i == 1:
                cls.account = admin(d, cls.url, "create-account", "--name", "main")["account"]
            else:
                h.share_node_key(cls.servers[1].state_dir, d)
            # Host 2's server reaches the database over its host's link (through the proxy), so
            # cutting the link loses the host.
            url = cls.url if i == 1 else (f"postgresql://postgres@{cls.underlay.gateway}:{cls.proxy.port}/"
                                          f"fargatehosts")
            server = h.Server(d, ["--store", url, "--config", config], listen=f"{cls.underlay.address(i)}:0",
                              prefix=cls.underlay.on_host(i))
            server.start()
            cls.servers[i] = server
        key = admin(cls.servers[1].state_dir, cls.url, "create-access-key", "--account", cls.account)
        cls.ecs = {i: h.ecs_client(cls.endpoint(i), key["accessKeyId"], key["secretAccessKey"]) for i in (1, 2)}
        cls.subnet = h.client("ec2", cls.endpoint(1), key["accessKeyId"], key["secretAccessKey"]) \
            .describe_subnets()["Subnets"][0]["SubnetId"]
        cls.ecs[1].create_cluster(clusterName="fargate")
        cls.ecs[1].register_task_definition(
            family="fargate-web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:fargate", "essential": True, "stopTimeout": 2}])

    @classmethod
    def endpoint(cls, i):
        return f"http://{cls.underlay.address(i)}:{cls.servers[i].port}"

    @classmethod
    def stop_everything(cls):
        try:
            if hasattr(cls, "ecs"):
                stop_every_task(cls.ecs[1], "fargate")
        finally:
            for server in cls.servers.values():
                server.stop()
            for name in os.listdir(NETNS_DIR):  # the servers' VPC router namespaces, made on their hosts
                if name.startswith("pdv-") and any(
                        subprocess.run(["nsenter", f"--net={NETNS_DIR}/{ns}", "ip", "-o", "link", "show", name],
                                       capture_output=True).returncode == 0 for ns in cls.underlay.hosts):
                    subprocess.run(["ip", "netns", "del", name], capture_output=True)

    def context(self):
        return "".join(f"\nserver {n}: {s.log_tail(1500)}" for n, s in self.servers.items())

    def run_tasks(self, via, count):
        return self.ecs[via].run_task(cluster="fargate", taskDefinition="fargate-web", launchType="FARGATE", count=count,
                                      networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})

    def host_of(self, arn):
        """The host whose server runs the task's container (and only that one)."""
        task_id = arn.rsplit("/", 1)[1]
        running = [i for i, s in self.servers.items() if containers_of(s.state_dir, task_id)]
        self.assertEqual(len(running), 1, f"task {task_id} runs on hosts {running}" + self.context())
        return running[0]

    def test_1_a_full_hosts_tasks_go_to_the_host_with_room_and_reach_each_other_across_hosts(self):
        # Six tasks through host 1's server, which has room for two: each goes where the most room is
        # left after it (host 1 on a tie), so host 1 takes two and host 2 four, and none fails.
        r = self.run_tasks(1, 6)
        self.assertEqual(r["failures"], [], self.context())
        arns = [t["taskArn"] for t in r["tasks"]]
        tasks = self.wait_running(arns)
        by_host = {}
        for t in tasks:
            by_host.setdefault(self.host_of(t["taskArn"]), []).append(t)
        self.assertEqual({i: len(v) for i, v in by_host.items()}, {1: 2, 2: 4})
        # Both hosts are full: the next task fails with ECS's capacity reason, through either server.
        for via in (1, 2):
            r = self.run_tasks(via, 1)
            self.assertEqual(r["tasks"], [])
            self.assertEqual([f["reason"] for f in r["failures"]],
                             ["Capacity is unavailable at this time. Please try again later or in a different "
                              "availability zone"])
        # Each host's task reaches the other host's by its VPC address, through the VPC's overlay.
        for src, dst in ((1, 2), (2, 1)):
            ok, body = fetch_from(by_host[src][0]["taskArn"], task_ip(by_host[dst][0]))
            self.assertTrue(ok, f"host {src} -> host {dst} ({task_ip(by_host[dst][0])}): {body}" + self.context())
            self.assertIn(FARGATE_PAGE.strip(), body)
        # A task stopped through the other server gives its host the room back: the next goes there.
        gone = by_host[1][0]["taskArn"]
        self.ecs[2].stop_task(cluster="fargate", task=gone, reason="room on host 1")
        self.assertTrue(th.wait_all_stopped(self.ecs[2], "fargate", [gone]), self.context())
        r = self.run_tasks(2, 1)
        self.assertEqual(r["failures"], [], self.context())
        self.wait_running([r["tasks"][0]["taskArn"]])
        self.assertEqual(self.host_of(r["tasks"][0]["taskArn"]), 1)
        self.another_accounts_task_neither_reaches_nor_is_reached(by_host[2][0]["taskArn"])

    def another_accounts_task_neither_reaches_nor_is_reached(self, make_room):
        """Another account's Fargate task on these hosts (its own VPC, with the same CIDR): across the
        hosts and on its own, no packet crosses between it and the main account's tasks."""
        self.ecs[1].stop_task(cluster="fargate", task=make_room, reason="room for another account")
        self.assertTrue(th.wait_all_stopped(self.ecs[1], "fargate", [make_room]), self.context())
        d = self.servers[1].state_dir
        other = admin(d, self.url, "create-account", "--name", "other")["account"]
        key = admin(d, self.url, "create-access-key", "--account", other)
        ecs = h.ecs_client(self.endpoint(2), key["accessKeyId"], key["secretAccessKey"])
        subnet = h.client("ec2", self.endpoint(2), key["accessKeyId"], key["secretAccessKey"]) \
            .describe_subnets()["Subnets"][0]["SubnetId"]
        ecs.create_cluster(clusterName="fargate")
        ecs.register_task_definition(
            family="fargate-web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:fargate", "essential": True, "stopTimeout": 2}])
        r = ecs.run_task(cluster="fargate", taskDefinition="fargate-web", launchType="FARGATE",
                         networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})
        self.assertEqual(r["failures"], [], self.context())
        theirs = wait_running(self, ecs, "fargate", [r["tasks"][0]["taskArn"]], 60)[0]
        self.assertEqual(self.host_of(theirs["taskArn"]), 2, "placed where there was no room")
        mine = self.ecs[1].describe_tasks(cluster="fargate",
                                          tasks=self.ecs[1].list_tasks(cluster="fargate")["taskArns"])["tasks"]
        peers = {self.host_of(t["taskArn"]): t for t in mine if task_ip(t) != task_ip(theirs)}
        self.assertEqual(set(peers), {1, 2})
        for host, peer in peers.items():  # across the hosts (1) and on its own (2)
            ok, body = fetch_from(theirs["taskArn"], task_ip(peer))
            self.assertFalse(ok, f"the other account reached {task_ip(peer)} on host {host}: {body}")
            ok, body = fetch_from(peer["taskArn"], task_ip(theirs))
            if ok:  # the same address may exist in the main account's VPC: then it must be that task's
                self.assertIn(task_ip(theirs), [task_ip(t) for t in mine], body)
        ecs.stop_task(cluster="fargate", task=theirs["taskArn"], reason="test done")
        self.assertTrue(th.wait_all_stopped(ecs, "fargate", [theirs["taskArn"]]), self.context())

    def test_2_a_lost_hosts_tasks_are_stopped_after_its_containers_and_the_service_replaces_them(self):
        ecs = self.ecs[1]
        arns = ecs.list_tasks(cluster="fargate")["taskArns"]
        for arn in arns:
            ecs.stop_task(cluster="fargate", task=arn, reason="room for test 2")
        self.assertTrue(th.wait_all_stopped(ecs, "fargate", arns), self.context())
        on_2 = self.service_with_a_task_on_host_2("lost")
        # Host 2 goes: its link down, its server cut off the database and the API. Its server
        # fences its containers off before any of its tasks is recorded STOPPED.
        run("ip", "link", "set", "eth0", "down", netns=self.underlay.hosts[1])
        lost_at = time.monotonic()
        self.wait_stopped_as_lost(on_2, "recorded STOPPED while its container still ran")
        stopped_after = time.monotonic() - lost_at
        tasks = self.service_tasks(2, exclude=set(on_2))  # back at two, on host 1
        self.assertEqual({self.host_of(t["taskArn"]) for t in tasks}, {1})
        print(f"\nhost 2 lost -> its tasks STOPPED {stopped_after:.1f} s after, the service back at 2 on host 1 "
              f"{time.monotonic() - lost_at:.1f} s after", file=sys.stderr)
        # Host 2 comes back: its server renews its offer and removes what its lost tasks left.
        left = self.namespaces_of(on_2)
        run("ip", "link", "set", "eth0", "up", netns=self.underlay.hosts[1])
        run("ip", "route", "replace", "default", "via", self.underlay.gateway, netns=self.underlay.hosts[1])
        ecs.delete_service(cluster="fargate", service="lost", force=True)
        self.wait_left_removed(on_2, left, "host 2, back, kept what its lost tasks left")

    def test_3_a_killed_servers_containers_are_fenced_by_its_watchdog_before_its_tasks_are_stopped(self):
        # A server killed with kill -9 cannot fence its containers itself: its watchdog does, once no
        # server has taken its state directory over within the fence time.
        on_2 = self.service_with_a_task_on_host_2("killed")
        self.servers[2].kill()
        killed_at = time.monotonic()
        self.wait_stopped_as_lost(on_2, "recorded STOPPED while the killed server's container still ran")
        self.assertIn("paddock fence-watch: the process of", self.servers[2].log_tail(4000))
        tasks = self.service_tasks(2, exclude=set(on_2), service="killed")
        self.assertEqual({self.host_of(t["taskArn"]) for t in tasks}, {1})
        print(f"\nserver 2 killed -> its tasks STOPPED, the service back at 2 on host 1 "
              f"{time.monotonic() - killed_at:.1f} s after", file=sys.stderr)
        # Started again on its directory, the server removes what its lost tasks left.
        left = self.namespaces_of(on_2)
        self.servers[2].start()
        self.ecs[1].delete_service(cluster="fargate", service="killed", force=True)
        self.wait_left_removed(on_2, left, "server 2, back, kept what its lost tasks left")

    def service_with_a_task_on_host_2(self, name):
        """A 2-task service `name`: the first task goes where the most room is left (host 2). Its
        tasks on host 2."""
        self.ecs[1].create_service(cluster="fargate", serviceName=name, taskDefinition="fargate-web", desiredCount=2,
                                   launchType="FARGATE",
                                   networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        on_2 = [t["taskArn"] for t in self.service_tasks(2, service=name) if self.host_of(t["taskArn"]) == 2]
        self.assertTrue(on_2, "the service has a task on host 2")
        return on_2

    def wait_stopped_as_lost(self, arns, still_running_message, timeout=60):
        """Waits until the tasks are STOPPED as a lost host's, then checks none of their containers runs."""
        deadline = time.monotonic() + timeout
        while True:
            described = self.ecs[1].describe_tasks(cluster="fargate", tasks=arns)["tasks"]
            if all(t["lastStatus"] == "STOPPED" for t in described):
                break
            if time.monotonic() > deadline:
                self.fail(f"host 2's tasks not stopped: {[t['lastStatus'] for t in described]}" + self.context())
            time.sleep(0.2)
        for t in described:
            self.assertEqual(t["stopCode"], "TerminationNotice")
            self.assertEqual(t["stoppedReason"], "Task stopped because its Fargate host was lost.")
            self.assertEqual(self.running_on_2(t["taskArn"]), [], still_running_message + self.context())

    @staticmethod
    def namespaces_of(arns):
        return [os.path.basename(p) for arn in arns for p in glob.glob(f"{NETNS_DIR}/*{arn.rsplit('/', 1)[1]}")]

    def wait_left_removed(self, arns, namespaces, message, timeout=90):
        """Waits until host 2 runs no container of the tasks and their namespaces are gone."""
        deadline = time.monotonic() + timeout
        while any(containers_of(self.servers[2].state_dir, arn.rsplit("/", 1)[1]) for arn in arns) or \
                set(namespaces) & set(os.listdir(NETNS_DIR)):
            if time.monotonic() > deadline:
                self.fail(message + self.context())
            time.sleep(0.2)

    def running_on_2(self, arn):
        """Host 2's containers of the task that still run (crun's state: a process)."""
        root = os.path.join(self.servers[2].state_dir, "containers", "crun")
        running = []
        for name in containers_of(self.servers[2].state_dir, arn.rsplit("/", 1)[1]):
            r = subprocess.run(["crun", "--root", root, "state", name], capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and json.loads(r.stdout).get("status") == "running":
                running.append(name)
        return running

    def service_tasks(self, count, exclude=frozenset(), timeout=60, service="lost"):
        ecs = self.ecs[1]
        deadline = time.monotonic() + timeout
        while True:
            arns = [a for a in ecs.list_tasks(cluster="fargate", serviceName=service, desiredStatus="RUNNING")["taskArns"]
                    if a not in exclude]
            if len(arns) == count:
                tasks = ecs.describe_tasks(cluster="fargate", tasks=arns)["tasks"]
                if all(t["lastStatus"] == "RUNNING" for t in tasks):
                    return tasks
            if time.monotonic() > deadline:
                svc = ecs.describe_services(cluster="fargate", services=[service])["services"][0]
                self.fail(f"the service did not reach {count} RUNNING tasks ({len(arns)} listed): "
                          f"{[e['message'] for e in svc['events'][:5]]}" + self.context())
            time.sleep(0.2)

    def wait_running(self, arns, timeout=60):
        return wait_running(self, self.ecs[1], "fargate", arns, timeout)


if __name__ == "__main__":
    unittest.main()
