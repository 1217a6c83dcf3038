"""Authentication (SigV4) and account isolation against a real server."""

import datetime
import json
import os
import shutil
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402


def uniq(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Authentication(h.PaddockTestCase):

    def post(self, headers, body=b"{}"):
        status, hdrs, data = h.raw_request(self.server.port, body=body, headers=headers)
        self.assertEqual(h.validate_error_body(data), [], data) if status >= 400 else None
        return status, hdrs, (json.loads(data) if data else None)

    def signed(self, when=None, key_id=None, secret=None, operation="ListClusters", body=b"{}", region=h.REGION,
               service="ecs"):
        signer = h.RawSigner(key_id or self.key_id, secret or self.secret, region=region, service=service)
        return signer.headers(f"127.0.0.1:{self.server.port}", body, operation=operation, when=when)

    def test_valid_raw_signed_request(self):
        status, hdrs, body = self.post(self.signed())
        self.assertEqual(status, 200, body)
        self.assertEqual(h.validate_output("ListClusters", body), [])
        self.assertTrue(hdrs.get("x-amzn-requestid"), hdrs)
        self.assertTrue(hdrs.get("content-type", "").startswith("application/x-amz-json-1.1"), hdrs)

    def test_unsigned_request(self):
        status, _, body = self.post({"Content-Type": h.JSON_CT,
                                     "X-Amz-Target": f"{h.TARGET_PREFIX}.ListClusters"})
        self.assertEqual(status, 400)
        self.assertEqual(body["__type"], "MissingAuthenticationTokenException")
        self.assertEqual(body.get("message"), "Request is missing Authentication Token")

    def test_wrong_secret(self):
        bad = h.ecs_client(self.server.endpoint, self.key_id, self.secret[:-1] + ("A" if self.secret[-1] != "A" else "B"))
        with self.assertRaises(ClientError) as cm:
            bad.list_clusters()
        r = cm.exception.response
        self.assertEqual(r["Error"]["Code"], "InvalidSignatureException")
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 400)
        self.assertIn("The request signature we calculated does not match the signature you provided.",
                      r["Error"]["Message"])

    def test_tampered_body_after_signing(self):
        hdrs = self.signed(operation="CreateCluster", body=b'{"clusterName":"good"}')
        status, _, body = self.post(hdrs, body=b'{"clusterName":"evil"}')
        self.assertEqual((status, body["__type"]), (400, "InvalidSignatureException"))
        names = [a.rsplit("/", 1)[1] for a in self.ecs.list_clusters()["clusterArns"]]
        self.assertNotIn("evil", names)

    def test_unknown_access_key(self):
        bad = h.ecs_client(self.server.endpoint, "AKIAUNKNOWNKEY000000", "x" * 40)
        with self.assertRaises(ClientError) as cm:
            bad.list_clusters()
        r = cm.exception.response
        self.assertEqual(r["Error"]["Code"], "UnrecognizedClientException")
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 400)
        self.assertEqual(r["Error"]["Message"], "The security token included in the request is invalid.")

    def test_expired_signature(self):
        when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
        status, _, body = self.post(self.signed(when=when))
        self.assertEqual(status, 400, body)
        self.assertEqual(body["__type"], "InvalidSignatureException")
        self.assertTrue(body["message"].startswith("Signature expired: " + when.strftime("%Y%m%dT%H%M%SZ")),
                        body["message"])
        self.assertIn("- 15 min.)", body["message"])

    def test_signature_from_the_future(self):
        when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=20)
        status, _, body = self.post(self.signed(when=when))
        self.assertEqual((status, body["__type"]), (400, "InvalidSignatureException"), body)
        self.assertTrue(body["message"].startswith("Signature not yet current: "), body["message"])

    def test_small_skew_is_accepted(self):
        when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=10)
        status, _, body = self.post(self.signed(when=when))
        self.assertEqual(status, 200, body)

    def test_wrong_service_scope(self):
        status, _, body = self.post(self.signed(service="sqs"))
        self.assertEqual((status, body["__type"]), (400, "InvalidSignatureException"), body)
        self.assertIn("Credential should be scoped to correct service: 'ecs'.", body["message"])

    def test_incomplete_authorization_header(self):
        hdrs = {"Content-Type": h.JSON_CT, "X-Amz-Target": f"{h.TARGET_PREFIX}.ListClusters",
                "X-Amz-Date": "20240101T000000Z", "Authorization": "AWS4-HMAC-SHA256 Credential=AKIA/x"}
        status, _, body = self.post(hdrs)
        self.assertEqual(status, 400, body)
        self.assertIn(body["__type"], ("IncompleteSignatureException", "InvalidSignatureException"))
        self.assertTrue(self.server.alive())


