"""CloudWatch Logs against a real server (docs/contracts/logs.md): boto3 creates, lists, writes, reads and
filters log groups, streams and events, with paginators; AWS's error codes and texts; the AWS CLI v1
(filter-log-events, get-log-events) and v2 (`aws logs tail`, also `--follow`: a new line within 5 s, never
twice); IAM policies scope a user to log-group ARNs; one account never sees another's groups, streams or
events; deleting an account reaps its logs. Every successful response is validated strictly against
botocore's CloudWatch Logs output shapes from the RAW body."""
import json
import os
import select
import subprocess
import time

import paddock_harness as h

client = h.client


def now_ms():
    return int(time.time() * 1000)


class Logs(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.logs = client("logs", cls.server.endpoint, cls.key_id, cls.secret)

    def group_arn(self, name, account=None):
        return f"arn:aws:logs:{h.REGION}:{account or self.account}:log-group:{name}"

    def make(self, group, *streams, client_=None):
        c = client_ or self.logs
        c.create_log_group(logGroupName=group)
        for s in streams:
            c.create_log_stream(logGroupName=group, logStreamName=s)

    def test_groups_streams_events_round_trip_with_paginators(self):
        for i in range(7):
            self.logs.create_log_group(logGroupName=f"/rt/g{i}", tags={"i": str(i)})
        pages = list(self.logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix="/rt/",
                                                                             PaginationConfig={"PageSize": 3}))
        self.assertEqual(len(pages), 3)
        self.assertEqual([g["logGroupName"] for p in pages for g in p["logGroups"]], [f"/rt/g{i}" for i in range(7)])
        self.assertEqual(pages[0]["logGroups"][0]["arn"], self.group_arn("/rt/g0") + ":*")
        for s in ("web/app/1", "web/app/2", "db/1"):
            self.logs.create_log_stream(logGroupName="/rt/g0", logStreamName=s)
        t = now_ms()
        self.logs.put_log_events(logGroupName="/rt/g0", logStreamName="web/app/1",
                                 logEvents=[{"timestamp": t + i * 2, "message": f"web1 {i}"} for i in range(5)])
        self.logs.put_log_events(logGroupName="/rt/g0", logStreamName="web/app/2", sequenceToken="ignored",
                                 logEvents=[{"timestamp": t + i * 2 + 1, "message": f"web2 {i}"} for i in range(5)])
        streams = self.logs.describe_log_streams(logGroupName="/rt/g0", orderBy="LastEventTime", descending=True)
        self.assertEqual([s["logStreamName"] for s in streams["logStreams"]], ["web/app/2", "web/app/1", "db/1"])
        self.assertEqual(streams["logStreams"][0]["lastEventTimestamp"], t + 9)
        # FilterLogEvents interleaves the streams by timestamp, pages with nextToken, ids stable and unique.
        events = [e for p in self.logs.get_paginator("filter_log_events").paginate(
            logGroupName="/rt/g0", logStreamNamePrefix="web/", PaginationConfig={"PageSize": 3}) for e in p["events"]]
        self.assertEqual([e["message"] for e in events],
                         [f"web{1 + k % 2} {k // 2}" for k in range(10)])
        self.assertEqual(len({e["eventId"] for e in events}), 10)
        again = self.logs.filter_log_events(logGroupName="/rt/g0", filterPattern="web2")["events"]
        self.assertEqual([e["eventId"] for e in again], [e["eventId"] for e in events if e["message"].startswith("web2")])
        # GetLogEvents: the tail by default, pages forward, and the same nextForwardToken at the end.
        tail = self.logs.get_log_events(logGroupName="/rt/g0", logStreamName="web/app/1", limit=2)
        self.assertEqual([e["message"] for e in tail["events"]], ["web1 3", "web1 4"])
        head = self.logs.get_log_events(logGroupName="/rt/g0", logStreamName="web/app/1", startFromHead=True, limit=3)
        nxt = self.logs.get_log_events(logGroupName="/rt/g0", logStreamName="web/app/1", startFromHead=True,
                                       nextToken=head["nextForwardToken"], limit=3)
        self.assertEqual([e["message"] for e in nxt["events"]], ["web1 3", "web1 4"])
        end = self.logs.get_log_events(logGroupName="/rt/g0", logStreamName="web/app/1", startFromHead=True,
                                       nextToken=nxt["nextForwardToken"], limit=3)
        self.assertEqual((end["events"], end["nextForwardToken"]), ([], nxt["nextForwardToken"]))
        self.assertEqual(self.logs.list_tags_for_resource(resourceArn=self.group_arn("/rt/g1"))["tags"], {"i": "1"})
        self.logs.delete_log_stream(logGroupName="/rt/g0", logStreamName="web/app/1")
        self.logs.delete_log_group(logGroupName="/rt/g0")
        self.assertClientError("ResourceNotFoundException", self.logs.filter_log_events, logGroupName="/rt/g0",
                               message="The specified log group does not exist.")

    def test_a_full_batch_passes_although_its_body_is_over_a_mebibyte(self):
        """A batch at CloudWatch's limit is larger than 1 MiB as JSON: the node admits PutLogEvents
        bodies up to 8 MiB (every other call stays at 1 MiB)."""
        self.make("/big/g", "s")
        t = now_ms()
        message = "q" * 174  # 5,000 × (6 + 174 + 26) = 1,030,000 counted bytes: under 1,048,576
        body_events = [{"timestamp": t, "message": f"{i:05d}\"" + message} for i in range(5000)]
        self.assertGreater(len(json.dumps({"logEvents": body_events})), 1 << 20)
        r = self.logs.put_log_events(logGroupName="/big/g", logStreamName="s", logEvents=body_events)
        self.assertNotIn("rejectedLogEventsInfo", r)
        got = self.logs.get_log_events(logGroupName="/big/g", logStreamName="s", startFromHead=True, limit=10)
        self.assertEqual(got["events"][0]["message"], "00000\"" + message)
        # Any other call with a body over 1 MiB is refused before it is read.
        status, _, body = h.raw_request(self.server.port, body=b"{" + b" " * (1 << 20) + b"}", headers={
            "X-Amz-Target": "Logs_20140328.DescribeLogGroups", "Content-Type": "application/x-amz-json-1.1"})
        self.assertEqual(status, 413, body)

    def test_aws_errors(self):
        self.make("/err/g", "s")
        self.assertClientError("ResourceAlreadyExistsException", self.logs.create_log_group, logGroupName="/err/g",
                               message="The specified log group already exists")
        self.assertClientError("ResourceAlreadyExistsException", self.logs.create_log_stream, logGroupName="/err/g",
                               logStreamName="s", message="The specified log stream already exists")
        self.assertClientError("ResourceNotFoundException", self.logs.create_log_stream, logGroupName="/err/none",
                               logStreamName="s", message="The specified log group does not exist.")
        self.assertClientError("ResourceNotFoundException", self.logs.put_log_events, logGroupName="/err/g",
                               logStreamName="none", logEvents=[{"timestamp": now_ms(), "message": "x"}],
                               message="The specified log stream does not exist.")
        t = now_ms()
        self.assertClientError(
            "InvalidParameterException", self.logs.put_log_events, logGroupName="/err/g", logStreamName="s",
            logEvents=[{"timestamp": t, "message": "b"}, {"timestamp": t - 1, "message": "a"}],
            message="Log events in a single PutLogEvents request must be in chronological order.")
        self.assertClientError("InvalidParameterException", self.logs.put_retention_policy, logGroupName="/err/g",
                               retentionInDays=2, message_contains="Member must satisfy enum value set: [1, 3, 5, 7")
        self.assertClientError("InvalidParameterException", self.logs.create_log_group, logGroupName="bad:name",
                               message_contains="Member must satisfy regular expression pattern")
        self.assertClientError("InvalidParameterException", self.logs.filter_log_events, logGroupName="/err/g",
                               filterPattern="a@b")
        rejected = self.logs.put_log_events(logGroupName="/err/g", logStreamName="s", logEvents=[
            {"timestamp": t - 14 * 86400 * 1000 - 60000, "message": "old"},
            {"timestamp": t - 14 * 86400 * 1000 - 30000, "message": "old"},
            {"timestamp": t - 14 * 86400 * 1000 + 60000, "message": "kept"}])
        self.assertEqual(rejected["rejectedLogEventsInfo"], {"tooOldLogEventEndIndex": 2})
        self.logs.put_retention_policy(logGroupName="/err/g", retentionInDays=7)
        got = self.logs.describe_log_groups(logGroupNamePrefix="/err/g")["logGroups"][0]
        self.assertEqual(got["retentionInDays"], 7)
        # Retention hides what is older on read.
        self.assertEqual(self.logs.filter_log_events(logGroupName="/err/g")["events"], [])
        self.logs.delete_retention_policy(logGroupName="/err/g")
        self.assertEqual([e["message"] for e in self.logs.filter_log_events(logGroupName="/err/g")["events"]], ["kept"])

    def test_an_iam_user_reaches_only_the_log_groups_its_policy_names(self):
        iam = client("iam", self.server.endpoint, self.key_id, self.secret)
        self.make("/scoped/app", "s")
        self.make("/scoped/other", "s")
        iam.create_user(UserName="logs-writer")
        iam.put_user_policy(UserName="logs-writer", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": ["logs:PutLogEvents", "logs:FilterLogEvents", "logs:CreateLogStream"],
                "Resource": self.group_arn("/scoped/app") + ":*"}]}))
        key = iam.create_access_key(UserName="logs-writer")["AccessKey"]
        writer = client("logs", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        writer.put_log_events(logGroupName="/scoped/app", logStreamName="s",
                              logEvents=[{"timestamp": now_ms(), "message": "allowed"}])
        self.assertEqual(len(writer.filter_log_events(logGroupName="/scoped/app")["events"]), 1)
        user_arn = f"arn:aws:iam::{self.account}:user/logs-writer"
        self.assertClientError(
            "AccessDeniedException", writer.put_log_events, logGroupName="/scoped/other", logStreamName="s",
            logEvents=[{"timestamp": now_ms(), "message": "denied"}],
            message=f"User: {user_arn} is not authorized to perform: logs:PutLogEvents on resource: "
                    f"{self.group_arn('/scoped/other')}:log-stream:s because no identity-based policy allows the "
                    "logs:PutLogEvents action")
        self.assertClientError("AccessDeniedException", writer.delete_log_group, logGroupName="/scoped/app")
        self.assertEqual(self.logs.filter_log_events(logGroupName="/scoped/other")["events"], [])

    def test_accounts_never_see_each_others_groups_streams_or_events(self):
        self.make("/iso/g", "s")
        self.logs.put_log_events(logGroupName="/iso/g", logStreamName="s",
                                 logEvents=[{"timestamp": now_ms(), "message": "mine-canary"}])
        _, kid, secret = h.create_account(self.state_dir, None, "iso-other")
        other = client("logs", self.server.endpoint, kid, secret)
        self.assertEqual(other.describe_log_groups()["logGroups"], [])
        for kw in ({"logGroupName": "/iso/g"}, {"logGroupIdentifier": self.group_arn("/iso/g")}):
            self.assertClientError("ResourceNotFoundException", other.filter_log_events, **kw)
            self.assertClientError("ResourceNotFoundException", other.describe_log_streams, **kw)
            self.assertClientError("ResourceNotFoundException", other.get_log_events, logStreamName="s", **kw)
        self.assertClientError("ResourceNotFoundException", other.put_log_events, logGroupName="/iso/g",
                               logStreamName="s", logEvents=[{"timestamp": now_ms(), "message": "x"}])
        self.assertClientError("ResourceNotFoundException", other.list_tags_for_resource,
                               resourceArn=self.group_arn("/iso/g"))
        self.assertClientError("ResourceNotFoundException", other.delete_log_group, logGroupName="/iso/g")
        # The same name is the other account's own, empty group.
        self.make("/iso/g", "s", client_=other)
        self.assertEqual(other.filter_log_events(logGroupName="/iso/g")["events"], [])
        self.assertEqual([e["message"] for e in self.logs.filter_log_events(logGroupName="/iso/g")["events"]],
                         ["mine-canary"])

    def test_deleting_an_account_reaps_its_logs(self):
        acct = "%012d" % (int.from_bytes(os.urandom(8), "big") % 10 ** 12)
        _, kid, secret = h.create_account(self.state_dir, acct, "doomed")
        doomed = client("logs", self.server.endpoint, kid, secret)
        self.make("/doomed/g", "s", client_=doomed)
        doomed.put_log_events(logGroupName="/doomed/g", logStreamName="s",
                              logEvents=[{"timestamp": now_ms(), "message": "gone"}])
        self.make("/doomed/g", "s")
        h.admin(self.state_dir, "delete-account", "--account", acct)
        _, kid2, secret2 = h.create_account(self.state_dir, acct, "reborn")
        reborn = client("logs", self.server.endpoint, kid2, secret2)
        self.assertEqual(reborn.describe_log_groups()["logGroups"], [])
        self.assertClientError("ResourceNotFoundException", reborn.filter_log_events, logGroupName="/doomed/g")
        self.logs.describe_log_streams(logGroupName="/doomed/g")  # the bystander's group stays

    # --- the AWS CLIs ---

    def cli_env(self):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
                   AWS_PAGER="")
        env.pop("AWS_SESSION_TOKEN", None)
        env.pop("AWS_PROFILE", None)
        return env

    def aws(self, cli, *args):
        return subprocess.run([*cli, "--endpoint-url", self.server.endpoint, "logs", *args],
                              env=self.cli_env(), capture_output=True, timeout=60)

    def test_cli_v1(self):
        cli = ["aws"]
        self.make("/cli1/g", "s")
        t = now_ms()
        out = self.aws(cli, "put-log-events", "--log-group-name", "/cli1/g", "--log-stream-name", "s",
                       "--log-events", f"timestamp={t},message=one", f"timestamp={t + 1},message=two")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        out = self.aws(cli, "--output", "json", "filter-log-events", "--log-group-name", "/cli1/g",
                       "--filter-pattern", "two")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual([e["message"] for e in json.loads(out.stdout)["events"]], ["two"])
        # get-log-events is no paginator in v1; --start-from-head gives both.
        out = self.aws(cli, "--output", "json", "get-log-events", "--log-group-name", "/cli1/g",
                       "--log-stream-name", "s", "--start-from-head")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual([e["message"] for e in json.loads(out.stdout)["events"]], ["one", "two"])
        out = self.aws(cli, "describe-log-streams", "--log-group-name", "/cli1/none")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("An error occurred (ResourceNotFoundException) when calling the DescribeLogStreams operation: "
                      "The specified log group does not exist.", out.stderr.decode())

    def test_cli_v2_tail(self):
        if not os.path.exists("/usr/bin/aws"):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        cli = ["/usr/bin/aws"]
        self.make("/cli2/g", "web/1", "web/2")
        t = now_ms()
        self.logs.put_log_events(logGroupName="/cli2/g", logStreamName="web/1",
                                 logEvents=[{"timestamp": t - 2000, "message": "first line"}])
        self.logs.put_log_events(logGroupName="/cli2/g", logStreamName="web/2",
                                 logEvents=[{"timestamp": t - 1000, "message": "second line"}])
        out = self.aws(cli, "tail", "/cli2/g", "--since", "10m", "--format", "short")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        lines = out.stdout.decode().splitlines()
        self.assertEqual([line.split(" ", 1)[1] for line in lines], ["first line", "second line"])

    def test_cli_v2_tail_follow_shows_a_new_line_within_5_seconds_never_twice(self):
        if not os.path.exists("/usr/bin/aws"):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        self.make("/follow/g", "s")
        self.logs.put_log_events(logGroupName="/follow/g", logStreamName="s",
                                 logEvents=[{"timestamp": now_ms() - 1000, "message": "before"}])
        proc = subprocess.Popen(["/usr/bin/aws", "--endpoint-url", self.server.endpoint, "logs", "tail", "/follow/g",
                                 "--follow", "--since", "5m", "--format", "short"],
                                env=self.cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            seen = []
            buf = b""

            def read_until(text, deadline):
                nonlocal buf
                while time.time() < deadline:
                    r, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.time()))
                    if not r:
                        break
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buf += chunk
                    *done, buf = buf.split(b"\n")
                    seen.extend(line.decode().split(" ", 1)[1] for line in done if line.strip())
                    if text in seen:
                        return True
                return text in seen

            self.assertTrue(read_until("before", time.time() + 30), (seen, proc.stderr.read1() if proc.poll() else b""))
            # The CLI v2 sleeps 5 s after a last page before it asks again (awscli/customizations/logs/
            # tail.py, FollowLogEventsGenerator._TIME_TO_SLEEP = 5): 5 s is its own floor, so a line
            # is due 5 s after it was written plus one FilterLogEvents round trip of the CLI (1 s here).
            self.latencies = []
            for i in range(3):
                sent = time.time()
                self.logs.put_log_events(logGroupName="/follow/g", logStreamName="s",
                                         logEvents=[{"timestamp": now_ms(), "message": f"new {i}"}])
                self.assertTrue(read_until(f"new {i}", sent + (5 + 1) * h.latency_scale()), seen)
                self.latencies.append(time.time() - sent)
            read_until("never", time.time() + 2.5)  # a poll or two more: nothing is shown again
            self.assertEqual(seen, ["before", "new 0", "new 1", "new 2"])
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()
            proc.stderr.close()


if __name__ == "__main__":
    import unittest
    unittest.main()
