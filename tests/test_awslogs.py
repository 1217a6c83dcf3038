"""The awslogs log driver end to end (docs/contracts/task.md, "Logs"; issue 12 §4): real Fargate
tasks on `paddock server` whose containers' output reaches CloudWatch Logs, written as the task's
execution role, and stays in `paddock logs` too.

- lines a container prints are events of `prefix/container/task-id` in the configured group
  (GetLogEvents, FilterLogEvents), in order, and `paddock logs` still shows them;
- awslogs-create-group creates the group when the role may;
- a group that does not exist stops the task with ECS's text; so does a role that may not create
  the stream (AccessDeniedException for its session);
- `aws logs tail GROUP --follow` (the AWS CLI v2) shows a running task's new lines, each once: each
  line is stored within 2 s of being printed (the driver flushes every second) and shown within the
  CLI's own 5 s poll after that;
- a container writing fast in blocking mode loses no line; without a mode in its options a container
  takes its account's defaultLogDriverMode (non-blocking unless set: a flooded 1 KiB buffer drops).

Roles are made with IAM's CreateRole. Needs root, crun and busybox-static."""

import json
import os
import queue
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

IMAGE = "busybox:awslogs"
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
PREFIX = "CannotStartContainerError: Error response from daemon: failed to initialize logging driver: "
CLI_V2 = "/usr/bin/aws"


