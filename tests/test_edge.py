"""The edge end to end (issue 14): `paddock up`'s in-process edge routes to real busybox httpd tasks of
an ECS service by their `traefik.*` dockerLabels, reports them in Traefik's API shape, and — the
headline — drops no request while tasks stop: under constant keep-alive load through the edge, a
rolling update, a StopTask and a 4 -> 1 scale-in of tasks whose httpd dies the moment it gets SIGTERM
(initProcessEnabled: tini forwards it) give no non-2xx answer and no connection error, because the
agent keeps each stopping task in DEACTIVATING until the edge has drained it. The control: the same
stops with `paddock.edge.drain-timeout=0s` (no wait) do show errors. A bridge-mode service with
dynamic host ports on the in-process EC2 container instance is routed, as Traefik routes it, at the
instance's EC2 privateIpAddress and each task's bound hostPort.

Needs root, crun, nft, iptables and busybox-static."""

import configparser
import http.client
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

PAGE = "edge ok\n"


def skip_reason():
    return th.skip_reason(tools=("crun", "nft", "iptables"))


def host(name):
    return f"{name}.localhost"


def labels(name, drain_timeout=None):
    """A router `name` for Host(`<name>.localhost`) to a service `name` on port 8080, health-checked."""
    out = {
        f"traefik.http.routers.{name}.rule": f"Host(`{host(name)}`)",
        f"traefik.http.services.{name}.loadbalancer.server.port": "8080",
        f"traefik.http.services.{name}.loadbalancer.healthcheck.path": "/index.html",
        f"traefik.http.services.{name}.loadbalancer.healthcheck.interval": "1s",
    }
    if drain_timeout is not None:
        out["paddock.edge.drain-timeout"] = drain_timeout
    return out


