#!/usr/bin/env python3
"""SSM GetParameter throughput (issue 12: >= 10,000 req/s at 16 connections): one real `paddock
server` with durable commits, a String and a SecureString parameter, driven by `paddock_load`
(SigV4, keep-alive connections) as the root (never evaluated) and as an IAM user whose policy
allows ssm:GetParameter on the parameters' path. Prints one line per case.

    python3 bench/ssm_bench.py [--duration 5s] [--connections 16]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

import paddock_harness as h  # noqa: E402

LOAD = os.path.join(ROOT, "build/release/bench/paddock_load")


def load(endpoint, key, secret, args, action, family):
    out = subprocess.run([LOAD, "--endpoint", endpoint, "--access-key", key, "--secret-key", secret,
                          "--connections", str(args.connections), "--duration", args.duration,
                          "--action", action, "--family", family, "--warmup", "200", "--json"],
                         check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--duration", default="5s")
    p.add_argument("--connections", type=int, default=16)
    args = p.parse_args()
    if not os.path.exists(LOAD):
        sys.exit(f"{LOAD} is missing: scripts/build release paddock_load")
    with tempfile.TemporaryDirectory(prefix="paddock-ssm-bench-") as tmp:
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        account, key, secret = h.create_account(state, None, "bench")
        server = h.Server(state, ())
        server.start()
        try:
            def client(service, k, s):
                return boto3.session.Session().client(
                    service, endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id=k,
                    aws_secret_access_key=s, config=Config(retries={"max_attempts": 1}))
            ssm = client("ssm", key, secret)
            ssm.put_parameter(Name="/plain/value", Value="x" * 64, Type="String")
            ssm.put_parameter(Name="/secure/value", Value="s" * 64, Type="SecureString")
            iam = client("iam", key, secret)
            iam.create_user(UserName="reader")
            iam.put_user_policy(UserName="reader", PolicyName="p", PolicyDocument=json.dumps({
                "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameter",
                                                        "Resource": f"arn:aws:ssm:*:{account}:parameter/*"}]}))
            user = iam.create_access_key(UserName="reader")["AccessKey"]
            cases = [("root", key, secret, "get-parameter", "plain"),
                     ("root", key, secret, "get-parameter-decrypted", "secure"),
                     ("user", user["AccessKeyId"], user["SecretAccessKey"], "get-parameter", "plain"),
                     ("user", user["AccessKeyId"], user["SecretAccessKey"], "get-parameter-decrypted", "secure")]
            for who, k, s, action, family in cases:
                r = load(server.endpoint, k, s, args, action, family)
                print(f"{who:4} {action:24} {args.connections} conns: {json.dumps(r)}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
