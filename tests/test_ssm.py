"""SSM Parameter Store against a real server (docs/contracts/ssm.md): boto3 and the AWS CLI v1 and v2 put,
read, page and delete parameters; SecureStrings are sealed at rest and come back decrypted only
with WithDecryption; AWS's error codes and texts (the CLI v2 too); IAM policies scope a user to parameter ARNs; and
one account never sees another's parameters. Every successful response is validated strictly
against botocore's SSM output shapes from the RAW body."""
import base64
import json
import os
import stat
import subprocess

import paddock_harness as h
from botocore.exceptions import ClientError  # noqa: E402

client = h.client


class Ssm(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ssm = client("ssm", cls.server.endpoint, cls.key_id, cls.secret)

    def arn(self, name, account=None):
        return f"arn:aws:ssm:{h.REGION}:{account or self.account}:parameter/{name.lstrip('/')}"

    def test_secure_string_round_trip_and_selectors(self):
        put = self.ssm.put_parameter(Name="/rt/db/password", Value="hunter2-xyz", Type="SecureString")
        self.assertEqual((put["Version"], put["Tier"]), (1, "Standard"))
        sealed = self.ssm.get_parameter(Name="/rt/db/password")["Parameter"]
        self.assertEqual(sealed["Type"], "SecureString")
        self.assertNotEqual(sealed["Value"], "hunter2-xyz")
        self.assertNotIn(b"hunter2-xyz", base64.b64decode(sealed["Value"], validate=True))
        self.assertEqual(sealed["ARN"], self.arn("/rt/db/password"))
        opened = self.ssm.get_parameter(Name="/rt/db/password", WithDecryption=True)["Parameter"]
        self.assertEqual(opened["Value"], "hunter2-xyz")
        self.ssm.put_parameter(Name="/rt/db/password", Value="second", Overwrite=True)
        self.assertEqual(self.ssm.get_parameter(Name="/rt/db/password:1", WithDecryption=True)["Parameter"]["Value"],
                         "hunter2-xyz")
        self.ssm.label_parameter_version(Name="/rt/db/password", ParameterVersion=1, Labels=["stable"])
        by_label = self.ssm.get_parameter(Name="/rt/db/password:stable", WithDecryption=True)["Parameter"]
        self.assertEqual((by_label["Value"], by_label["Selector"], by_label["Version"]), ("hunter2-xyz", ":stable", 1))
        # By ARN too; GetParameters sorts what it found and lists the misses as given.
        got = self.ssm.get_parameters(Names=[self.arn("/rt/db/password"), "/rt/missing"], WithDecryption=True)
        self.assertEqual([p["Value"] for p in got["Parameters"]], ["second"])
        self.assertEqual(got["InvalidParameters"], ["/rt/missing"])
        history = self.ssm.get_parameter_history(Name="/rt/db/password", WithDecryption=True)["Parameters"]
        self.assertEqual([(p["Version"], p["Value"], p["Labels"]) for p in history],
                         [(1, "hunter2-xyz", ["stable"]), (2, "second", [])])
        self.assertEqual(history[0]["KeyId"], "alias/aws/ssm")
        unlabeled = self.ssm.unlabel_parameter_version(Name="/rt/db/password", ParameterVersion=1,
                                                       Labels=["stable", "never"])
        self.assertEqual((unlabeled["RemovedLabels"], unlabeled["InvalidLabels"]), (["stable"], ["never"]))
        self.assertClientError("ParameterNotFound", self.ssm.get_parameter, Name="/rt/db/password:stable")

    def test_secure_strings_are_not_stored_in_plaintext_and_the_key_file_is_private(self):
        secret = "plaintext-canary-5b0f3c"
        self.ssm.put_parameter(Name="/rest/canary", Value=secret, Type="SecureString", KeyId="alias/app-key")
        for name in os.listdir(self.state_dir):
            path = os.path.join(self.state_dir, name)
            if os.path.isfile(path) and name.startswith("paddock.db"):
                with open(path, "rb") as f:
                    self.assertNotIn(secret.encode(), f.read(), path)
        keys = os.path.join(self.state_dir, "keys")
        self.assertEqual(stat.S_IMODE(os.stat(keys).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(keys, "master.key")).st_mode), 0o600)

    def test_aws_errors(self):
        self.assertClientError("ParameterNotFound", self.ssm.get_parameter, Name="/err/none", message="")
        self.ssm.put_parameter(Name="/err/p", Value="1234", Type="String", AllowedPattern=r"\d{1,4}")
        self.assertClientError(
            "ParameterAlreadyExists", self.ssm.put_parameter, Name="/err/p", Value="1",
            message="The parameter already exists. To overwrite this value, set the overwrite option in the request "
                    "to true.")
        self.assertClientError("ParameterPatternMismatchException", self.ssm.put_parameter, Name="/err/p",
                               Value="12345", Overwrite=True,
                               message=r"Parameter value, cannot be validated against allowedPattern: \d{1,4}")
        self.assertClientError(
            "ParameterVersionNotFound", self.ssm.get_parameter, Name="/err/p:7",
            message="Systems Manager could not find version 7 of /err/p. Verify the version and try again.")
        self.assertClientError("AccessDeniedException", self.ssm.put_parameter, Name="/aws/x", Value="v",
                               message="No access to reserved parameter name: /aws/x.")
        self.assertClientError("ValidationException", self.ssm.put_parameter, Name="/ssm/x", Value="v",
                               message_contains="can't be prefixed with \"ssm\" (case-insensitive)")
        self.assertClientError("ValidationException", self.ssm.put_parameter, Name="/err/t", Value="v",
                               Overwrite=True, Tags=[{"Key": "k", "Value": "v"}],
                               message_contains="tags and overwrite can't be used together")
        self.assertClientError("HierarchyLevelLimitExceededException", self.ssm.put_parameter,
                               Name="/l" * 16, Value="v")
        self.assertClientError("InvalidKeyId", self.ssm.put_parameter, Name="/err/k", Value="v",
                               Type="SecureString",
                               KeyId="arn:aws:kms:us-east-1:999999999999:key/1234abcd-12ab-34cd-56ef-1234567890ab")
        self.assertClientError("ParameterNotFound", self.ssm.delete_parameter, Name="/err/none",
                               message="Parameter /err/none not found.")
        self.assertClientError("InvalidNextToken", self.ssm.describe_parameters, NextToken="forged")

    def test_paginators_walk_every_page(self):
        names = [f"/pg/app/p{i:02d}" for i in range(23)] + ["/pg/app/deep/x", "/pg/other"]
        for n in names:
            self.ssm.put_parameter(Name=n, Value=n, Type="String")
        pages = self.ssm.get_paginator("get_parameters_by_path").paginate(Path="/pg/app", PaginationConfig={"PageSize": 5})
        got = [p["Name"] for page in pages for p in page["Parameters"]]
        self.assertEqual(got, sorted(n for n in names if n.startswith("/pg/app/p")))
        pages = self.ssm.get_paginator("get_parameters_by_path").paginate(Path="/pg", Recursive=True)
        self.assertEqual(len([p for page in pages for p in page["Parameters"]]), 25)
        described = self.ssm.get_paginator("describe_parameters").paginate(
            ParameterFilters=[{"Key": "Name", "Option": "BeginsWith", "Values": ["/pg/"]}],
            PaginationConfig={"PageSize": 7})
        self.assertEqual(len([p for page in described for p in page["Parameters"]]), 25)
        deleted = self.ssm.delete_parameters(Names=names[:9] + ["/pg/none"])
        self.assertEqual(sorted(deleted["DeletedParameters"]), sorted(names[:9]))
        self.assertEqual(deleted["InvalidParameters"], ["/pg/none"])

    def test_tags(self):
        self.ssm.put_parameter(Name="/tags/p", Value="v", Tags=[{"Key": "team", "Value": "a"}])
        self.ssm.add_tags_to_resource(ResourceType="Parameter", ResourceId="/tags/p", Tags=[{"Key": "env", "Value": "x"}])
        self.ssm.remove_tags_from_resource(ResourceType="Parameter", ResourceId="/tags/p", TagKeys=["team"])
        self.assertEqual(self.ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId="/tags/p")["TagList"],
                         [{"Key": "env", "Value": "x"}])
        self.assertClientError("InvalidResourceId", self.ssm.list_tags_for_resource, ResourceType="Parameter",
                               ResourceId="/tags/none")

    def test_cli_v1(self):
        self.check_cli(["aws"])

    def test_cli_v2(self):
        if not os.path.exists("/usr/bin/aws"):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        self.check_cli(["/usr/bin/aws"])

    def check_cli(self, cli):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION, AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        env.pop("AWS_SESSION_TOKEN", None)
        env.pop("AWS_PROFILE", None)

        def aws(*args):
            return subprocess.run([*cli, "--endpoint-url", self.server.endpoint, "--output", "json", "ssm", *args],
                                  env=env, capture_output=True, timeout=60)

        out = aws("put-parameter", "--name", "/cli/token", "--value", "t0k3n", "--type", "SecureString")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual(json.loads(out.stdout)["Version"], 1)
        out = aws("get-parameter", "--name", "/cli/token", "--with-decryption")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual(json.loads(out.stdout)["Parameter"]["Value"], "t0k3n")
        out = aws("get-parameters-by-path", "--path", "/cli", "--recursive", "--with-decryption")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual([p["Value"] for p in json.loads(out.stdout)["Parameters"]], ["t0k3n"])
        out = aws("delete-parameter", "--name", "/cli/token")
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        out = aws("get-parameter", "--name", "/cli/token")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("An error occurred (ParameterNotFound) when calling the GetParameter operation:",
                      out.stderr.decode())

    def test_an_iam_user_reaches_only_the_parameter_arns_its_policy_names(self):
        iam = client("iam", self.server.endpoint, self.key_id, self.secret)
        self.ssm.put_parameter(Name="/scoped/app/x", Value="app-value")
        self.ssm.put_parameter(Name="/scoped/other/y", Value="other-value")
        iam.create_user(UserName="ssm-reader")
        iam.put_user_policy(UserName="ssm-reader", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["ssm:GetParameter"],
                                                    "Resource": self.arn("/scoped/app/*")}]}))
        key = iam.create_access_key(UserName="ssm-reader")["AccessKey"]
        reader = client("ssm", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        self.assertEqual(reader.get_parameter(Name="/scoped/app/x")["Parameter"]["Value"], "app-value")
        user_arn = f"arn:aws:iam::{self.account}:user/ssm-reader"
        self.assertClientError(
            "AccessDeniedException", reader.get_parameter, Name="/scoped/other/y",
            message=f"User: {user_arn} is not authorized to perform: ssm:GetParameter on resource: "
                    f"{self.arn('/scoped/other/y')} because no identity-based policy allows the ssm:GetParameter action")
        self.assertClientError("AccessDeniedException", reader.put_parameter, Name="/scoped/app/x", Value="changed",
                               Overwrite=True)
        self.assertEqual(self.ssm.get_parameter(Name="/scoped/app/x")["Parameter"]["Value"], "app-value")

    def test_accounts_never_see_each_others_parameters(self):
        self.ssm.put_parameter(Name="/iso/secret", Value="mine", Type="SecureString")
        _, kid, secret = h.create_account(self.state_dir, None, "iso-other")
        other = client("ssm", self.server.endpoint, kid, secret)
        for ref in ("/iso/secret", self.arn("/iso/secret")):
            self.assertClientError("ParameterNotFound", other.get_parameter, Name=ref, WithDecryption=True)
        got = other.get_parameters(Names=["/iso/secret", self.arn("/iso/secret")], WithDecryption=True)
        self.assertEqual(got["Parameters"], [])
        self.assertEqual(len(got["InvalidParameters"]), 2)
        self.assertEqual(other.describe_parameters()["Parameters"], [])
        self.assertEqual(other.get_parameters_by_path(Path="/", Recursive=True)["Parameters"], [])
        self.assertClientError("ParameterNotFound", other.delete_parameter, Name="/iso/secret")
        self.assertEqual(other.put_parameter(Name="/iso/secret", Value="theirs")["Version"], 1)
        mine = self.ssm.get_parameter(Name="/iso/secret", WithDecryption=True)["Parameter"]
        self.assertEqual((mine["Value"], mine["Version"]), ("mine", 1))

    def test_deleting_an_account_reaps_its_parameters(self):
        acct = "%012d" % (int.from_bytes(os.urandom(8), "big") % 10 ** 12)
        _, kid, secret = h.create_account(self.state_dir, acct, "doomed")
        doomed = client("ssm", self.server.endpoint, kid, secret)
        doomed.put_parameter(Name="/doomed/secret", Value="gone", Type="SecureString",
                             Tags=[{"Key": "t", "Value": "1"}])
        self.ssm.put_parameter(Name="/doomed/secret", Value="bystander")
        h.admin(self.state_dir, "delete-account", "--account", acct)
        _, kid2, secret2 = h.create_account(self.state_dir, acct, "reborn")
        reborn = client("ssm", self.server.endpoint, kid2, secret2)
        self.assertEqual(reborn.describe_parameters()["Parameters"], [])
        self.assertClientError("ParameterNotFound", reborn.get_parameter, Name="/doomed/secret")
        self.assertEqual(reborn.put_parameter(Name="/doomed/secret", Value="new")["Version"], 1)
        self.assertEqual(self.ssm.get_parameter(Name="/doomed/secret")["Parameter"]["Value"], "bystander")


if __name__ == "__main__":
    import unittest
    unittest.main()
