"""The DNS server of awsvpc tasks (issue 13 §3; agent/dns_service.h), end to end: a real server whose
[dns] upstreams is a tiny DNS responder this test runs on 127.0.0.1, and real busybox Fargate tasks.

- A task's /etc/resolv.conf names 169.254.169.253, and `nslookup` inside the task resolves an
  external name through the node's DNS server, which forwarded it to the test's responder (which
  saw the question); over TCP too, and at the VPC's base + 2 (172.31.0.2).
- (A container's dnsServers would win, `TaskFilesText.DnsNamesHostsAndResolvConf`; registration
  refuses them under awsvpc, as AWS does.)
- The door is port 53 only: from a task, other TCP and UDP ports of 169.254.169.253 and 172.31.0.2
  are closed (the router's input hook drops them), and the node's own services stay unreachable.
- Cloud Map's private namespaces are answered by the node (cloudmap::DnsAuthority): a task sees its
  account's `web.internal` instances as they are registered and deregistered through the API, the
  name never reaches the upstream, and another account's task asking it gets the upstream's NXDOMAIN.
  An ECS service with serviceRegistries: its 3 tasks' addresses within 1 s of their RUNNING, then
  the one left after a scale-down to 1.

Needs root, crun, nft, nsenter and busybox-static (with its nslookup applet)."""

import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import task_harness as th  # noqa: E402
from test_cloudmap import sd_client  # noqa: E402
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


