"""Hostile and malformed input: every case gets a clean 4xx with an AWS-style JSON error, writes
nothing, and the server keeps serving."""

import json
import os
import socket
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402


def uniq(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class BadInput(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.signer = h.RawSigner(cls.key_id, cls.secret)
        cls.host = f"127.0.0.1:{cls.server.port}"

    def send(self, body, operation="RegisterTaskDefinition", target=None, method="POST", content_type=h.JSON_CT,
             timeout=30):
        if isinstance(body, str):
            body = body.encode()
        hdrs = self.signer.headers(self.host, body, operation=operation if target is None else None,
                                   target=target, method=method, content_type=content_type)
        status, rh, data = h.raw_request(self.server.port, method=method, body=body, headers=hdrs,
                                         timeout=timeout)
        return status, rh, data

    def assertCleanError(self, status, data, codes, http_status=400):
        self.assertEqual(status, http_status, data[:500])
        self.assertEqual(h.validate_error_body(data), [], data[:500])
        body = json.loads(data)
        if isinstance(codes, str):
            codes = (codes,)
        self.assertIn(body["__type"], codes, body)
        return body

    def assertStillServing(self):
        self.assertTrue(self.server.alive(), self.server.log_tail())
        fam = uniq("after")
        r = self.ecs.register_task_definition(**h.td_min(fam))
        self.assertEqual(r["taskDefinition"]["revision"], 1)

    def assertNothingWritten(self, family):
        self.assertEqual(self.ecs.list_task_definitions(familyPrefix=family)["taskDefinitionArns"], [])

    # --- body syntax -------------------------------------------------------------------------

    def test_malformed_json(self):
        for body in ('{"family": ', '{"family": "x",}', "{'family': 'x'}", "not json at all", '{"a":1}}',
                     '{"family": "x" "containerDefinitions": []}', "\x00\x01\x02", '{"family": NaN}'):
            with self.subTest(body=body):
                status, _, data = self.send(body)
                self.assertCleanError(status, data, "SerializationException")
        self.assertStillServing()

    def test_body_not_an_object(self):
        for body in ("[]", '"string"', "123", "null", "true"):
            with self.subTest(body=body):
                status, _, data = self.send(body, operation="ListClusters")
                self.assertCleanError(status, data, "SerializationException")
        self.assertStillServing()

    def test_empty_body_for_no_arg_operation(self):
        status, _, data = self.send(b"", operation="ListClusters")
        self.assertEqual(status, 200, data)
        self.assertEqual(h.validate_output("ListClusters", data), [])

    def test_deeply_nested_json(self):
        depth = 10000
        fam = uniq("deep")
        for body in ('{"family": "%s", "containerDefinitions": %s%s}' % (fam, "[" * depth, "]" * depth),
                     '{"family": "%s", "x": %s%s}' % (fam, '{"a":' * depth, "}" * depth),
                     "[" * depth):
            with self.subTest(prefix=body[:40]):
                status, _, data = self.send(body)
                self.assertCleanError(status, data, ("SerializationException", "ClientException",
                                                     "InvalidParameterException"))
        self.assertNothingWritten(fam)
        self.assertStillServing()

    def test_invalid_utf8(self):
        fam = uniq("utf")
        for raw in (b'{"family": "' + fam.encode() + b'\xff\xfe", "containerDefinitions": []}',
                    b'{"family": "' + fam.encode() + b'", "containerDefinitions": [{"name": "a\xc3", '
                    b'"image": "b", "memory": 8}]}',
                    b'{"family": "\xed\xa0\x80"}'):  # encoded surrogate
            with self.subTest(raw=raw):
                status, _, data = self.send(raw)
                self.assertCleanError(status, data, ("SerializationException", "ClientException"))
        self.assertNothingWritten(fam)
        self.assertStillServing()

    # --- types and required members ---------------------------------------------------------

    def test_wrong_member_types(self):
        fam = uniq("types")
        good_c = [{"name": "a", "image": "b", "memory": 8}]
        cases = [
            {"family": 123, "containerDefinitions": good_c},
            {"family": fam, "containerDefinitions": "not-a-list"},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": "lots"}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8, "essential": "yes"}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8.5}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8,
                                                      "environment": {"A": "1"}}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8,
                                                      "dockerLabels": ["x"]}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 99999999999999999999}]},
            {"family": fam, "containerDefinitions": [good_c[0], 7]},
            {"family": None, "containerDefinitions": good_c},
            {"family": fam, "containerDefinitions": good_c, "tags": [{"key": 1, "value": "v"}]},
        ]
        for req in cases:
            with self.subTest(req=req):
                status, _, data = self.send(json.dumps(req))
                self.assertCleanError(status, data, ("SerializationException", "ClientException",
                                                     "InvalidParameterException"))
        status, _, data = self.send('{"maxResults": "ten"}', operation="ListClusters")
        self.assertCleanError(status, data, ("SerializationException", "InvalidParameterException"))
        status, _, data = self.send('{"maxResults": 1e999999}', operation="ListClusters")
        self.assertCleanError(status, data, ("SerializationException", "InvalidParameterException"))
        status, _, data = self.send('{"maxResults": 10.5}', operation="ListClusters")
        self.assertCleanError(status, data, ("SerializationException", "InvalidParameterException"))
        status, _, data = self.send('{"clusters": "c1"}', operation="DescribeClusters")
        self.assertCleanError(status, data, ("SerializationException", "InvalidParameterException"))
        self.assertNothingWritten(fam)
        self.assertStillServing()

    def test_missing_required_members(self):
        fam = uniq("req")
        cases = [
            ("RegisterTaskDefinition", {"containerDefinitions": [{"name": "a", "image": "b", "memory": 8}]}),
            ("RegisterTaskDefinition", {"family": fam}),
            ("RegisterTaskDefinition", {"family": "", "containerDefinitions": [{"name": "a", "image": "b",
                                                                                 "memory": 8}]}),
            ("RegisterTaskDefinition", {"family": fam, "containerDefinitions": []}),
            ("RegisterTaskDefinition", {"family": fam, "containerDefinitions": [{"image": "b", "memory": 8}]}),
            ("DescribeTaskDefinition", {}),
            ("DeregisterTaskDefinition", {}),
            ("DeleteTaskDefinitions", {}),
            ("TagResource", {"tags": [{"key": "a", "value": "b"}]}),
            ("TagResource", {"resourceArn": f"arn:aws:ecs:us-east-1:{self.account}:cluster/x"}),
            ("UntagResource", {"resourceArn": f"arn:aws:ecs:us-east-1:{self.account}:cluster/x"}),
            ("ListTagsForResource", {}),
            ("UpdateClusterSettings", {"cluster": "x"}),
            ("PutClusterCapacityProviders", {"cluster": "x", "capacityProviders": []}),
            ("UpdateCluster", {}),
        ]
        for op, req in cases:
            with self.subTest(op=op, req=req):
                status, _, data = self.send(json.dumps(req), operation=op)
                self.assertCleanError(status, data, ("ClientException", "InvalidParameterException",
                                                     "SerializationException", "ClusterNotFoundException"))
        status, _, data = self.send(json.dumps(cases[2][1]))
        self.assertEqual(json.loads(data).get("message"), "Family can not be blank.")
        self.assertNothingWritten(fam)
        self.assertStillServing()

    def test_too_many_containers(self):
        fam = uniq("many")
        req = {"family": fam, "containerDefinitions": [
            {"name": f"c{i}", "image": "busybox", "memory": 8} for i in range(1000)]}
        status, _, data = self.send(json.dumps(req))
        self.assertCleanError(status, data, ("ClientException", "InvalidParameterException"))
        self.assertNothingWritten(fam)
        self.assertStillServing()

    def test_oversized_body(self):
        fam = uniq("big")
        pad = "x" * (2 * 1024 * 1024)
        req = {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8,
                                                         "environment": [{"name": "PAD", "value": pad}]}]}
        try:
            status, _, data = self.send(json.dumps(req))
        except (ConnectionResetError, BrokenPipeError) as e:
            self.fail(f"server reset the connection instead of answering 413: {e!r}")
        self.assertCleanError(status, data, ("RequestEntityTooLargeException", "SerializationException",
                                             "ClientException", "ValidationException",
                                             "RequestTooLargeException"), http_status=413)
        self.assertNothingWritten(fam)
        self.assertStillServing()

    # --- protocol --------------------------------------------------------------------------

    def test_unknown_or_missing_target(self):
        for target in (f"{h.TARGET_PREFIX}.NoSuchThing", f"{h.TARGET_PREFIX}.", "SomethingElse.ListClusters",
                       "AmazonEC2ContainerServiceV20141113", f"{h.TARGET_PREFIX}.ListClusters.extra", ""):
            with self.subTest(target=target):
                status, _, data = self.send("{}", target=target)
                self.assertCleanError(status, data, "UnknownOperationException")
        # No target header at all.
        body = b"{}"
        hdrs = self.signer.headers(self.host, body)
        status, _, data = h.raw_request(self.server.port, body=body, headers=hdrs)
        self.assertCleanError(status, data, ("UnknownOperationException", "MissingAuthenticationTokenException"))
        self.assertStillServing()

    def test_get_and_other_methods(self):
        for method in ("GET", "PUT", "DELETE", "HEAD"):
            with self.subTest(method=method):
                hdrs = self.signer.headers(self.host, b"", operation="ListClusters", method=method)
                status, _, data = h.raw_request(self.server.port, method=method, headers=hdrs)
                self.assertGreaterEqual(status, 400)
                self.assertLess(status, 500)
                if method != "HEAD":
                    self.assertEqual(h.validate_error_body(data), [], data)
        status, _, data = h.raw_request(self.server.port, method="GET", path="/")
        self.assertGreaterEqual(status, 400)
        self.assertLess(status, 500)
        self.assertStillServing()

    def test_wrong_content_type(self):
        status, _, data = self.send("{}", operation="ListClusters", content_type="text/plain")
        self.assertGreaterEqual(status, 400, data)
        self.assertLess(status, 500)
        self.assertEqual(h.validate_error_body(data), [], data)
        self.assertStillServing()

    def _raw_socket(self, payload, read=True):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        try:
            s.sendall(payload)
            if not read:
                return b""
            chunks = []
            try:
                while True:
                    c = s.recv(65536)
                    if not c:
                        break
                    chunks.append(c)
            except (socket.timeout, ConnectionResetError):
                pass
            return b"".join(chunks)
        finally:
            s.close()

    def test_garbage_http(self):
        payloads = [
            b"GARBAGE\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(200),  # a TLS ClientHello-ish
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n\r\n",
            b"POST / HTTP/1.1\r\n" + b"X-Long: " + b"a" * 200000 + b"\r\n\r\n",
            b"POST / HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n",
            b"POST /\x00\x01 HTTP/9.9\r\n\r\n",
            os.urandom(4096),
        ]
        for p in payloads:
            with self.subTest(payload=p[:40]):
                resp = self._raw_socket(p)
                if resp:
                    self.assertTrue(resp.startswith(b"HTTP/1.1 4"), resp[:200])
                self.assertTrue(self.server.alive(), self.server.log_tail())
        # Half a request, then the client goes away.
        self._raw_socket(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"fa", read=False)
        self.assertStillServing()

    def test_hostile_values_are_rejected_cleanly(self):
        fam = uniq("vals")
        cases = [
            {"family": "a" * 256, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": -1}]},
            {"family": fam, "containerDefinitions": [{"name": "a b", "image": "b", "memory": 8}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8},
                                                     {"name": "a", "image": "b", "memory": 8}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8}],
             "networkMode": "quantum"},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8}],
             "tags": [{"key": f"k{i}", "value": "v"} for i in range(51)]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b", "memory": 8,
                                                      "dependsOn": [{"containerName": "ghost",
                                                                     "condition": "START"}]}]},
            {"family": fam, "containerDefinitions": [{"name": "a", "image": "b"}]},
        ]
        for req in cases:
            with self.subTest(req=str(req)[:120]):
                status, _, data = self.send(json.dumps(req))
                self.assertCleanError(status, data, ("ClientException", "InvalidParameterException"))
        self.assertNothingWritten(fam)
        self.assertStillServing()


if __name__ == "__main__":
    unittest.main()
