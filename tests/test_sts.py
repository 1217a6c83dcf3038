"""STS and temporary credentials against a real server (docs/contracts/sts.md): boto3 and the AWS
CLI v1 call GetCallerIdentity and GetSessionToken; the temporary credentials call ECS and STS
only with their session token, get AWS's exact errors without it, and survive a kill -9 of the
server. Expiry runs under a fake clock in the unit tests (`SessionAuthTest.StopsAuthenticatingAtExpiry`,
`StsFrontTest.TemporaryCredentialsNeedTheirTokenAndStopAtExpiry`): the server has no clock to
advance. AssumeRole end to end needs IAM's roles and comes with their wiring."""
import json
import os
import subprocess

import paddock_harness as h
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

INVALID = "The security token included in the request is invalid."


def sts_client(endpoint, key_id, secret, token=None, region=h.REGION):
    return boto3.session.Session().client(
        "sts", endpoint_url=endpoint, region_name=region, aws_access_key_id=key_id,
        aws_secret_access_key=secret, aws_session_token=token,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}))


def ecs_with(endpoint, creds, token=True):
    c = boto3.session.Session().client(
        "ecs", endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"] if token is True else (token or None),
        config=Config(retries={"max_attempts": 1, "mode": "standard"}))
    return c


class Sts(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sts = sts_client(cls.server.endpoint, cls.key_id, cls.secret)

    def session(self, **kwargs):
        return self.sts.get_session_token(**kwargs)["Credentials"]

    def test_get_caller_identity_as_root(self):
        who = self.sts.get_caller_identity()
        self.assertEqual(who["Account"], self.account)
        self.assertEqual(who["UserId"], self.account)
        self.assertEqual(who["Arn"], f"arn:aws:iam::{self.account}:root")
        # STS signs with whatever region the client is configured for.
        other = sts_client(self.server.endpoint, self.key_id, self.secret, region="ap-southeast-4")
        self.assertEqual(other.get_caller_identity()["Arn"], who["Arn"])

    def test_cli_v1_get_caller_identity(self):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION, AWS_CONFIG_FILE="/dev/null",
                   AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        env.pop("AWS_SESSION_TOKEN", None)
        env.pop("AWS_PROFILE", None)
        out = subprocess.run(["aws", "--endpoint-url", self.server.endpoint, "sts", "get-caller-identity",
                              "--output", "json"], env=env, capture_output=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual(json.loads(out.stdout)["Arn"], f"arn:aws:iam::{self.account}:root")
        # And with temporary credentials from the environment, as `aws configure export-credentials` sets them.
        creds = self.session(DurationSeconds=900)
        env.update(AWS_ACCESS_KEY_ID=creds["AccessKeyId"], AWS_SECRET_ACCESS_KEY=creds["SecretAccessKey"],
                   AWS_SESSION_TOKEN=creds["SessionToken"])
        out = subprocess.run(["aws", "--endpoint-url", self.server.endpoint, "sts", "get-caller-identity",
                              "--output", "json"], env=env, capture_output=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual(json.loads(out.stdout)["UserId"], self.account)
        env["AWS_SESSION_TOKEN"] = "not-the-token"
        out = subprocess.run(["aws", "--endpoint-url", self.server.endpoint, "sts", "get-caller-identity"],
                             env=env, capture_output=True, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(f"(InvalidClientTokenId) when calling the GetCallerIdentity operation: {INVALID}",
                      out.stderr.decode())

    def test_session_token_credentials_call_ecs_and_sts(self):
        creds = self.session(DurationSeconds=900)
        self.assertTrue(creds["AccessKeyId"].startswith("ASIA"), creds)
        self.assertEqual(len(creds["AccessKeyId"]), 20)
        left = (creds["Expiration"] - creds["Expiration"].__class__.now(creds["Expiration"].tzinfo)).total_seconds()
        self.assertTrue(880 <= left <= 905, left)
        ecs = ecs_with(self.server.endpoint, creds)
        ecs.create_cluster(clusterName="sts-cluster")
        self.assertIn(f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/sts-cluster",
                      ecs.list_clusters()["clusterArns"])
        who = sts_client(self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                         creds["SessionToken"]).get_caller_identity()
        self.assertEqual((who["Account"], who["UserId"], who["Arn"]),
                         (self.account, self.account, f"arn:aws:iam::{self.account}:root"))

    def test_root_sessions_are_capped_at_an_hour(self):
        creds = self.session(DurationSeconds=7200)
        left = (creds["Expiration"] - creds["Expiration"].__class__.now(creds["Expiration"].tzinfo)).total_seconds()
        self.assertTrue(3580 <= left <= 3605, left)
        default = self.session()
        left = (default["Expiration"] - default["Expiration"].__class__.now(default["Expiration"].tzinfo)).total_seconds()
        self.assertTrue(3580 <= left <= 3605, left)

    def test_get_session_token_validation(self):
        # botocore checks the range itself; turn that off to see the server's answer.
        sts = boto3.session.Session().client(
            "sts", endpoint_url=self.server.endpoint, region_name=h.REGION, aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret, config=Config(parameter_validation=False))
        self.assertClientError("ValidationError", sts.get_session_token, DurationSeconds=899, status=400,
                               message="1 validation error detected: Value '899' at 'durationSeconds' failed to "
                                       "satisfy constraint: Member must have value greater than or equal to 900")

    def test_missing_or_wrong_token_is_refused(self):
        creds = self.session(DurationSeconds=900)
        other = self.session(DurationSeconds=900)
        for token in (None, "", other["SessionToken"], creds["SessionToken"][:-1]):
            with self.subTest(token=(token or "")[:8]):
                ecs = ecs_with(self.server.endpoint, creds, token=token)
                self.assertClientError("UnrecognizedClientException", ecs.list_clusters, message=INVALID, status=400)
                sts = sts_client(self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"], token or None)
                self.assertClientError("InvalidClientTokenId", sts.get_caller_identity, message=INVALID, status=403)
        # The right token still works.
        self.assertEqual(ecs_with(self.server.endpoint, creds).list_clusters()["ResponseMetadata"]["HTTPStatusCode"],
                         200)

    def test_session_credentials_cannot_get_another_session(self):
        creds = self.session(DurationSeconds=900)
        sts = sts_client(self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        self.assertClientError("AccessDenied", sts.get_session_token, status=403,
                               message="Cannot call GetSessionToken with session credentials")

    def test_assume_role_as_root_is_refused(self):
        self.assertClientError("AccessDenied", self.sts.assume_role, status=403,
                               RoleArn=f"arn:aws:iam::{self.account}:role/anything", RoleSessionName="s1",
                               message="Roles may not be assumed by root accounts.")


    def test_deleting_the_account_ends_its_sessions(self):
        acct, kid, secret = h.create_account(self.state_dir, None, "doomed")
        creds = sts_client(self.server.endpoint, kid, secret).get_session_token(DurationSeconds=900)["Credentials"]
        ecs = ecs_with(self.server.endpoint, creds)
        ecs.list_clusters()
        h.admin(self.state_dir, "delete-account", "--account", acct)
        self.assertClientError("UnrecognizedClientException", ecs.list_clusters, message=INVALID)
        # Reborn under the same id, the account does not inherit the old sessions.
        h.create_account(self.state_dir, acct, "reborn")
        self.assertClientError("UnrecognizedClientException", ecs.list_clusters, message=INVALID)


class StsRestart(h.PaddockTestCase):
    """Temporary credentials live in the store: they survive kill -9 and a restart."""

    def test_credentials_survive_kill_and_restart(self):
        sts = sts_client(self.server.endpoint, self.key_id, self.secret)
        creds = sts.get_session_token(DurationSeconds=900)["Credentials"]
        ecs_with(self.server.endpoint, creds).create_cluster(clusterName="before-kill")
        self.server.kill()
        server = h.Server(self.state_dir)
        server.start()
        self.addCleanup(server.stop)
        ecs = ecs_with(server.endpoint, creds)
        self.assertIn(f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/before-kill", ecs.list_clusters()["clusterArns"])
        who = sts_client(server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                         creds["SessionToken"]).get_caller_identity()
        self.assertEqual(who["Arn"], f"arn:aws:iam::{self.account}:root")
        self.assertClientError("UnrecognizedClientException", ecs_with(server.endpoint, creds, token="x").list_clusters,
                               message=INVALID)

if __name__ == "__main__":
    import unittest
    unittest.main()
