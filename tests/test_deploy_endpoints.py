"""The deploy controller on an https endpoint (issue 15: "any ECS endpoint").

`paddock controller --endpoint https://HOST:PORT` speaks TLS to its endpoint, checking the
certificate against `--ca-bundle` (else the system's CAs) and the host it was given. Here the
endpoint is a TLS proxy (a certificate made with openssl for IP 127.0.0.1) in front of
`paddock server`: a controller trusting that certificate deploys (a secret, PutParameter and
CreateService over TLS), and stops and retires; one that does not trust it refuses to start,
naming the certificate; `--ca-bundle` with an http endpoint is refused. `--service-endpoint
SERVICE=URL` sends one service elsewhere (how AWS's own endpoints, one host per service, are
reached: `--endpoint aws`). Needs openssl."""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_harness as dh  # noqa: E402
import paddock_harness as h  # noqa: E402

SPEC = """\
[project]
name = "tls"

[containers.web]
image = "busybox:tls"
port = 8080

[deploy]
replicas = 0
"""


@unittest.skipIf(shutil.which("openssl") is None, "no openssl to make the endpoint's certificate")
class HttpsEndpoint(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        state_dir = dh.prepare_class(cls, "paddock-deploy-tls-")
        _, key_id, secret = h.create_account(state_dir, name="main")
        cls.server = h.Server(state_dir, env=cls.env).start()
        cls.addClassCleanup(cls.server.stop)
        cls.backend = dh.Backend("paddock", cls.server.endpoint, (key_id, secret), cls.server.log_tail)
        cls.cert, cls.key = os.path.join(cls.tmp, "cert.pem"), os.path.join(cls.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", cls.key, "-out", cls.cert, "-days", "1", "-subj", "/CN=paddock-test",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        cls.proxy = dh.KillingProxy(cls.server.endpoint, tls=(cls.cert, cls.key))
        cls.addClassCleanup(cls.proxy.stop)

    def test_a_controller_trusting_the_certificate_deploys_and_retires_over_tls(self):
        self.assertTrue(self.proxy.endpoint.startswith("https://"))
        ctl = dh.Controller(self, self.backend, os.path.join(self.tmp, "trusting"), endpoint=self.proxy.endpoint,
                            extra=("--ca-bundle", self.cert, "--log-group", ""))
        ctl.paddock("env", "set", "--secret", "--project", "tls", "TOKEN", "over-tls")
        d1 = ctl.deploy(SPEC)
        ctl.wait_state(d1, "Healthy")
        ctl.paddock("deployments", "stop", d1)
        ctl.wait_until("the retirement", lambda: ctl.show(d1)["retired"])
        through = {a for a, status in self.proxy.calls_since(0) if status == 200}
        self.assertTrue({"DescribeClusters", "GetCallerIdentity", "PutParameter", "RegisterTaskDefinition",
                         "CreateService", "DeleteService", "DeleteParameters"} <= through, ctl.context())

    def test_a_service_with_its_own_endpoint_is_called_there(self):
        """`--service-endpoint ssm=URL`: the secrets' calls go to that endpoint (here plain HTTP) and
        nowhere else; every other service's go to `--endpoint` (here HTTPS)."""
        ssm = dh.KillingProxy(self.server.endpoint)
        self.addCleanup(ssm.stop)
        mark = self.proxy.mark()
        ctl = dh.Controller(self, self.backend, os.path.join(self.tmp, "split"), endpoint=self.proxy.endpoint,
                            extra=("--ca-bundle", self.cert, "--log-group", "", "--class", "split",
                                   "--service-endpoint", f"ssm={ssm.endpoint}"))
        ctl.paddock("env", "set", "--secret", "--project", "tls", "TOKEN", "split")
        d1 = ctl.deploy(SPEC)
        ctl.wait_state(d1, "Healthy")
        ctl.paddock("deployments", "stop", d1)
        ctl.wait_until("the retirement", lambda: ctl.show(d1)["retired"])
        secrets = {"PutParameter", "GetParametersByPath", "DeleteParameters"}
        self.assertEqual({a for a, _ in ssm.calls_since(0)}, secrets, ctl.context())
        shared = {a for a, _ in self.proxy.calls_since(mark)}
        self.assertFalse(shared & secrets, shared)
        self.assertIn("CreateService", shared)

    def controller_refused(self, *args):
        r = subprocess.run([h.paddock_bin(), "controller", "--listen", "127.0.0.1:0",
                            "--state-dir", os.path.join(self.tmp, "refused"), *args],
                           capture_output=True, text=True, env=self.env, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        return r.stderr

    def test_an_untrusted_certificate_stops_the_start_naming_it(self):
        creds = os.path.join(self.tmp, "creds")
        with open(creds, "w") as f:
            f.write(f"[paddock]\naws_access_key_id = {self.backend.key[0]}\n"
                    f"aws_secret_access_key = {self.backend.key[1]}\n")
        stderr = self.controller_refused("--endpoint", self.proxy.endpoint, "--credentials", creds,
                                         "--subnet", self.backend.subnets[0])
        self.assertIn("cannot start: cluster:", stderr)
        self.assertIn("self-signed certificate", stderr)
        stderr = self.controller_refused("--endpoint", self.server.endpoint, "--ca-bundle", self.cert,
                                         "--credentials", creds)
        self.assertIn("--ca-bundle is for an https:// --endpoint", stderr)
        stderr = self.controller_refused("--endpoint", self.proxy.endpoint, "--ca-bundle", creds,
                                         "--credentials", creds)
        self.assertIn("--ca-bundle", stderr)


if __name__ == "__main__":
    unittest.main()
