"""The edge end to end (issue 14): `paddock up`'s in-process edge routes to real busybox httpd tasks of
an ECS service by their `traefik.*` dockerLabels, reports them in Traefik's API shape, and — the
headline — drops no request while tasks stop: under constant keep-alive load through the edge, a
rolling update, a StopTask and a 4 -> 1 scale-in of tasks whose httpd dies the moment it gets SIGTERM
(initProcessEnabled: tini forwards it) give no non-2xx answer and no connection error, because the
agent keeps each stopping task in DEACTIVATING until the edge has drained it. The control: the same
stops with `paddock.edge.drain-timeout=0s` (no wait) do show errors. And two `paddock edge` replicas
in processes of their own, each holding its own drain through the holds service
(PaddockEdgeV20261203): a task stopped while a slow request runs through one of them stays
DEACTIVATING until that request is answered. A bridge-mode service with dynamic host ports on the
in-process EC2 container instance is routed, as Traefik routes it, at the instance's EC2
privateIpAddress and each task's bound hostPort.

The server counts a RUNNING task (these have no health checks) healthy after 5 s (`[scheduler]
settle_seconds`; AWS's 40 s by default), so a rollout stops the old tasks 5 s after the new ones run:
the edge must be routing to the new ones by then.

Needs root, crun, nft, iptables and busybox-static."""

import configparser
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
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


def labels(name, drain_timeout=None, tls=False, tls_options=None):
    """A router `name` for Host(`<name>.localhost`) to a service `name` on port 8080, health-checked;
    with `tls`, as Rise labels a TLS router: on `websecure`, `tls` with a certresolver; `tls_options`
    names the router's TLS options."""
    out = {
        f"traefik.http.routers.{name}.rule": f"Host(`{host(name)}`)",
        f"traefik.http.services.{name}.loadbalancer.server.port": "8080",
        f"traefik.http.services.{name}.loadbalancer.healthcheck.path": "/index.html",
        f"traefik.http.services.{name}.loadbalancer.healthcheck.interval": "1s",
    }
    if drain_timeout is not None:
        out["paddock.edge.drain-timeout"] = drain_timeout
    if tls:
        out[f"traefik.http.routers.{name}.entrypoints"] = "websecure"
        out[f"traefik.http.routers.{name}.tls"] = "true"
        out[f"traefik.http.routers.{name}.tls.certresolver"] = "letsencrypt"
    if tls_options:
        out[f"traefik.http.routers.{name}.tls.options"] = tls_options
    return out


