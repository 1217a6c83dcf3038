"""ECS refuses to launch a task whose task role or execution role it cannot assume
(docs/contracts/task.md, "Task role credentials"; task-definition.md, "PassRole at launch";
service.md; issue 11 §3-§4). A real server and boto3; nothing here runs a container.

- RunTask/StartTask: ClientException "ECS was unable to assume the role '<arn>' that was provided
  for this task. …" for a role that does not exist, that does not trust ecs-tasks.amazonaws.com,
  or an execution role likewise; the override's role is the one checked; nothing is written. Root
  is checked too; a user without iam:PassRole gets PassRole's AccessDenied first.
- A service is created; its launches fail with the event "service <name> failed to launch a task
  with (error ECS was unable to assume the role …)." and no task.
- --accept-any-credentials (the emulator) still launches a made-up role."""
import json
import time

import paddock_harness as h
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
EC2_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def unable(role_arn):
    return (f"ECS was unable to assume the role '{role_arn}' that was provided for this task. Please verify that "
            "the role being passed has the proper trust relationship and permissions and that your IAM user has "
            "permissions to pass this role.")


def client(service, endpoint, key_id, secret):
    return boto3.session.Session().client(
        service, endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=key_id,
        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1, "mode": "standard"}))


def fargate_td(family, **roles):
    return dict(family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
                containerDefinitions=[{"name": "app", "image": "busybox:never-pulled", "essential": True}], **roles)


class LaunchRoles(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.iam = client("iam", cls.server.endpoint, cls.key_id, cls.secret)
        cls.subnet = client("ec2", cls.server.endpoint, cls.key_id, cls.secret).describe_subnets()[
            "Subnets"][0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="roles")
        cls.good = cls.iam.create_role(RoleName="lr-good", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
        cls.ec2_only = cls.iam.create_role(RoleName="lr-ec2-only",
                                           AssumeRolePolicyDocument=json.dumps(EC2_TRUST))["Role"]["Arn"]
        cls.missing = f"arn:aws:iam::{cls.account}:role/lr-no-such-role"

    def run_task(self, ecs=None, **kw):
        return (ecs or self.ecs).run_task(cluster="roles", launchType="FARGATE", networkConfiguration={
            "awsvpcConfiguration": {"subnets": [self.subnet]}}, **kw)

    def assertRefused(self, role_arn, ecs=None, **kw):
        self.assertClientError("ClientException", self.run_task, ecs=ecs, message=unable(role_arn), **kw)
        self.assertEqual(self.ecs.list_tasks(cluster="roles")["taskArns"], [])

    def test_root_gets_ecss_client_exception_for_a_missing_task_role(self):
        self.ecs.register_task_definition(**fargate_td("lr-missing", taskRoleArn=self.missing))
        self.assertRefused(self.missing, taskDefinition="lr-missing")

    def test_a_task_role_that_trusts_only_ec2_is_refused(self):
        self.ecs.register_task_definition(**fargate_td("lr-ec2", taskRoleArn=self.ec2_only))
        self.assertRefused(self.ec2_only, taskDefinition="lr-ec2")

    def test_a_missing_execution_role_is_refused(self):
        self.ecs.register_task_definition(**fargate_td("lr-exec", taskRoleArn=self.good,
                                                       executionRoleArn=self.missing))
        self.assertRefused(self.missing, taskDefinition="lr-exec")

    def test_the_overrides_roles_are_the_ones_checked(self):
        self.ecs.register_task_definition(**fargate_td("lr-override", taskRoleArn=self.good))
        self.assertRefused(self.ec2_only, taskDefinition="lr-override", overrides={"taskRoleArn": self.ec2_only})
        self.assertRefused(self.missing, taskDefinition="lr-override", overrides={"executionRoleArn": self.missing})

    def test_start_task_is_checked_too(self):
        self.ecs.register_task_definition(
            family="lr-start", requiresCompatibilities=["EC2"], taskRoleArn=self.missing,
            containerDefinitions=[{"name": "app", "image": "busybox:never-pulled", "memory": 64}])
        self.assertClientError("ClientException", self.ecs.start_task, cluster="roles", taskDefinition="lr-start",
                               containerInstances=["0123456789abcdef0123456789abcdef"], message=unable(self.missing))

    def test_a_user_gets_pass_roles_denial_first_then_ecss_error(self):
        self.ecs.register_task_definition(**fargate_td("lr-user", taskRoleArn=self.missing))
        self.iam.create_user(UserName="lr-runner")
        key = self.iam.create_access_key(UserName="lr-runner")["AccessKey"]
        self.iam.put_user_policy(UserName="lr-runner", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ecs:RunTask", "Resource": "*"}]}))
        ecs = client("ecs", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        user = f"arn:aws:iam::{self.account}:user/lr-runner"
        self.assertClientError(
            "AccessDeniedException", self.run_task, ecs=ecs, taskDefinition="lr-user",
            message=f"User: {user} is not authorized to perform: iam:PassRole on resource: {self.missing} "
                    "because no identity-based policy allows the iam:PassRole action")
        self.iam.put_user_policy(UserName="lr-runner", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["ecs:RunTask", "iam:PassRole"],
                                                    "Resource": "*"}]}))
        self.assertRefused(self.missing, ecs=ecs, taskDefinition="lr-user")

    def test_a_service_is_created_and_its_launches_fail_with_ecss_event(self):
        self.ecs.register_task_definition(**fargate_td("lr-svc", executionRoleArn=self.missing))
        self.ecs.create_service(cluster="roles", serviceName="lr-svc", taskDefinition="lr-svc", desiredCount=1,
                                launchType="FARGATE",
                                networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.addCleanup(self.ecs.delete_service, cluster="roles", service="lr-svc", force=True)
        expected = f"service lr-svc failed to launch a task with (error {unable(self.missing)})."
        deadline = time.monotonic() + 20 * h.latency_scale()
        while True:
            svc = self.ecs.describe_services(cluster="roles", services=["lr-svc"])["services"][0]
            if any(e["message"] == expected for e in svc["events"]):
                break
            if time.monotonic() > deadline:
                self.fail(f"no event {expected!r}: {svc['events']}\n{self.server.log_tail()}")
            time.sleep(0.1)
        self.assertEqual(svc["runningCount"] + svc["pendingCount"], 0)
        self.assertEqual(self.ecs.list_tasks(cluster="roles", serviceName="lr-svc")["taskArns"], [])


class EmulatorModeLaunchesAnyRole(h.PaddockTestCase):
    SERVER_ARGS = ("--accept-any-credentials",)

    def test_a_made_up_role_still_launches(self):
        ecs = client("ecs", self.server.endpoint, "AKIAANYTHINGATALL000", "whatever")
        subnet = client("ec2", self.server.endpoint, "AKIAANYTHINGATALL000", "whatever").describe_subnets()[
            "Subnets"][0]["SubnetId"]
        ecs.create_cluster(clusterName="emu")
        ecs.register_task_definition(**fargate_td("emu", taskRoleArn="arn:aws:iam::000000000000:role/made-up"))
        r = ecs.run_task(cluster="emu", taskDefinition="emu", launchType="FARGATE",
                         networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})
        self.assertEqual(r["failures"], [])
        self.assertEqual(len(r["tasks"]), 1)
        ecs.stop_task(cluster="emu", task=r["tasks"][0]["taskArn"])


if __name__ == "__main__":
    import unittest
    unittest.main()
