"""Task role credentials end to end (docs/contracts/task.md, "Task role credentials"; issue 11).

Real Fargate (awsvpc) tasks on `paddock server`, whose containers read the credentials endpoint
with busybox wget from inside the task:

- a task with a task role (its definition's, or RunTask's override) gets
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (port 80 in its VPC
  namespace) and, when the role exists and trusts ecs-tasks.amazonaws.com, reads 200 with
  {RoleArn, AccessKeyId, SecretAccessKey, Token, Expiration} valid for hours; the test process then
  calls STS GetCallerIdentity with them and is assumed-role/<role>/<task id>;
- the role's policies decide what the credentials may do: allowed while an inline policy grants
  ecs:ListClusters, AccessDeniedException once it is deleted;
- a role that became unassumable after the task launched (deleted, or its trust changed to no
  longer admit ecs-tasks.amazonaws.com) answers 400 at the endpoint and the task keeps running (a
  role that cannot be assumed at launch refuses the launch: tests/test_launch_roles.py);
- another task's URI — with its token, from another task's address — is 404;
- botocore's own ContainerProvider, run inside the task's network namespace, resolves them (the
  relative form, and the full URI with its token);
- a task without a task role has none of the variables;
- a `paddock agent`'s task gets its credentials over the agent protocol (GetTaskCredentials), with
  the full URI and a token when the server holds port 80 on the host.

Roles are made with IAM's CreateRole. Needs root, crun and busybox-static."""

import datetime
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402

IMAGE = "busybox:taskrole"
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})

# Prints the task's credential variables, fetches its own credentials URI (unless SKIP_OWN is set:
# the test fetches it later, own_from_task) and OTHER_URI with OTHER_TOKEN; each fetch prints
# "<label> rc=<wget status> <body or wget's error>".
PROBE = r'''
show() { echo "VAR $1=$(eval echo \"\$$1\")"; }
fetch() {
  u="$1"; case "$u" in /*) u="http://169.254.170.2$u";; esac
  if [ -n "$2" ]; then out=$(wget -q -O - --header "Authorization: $2" "$u" 2>&1); rc=$?
  else out=$(wget -q -O - "$u" 2>&1); rc=$?; fi
  echo "$3 rc=$rc $out"
}
show AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
show AWS_CONTAINER_CREDENTIALS_FULL_URI
show AWS_CONTAINER_AUTHORIZATION_TOKEN
own="${AWS_CONTAINER_CREDENTIALS_RELATIVE_URI:-$AWS_CONTAINER_CREDENTIALS_FULL_URI}"
[ -n "$own" ] && [ -z "$SKIP_OWN" ] && fetch "$own" "$AWS_CONTAINER_AUTHORIZATION_TOKEN" OWN
[ -n "$OTHER_URI" ] && fetch "$OTHER_URI" "$OTHER_TOKEN" OTHER
echo PROBE-END
exec sleep 3600
'''


def skip_reason():
    return th.skip_reason(tools=("crun",))