client = h.client


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class Awslogs(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, IMAGE, "awslogs\n", applets=("seq", "sleep", "date"))
        cls.iam = client("iam", cls.server.endpoint, cls.key_id, cls.secret)
        cls.logs = client("logs", cls.server.endpoint, cls.key_id, cls.secret)
        cls.subnet = client("ec2", cls.server.endpoint, cls.key_id, cls.secret).describe_subnets()[
            "Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="awslogs")
        cls.role = cls.iam.create_role(RoleName="awslogs-exec", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        cls.iam.put_role_policy(RoleName="awslogs-exec", PolicyName="logs", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:CreateLogGroup"],
                "Resource": "*"}]}))
        cls.none = cls.iam.create_role(RoleName="awslogs-none", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        cls.logs.create_log_group(logGroupName="/ecs/app")

    def start(self, family, script, options, role=None):
        container = {"name": "app", "image": IMAGE, "essential": True, "command": ["sh", "-c", script],
                     "logConfiguration": {"logDriver": "awslogs", "options": options}}
        td = self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            executionRoleArn=role or self.role, containerDefinitions=[container])["taskDefinition"]
        r = self.ecs.run_task(cluster="awslogs", taskDefinition=td["taskDefinitionArn"], launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        return r["tasks"][0]["taskArn"]

    def run_to_stop(self, family, script, options, role=None, timeout=60):
        arn = self.start(family, script, options, role)
        return arn, th.wait_for_status(self, self.ecs, "awslogs", arn, "STOPPED", timeout, self.server.log_tail)

    def messages(self, group, stream):
        events, token = [], None
        while True:
            kw = {"nextToken": token} if token else {}
            r = self.logs.get_log_events(logGroupName=group, logStreamName=stream, startFromHead=True, **kw)
            events += r["events"]
            if r["nextForwardToken"] == token:
                return [e["message"] for e in events]
            token = r["nextForwardToken"]

    def test_lines_reach_the_stream_and_paddock_logs(self):
        arn, task = self.run_to_stop("awslogs-ok", "echo one; echo two >&2; echo; echo three",
                                     {"awslogs-group": "/ecs/app", "awslogs-region": h.REGION,
                                      "awslogs-stream-prefix": "web"})
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        task_id = arn.rsplit("/", 1)[1]
        stream = f"web/app/{task_id}"
        self.assertEqual(self.messages("/ecs/app", stream), ["one", "two", "three"])
        found = self.logs.filter_log_events(logGroupName="/ecs/app", logStreamNames=[stream], filterPattern="two")
        self.assertEqual([e["message"] for e in found["events"]], ["two"])
        out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, task_id],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("one\ntwo\n\nthree\n", out.stdout)

    def test_multiline_pattern_joins_lines(self):
        arn, task = self.run_to_stop("awslogs-multi", "echo 'START a'; echo '  at x'; echo 'START b'",
                                     {"awslogs-group": "/ecs/app", "awslogs-stream-prefix": "multi",
                                      "awslogs-multiline-pattern": "^START"})
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        stream = f"multi/app/{arn.rsplit('/', 1)[1]}"
        self.assertEqual(self.messages("/ecs/app", stream), ["START a\n  at x\n", "START b\n"])

    def test_create_group(self):
        arn, task = self.run_to_stop("awslogs-create", "echo made",
                                     {"awslogs-group": "/ecs/created", "awslogs-create-group": "true",
                                      "awslogs-stream-prefix": "c"})
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        self.assertEqual(self.messages("/ecs/created", f"c/app/{arn.rsplit('/', 1)[1]}"), ["made"])

    def test_a_missing_group_stops_the_task(self):
        _, task = self.run_to_stop("awslogs-missing", "echo never",
                                   {"awslogs-group": "/ecs/nowhere", "awslogs-stream-prefix": "m"})
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertEqual(task["stoppedReason"], PREFIX + "failed to create Cloudwatch log stream: "
                         "ResourceNotFoundException: The specified log group does not exist.")

    def test_a_role_that_may_not_write_stops_the_task(self):
        arn, task = self.run_to_stop("awslogs-denied", "echo never",
                                     {"awslogs-group": "/ecs/app", "awslogs-stream-prefix": "d"}, role=self.none)
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        task_id = arn.rsplit("/", 1)[1]
        expected = (PREFIX + "failed to create Cloudwatch log stream: AccessDeniedException: User: "
                    f"arn:aws:sts::{self.account}:assumed-role/awslogs-none/{task_id} is not authorized to perform: "
                    f"logs:CreateLogStream on resource: arn:aws:logs:{h.REGION}:{self.account}:log-group:/ecs/app:"
                    f"log-stream:d/app/{task_id}")
        self.assertEqual(task["stoppedReason"][:len(expected)], expected)
        self.assertEqual(self.logs.describe_log_streams(logGroupName="/ecs/app", logStreamNamePrefix="d/")
                         ["logStreams"], [])

    def test_a_region_other_than_the_nodes_stops_the_task(self):
        _, task = self.run_to_stop("awslogs-region", "echo never",
                                   {"awslogs-group": "/ecs/app", "awslogs-region": "eu-west-3",
                                    "awslogs-stream-prefix": "r"})
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertTrue(task["stoppedReason"].startswith(PREFIX + "awslogs-region 'eu-west-3' is not this node's "
                                                         f"region '{h.REGION}'"), task["stoppedReason"])

    @unittest.skipUnless(os.path.exists(CLI_V2), "needs the AWS CLI v2 at /usr/bin/aws")
    def test_tail_follow_shows_new_lines_within_5_seconds(self):
        # Each line carries the kernel's uptime when it was printed (/proc/uptime: the host's clock,
        # no time namespace), so the test measures each line's delay to the centisecond.
        arn = self.start("awslogs-tail", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); read up rest < /proc/uptime; "
                         'echo "tick $i $up"; sleep 0.3; done',
                         {"awslogs-group": "/ecs/tail", "awslogs-create-group": "true",
                          "awslogs-stream-prefix": "t"})
        self.addCleanup(th.stop_quietly, self.ecs, "awslogs", arn)
        th.wait_for_status(self, self.ecs, "awslogs", arn, "RUNNING", 30, self.server.log_tail)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        for k in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(k, None)
        tail = subprocess.Popen([CLI_V2, "--endpoint-url", self.server.endpoint, "logs", "tail", "/ecs/tail",
                                 "--follow", "--format", "short"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(tail.stderr.close)  # cleanups run last first: kill, wait, then these
        self.addCleanup(tail.stdout.close)
        self.addCleanup(tail.wait, 10)
        self.addCleanup(tail.kill)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in tail.stdout], daemon=True).start()

        def uptime():
            with open("/proc/uptime") as f:
                return float(f.read().split()[0])

        seen, lags = [], []
        deadline = time.monotonic() + 14
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            parts = line.split()
            if len(parts) >= 4 and parts[1] == "tick":  # "<time> tick N <uptime>"
                seen.append(int(parts[2]))
                lags.append(uptime() - float(parts[3]))
        self.assertGreater(len(seen), 10, f"tail showed {seen}; stderr: {tail.stderr.read() if tail.poll() else ''}")
        self.assertEqual(len(seen), len(set(seen)), f"duplicates: {seen}")
        self.assertEqual(seen, sorted(seen))
        # The CLI v2 polls every 5 s (its own floor, tests/test_logs.py says why): a line is due 5 s
        # after it reached CloudWatch Logs, plus a round trip; the driver's own share is below.
        self.assertLess(max(lags), (5 + 1 + 1.5) * h.latency_scale(), lags)
        # The driver's share: every line is stored within 2 s of being printed (a 1 s flush).
        boot = time.time() - uptime()
        events = self.logs.get_log_events(logGroupName="/ecs/tail", logStreamName=f"t/app/{arn.rsplit('/', 1)[1]}",
                                          startFromHead=True)["events"]
        self.assertGreater(len(events), 10)
        shares = [e["ingestionTime"] / 1000 - (boot + float(e["message"].split()[2])) for e in events]
        self.assertLess(max(shares), 2.0 * h.latency_scale(), shares)

    def wait_for_messages(self, group, stream, more_than=0, timeout=20):
        """The stream's messages once it has more than `more_than` of them (polled: shipping is not an
        event the test can await)."""
        deadline = time.monotonic() + timeout * h.latency_scale()
        while True:
            try:
                found = self.messages(group, stream)
            except self.logs.exceptions.ResourceNotFoundException:
                found = []
            if len(found) > more_than or time.monotonic() > deadline:
                self.assertGreater(len(found), more_than, f"{stream}: {found}; {self.server.log_tail()}")
                return found
            time.sleep(0.2)

    def test_a_restarted_server_re_adopts_the_container_and_makes_its_deleted_stream_again(self):
        # kill -9 of the server (its agent inside): the running container is re-adopted by the next
        # one, which opens its stream again before shipping (a stream deleted meanwhile is made
        # again; without that every batch would be refused) and ships what it prints from then on.
        # (PID 1 ignores SIGTERM without a trap: the stop at cleanup would wait out the 30 s stopTimeout.)
        arn = self.start("awslogs-readopt",
                         "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo tick$i; sleep 0.2; done",
                         {"awslogs-group": "/ecs/app", "awslogs-stream-prefix": "re"})
        self.addCleanup(lambda: th.stop_quietly(self.ecs, "awslogs", arn))
        th.wait_for_status(self, self.ecs, "awslogs", arn, "RUNNING", 30, self.server.log_tail)
        stream = f"re/app/{arn.rsplit('/', 1)[1]}"
        self.wait_for_messages("/ecs/app", stream)
        self.logs.delete_log_stream(logGroupName="/ecs/app", logStreamName=stream)
        port = self.server.port
        self.server.kill()
        server = h.Server(self.state_dir, listen=f"127.0.0.1:{port}").start()  # the clients' endpoint again
        type(self).server = server
        type(self).addClassCleanup(server.stop)
        after = self.wait_for_messages("/ecs/app", stream, more_than=3)
        self.assertTrue(all(m.startswith("tick") for m in after), after)
        ticks = [int(m[4:]) for m in after]
        self.assertEqual(ticks, sorted(set(ticks)), "in order, each once")
        self.assertIn("re-adopted after an agent restart", server.log_tail(20000))

    SEQ = 50000

    def seq_lines(self, family, prefix, **options):
        """The lines that reached stream prefix/app/<task> of a container printing `seq 1 SEQ` with
        these options besides the group and prefix (the task must exit as it should)."""
        arn, task = self.run_to_stop(family, f"seq 1 {self.SEQ}",
                                     {"awslogs-group": "/ecs/app", "awslogs-stream-prefix": prefix, **options},
                                     timeout=120)
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        return self.messages("/ecs/app", f"{prefix}/app/{arn.rsplit('/', 1)[1]}")

    def test_blocking_mode_loses_no_line(self):
        self.assertEqual(self.seq_lines("awslogs-fast", "fast", mode="blocking"),
                         [str(i) for i in range(1, self.SEQ + 1)])

    def test_the_accounts_default_mode_applies_where_the_options_name_none(self):
        # AWS's default, non-blocking: a container flooding a 1 KiB buffer loses lines (counted, not stored).
        self.assertLess(len(self.seq_lines("awslogs-default", "dflt", **{"max-buffer-size": "1k"})), self.SEQ)
        self.ecs.put_account_setting_default(name="defaultLogDriverMode", value="blocking")
        try:
            # The account says blocking: nothing is lost...
            self.assertEqual(len(self.seq_lines("awslogs-acct-blocking", "acct")), self.SEQ)
            # ...and a max-buffer-size without a mode is Docker's refusal, as ECS fills the mode in.
            _, task = self.run_to_stop("awslogs-acct-buffer", "echo never",
                                       {"awslogs-group": "/ecs/app", "awslogs-stream-prefix": "buf",
                                        "max-buffer-size": "1k"})
            self.assertEqual(task["stopCode"], "TaskFailedToStart")
            self.assertEqual(task["stoppedReason"],
                             PREFIX + "logger: max-buffer-size option is only supported with 'mode=non-blocking'")
        finally:
            self.ecs.put_account_setting_default(name="defaultLogDriverMode", value="non-blocking")

if __name__ == "__main__":
    unittest.main()
