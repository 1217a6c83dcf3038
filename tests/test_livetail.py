"""CloudWatch Logs' StartLiveTail against a real server (docs/contracts/logs.md "Live Tail"): boto3's
`start_live_tail` response stream (botocore's own event-stream decoder) yields sessionStart, then a
sessionUpdate a second carrying the events a concurrent PutLogEvents wrote — the filter pattern and stream
prefixes applied, other groups' events never; every event is validated against botocore's shapes. Another
account's group ARN is not found, an IAM user is held to the groups its policy names, and an account holds
at most 15 sessions. The model's host prefix ("stream-") is not injected: the client is made with
Config(inject_host_prefix=False), as a custom endpoint needs (the profile `paddock up` writes says so for
the CLIs: test_aws_profile.py)."""
import json
import time

import paddock_harness as h
import botocore.session  # noqa: E402

LOGS_MODEL = botocore.session.get_session().get_service_model("logs")
STREAM_SHAPE = LOGS_MODEL.operation_model("StartLiveTail").output_shape.members["responseStream"]
DEADLINE = 15  # seconds any awaited event may take (updates come once a second)


def client(endpoint, key_id, secret):
    return h.json_client("logs", endpoint, key_id, secret, timeout=20, inject_host_prefix=False)


def now_ms():
    return int(time.time() * 1000)


