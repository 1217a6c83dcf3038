"""Secrets Manager end to end (docs/contracts/secretsmanager.md): a real server, real SigV4, boto3 (whose
responses are checked strictly against botocore's output shapes) and the AWS CLI v1 and v2. Values
round-trip and stages move as AWS's do; ClientRequestToken retries are no-ops; a secret marked for
deletion refuses reads until restored; an IAM user reads only the secrets its policy names; another
account never sees a secret; nothing is stored in the clear."""
import base64
import json
import os
import sqlite3
import subprocess
import sys
import unittest
import uuid

import paddock_harness as h

client = h.client


class SecretsManager(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sm = client("secretsmanager", cls.server.endpoint, cls.key_id, cls.secret)
        cls.iam = client("iam", cls.server.endpoint, cls.key_id, cls.secret)

    def test_values_versions_and_stages(self):
        made = self.sm.create_secret(Name="e2e/db", SecretString="v1", Description="db",
                                     Tags=[{"Key": "team", "Value": "red"}])
        self.assertRegex(made["ARN"], rf"^arn:aws:secretsmanager:{h.REGION}:{self.account}:secret:e2e/db-[A-Za-z0-9]{{6}}$")
        for secret_id in ("e2e/db", made["ARN"], made["ARN"][:-7]):
            got = self.sm.get_secret_value(SecretId=secret_id)
            self.assertEqual((got["SecretString"], got["VersionId"], got["VersionStages"]),
                             ("v1", made["VersionId"], ["AWSCURRENT"]))
        put = self.sm.put_secret_value(SecretId="e2e/db", SecretBinary=b"\x00\x01\xff")
        self.assertEqual(put["VersionStages"], ["AWSCURRENT"])
        self.assertEqual(self.sm.get_secret_value(SecretId="e2e/db")["SecretBinary"], b"\x00\x01\xff")
        self.assertEqual(self.sm.get_secret_value(SecretId="e2e/db", VersionStage="AWSPREVIOUS")["SecretString"], "v1")
        d = self.sm.describe_secret(SecretId="e2e/db")
        self.assertEqual(d["VersionIdsToStages"], {made["VersionId"]: ["AWSPREVIOUS"], put["VersionId"]: ["AWSCURRENT"]})
        self.assertEqual(d["Tags"], [{"Key": "team", "Value": "red"}])
        self.assertNotIn("KmsKeyId", d)  # the default key is not named, as AWS
        self.sm.update_secret_version_stage(SecretId="e2e/db", VersionStage="AWSCURRENT",
                                            RemoveFromVersionId=put["VersionId"], MoveToVersionId=made["VersionId"])
        self.assertEqual(self.sm.get_secret_value(SecretId="e2e/db")["SecretString"], "v1")
        versions = self.sm.list_secret_version_ids(SecretId="e2e/db")["Versions"]
        self.assertEqual(sorted(v["VersionId"] for v in versions), sorted([made["VersionId"], put["VersionId"]]))
        self.sm.update_secret(SecretId="e2e/db", Description="new", SecretString="v3")
        self.assertEqual(self.sm.get_secret_value(SecretId="e2e/db")["SecretString"], "v3")
        self.assertEqual(self.sm.describe_secret(SecretId="e2e/db")["Description"], "new")
        self.sm.untag_resource(SecretId="e2e/db", TagKeys=["team"])
        self.sm.tag_resource(SecretId="e2e/db", Tags=[{"Key": "env", "Value": "prod"}])
        self.assertEqual(self.sm.describe_secret(SecretId="e2e/db")["Tags"], [{"Key": "env", "Value": "prod"}])

    def test_client_request_token_retries_are_no_ops(self):
        token = str(uuid.uuid4())
        first = self.sm.create_secret(Name="e2e/token", SecretString="same", ClientRequestToken=token)
        again = self.sm.create_secret(Name="e2e/token", SecretString="same", ClientRequestToken=token)
        self.assertEqual((again["ARN"], again["VersionId"]), (first["ARN"], token))
        self.assertClientError("ResourceExistsException", self.sm.create_secret, Name="e2e/token",
                               SecretString="other", ClientRequestToken=token,
                               message="You can't modify an existing version, you can only create a new version.")
        self.assertClientError("ResourceExistsException", self.sm.create_secret, Name="e2e/token", SecretString="same",
                               message="The operation failed because the secret e2e/token already exists.")
        self.assertEqual(len(self.sm.list_secret_version_ids(SecretId="e2e/token")["Versions"]), 1)

    def test_deletion_window_restore_and_force(self):
        self.sm.create_secret(Name="e2e/del", SecretString="v")
        deleted = self.sm.delete_secret(SecretId="e2e/del", RecoveryWindowInDays=7)
        self.assertIn("DeletionDate", deleted)
        self.assertClientError("InvalidRequestException", self.sm.get_secret_value, SecretId="e2e/del",
                               message="You can't perform this operation on the secret because it was marked for deletion.")
        self.assertIn("DeletedDate", self.sm.describe_secret(SecretId="e2e/del"))
        self.assertNotIn("e2e/del", [s["Name"] for s in self.sm.list_secrets()["SecretList"]])
        self.assertIn("e2e/del", [s["Name"] for s in self.sm.list_secrets(IncludePlannedDeletion=True)["SecretList"]])
        self.assertClientError("InvalidParameterException", self.sm.delete_secret, SecretId="e2e/del",
                               RecoveryWindowInDays=3)
        self.sm.restore_secret(SecretId="e2e/del")
        self.assertEqual(self.sm.get_secret_value(SecretId="e2e/del")["SecretString"], "v")
        self.sm.delete_secret(SecretId="e2e/del", ForceDeleteWithoutRecovery=True)
        self.assertClientError("ResourceNotFoundException", self.sm.describe_secret, SecretId="e2e/del",
                               message="Secrets Manager can't find the specified secret.")

    def test_list_secrets_pages_and_filters(self):
        for i in range(5):
            self.sm.create_secret(Name=f"e2e-page/{i}", SecretString="x")
        names = []
        for page in self.sm.get_paginator("list_secrets").paginate(
                Filters=[{"Key": "name", "Values": ["e2e-page/"]}], PaginationConfig={"PageSize": 2}):
            self.assertLessEqual(len(page["SecretList"]), 2)
            names += [s["Name"] for s in page["SecretList"]]
        self.assertEqual(names, [f"e2e-page/{i}" for i in range(5)])

    def test_a_user_reads_only_the_secrets_its_policy_names(self):
        allowed = self.sm.create_secret(Name="e2e-iam/app", SecretString="app")["ARN"]
        other = self.sm.create_secret(Name="e2e-iam/other", SecretString="other")["ARN"]
        self.iam.create_user(UserName="sm-reader")
        self.iam.put_user_policy(UserName="sm-reader", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
                "Resource": f"arn:aws:secretsmanager:{h.REGION}:{self.account}:secret:e2e-iam/app-??????"}]}))
        key = self.iam.create_access_key(UserName="sm-reader")["AccessKey"]
        reader = client("secretsmanager", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        self.assertEqual(reader.get_secret_value(SecretId="e2e-iam/app")["SecretString"], "app")
        user = f"arn:aws:iam::{self.account}:user/sm-reader"
        self.assertClientError(
            "AccessDeniedException", reader.get_secret_value, SecretId="e2e-iam/other",
            message=f"User: {user} is not authorized to perform: secretsmanager:GetSecretValue on resource: {other} "
                    "because no identity-based policy allows the secretsmanager:GetSecretValue action")
        self.assertClientError("AccessDeniedException", reader.put_secret_value, SecretId=allowed, SecretString="x")
        self.assertEqual(self.sm.get_secret_value(SecretId="e2e-iam/app")["SecretString"], "app")  # unchanged

    def test_another_account_never_sees_a_secret(self):
        arn = self.sm.create_secret(Name="e2e-tenant/s", SecretString="mine")["ARN"]
        _, kid, secret = h.create_account(self.state_dir, None, "other")
        other = client("secretsmanager", self.server.endpoint, kid, secret)
        for secret_id in (arn, "e2e-tenant/s"):
            self.assertClientError("ResourceNotFoundException", other.get_secret_value, SecretId=secret_id)
            self.assertClientError("ResourceNotFoundException", other.put_secret_value, SecretId=secret_id,
                                   SecretString="theirs")
            self.assertClientError("ResourceNotFoundException", other.delete_secret, SecretId=secret_id,
                                   ForceDeleteWithoutRecovery=True)
        self.assertEqual(other.list_secrets(IncludePlannedDeletion=True)["SecretList"], [])
        self.assertEqual(self.sm.get_secret_value(SecretId=arn)["SecretString"], "mine")

    def test_deleting_the_account_removes_its_secrets(self):
        acct, kid, secret = h.create_account(self.state_dir, None, "doomed-sm")
        doomed = client("secretsmanager", self.server.endpoint, kid, secret)
        doomed.create_secret(Name="e2e-doomed/s", SecretString="gone")
        doomed.create_secret(Name="e2e-doomed/marked", SecretString="gone")
        doomed.delete_secret(SecretId="e2e-doomed/marked")
        h.admin(self.state_dir, "delete-account", "--account", acct)
        # Reborn under the same id, the account inherits nothing.
        _, kid, secret = h.create_account(self.state_dir, acct, "reborn-sm")
        reborn = client("secretsmanager", self.server.endpoint, kid, secret)
        self.assertEqual(reborn.list_secrets(IncludePlannedDeletion=True)["SecretList"], [])
        self.assertClientError("ResourceNotFoundException", reborn.get_secret_value, SecretId="e2e-doomed/s")
        reborn.create_secret(Name="e2e-doomed/marked", SecretString="new")  # the name is free, not "scheduled"

    def test_unserved_operations_and_bad_names(self):
        self.assertClientError("UnknownOperationException", self.sm.get_random_password,
                               message="Unknown operation 'GetRandomPassword'.")
        self.assertClientError("UnknownOperationException", self.sm.rotate_secret, SecretId="x")
        self.assertClientError("ValidationException", self.sm.create_secret, Name="has space",
                               message="Invalid name. Must be a valid name containing alphanumeric characters, "
                                       "or any of the following: -/_+=.@!")

    def test_values_are_not_stored_in_the_clear(self):
        marker = "plaintext-marker-" + uuid.uuid4().hex
        self.sm.create_secret(Name="e2e/clear", SecretString=marker)
        self.sm.put_secret_value(SecretId="e2e/clear", SecretBinary=marker.encode())
        db = sqlite3.connect(f"file:{os.path.join(self.state_dir, 'paddock.db')}?mode=ro", uri=True)
        try:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            cells = [c for t in tables for row in db.execute(f'SELECT * FROM "{t}"') for c in row]
        finally:
            db.close()
        self.assertIn("t_sm_secret_versions", tables)
        # The marker as text, hex, base64 and base64url (their first 24 characters: no padding differences).
        forms = [marker.encode(), marker.encode().hex().encode(), base64.b64encode(marker.encode())[:24],
                 base64.urlsafe_b64encode(marker.encode())[:24]]
        for cell in cells:
            raw = cell if isinstance(cell, bytes) else str(cell).encode()
            for form in forms:
                self.assertNotIn(form, raw)
        key_file = os.path.join(self.state_dir, "keys", "master.key")
        self.assertEqual(os.stat(key_file).st_mode & 0o777, 0o600)

    def _cli(self, cli, name):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION)
        env.pop("AWS_PROFILE", None)

        def run(*args):
            r = subprocess.run([*cli, "secretsmanager", *args, "--endpoint-url", self.server.endpoint, "--output", "json"],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            return json.loads(r.stdout) if r.stdout.strip() else {}

        run("create-secret", "--name", name, "--secret-string", '{"user":"u","password":"p"}')
        self.assertEqual(json.loads(run("get-secret-value", "--secret-id", name)["SecretString"]),
                         {"user": "u", "password": "p"})
        run("put-secret-value", "--secret-id", name, "--secret-string", "two")
        self.assertIn(name, [s["Name"] for s in run("list-secrets")["SecretList"]])
        run("delete-secret", "--secret-id", name, "--force-delete-without-recovery")

    def test_cli_v1(self):
        self._cli([sys.executable, "-m", "awscli"], "e2e-cli/v1")

    def test_cli_v2(self):
        if not os.path.exists("/usr/bin/aws"):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        self._cli(["/usr/bin/aws"], "e2e-cli/v2")


if __name__ == "__main__":
    unittest.main()
