"""ECS service discovery end to end (issue 13 §2-§4): real busybox Fargate tasks of ECS services with
`serviceRegistries`, registered in a Cloud Map private DNS namespace by the task owner, and answered
by the node's DNS server (agent/dns_service.h over cloudmap::DnsAuthority) to `dig` run inside a
task's network namespace.

- Two ECS services share one registry (`web.internal`, A and SRV): 3 + 1 tasks, 4 addresses, each
  answered as soon as DescribeTasks shows it RUNNING; SRV names each task's id with the port.
- DiscoverInstances shows the attributes ECS writes (ECS_SERVICE_NAME, ECS_CLUSTER_NAME, ...).
- Scaling one service to 1 deregisters only its own tasks, and a stopping task is gone from the
  answers from the moment its desiredStatus is STOPPED (its container still running through its
  SIGTERM trap).
- An external name still resolves (forwarded to a responder the test runs); another account's task
  asking `web.internal` gets NXDOMAIN.

Needs root, crun, nft, nsenter, dig and busybox-static."""

import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import task_harness as th  # noqa: E402
from test_cloudmap import sd_client  # noqa: E402
from test_security_network import in_task, netns_of, stop_all  # noqa: E402
from test_task_dns import ADDRESS, NAME, WithUpstream  # noqa: E402

PAGE = "sd\n"
RESOLVER = "169.254.169.253"


def skip_reason():
    return th.skip_reason(tools=("crun", "nft", "nsenter", "dig"))


def dig(netns, name, qtype="A"):
    """dig's reply to (name, qtype) from the node's DNS server, asked inside the namespace: (status,
    answer lines without the owner and class)."""
    code, out = in_task(netns, "dig", "+time=2", "+tries=1", "+noall", "+comments", "+answer", f"@{RESOLVER}", name,
                        qtype)
    text = out.decode(errors="replace")
    if code != 0:
        raise AssertionError(f"dig {name} {qtype} failed: {text}")
    status = re.search(r"status: (\w+)", text).group(1)
    answers = []
    for line in text.splitlines():
        if line and not line.startswith(";"):
            fields = line.split()
            answers.append((int(fields[1]), fields[3], " ".join(fields[4:])))  # ttl, type, data
    return status, answers


