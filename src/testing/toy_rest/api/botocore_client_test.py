"""The REST-JSON toy as botocore sees it: a real botocore client built from the toy's own model
serializes every call (labels, greedy labels, query members, headers, prefixed headers, body),
signs it with SigV4, and parses every answer and error. Run by ToyFilesServiceTest.
BotocoreClientAgrees, which serves the toy and passes TOY_ENDPOINT, TOY_KEY, TOY_SECRET and
TOY_MODEL (the model's path) in the environment; its authorizer denies bucket "locked".
"""
import json
import os
import shutil
import tempfile
import unittest

import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials
import botocore.exceptions
import botocore.httpsession
import botocore.session

ENDPOINT = os.environ.get("TOY_ENDPOINT", "")
REGION = "eu-west-1"


def make_client():
    data = tempfile.mkdtemp(prefix="paddock-toyfiles-model-")
    os.makedirs(os.path.join(data, "toyfiles", "2026-12-01"))
    shutil.copy(os.environ["TOY_MODEL"], os.path.join(data, "toyfiles", "2026-12-01", "service-2.json"))
    session = botocore.session.get_session()
    session.get_component("data_loader").search_paths.insert(0, data)
    # Client-side validation off: the server's own validation is under test.
    config = botocore.config.Config(parameter_validation=False, retries={"max_attempts": 1})
    return session.create_client("toyfiles", region_name=REGION, endpoint_url=ENDPOINT, config=config,
                                 aws_access_key_id=os.environ["TOY_KEY"],
                                 aws_secret_access_key=os.environ["TOY_SECRET"])


def raw_send(method, path):
    """A hand-made request signed with botocore's SigV4 (for routes no operation has)."""
    request = botocore.awsrequest.AWSRequest(method=method, url=ENDPOINT + path)
    creds = botocore.credentials.Credentials(os.environ["TOY_KEY"], os.environ["TOY_SECRET"])
    botocore.auth.SigV4Auth(creds, "toyfiles", REGION).add_auth(request)
    return botocore.httpsession.URLLib3Session().send(request.prepare())


@unittest.skipUnless(ENDPOINT, "run by ToyFilesServiceTest.BotocoreClientAgrees")
class BotocoreClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = make_client()

    def error(self, call, **kwargs):
        with self.assertRaises(botocore.exceptions.ClientError) as raised:
            call(**kwargs)
        return raised.exception.response

    def test_every_binding_round_trips(self):
        key = "reports/2026/ü plan+b.txt"
        put = self.client.put_file(Bucket="docs", Key=key, Content="water the plants", Owner="alice",
                                   Overwrite=False, Metadata={"color": "blue"}, Tags=["home", "weekly"])
        self.assertEqual(put["ResponseMetadata"]["HTTPStatusCode"], 201)
        self.assertEqual(put["Version"], 1)
        got = self.client.get_file(Bucket="docs", Key=key)
        self.assertEqual((got["Key"], got["Content"], got["Owner"], got["Tags"], got["Metadata"]),
                         (key, "water the plants", "alice", ["home", "weekly"], {"color": "blue"}))
        self.assertEqual(got["ResponseMetadata"]["HTTPHeaders"]["content-type"], "application/json")

    def test_query_members_and_literal_query_routes(self):
        self.client.put_file(Bucket="q", Key="a.txt", Content="one", Owner="bob")
        err = self.error(self.client.put_file, Bucket="q", Key="a.txt", Content="two")
        self.assertEqual(err["Error"]["Code"], "FileExistsException")
        self.assertEqual(err["ResponseMetadata"]["HTTPStatusCode"], 409)
        self.assertIn("already exists", err["Error"]["Message"])
        self.assertEqual(self.client.put_file(Bucket="q", Key="a.txt", Content="two", Overwrite=True)["Version"], 2)
        self.assertEqual(self.client.get_file(Bucket="q", Key="a.txt", Version=1)["Content"], "one")
        self.assertEqual(self.client.list_file_versions(Bucket="q", Key="a.txt")["Versions"], [1, 2])
        self.client.put_file(Bucket="q", Key="b.txt", Content="x", Owner="carol")
        self.client.put_file(Bucket="q", Key="c.txt", Content="x", Owner="dave")
        self.assertEqual(self.client.list_files(Bucket="q", Owners=["carol", "dave"])["Keys"], ["b.txt", "c.txt"])
        self.assertEqual(self.client.list_files(Bucket="q", Prefix="b", MaxResults=1)["Keys"], ["b.txt"])

    def test_delete_then_the_models_not_found_error(self):
        self.client.put_file(Bucket="d", Key="x/y.txt", Content="x")
        deleted = self.client.delete_file(Bucket="d", Key="x/y.txt")
        self.assertEqual(deleted["ResponseMetadata"]["HTTPStatusCode"], 204)
        err = self.error(self.client.get_file, Bucket="d", Key="x/y.txt")
        self.assertEqual(err["Error"]["Code"], "FileNotFoundException")
        self.assertEqual(err["Error"]["Message"], "No file 'x/y.txt' in bucket 'd'.")  # the shape's "Message"
        self.assertEqual(err["ResponseMetadata"]["HTTPStatusCode"], 404)

    def test_bad_input_is_a_validation_error(self):
        err = self.error(self.client.list_files, Bucket="docs", MaxResults=0)
        self.assertEqual((err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]), ("ValidationException", 400))
        err = self.error(self.client.put_file, Bucket="docs", Key="no-content.txt")
        self.assertEqual(err["Error"]["Code"], "ValidationException")
        self.assertIn("Content", err["Error"]["Message"])

    def test_a_denied_principal_gets_403(self):
        err = self.error(self.client.put_file, Bucket="locked", Key="a.txt", Content="x")
        self.assertEqual((err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]), ("AccessDeniedException", 403))
        self.assertIn("toyfiles:PutFile", err["Error"]["Message"])

    def test_an_unknown_route_is_404_unknown_operation(self):
        for method, path in (("GET", "/nothing/here"), ("PATCH", "/buckets/docs/files/a.txt")):
            resp = raw_send(method, path)
            self.assertEqual(resp.status_code, 404, resp.content)
            self.assertEqual(resp.headers["x-amzn-ErrorType"], "UnknownOperationException")
            self.assertIn("message", json.loads(resp.content))


if __name__ == "__main__":
    unittest.main()