def probe_output(test, state_dir, arn, log_tail, timeout=30):
    """{"<variable>": value, "OWN": line, "OTHER": line} from the probe's log (`paddock logs`)."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run([h.paddock_bin(), "logs", "--state-dir", state_dir, arn.rsplit("/", 1)[1]],
                             capture_output=True, text=True, timeout=30).stdout
        if "PROBE-END" in out:
            break
        if time.monotonic() > deadline:
            test.fail(f"the probe did not finish: {out!r}\n{log_tail()}")
        time.sleep(0.2)
    result = {}
    for line in out.splitlines():
        if line.startswith("VAR "):
            name, _, value = line[4:].partition("=")
            result[name] = value
        elif line.startswith(("OWN ", "OTHER ")):
            label, _, rest = line.partition(" ")
            result[label] = rest
    return result


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskRoleCredentials(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, IMAGE, "task role\n", applets=("wget", "sleep"))
        kw = dict(endpoint_url=cls.server.endpoint, region_name=h.REGION, aws_access_key_id=cls.key_id,
                  aws_secret_access_key=cls.secret)
        cls.subnet = boto3.client("ec2", **kw).describe_subnets()["Subnets"][0]["SubnetId"]
        cls.iam = boto3.client("iam", **kw)
        cls.ecs.create_cluster(clusterName="taskrole")
        cls.arns = []
        cls.addClassCleanup(lambda: [th.stop_quietly(cls.ecs, "taskrole", a) for a in cls.arns])

    def run_probe(self, family, role_arn=None, env=(), override_role=None):
        kwargs = {"taskRoleArn": role_arn} if role_arn else {}
        td = self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "probe", "image": IMAGE, "essential": True, "stopTimeout": 2,
                                   "command": ["sh", "-c", PROBE],
                                   "environment": [{"name": k, "value": v} for k, v in env]}],
            **kwargs)["taskDefinition"]["taskDefinitionArn"]
        extra = {"overrides": {"taskRoleArn": override_role}} if override_role else {}
        r = self.ecs.run_task(cluster="taskrole", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}}, **extra)
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.arns.append(arn)
        th.wait_for_status(self, self.ecs, "taskrole", arn, "RUNNING", context=self.server.log_tail)
        return arn, probe_output(self, self.state_dir, arn, self.server.log_tail)

    def role(self, name, trust=TRUST):
        return self.iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["Arn"]

    @unittest.skipIf(shutil.which("nsenter") is None, "needs nsenter")
    def test_a_role_deleted_after_launch_errors_and_other_tasks_uris_are_404(self):
        # Launched while the role could be assumed (a launch with an unassumable role is refused:
        # test_launch_roles.py); no credentials fetched until the role is gone.
        role_arn = self.role("paddock-deleted-later")
        a_arn, a = self.run_probe("tr-deleted-a", role_arn, env=[("SKIP_OWN", "1")])
        own = a["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]
        # Port 80 in the VPC namespace: the relative form, no token.
        self.assertRegex(own, r"^/v2/credentials/[0-9a-f]{32}$")
        self.assertEqual(a["AWS_CONTAINER_CREDENTIALS_FULL_URI"], "")
        # Another task of the same role asks for A's credentials: 404.
        b_arn, b = self.run_probe("tr-deleted-b", role_arn, env=[("SKIP_OWN", "1"), ("OTHER_URI", own),
                                                                 ("OTHER_TOKEN", "")])
        self.assertNotEqual(b["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"], own)
        self.assertIn("rc=1", b["OTHER"])
        self.assertIn("404", b["OTHER"])
        self.iam.delete_role(RoleName="paddock-deleted-later")
        # The endpoint answers the SDK an error (botocore then fails); the tasks run on. Each
        # task's own id answers 400 (it is known, for that task).
        for variables in (a, b):
            line = own_from_task(self, variables)
            self.assertIn("rc=1", line)
            self.assertIn("400", line)
        # A task without a task role: no variable, and A's URI is 404 for it too.
        _, c = self.run_probe("tr-none", None, env=[("OTHER_URI", own), ("OTHER_TOKEN", "")])
        self.assertEqual(c["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"], "")
        self.assertEqual(c["AWS_CONTAINER_CREDENTIALS_FULL_URI"], "")
        self.assertEqual(c["AWS_CONTAINER_AUTHORIZATION_TOKEN"], "")
        self.assertNotIn("OWN", c)
        self.assertIn("404", c["OTHER"])
        for arn in (a_arn, b_arn):
            task = self.ecs.describe_tasks(cluster="taskrole", tasks=[arn])["tasks"][0]
            self.assertEqual(task["lastStatus"], "RUNNING")

    def test_a_container_reads_its_role_credentials_and_they_are_the_roles_session(self):
        role_arn = self.role("paddock-task-role")
        self.iam.put_role_policy(RoleName="paddock-task-role", PolicyName="list", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ecs:ListClusters", "Resource": "*"}]}))
        started = datetime.datetime.now(datetime.timezone.utc)
        arn, out = self.run_probe("tr-role", role_arn)
        task_id = arn.rsplit("/", 1)[1]
        self.assertRegex(out["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"], r"^/v2/credentials/[0-9a-f]{32}$")
        self.assertIn("rc=0", out["OWN"])
        creds = json.loads(out["OWN"].split(" ", 1)[1])
        self.assertEqual(sorted(creds), ["AccessKeyId", "Expiration", "RoleArn", "SecretAccessKey", "Token"])
        self.assertEqual(creds["RoleArn"], role_arn)
        self.assertTrue(creds["AccessKeyId"].startswith("ASIA"), creds)
        self.assertRegex(creds["Expiration"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        expiration = datetime.datetime.strptime(creds["Expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
        # Far beyond botocore's 15-minute refresh margin (ECS: about 6 hours).
        self.assertGreater(expiration - started, datetime.timedelta(hours=5))
        sts = boto3.client("sts", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
                           aws_session_token=creds["Token"])
        me = sts.get_caller_identity()
        self.assertEqual(me["Arn"], f"arn:aws:sts::{self.account}:assumed-role/paddock-task-role/{task_id}")
        self.assertEqual(me["Account"], self.account)
        # What the role's policies allow, and nothing once they are gone.
        as_task = boto3.client("ecs", endpoint_url=self.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
                               aws_session_token=creds["Token"])
        self.assertIn(f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/taskrole", as_task.list_clusters()["clusterArns"])
        self.assertClientError("AccessDeniedException", as_task.describe_clusters, clusters=["taskrole"],
                               message_contains=f"assumed-role/paddock-task-role/{task_id} is not authorized to "
                                                "perform: ecs:DescribeClusters")
        self.iam.delete_role_policy(RoleName="paddock-task-role", PolicyName="list")
        self.assertClientError("AccessDeniedException", as_task.list_clusters)

    @unittest.skipIf(shutil.which("nsenter") is None, "needs nsenter")
    def test_botocores_container_provider_reads_them(self):
        role_arn = self.role("paddock-botocore-role")
        arn, out = self.run_probe("tr-botocore", role_arn)
        creds = botocore_in_task(self, out)
        sts = boto3.client("sts", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
                           aws_session_token=creds["Token"])
        self.assertEqual(sts.get_caller_identity()["Arn"],
                         f"arn:aws:sts::{self.account}:assumed-role/paddock-botocore-role/{arn.rsplit('/', 1)[1]}")

    def test_runtasks_override_names_the_role(self):
        role_arn = self.role("paddock-override-role")
        arn, out = self.run_probe("tr-override", None, override_role=role_arn)
        self.assertIn("rc=0", out["OWN"])
        creds = json.loads(out["OWN"].split(" ", 1)[1])
        self.assertEqual(creds["RoleArn"], role_arn)

    @unittest.skipIf(shutil.which("nsenter") is None, "needs nsenter")
    def test_a_role_whose_trust_stops_admitting_ecs_tasks_errors_at_the_endpoint(self):
        role_arn = self.role("paddock-ec2-only-later")
        arn, out = self.run_probe("tr-untrusting", role_arn, env=[("SKIP_OWN", "1")])
        self.iam.update_assume_role_policy(RoleName="paddock-ec2-only-later",
                                           PolicyDocument=TRUST.replace("ecs-tasks.amazonaws.com", "ec2.amazonaws.com"))
        line = own_from_task(self, out)
        self.assertIn("rc=1", line)
        self.assertIn("400", line)
        self.assertEqual(self.ecs.describe_tasks(cluster="taskrole", tasks=[arn])["tasks"][0]["lastStatus"], "RUNNING")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RemoteAgentTaskRole(h.PaddockTestCase):
    """`paddock agent`: the control plane hands the credentials over the agent protocol
    (GetTaskCredentials); a bridge-mode task reaches the agent's listener on the host, which is not
    on port 80 when the server's own listener holds it: then the full-URI form with a token."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        from test_remote_agent import AgentProcess, write_agent_credentials
        creds = os.path.join(cls.tmp, "agent-credentials")
        write_agent_credentials(cls.state_dir, cls.account, creds)
        cls.agent_dir = os.path.join(cls.tmp, "agent")
        os.makedirs(cls.agent_dir)
        th.httpd_image(cls.agent_dir, cls.tmp, IMAGE, "task role\n", applets=("wget", "sleep"))
        cls.ecs.create_cluster(clusterName="remote-role")
        cls.agent = AgentProcess(["--endpoint", cls.server.endpoint, "--cluster", "remote-role", "--state-dir",
                                  cls.agent_dir, "--credentials", creds, "--profile", "agent"],
                                 os.path.join(cls.tmp, "agent.log")).start()
        cls.addClassCleanup(lambda: cls.agent.stop())
        cls.arns = []
        cls.addClassCleanup(lambda: [th.stop_quietly(cls.ecs, "remote-role", a) for a in cls.arns])

    def run_probe(self, family, role_arn, env=()):
        td = self.ecs.register_task_definition(
            family=family, networkMode="bridge", requiresCompatibilities=["EC2"], cpu="256", memory="128",
            taskRoleArn=role_arn,
            containerDefinitions=[{"name": "probe", "image": IMAGE, "essential": True, "stopTimeout": 2,
                                   "command": ["sh", "-c", PROBE],
                                   "environment": [{"name": k, "value": v} for k, v in env]}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="remote-role", taskDefinition=td, launchType="EC2")
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.arns.append(arn)
        th.wait_for_status(self, self.ecs, "remote-role", arn, "RUNNING", context=self.agent.log_tail)
        return probe_output(self, self.agent_dir, arn, self.agent.log_tail)

    @unittest.skipIf(shutil.which("nsenter") is None, "needs nsenter")
    def test_the_remote_agent_serves_what_the_control_plane_answers(self):
        iam = boto3.client("iam", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        role_arn = iam.create_role(RoleName="paddock-remote-deleted", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        a = self.run_probe("rr-a", role_arn, env=[("SKIP_OWN", "1")])
        if a["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]:
            own, token = a["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"], ""  # the agent got port 80
        else:
            own, token = a["AWS_CONTAINER_CREDENTIALS_FULL_URI"], a["AWS_CONTAINER_AUTHORIZATION_TOKEN"]
            self.assertRegex(own, r"^http://169\.254\.170\.2:\d+/v2/credentials/[0-9a-f]{32}$")
            self.assertRegex(token, r"^[0-9a-f]{32}$")
        # Another task on the same host, with A's URI and token: 404.
        b = self.run_probe("rr-b", role_arn, env=[("SKIP_OWN", "1"), ("OTHER_URI", own), ("OTHER_TOKEN", token)])
        self.assertIn("404", b["OTHER"])
        # The control plane's refusal (the role was deleted after the launch) reaches the
        # container: 400, not the 503 of an agent that could not ask.
        iam.delete_role(RoleName="paddock-remote-deleted")
        for variables in (a, b):
            self.assertIn("400", own_from_task(self, variables))

    def test_a_remote_agents_task_reads_real_credentials(self):
        iam = boto3.client("iam", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        role_arn = iam.create_role(RoleName="paddock-remote-role", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        out = self.run_probe("rr-role", role_arn)
        self.assertIn("rc=0", out["OWN"])
        creds = json.loads(out["OWN"].split(" ", 1)[1])
        self.assertEqual(creds["RoleArn"], role_arn)
        sts = boto3.client("sts", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
                           aws_session_token=creds["Token"])
        self.assertRegex(sts.get_caller_identity()["Arn"],
                         rf"^arn:aws:sts::{self.account}:assumed-role/paddock-remote-role/[0-9a-f]{{32}}$")
        # botocore's own provider, with whichever form the container got (the full URI and its
        # token when the server holds port 80 on the host).
        if shutil.which("nsenter"):
            resolved = botocore_in_task(self, out)
            self.assertEqual(resolved["AccessKeyId"], creds["AccessKeyId"])


def pids_with(variable, value):
    """The pids of the processes whose environment has `variable`=`value` (a container's)."""
    marker = f"{variable}={value}".encode() + b"\0"
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker in f.read():
                    yield pid
        except OSError:
            continue


def task_pid(variable, value, timeout=30):
    """The pid of a container process whose environment has `variable`=`value` (None if none)."""
    deadline = time.monotonic() + timeout
    while True:
        pid = next(pids_with(variable, value), None)
        if pid is not None or time.monotonic() > deadline:
            return pid
        time.sleep(0.2)


def botocore_in_task(test, variables):
    """Runs botocore's own ContainerProvider (the SDK's standard chain for containers) inside the
    network namespace of the task whose container has `variables` (the AWS_CONTAINER_* it was
    given), with just those variables; returns the credentials it resolved as a dict."""
    name, value = next((k, v) for k, v in variables.items() if k.endswith("_URI") and v)
    pid = task_pid(name, value)
    test.assertIsNotNone(pid, f"no process has {name}={value}")
    code = ("import json, botocore.credentials as c\n"
            "f = c.ContainerProvider().load().get_frozen_credentials()\n"
            "print(json.dumps({'AccessKeyId': f.access_key, 'SecretAccessKey': f.secret_key, 'Token': f.token}))")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    env.update({k: v for k, v in variables.items() if v})
    r = subprocess.run(["nsenter", "-t", pid, "-n", sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=60)
    test.assertEqual(r.returncode, 0, r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def own_from_task(test, variables):
    """Fetches the task's own credentials URI (relative or full, with its token) as the probe would,
    from inside the network namespace of the task whose container has `variables`:
    "rc=<wget status> <body or wget's error>"."""
    name, value = next((k, v) for k, v in variables.items() if k.endswith("_URI") and v)
    pid = task_pid(name, value)
    test.assertIsNotNone(pid, f"no process has {name}={value}")
    uri = "http://169.254.170.2" + value if value.startswith("/") else value
    cmd = ["nsenter", "-t", pid, "-n", th.BUSYBOX, "wget", "-q", "-O", "-"]
    if variables.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"):
        cmd += ["--header", "Authorization: " + variables["AWS_CONTAINER_AUTHORIZATION_TOKEN"]]
    r = subprocess.run(cmd + [uri], capture_output=True, text=True, timeout=30)
    return f"rc={r.returncode} {r.stdout}{r.stderr}"


def fetch_from_task(uri, timeout=30):
    """GETs http://169.254.170.2<uri> from inside the network namespace of the container whose
    environment holds that relative URI (found through /proc), as the task's own address; retries
    until it answers 200 or `timeout` passes. Returns the body, or None."""
    deadline = time.monotonic() + timeout
    while True:
        for pid in pids_with("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", uri):
            r = subprocess.run(["nsenter", "-t", pid, "-n", th.BUSYBOX, "wget", "-q", "-O", "-",
                                "http://169.254.170.2" + uri], capture_output=True, text=True, timeout=10)
            if r.returncode == 0:
                return r.stdout
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)


@unittest.skipIf(skip_reason() is not None or shutil.which("nsenter") is None, "needs root, crun and nsenter")
class TaskRoleAcrossAServerKill(h.PaddockTestCase):
    """The credentials a task holds are STS sessions in the store: they survive kill -9 of the
    server, and the restarted server's agent serves the re-adopted task at the URI it already has."""

    def test_credentials_survive_a_server_kill(self):
        th.httpd_image(self.state_dir, self.tmp, IMAGE, "task role\n", applets=("wget", "sleep"))
        kw = dict(region_name=h.REGION, aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)
        iam = boto3.client("iam", endpoint_url=self.server.endpoint, **kw)
        role_arn = iam.create_role(RoleName="paddock-kill-role", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        subnet = boto3.client("ec2", endpoint_url=self.server.endpoint, **kw).describe_subnets()["Subnets"][0]["SubnetId"]
        self.ecs.create_cluster(clusterName="taskrole-kill")
        td = self.ecs.register_task_definition(
            family="tr-kill", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            taskRoleArn=role_arn, containerDefinitions=[{"name": "probe", "image": IMAGE, "essential": True,
                                                         "stopTimeout": 2, "command": ["sh", "-c", PROBE]}],
        )["taskDefinition"]["taskDefinitionArn"]
        r = self.ecs.run_task(cluster="taskrole-kill", taskDefinition=td, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})
        arn = r["tasks"][0]["taskArn"]
        th.wait_for_status(self, self.ecs, "taskrole-kill", arn, "RUNNING", context=self.server.log_tail)
        out = probe_output(self, self.state_dir, arn, self.server.log_tail)
        uri = out["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]
        first = json.loads(out["OWN"].split(" ", 1)[1])
        # The agent hands out the same set again.
        again = fetch_from_task(uri)
        self.assertIsNotNone(again, self.server.log_tail())
        self.assertEqual(json.loads(again)["AccessKeyId"], first["AccessKeyId"])

        self.server.kill()
        server = h.Server(self.state_dir)
        server.start()
        self.addCleanup(server.stop)
        ecs = h.ecs_client(server.endpoint, self.key_id, self.secret)
        self.addCleanup(th.stop_quietly, ecs, "taskrole-kill", arn)

        def who(c):
            return boto3.client("sts", endpoint_url=server.endpoint, region_name=h.REGION,
                                aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                                aws_session_token=c["Token"]).get_caller_identity()["Arn"]
        expected = f"arn:aws:sts::{self.account}:assumed-role/paddock-kill-role/{arn.rsplit('/', 1)[1]}"
        self.assertEqual(who(first), expected)  # the session lives in the store
        # The re-adopted task's URI answers again (a set the restarted control plane minted or the
        # one before: both are valid sessions of the role).
        after = fetch_from_task(uri)
        self.assertIsNotNone(after, server.log_tail())
        self.assertEqual(who(json.loads(after)), expected)


if __name__ == "__main__":
    unittest.main()