class LiveTail(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.logs = client(cls.server.endpoint, cls.key_id, cls.secret)

    def arn(self, name, account=None):
        return f"arn:aws:logs:{h.REGION}:{account or self.account}:log-group:{name}"

    def make(self, group, *streams):
        self.logs.create_log_group(logGroupName=group)
        for s in streams:
            self.logs.create_log_stream(logGroupName=group, logStreamName=s)

    def put(self, group, stream, *messages):
        t = now_ms()
        self.logs.put_log_events(logGroupName=group, logStreamName=stream,
                                 logEvents=[{"timestamp": t, "message": m} for m in messages])

    def validated(self, event):
        """`event` (one item of the response stream) after checking it against botocore's shapes."""
        self.assertEqual(len(event), 1, event)
        (name, body), = event.items()
        errs = h.VALIDATOR.validate(body, STREAM_SHAPE.members[name])
        self.assertEqual(errs, [], f"{name} violates its shape: {body}")
        return name, body

    def start(self, c=None, **kwargs):
        """The response stream of a new session, and its sessionStart."""
        stream = (c or self.logs).start_live_tail(**kwargs)["responseStream"]
        self.addCleanup(stream.close)
        events = iter(stream)
        name, start = self.validated(next(events))
        self.assertEqual(name, "sessionStart")
        return events, start

    def collect(self, events, want):
        """Messages of sessionResults until `want` of them came (or DEADLINE passed), with their events."""
        got, deadline = [], time.monotonic() + DEADLINE
        for event in events:
            name, body = self.validated(event)
            self.assertEqual(name, "sessionUpdate", body)
            self.assertFalse(body["sessionMetadata"]["sampled"])
            got += body["sessionResults"]
            if len(got) >= want or time.monotonic() > deadline:
                break
        return got

    def test_boto3_stream_yields_session_start_then_the_matching_events_put_meanwhile(self):
        self.make("/lt/a", "web/1")
        self.make("/lt/b", "web/1")
        self.make("/lt/c", "web/1")
        events, start = self.start(logGroupIdentifiers=[self.arn("/lt/a"), self.arn("/lt/b")],
                                   logEventFilterPattern="ERROR")
        self.assertEqual(start["logGroupIdentifiers"], [self.arn("/lt/a"), self.arn("/lt/b")])
        self.assertEqual(start["logEventFilterPattern"], "ERROR")
        self.assertTrue(start["sessionId"])
        self.assertTrue(start["requestId"])
        self.put("/lt/a", "web/1", "ERROR from a", "fine from a")
        self.put("/lt/c", "web/1", "ERROR from c, not tailed")
        self.put("/lt/b", "web/1", "ERROR from b")
        got = self.collect(events, 2)
        self.assertEqual(sorted(e["message"] for e in got), ["ERROR from a", "ERROR from b"])
        by_msg = {e["message"]: e for e in got}
        self.assertEqual(by_msg["ERROR from a"]["logGroupIdentifier"], self.arn("/lt/a"))
        self.assertEqual(by_msg["ERROR from b"]["logStreamName"], "web/1")
        self.assertGreaterEqual(by_msg["ERROR from b"]["ingestionTime"], by_msg["ERROR from b"]["timestamp"] - 5000)
        # Nothing more arrives: the next update is empty (one comes a second, as AWS sends them).
        name, body = self.validated(next(events))
        self.assertEqual((name, body["sessionResults"]), ("sessionUpdate", []))

    def test_stream_names_and_prefixes_narrow_the_session(self):
        self.make("/lt/p", "web/1", "web/2", "db/1")
        by_prefix, start = self.start(logGroupIdentifiers=[self.arn("/lt/p")], logStreamNamePrefixes=["db/"])
        self.assertEqual(start["logStreamNamePrefixes"], ["db/"])
        by_name, _ = self.start(logGroupIdentifiers=[self.arn("/lt/p")], logStreamNames=["web/2"])
        for s in ("web/1", "web/2", "db/1"):
            self.put("/lt/p", s, f"line of {s}")
        self.assertEqual([e["message"] for e in self.collect(by_prefix, 1)], ["line of db/1"])
        self.assertEqual([e["message"] for e in self.collect(by_name, 1)], ["line of web/2"])

    def test_another_accounts_group_is_not_found_and_refusals_are_awss(self):
        self.make("/lt/mine", "s")
        _, kid, secret = h.create_account(self.state_dir, None, "lt-other")
        other = client(self.server.endpoint, kid, secret)
        self.assertClientError("ResourceNotFoundException", other.start_live_tail,
                               logGroupIdentifiers=[self.arn("/lt/mine")])
        self.assertClientError("ResourceNotFoundException", self.logs.start_live_tail,
                               logGroupIdentifiers=[self.arn("/lt/none")])
        self.assertClientError("InvalidParameterException", self.logs.start_live_tail,
                               logGroupIdentifiers=[self.arn("/lt/mine")], logEventFilterPattern="a@b")
        self.assertClientError("InvalidParameterException", self.logs.start_live_tail,
                               logGroupIdentifiers=[self.arn("/lt/mine")], logStreamNames=["s"],
                               logStreamNamePrefixes=["s"])

    def test_an_iam_user_tails_only_the_groups_its_policy_names(self):
        iam = h.client("iam", self.server.endpoint, self.key_id, self.secret)
        self.make("/lt/iam-ok", "s")
        self.make("/lt/iam-no", "s")
        iam.create_user(UserName="tailer")
        iam.put_user_policy(UserName="tailer", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "logs:StartLiveTail",
                                                   "Resource": self.arn("/lt/iam-ok") + ":*"}]}))
        key = iam.create_access_key(UserName="tailer")["AccessKey"]
        tailer = client(self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        events, _ = self.start(tailer, logGroupIdentifiers=[self.arn("/lt/iam-ok")])
        self.put("/lt/iam-ok", "s", "seen by the tailer")
        self.assertEqual([e["message"] for e in self.collect(events, 1)], ["seen by the tailer"])
        self.assertClientError("AccessDeniedException", tailer.start_live_tail,
                               logGroupIdentifiers=[self.arn("/lt/iam-ok"), self.arn("/lt/iam-no")],
                               message_contains="logs:StartLiveTail")

    def test_an_account_holds_at_most_15_sessions(self):
        _, kid, secret = h.create_account(self.state_dir, None, "lt-limit")
        c = client(self.server.endpoint, kid, secret)
        c.create_log_group(logGroupName="/lt/limit")
        streams = []
        group_arn = c.describe_log_groups(logGroupNamePrefix="/lt/limit")["logGroups"][0]["logGroupArn"]
        for _ in range(15):
            s, _ = self.start(c, logGroupIdentifiers=[group_arn])
            streams.append(s)
        self.assertClientError("LimitExceededException", c.start_live_tail, logGroupIdentifiers=[group_arn])
        # The main account is not held by another's sessions.
        self.make("/lt/limit-main", "s")
        self.start(logGroupIdentifiers=[self.arn("/lt/limit-main")])
        self.assertServerAlive()
