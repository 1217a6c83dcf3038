"""IAM enforcement end to end (docs/contracts/iam.md, "Enforcement"): a real server, real SigV4, boto3
and the AWS CLI v1. An account's root may do everything; an IAM user or a role session only what its
policies allow, with AWS's exact AccessDenied texts, and a denied call changes nothing. PassRole is
checked at RegisterTaskDefinition with `iam:PassedToService`; an explicit Deny beats an Allow;
GetCallerIdentity is always allowed; AssumeRole evaluates the trust policy and the session acts as
the role."""
import json
import os
import subprocess

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

import paddock_harness as h

TASK_ROLE_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def client(service, endpoint, key_id, secret, token=None, region=h.REGION):
    return boto3.session.Session().client(
        service, endpoint_url=endpoint, region_name=region if service != "iam" else "us-east-1",
        aws_access_key_id=key_id, aws_secret_access_key=secret, aws_session_token=token,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}))


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action, resource="*", **extra):
    return dict({"Effect": "Allow", "Action": action, "Resource": resource}, **extra)


def deny(action, resource="*"):
    return {"Effect": "Deny", "Action": action, "Resource": resource}


class Authorization(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.iam = client("iam", cls.server.endpoint, cls.key_id, cls.secret)

    def user(self, name, *statements):
        """An IAM user with one inline policy of `statements` (none: no policy); its ECS client."""
        self.iam.create_user(UserName=name)
        if statements:
            self.iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=policy(*statements))
        key = self.iam.create_access_key(UserName=name)["AccessKey"]
        self.user_arn = f"arn:aws:iam::{self.account}:user/{name}"
        return key["AccessKeyId"], key["SecretAccessKey"]

    def denial(self, arn, action, resource, explicit=False):
        why = ("with an explicit deny in an identity-based policy" if explicit
               else f"because no identity-based policy allows the {action} action")
        return f"User: {arn} is not authorized to perform: {action} on resource: {resource} {why}"

    def test_root_may_do_everything_and_a_user_only_what_its_policies_allow(self):
        self.ecs.list_clusters()  # root: no policy needed
        kid, secret = self.user("nobody")
        ecs = client("ecs", self.server.endpoint, kid, secret)
        self.assertClientError("AccessDeniedException", ecs.list_clusters,
                               message=self.denial(self.user_arn, "ecs:ListClusters", "*"))
        # A denied create changes nothing.
        self.assertClientError("AccessDeniedException", ecs.create_cluster, clusterName="denied-cluster")
        self.assertEqual(self.ecs.describe_clusters(clusters=["denied-cluster"])["clusters"], [])
        # The policy takes effect at once.
        self.iam.put_user_policy(UserName="nobody", PolicyName="p",
                                 PolicyDocument=policy(allow(["ecs:ListClusters", "ecs:CreateCluster"])))
        ecs.list_clusters()
        ecs.create_cluster(clusterName="allowed-cluster")
        # IAM itself is authorized the same way, in IAM's dialect (AccessDenied, 403).
        iam = client("iam", self.server.endpoint, kid, secret)
        with self.assertRaises(ClientError) as cm:
            iam.create_user(UserName="escalate")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 403)
        self.assertEqual(cm.exception.response["Error"]["Message"],
                         self.denial(self.user_arn, "iam:CreateUser", f"arn:aws:iam::{self.account}:user/escalate"))
        with self.assertRaises(ClientError):
            self.iam.get_user(UserName="escalate")

    def test_an_explicit_deny_beats_an_allow(self):
        kid, secret = self.user("denied", allow("ecs:*"), deny("ecs:DeleteCluster"))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        ecs.create_cluster(clusterName="keep-me")
        arn = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/keep-me"
        self.assertClientError("AccessDeniedException", ecs.delete_cluster, cluster="keep-me",
                               message=self.denial(self.user_arn, "ecs:DeleteCluster", arn, explicit=True))
        self.assertEqual(self.ecs.describe_clusters(clusters=["keep-me"])["clusters"][0]["status"], "ACTIVE")

    def test_a_cluster_condition_scopes_writes_but_not_tag_resource(self):
        # ADR-0005's grant: writes scoped with ArnEquals ecs:cluster. TagResource carries no
        # ecs:cluster key, so the condition never holds for it, as on AWS.
        cluster = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/scoped"
        self.ecs.create_cluster(clusterName="scoped")
        self.ecs.create_cluster(clusterName="other")
        kid, secret = self.user("scoped", allow(["ecs:ListServices", "ecs:TagResource"],
                                                Condition={"ArnEquals": {"ecs:cluster": cluster}}))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        ecs.list_services(cluster="scoped")
        self.assertClientError("AccessDeniedException", ecs.list_services, cluster="other")
        self.assertClientError("AccessDeniedException", ecs.tag_resource, resourceArn=cluster,
                               tags=[{"key": "k", "value": "v"}])

    def test_pass_role_needs_its_grant_and_the_passed_to_service_condition(self):
        role_arn = self.iam.create_role(RoleName="app-task", AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))[
            "Role"]["Arn"]
        kid, secret = self.user("deployer", allow("ecs:RegisterTaskDefinition"))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        td = h.td_min("passrole", taskRoleArn=role_arn)
        self.assertClientError("AccessDeniedException", ecs.register_task_definition, **td,
                               message=self.denial(self.user_arn, "iam:PassRole", role_arn))
        self.assertEqual(self.ecs.list_task_definitions(familyPrefix="passrole")["taskDefinitionArns"], [])
        # A PassRole grant for another service does not admit it.
        self.iam.put_user_policy(UserName="deployer", PolicyName="p", PolicyDocument=policy(
            allow("ecs:RegisterTaskDefinition"),
            allow("iam:PassRole", role_arn, Condition={"StringEquals": {"iam:PassedToService": "lambda.amazonaws.com"}})))
        self.assertClientError("AccessDeniedException", ecs.register_task_definition, **td,
                               message=self.denial(self.user_arn, "iam:PassRole", role_arn))
        self.iam.put_user_policy(UserName="deployer", PolicyName="p", PolicyDocument=policy(
            allow("ecs:RegisterTaskDefinition"),
            allow("iam:PassRole", role_arn, Condition={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}})))
        got = ecs.register_task_definition(**td)["taskDefinition"]
        self.assertEqual(got["taskRoleArn"], role_arn)

    def test_get_caller_identity_is_allowed_even_under_an_explicit_deny(self):
        kid, secret = self.user("deny-all", deny("*"))
        sts = client("sts", self.server.endpoint, kid, secret)
        who = sts.get_caller_identity()
        self.assertEqual(who["Arn"], self.user_arn)
        ecs = client("ecs", self.server.endpoint, kid, secret)
        self.assertClientError("AccessDeniedException", ecs.list_clusters,
                               message=self.denial(self.user_arn, "ecs:ListClusters", "*", explicit=True))

    def test_assume_role_evaluates_the_trust_policy_and_the_session_acts_as_the_role(self):
        kid, secret = self.user("assumer", allow("sts:AssumeRole"))
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": self.user_arn}, "Action": "sts:AssumeRole",
             "Condition": {"StringEquals": {"sts:ExternalId": "ticket-42"}}}]}
        role_arn = self.iam.create_role(RoleName="operator", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        sts = client("sts", self.server.endpoint, kid, secret)
        with self.assertRaises(ClientError) as cm:
            sts.assume_role(RoleArn=role_arn, RoleSessionName="no-external-id")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="s1", ExternalId="ticket-42")["Credentials"]
        role_sts = client("sts", self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                          creds["SessionToken"])
        session_arn = f"arn:aws:sts::{self.account}:assumed-role/operator/s1"
        self.assertEqual(role_sts.get_caller_identity()["Arn"], session_arn)
        role_ecs = client("ecs", self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                          creds["SessionToken"])
        self.assertClientError("AccessDeniedException", role_ecs.list_clusters,
                               message=f"User: {session_arn} is not authorized to perform: ecs:ListClusters on "
                                       "resource: * because no identity-based policy allows the ecs:ListClusters action")
        self.iam.put_role_policy(RoleName="operator", PolicyName="list",
                                 PolicyDocument=policy(allow("ecs:ListClusters")))
        role_ecs.list_clusters()
        # Removing the role's policy takes the grant away from the live session.
        self.iam.delete_role_policy(RoleName="operator", PolicyName="list")
        self.assertClientError("AccessDeniedException", role_ecs.list_clusters)

    def test_a_session_policy_only_narrows_the_role(self):
        kid, secret = self.user("narrower", allow("sts:AssumeRole"))
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{self.account}:root"}, "Action": "sts:AssumeRole"}]}
        role_arn = self.iam.create_role(RoleName="wide", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        self.iam.put_role_policy(RoleName="wide", PolicyName="all", PolicyDocument=policy(allow("ecs:*")))
        sts = client("sts", self.server.endpoint, kid, secret)
        creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="narrow",
                                Policy=policy(allow("ecs:ListClusters")))["Credentials"]
        ecs = client("ecs", self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        ecs.list_clusters()
        self.assertClientError(
            "AccessDeniedException", ecs.create_cluster, clusterName="narrowed",
            message=f"User: arn:aws:sts::{self.account}:assumed-role/wide/narrow is not authorized to perform: "
                    f"ecs:CreateCluster on resource: arn:aws:ecs:{h.REGION}:{self.account}:cluster/narrowed "
                    "because no session policy allows the ecs:CreateCluster action")

    def test_cli_v1_gets_the_exact_denial(self):
        kid, secret = self.user("cli-user")
        env = dict(os.environ, AWS_ACCESS_KEY_ID=kid, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION=h.REGION,
                   AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        for k in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(k, None)
        out = subprocess.run(["aws", "--endpoint-url", self.server.endpoint, "ecs", "list-clusters"],
                             env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("AccessDeniedException", out.stderr)
        self.assertIn(self.denial(self.user_arn, "ecs:ListClusters", "*"), out.stderr)


class AcceptAnyCredentials(h.PaddockTestCase):
    SERVER_ARGS = ("--accept-any-credentials",)

    def test_the_emulator_mode_authorizes_nothing(self):
        ecs = client("ecs", self.server.endpoint, "AKIAANYTHINGATALL000", "whatever")
        ecs.create_cluster(clusterName="anyone")


if __name__ == "__main__":
    import unittest
    unittest.main()
