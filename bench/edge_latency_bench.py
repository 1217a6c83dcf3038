#!/usr/bin/env python3
"""How fast `paddock up`'s edge follows tasks (issue 14 §3: routable within 1 s of RUNNING, out of
rotation within 100 ms of a stop). One real busybox httpd Fargate task at a time with a `traefik.*`
router and no health check: the time from the first DescribeTasks that shows it RUNNING to the first
200 through the edge, and from StopTask's answer to the first request the edge no longer sends to it.

    sudo python3 bench/edge_latency_bench.py [--runs 5]    (needs scripts/build release paddock)
"""
import argparse
import configparser
import http.client
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="paddock-edge-latency-")
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = home
    state = os.path.join(tmp, "state")
    server = h.Server(state, mode="up", env=env).start()
    try:
        web, _ = server.edge_ports()
        creds = configparser.ConfigParser()
        creds.read(os.path.join(state, "credentials"))
        key = creds[creds.sections()[0]]
        ecs = h.client("ecs", server.endpoint, key["aws_access_key_id"], key["aws_secret_access_key"])
        ec2 = h.client("ec2", server.endpoint, key["aws_access_key_id"], key["aws_secret_access_key"])
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        th.httpd_image(state, tmp, "busybox:latency", "latency\n")
        ecs.create_cluster(clusterName="default")
        ecs.register_task_definition(
            family="latency", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": "busybox:latency", "stopTimeout": 2,
                                   "portMappings": [{"containerPort": 8080}],
                                   "dockerLabels": {"traefik.http.routers.latency.rule": "Host(`latency.localhost`)"}}])

        def status():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", web, timeout=2)
                conn.request("GET", "/", headers={"Host": "latency.localhost"})
                r = conn.getresponse()
                r.read()
                return r.status
            except OSError:
                return 0

        routable, gone = [], []
        for _ in range(args.runs):
            arn = ecs.run_task(cluster="default", taskDefinition="latency", launchType="FARGATE",
                               networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
            while ecs.describe_tasks(cluster="default", tasks=[arn])["tasks"][0]["lastStatus"] != "RUNNING":
                time.sleep(0.005)
            running = time.monotonic()
            while status() != 200:
                time.sleep(0.001)
            routable.append(time.monotonic() - running)
            ecs.stop_task(cluster="default", task=arn)
            asked = time.monotonic()
            while status() == 200:
                time.sleep(0.001)
            gone.append(time.monotonic() - asked)
            deadline = time.monotonic() + 30
            while (ecs.describe_tasks(cluster="default", tasks=[arn])["tasks"][0]["lastStatus"] != "STOPPED"
                   and time.monotonic() < deadline):
                time.sleep(0.05)
        ms = lambda xs: " / ".join(f"{x * 1000:.0f}" for x in xs)  # noqa: E731
        print(f"routable after RUNNING (ms): {ms(routable)}; max {max(routable) * 1000:.0f} (target <= 1000)")
        print(f"out of rotation after StopTask (ms): {ms(gone)}; max {max(gone) * 1000:.0f} (target <= 100)")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
