"""Secrets end to end (docs/contracts/task.md, "Secrets"; issue 12 §3): real Fargate tasks on
`paddock server` whose containers get SSM parameters as environment variables, read at the task's
start as its execution role.

- a parameter named by name and by ARN, a String and a SecureString, reach the container that
  names them (it prints them), replacing an `environment` variable of the same name, and appear in
  no DescribeTasks or DescribeTaskDefinition answer (only the valueFrom ARNs do);
- the execution role's policies decide: a parameter its policy does not name stops the task with
  ECS's AccessDeniedException text for the role's session, and nothing of it is read;
- a parameter that does not exist stops the task with "invalid ssm parameters: <name>";
- another account's parameter, named by ARN, is refused with AWS's cross-account denial, even to
  a role allowed ssm:GetParameters on "*";
- a Secrets Manager secret, whole or one json-key of it, by full and partial ARN and by stage, reaches
  the container; a secret the role may not read, one that does not exist, and a json-key the value
  lacks stop the task with ECS's texts.

Roles are made with IAM's CreateRole, parameters with SSM's PutParameter, secrets with Secrets
Manager's CreateSecret and PutSecretValue. Needs root, crun and
busybox-static."""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402

IMAGE = "busybox:secrets"
TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
PREFIX = ("ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval "
          "failed: ")


client = h.client


