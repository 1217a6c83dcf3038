#!/usr/bin/env python3
"""50 projects deployed by one controller against Paddock with AWS's ECS throttling on (issue 15).

Starts `paddock up --api-rate-limits aws --no-controller` (its edge, AWS's ECS request buckets per
account; Fargate capacity overcommitted 8 times, so 50 tasks fit on a small host) and a standalone `paddock controller --call-log` against it (a 2 s interval, the edge's
serverStatus for readiness), imports a busybox httpd image and `paddock deploy`s --projects
projects (one routed container, one replica each) at once. Then it waits until every deployment is
Healthy — any deployment that fails ends the run with its reason — and watches a steady window of
--steady seconds. From the call log it prints:

- the time until all were Healthy, and the writes made (RegisterTaskDefinition is spaced 1/s);
- every refused call (a throttled one is `ok: false`), by action;
- reads per tick over the steady window (p50, max) and reads per second in each ECS throttle
  category the controller reads from, beside AWS's refill rate for it;
- whether every deployment is still Healthy and no write was made in the steady window.

Needs root, crun and busybox-static. Bounded: it gives up after --timeout seconds.

    sudo python3 bench/deploy_scale_bench.py [--projects 50] [--steady 60]
"""
import argparse
import configparser
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("PADDOCK_BIN", os.path.join(ROOT, "build/release/src/cli/paddock"))

import deploy_harness as dh  # noqa: E402
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

SPEC = """\
[project]
name = "{project}"

[containers.web]
image = "busybox:scale"
port = 8080

[deploy]
replicas = 1

[routes]
"/" = "web"
"""

