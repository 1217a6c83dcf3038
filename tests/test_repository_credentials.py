"""Private registry authentication end to end (docs/contracts/task.md, "Private registry
credentials"; issue 12 §3): real Fargate tasks whose container names a Secrets Manager secret in
`repositoryCredentials.credentialsParameter`, read at the task's start as its execution role, and
pull their image from a real Debian docker-registry that wants htpasswd (bcrypt) credentials.

- the right credentials (the secret named by name, or by ARN) pull the image and the task runs;
- a secret that does not exist, one the execution role may not read, one whose value is not
  {"username", "password"}, and a wrong password each stop the task with ECS's text;
- the reuse attack (docs/security.md, "Private images"): once the node's image store holds the
  private image, another account's task naming it without credentials, or with wrong ones, and the
  same account's task without credentials, are all refused with the same CannotPullContainerError
  a node that never pulled it would give.

Needs root, crun, skopeo, docker-registry, busybox-static and a bcrypt crypt()."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
import task_harness as th  # noqa: E402
from test_images import busybox_rootfs  # noqa: E402
from test_pull import Registry, bcrypt_htpasswd, free_port, oci_layout  # noqa: E402

TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
AUTH_PREFIX = ("ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval "
               "failed: unable to get registry auth from asm: service call has been retried 1 time(s): ")
PULL_PREFIX = "CannotPullContainerError: pull image manifest has been retried 1 time(s): failed to resolve ref "
DENIED = "pull access denied, repository does not exist or may require authorization: authentication required"


def skip_reason():
    reason = th.skip_reason(tools=("crun", "skopeo", "docker-registry"))
    if reason is None and bcrypt_htpasswd("a", "b") is None:
        reason = "no bcrypt crypt() to write an htpasswd file"
    return reason


def client(service, endpoint, key_id, secret):
    return boto3.session.Session().client(
        service, endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=key_id,
        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1, "mode": "standard"}))


class Tenant:
    """One account's clients, execution role, cluster and subnet."""

    def __init__(self, endpoint, account, key_id, secret, role_name, hidden=None):
        self.account = account
        self.ecs = h.ecs_client(endpoint, key_id, secret)
        self.iam = client("iam", endpoint, key_id, secret)
        self.sm = client("secretsmanager", endpoint, key_id, secret)
        self.subnet = client("ec2", endpoint, key_id, secret).describe_subnets()["Subnets"][0]["SubnetId"]
        self.ecs.create_cluster(clusterName="repocreds")
        self.role = self.iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        secrets = f"arn:aws:secretsmanager:{h.REGION}:{account}:secret:"
        statements = [{"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": secrets + "registry/*"}]
        if hidden:
            statements.append({"Effect": "Deny", "Action": "secretsmanager:GetSecretValue",
                               "Resource": f"{secrets}{hidden}-??????"})
        self.iam.put_role_policy(RoleName=role_name, PolicyName="read", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": statements}))


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class RepositoryCredentials(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        cls.registry_port = free_port()
        cls.CONFIG = f'[images]\nlocal_registries = ["127.0.0.1:{cls.registry_port}"]\n'
        super().setUpClass()
        root = busybox_rootfs(os.path.join(cls.tmp, "bb-rootfs"))
        layout = os.path.join(cls.tmp, "layout")
        oci_layout(layout, root, ["sh", "-c", "echo private image ran"])
        cls.registry = Registry(os.path.join(cls.tmp, "registry"), os.path.join(cls.tmp, "registry-storage"),
                                htpasswd=bcrypt_htpasswd("alice", "s3cret-pw"), port=cls.registry_port)
        cls.addClassCleanup(cls.registry.stop)
        for tag in ("1", "2", "3"):
            # The test's own push: its credentials on skopeo's command line are the test's, not a tenant's.
            subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", "alice:s3cret-pw",
                            f"oci:{layout}", f"docker://{cls.registry.host}/private:{tag}"],
                           check=True, capture_output=True, timeout=60)
        cls.a = Tenant(cls.server.endpoint, cls.account, cls.key_id, cls.secret, "repo-exec", hidden="registry/hidden")
        cls.alice = cls.a.sm.create_secret(Name="registry/alice", SecretString=json.dumps(
            {"username": "alice", "password": "s3cret-pw"}))["ARN"]
        cls.a.sm.create_secret(Name="registry/wrong", SecretString=json.dumps(
            {"username": "alice", "password": "guess"}))
        cls.a.sm.create_secret(Name="registry/malformed", SecretString="alice:s3cret-pw")
        cls.a.sm.create_secret(Name="registry/hidden", SecretString=json.dumps(
            {"username": "alice", "password": "s3cret-pw"}))
        other, other_key, other_secret = h.create_account(cls.state_dir, None, "repocreds-other")
        cls.b = Tenant(cls.server.endpoint, other, other_key, other_secret, "other-exec")
        cls.b.sm.create_secret(Name="registry/mine", SecretString=json.dumps(
            {"username": "alice", "password": "not-the-password"}))
        cls.families = 0

    def run_task(self, tenant, image, credentials=None):
        RepositoryCredentials.families += 1
        container = {"name": "app", "image": image, "essential": True}
        if credentials is not None:
            container["repositoryCredentials"] = {"credentialsParameter": credentials}
        td = tenant.ecs.register_task_definition(
            family=f"repocreds-{RepositoryCredentials.families}", networkMode="awsvpc",
            requiresCompatibilities=["FARGATE"], cpu="256", memory="512", executionRoleArn=tenant.role,
            containerDefinitions=[container])["taskDefinition"]
        r = tenant.ecs.run_task(cluster="repocreds", taskDefinition=td["taskDefinitionArn"], launchType="FARGATE",
                                networkConfiguration={"awsvpcConfiguration": {"subnets": [tenant.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        return arn, th.wait_for_status(self, tenant.ecs, "repocreds", arn, "STOPPED", 60, self.server.log_tail)

    def image(self, tag):
        return f"{self.registry.host}/private:{tag}"

    def output(self, arn):
        r = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn.rsplit("/", 1)[1]],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def assertRan(self, arn, task):
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        self.assertEqual(task["containers"][0].get("exitCode"), 0, task)
        self.assertIn("private image ran", self.output(arn))
        # The credentials are nowhere in what describes the task.
        self.assertNotIn("s3cret-pw", json.dumps(task, default=str))

    def assertPullDenied(self, task, image):
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertTrue(task["stoppedReason"].startswith(f"{PULL_PREFIX}{image}: {DENIED}"), task["stoppedReason"])
        return task["stoppedReason"]

    def test_a_private_image_runs_with_its_credentials_by_name_and_by_arn(self):
        arn, task = self.run_task(self.a, self.image("1"), "registry/alice")
        self.assertRan(arn, task)
        arn, task = self.run_task(self.a, self.image("2"), self.alice)
        self.assertRan(arn, task)

    def test_each_failure_stops_the_task_in_ecss_words(self):
        _, missing = self.run_task(self.a, self.image("3"), "registry/nosuch")
        self.assertEqual(missing["stopCode"], "TaskFailedToStart")
        self.assertEqual(missing["stoppedReason"], AUTH_PREFIX + "asm fetching secret from the service for "
                                                                 "registry/nosuch: ResourceNotFoundException: Secrets "
                                                                 "Manager can't find the specified secret.")
        arn, denied = self.run_task(self.a, self.image("3"), "registry/hidden")
        task_id = arn.rsplit("/", 1)[1]
        self.assertTrue(denied["stoppedReason"].startswith(
            AUTH_PREFIX + "asm fetching secret from the service for registry/hidden: AccessDeniedException: User: "
            f"arn:aws:sts::{self.account}:assumed-role/repo-exec/{task_id} is not authorized to perform: "
            "secretsmanager:GetSecretValue on resource: "), denied["stoppedReason"])
        _, malformed = self.run_task(self.a, self.image("3"), "registry/malformed")
        self.assertEqual(malformed["stoppedReason"], AUTH_PREFIX + "asm fetching authorization data: unable to "
                                                                   "unmarshal secret value, invalid schema")
        _, wrong = self.run_task(self.a, self.image("3"), "registry/wrong")
        self.assertPullDenied(wrong, self.image("3"))
        for task in (missing, denied, malformed, wrong):
            self.assertNotIn("s3cret-pw", json.dumps(task, default=str))

    def test_a_cached_private_image_runs_for_no_task_its_registry_would_refuse(self):
        # Tag 3 has never been pulled: what a node without it answers, to compare with.
        _, fresh = self.run_task(self.b, self.image("3"))
        never_pulled = self.assertPullDenied(fresh, self.image("3"))
        arn, task = self.run_task(self.a, self.image("1"), "registry/alice")
        self.assertRan(arn, task)  # now in the node's image store
        # Another account names it without credentials, then with its own wrong ones.
        _, theirs = self.run_task(self.b, self.image("1"))
        cached = self.assertPullDenied(theirs, self.image("1"))
        self.assertEqual(cached, never_pulled.replace(self.image("3"), self.image("1")))
        _, wrong = self.run_task(self.b, self.image("1"), "registry/mine")
        self.assertPullDenied(wrong, self.image("1"))
        # The same account without credentials is refused too; with them it still runs.
        _, bare = self.run_task(self.a, self.image("1"))
        self.assertPullDenied(bare, self.image("1"))
        arn, task = self.run_task(self.a, self.image("1"), "registry/alice")
        self.assertRan(arn, task)


if __name__ == "__main__":
    unittest.main()
