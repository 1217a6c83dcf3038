"""The deploy controller end to end (issue 15): `paddock up` runs it in-process against its own API and
edge, and `paddock deploy` turns a paddock.toml into an ECS service whose real busybox httpd tasks
answer through the edge by their Host (`<project>.localhost`). A redeploy under constant keep-alive
load through the edge answers every request (no error, no non-2xx) while the new deployment's
service overlaps the old one, and afterwards the old deployment's service is gone. `--from` rolls
back to an earlier deployment's exact workload (its image and its env as they were); a project's
secret env var reaches the container
(from an SSM SecureString, never the task definition) and its parameter is deleted with its
deployment; `paddock deployments logs` shows the app's output, and `--follow` the lines written
after it started (CloudWatch Logs' live tail); `deployments show --follow` exits on the deployment's
state; a bad paddock.toml is refused with its line; the controller's API wants its token.

Needs root, crun, nft, iptables and busybox-static."""

import configparser
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_harness as dh  # noqa: E402
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402


def boto3_with_token(endpoint, creds):
    """An STS client signing with a task's role credentials (their session token included)."""
    import boto3
    return boto3.client("sts", endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=creds["AccessKeyId"],
                        aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["Token"])


def skip_reason():
    return th.skip_reason(tools=("crun", "nft", "iptables"))


SPEC = """\
[project]
name = "shop"

[containers.web]
image = "{image}"
port = 8080
command = ["sh", "-c", "echo started $PADDOCK_DEPLOYMENT; env > /www/env.txt; exec httpd -f -p 8080 -h /www"]
health_check = {{ path = "/", interval = "2s", timeout = "1s" }}

[deploy]
replicas = 2

[routes]
"/" = "web"
"""