class StaticPage(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"from the file provider\n"
        if self.path == "/dynamic":  # what the edge's http provider polls: a router to the file's service
            if self.headers.get("X-Config-Token") != "sesame":  # paddock up --edge-http-header
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps({"http": {"routers": {"viahttp": {
                "rule": "Host(`http.localhost`)", "service": "static@file"}}}}).encode()
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


class EdgeProcess:
    """One `paddock edge` replica reading `endpoint` as the key in `env`; its entry point `web` and
    its API on loopback ports of its own, from its banner lines."""

    def __init__(self, endpoint, env, edge_id, log_path, extra_args=()):
        self.edge_id = edge_id
        self.log_path = log_path
        args = [h.paddock_bin(), "edge", "--endpoint", endpoint, "--entrypoint", "web=127.0.0.1:0",
                "--api", "127.0.0.1:0", "--edge-id", edge_id, *extra_args]
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env)
        self.web_port = self.api_port = None
        timer = threading.Timer(20, self.proc.kill)
        timer.start()
        try:
            while self.api_port is None or self.web_port is None:
                line = self.proc.stdout.readline().decode()
                if not line:
                    raise AssertionError(f"paddock edge exited: {self.log_tail()}")
                if m := re.match(r"paddock edge: entry point web on [^:]+:(\d+)", line):
                    self.web_port = int(m.group(1))
                if m := re.match(r"paddock edge: API on http://[^:]+:(\d+)/", line):
                    self.api_port = int(m.group(1))
        finally:
            timer.cancel()

    def log_tail(self, n=3000):
        return h.log_tail(self.log_path, n)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


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
        # The certificate `websecure` serves for secure.localhost (the file provider's tls section).
        cls.cert = os.path.join(cls.tmp, "secure.crt")
        key = os.path.join(cls.tmp, "secure.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", cls.cert, "-days", "2", "-subj", "/CN=secure.localhost",
                        "-addext", "subjectAltName=DNS:secure.localhost"], check=True, capture_output=True)
        with open(dynamic, "w") as f:
            f.write("http:\n  routers:\n    static:\n      rule: Host(`file.localhost`)\n      service: static\n"
                    "  services:\n    static:\n      loadBalancer:\n        servers:\n"
                    f"          - url: http://127.0.0.1:{cls.static.server_address[1]}\n"
                    f"tls:\n  certificates:\n    - certFile: {cls.cert}\n      keyFile: {key}\n"
                    # TLS options a label names (`tls.options=tls13@file`): labels cannot define them.
                    "  options:\n    tls13:\n      minVersion: VersionTLS13\n")
        # The http provider's endpoint: the same pages over TLS, with a certificate for 127.0.0.1 that
        # only --edge-http-tls-ca makes trusted, answering only polls with --edge-http-header's token.
        provider_cert = os.path.join(cls.tmp, "provider.crt")
        provider_key = os.path.join(cls.tmp, "provider.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", provider_key, "-out", provider_cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        cls.provider = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StaticPage)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(provider_cert, provider_key)
        cls.provider.socket = tls.wrap_socket(cls.provider.socket, server_side=True)
        threading.Thread(target=cls.provider.serve_forever, daemon=True).start()
        cls.addClassCleanup(cls.provider.shutdown)
        # An in-process EC2 container instance in cluster "default" for the bridge-mode service.
        config = os.path.join(cls.tmp, "paddock.toml")
        with open(config, "w") as f:
            f.write("[scheduler]\nsettle_seconds = 5\n\n"
                    "[[ec2_instance]]\ncluster = \"default\"\ncpu = 4096\nmemory = 2048\n")
        cls.server = h.Server(cls.state_dir, mode="up", env=env,
                              extra_args=["--edge-file", dynamic, "--config", config,
                                          "--edge-websecure", "127.0.0.1:0",
                                          "--edge-http", f"https://127.0.0.1:{cls.provider.server_address[1]}/dynamic",
                                          "--edge-http-poll-interval", "1s", "--edge-http-poll-timeout", "3s",
                                          "--edge-http-header", "X-Config-Token=sesame",
                                          "--edge-http-tls-ca", provider_cert]).start()
        cls.addClassCleanup(cls.server.stop)
        cls.web_port, cls.api_port = cls.server.edge_ports()
        cls.websecure_port = cls.server.edge_tls_port()
        creds = configparser.ConfigParser()
        creds.read(os.path.join(cls.state_dir, "credentials"))
        section = creds[creds.sections()[0]]
        cls.key = (section["aws_access_key_id"], section["aws_secret_access_key"])
        cls.env = env
        cls.ecs = h.client("ecs", cls.server.endpoint, section["aws_access_key_id"], section["aws_secret_access_key"])
        ec2 = h.client("ec2", cls.server.endpoint, section["aws_access_key_id"], section["aws_secret_access_key"])
        cls.ec2 = ec2
        cls.subnet = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:edge", PAGE)
        cls.ecs.create_cluster(clusterName="default")

    def register(self, family, name, drain_timeout=None, image="busybox:edge", tls=False, tls_options=None):
        return self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": image, "essential": True, "stopTimeout": 5,
                                   "linuxParameters": {"initProcessEnabled": True},
                                   "portMappings": [{"containerPort": 8080}],
                                   "dockerLabels": labels(name, drain_timeout, tls, tls_options)}],
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

    def api(self, path, port=None):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.api_port, timeout=10)
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")

    def await_servers_up(self, name, count, timeout=60, api_port=None):
        """Until the edge's API (`paddock up`'s, or the one on `api_port`) shows `count` servers of
        <name>@ecs, every one UP."""
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.api(f"/api/http/services/{name}@ecs", api_port)
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
        return th.connected_instance(self.ecs, "default", timeout, self.server.log_tail)

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

    def test_a_tls_router_of_the_labels_is_served_on_websecure_with_the_files_certificate(self):
        self.create_service("secure", self.register("edge-secure", "secure", tls=True), 1)
        self.await_servers_up("secure", 1)
        # Verified against the file's certificate, by the name the client asks for (SNI).
        context = ssl.create_default_context(cafile=self.cert)
        with socket.create_connection(("127.0.0.1", self.websecure_port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=host("secure")) as tls:
                tls.sendall(f"GET / HTTP/1.1\r\nHost: {host('secure')}\r\nConnection: close\r\n\r\n".encode())
                response = b""
                while chunk := tls.recv(65536):
                    response += chunk
        self.assertTrue(response.startswith(b"HTTP/1.1 200 "), response)
        self.assertTrue(response.endswith(PAGE.encode()), response)
        # The tls router is not served over plain HTTP, nor on `web`.
        conn = http.client.HTTPConnection("127.0.0.1", self.websecure_port, timeout=10)
        conn.request("GET", "/", headers={"Host": host("secure")})
        self.assertEqual(conn.getresponse().status, 404)
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        conn.request("GET", "/", headers={"Host": host("secure")})
        self.assertEqual(conn.getresponse().status, 404)
        # certresolver has no ACME behind it: a warning, and the router still serves.
        status, router = self.api("/api/http/routers/secure@ecs")
        self.assertEqual((status, router["status"], router["using"]), (200, "warning", ["websecure"]))
        self.assertIn("letsencrypt", " ".join(router["error"]))

    def test_a_labels_tls_options_from_the_file_refuse_tls_1_2_on_its_host_only(self):
        self.create_service("strict", self.register("edge-strict", "strict", tls=True, tls_options="tls13@file"), 1)
        self.await_servers_up("strict", 1)

        def get(name, max_version=None):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            if max_version:
                context.maximum_version = max_version
            with socket.create_connection(("127.0.0.1", self.websecure_port), timeout=10) as raw:
                with context.wrap_socket(raw, server_hostname=host(name)) as tls:
                    tls.sendall(f"GET / HTTP/1.1\r\nHost: {host(name)}\r\nConnection: close\r\n\r\n".encode())
                    response = b""
                    while chunk := tls.recv(65536):
                        response += chunk
                    return tls.version(), response

        version, response = get("strict")
        self.assertEqual(version, "TLSv1.3")
        self.assertTrue(response.startswith(b"HTTP/1.1 200 "), response)
        with self.assertRaises(ssl.SSLError):
            get("strict", ssl.TLSVersion.TLSv1_2)
        # Another host keeps the default options: TLS 1.2 is served (a 404: no router there).
        version, response = get("elsewhere", ssl.TLSVersion.TLSv1_2)
        self.assertEqual(version, "TLSv1.2")
        self.assertTrue(response.startswith(b"HTTP/1.1 404 "), response)
        status, router = self.api("/api/http/routers/strict@ecs")
        self.assertEqual((status, router["tls"]["options"]), (200, "tls13@file"))

    def test_a_file_route_of_paddock_up_is_served_beside_the_labels(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        conn.request("GET", "/", headers={"Host": "file.localhost"})
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"from the file provider\n"))
        status, router = self.api("/api/http/routers/static@file")
        self.assertEqual((status, router["status"], router["provider"]), (200, "enabled", "file"))

    def test_an_http_provider_route_of_paddock_up_is_served_beside_the_file(self):
        """`paddock up --edge-http` over https with --edge-http-tls-ca and --edge-http-header (the endpoint
        refuses a poll without the header, and its certificate is trusted by no system CA): Traefik's http
        provider, its router naming the file provider's service."""
        status, router = self.api("/api/http/routers/viahttp@http")
        self.assertEqual((status, router["status"], router["provider"], router["service"]),
                         (200, "enabled", "http", "static@file"))
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        conn.request("GET", "/", headers={"Host": "http.localhost"})
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"from the file provider\n"))

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


    def drain_holds(self, task_arn):
        """DescribeDrainHolds (the holds service, signed as the test's account): edge id -> hold."""
        conn = h.RawConn(int(self.server.endpoint.rsplit(":", 1)[1]), h.RawSigner(*self.key))
        body = json.dumps({"taskArn": task_arn}).encode()
        hdrs = conn.signer.headers(conn.host, body, target="PaddockEdgeV20261203.DescribeDrainHolds")
        conn.conn.request("POST", "/", body=body, headers=hdrs)
        r = conn.conn.getresponse()
        data = json.loads(r.read())
        conn.close()
        self.assertEqual(r.status, 200, data)
        return {hold["edgeId"]: hold for hold in data["holds"]}

    def test_two_remote_edges_each_hold_their_own_drain(self):
        """Two `paddock edge` processes route one task; a StopTask while a slow request runs through
        one of them leaves the task DEACTIVATING until that request is answered, then it stops."""
        root = os.path.join(self.tmp, "bb-rootfs-slow")
        if not os.path.exists(root):
            from test_images import busybox_rootfs, image
            busybox_rootfs(root, ("sleep", "printf"), PAGE)
            os.makedirs(os.path.join(root, "www", "cgi-bin"))
            slow = os.path.join(root, "www", "cgi-bin", "slow")
            with open(slow, "w") as f:
                # CRLF header lines, as HTTP asks (the edge would take bare LFs too, as Go's client does).
                f.write("#!/bin/sh\nsleep 6\n"
                        "printf 'Content-Type: text/plain\\r\\nContent-Length: 10\\r\\n\\r\\nslow done\\n'\n")
            os.chmod(slow, 0o755)
            image(self.state_dir, "import-rootfs", root, "--name", "busybox:slow", "--cmd", "httpd -f -p 8080 -h /www")
        self.create_service("remote", self.register("edge-remote", "remote", drain_timeout="60s",
                                                    image="busybox:slow"), 1)
        self.await_stable("remote", 1)
        env = dict(self.env, AWS_ACCESS_KEY_ID=self.key[0], AWS_SECRET_ACCESS_KEY=self.key[1])
        edges = []
        for edge_id in ("replica-a", "replica-b"):
            edge = EdgeProcess(self.server.endpoint, env, edge_id, os.path.join(self.tmp, f"{edge_id}.log"),
                               ["--refresh-seconds", "1"])
            self.addCleanup(edge.stop)
            edges.append(edge)
        logs = lambda: f"{self.server.log_tail()} {edges[0].log_tail()} {edges[1].log_tail()}"  # noqa: E731
        for edge in edges:
            self.await_servers_up("remote", 1, api_port=edge.api_port)
        task = self.running("remote")[0]["taskArn"]
        # Each replica holds the task under its own edge id (beside `paddock up`'s own edge, "up").
        deadline = time.monotonic() + 20
        while not {"replica-a", "replica-b"} <= set(self.drain_holds(task)):
            self.assertLess(time.monotonic(), deadline, f"{self.drain_holds(task)} {logs()}")
            time.sleep(0.1)
        holds = self.drain_holds(task)
        self.assertEqual(holds["replica-a"]["drainTimeoutSeconds"], 60)
        self.assertEqual(holds["replica-b"]["drainTimeoutSeconds"], 60)

        # A slow request through replica A, then the stop while it runs.
        answer = {}

        def slow_request():
            conn = http.client.HTTPConnection("127.0.0.1", edges[0].web_port, timeout=60)
            conn.request("GET", "/cgi-bin/slow", headers={"Host": host("remote")})
            r = conn.getresponse()
            answer["response"] = (r.status, r.read())
            answer["at"] = time.monotonic()
            conn.close()

        started = time.monotonic()
        requester = threading.Thread(target=slow_request, daemon=True)
        requester.start()
        time.sleep(1)  # the request reaches the task (it answers after 6 s)
        self.ecs.stop_task(cluster="default", task=task, reason="two edges")
        seen = []
        while requester.is_alive():
            status = self.ecs.describe_tasks(cluster="default", tasks=[task])["tasks"][0]["lastStatus"]
            if requester.is_alive():  # still in flight when the status was read
                seen.append(status)
            time.sleep(0.1)
        requester.join()
        self.assertEqual(answer["response"], (200, b"slow done\n"), logs())
        self.assertGreater(answer["at"] - started, 5)
        # Through the request the task was waiting in DEACTIVATING, never past it.
        self.assertIn("DEACTIVATING", seen, logs())
        self.assertFalse({"STOPPING", "DEPROVISIONING", "STOPPED"} & set(seen), f"{seen} {logs()}")
        # Replica B, idle, released its hold long before; A releases once its request is answered.
        th.wait_for_status(self, self.ecs, "default", task, "STOPPED", timeout=30, context=logs)
        self.assertEqual(self.drain_holds(task), {}, logs())