# AWS's ECS buckets the controller reads from (src/ecs/api/throttle_table.cc): refill per second.
CATEGORIES = {
    "service-read": ({"ListServices", "DescribeServices"}, 20),
    "cluster-resource-read": ({"ListTasks", "DescribeTasks"}, 20),
    "cluster-read": ({"DescribeClusters"}, 20),
}


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def read_calls(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def per_tick(calls):
    """Reads of each tick: a tick's snapshot starts with its first ListServices page (< 100 services)."""
    ticks, current = [], None
    for c in calls:
        if c["action"] == "ListServices":
            if current is not None:
                ticks.append(current)
            current = 0
        if current is not None and c["action"] not in dh.WRITES:
            current += 1
    return ticks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--projects", type=int, default=50)
    ap.add_argument("--steady", type=int, default=60)
    ap.add_argument("--timeout", type=int, default=900)
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    tmp = tempfile.mkdtemp(prefix="paddock-deploy-scale-")
    server = controller = None
    try:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "XDG_CONFIG_HOME"}
        env["HOME"] = home
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        th.httpd_image(state, tmp, "busybox:scale", "scale\n")
        # 50 of Fargate's smallest tasks (0.25 vCPU) are 12.5 vCPUs: this host's 2 cores overcommitted
        # 8 times, so placement is not what is measured.
        config = os.path.join(tmp, "paddock-server.toml")
        with open(config, "w") as f:
            f.write("[fargate]\novercommit = 8\n")
        server = h.Server(state, mode="up", env=env,
                          extra_args=("--config", config, "--api-rate-limits", "aws", "--no-controller")).start()
        web_port, api_port = server.edge_ports()
        creds = configparser.ConfigParser()
        creds.read(os.path.join(state, "credentials"))
        section = creds[creds.sections()[0]]
        key = (section["aws_access_key_id"], section["aws_secret_access_key"])
        iam = h.client("iam", server.endpoint, *key)
        role = iam.create_role(RoleName="scale-execution", AssumeRolePolicyDocument=dh.TRUST)["Role"]["Arn"]
        iam.attach_role_policy(RoleName="scale-execution",
                               PolicyArn="arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy")
        iam.put_role_policy(RoleName="scale-execution", PolicyName="logs", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "logs:CreateLogGroup", "Resource": "*"}]}))
        ec2 = h.client("ec2", server.endpoint, *key)
        ecs = h.client("ecs", server.endpoint, *key)
        ecs.create_cluster(clusterName="default")
        call_log = os.path.join(tmp, "calls.jsonl")
        ctl_state = os.path.join(tmp, "controller")
        cmd = [h.paddock_bin(), "controller", "--endpoint", server.endpoint,
               "--credentials", os.path.join(state, "credentials"), "--listen", "127.0.0.1:0",
               "--state-dir", ctl_state, "--interval", "2s", "--drain", "2s", "--call-log", call_log,
               "--edge-api", f"127.0.0.1:{api_port}", "--url-port", str(web_port), "--execution-role-arn", role]
        for s in ec2.describe_subnets()["Subnets"]:
            cmd += ["--subnet", s["SubnetId"]]
        out = open(os.path.join(tmp, "controller.out"), "w+")
        controller = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        while True:
            out.seek(0)
            m = re.search(r" on (http://127\.0\.0\.1:\d+) ", out.read())
            if m:
                url = m.group(1)
                break
            if controller.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the controller did not start: {h.log_tail(out.name, 2000)}")
            time.sleep(0.05)
        with open(os.path.join(ctl_state, "controller.token")) as f:
            token = f.read().strip()
        cli_env = dict(env, PADDOCK_DEPLOY_URL=url, PADDOCK_DEPLOY_TOKEN=token)

        def show(d):
            req = urllib.request.Request(f"{url}/v1/deployments/{d}", headers={"Authorization": "Bearer " + token})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.load(resp)

        start = time.monotonic()
        ids = []
        for i in range(args.projects):
            path = os.path.join(tmp, f"p{i}.toml")
            with open(path, "w") as f:
                f.write(SPEC.format(project=f"scale{i}"))
            r = subprocess.run([h.paddock_bin(), "deploy", "-f", path], env=cli_env, capture_output=True, text=True,
                               timeout=60, cwd=tmp)
            if r.returncode != 0:
                raise SystemExit(f"deploy {i}: {r.stdout} {r.stderr}")
            ids.append(r.stdout.strip())
        submitted = time.monotonic() - start
        healthy_at = {}
        while len(healthy_at) < len(ids):
            for d in ids:
                if d in healthy_at:
                    continue
                s = show(d)
                if s["state"] == "Healthy":
                    healthy_at[d] = time.monotonic() - start
                elif s["state"] in ("Failed", "Stopped", "Expired", "Superseded"):
                    raise SystemExit(f"{d} is {s['state']}: {s.get('reason')}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{len(ids) - len(healthy_at)} deployments not Healthy in time")
            time.sleep(0.5)
        all_healthy = max(healthy_at.values())
        deploy_calls = read_calls(call_log)

        mark = len(deploy_calls)
        steady_start = time.monotonic()
        time.sleep(args.steady)  # a bench's measuring window, not a wait for an event
        steady_secs = time.monotonic() - steady_start
        steady = read_calls(call_log)[mark:]
        still = sum(show(d)["state"] == "Healthy" for d in ids)

        writes = {}
        for c in deploy_calls:
            if c["action"] in dh.WRITES:
                writes[c["action"]] = writes.get(c["action"], 0) + 1
        refused = {}
        for c in deploy_calls + steady:
            if not c["ok"]:
                refused[c["action"]] = refused.get(c["action"], 0) + 1
        ticks = per_tick(steady)
        deploy_ticks = per_tick(deploy_calls)
        steady_writes = [c["action"] for c in steady if c["action"] in dh.WRITES]

        print(f"{args.projects} projects (1 routed container, 1 replica each) on paddock up --api-rate-limits aws; "
              f"controller interval 2 s")
        print(f"  submitted in {submitted:.1f} s; all Healthy {all_healthy:.1f} s after the first deploy "
              f"(p50 {statistics.median(healthy_at.values()):.1f} s); none failed")
        print(f"  writes: {', '.join(f'{a} {n}' for a, n in sorted(writes.items()))}")
        print(f"  refused calls (throttled or otherwise): {refused or 'none'}")
        print(f"  while deploying: {len(deploy_ticks)} ticks, reads per tick p50 "
              f"{statistics.median(deploy_ticks) if deploy_ticks else 0} max {max(deploy_ticks) if deploy_ticks else 0}")
        print(f"  steady window {steady_secs:.0f} s: {len(ticks)} ticks, reads per tick p50 {statistics.median(ticks) if ticks else 0}"
              f" max {max(ticks) if ticks else 0}; writes {len(steady_writes)}; still Healthy {still}/{len(ids)}")
        for name, (actions, refill) in CATEGORIES.items():
            n = sum(c["action"] in actions for c in steady)
            print(f"    ecs {name:22} {n / steady_secs:5.2f} reads/s   (AWS refills {refill}/s)")
    finally:
        if controller and controller.poll() is None:
            controller.send_signal(signal.SIGTERM)
            try:
                controller.wait(30)
            except subprocess.TimeoutExpired:
                controller.kill()
        if server:
            server.stop(timeout=180)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
