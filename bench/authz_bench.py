#!/usr/bin/env python3
"""What IAM authorization costs: DescribeTaskDefinition throughput as the account's root (never
evaluated) against the same as an IAM user with 10 policies (5 inline, 5 customer-managed, each of
5 statements with conditions and wildcards, the last one allowing ecs:Describe*), on one real
`paddock server` with durable commits, driven by `paddock_load` (SigV4, keep-alive connections).

Each round runs both, in ABBA order (root first in odd rounds, the user first in even ones), so a
drift in the VM's speed favours neither; each round's user/root ratio is one sample, and the
median of those ratios (with its interquartile range) is the result. Each round also reads the
server's CPU time (/proc/<pid>/stat) around each run: CPU microseconds per request, root's over the
user's, is the same ratio for a CPU-bound server and is not moved by other work on the machine the
way throughput is. Target (issue 11): authorization adds <= 10% (median ratio >= 0.90).

With --instructions the server runs under valgrind's callgrind instead, and the bench counts the
instructions it executes per request (callgrind_control zeroes and dumps the counts around each
run; one connection, 2 rounds of each): deterministic, so a change of a few percent shows, where
throughput on a shared 2-core VM moves by more than that between runs.

    python3 bench/authz_bench.py [--rounds 10] [--duration 3s] [--connections 16]
    python3 bench/authz_bench.py --instructions [--duration 8s]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

import paddock_harness as h  # noqa: E402

LOAD = os.path.join(ROOT, "build/release/bench/paddock_load")


def statement(i, j, last=False):
    if last:
        return {"Sid": f"Describe{i}", "Effect": "Allow", "Action": ["ecs:Describe*", "ecs:List*"], "Resource": "*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    return {"Sid": f"S{i}x{j}", "Effect": "Allow",
            "Action": [f"ecs:Update{j}*", f"ecs:Create{i}?", "logs:PutLogEvents"],
            "Resource": [f"arn:aws:ecs:*:*:service/cluster-{i}/*", f"arn:aws:ecs:*:*:task/cluster-{j}/*"],
            "Condition": {"StringEquals": {"aws:RequestTag/team": f"team-{i}"},
                          "ArnLike": {"ecs:cluster": f"arn:aws:ecs:*:*:cluster/cluster-{i}"}}}


def document(i, with_describe):
    stmts = [statement(i, j) for j in range(4)] + [statement(i, 4, last=with_describe)]
    return json.dumps({"Version": "2012-10-17", "Statement": stmts})


def cpu_seconds(pid):
    """The server's user+system CPU time so far (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(endpoint, key, secret, args, family):
    out = subprocess.run([LOAD, "--endpoint", endpoint, "--access-key", key, "--secret-key", secret,
                          "--connections", str(args.connections), "--duration", args.duration,
                          "--action", "describe-task-definition", "--family", family, "--warmup", "200", "--json"],
                         check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def instructions_per_request(server, tmp, creds, args):
    """Root's and the user's instructions per request, counted by callgrind (server under valgrind)."""
    counts = {"root": [], "user": []}
    for n, who in enumerate(("root", "user", "user", "root")):
        load(server.endpoint, *creds[who], args, "bench-family")  # warm: caches, connections
        subprocess.run(["callgrind_control", "-z", str(server.proc.pid)], check=True, capture_output=True)
        res = load(server.endpoint, *creds[who], args, "bench-family")
        subprocess.run(["callgrind_control", "-d", f"{who}{n}", str(server.proc.pid)], check=True, capture_output=True)
        dump = f"{tmp}/callgrind.out.{server.proc.pid}.{n + 1}"
        with open(dump) as f:
            total = next(int(line.split()[1]) for line in f if line.startswith("summary:"))
        per = total / (res["ok"] + 200)  # the warm-up's 200 ran after the zeroing too
        counts[who].append(per)
        print(f"{who:4}: {res['ok'] + 200} requests, {per:,.0f} instructions each", flush=True)
    root, user = statistics.mean(counts["root"]), statistics.mean(counts["user"])
    print(f"instructions per request: root {root:,.0f}, user with 10 policies {user:,.0f}; authorization adds "
          f"{user - root:,.0f} ({100 * (user - root) / root:.1f}%): root/user {root / user:.3f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--duration", default="3s")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    args = p.parse_args()
    if not os.path.exists(LOAD):
        sys.exit(f"{LOAD} is missing: scripts/build release paddock_load")
    if args.instructions:
        args.connections = 1
        if args.duration == "3s":
            args.duration = "8s"
    with tempfile.TemporaryDirectory(prefix="paddock-authz-bench-") as tmp:
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        account, key, secret = h.create_account(state, None, "bench")
        if args.instructions:
            wrapper = os.path.join(tmp, "paddock-under-callgrind")
            with open(wrapper, "w") as f:
                f.write(f"#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={tmp}/callgrind.out.%p "
                        f"{h.paddock_bin()} \"$@\"\n")
            os.chmod(wrapper, 0o755)
            os.environ["PADDOCK_BIN"] = wrapper  # the server only: the account above is made already
        server = h.Server(state, (), start_timeout=120 if args.instructions else 20)
        server.start()
        try:
            iam = boto3.session.Session().client(
                "iam", endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id=key,
                aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))
            ecs = h.ecs_client(server.endpoint, key, secret)
            ecs.register_task_definition(**h.td_min("bench-family"))
            iam.create_user(UserName="bench")
            for i in range(5):
                iam.put_user_policy(UserName="bench", PolicyName=f"inline-{i}", PolicyDocument=document(i, i == 4))
                arn = iam.create_policy(PolicyName=f"managed-{i}", PolicyDocument=document(10 + i, False))["Policy"]["Arn"]
                iam.attach_user_policy(UserName="bench", PolicyArn=arn)
            user = iam.create_access_key(UserName="bench")["AccessKey"]
            rows = {"root": [], "user": []}
            cpu = {"root": [], "user": []}  # the server's CPU microseconds per answered request
            ratios, cpu_ratios = [], []
            creds = {"root": (key, secret), "user": (user["AccessKeyId"], user["SecretAccessKey"])}
            if args.instructions:
                instructions_per_request(server, tmp, creds, args)
                return
            for r in range(args.rounds):
                # ABBA: odd rounds run root first, even rounds the user first, so a drift in the VM's
                # speed within a round favours neither; each round's own ratio is one sample.
                order = ("root", "user") if r % 2 == 0 else ("user", "root")
                got = {}
                for who in order:
                    before = cpu_seconds(server.proc.pid)
                    res = load(server.endpoint, *creds[who], args, "bench-family")
                    # The warm-up's requests count too: they ran between the two readings.
                    us = 1e6 * (cpu_seconds(server.proc.pid) - before) / (res["ok"] + 200)
                    cpu[who].append(us)
                    errors = sum(res.get("errors", {}).values()) if isinstance(res.get("errors"), dict) else res.get("errors")
                    got[who] = res["rps"]
                    rows[who].append(res["rps"])
                    print(f"round {r + 1} {who:4}: {res['rps']:9.0f} req/s  p50 {res['p50_ms']:.3f} ms  "
                          f"p99 {res.get('p99_ms', float('nan')):.3f} ms  server CPU {us:6.1f} us/req  errors {errors}",
                          flush=True)
                ratios.append(got["user"] / got["root"])
                cpu_ratios.append(cpu["root"][-1] / cpu["user"][-1])
            root, usr = statistics.median(rows["root"]), statistics.median(rows["user"])
            ratios.sort()
            q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
            print(f"median root {root:.0f} req/s, user with 10 policies {usr:.0f} req/s")
            print(f"per-round user/root ratio: median {statistics.median(ratios):.3f} "
                  f"(interquartile {q[0]:.3f}-{q[2]:.3f}, min {ratios[0]:.3f}, max {ratios[-1]:.3f}, {len(ratios)} rounds); "
                  f"authorization costs {100 * (1 - statistics.median(ratios)):.1f}%")
            cpu_ratios.sort()
            cq = statistics.quantiles(cpu_ratios, n=4) if len(cpu_ratios) >= 2 else [cpu_ratios[0]] * 3
            print(f"server CPU per request: root {statistics.median(cpu['root']):.1f} us, "
                  f"user {statistics.median(cpu['user']):.1f} us; per-round root/user ratio: median "
                  f"{statistics.median(cpu_ratios):.3f} (interquartile {cq[0]:.3f}-{cq[2]:.3f}, min {cpu_ratios[0]:.3f}, "
                  f"max {cpu_ratios[-1]:.3f}): the throughput ratio a CPU-bound server would have")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