class StaticPage(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"from the file provider\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Load:
    """`clients` threads, each on one keep-alive connection to the edge, asking GET / of `name`'s host
    until stopped; counts answers by status and connection errors."""

    def __init__(self, port, name, clients=16):
        self.port = port
        self.host = host(name)
        self.clients = clients
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses = {}
        self.errors = []
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(clients)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def run(self):
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("GET", "/", headers={"Host": self.host})
                r = conn.getresponse()
                body = r.read()
                with self.lock:
                    self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
                    if r.status != 200:
                        self.errors.append(f"{r.status} {body[:80]!r}")
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.errors.append(repr(e))
                if conn is not None:
                    conn.close()
                conn = None

    def total(self):
        with self.lock:
            return sum(self.statuses.values())


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Edge(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="paddock-edge-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        home = os.path.join(cls.tmp, "home")
        os.makedirs(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env["HOME"] = home
        cls.state_dir = os.path.join(cls.tmp, "state")
        # A static route beside the tasks' labels (`paddock up --edge-file`): Host(`file.localhost`)
        # to a server this test runs on loopback.
        cls.static = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StaticPage)
        threading.Thread(target=cls.static.serve_forever, daemon=True).start()
        cls.addClassCleanup(cls.static.shutdown)
        dynamic = os.path.join(cls.tmp, "dynamic.yml")
        with open(dynamic, "w") as f:
            f.write("http:\n  routers:\n    static:\n      rule: Host(`file.localhost`)\n      service: static\n"
                    "  services:\n    static:\n      loadBalancer:\n        servers:\n"
                    f"          - url: http://127.0.0.1:{cls.static.server_address[1]}\n")
        # An in-process EC2 container instance in cluster "default" for the bridge-mode service.
        config = os.path.join(cls.tmp, "paddock.toml")
        with open(config, "w") as f:
            f.write("[[ec2_instance]]\ncluster = \"default\"\ncpu = 4096\nmemory = 2048\n")
        cls.server = h.Server(cls.state_dir, mode="up", env=env,
                              extra_args=["--edge-file", dynamic, "--config", config]).start()
        cls.addClassCleanup(cls.server.stop)
        cls.web_port, cls.api_port = cls.server.edge_ports()
        creds = configparser.ConfigParser()
        creds.read(os.path.join(cls.state_dir, "credentials"))
        section = creds[creds.sections()[0]]
        cls.ecs = h.client("ecs", cls.server.endpoint, section["aws_access_key_id"], section["aws_secret_access_key"])
        ec2 = h.client("ec2", cls.server.endpoint, section["aws_access_key_id"], section["aws_secret_access_key"])
        cls.ec2 = ec2
        cls.subnet = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:edge", PAGE)
        cls.ecs.create_cluster(clusterName="default")

    def register(self, family, name, drain_timeout=None):
        return self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": "busybox:edge", "essential": True, "stopTimeout": 5,
                                   "linuxParameters": {"initProcessEnabled": True},
                                   "portMappings": [{"containerPort": 8080}],
                                   "dockerLabels": labels(name, drain_timeout)}],
        )["taskDefinition"]["taskDefinitionArn"]

    def create_service(self, name, task_definition, count):
        self.ecs.create_service(cluster="default", serviceName=name, taskDefinition=task_definition,
                                desiredCount=count, launchType="FARGATE",
                                networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.addCleanup(self.delete_service, name)

    def delete_service(self, name):
        try:
            self.ecs.update_service(cluster="default", service=name, desiredCount=0)
            self.ecs.delete_service(cluster="default", service=name, force=True)
        except Exception:  # noqa: BLE001 - cleanup
            pass
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            arns = self.ecs.list_tasks(cluster="default", serviceName=name)["taskArns"]
            if not arns:
                return
            time.sleep(0.2)

    def running(self, service):
        arns = self.ecs.list_tasks(cluster="default", serviceName=service, desiredStatus="RUNNING")["taskArns"]
        tasks = self.ecs.describe_tasks(cluster="default", tasks=arns)["tasks"] if arns else []
        return [t for t in tasks if t["lastStatus"] == "RUNNING"]

    def api(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.api_port, timeout=10)
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")

    def await_servers_up(self, name, count, timeout=60):
        """Until the edge's API shows `count` servers of <name>@ecs, every one UP."""
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.api(f"/api/http/services/{name}@ecs")
            up = [u for u, s in (body or {}).get("serverStatus", {}).items() if s == "UP"] if status == 200 else []
            servers = (body or {}).get("loadBalancer", {}).get("servers", []) if status == 200 else []
            if len(up) == count and len(servers) == count:
                return up
            self.assertLess(time.monotonic(), deadline, f"{status} {body} {self.server.log_tail()}")
            time.sleep(0.05)

    def await_stable(self, service, count, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            s = self.ecs.describe_services(cluster="default", services=[service])["services"][0]
            deployments = s["deployments"]
            if (len(deployments) == 1 and deployments[0]["rolloutState"] == "COMPLETED"
                    and s["runningCount"] == count and len(self.running(service)) == count):
                arns = self.ecs.list_tasks(cluster="default", serviceName=service, desiredStatus="STOPPED")["taskArns"]
                stopping = [t for t in (self.ecs.describe_tasks(cluster="default", tasks=arns)["tasks"] if arns else [])
                            if t["lastStatus"] != "STOPPED"]
                if not stopping:
                    return
            self.assertLess(time.monotonic(), deadline, f"{s['deployments']} {self.server.log_tail()}")
            time.sleep(0.2)

    def test_routes_a_service_by_its_labels_and_reports_it_in_traefiks_shape(self):
        self.create_service("web", self.register("edge-web", "web"), 2)
        self.await_servers_up("web", 2)
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        conn.request("GET", "/", headers={"Host": host("web")})
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, PAGE.encode()))
        conn.request("GET", "/", headers={"Host": "other.localhost"})
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (404, b"404 page not found\n"))
        status, router = self.api("/api/http/routers/web@ecs")
        self.assertEqual(status, 200)
        self.assertEqual(router["rule"], f"Host(`{host('web')}`)")
        self.assertEqual(router["service"], "web")
        self.assertEqual(router["status"], "enabled")
        status, service = self.api("/api/http/services/web@ecs")
        ips = sorted(th.task_ip(t) for t in self.running("web"))
        self.assertEqual(sorted(s["url"] for s in service["loadBalancer"]["servers"]),
                         [f"http://{ip}:8080" for ip in ips])
        self.assertEqual(service["type"], "loadbalancer")

    def wait_instance(self, timeout=30):
        """The in-process container instance of cluster "default", once its agent is connected."""
        deadline = time.monotonic() + timeout
        while True:
            arns = self.ecs.list_container_instances(cluster="default")["containerInstanceArns"]
            if arns:
                ci = self.ecs.describe_container_instances(cluster="default", containerInstances=arns)
                if ci["containerInstances"][0]["agentConnected"]:
                    return ci["containerInstances"][0]
            self.assertLess(time.monotonic(), deadline, f"no in-process instance: {self.server.log_tail()}")
            time.sleep(0.1)

    def test_a_bridge_service_is_routed_at_its_instances_address_and_host_port(self):
        """Bridge mode with dynamic host ports (hostPort 0): the edge reads, as Traefik does, the
        container instance's ec2InstanceId (DescribeContainerInstances), that instance's
        privateIpAddress (ec2:DescribeInstances) and each container's networkBindings hostPort —
        and reaches the task there from the host through the published port."""
        instance = self.wait_instance()
        td = self.ecs.register_task_definition(
            family="edge-bridge", networkMode="bridge", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            containerDefinitions=[{"name": "app", "image": "busybox:edge", "essential": True, "stopTimeout": 2,
                                   "portMappings": [{"containerPort": 8080}],
                                   "dockerLabels": labels("bridge")}],
        )["taskDefinition"]["taskDefinitionArn"]
        self.ecs.create_service(cluster="default", serviceName="bridge", taskDefinition=td, desiredCount=2,
                                launchType="EC2")
        self.addCleanup(self.delete_service, "bridge")
        self.await_servers_up("bridge", 2)

        # What Traefik would read from the same API.
        reservations = self.ec2.describe_instances(InstanceIds=[instance["ec2InstanceId"]])["Reservations"]
        ec2_instance = reservations[0]["Instances"][0]
        self.assertEqual(ec2_instance["State"]["Name"], "running")
        ip = ec2_instance["PrivateIpAddress"]
        self.assertFalse(ip.startswith("127."), ip)
        tasks = self.running("bridge")
        self.assertEqual({t["containerInstanceArn"] for t in tasks}, {instance["containerInstanceArn"]})
        host_ports = sorted(b["hostPort"] for t in tasks for b in t["containers"][0]["networkBindings"]
                            if b["containerPort"] == 8080)
        self.assertEqual(len(host_ports), 2, tasks)
        self.assertNotIn(8080, host_ports)  # dynamic
        status, service = self.api("/api/http/services/bridge@ecs")
        self.assertEqual(status, 200)
        self.assertEqual(sorted(s["url"] for s in service["loadBalancer"]["servers"]),
                         sorted(f"http://{ip}:{p}" for p in host_ports))

        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        for _ in range(4):  # both servers, round robin
            conn.request("GET", "/", headers={"Host": host("bridge")})
            r = conn.getresponse()
            self.assertEqual((r.status, r.read()), (200, PAGE.encode()))

    def test_a_file_route_of_paddock_up_is_served_beside_the_labels(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        conn.request("GET", "/", headers={"Host": "file.localhost"})
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"from the file provider\n"))
        status, router = self.api("/api/http/routers/static@file")
        self.assertEqual((status, router["status"], router["provider"]), (200, "enabled", "file"))

    def test_no_request_is_dropped_while_tasks_stop(self):
        self.create_service("zero", self.register("edge-zero", "zero"), 3)
        self.await_stable("zero", 3)
        self.await_servers_up("zero", 3)
        with Load(self.web_port, "zero") as load:
            while load.total() < 200:
                time.sleep(0.01)
            # A rolling update to a new revision.
            second = self.register("edge-zero", "zero")
            self.ecs.update_service(cluster="default", service="zero", taskDefinition=second)
            self.await_stable("zero", 3)
            # A StopTask of a routed task.
            victim = self.running("zero")[0]["taskArn"]
            self.ecs.stop_task(cluster="default", task=victim, reason="edge test")
            self.await_stable("zero", 3)
            # A 4 -> 1 scale-in.
            self.ecs.update_service(cluster="default", service="zero", desiredCount=4)
            self.await_stable("zero", 4)
            self.await_servers_up("zero", 4)
            self.ecs.update_service(cluster="default", service="zero", desiredCount=1)
            self.await_stable("zero", 1)
            before = load.total()
            while load.total() < before + 100:
                time.sleep(0.01)
        print(f"\nzero-gap: {load.statuses} answers, {len(load.errors)} errors", file=sys.stderr)
        self.assertEqual(load.errors, [], f"{load.statuses} {self.server.log_tail()}")
        self.assertGreater(load.statuses.get(200, 0), 1000)

    def test_without_the_drain_stops_drop_requests(self):
        """The control: tasks that are not waited for (drain timeout 0) drop requests under the same load."""
        self.create_service("control", self.register("edge-control", "control", drain_timeout="0s"), 3)
        self.await_stable("control", 3)
        self.await_servers_up("control", 3)
        with Load(self.web_port, "control") as load:
            while load.total() < 200:
                time.sleep(0.01)
            for _ in range(6):
                victim = self.running("control")[0]["taskArn"]
                self.ecs.stop_task(cluster="default", task=victim, reason="edge control")
                self.await_stable("control", 3)
                self.await_servers_up("control", 3)
        print(f"\ncontrol: {load.statuses} answers, {len(load.errors)} errors: {sorted(set(load.errors))[:5]}",
              file=sys.stderr)
        self.assertGreater(len(load.errors), 0, load.statuses)


if __name__ == "__main__":
    unittest.main()