class AccountIsolation(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.account_b, kb, sb = h.create_account(cls.state_dir, None, "b")
        cls.ecs_b = h.ecs_client(cls.server.endpoint, kb, sb)

    def test_accounts_do_not_see_each_other(self):
        name = uniq("same")
        a = self.ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"]
        b = self.ecs_b.create_cluster(clusterName=name)["cluster"]["clusterArn"]
        self.assertEqual(a.split(":")[4], self.account)
        self.assertEqual(b.split(":")[4], self.account_b)
        self.assertNotIn(b, self.ecs.list_clusters()["clusterArns"])
        self.assertNotIn(a, self.ecs_b.list_clusters()["clusterArns"])
        only_b = uniq("bonly")
        self.ecs_b.create_cluster(clusterName=only_b)
        d = self.ecs.describe_clusters(clusters=[only_b])
        self.assertEqual(d["clusters"], [])
        self.assertEqual(d["failures"][0]["reason"], "MISSING")

        fam = uniq("fam")
        self.ecs.register_task_definition(**h.td_min(fam))
        self.ecs.register_task_definition(**h.td_min(fam))
        tb = self.ecs_b.register_task_definition(**h.td_min(fam))["taskDefinition"]
        self.assertEqual(tb["revision"], 1, "revisions are per account")
        self.assertEqual(self.ecs.describe_task_definition(taskDefinition=fam)["taskDefinition"]["revision"], 2)
        bfam = uniq("bfam")
        self.ecs_b.register_task_definition(**h.td_min(bfam))
        self.assertNotIn(bfam, self.ecs.list_task_definition_families()["families"])
        self.assertEqual(self.ecs.list_task_definitions(familyPrefix=bfam)["taskDefinitionArns"], [])
        with self.assertRaises(ClientError):
            self.ecs.describe_task_definition(taskDefinition=bfam)

    def _assert_denied(self, fn, **kw):
        with self.assertRaises(ClientError) as cm:
            fn(**kw)
        r = cm.exception.response
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 400, r)
        self.assertIn(r["Error"]["Code"], ("AccessDeniedException", "ClientException",
                                          "ClusterNotFoundException", "InvalidParameterException"), r)
        return r["Error"]["Code"]

    def test_cross_account_arns_are_refused_and_write_nothing(self):
        name = uniq("bc")
        b_cluster = self.ecs_b.create_cluster(clusterName=name, tags=[{"key": "owner", "value": "b"}])["cluster"]
        fam = uniq("btd")
        b_td = self.ecs_b.register_task_definition(**h.td_min(fam, tags=[{"key": "owner", "value": "b"}]))
        b_td_arn = b_td["taskDefinition"]["taskDefinitionArn"]
        codes = {}
        codes["DescribeTaskDefinition"] = self._assert_denied(self.ecs.describe_task_definition,
                                                              taskDefinition=b_td_arn)
        codes["TagResource(td)"] = self._assert_denied(self.ecs.tag_resource, resourceArn=b_td_arn,
                                                       tags=[{"key": "owner", "value": "a"}])
        codes["TagResource(cluster)"] = self._assert_denied(self.ecs.tag_resource,
                                                            resourceArn=b_cluster["clusterArn"],
                                                            tags=[{"key": "evil", "value": "1"}])
        codes["UntagResource"] = self._assert_denied(self.ecs.untag_resource, resourceArn=b_cluster["clusterArn"],
                                                     tagKeys=["owner"])
        codes["ListTagsForResource"] = self._assert_denied(self.ecs.list_tags_for_resource, resourceArn=b_td_arn)
        codes["DeregisterTaskDefinition"] = self._assert_denied(self.ecs.deregister_task_definition,
                                                                taskDefinition=b_td_arn)
        codes["DeleteCluster"] = self._assert_denied(self.ecs.delete_cluster, cluster=b_cluster["clusterArn"])
        codes["UpdateClusterSettings"] = self._assert_denied(
            self.ecs.update_cluster_settings, cluster=b_cluster["clusterArn"],
            settings=[{"name": "containerInsights", "value": "enabled"}])
        # A's DeleteTaskDefinitions on B's ARN must not delete it (failure entry or error).
        self.ecs_b.register_task_definition(**h.td_min(fam))
        self.ecs_b.deregister_task_definition(taskDefinition=f"{fam}:2")
        b_td2 = b_td_arn[:-1] + "2"
        try:
            r = self.ecs.delete_task_definitions(taskDefinitions=[b_td2])
            self.assertEqual(r["taskDefinitions"], [])
            self.assertEqual(len(r["failures"]), 1)
        except ClientError as e:
            self.assertEqual(e.response["ResponseMetadata"]["HTTPStatusCode"], 400)
        # Access denial uses AccessDeniedException for explicit cross-account ARNs.
        self.assertEqual(codes["TagResource(td)"], "AccessDeniedException", codes)
        self.assertEqual(codes["DescribeTaskDefinition"], "AccessDeniedException", codes)

        # Nothing was written in B.
        self.assertEqual(self.ecs_b.list_tags_for_resource(resourceArn=b_td_arn)["tags"],
                         [{"key": "owner", "value": "b"}])
        self.assertEqual(self.ecs_b.list_tags_for_resource(resourceArn=b_cluster["clusterArn"])["tags"],
                         [{"key": "owner", "value": "b"}])
        d = self.ecs_b.describe_clusters(clusters=[name], include=["SETTINGS"])["clusters"][0]
        self.assertEqual(d["status"], "ACTIVE")
        self.assertNotIn({"name": "containerInsights", "value": "enabled"}, d.get("settings", []))
        self.assertEqual(self.ecs_b.describe_task_definition(taskDefinition=b_td_arn)["taskDefinition"]["status"],
                         "ACTIVE")
        self.assertEqual(self.ecs_b.describe_task_definition(taskDefinition=b_td2)["taskDefinition"]["status"],
                         "INACTIVE")
        # And nothing landed in A either.
        self.assertNotIn(fam, self.ecs.list_task_definition_families()["families"])