def addresses(netns, name="web.internal"):
    status, answers = dig(netns, name)
    return status, sorted(data for _, t, data in answers if t == "A")


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class ServiceDiscovery(WithUpstream):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:sd", PAGE, applets=("sleep",))
        ec2 = h.client("ec2", cls.server.endpoint, cls.key_id, cls.secret)
        cls.vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        cls.subnet = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]
        cls.sd = sd_client(cls.server.endpoint, cls.key_id, cls.secret)
        cls.ecs.create_cluster(clusterName="default")
        cls.addClassCleanup(stop_all, cls.ecs)
        # The service's container serves 8080 and, told to stop, lingers 3 s in its SIGTERM trap: a
        # stopping task's container still runs then, so the test can see it has left the answers.
        cls.ecs.register_task_definition(
            family="sd-web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:sd", "essential": True, "stopTimeout": 10,
                                   "entryPoint": ["sh", "-c"],
                                   "command": ["trap 'sleep 3; exit 0' TERM; httpd -p 8080 -h /www; "
                                               "while true; do sleep 1; done"],
                                   "portMappings": [{"containerPort": 8080}]}])

    def await_operation(self, op_id, client=None, timeout=10):
        client = client or self.sd
        deadline = time.monotonic() + timeout
        while True:
            op = client.get_operation(OperationId=op_id)["Operation"]
            if op["Status"] in ("SUCCESS", "FAIL"):
                return op
            self.assertLess(time.monotonic(), deadline, op)
            time.sleep(0.02)

    def probe(self, ecs, subnet, family="sd-probe"):
        """A task to ask from: its network namespace."""
        ecs.register_task_definition(
            family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "probe", "image": "busybox:sd", "essential": True, "stopTimeout": 1,
                                   "entryPoint": ["sh", "-c"], "command": ["trap 'exit 0' TERM; "
                                                                           "while true; do sleep 1; done"]}])
        arn = ecs.run_task(cluster="default", taskDefinition=family, launchType="FARGATE",
                           networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["tasks"][0]["taskArn"]
        th.wait_for_status(self, ecs, "default", arn, "RUNNING", context=self.server.log_tail)
        return netns_of(arn)

    def service_tasks(self, service):
        arns = self.ecs.list_tasks(cluster="default", serviceName=service, desiredStatus="RUNNING")["taskArns"]
        arns += self.ecs.list_tasks(cluster="default", serviceName=service, desiredStatus="STOPPED")["taskArns"]
        return self.ecs.describe_tasks(cluster="default", tasks=arns)["tasks"] if arns else []

    def await_running(self, service, count, netns, timeout=60):
        """The service's RUNNING tasks once there are `count`; each one's address is in the DNS answer
        from the moment DescribeTasks first shows it RUNNING."""
        deadline = time.monotonic() + timeout
        checked = set()
        while True:
            running = [t for t in self.service_tasks(service)
                       if t["lastStatus"] == "RUNNING" and t["desiredStatus"] == "RUNNING"]
            fresh = [t for t in running if t["taskArn"] not in checked]
            if fresh:
                _, answered = addresses(netns)
                for t in fresh:
                    self.assertIn(th.task_ip(t), answered, f"RUNNING task {t['taskArn']} is not answered yet")
                    checked.add(t["taskArn"])
            if len(running) == count:
                return running
            self.assertLess(time.monotonic(), deadline, f"{service}: {len(running)} of {count} running; "
                                                        f"{self.server.log_tail()}")
            time.sleep(0.1)

    def test_ecs_services_register_their_tasks_and_the_vpc_resolver_answers_them(self):
        op = self.sd.create_private_dns_namespace(Name="internal", Vpc=self.vpc)["OperationId"]
        self.assertEqual(self.await_operation(op)["Status"], "SUCCESS")
        ns = self.sd.list_namespaces()["Namespaces"][0]["Id"]
        registry = self.sd.create_service(
            Name="web", NamespaceId=ns,
            DnsConfig={"RoutingPolicy": "MULTIVALUE",
                       "DnsRecords": [{"Type": "A", "TTL": 10}, {"Type": "SRV", "TTL": 10}]})["Service"]
        netns = self.probe(self.ecs, self.subnet)
        self.assertEqual(dig(netns, "web.internal"), ("NOERROR", []), "no instances yet: NODATA")

        # ECS checks the registry against the definition: SRV needs a port.
        self.assertClientError("InvalidParameterException", self.ecs.create_service, cluster="default",
                               serviceName="bad", taskDefinition="sd-web", desiredCount=1, launchType="FARGATE",
                               serviceRegistries=[{"registryArn": registry["Arn"]}],
                               networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}},
                               message_contains="'port' or the 'containerName' and 'containerPort'")
        for name, count in (("sd-a", 3), ("sd-b", 1)):
            self.ecs.create_service(
                cluster="default", serviceName=name, taskDefinition="sd-web", desiredCount=count,
                launchType="FARGATE",
                serviceRegistries=[{"registryArn": registry["Arn"], "containerName": "web", "containerPort": 8080}],
                networkConfiguration={"awsvpcConfiguration": {"subnets": [self.subnet]}})
        a = self.await_running("sd-a", 3, netns)
        b = self.await_running("sd-b", 1, netns)
        ips = {th.task_ip(t): t["taskArn"].rsplit("/", 1)[1] for t in a + b}
        status, answers = dig(netns, "web.internal")
        self.assertEqual(status, "NOERROR")
        self.assertEqual(sorted(data for _, _, data in answers), sorted(ips))
        self.assertEqual({ttl for ttl, _, _ in answers}, {10})
        # SRV: each task by id, with its port; the target's own name answers its address.
        _, srv = dig(netns, "web.internal", "SRV")
        self.assertEqual(sorted(data for _, _, data in srv),
                         sorted(f"1 1 8080 {task_id}.web.internal." for task_id in ips.values()))
        ip, task_id = next(iter(ips.items()))
        self.assertEqual(addresses(netns, f"{task_id}.web.internal"), ("NOERROR", [ip]))
        # What ECS wrote, as DiscoverInstances shows it.
        found = self.sd.discover_instances(NamespaceName="internal", ServiceName="web")["Instances"]
        self.assertEqual(sorted(i["InstanceId"] for i in found), sorted(ips.values()))
        attributes = {i["InstanceId"]: i["Attributes"] for i in found}[task_id]
        self.assertEqual(attributes["AWS_INSTANCE_IPV4"], ip)
        self.assertEqual(attributes["AWS_INSTANCE_PORT"], "8080")
        self.assertEqual(attributes["ECS_CLUSTER_NAME"], "default")
        self.assertIn(attributes["ECS_SERVICE_NAME"], ("sd-a", "sd-b"))
        self.assertEqual(attributes["ECS_TASK_DEFINITION_FAMILY"], "sd-web")
        self.assertEqual(attributes["REGION"], h.REGION)
        self.assertTrue(attributes["AVAILABILITY_ZONE"].startswith(h.REGION))
        # Other names: forwarded; a name under the namespace that is no service: NXDOMAIN.
        self.assertEqual(addresses(netns, NAME), ("NOERROR", [ADDRESS]))
        self.assertEqual(dig(netns, "db.internal")[0], "NXDOMAIN")

        # Scale sd-a to 1: its stopping tasks leave the answers before their containers are told to
        # stop (their container still runs, in its 3 s SIGTERM trap, when the test looks); sd-b's
        # stays.
        self.ecs.update_service(cluster="default", service="sd-a", desiredCount=1)
        deadline = time.monotonic() + 30
        seen_stopping_while_running = 0
        while True:
            tasks = self.service_tasks("sd-a")
            stopping = [t for t in tasks if t["desiredStatus"] == "STOPPED"]
            if stopping:
                _, answered = addresses(netns)
                for t in stopping:
                    self.assertNotIn(th.task_ip(t), answered, f"stopping task {t['taskArn']} is still answered")
                    seen_stopping_while_running += t["containers"][0]["lastStatus"] == "RUNNING"
            if len(stopping) == 2 and all(t["lastStatus"] == "STOPPED" for t in stopping):
                break
            self.assertLess(time.monotonic(), deadline, tasks)
            time.sleep(0.1)
        self.assertGreater(seen_stopping_while_running, 0, "never saw a stopping task still running")
        kept = [th.task_ip(t) for t in self.service_tasks("sd-a") if t["desiredStatus"] == "RUNNING"]
        self.assertEqual(addresses(netns), ("NOERROR", sorted(kept + [th.task_ip(b[0])])))
        self.assertEqual(len(self.sd.discover_instances(NamespaceName="internal", ServiceName="web")["Instances"]), 2)

        # Another account asking the same name from its own task: NXDOMAIN (its VPC has no such
        # namespace), and nothing of this account's answers.
        _, key, secret = h.create_account(self.state_dir, None, "other")
        other_ecs = h.ecs_client(self.server.endpoint, key, secret)
        other_ec2 = h.client("ec2", self.server.endpoint, key, secret)
        other_ecs.create_cluster(clusterName="default")
        self.addCleanup(stop_all, other_ecs)
        other_subnet = sorted(other_ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]
        other_netns = self.probe(other_ecs, other_subnet, family="other-probe")
        self.assertEqual(dig(other_netns, "web.internal"), ("NXDOMAIN", []))
        self.assertEqual(addresses(other_netns, NAME), ("NOERROR", [ADDRESS]))

        # Deleting the services deregisters the rest.
        for name in ("sd-a", "sd-b"):
            self.ecs.delete_service(cluster="default", service=name, force=True)
        deadline = time.monotonic() + 30
        while dig(netns, "web.internal") != ("NOERROR", []):
            self.assertLess(time.monotonic(), deadline, dig(netns, "web.internal"))
            time.sleep(0.1)
        self.assertServerAlive()


if __name__ == "__main__":
    unittest.main()