@unittest.skipIf(th.skip_reason() is not None, th.skip_reason() or "")
class Secrets(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, IMAGE, "secrets\n")
        cls.iam = client("iam", cls.server.endpoint, cls.key_id, cls.secret)
        cls.ssm = client("ssm", cls.server.endpoint, cls.key_id, cls.secret)
        cls.subnet = client("ec2", cls.server.endpoint, cls.key_id, cls.secret).describe_subnets()[
            "Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="secrets")
        cls.ssm.put_parameter(Name="/app/db-url", Value="postgres://db.internal/app", Type="String")
        cls.ssm.put_parameter(Name="api-token", Value="s3cr3t-t0ken", Type="SecureString")
        cls.ssm.put_parameter(Name="/app/other", Value="not-for-this-role", Type="String")
        cls.param_arn = f"arn:aws:ssm:{h.REGION}:{cls.account}:parameter"
        cls.role = cls.iam.create_role(RoleName="secrets-exec", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        cls.iam.put_role_policy(RoleName="secrets-exec", PolicyName="read-two", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "ssm:GetParameters",
                "Resource": [f"{cls.param_arn}/app/db-url", f"{cls.param_arn}/api-token",
                             f"{cls.param_arn}/missing-one"]}]}))
        cls.sm = client("secretsmanager", cls.server.endpoint, cls.key_id, cls.secret)
        cls.db = cls.sm.create_secret(Name="prod/db", SecretString=json.dumps(
            {"username": "app", "password": "old-pw", "port": 5432}))["ARN"]
        cls.sm.put_secret_value(SecretId="prod/db", SecretString=json.dumps(
            {"username": "app", "password": "n3w-pw", "port": 5432}))
        cls.hidden = cls.sm.create_secret(Name="prod/hidden", SecretString="hidden-value")["ARN"]
        cls.iam.put_role_policy(RoleName="secrets-exec", PolicyName="read-db", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
                "Resource": f"arn:aws:secretsmanager:{h.REGION}:{cls.account}:secret:prod/db-??????"}]}))
        cls.wide = cls.iam.create_role(RoleName="secrets-wide", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
        cls.iam.put_role_policy(RoleName="secrets-wide", PolicyName="all", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["ssm:*", "secretsmanager:*"], "Resource": "*"}]}))

    def run_with(self, family, secrets, role=None, environment=()):
        container = {"name": "app", "image": IMAGE, "essential": True,
                     "command": ["sh", "-c", 'echo "DB=$DB_URL"; echo "TOKEN=$API_TOKEN"; echo END'],
                     "secrets": secrets, "environment": list(environment)}
        td = self.ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            executionRoleArn=role or self.role, containerDefinitions=[container])["taskDefinition"]
        r = self.ecs.run_task(cluster="secrets", taskDefinition=td["taskDefinitionArn"], launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        task = th.wait_for_status(self, self.ecs, "secrets", arn, "STOPPED", 30, self.server.log_tail)
        return arn, task, td

    def output(self, arn):
        r = subprocess.run([h.paddock_bin(), "logs", "--state-dir", self.state_dir, arn.rsplit("/", 1)[1]],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_values_reach_the_container_and_nothing_that_describes_it(self):
        arn, task, td = self.run_with("secrets-ok", [
            {"name": "DB_URL", "valueFrom": "/app/db-url"},
            {"name": "API_TOKEN", "valueFrom": f"{self.param_arn}/api-token"}],
            environment=[{"name": "DB_URL", "value": "plain-value"}])
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        out = self.output(arn)
        self.assertIn("DB=postgres://db.internal/app\n", out)
        self.assertIn("TOKEN=s3cr3t-t0ken\n", out)
        described = json.dumps(self.ecs.describe_tasks(cluster="secrets", tasks=[arn])["tasks"], default=str)
        definition = json.dumps(self.ecs.describe_task_definition(taskDefinition=td["taskDefinitionArn"]), default=str)
        for text in (described, definition):
            self.assertNotIn("s3cr3t-t0ken", text)
            self.assertNotIn("postgres://db.internal/app", text)
        self.assertIn(f"{self.param_arn}/api-token", definition)

    def test_a_parameter_the_role_may_not_read_stops_the_task(self):
        arn, task, _ = self.run_with("secrets-denied", [
            {"name": "DB_URL", "valueFrom": "/app/db-url"},
            {"name": "API_TOKEN", "valueFrom": "/app/other"}])
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        task_id = arn.rsplit("/", 1)[1]
        expected = (PREFIX + "unable to retrieve secrets from ssm: service call has been retried 1 time(s): "
                    f"AccessDeniedException: User: arn:aws:sts::{self.account}:assumed-role/secrets-exec/{task_id} "
                    f"is not authorized to perform: ssm:GetParameters on resource: {self.param_arn}/app/other "
                    "because no identity-based policy allows the ssm:GetParameters action status code: 400, "
                    "request id: ")
        self.assertEqual(task["stoppedReason"][:len(expected)], expected)
        self.assertNotIn("not-for-this-role", json.dumps(task, default=str))

    def test_the_execution_role_session_carries_its_aws_userid(self):
        # A policy that tests aws:userid ("<role id>:<task id>", as AWS gives a role session) admits
        # the read: the control plane reads as a real session of the role, not a bare ARN.
        made = self.iam.create_role(RoleName="secrets-userid", AssumeRolePolicyDocument=TRUST)["Role"]
        self.iam.put_role_policy(RoleName="secrets-userid", PolicyName="own-session", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "ssm:GetParameters", "Resource": f"{self.param_arn}/app/db-url",
                "Condition": {"StringLike": {"aws:userid": f"{made['RoleId']}:*"}}}]}))
        arn, task, _ = self.run_with("secrets-userid", [{"name": "DB_URL", "valueFrom": "/app/db-url"}],
                                     role=made["Arn"])
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        self.assertIn("DB=postgres://db.internal/app\n", self.output(arn))

    def test_a_parameter_that_does_not_exist_stops_the_task(self):
        _, task, _ = self.run_with("secrets-missing", [{"name": "DB_URL", "valueFrom": "/missing-one"}])
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertEqual(task["stoppedReason"], PREFIX + "unable to retrieve secrets from ssm: service call has "
                                                         "been retried 1 time(s): invalid ssm parameters: /missing-one")

    def test_another_accounts_parameter_is_refused_even_to_a_role_allowed_everything(self):
        other_account, other_key, other_secret = h.create_account(self.state_dir, None, "secrets-other")
        other_ssm = client("ssm", self.server.endpoint, other_key, other_secret)
        other_ssm.put_parameter(Name="/their/password", Value="their-secret-value", Type="SecureString")
        theirs = f"arn:aws:ssm:{h.REGION}:{other_account}:parameter/their/password"
        arn, task, _ = self.run_with("secrets-cross", [{"name": "DB_URL", "valueFrom": theirs}], role=self.wide)
        self.assertEqual(task["stopCode"], "TaskFailedToStart")
        self.assertIn(f"is not authorized to perform: ssm:GetParameters on resource: {theirs} because no "
                      "resource-based policy allows the ssm:GetParameters action", task["stoppedReason"])
        self.assertNotIn("their-secret-value", json.dumps(task, default=str))

    def test_secrets_manager_values_whole_and_by_json_key(self):
        partial = self.db[:-7]  # the ARN without its random suffix
        arn, task, _ = self.run_with("secrets-sm", [
            {"name": "DB_URL", "valueFrom": f"{self.db}:password::"},
            {"name": "API_TOKEN", "valueFrom": f"{partial}:password:AWSPREVIOUS:"}])
        self.assertEqual(task.get("stopCode"), "EssentialContainerExited", task.get("stoppedReason"))
        out = self.output(arn)
        self.assertIn("DB=n3w-pw\n", out)
        self.assertIn("TOKEN=old-pw\n", out)
        whole_arn, whole, _ = self.run_with("secrets-sm-whole", [{"name": "DB_URL", "valueFrom": self.db}])
        self.assertEqual(whole.get("stopCode"), "EssentialContainerExited", whole.get("stoppedReason"))
        self.assertIn('"password": "n3w-pw"', self.output(whole_arn))

    def test_secrets_manager_failures_in_ecss_words(self):
        asm = PREFIX + "unable to retrieve secret from asm: service call has been retried 1 time(s): "
        _, denied, _ = self.run_with("secrets-sm-denied", [{"name": "DB_URL", "valueFrom": self.hidden}])
        self.assertEqual(denied["stopCode"], "TaskFailedToStart")
        self.assertTrue(denied["stoppedReason"].startswith(
            asm + f"failed to fetch secret {self.hidden} from secrets manager: AccessDeniedException: User: "
            f"arn:aws:sts::{self.account}:assumed-role/secrets-exec/"), denied["stoppedReason"])
        self.assertNotIn("hidden-value", json.dumps(denied, default=str))
        gone = f"arn:aws:secretsmanager:{h.REGION}:{self.account}:secret:prod/db-nosuch"
        _, missing, _ = self.run_with("secrets-sm-missing", [{"name": "DB_URL", "valueFrom": gone}], role=self.wide)
        self.assertEqual(missing["stoppedReason"], asm + f"failed to fetch secret {gone} from secrets manager: "
                                                         "ResourceNotFoundException: Secrets Manager can't find the "
                                                         "specified secret.")
        _, key, _ = self.run_with("secrets-sm-key", [{"name": "DB_URL", "valueFrom": f"{self.db}:nokey::"}])
        self.assertEqual(key["stoppedReason"], asm + "retrieved secret from Secrets Manager did not contain json key "
                                                     "nokey")


if __name__ == "__main__":
    unittest.main()
