"""The JSON 1.0 toy as botocore sees it: a client built from the toy's own model sends
application/x-amz-json-1.0 with X-Amz-Target, signs with SigV4, and parses answers and
"__type"s that carry full shape IDs. Run by ToyCountersServiceTest.BotocoreClientAgrees, which
serves the toy and passes TOY_ENDPOINT, TOY_KEY, TOY_SECRET and TOY_MODEL in the environment.
"""
import os
import shutil
import tempfile
import unittest

import botocore.config
import botocore.exceptions
import botocore.session

ENDPOINT = os.environ.get("TOY_ENDPOINT", "")


def make_client():
    data = tempfile.mkdtemp(prefix="paddock-toycounters-model-")
    os.makedirs(os.path.join(data, "toycounters", "2026-12-01"))
    shutil.copy(os.environ["TOY_MODEL"], os.path.join(data, "toycounters", "2026-12-01", "service-2.json"))
    session = botocore.session.get_session()
    session.get_component("data_loader").search_paths.insert(0, data)
    config = botocore.config.Config(parameter_validation=False, retries={"max_attempts": 1})
    return session.create_client("toycounters", region_name="eu-west-1", endpoint_url=ENDPOINT, config=config,
                                 aws_access_key_id=os.environ["TOY_KEY"],
                                 aws_secret_access_key=os.environ["TOY_SECRET"])


@unittest.skipUnless(ENDPOINT, "run by ToyCountersServiceTest.BotocoreClientAgrees")
class BotocoreClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = make_client()
        cls.sent = []
        cls.received = []
        cls.client.meta.events.register("before-send.*", lambda request, **kw: cls.sent.append(request))
        cls.client.meta.events.register("after-call.*", lambda http_response, **kw: cls.received.append(http_response))

    def test_calls_speak_json_1_0_both_ways(self):
        self.assertEqual(self.client.add_to_counter(Name="visits", Amount=2)["Value"], 2)
        self.assertEqual(self.client.add_to_counter(Name="visits", Amount=3)["Value"], 5)
        self.assertEqual(self.client.get_counter(Name="visits")["Value"], 5)
        self.assertEqual(self.sent[-1].headers["Content-Type"], b"application/x-amz-json-1.0")
        self.assertEqual(self.sent[-1].headers["X-Amz-Target"], b"ToyCounters_20261201.GetCounter")
        self.assertEqual(self.received[-1].headers["content-type"], "application/x-amz-json-1.0")

    def test_errors_parse_from_full_shape_ids(self):
        with self.assertRaises(botocore.exceptions.ClientError) as raised:
            self.client.get_counter(Name="nothing")
        err = raised.exception.response
        self.assertEqual(err["Error"]["Code"], "CounterNotFoundException")
        self.assertEqual(err["Error"]["Message"], "No counter named 'nothing' exists.")
        # The modelled exception class botocore generates from the model catches it too.
        with self.assertRaises(self.client.exceptions.CounterNotFoundException):
            self.client.get_counter(Name="nothing")
        with self.assertRaises(self.client.exceptions.ValidationException):
            self.client.add_to_counter(Name="visits", Amount=0)


if __name__ == "__main__":
    unittest.main()
