"""The DNS server of awsvpc tasks (issue 13 §3; agent/dns_service.h), end to end: a real server whose
[dns] upstreams is a tiny DNS responder this test runs on 127.0.0.1, and real busybox Fargate tasks.

- A task's /etc/resolv.conf names 169.254.169.253, and `nslookup` inside the task resolves an
  external name through the node's DNS server, which forwarded it to the test's responder (which
  saw the question); over TCP too, and at the VPC's base + 2 (172.31.0.2).
- (A container's dnsServers would win, `TaskFilesText.DnsNamesHostsAndResolvConf`; registration
  refuses them under awsvpc, as AWS does.)
- The door is port 53 only: from a task, other TCP and UDP ports of 169.254.169.253 and 172.31.0.2
  are closed (the router's input hook drops them), and the node's own services stay unreachable.

Needs root, crun, nft, nsenter and busybox-static (with its nslookup applet)."""

import os
import socket
import struct
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_security_network import in_task, netns_of, stop_all, stop_and_wait, tcp_from  # noqa: E402

NAME = "outside.paddock-test.example"
ADDRESS = "192.0.2.55"
PAGE = "dns\n"


def skip_reason():
    return th.skip_reason(tools=("crun", "nft", "nsenter"))


class Responder:
    """A DNS responder on 127.0.0.1, UDP and TCP on one port: A NAME → ADDRESS, NODATA for NAME's
    other types, NXDOMAIN for anything else. Records the (name, type)s it was asked."""

    def __init__(self):
        while True:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.bind(("127.0.0.1", 0))
            self.port = self.sock.getsockname()[1]
            self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                self.tcp.bind(("127.0.0.1", self.port))
                break
            except OSError:  # that port's TCP is taken: another pair
                self.sock.close()
                self.tcp.close()
        self.tcp.listen(8)
        self.asked = []
        threading.Thread(target=self._serve, daemon=True).start()
        threading.Thread(target=self._serve_tcp, daemon=True).start()

    def _serve_tcp(self):
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    data = b""
                    while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    reply = self.answer(data[2:])
                    if reply:
                        conn.sendall(struct.pack("!H", len(reply)) + reply)
                except OSError:
                    pass

    def _serve(self):
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            reply = self.answer(data)
            if reply:
                self.sock.sendto(reply, peer)

    def answer(self, q):
        if len(q) < 12:
            return None
        qid, flags, qd = struct.unpack("!HHH", q[:6])
        labels, i = [], 12
        while i < len(q) and q[i] != 0:
            n = q[i]
            labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace"))
            i += 1 + n
        if qd != 1 or i + 5 > len(q):
            return None
        qtype, _ = struct.unpack("!HH", q[i + 1:i + 5])
        question = q[12:i + 5]
        name = ".".join(labels).lower()
        self.asked.append((name, qtype))
        rd = flags & 0x0100
        if name != NAME:
            return struct.pack("!HHHHHH", qid, 0x8080 | rd | 3, 1, 0, 0, 0) + question
        if qtype != 1:
            return struct.pack("!HHHHHH", qid, 0x8080 | rd, 1, 0, 0, 0) + question
        record = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(ADDRESS)
        return struct.pack("!HHHHHH", qid, 0x8080 | rd, 1, 1, 0, 0) + question + record

    def close(self):
        self.sock.close()
        self.tcp.close()


def dns_query(name, qtype=1, qid=0x1234):
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack("!HH", qtype, 1)
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question


def udp_from(netns, ip, port, payload, timeout=2.0):
    """The reply a UDP socket inside the namespace gets from ip:port (b"" when none)."""
    code, out = in_task(netns, "python3", "-c",
                        "import socket,sys\n"
                        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                        f"s.settimeout({timeout})\n"
                        f"s.sendto(sys.stdin.buffer.read(),({ip!r},{port}))\n"
                        "try:\n sys.stdout.buffer.write(s.recv(4096))\n"
                        "except OSError:\n pass\n",
                        input=payload, timeout=timeout + 5)
    return out if code == 0 else b""


