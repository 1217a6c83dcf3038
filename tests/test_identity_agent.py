"""The identity sidecar's program (ADR D8; deploy/identity.cc kIdentityAgentScript) run by busybox
against a scripted exchange endpoint, in a mount namespace of its own with a tmpfs at
/var/run/secrets (its fixed directory), with only the busybox applets its image has: the credential
and each audience's token written whole, `--check` failing until then and passing after with no
environment, each token refreshed at half the lifetime the endpoint gives, and a refused exchange
retried after a backoff instead of ending the agent.

Needs root (a mount namespace) and busybox-static."""

import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "src", "deploy", "identity.cc")
BUSYBOX = "/bin/busybox"
APPLETS = ("sh", "wget", "sed", "mv", "mkdir", "sleep", "timeout", "cat", "printf", "echo", "ls")  # the image's


def agent_script():
    text = open(SOURCE).read()
    return re.search(r'R"SH\((.*?)\)SH"', text, re.S).group(1)


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (a mount namespace)"
    if not os.path.exists(BUSYBOX) or not shutil.which("unshare"):
        return "needs busybox-static and unshare"
    return None


class Exchange(http.server.ThreadingHTTPServer):
    """Answers POST /v1/identity/token: each call logged; `refuse` calls answered 401 first; tokens
    numbered so that a refresh is told from the first."""

    def __init__(self, expires_in, refuse=0, delay=0.0):
        self.calls, self.expires_in, self.refuse, self.delay = [], expires_in, refuse, delay
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with self.server.lock:
            self.server.calls.append((self.headers.get("Authorization"), body, time.monotonic()))
            n = len(self.server.calls)
            refused = n <= self.server.refuse
        time.sleep(self.server.delay)  # (a slow control plane: the check before it answers fails)
        if refused:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        out = json.dumps({"token": f"t{n}.{body['audience'].replace('/', '_')}",
                          "expires_in": self.server.expires_in, "token_type": "Bearer"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class IdentityAgent(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="paddock-identity-agent-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # The agent's PATH holds only its image's applets; the observing shell's a few more.
        for directory, applets in (("bin", APPLETS), ("observer", APPLETS + ("mount", "grep", "env"))):
            os.makedirs(os.path.join(self.tmp, directory))
            for applet in applets:
                os.symlink(BUSYBOX, os.path.join(self.tmp, directory, applet))
        self.script = os.path.join(self.tmp, "paddock-identity-agent")
        with open(self.script, "w") as f:
            f.write(agent_script())

    def run_agent(self, exchange, audiences, observe):
        """Starts the agent in its own mount namespace and runs `observe` (a shell snippet) there
        beside it; returns observe's output. The agent dies with the namespace's shell."""
        url = f"http://127.0.0.1:{exchange.server_address[1]}/v1/identity/token"
        inner = (f"mkdir -p /run/secrets && mount -t tmpfs tmpfs /run/secrets || exit 9; "
                 f"PADDOCK_IDENTITY_CREDENTIAL=pdi.d1.c0ffee PADDOCK_IDENTITY_TOKEN_URL={url} "
                 f"PADDOCK_IDENTITY_AUDIENCES='{audiences}' PADDOCK_IDENTITY_TOKEN_TTL_SECONDS=60 "
                 f"PATH={self.tmp}/bin sh {self.script} & agent=$!; {observe}; kill $agent")
        threading.Thread(target=exchange.serve_forever, daemon=True).start()
        self.addCleanup(exchange.server_close)
        self.addCleanup(exchange.shutdown)
        env = {"PATH": os.path.join(self.tmp, "observer")}
        # A PID namespace too: when its first process (this shell) ends, the agent and its sleep go with it.
        r = subprocess.run([shutil.which("unshare"), "-m", "-p", "-f", "--propagation", "private",
                            BUSYBOX, "sh", "-c", inner], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    # A shell loop that waits (bounded) for `condition`, then prints `show`.
    @staticmethod
    def until(condition, show, seconds=20):
        return (f"i=0; until {condition}; do i=$((i+1)); [ $i -gt {seconds * 10} ] && echo TIMEOUT && break; "
                f"sleep 0.1; done; {show}")

    def test_writes_the_credential_and_tokens_then_passes_its_check_without_an_environment(self):
        d = "/var/run/secrets/paddock/identity"
        out = self.run_agent(
            Exchange(expires_in=3600, delay=0.5), "api=https://api.example.com vault.jwt=vault",
            f"sh {self.script} --check; echo before=$?; "
            + self.until(f"[ -e {d}/.ready ]",
                         f"env -i {BUSYBOX} sh {self.script} --check; echo after=$?; "
                         f"cat {d}/credential; echo; cat {d}/tokens/api; echo; cat {d}/tokens/vault.jwt; echo; "
                         f"ls -a {d}/tokens"))
        lines = out.splitlines()
        self.assertNotIn("TIMEOUT", lines)
        self.assertEqual(lines[0], "before=1")
        self.assertEqual(lines[1], "after=0")
        self.assertEqual(lines[2], "pdi.d1.c0ffee")
        self.assertEqual(lines[3:5], ["t1.https:__api.example.com", "t2.vault"])  # in the order given
        self.assertNotIn(".api", out, "no half-written file is left")

    def test_refreshes_each_token_at_half_its_lifetime(self):
        exchange = Exchange(expires_in=2)  # half: 1 s (less up to a fifth: 0 here)
        d = "/var/run/secrets/paddock/identity"
        out = self.run_agent(exchange, "api=aud",
                             self.until(f"grep -q t3 {d}/tokens/api 2>/dev/null", f"cat {d}/tokens/api", seconds=10))
        self.assertEqual(out.strip(), "t3.aud")
        times = [t for _, _, t in exchange.calls]
        self.assertGreaterEqual(len(times), 3)
        for a, b in zip(times, times[1:]):
            self.assertGreaterEqual(b - a, 0.8, times)  # refreshed after the half-life, not in a tight loop
        auth, body, _ = exchange.calls[0]
        self.assertEqual(auth, "Bearer pdi.d1.c0ffee")
        self.assertEqual(body, {"audience": "aud", "ttl_seconds": 60})

    def test_a_refused_exchange_is_retried_after_a_backoff(self):
        exchange = Exchange(expires_in=3600, refuse=1)
        d = "/var/run/secrets/paddock/identity"
        out = self.run_agent(exchange, "api=aud",
                             f"sh {self.script} --check; echo refused=$?; "
                             + self.until(f"[ -e {d}/.ready ]", f"cat {d}/tokens/api"))
        self.assertEqual(out.splitlines(), ["refused=1", "t2.aud"])
        (_, _, first), (_, _, second) = exchange.calls[:2]
        self.assertGreaterEqual(second - first, 1.8, "the first retry waits 2 s")


if __name__ == "__main__":
    unittest.main()