class Load:
    """Keep-alive GETs through the edge from `threads` connections until stopped: every answer's
    (status, body) counted, every connection error kept."""

    def __init__(self, port, host, threads=4):
        self.port, self.host = port, host
        self.answers, self.errors = {}, []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        while not self.stopping.is_set():
            try:
                conn.request("GET", "/", headers={"Host": self.host})
                r = conn.getresponse()
                key = (r.status, r.read().decode().strip())
                with self.lock:
                    self.answers[key] = self.answers.get(key, 0) + 1
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.errors.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=30)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class Deploy(unittest.TestCase):
    """One `paddock up` for the class; the tests run in order and build on each other's deployments."""

    @classmethod
    def setUpClass(cls):
        cls.state_dir = dh.prepare_class(cls, "paddock-deploy-")
        cls.addClassCleanup(h.stop_leftover_tasks)
        for name, page in (("busybox:v1", "v1"), ("busybox:v2", "v2")):
            th.httpd_image(cls.state_dir, cls.tmp, name, page + "\n", applets=("env", "wget", "sleep"))
        cls.server = h.Server(cls.state_dir, mode="up", env=cls.env).start()
        cls.addClassCleanup(cls.server.stop)
        cls.web_port, cls.api_port = cls.server.edge_ports()
        cls.controller_url = cls.deploy_line()
        creds = configparser.ConfigParser()
        creds.read(os.path.join(cls.state_dir, "credentials"))
        section = creds[creds.sections()[0]]
        key = (section["aws_access_key_id"], section["aws_secret_access_key"])
        cls.ecs = h.client("ecs", cls.server.endpoint, *key)
        cls.ssm = h.client("ssm", cls.server.endpoint, *key)
        cls.cloudmap = h.client("servicediscovery", cls.server.endpoint, *key)
        cls.iam = h.client("iam", cls.server.endpoint, *key)
        cls.ec2 = h.client("ec2", cls.server.endpoint, *key)
        cls.ids = {}

    @classmethod
    def deploy_line(cls, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            for line in list(cls.server.stdout_lines):
                m = re.match(r"\s*deploy\s+(http://\S+)", line)
                if m:
                    return m.group(1)
            if time.monotonic() > deadline:
                raise AssertionError(f"no deploy line in {cls.server.stdout_lines!r}: {cls.server.log_tail()}")
            time.sleep(0.02)

    def paddock(self, *args, check=True, timeout=180, input=None):
        r = subprocess.run([h.paddock_bin(), *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                           cwd=self.tmp, input=input if input is not None else "")
        if check:
            self.assertEqual(r.returncode, 0, f"paddock {args}: {r.stdout} {r.stderr} {self.server.log_tail(3000)}")
        return r

    def spec(self, image="busybox:v1", name="paddock.toml"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(SPEC.format(image=image))
        return path

    def get(self, path="/", host="shop.localhost"):
        conn = http.client.HTTPConnection("127.0.0.1", self.web_port, timeout=10)
        try:
            conn.request("GET", path, headers={"Host": host})
            r = conn.getresponse()
            return r.status, r.read().decode()
        finally:
            conn.close()

    def services(self):
        return sorted(a.rsplit("/", 1)[1] for a in self.ecs.list_services(cluster="default")["serviceArns"])

    def wait_until(self, what, predicate, timeout=60):
        deadline = time.monotonic() + timeout * h.latency_scale()
        while not predicate():
            if time.monotonic() > deadline:
                self.fail(f"{what} did not happen within {timeout}s: {self.server.log_tail(3000)}")
            time.sleep(0.1)

    def show(self, deployment):
        req = urllib.request.Request(f"{self.controller_url}/v1/deployments/{deployment}",
                                     headers={"Authorization": "Bearer " + self.token()})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def token(self):
        with open(os.path.join(self.env["HOME"], ".config", "paddock", "deploy.json")) as f:
            return json.load(f)["token"]

    def test_1_a_deploy_becomes_healthy_and_answers_through_the_edge_by_its_host(self):
        self.spec()  # ./paddock.toml: what `paddock deploy` reads by default
        r = self.paddock("deploy", "--wait", "--wait-timeout", "120s")
        first = r.stdout.strip()
        self.assertRegex(first, r"^\d{8}-\d{6}-[a-z0-9]{4}$")
        self.assertIn(f"{first} is Healthy at http://shop.localhost:{self.web_port}/", r.stderr)
        self.ids["first"] = first
        self.assertEqual(self.get(), (200, "v1\n"))
        self.assertEqual(self.services(), [f"paddock_shop_default_{first}_web"])
        d = self.show(first)
        self.assertEqual((d["state"], d["active"], len(d["tasks"])), ("Healthy", True, 2), d)
        self.assertEqual({t["health"] for t in d["tasks"]}, {"UP"}, d)
        # The variables every container gets.
        status, env = self.get("/env.txt")
        self.assertEqual(status, 200)
        for line in ("PORT=8080", "PADDOCK_PROJECT=shop", f"PADDOCK_DEPLOYMENT={first}",
                     f"PADDOCK_APP_URL=http://shop.localhost:{self.web_port}/"):
            self.assertIn(line, env.splitlines())
        listed = self.paddock("deployments", "list").stdout
        self.assertRegex(listed, rf"{first}\s+shop\s+default\s+Healthy\s+http://shop.localhost:{self.web_port}/ \(active\)")

    def test_2_a_redeploy_under_load_drops_nothing_and_retires_the_old_deployment(self):
        first = self.ids["first"]
        # The secret from stdin (never on a command line); the project from ./paddock.toml.
        self.paddock("env", "set", "--secret", "DB_PASSWORD", input="hunter2\n")
        self.paddock("env", "set", "--project", "shop", "GREETING", "hello")
        self.assertEqual(self.paddock("env", "list").stdout, "DB_PASSWORD=(secret)\nGREETING=hello\n")
        with Load(self.web_port, "shop.localhost") as load:
            self.wait_until("answers under load", lambda: sum(load.answers.values()) > 50)
            r = self.paddock("deploy", "-f", self.spec("busybox:v2", "v2.toml"), "--wait", "--wait-timeout", "120s")
            second = r.stdout.strip()
            self.ids["second"] = second
            # The old deployment's service goes once the new one is Healthy (drain-clean: scaled to 0, then deleted).
            self.wait_until("the old service's deletion", lambda: self.services() == [f"paddock_shop_default_{second}_web"])
            # ...and the load keeps going a moment past it.
            seen = sum(load.answers.values())
            self.wait_until("more answers", lambda: sum(load.answers.values()) > seen + 50)
        self.assertEqual(load.errors, [], load.answers)
        self.assertEqual(set(load.answers), {(200, "v1"), (200, "v2")}, load.answers)
        self.assertEqual(self.get(), (200, "v2\n"))
        self.assertEqual(self.show(first)["state"], "Superseded")
        self.wait_until("the old deployment's retirement", lambda: self.show(first)["retired"])
        # The secret reached the container from SSM, under the deployment's own path.
        env = self.get("/env.txt")[1].splitlines()
        self.assertIn("DB_PASSWORD=hunter2", env)
        self.assertIn("GREETING=hello", env)
        # (and the deployment's identity credential, D8, beside it)
        names = sorted(p["Name"] for p in self.ssm.describe_parameters()["Parameters"])
        self.assertEqual(names, [f"/paddock/default/shop/default/{second}/DB_PASSWORD",
                                 f"/paddock/default/shop/default/{second}/paddock-identity/credential"])
        td = self.ecs.describe_task_definition(taskDefinition="paddock_shop_default_web")["taskDefinition"]
        self.assertNotIn("hunter2", json.dumps(td, default=str))
        self.assertEqual(td["containerDefinitions"][0]["secrets"],
                         [{"name": "DB_PASSWORD", "valueFrom": f"/paddock/default/shop/default/{second}/DB_PASSWORD"}])

    def test_3_from_rolls_back_to_an_earlier_deployments_exact_workload(self):
        first, second = self.ids["first"], self.ids["second"]
        r = self.paddock("deploy", "--from", first, "--wait", "--wait-timeout", "120s")
        third = r.stdout.strip()
        self.wait_until("the rollback's cutover", lambda: self.services() == [f"paddock_shop_default_{third}_web"])
        self.assertEqual(self.get(), (200, "v1\n"))
        d = self.show(third)
        self.assertEqual(d["from"], first)
        self.assertEqual(d["spec"], self.show(first)["spec"])
        self.wait_until("the second deployment's retirement", lambda: self.show(second)["retired"])
        # The exact workload: the first deployment's env, from before the secret and GREETING were
        # set — so no parameter is left (the second's went with its retirement).
        env = self.get("/env.txt")[1].splitlines()
        self.assertFalse([line for line in env if line.startswith(("DB_PASSWORD=", "GREETING="))], env)
        self.assertEqual([p["Name"] for p in self.ssm.describe_parameters()["Parameters"]],
                         [f"/paddock/default/shop/default/{third}/paddock-identity/credential"])
        self.ids["third"] = third

    def test_4_logs_show_the_apps_output(self):
        third = self.ids["third"]

        def started():
            out = self.paddock("deployments", "logs", third).stdout
            return out.count(f"started {third}") == 2

        self.wait_until("both tasks' first line in the logs", started, timeout=30)
        line = self.paddock("deployments", "logs", third).stdout.splitlines()[0]
        self.assertRegex(line, rf"^web/[0-9a-f]{{8}} started {third}$")
        events = self.paddock("deployments", "events", third).stdout
        self.assertIn("Deploying -> Healthy", events)
        self.assertRegex(events, r"ecs\s+web: \(service paddock_shop_default_\S+_web\) has started 2 tasks")

    def test_4b_diff_shows_what_a_deploy_would_change(self):
        before = self.paddock("deployments", "list").stdout
        out = self.paddock("deployments", "diff", "--image", "web=busybox:v2").stdout
        third = self.ids["third"]
        self.assertIn(f"shop (group default) against its active deployment {third}", out)
        self.assertIn('~ web: taskDefinition.containerDefinitions[0].image: "busybox:v1" -> "busybox:v2"', out)
        self.assertEqual(self.paddock("deployments", "list").stdout, before, "a diff deploys nothing")

    def test_5_a_bad_spec_is_refused_with_its_line_and_nothing_is_deployed(self):
        before = self.paddock("deployments", "list").stdout
        path = os.path.join(self.tmp, "bad.toml")
        with open(path, "w") as f:
            f.write('[project]\nname = "shop"\n\n[containers.web]\nimage = "busybox:v1"\nport = 70000\n')
        r = self.paddock("deploy", "-f", path, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("bad.toml:6: containers.web.port must be between 1 and 65535 (got 70000)", r.stderr)
        r = self.paddock("deploy", "--image", "nosuch=busybox:v2", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--image names no container of the spec (\"nosuch\")", r.stderr)
        self.assertEqual(self.paddock("deployments", "list").stdout, before)

    def test_6_stop_retires_the_active_deployment(self):
        third = self.ids["third"]
        self.paddock("deployments", "stop", third)
        self.wait_until("the stopped deployment's services to go", lambda: self.services() == [])
        self.wait_until("its retirement", lambda: self.show(third)["retired"])
        d = self.show(third)
        self.assertEqual((d["state"], d["active"], d["reason"]), ("Stopped", False, "stopped by a user"))
        self.assertEqual(self.ssm.describe_parameters()["Parameters"], [])
        self.assertEqual(self.get()[0], 404)

    def test_7_the_controllers_api_wants_its_token(self):
        # The token is kept owner-only: the controller's file, its directory and the CLI's config.
        import stat
        for path, mode in ((os.path.join(self.state_dir, "controller", "controller.token"), 0o600),
                           (os.path.join(self.state_dir, "controller"), 0o700),
                           (os.path.join(self.env["HOME"], ".config", "paddock", "deploy.json"), 0o600)):
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), mode, path)
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            req = urllib.request.Request(f"{self.controller_url}/v1/deployments", headers=headers)
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(e.exception.code, 401)

    def test_8_verify_passes_under_up_and_names_what_a_misconfigured_controller_lacks(self):
        r = self.paddock("verify")
        self.assertIn("Every check passed", r.stdout)
        self.assertRegex(r.stdout, r"ok\s+execution role\s+arn:aws:iam::\d{12}:role/paddock-deploy-execution exists")
        # A standalone controller of another class on the same endpoint (it never touches up's
        # services: they are not its class's), with a subnet that does not exist and no edge to read.
        ctl_state = os.path.join(self.tmp, "controller")
        args = [h.paddock_bin(), "controller", "--endpoint", self.server.endpoint,
                "--credentials", os.path.join(self.state_dir, "credentials"),
                "--listen", "127.0.0.1:0", "--state-dir", ctl_state, "--class", "other",
                "--subnet", "subnet-0000000000000dead", "--edge-api", "127.0.0.1:1",
                "--execution-role-arn", "arn:aws:iam::000000000000:role/nosuch"]
        # ADR D6: it refuses to start for the role no deployment could run with, and warns of the rest.
        r = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("cannot start: execution role: arn:aws:iam::000000000000:role/nosuch: NoSuchEntity", r.stderr)
        self.assertIn("warning: subnets: InvalidSubnetID.NotFound: The subnet ID 'subnet-0000000000000dead' does not exist",
                      r.stderr)
        self.assertIn("warning: edge: its API cannot be read", r.stderr)
        self.assertIn("--skip-preflight", r.stderr)
        proc = subprocess.Popen(args + ["--skip-preflight"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.terminate)
        line = proc.stdout.readline()
        m = re.search(r" on (http://127\.0\.0\.1:\d+) ", line)
        if m is None:
            proc.terminate()
            self.fail(f"no URL line from paddock controller: {line!r} {proc.stderr.read()!r}")
        with open(os.path.join(ctl_state, "controller.token")) as f:
            token = f.read().strip()
        env = dict(self.env, PADDOCK_DEPLOY_URL=m.group(1), PADDOCK_DEPLOY_TOKEN=token)
        r = subprocess.run([h.paddock_bin(), "verify"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"ok\s+cluster\s+default is ACTIVE")
        self.assertRegex(r.stdout, r"FAIL\s+subnets\s+InvalidSubnetID.NotFound")
        self.assertRegex(r.stdout, r"FAIL\s+execution role\s+arn:aws:iam::000000000000:role/nosuch: NoSuchEntity")
        self.assertRegex(r.stdout, r"FAIL\s+edge\s+its API cannot be read")
        self.assertIn("check(s) failed.", r.stdout)

    def test_90_containers_find_each_other_through_cloud_map_and_their_registries_go_with_them(self):
        path = os.path.join(self.tmp, "duo.toml")
        with open(path, "w") as f:
            f.write('[project]\nname = "duo"\n\n[containers.web]\nimage = "busybox:v1"\nport = 8080\n\n'
                    '[containers.worker]\nimage = "busybox:v1"\ncommand = ["sh", "-c", "while ! wget -q -O - '
                    'http://$PADDOCK_CONTAINER_HOST__WEB:8080/; do sleep 0.2; done; echo found $PADDOCK_CONTAINER_HOST__WEB; '
                    'exec sleep 3600"]\n\n[routes]\n"/" = "web"\n')
        duo = self.paddock("deploy", "-f", path, "--wait", "--wait-timeout", "120s").stdout.strip()
        names = sorted(s["Name"] for s in self.cloudmap.list_services()["Services"])
        self.assertEqual(names, ["duo-default-web", "duo-default-worker"])
        service = self.ecs.describe_services(cluster="default", services=[f"paddock_duo_default_{duo}_web"])["services"][0]
        self.assertEqual(len(service["serviceRegistries"]), 1, service)

        def found():
            out = self.paddock("deployments", "logs", duo).stdout
            return "v1" in out and "found duo-default-web.paddock.internal" in out

        self.wait_until("the worker reaching web by its Cloud Map name", found, timeout=30)
        self.paddock("deployments", "stop", duo)
        self.wait_until("the registries' collection", lambda: self.cloudmap.list_services()["Services"] == [])

    def account(self):
        return self.iam.get_user()["User"]["Arn"].split(":")[4]

    def policy(self):
        with open(os.path.join(h.REPO, "docs", "policies", "deploy-controller.json")) as f:
            return json.load(f)

    def deployer(self, user, policy):
        """A credentials file for a new IAM user `user` holding only `policy` (inline, named deploy-controller)."""
        self.iam.create_user(UserName=user)
        self.iam.put_user_policy(UserName=user, PolicyName="deploy-controller", PolicyDocument=json.dumps(policy))
        key = self.iam.create_access_key(UserName=user)["AccessKey"]
        creds = os.path.join(self.tmp, f"{user}-credentials")
        with open(creds, "w") as f:
            f.write(f"[paddock]\naws_access_key_id = {key['AccessKeyId']}\n"
                    f"aws_secret_access_key = {key['SecretAccessKey']}\n")
        return creds

    def task_role(self, project):
        """Makes project's task role as an operator would for a standalone controller: trusting ECS's tasks."""
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {
            "Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        return self.iam.create_role(RoleName=f"paddock-task-{project}",
                                    AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]

    def standalone(self, creds, name, *extra, edge=True):
        """Starts `paddock controller` (class `name`) signing with `creds`, with the execution role and
        each project's task role (--task-role-pattern); the environment the CLI reaches it with."""
        account = self.account()
        args = [h.paddock_bin(), "controller", "--endpoint", self.server.endpoint, "--credentials", creds,
                "--listen", "127.0.0.1:0", "--state-dir", os.path.join(self.tmp, f"{name}-controller"),
                "--class", name, "--url-port", str(self.web_port),
                "--execution-role-arn", f"arn:aws:iam::{account}:role/paddock-deploy-execution",
                "--task-role-pattern", f"arn:aws:iam::{account}:role/paddock-task-{{project}}",
                "--interval", "1s", "--drain", "1s", *extra]
        if edge:
            args += ["--edge-api", f"127.0.0.1:{self.api_port}"]
        for subnet in [s["SubnetId"] for s in self.ec2.describe_subnets()["Subnets"]]:
            args += ["--subnet", subnet]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.terminate)
        m = re.search(r" on (http://127\.0\.0\.1:\d+) ", proc.stdout.readline())
        if m is None:
            proc.terminate()
            self.fail(f"no URL line from paddock controller: {proc.stderr.read()!r}")
        with open(os.path.join(self.tmp, f"{name}-controller", "controller.token")) as f:
            return proc, dict(self.env, PADDOCK_DEPLOY_URL=m.group(1), PADDOCK_DEPLOY_TOKEN=f.read().strip())

    def cli(self, env, *args, timeout=60):
        return subprocess.run([h.paddock_bin(), *args], capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=self.tmp)

    def test_91_a_controller_with_only_the_documented_policy_deploys(self):
        """ADR D14: docs/policies/deploy-controller.json is all a standalone controller needs — an
        IAM user holding only it deploys, serves through the edge and retires (Paddock evaluates the
        policy on every call, iam:PassRole of the execution role and the project's task role included)."""
        creds = self.deployer("deployer", self.policy())
        role = self.task_role("iamapp")
        _, env = self.standalone(creds, "iam")
        spec = os.path.join(self.tmp, "iamapp.toml")
        with open(spec, "w") as f:
            f.write(SPEC.format(image="busybox:v2").replace('name = "shop"', 'name = "iamapp"'))
        r = self.cli(env, "deploy", "-f", spec, "--wait", "--wait-timeout", "120s", timeout=180)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.get(host="iamapp.localhost"), (200, "v2\n"))
        td = self.ecs.describe_task_definition(taskDefinition="paddock_iamapp_default_web")["taskDefinition"]
        self.assertEqual(td["taskRoleArn"], role)
        iamapp = r.stdout.strip()
        # The policy lets `deployments logs --follow` use the live tail: its backlog comes (read after
        # the session started, or after the notice of a refusal), and no polling notice.
        follow = subprocess.Popen([h.paddock_bin(), "deployments", "logs", iamapp, "--follow"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.addCleanup(follow.wait, 10)
        self.addCleanup(follow.terminate)
        self.assertIn(f"started {iamapp}", follow.stdout.readline())
        follow.terminate()
        self.assertNotIn("polling", follow.communicate(timeout=10)[1])
        r = self.cli(env, "deployments", "stop", iamapp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.wait_until("the deployer's services to go",
                        lambda: not [s for s in self.services() if s.startswith("paddock_iamapp_")])

    def test_92_each_project_runs_as_its_own_task_role_made_on_its_first_deploy(self):
        """Per-project task roles under `paddock up`: each project's tasks run as paddock-task-<project>,
        made when it first deploys, trusting only ecs-tasks.amazonaws.com and granted nothing; a task
        of one project reads its own role's credentials from the task-credentials endpoint."""
        ids = {}
        for project in ("alpha", "beta"):
            path = os.path.join(self.tmp, f"{project}.toml")
            with open(path, "w") as f:
                f.write(f'[project]\nname = "{project}"\n\n[containers.web]\nimage = "busybox:v1"\nport = 8080\n'
                        'command = ["sh", "-c", "until wget -q -O /www/creds.json '
                        'http://169.254.170.2$AWS_CONTAINER_CREDENTIALS_RELATIVE_URI; do sleep 0.2; done; '
                        'exec httpd -f -p 8080 -h /www"]\n'
                        'health_check = { path = "/creds.json", interval = "2s", timeout = "1s" }\n\n'
                        '[routes]\n"/" = "web"\n')
            ids[project] = self.paddock("deploy", "-f", path, "--wait", "--wait-timeout", "120s").stdout.strip()
        account = self.account()
        roles = {}
        for project in ("alpha", "beta"):
            td = self.ecs.describe_task_definition(taskDefinition=f"paddock_{project}_default_web")["taskDefinition"]
            roles[project] = td["taskRoleArn"]
            self.assertEqual(roles[project], f"arn:aws:iam::{account}:role/paddock-task-{project}")
            role = self.iam.get_role(RoleName=f"paddock-task-{project}")["Role"]
            statements = role["AssumeRolePolicyDocument"]["Statement"]
            self.assertEqual([(s["Effect"], s["Principal"], s["Action"]) for s in statements],
                             [("Allow", {"Service": "ecs-tasks.amazonaws.com"}, "sts:AssumeRole")])
            self.assertEqual(self.iam.list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"], [])
            self.assertEqual(self.iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"], [])
        self.assertNotEqual(roles["alpha"], roles["beta"])
        # A task of alpha holds alpha's role's credentials: STS says so, to the task.
        status, body = self.get("/creds.json", host="alpha.localhost")
        self.assertEqual(status, 200, body)
        creds = json.loads(body)
        self.assertEqual(creds["RoleArn"], roles["alpha"])
        sts = boto3_with_token(self.server.endpoint, creds)
        task = self.show(ids["alpha"])["tasks"][0]["task"].rsplit("/", 1)[1]
        self.assertEqual(sts.get_caller_identity()["Arn"],
                         f"arn:aws:sts::{account}:assumed-role/paddock-task-alpha/{task}")
        for project in ("alpha", "beta"):
            self.paddock("deployments", "stop", ids[project])
        self.wait_until("alpha's and beta's services to go",
                        lambda: not [s for s in self.services() if s.startswith(("paddock_alpha_", "paddock_beta_"))])

    # Per statement of docs/policies/deploy-controller.json: the action a controller without it is
    # refused first, and where that refusal shows — the deployment's events, `paddock deployments
    # logs` or `paddock verify`. A statement the policy gains without an entry here fails the test.
    REFUSALS = {
        "ReadTheCluster": ("ecs:ListServices", "events"),
        "WriteTaskDefinitions": ("ecs:RegisterTaskDefinition", "events"),
        "WriteServicesOfTheCluster": ("ecs:CreateService", "events"),
        "TagOnCreate": ("ecs:TagResource", "events"),
        "Secrets": ("ssm:PutParameter", "events"),
        "Logs": ("logs:FilterLogEvents", "logs"),
        "Discovery": ("servicediscovery:ListNamespaces", "events"),
        "PassTheRolesToEcsTasksOnly": ("iam:PassRole", "events"),
        "ReadTheRoles": ("iam:GetRole", "events"),
        "Preflight": ("ec2:DescribeSubnets", "verify"),
    }

    def test_93_a_controller_without_any_one_statement_of_the_policy_says_which_action_it_was_refused(self):
        """ADR D14/D15: for each statement of the documented policy, a controller whose IAM user holds
        the policy minus that statement names the refused action (in its deployment's events, its logs
        answer or `paddock verify`); once the statement is granted back, the same deployment becomes
        Healthy, and stopped, it retires leaving no service, parameter or Cloud Map service behind.
        The statements run side by side: one controller (class, user, project) each."""
        policy = self.policy()
        sids = [st["Sid"] for st in policy["Statement"]]
        self.assertEqual(sorted(sids), sorted(self.REFUSALS))
        account = self.account()
        # The standalone controllers' classes keep their secrets under /paddock/<class>/: let the
        # execution role read those too (under `paddock up` it reads its own class's only).
        self.iam.put_role_policy(RoleName="paddock-deploy-execution", PolicyName="test-classes", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameters",
                                                     "Resource": f"arn:aws:ssm:*:{account}:parameter/paddock/*"}]}))
        self.addCleanup(self.iam.delete_role_policy, RoleName="paddock-deploy-execution", PolicyName="test-classes")
        if not [n for n in self.cloudmap.list_namespaces()["Namespaces"] if n["Name"] == "paddock.internal"]:
            # What `paddock up`'s controller makes with its first deployment (test_90's), when run alone.
            vpc = self.ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
            op = self.cloudmap.create_private_dns_namespace(Name="paddock.internal", Vpc=vpc)["OperationId"]
            self.wait_until("the namespace", lambda: self.cloudmap.get_operation(
                OperationId=op)["Operation"]["Status"] == "SUCCESS", timeout=10)
        runs = {}
        for i, sid in enumerate(sids):
            name = f"deny{i}"
            without = dict(policy, Statement=[st for st in policy["Statement"] if st["Sid"] != sid])
            creds = self.deployer(name, without)
            self.task_role(name)
            # Past the startup preflight (which would refuse some of these before any deployment):
            # what is tested here is each refusal at work, and the deployment recovering from it.
            proc, env = self.standalone(creds, name, "--cloudmap-namespace", "paddock.internal", "--skip-preflight",
                                        edge=False)
            path = os.path.join(self.tmp, f"{name}.toml")
            with open(path, "w") as f:
                # No task: ten at once would outgrow the node's Fargate capacity, and what is tested is
                # the controller's own calls (test_91 runs tasks under the policy).
                f.write(f'[project]\nname = "{name}"\n\n[containers.web]\nimage = "busybox:v1"\nport = 8080\n\n'
                        '[deploy]\nreplicas = 0\n')
            r = self.cli(env, "env", "set", "--project", name, "--secret", "TOKEN", "s3cret")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = self.cli(env, "deploy", "-f", path)
            self.assertEqual(r.returncode, 0, f"{sid}: {r.stdout} {r.stderr}")
            runs[sid] = dict(name=name, proc=proc, env=env, id=r.stdout.strip())

        def refusal(sid):
            run = runs[sid]
            where = self.REFUSALS[sid][1]
            if where == "events":
                return self.cli(run["env"], "deployments", "events", run["id"]).stdout
            if where == "logs":
                r = self.cli(run["env"], "deployments", "logs", run["id"])
                return r.stderr if r.returncode != 0 else ""
            r = self.cli(run["env"], "verify")
            return r.stdout if r.returncode != 0 else ""

        pending = set(sids)

        def refused():
            for sid in list(pending):
                action = self.REFUSALS[sid][0]
                if f"user/{runs[sid]['name']} is not authorized to perform: {action}" in refusal(sid):
                    pending.discard(sid)
            return not pending

        deadline = time.monotonic() + 30 * h.latency_scale()
        while not refused():
            if time.monotonic() > deadline:
                self.fail("no refusal named: " + repr({sid: refusal(sid)[-600:] for sid in pending}))
            time.sleep(0.2)
        # The statement granted back: whatever was left half-done, a later tick finishes.
        for sid, run in runs.items():
            self.iam.put_user_policy(UserName=run["name"], PolicyName="deploy-controller",
                                     PolicyDocument=json.dumps(policy))

        def deployment(run):
            req = urllib.request.Request(f"{run['env']['PADDOCK_DEPLOY_URL']}/v1/deployments/{run['id']}",
                                         headers={"Authorization": "Bearer " + run["env"]["PADDOCK_DEPLOY_TOKEN"]})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.load(resp)

        def healthy():
            return all(deployment(run)["state"] == "Healthy" for run in runs.values())

        deadline = time.monotonic() + 40 * h.latency_scale()
        while not healthy():
            if time.monotonic() > deadline:
                self.fail("not Healthy: " + repr({sid: (deployment(run)["state"], deployment(run)["reason"],
                                                       self.cli(run["env"], "deployments", "events", run["id"]).stdout[-800:])
                                                 for sid, run in runs.items() if deployment(run)["state"] != "Healthy"}))
            time.sleep(0.2)
        self.assertEqual(refusal("Logs"), "")
        self.assertEqual(refusal("Preflight"), "")
        for run in runs.values():
            r = self.cli(run["env"], "deployments", "stop", run["id"])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        names = [run["name"] for run in runs.values()]

        def gone():
            retired = all(deployment(run)["retired"] for run in runs.values())
            left = [s for s in self.services() if s.split("_")[1] in names]
            params = [p["Name"] for p in self.ssm.describe_parameters()["Parameters"] if p["Name"].split("/")[2] in names]
            registries = [s["Name"] for s in self.cloudmap.list_services()["Services"]
                          if s["Name"].split("-")[0] in names]
            return retired and not left and not params and not registries

        self.wait_until("every stopped deployment's services, secrets and registries to go", gone, timeout=30)
        for run in runs.values():
            run["proc"].terminate()
    TICKER = ('[project]\nname = "ticker"\n\n[containers.worker]\nimage = "busybox:v1"\n'
              'command = ["sh", "-c", "trap \'exit 0\' TERM; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.5; done"]\n')
    # (As PID 1, sh ignores SIGTERM unless it traps it: the trap lets a stop end the task at once.)

    def ticker(self):
        path = os.path.join(self.tmp, "ticker.toml")
        with open(path, "w") as f:
            f.write(self.TICKER)
        return path

    def test_94_logs_follow_prints_the_lines_written_after_it_started_through_the_live_tail(self):
        """D11: `deployments logs --follow` backfills with FilterLogEvents, then follows with
        StartLiveTail (no polling notice on stderr): a tick the app writes after the follow is
        running — after a plain `deployments logs` taken meanwhile — is printed, and every tick up
        to it exactly once (no duplicate, no gap at the seam)."""
        ticker = self.paddock("deploy", "-f", self.ticker(), "--wait", "--wait-timeout", "60s").stdout.strip()
        self.ids["ticker"] = ticker
        proc = subprocess.Popen([h.paddock_bin(), "deployments", "logs", ticker, "--follow"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.tmp)
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.terminate)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        reader.start()
        ticks = lambda text: [int(m) for m in re.findall(r"^worker/[0-9a-f]{8} tick (\d+)$", text, re.M)]
        self.wait_until("the follow's first tick", lambda: ticks("".join(lines)), timeout=15)
        newest = max(ticks(self.paddock("deployments", "logs", ticker).stdout))
        self.wait_until(f"tick {newest + 1} through the follow", lambda: newest + 1 in ticks("".join(lines)), timeout=15)
        proc.terminate()
        proc.wait(10)
        reader.join(10)
        seen = ticks("".join(lines))
        self.assertEqual(seen, list(range(1, max(seen) + 1)), "".join(lines))
        self.assertNotIn("polling", proc.stderr.read())

    def test_95_show_follow_prints_the_changes_and_exits_on_the_deployments_state(self):
        """`deployments show ID --follow` prints the deployment, then its events and task changes,
        and exits as `deploy --wait` does: 0 once Healthy, 1 on a terminal state."""
        older = self.ids["ticker"]
        newer = self.paddock("deploy", "-f", self.ticker()).stdout.strip()
        r = self.paddock("deployments", "show", newer, "--follow", timeout=60)
        self.assertRegex(r.stdout, rf"^id\s+{newer}\n")
        self.assertIn("Deploying -> Healthy", r.stdout)
        self.assertRegex(r.stdout, r"\n  task worker/[0-9a-f]{8} RUNNING ")
        self.assertIn(f"{newer} is Healthy", r.stderr)
        self.wait_until("the older deployment's supersession", lambda: self.show(older)["state"] == "Superseded")
        r = self.paddock("deployments", "show", older, "--follow", check=False, timeout=30)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{older} is Superseded", r.stderr)
        self.paddock("deployments", "stop", newer)
        r = self.paddock("deployments", "show", newer, "--follow", check=False, timeout=30)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{newer} is Stopped: stopped by a user", r.stderr)
        self.wait_until("the ticker's services to go",
                        lambda: not [s for s in self.services() if s.startswith("paddock_ticker_")])


    def test_96_interruptible_capacity_runs_on_fargate_spot(self):
        """`capacity = "interruptible"` renders a FARGATE_SPOT capacity provider strategy (and no
        launch type); under `paddock up` the cluster has that provider, so the tasks place and serve."""
        path = os.path.join(self.tmp, "spot.toml")
        with open(path, "w") as f:
            f.write(SPEC.format(image="busybox:v1").replace('name = "shop"', 'name = "spot"')
                    .replace("replicas = 2", 'replicas = 1\ncapacity = "interruptible"'))
        spot = self.paddock("deploy", "-f", path, "--wait", "--wait-timeout", "120s").stdout.strip()
        service = self.ecs.describe_services(cluster="default", services=[f"paddock_spot_default_{spot}_web"])["services"][0]
        self.assertEqual(service["capacityProviderStrategy"], [{"capacityProvider": "FARGATE_SPOT", "weight": 1, "base": 0}])
        self.assertNotIn("launchType", service)
        arns = self.ecs.list_tasks(cluster="default", serviceName=service["serviceName"])["taskArns"]
        tasks = self.ecs.describe_tasks(cluster="default", tasks=arns)["tasks"]
        self.assertEqual([t["capacityProviderName"] for t in tasks], ["FARGATE_SPOT"])
        self.assertEqual(self.get(host="spot.localhost"), (200, "v1\n"))
        self.paddock("deployments", "stop", spot)
        self.wait_until("the spot services to go", lambda: not [s for s in self.services() if s.startswith("paddock_spot_")])

    def test_97_every_task_gets_its_deployments_identity_and_tokens_the_controllers_keys_verify(self):
        """D8: the sidecar writes the deployment's credential and a token per audience before the app
        starts; the token verifies with the controller's JWKS (also served to tasks through the
        metadata endpoint's door, which passes nothing else); the app's environment never holds the
        credential; a stopped deployment's credential buys no more tokens."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        def b64(text):
            import base64
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

        path = os.path.join(self.tmp, "ident.toml")
        with open(path, "w") as f:
            f.write('[project]\nname = "ident"\n\n[containers.web]\nimage = "busybox:v1"\nport = 8080\n'
                    'command = ["sh", "-c", "wget -q -O /www/jwks.json http://169.254.170.2/paddock/.well-known/jwks.json; '
                    'if wget -q -O /www/list.txt http://169.254.170.2/paddock/v1/deployments; then echo open > /www/door.txt; '
                    'else echo closed > /www/door.txt; fi; env > /www/env.txt; busybox ln -s $PADDOCK_IDENTITY_DIR /www/identity; '
                    'exec httpd -f -p 8080 -h /www"]\n\n'
                    '[identity]\naudiences = { api = "https://api.example.com", "vault.jwt" = "vault" }\n\n'
                    '[deploy]\nreplicas = 1\n\n[routes]\n"/" = "web"\n')
        ident = self.paddock("deploy", "-f", path, "--wait", "--wait-timeout", "120s").stdout.strip()
        get = lambda p: self.get(p, host="ident.localhost")  # noqa: E731
        status, token = get("/identity/tokens/api")
        self.assertEqual(status, 200, token)
        self.assertEqual(get("/identity/tokens/vault.jwt")[0], 200)
        status, credential = get("/identity/credential")
        self.assertEqual(status, 200)
        self.assertTrue(credential.startswith(f"pdi.{ident}."), credential)
        env = get("/env.txt")[1]
        self.assertNotIn(credential, env)
        self.assertIn("PADDOCK_IDENTITY_DIR=/var/run/secrets/paddock/identity", env.splitlines())
        self.assertEqual(get("/door.txt"), (200, "closed\n"), "the door passes nothing but identity")

        with urllib.request.urlopen(f"{self.controller_url}/.well-known/jwks.json", timeout=10) as resp:
            jwks = json.load(resp)
        self.assertEqual(json.loads(get("/jwks.json")[1]), jwks, "tasks read the same keys through the door")
        key = jwks["keys"][0]
        public = ec.EllipticCurvePublicNumbers(int.from_bytes(b64(key["x"]), "big"), int.from_bytes(b64(key["y"]), "big"),
                                               ec.SECP256R1()).public_key()
        head, payload, signature = token.split(".")
        raw = b64(signature)
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
        with self.assertRaises(InvalidSignature):
            public.verify(der, f"{head}.{payload}x".encode(), ec.ECDSA(hashes.SHA256()))
        self.assertEqual(json.loads(b64(head))["kid"], key["kid"])
        claims = json.loads(b64(payload))
        self.assertEqual((claims["iss"], claims["aud"], claims["sub"], claims["paddock_deployment"]),
                         ("http://169.254.170.2/paddock", "https://api.example.com", "default:ident:default", ident))
        self.assertEqual(claims["exp"] - claims["iat"], 3600)

        def exchange():
            req = urllib.request.Request(f"{self.controller_url}/v1/identity/token", method="POST",
                                         data=json.dumps({"audience": "x"}).encode(),
                                         headers={"Authorization": "Bearer " + credential})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    return resp.status
            except urllib.error.HTTPError as e:
                return e.code

        self.assertEqual(exchange(), 200)
        self.paddock("deployments", "stop", ident)
        self.assertEqual(exchange(), 403)
        self.wait_until("the ident services to go", lambda: not [s for s in self.services() if s.startswith("paddock_ident_")])
        self.wait_until("its credential to go", lambda: not [p for p in self.ssm.describe_parameters()["Parameters"]
                                                               if f"/ident/default/{ident}/" in p["Name"]])


if __name__ == "__main__":
    unittest.main()