class WithUpstream(h.PaddockTestCase):
    """A server whose [dns] upstreams is a Responder of the class's own (cls.responder)."""

    @classmethod
    def setUpClass(cls):
        cls.responder = Responder()
        cls.addClassCleanup(cls.responder.close)
        cls.CONFIG = f'[dns]\nupstreams = ["127.0.0.1:{cls.responder.port}"]\n'
        super().setUpClass()


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskDns(WithUpstream):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:dns", PAGE, applets=("nslookup", "sleep"))
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)
        cls.subnet = cls.first_subnet(cls.ec2)
        cls.prepare_account(cls.ecs)

    @staticmethod
    def first_subnet(ec2):
        # The first subnet: 172.31.0.2 (base + 2) is then in the task's own subnet.
        return sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]

    @classmethod
    def prepare_account(cls, ecs):
        """The account's cluster "default" and task definition "dns"."""
        ecs.create_cluster(clusterName="default")
        cls.addClassCleanup(stop_all, ecs)
        # What the container sees: its resolv.conf and nslookup's answer, served on 8080.
        probe = (f"cat /etc/resolv.conf > /www/resolv.txt; nslookup {NAME} > /www/lookup.txt 2>&1; "
                 "httpd -f -p 8080 -h /www")
        ecs.register_task_definition(
            family="dns", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:dns", "essential": True, "stopTimeout": 1,
                                   "entryPoint": ["sh", "-c"], "command": [probe],
                                   "portMappings": [{"containerPort": 8080}]}])

    def run_task(self, family, ecs=None, subnet=None):
        """The task's address and namespace once it serves its page. Another account's task is asked
        from inside its own namespace: its address may also be one of this account's tasks', and the
        host reaches only one of them."""
        ecs = ecs or self.ecs
        r = ecs.run_task(cluster="default", taskDefinition=family, launchType="FARGATE",
                         networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet or self.subnet]}})
        self.assertEqual(r["failures"], [])
        arn = r["tasks"][0]["taskArn"]
        self.addCleanup(stop_and_wait, ecs, [arn])
        task = th.wait_for_status(self, ecs, "default", arn, "RUNNING", context=self.server.log_tail)
        ip = th.task_ip(task)
        if ecs is self.ecs:
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

    def await_operation(self, sd, op_id, timeout=10):
        deadline = time.monotonic() + timeout
        while (op := sd.get_operation(OperationId=op_id)["Operation"])["Status"] not in ("SUCCESS", "FAIL"):
            self.assertLess(time.monotonic(), deadline, op)
            time.sleep(0.01)
        self.assertEqual(op["Status"], "SUCCESS", op)
        return op

    def lookup(self, netns, name):
        """busybox nslookup of `name` at the node's resolver, from inside the task's namespace:
        (exit code, its output, the IPv4 addresses it answered)."""
        code, out = in_task(netns, "busybox", "nslookup", name, "169.254.169.253")
        text = out.decode(errors="replace")
        # The first "Address:" is the server's own ("169.254.169.253:53").
        answered = {a for a in re.findall(r"Address:?\s+(\d+\.\d+\.\d+\.\d+)", text)
                    if a != "169.254.169.253"}
        return code, text, answered

    def await_lookup(self, netns, name, addresses, timeout=2.0):
        """Polls until nslookup answers exactly `addresses` (the issue's bound is 1 s)."""
        deadline = time.monotonic() + timeout
        while True:
            code, text, answered = self.lookup(netns, name)
            if answered == addresses or time.monotonic() > deadline:
                self.assertEqual(answered, addresses, text)
                self.assertEqual(code, 0, text)
                return
            time.sleep(0.05)

    def web_service(self, sd, namespace):
        """Cloud Map service "web" (A records, TTL 10, MULTIVALUE) in a new private DNS namespace of the
        account's VPC, once the namespace's creation has run."""
        vpc = self.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        op = self.await_operation(sd, sd.create_private_dns_namespace(Name=namespace, Vpc=vpc)["OperationId"])
        return sd.create_service(Name="web", NamespaceId=op["Targets"]["NAMESPACE"],
                                 DnsConfig={"RoutingPolicy": "MULTIVALUE",
                                            "DnsRecords": [{"Type": "A", "TTL": 10}]})["Service"]

    def test_a_task_resolves_its_accounts_cloud_map_names_and_another_account_does_not(self):
        sd = sd_client(self.server.endpoint, self.key_id, self.secret)
        service = self.web_service(sd, "internal")["Id"]
        addresses = {f"10.77.0.{i}" for i in (1, 2, 3)}
        for i, address in enumerate(sorted(addresses)):
            self.await_operation(sd, sd.register_instance(ServiceId=service, InstanceId=f"task{i}",
                                                          Attributes={"AWS_INSTANCE_IPV4": address})["OperationId"])
        _, netns = self.run_task("dns")
        self.await_lookup(netns, "web.internal", addresses)
        # Two deregistered: the next answers have the one left.
        for i in (0, 1):
            self.await_operation(sd, sd.deregister_instance(ServiceId=service, InstanceId=f"task{i}")["OperationId"])
        self.await_lookup(netns, "web.internal", {"10.77.0.3"})
        # A name of the namespace that is no service: the node's NXDOMAIN. None of it went upstream.
        code, text, _ = self.lookup(netns, "nothing.internal")
        self.assertNotEqual(code, 0, text)
        self.assertIn("NXDOMAIN", text)
        self.assertEqual([q for q in self.responder.asked if q[0] in ("web.internal", "nothing.internal")], [])

        # Another account's task: web.internal is not its name (it has no such namespace), so the
        # query goes to the upstream, whose answer is NXDOMAIN.
        _, key, secret = h.create_account(self.state_dir, name="other")
        ecs = h.ecs_client(self.server.endpoint, key, secret)
        self.prepare_account(ecs)
        ec2 = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                           aws_access_key_id=key, aws_secret_access_key=secret)
        _, theirs = self.run_task("dns", ecs=ecs, subnet=self.first_subnet(ec2))
        code, text, answered = self.lookup(theirs, "web.internal")
        self.assertNotEqual(code, 0, text)
        self.assertIn("NXDOMAIN", text)
        self.assertEqual(answered, set(), text)
        self.assertIn(("web.internal", 1), self.responder.asked)
        # ...while the first account still sees its own.
        self.await_lookup(netns, "web.internal", {"10.77.0.3"})


if __name__ == "__main__":
    unittest.main()