class UpEdgeFlags(unittest.TestCase):
    """`paddock up`'s --edge-http-* flags are checked before anything starts: a bad one is an error
    naming it, and no state directory is made."""

    def test_bad_http_provider_flags_are_refused_before_anything_starts(self):
        tmp = tempfile.mkdtemp(prefix="paddock-edge-flags-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        state = os.path.join(tmp, "state")
        cases = [
            (["--edge-http-header", "no-equals-sign"], "--edge-http-header 'no-equals-sign' is not NAME=VALUE"),
            (["--edge-http-header", "Bad Name=x"], "--edge-http-header"),
            (["--edge-http-poll-timeout", "soon"], "--edge-http-poll-timeout: invalid duration"),
            (["--edge-http-poll-interval", "0s"], "--edge-http-poll-interval must be greater than 0"),
            (["--edge-http-max-response-body-size", "1k"],
             '--edge-http-max-response-body-size must be a number of bytes, or -1 for no limit; got "1k"'),
            (["--edge-http-max-response-body-size", "-2"], "--edge-http-max-response-body-size must be a number"),
        ]
        for args, said in cases:
            r = subprocess.run([h.paddock_bin(), "up", "--state-dir", state, "--listen", "127.0.0.1:0",
                                "--edge-http", "http://127.0.0.1:1/", *args], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 1, (args, r.stdout, r.stderr))
            self.assertIn(said, r.stderr, args)
            self.assertFalse(os.path.exists(state), args)



class EdgeMetricsFlags(unittest.TestCase):
    """`paddock edge` takes Traefik's metrics flags and refuses bad buckets before it starts."""

    def test_bad_buckets_are_refused_naming_the_flag(self):
        env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY="x")
        cases = [
            ("0.3,0.1", "--metrics.prometheus.buckets: histogram buckets must be in increasing order: 0.3 >= 0.1"),
            ("fast", "--metrics.prometheus.buckets: 'fast' is not a number of seconds"),
        ]
        for value, said in cases:
            r = subprocess.run([h.paddock_bin(), "edge", "--endpoint", "http://127.0.0.1:1", "--entrypoint",
                                "web=127.0.0.1:0", "--no-api", "--metrics.prometheus.addEntryPointsLabels=false",
                                f"--metrics.prometheus.buckets={value}"], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL, env=env)
            self.assertEqual(r.returncode, 1, (value, r.stdout, r.stderr))
            self.assertIn(said, r.stderr, value)


if __name__ == "__main__":
    unittest.main()
