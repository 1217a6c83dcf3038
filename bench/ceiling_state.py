#!/usr/bin/env python3
"""bench/ceiling.sh's helper: sets up the state the ceiling measures and captures Paddock's exact
answers, and holds idle keep-alive connections to report a server's memory per connection.

    ceiling_state.py setup --endpoint URL --key K --secret S --family F --out DIR
        Needs the task definition family F registered (paddock_load registers its own). Makes:
        - cluster F with one container instance (registered with Paddock's RegisterAgent, so an
          agent credential exists) and 10 tasks of F's 2-container definition, reported RUNNING
          with runtime ids, image digests and a dynamic host port, as an agent would report them;
        - cluster F-svc with its own instance and 3 services of 2 tasks each (of a 2-container
          definition F-svc without a health check, which no agent would report), reported RUNNING
          and waited for until every deployment is COMPLETED (the server's settle_seconds must be
          small);
        then writes DIR/<Operation>.request (the request body paddock_load sends) and
        DIR/<Operation>.response (Paddock's answer, byte for byte) for DescribeTaskDefinition,
        DescribeTasks, ListTasks and DescribeServices, and DIR/tasks (the task ARNs, comma-separated)
        and DIR/services (the service names).

    ceiling_state.py check --endpoint URL --key K --secret S --out DIR
        Asks each captured request again; exits 1 naming every answer that changed.

    ceiling_state.py nginx-conf --out DIR --nginx-dir NGINX_DIR --port PORT
        Writes NGINX_DIR/nginx.conf: nginx on 127.0.0.1:PORT answers each captured request's POST,
        routed by its X-Amz-Target, with Paddock's captured answer from memory (`return 200`), with
        status 200 and Content-Type application/x-amz-json-1.1; any other target is 404.

    ceiling_state.py idle --endpoint URL --key K --secret S --family F --pid PID[,PID...] --count N
        Opens N connections, sends one signed DescribeTaskDefinition on each and reads the answer,
        keeps them open and idle, and prints one JSON line with the processes' summed VmRSS before
        and after (nginx: its master and workers).

No agent runs: nothing polls the instances, so the tasks stay as reported. Every call is signed
with real keys (botocore's SigV4Auth).
"""
import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from procfs import rss_kib

ECS = "AmazonEC2ContainerServiceV20141113"
AGENT = "PaddockAgentV20261130"
OPERATIONS = ("DescribeTaskDefinition", "DescribeTasks", "ListTasks", "DescribeServices")
SERVICES = ("api", "web", "worker")
TASKS = 10


def compact(body):
    """The request body as paddock_load writes it: compact JSON, members in insertion order."""
    return json.dumps(body, separators=(",", ":")).encode()


