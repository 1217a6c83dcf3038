"""`paddock admin` on a live server's state dir: accounts, keys and account deletion."""

import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402


def wait_until(pred, timeout=5.0, interval=0.1):
    """Polls pred() until true or timeout; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


class Admin(h.PaddockTestCase):

    def test_create_and_list_accounts(self):
        acct = admin_id = "%012d" % (uuid.uuid4().int % 10 ** 12)
        out = h.admin(self.state_dir, "create-account", "--id", admin_id, "--name", "team-x")
        self.assertEqual(out, [{"account": acct, "name": "team-x"}])
        rnd = h.admin(self.state_dir, "create-account")[0]
        self.assertRegex(rnd["account"], r"^\d{12}$")
        listed = h.admin(self.state_dir, "list-accounts")
        ids = [a["account"] for a in listed]
        for a in (self.account, acct, rnd["account"]):
            self.assertIn(a, ids)
        self.assertIn({"account": acct, "name": "team-x"}, listed)
        # Duplicates and malformed ids are refused.
        rc, _, err = h.admin(self.state_dir, "create-account", "--id", acct, check=False)
        self.assertNotEqual(rc, 0)
        for bad in ("123", "12345678901a", "1234567890123", "-12345678901", " 123456789012"):
            rc, _, err = h.admin(self.state_dir, "create-account", "--id", bad, check=False)
            self.assertNotEqual(rc, 0, f"--id {bad!r} accepted")
        self.assertEqual(len(h.admin(self.state_dir, "list-accounts")), len(listed))

    def test_create_access_key(self):
        acct = h.admin(self.state_dir, "create-account")[0]["account"]
        k1 = h.admin(self.state_dir, "create-access-key", "--account", acct)[0]
        k2 = h.admin(self.state_dir, "create-access-key", "--account", acct)[0]
        for k in (k1, k2):
            self.assertEqual(set(k), {"account", "accessKeyId", "secretAccessKey"})
            self.assertEqual(k["account"], acct)
            self.assertRegex(k["accessKeyId"], r"^AKIA[A-Z0-9]{16}$")
            self.assertEqual(len(k["secretAccessKey"]), 40)
        self.assertNotEqual(k1["accessKeyId"], k2["accessKeyId"])
        # Both keys work against the running server, as the same account.
        for k in (k1, k2):
            c = h.ecs_client(self.server.endpoint, k["accessKeyId"], k["secretAccessKey"])
            arn = c.create_cluster(clusterName="k")["cluster"]["clusterArn"]
            self.assertEqual(arn, f"arn:aws:ecs:us-east-1:{acct}:cluster/k")
        rc, _, _ = h.admin(self.state_dir, "create-access-key", "--account", "999999999990", check=False)
        self.assertNotEqual(rc, 0, "key created for a nonexistent account")

    def test_delete_account_reaps_everything(self):
        acct = "%012d" % (uuid.uuid4().int % 10 ** 12)
        _, kid, sec = h.create_account(self.state_dir, acct, "doomed")
        c = h.ecs_client(self.server.endpoint, kid, sec)
        cl = c.create_cluster(clusterName="doomed", tags=[{"key": "t", "value": "1"}])["cluster"]["clusterArn"]
        c.create_cluster(clusterName="doomed2")
        c.delete_cluster(cluster="doomed2")  # an INACTIVE one too
        td = c.register_task_definition(**h.td_min("doomed", tags=[{"key": "t", "value": "1"}]))
        td_arn = td["taskDefinition"]["taskDefinitionArn"]
        c.register_task_definition(**h.td_min("doomed"))
        c.deregister_task_definition(taskDefinition="doomed:2")
        c.tag_resource(resourceArn=cl, tags=[{"key": "u", "value": "2"}])
        # A service (EC2, nothing to place it on: no task runs) with tags and a service deployment.
        svc = c.create_service(cluster="doomed", serviceName="svc", taskDefinition=td_arn, desiredCount=0,
                               launchType="EC2", tags=[{"key": "t", "value": "1"}])["service"]["serviceArn"]
        # An account setting and a capacity provider (issue 10's owners have account reapers too).
        c.put_account_setting_default(name="containerInsights", value="enhanced")
        c.create_capacity_provider(name="doomed-cp", autoScalingGroupProvider={"autoScalingGroupArn": "doomed-asg"},
                                   tags=[{"key": "t", "value": "1"}])
        # A bystander account keeps its things.
        bystander_cluster = self.ecs.create_cluster(clusterName="doomed",
                                                    tags=[{"key": "keep", "value": "1"}])["cluster"]["clusterArn"]

        h.admin(self.state_dir, "delete-account", "--account", acct)
        self.assertNotIn(acct, [a["account"] for a in h.admin(self.state_dir, "list-accounts")])

        # The deleted key stops working (the server may cache keys for up to ~1 s).
        def key_rejected():
            try:
                c.list_clusters()
                return False
            except ClientError as e:
                return e.response["Error"]["Code"]
        code = wait_until(key_rejected, timeout=5.0)
        self.assertEqual(code, "UnrecognizedClientException")

        # Recreate the same account id with a new key: nothing of the old account remains.
        _, kid2, sec2 = h.create_account(self.state_dir, acct, "reborn")
        c2 = h.ecs_client(self.server.endpoint, kid2, sec2)
        self.assertEqual(c2.list_clusters()["clusterArns"], [])
        d = c2.describe_clusters(clusters=["doomed", "doomed2"])
        self.assertEqual(d["clusters"], [])
        self.assertEqual([f["reason"] for f in d["failures"]], ["MISSING", "MISSING"])
        self.assertEqual(c2.list_task_definition_families(status="ALL")["families"], [])
        self.assertEqual(c2.list_task_definitions()["taskDefinitionArns"], [])
        self.assertEqual(c2.list_task_definitions(status="INACTIVE")["taskDefinitionArns"], [])
        with self.assertRaises(ClientError) as cm:
            c2.describe_task_definition(taskDefinition=td_arn)
        self.assertEqual(cm.exception.response["Error"]["Code"], "ClientException")
        with self.assertRaises(ClientError):
            c2.list_tags_for_resource(resourceArn=cl)
        # Recreated resources start clean: no old tags, revisions from 1, no services.
        c2.create_cluster(clusterName="doomed")
        self.assertEqual(c2.list_tags_for_resource(resourceArn=cl)["tags"], [])
        self.assertEqual(c2.list_services(cluster="doomed")["serviceArns"], [])
        d = c2.describe_services(cluster="doomed", services=[svc])
        self.assertEqual((d["services"], [f["reason"] for f in d["failures"]]), ([], ["MISSING"]))
        with self.assertRaises(ClientError) as cm:
            c2.list_service_deployments(cluster="doomed", service="svc")
        self.assertEqual(cm.exception.response["Error"]["Code"], "ServiceNotFoundException")
        again = c2.register_task_definition(**h.td_min("doomed"))["taskDefinition"]
        self.assertEqual(again["revision"], 1)
        self.assertEqual(c2.list_tags_for_resource(resourceArn=td_arn)["tags"], [])
        self.assertEqual(c2.list_account_settings()["settings"], [])
        cp = c2.describe_capacity_providers(capacityProviders=["doomed-cp"])
        self.assertEqual((cp["capacityProviders"], [f["reason"] for f in cp["failures"]]), ([], ["MISSING"]))
        c2.create_capacity_provider(name="doomed-cp", autoScalingGroupProvider={"autoScalingGroupArn": "doomed-asg"})
        # The old key is still dead; the bystander is untouched.
        self.assertEqual(key_rejected(), "UnrecognizedClientException")
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=bystander_cluster)["tags"],
                         [{"key": "keep", "value": "1"}])

    def test_empty_account_id_is_refused(self):
        before = h.admin(self.state_dir, "list-accounts")
        rc, out, _ = h.admin(self.state_dir, "create-account", "--id", "", check=False)
        self.assertNotEqual(rc, 0, f"--id '' accepted: {out}")
        self.assertEqual(h.admin(self.state_dir, "list-accounts"), before)

    def test_delete_unknown_account(self):
        rc, _, err = h.admin(self.state_dir, "delete-account", "--account", "000011112222", check=False)
        self.assertNotEqual(rc, 0)
        self.assertTrue(err.strip(), "no error message")


if __name__ == "__main__":
    unittest.main()
