#!/usr/bin/env python3
"""The awslogs driver under a flood (issue 12 §5: a container writing 50,000 lines/s is captured
without loss in blocking mode, and with bounded memory in non-blocking mode, its dropped lines
counted). One real `paddock server`, real Fargate tasks whose container runs `seq 1 N` as fast as
it can, shipped as the task's execution role into CloudWatch Logs of the same server.

- blocking: every line must be stored, in order. The rate is lines / (last event's ingestion time
  - the container's start): the whole path, pump, shipper, agent call, PutLogEvents and the store.
- non-blocking (max-buffer-size 1m, the default): the lines stored and dropped (the agent's count,
  from the server's log), and the server's peak RSS (VmHWM) before and after the flood.

    python3 bench/awslogs_bench.py [--lines 1000000]
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

IMAGE = "busybox:flood"
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1)) / 1024


class Bench(unittest.TestCase):  # for wait_for_status's assertions; never run by unittest
    def runTest(self):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lines", type=int, default=1000000)
    args = p.parse_args()
    if th.skip_reason():
        sys.exit(th.skip_reason())
    t = Bench()
    with tempfile.TemporaryDirectory(prefix="paddock-awslogs-bench-") as tmp:
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        account, key, secret = h.create_account(state, None, "bench")
        th.httpd_image(state, tmp, IMAGE, "flood\n", applets=("seq",))
        server = h.Server(state, ())
        server.start()
        try:
            ecs = h.ecs_client(server.endpoint, key, secret)
            iam = h.client("iam", server.endpoint, key, secret)
            logs = h.client("logs", server.endpoint, key, secret)
            subnet = h.client("ec2", server.endpoint, key, secret).describe_subnets()["Subnets"][0]["SubnetId"]
            ecs.create_cluster(clusterName="bench")
            role = iam.create_role(RoleName="flood", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
            iam.put_role_policy(RoleName="flood", PolicyName="logs", PolicyDocument=json.dumps({
                "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*",
                                                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"]}]}))
            logs.create_log_group(logGroupName="/bench")

            def flood(prefix, mode):
                td = ecs.register_task_definition(
                    family=f"flood-{prefix}", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
                    memory="512", executionRoleArn=role,
                    containerDefinitions=[{"name": "app", "image": IMAGE, "essential": True,
                                           "command": ["seq", "1", str(args.lines)],
                                           "logConfiguration": {"logDriver": "awslogs", "options": {
                                               "awslogs-group": "/bench", "awslogs-stream-prefix": prefix,
                                               "mode": mode}}}])["taskDefinition"]["taskDefinitionArn"]
                arn = ecs.run_task(cluster="bench", taskDefinition=td, launchType="FARGATE",
                                   networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}}
                                   )["tasks"][0]["taskArn"]
                task = th.wait_for_status(t, ecs, "bench", arn, "STOPPED", 600, server.log_tail)
                stream = f"{prefix}/app/{arn.rsplit('/', 1)[1]}"
                messages, last_ingestion, token = [], 0, None
                while True:
                    kw = {"nextToken": token} if token else {}
                    r = logs.get_log_events(logGroupName="/bench", logStreamName=stream, startFromHead=True, **kw)
                    messages += [e["message"] for e in r["events"]]
                    last_ingestion = max([last_ingestion] + [e["ingestionTime"] for e in r["events"]])
                    if r["nextForwardToken"] == token:
                        break
                    token = r["nextForwardToken"]
                return task, messages, last_ingestion

            rss_before = peak_rss_mib(server.proc.pid)
            task, messages, last = flood("blocking", "blocking")
            seconds = last / 1000 - task["startedAt"].timestamp()
            lossless = messages == [str(i) for i in range(1, args.lines + 1)]
            print(f"blocking: {len(messages):,} of {args.lines:,} lines stored, in order and each once: {lossless}; "
                  f"{len(messages) / seconds:,.0f} lines/s (container start to last ingestion, {seconds:.1f} s); "
                  f"server peak RSS {rss_before:.0f} -> {peak_rss_mib(server.proc.pid):.0f} MiB")
            rss_before = peak_rss_mib(server.proc.pid)
            task, messages, last = flood("nonblocking", "non-blocking")
            dropped = re.findall(r"awslogs dropped (\d+) lines", server.log_tail(200000))
            seconds = last / 1000 - task["startedAt"].timestamp()
            print(f"non-blocking (max-buffer-size 1m): {len(messages):,} of {args.lines:,} lines stored, "
                  f"{int(dropped[-1]) if dropped else 0:,} dropped and counted by the agent "
                  f"(stored + dropped = {len(messages) + (int(dropped[-1]) if dropped else 0):,}); "
                  f"{len(messages) / seconds:,.0f} lines/s stored; "
                  f"server peak RSS {rss_before:.0f} -> {peak_rss_mib(server.proc.pid):.0f} MiB")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