def tcp_dns_from(netns, ip, payload, timeout=2.0):
    """The DNS message a TCP client inside the namespace gets back for `payload` (RFC 7766: both
    with a two-octet length prefix) from ip:53, without its prefix (b"" when none)."""
    code, out = in_task(netns, "python3", "-c",
                        "import socket,struct,sys\n"
                        f"s=socket.create_connection(({ip!r},53),timeout={timeout})\n"
                        "q=sys.stdin.buffer.read()\n"
                        "s.sendall(struct.pack('!H',len(q))+q)\n"
                        "b=b''\n"
                        "while len(b)<2 or len(b)<2+struct.unpack('!H',b[:2])[0]:\n"
                        " c=s.recv(4096)\n"
                        " if not c: break\n"
                        " b+=c\n"
                        "sys.stdout.buffer.write(b[2:])\n",
                        input=payload, timeout=timeout + 5)
    return out if code == 0 else b""


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskDns(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        cls.responder = Responder()
        cls.addClassCleanup(cls.responder.close)
        cls.CONFIG = f'[dns]\nupstreams = ["127.0.0.1:{cls.responder.port}"]\n'
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:dns", PAGE, applets=("nslookup", "sleep"))
        ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        # The first subnet: 172.31.0.2 (base + 2) is then in the task's own subnet.
        cls.subnet = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]
        cls.ecs.create_cluster(clusterName="default")
        cls.addClassCleanup(stop_all, cls.ecs)
        # What the container sees: its resolv.conf and nslookup's answer, served on 8080.
        probe = (f"cat /etc/resolv.conf > /www/resolv.txt; nslookup {NAME} > /www/lookup.txt 2>&1; "
                 "httpd -f -p 8080 -h /www")
        cls.ecs.register_task_definition(
            family="dns", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:dns", "essential": True, "stopTimeout": 1,
                                   "entryPoint": ["sh", "-c"], "command": [probe],
                                   "portMappings": [{"containerPort": 8080}]}])

    def run_task(self, family):
        r = self.ecs.run_task(cluster="default", taskDefinition=family, launchType="FARGATE",
                              networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.addCleanup(stop_and_wait, self.ecs, [arn])
        task = th.wait_for_status(self, self.ecs, "default", arn, "RUNNING", context=self.server.log_tail)
        ip = th.task_ip(task)
        self.assertEqual(th.fetch(f"http://{ip}:8080/"), PAGE)
        return ip, netns_of(arn)

    def test_a_task_resolves_an_external_name_through_the_node(self):
        ip, netns = self.run_task("dns")
        self.assertEqual(th.fetch(f"http://{ip}:8080/resolv.txt"), "nameserver 169.254.169.253\nsearch ec2.internal\n")
        lookup = th.fetch(f"http://{ip}:8080/lookup.txt")
        self.assertIn(ADDRESS, lookup, lookup)
        self.assertIn((NAME, 1), self.responder.asked)
        # The same server at the VPC's base + 2, and over TCP.
        code, out = in_task(netns, "busybox", "nslookup", NAME, "172.31.0.2")
        self.assertEqual(code, 0, out)
        self.assertIn(ADDRESS.encode(), out)
        answer = tcp_dns_from(netns, "169.254.169.253", dns_query(NAME))
        self.assertGreater(len(answer), 12, answer)
        self.assertEqual(answer[:2], b"\x12\x34")  # the client's id
        self.assertIn(socket.inet_aton(ADDRESS), answer)
        # A name the upstream does not know: its NXDOMAIN, passed through.
        reply = udp_from(netns, "169.254.169.253", 53, dns_query("nothing.paddock-test.example", qid=0x4321))
        self.assertEqual(reply[:2], b"\x43\x21")
        self.assertEqual(reply[3] & 0x0f, 3, reply)

    def test_only_port_53_of_the_resolver_addresses_is_reachable(self):
        _, netns = self.run_task("dns")
        for address in ("169.254.169.253", "172.31.0.2"):
            self.assertNotEqual(udp_from(netns, address, 53, dns_query(NAME)), b"", address)
            for port in (22, 80, 4566, 5353, 54, 52):
                self.assertEqual(tcp_from(netns, address, port, timeout=1.0), b"", (address, port))
            for port in (54, 5353, self.responder.port):
                self.assertEqual(udp_from(netns, address, port, dns_query(NAME), timeout=1.0), b"", (address, port))
        # The router's other addresses do not answer DNS either (nothing listens there).
        self.assertEqual(udp_from(netns, "172.31.0.1", 53, dns_query(NAME), timeout=1.0), b"")
        self.assertServerAlive()


if __name__ == "__main__":
    unittest.main()