class Api:
    def __init__(self, endpoint, key, secret):
        self.endpoint, self.key, self.secret = endpoint.rstrip("/"), key, secret

    def signed(self, target, data, key=None, secret=None):
        """(headers, data) of a POST / signed now."""
        req = AWSRequest(method="POST", url=self.endpoint + "/", data=data,
                         headers={"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": target})
        SigV4Auth(Credentials(key or self.key, secret or self.secret), "ecs", "us-east-1").add_auth(req)
        return dict(req.headers.items()), data

    def raw(self, target, data, key=None, secret=None):
        """Paddock's answer to `data`, byte for byte; exits on any status but 200."""
        headers, data = self.signed(target, data, key, secret)
        req = urllib.request.Request(self.endpoint + "/", data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            sys.exit(f"ceiling_state: {target}: HTTP {e.code}: {e.read().decode(errors='replace')}")

    def call(self, operation, body, prefix=ECS, key=None, secret=None):
        return json.loads(self.raw(f"{prefix}.{operation}", compact(body), key, secret))


# What `paddock agent` registers with (src/agent/remote/registration.cc, AgentAttributeNames).
AGENT_ATTRIBUTES = [f"com.amazonaws.ecs.capability.docker-remote-api.1.{minor}" for minor in range(17, 45)] + [
    "com.amazonaws.ecs.capability.task-iam-role", "com.amazonaws.ecs.capability.task-iam-role-network-host",
    "com.amazonaws.ecs.capability.logging-driver.json-file", "com.amazonaws.ecs.capability.logging-driver.awslogs",
    "ecs.capability.execution-role-awslogs", "ecs.capability.secrets.ssm.environment-variables",
    "ecs.capability.secrets.asm.environment-variables",
    "com.amazonaws.ecs.capability.private-registry-authentication.secretsmanager"]


def register_instance(api, cluster, private_ip):
    """A container instance bound to an agent credential (which no agent uses): (ARN, key, secret)."""
    resources = [{"name": "CPU", "type": "INTEGER", "integerValue": 16384},
                 {"name": "MEMORY", "type": "INTEGER", "integerValue": 32768},
                 {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22"]},
                 {"name": "PORTS_UDP", "type": "STRINGSET", "stringSetValue": []}]
    out = api.call("RegisterAgent", {
        "cluster": cluster, "totalResources": resources, "versionInfo": {"agentVersion": "1.0.0", "agentHash": "paddock"},
        "attributes": [{"name": name} for name in AGENT_ATTRIBUTES],
        "instanceIdentityDocument": json.dumps({"privateIp": private_ip})}, prefix=AGENT)
    creds = out["credentials"]
    return out["containerInstance"]["containerInstanceArn"], creds["accessKeyId"], creds["secretAccessKey"]


def report_running(api, cluster, arns, agent_key, agent_secret, first_port):
    """Reports each task RUNNING as the instance's agent: pull times, runtime ids, digests, ports."""
    now = time.time()
    for i, arn in enumerate(arns):
        api.call("SubmitTaskStateChange", {
            "cluster": cluster, "task": arn, "status": "RUNNING",
            "pullStartedAt": now - 4, "pullStoppedAt": now - 1,
            "containers": [
                {"containerName": "web", "status": "RUNNING", "runtimeId": f"{i:04x}" + "a1" * 30,
                 "imageDigest": "sha256:" + "5f" * 32,
                 "networkBindings": [{"bindIP": "0.0.0.0", "containerPort": 80,
                                      "hostPort": first_port + i, "protocol": "tcp"}]},
                {"containerName": "sidecar", "status": "RUNNING", "runtimeId": f"{i:04x}" + "b2" * 30,
                 "imageDigest": "sha256:" + "7c" * 32}]}, key=agent_key, secret=agent_secret)


def wait_until(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    sys.exit(f"ceiling_state: timed out after {timeout} s waiting for {what}")


def setup(args):
    api = Api(args.endpoint, args.key, args.secret)
    family, services_cluster = args.family, f"{args.family}-svc"

    api.call("CreateCluster", {"clusterName": family})
    _, agent_key, agent_secret = register_instance(api, family, "10.0.0.5")
    run = api.call("RunTask", {"cluster": family, "taskDefinition": family, "count": TASKS, "launchType": "EC2"})
    if run["failures"] or len(run["tasks"]) != TASKS:
        sys.exit(f"ceiling_state: RunTask placed {len(run['tasks'])} of {TASKS}: {run['failures']}")
    arns = [t["taskArn"] for t in run["tasks"]]
    report_running(api, family, arns, agent_key, agent_secret, 32768)

    # The services' tasks run a definition without a container health check: no agent reports health,
    # and a deployment waits for HEALTHY tasks when there is one.
    api.call("RegisterTaskDefinition", {
        "family": services_cluster, "networkMode": "bridge", "requiresCompatibilities": ["EC2"],
        "containerDefinitions": [
            {"name": "web", "image": "public.ecr.aws/nginx/nginx:1.25", "cpu": 384, "memory": 768, "essential": True,
             "portMappings": [{"containerPort": 80, "hostPort": 0, "protocol": "tcp"}]},
            {"name": "sidecar", "image": "public.ecr.aws/docker/library/busybox:1.36", "cpu": 128, "memory": 256,
             "essential": False, "command": ["sh", "-c", "while true; do date; sleep 60; done"]}]})
    api.call("CreateCluster", {"clusterName": services_cluster})
    _, svc_key, svc_secret = register_instance(api, services_cluster, "10.0.0.6")
    for name in SERVICES:
        api.call("CreateService", {
            "cluster": services_cluster, "serviceName": name, "taskDefinition": services_cluster, "desiredCount": 2,
            "launchType": "EC2",
            "deploymentConfiguration": {"maximumPercent": 200, "minimumHealthyPercent": 100,
                                        "deploymentCircuitBreaker": {"enable": True, "rollback": True}},
            "placementStrategy": [{"type": "spread", "field": "attribute:ecs.availability-zone"},
                                  {"type": "binpack", "field": "memory"}],
            "tags": [{"key": "team", "value": "platform"}, {"key": "env", "value": "production"}],
            "enableECSManagedTags": True, "propagateTags": "SERVICE"})
    wanted = 2 * len(SERVICES)
    wait_until(f"{wanted} service tasks placed",
               lambda: len(api.call("ListTasks", {"cluster": services_cluster})["taskArns"]) >= wanted, 60)
    service_tasks = api.call("ListTasks", {"cluster": services_cluster})["taskArns"]
    report_running(api, services_cluster, service_tasks, svc_key, svc_secret, 33000)

    def settled():
        described = api.call("DescribeServices", {"cluster": services_cluster, "services": list(SERVICES)})
        return all(s["runningCount"] == s["desiredCount"] and len(s["deployments"]) == 1 and
                   s["deployments"][0].get("rolloutState") == "COMPLETED" for s in described["services"])
    wait_until("every service's deployment COMPLETED", settled, 120)

    requests = {
        "DescribeTaskDefinition": {"taskDefinition": family},
        "DescribeTasks": {"cluster": family, "tasks": arns},
        "ListTasks": {"cluster": family},
        "DescribeServices": {"cluster": services_cluster, "services": list(SERVICES)},
    }
    os.makedirs(args.out, exist_ok=True)
    for operation in OPERATIONS:
        data = compact(requests[operation])
        answer = api.raw(f"{ECS}.{operation}", data)
        if api.raw(f"{ECS}.{operation}", data) != answer:
            sys.exit(f"ceiling_state: {operation} answers differently twice in a row; nothing to compare")
        with open(os.path.join(args.out, f"{operation}.request"), "wb") as f:
            f.write(data)
        with open(os.path.join(args.out, f"{operation}.response"), "wb") as f:
            f.write(answer)
    listed = json.loads(open(os.path.join(args.out, "ListTasks.response"), "rb").read())["taskArns"]
    if sorted(listed) != sorted(arns):
        sys.exit(f"ceiling_state: ListTasks of {family} lists {len(listed)} tasks, not the {TASKS} it ran")
    with open(os.path.join(args.out, "tasks"), "w") as f:
        f.write(",".join(arns))
    with open(os.path.join(args.out, "services"), "w") as f:
        f.write(",".join(SERVICES))


def check(args):
    api = Api(args.endpoint, args.key, args.secret)
    changed = []
    for operation in OPERATIONS:
        data = open(os.path.join(args.out, f"{operation}.request"), "rb").read()
        if api.raw(f"{ECS}.{operation}", data) != open(os.path.join(args.out, f"{operation}.response"), "rb").read():
            changed.append(operation)
    if changed:
        sys.exit(f"ceiling_state: Paddock's answer changed during the run: {', '.join(changed)}")


# nginx reads a configuration token of at most 4,096 bytes, so an answer is cut into chunks, each the
# value of its own `map` variable, and `return 200` concatenates them; 2,000 bytes stay under the
# limit even if every byte needs a backslash.
NGINX_CHUNK = 2000


def nginx_string(text):
    """`text` as a single-quoted nginx string; `$` would start a variable, so none may appear."""
    if "$" in text:
        sys.exit("ceiling_state: an answer holds '$', which nginx's return would expand")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def nginx_conf(args):
    """Writes DIR/nginx.conf (args.nginx_dir): every operation's POST, routed by X-Amz-Target, is
    answered from memory with its captured bytes, status 200 and application/x-amz-json-1.1."""
    answers = {op: open(os.path.join(args.out, f"{op}.response"), "rb").read().decode() for op in OPERATIONS}
    chunks = {op: [a[i:i + NGINX_CHUNK] for i in range(0, len(a), NGINX_CHUNK)] for op, a in answers.items()}
    count = max(len(c) for c in chunks.values())
    maps = []
    for n in range(count):
        lines = [f"  map $http_x_amz_target $ceiling_{n} {{", '    default "";']
        for op, parts in chunks.items():
            if n < len(parts):
                lines.append(f"    {ECS}.{op} {nginx_string(parts[n])};")
        maps.append("\n".join(lines + ["  }"]))
    body = "".join(f"${{ceiling_{n}}}" for n in range(count))
    d = args.nginx_dir
    conf = f"""daemon off;
master_process on;
worker_processes auto;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {d}/temp/body;
  proxy_temp_path {d}/temp/proxy;
  fastcgi_temp_path {d}/temp/fastcgi;
  uwsgi_temp_path {d}/temp/uwsgi;
  scgi_temp_path {d}/temp/scgi;
  keepalive_requests 1000000000;
  keepalive_timeout 600s;
  default_type application/x-amz-json-1.1;
  server_tokens off;
  map_hash_bucket_size 128;
{chr(10).join(maps)}
  server {{
    listen 127.0.0.1:{args.port};
    location = / {{
      if ($ceiling_0 = "") {{ return 404; }}
      return 200 "{body}";
    }}
  }}
}}
"""
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)


def read_response(sock):
    """Reads one HTTP/1.1 response with a Content-Length; returns its status."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the response's head")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the response's body")
        body += chunk
    return int(head.split(b" ", 2)[1])


def idle(args):
    api = Api(args.endpoint, args.key, args.secret)
    url = urllib.parse.urlsplit(args.endpoint)
    # One signature serves every connection: it stays valid for minutes, and the server checks it
    # as it would any request's.
    headers, data = api.signed(f"{ECS}.DescribeTaskDefinition", compact({"taskDefinition": args.family}))
    request = "POST / HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = (request + f"Host: {url.netloc}\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data
    pids = [int(p) for p in args.pid.split(",")]
    before = sum(rss_kib(p) for p in pids)
    socks = []
    try:
        for _ in range(args.count):
            s = socket.create_connection((url.hostname, url.port), timeout=30)
            socks.append(s)
            s.sendall(request)
            status = read_response(s)
            if status != 200:
                sys.exit(f"ceiling_state: an idle connection's request answered HTTP {status}")
        time.sleep(0.5)  # let the server finish whatever it does after the last answer
        after = sum(rss_kib(p) for p in pids)
    finally:
        for s in socks:
            s.close()
    print(json.dumps({"connections": args.count, "rss_before_kib": before, "rss_after_kib": after,
                      "kib_per_connection": (after - before) / args.count}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("setup", "check", "idle", "nginx-conf"))
    parser.add_argument("--endpoint")
    parser.add_argument("--key")
    parser.add_argument("--secret")
    parser.add_argument("--family", default="ceiling")
    parser.add_argument("--out")
    parser.add_argument("--pid", help="the server's process ids, comma-separated: their VmRSS is summed")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--nginx-dir")
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    {"setup": setup, "check": check, "idle": idle, "nginx-conf": nginx_conf}[args.mode](args)


if __name__ == "__main__":
    main()