class AcceptAnyCredentials(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="paddock-any-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.server = h.Server(os.path.join(cls.tmp, "state"),
                              ["--accept-any-credentials", "--default-account", "222233334444"]).start()
        cls.addClassCleanup(cls.server.stop)

    def test_twelve_digit_key_is_the_account(self):
        c = h.ecs_client(self.server.endpoint, "123456789012", "anything")
        arn = c.create_cluster(clusterName="anyc")["cluster"]["clusterArn"]
        self.assertEqual(arn, "arn:aws:ecs:us-east-1:123456789012:cluster/anyc")
        td = c.register_task_definition(**h.td_min("anyfam"))["taskDefinition"]
        self.assertEqual(td["taskDefinitionArn"], "arn:aws:ecs:us-east-1:123456789012:task-definition/anyfam:1")
        # Another secret for the same key id: same account.
        c2 = h.ecs_client(self.server.endpoint, "123456789012", "other-secret")
        self.assertIn(arn, c2.list_clusters()["clusterArns"])
        # A different 12-digit key is a different account.
        c3 = h.ecs_client(self.server.endpoint, "999988887777", "x")
        self.assertEqual(c3.list_clusters()["clusterArns"], [])

    def test_other_keys_use_default_account(self):
        c = h.ecs_client(self.server.endpoint, "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        arn = c.create_cluster(clusterName="dflt")["cluster"]["clusterArn"]
        self.assertEqual(arn.split(":")[4], "222233334444")

    def test_unsigned_still_rejected(self):
        status, _, data = h.raw_request(self.server.port, body=b"{}", headers={
            "Content-Type": h.JSON_CT, "X-Amz-Target": f"{h.TARGET_PREFIX}.ListClusters"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(data)["__type"], "MissingAuthenticationTokenException")


if __name__ == "__main__":
    unittest.main()
