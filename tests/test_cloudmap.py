"""Cloud Map (servicediscovery) against a real server (docs/contracts/cloudmap.md): boto3 creates
namespaces, services and instances, follows each asynchronous operation from SUBMITTED to SUCCESS,
discovers instances by query parameters and health, and gets AWS's errors; input AWS refuses changes
nothing; another account sees none of it. Every successful response is validated strictly against
botocore's servicediscovery output shapes from the RAW body, and so is every golden case's answer
under src/cloudmap/api/testdata."""
import json
import pathlib
import time

import paddock_harness as h

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = "Route53AutoNaming_v20170314"


def sd_client(endpoint, key_id, secret):
    # As the profile `paddock up` writes (disable_host_prefix_injection): DiscoverInstances' "data-"
    # host prefix would otherwise make the endpoint's host data-127.0.0.1, which does not resolve.
    return h.json_client("servicediscovery", endpoint, key_id, secret, inject_host_prefix=False)


class CloudMap(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sd = sd_client(cls.server.endpoint, cls.key_id, cls.secret)
        cls.ec2 = h.client("ec2", cls.server.endpoint, cls.key_id, cls.secret)
        cls.vpc = cls.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]

    def await_operation(self, op_id, client=None, timeout=10):
        """The operation once it is SUCCESS or FAIL (the node's worker runs it on its own thread)."""
        client = client or self.sd
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            op = client.get_operation(OperationId=op_id)["Operation"]
            if not seen or seen[-1] != op["Status"]:
                seen.append(op["Status"])
            if op["Status"] in ("SUCCESS", "FAIL") or time.monotonic() > deadline:
                op["seen"] = seen
                return op
            time.sleep(0.01)

    def namespace(self, name, private=False, client=None):
        client = client or self.sd
        if private:
            op = client.create_private_dns_namespace(Name=name, Vpc=self.vpc)["OperationId"]
        else:
            op = client.create_http_namespace(Name=name)["OperationId"]
        done = self.await_operation(op, client)
        self.assertEqual(done["Status"], "SUCCESS", done)
        return done["Targets"]["NAMESPACE"]

    def test_private_dns_namespace_service_instances_and_discovery(self):
        op_id = self.sd.create_private_dns_namespace(
            Name="e2e.internal", Vpc=self.vpc, Description="tasks",
            Properties={"DnsProperties": {"SOA": {"TTL": 30}}})["OperationId"]
        op = self.await_operation(op_id)
        self.assertEqual(op["Status"], "SUCCESS")
        self.assertEqual(op["Type"], "CREATE_NAMESPACE")
        self.assertEqual(op["OwnerAccount"], self.account)
        self.assertLessEqual(op["CreateDate"], op["UpdateDate"])
        self.assertTrue(set(op["seen"]) <= {"SUBMITTED", "PENDING", "SUCCESS"}, op["seen"])
        ns_id = op["Targets"]["NAMESPACE"]
        ns = self.sd.get_namespace(Id=ns_id)["Namespace"]
        self.assertEqual((ns["Name"], ns["Type"], ns["Description"]), ("e2e.internal", "DNS_PRIVATE", "tasks"))
        self.assertEqual(ns["Properties"]["DnsProperties"]["SOA"]["TTL"], 30)
        self.assertEqual(ns["Arn"], f"arn:aws:servicediscovery:{h.REGION}:{self.account}:namespace/{ns_id}")

        svc = self.sd.create_service(
            Name="web", NamespaceId=ns_id,
            DnsConfig={"RoutingPolicy": "MULTIVALUE", "DnsRecords": [{"Type": "A", "TTL": 10}, {"Type": "SRV", "TTL": 10}]},
            HealthCheckCustomConfig={"FailureThreshold": 1}, Tags=[{"Key": "team", "Value": "web"}])["Service"]
        self.assertEqual(svc["Type"], "DNS_HTTP")
        self.assertEqual(self.sd.list_tags_for_resource(ResourceARN=svc["Arn"])["Tags"], [{"Key": "team", "Value": "web"}])
        for i, stage in enumerate(["prod", "prod", "dev"]):
            attrs = {"AWS_INSTANCE_IPV4": f"172.31.0.{10 + i}", "AWS_INSTANCE_PORT": "8080", "stage": stage}
            if i == 1:
                attrs["AWS_INIT_HEALTH_STATUS"] = "UNHEALTHY"
            reg = self.sd.register_instance(ServiceId=svc["Id"], InstanceId=f"task-{i}", Attributes=attrs)
            self.assertEqual(self.await_operation(reg["OperationId"])["Status"], "SUCCESS")
        self.assertEqual(self.sd.get_service(Id=svc["Id"])["Service"]["InstanceCount"], 3)

        found = self.sd.discover_instances(NamespaceName="e2e.internal", ServiceName="web",
                                           QueryParameters={"stage": "prod"}, HealthStatus="HEALTHY")
        self.assertEqual([i["InstanceId"] for i in found["Instances"]], ["task-0"])
        self.assertEqual(found["Instances"][0]["Attributes"]["AWS_INSTANCE_IPV4"], "172.31.0.10")
        revision = found["InstancesRevision"]
        self.assertEqual(self.sd.discover_instances_revision(NamespaceName="e2e.internal", ServiceName="web")
                         ["InstancesRevision"], revision)
        everyone = self.sd.discover_instances(NamespaceName="e2e.internal", ServiceName="web", HealthStatus="ALL")
        self.assertEqual(len(everyone["Instances"]), 3)
        self.assertEqual(self.sd.get_instances_health_status(ServiceId=svc["Id"])["Status"],
                         {"task-0": "HEALTHY", "task-1": "UNHEALTHY", "task-2": "HEALTHY"})
        self.sd.update_instance_custom_health_status(ServiceId=svc["Id"], InstanceId="task-1", Status="HEALTHY")
        self.assertEqual(self.sd.discover_instances_revision(NamespaceName="e2e.internal", ServiceName="web")
                         ["InstancesRevision"], revision + 1)
        # UpdateService: TTLs change, asynchronously.
        up = self.sd.update_service(Id=svc["Id"], Service={"DnsConfig": {"DnsRecords": [
            {"Type": "A", "TTL": 60}, {"Type": "SRV", "TTL": 60}]}})
        self.assertEqual(self.await_operation(up["OperationId"])["Status"], "SUCCESS")
        self.assertEqual([r["TTL"] for r in self.sd.get_service(Id=svc["Id"])["Service"]["DnsConfig"]["DnsRecords"]],
                         [60, 60])

        # Clean up in AWS's order: instances, service, namespace.
        self.assertClientError("ResourceInUse", self.sd.delete_service, Id=svc["Id"])
        self.assertClientError("ResourceInUse", self.sd.delete_namespace, Id=ns_id)
        for i in range(3):
            op = self.sd.deregister_instance(ServiceId=svc["Id"], InstanceId=f"task-{i}")["OperationId"]
            self.assertEqual(self.await_operation(op)["Status"], "SUCCESS")
        self.sd.delete_service(Id=svc["Id"])
        op = self.sd.delete_namespace(Id=ns_id)["OperationId"]
        self.assertEqual(self.await_operation(op)["Type"], "DELETE_NAMESPACE")
        self.assertClientError("NamespaceNotFound", self.sd.get_namespace, Id=ns_id)

    def test_discover_instances_answers_on_a_data_host(self):
        """A client that injects DiscoverInstances' "data-" host prefix reaches the same front."""
        ns = self.namespace("datahost")
        svc = self.sd.create_service(Name="api", NamespaceId=ns)["Service"]
        op = self.sd.register_instance(ServiceId=svc["Id"], InstanceId="i-1", Attributes={"k": "v"})["OperationId"]
        self.assertEqual(self.await_operation(op)["Status"], "SUCCESS")
        port = int(self.server.endpoint.rsplit(":", 1)[1])
        host = f"data-127.0.0.1:{port}"
        body = json.dumps({"NamespaceName": "datahost", "ServiceName": "api"}).encode()
        signer = h.RawSigner(self.key_id, self.secret, service="servicediscovery")
        headers = signer.headers(host, body, target=f"{TARGET}.DiscoverInstances",
                                 content_type="application/x-amz-json-1.1")
        status, _, data = h.raw_request(port, body=body, headers=headers)
        self.assertEqual(status, 200, data)
        self.assertEqual(h.validate_output("DiscoverInstances", data, service="servicediscovery"), [])
        self.assertEqual([i["InstanceId"] for i in json.loads(data)["Instances"]], ["i-1"])

    def test_lists_filter_and_page(self):
        for name in ("page-a", "page-b", "page-c"):
            self.namespace(name)
        names, token = [], None
        while True:
            kwargs = {"MaxResults": 1, "Filters": [{"Name": "NAME", "Values": ["page-"], "Condition": "BEGINS_WITH"}]}
            if token:
                kwargs["NextToken"] = token
            page = self.sd.list_namespaces(**kwargs)
            names += [n["Name"] for n in page["Namespaces"]]
            token = page.get("NextToken")
            if not token:
                break
        self.assertEqual(sorted(names), ["page-a", "page-b", "page-c"])
        paginated = self.sd.get_paginator("list_namespaces").paginate(
            Filters=[{"Name": "TYPE", "Values": ["HTTP"], "Condition": "EQ"}], PaginationConfig={"PageSize": 2})
        self.assertTrue({"page-a", "page-b", "page-c"} <= {n["Name"] for p in paginated for n in p["Namespaces"]})
        ops = self.sd.list_operations(Filters=[{"Name": "TYPE", "Values": ["CREATE_NAMESPACE"], "Condition": "EQ"},
                                               {"Name": "STATUS", "Values": ["SUCCESS", "FAIL"], "Condition": "IN"}])
        self.assertGreaterEqual(len(ops["Operations"]), 3)
        self.assertClientError("InvalidInput", self.sd.list_namespaces, NextToken="forged")
        self.assertClientError("InvalidInput", self.sd.list_services,
                               Filters=[{"Name": "NAMESPACE_ID", "Values": ["a"], "Condition": "BETWEEN"}])

    def test_aws_errors_and_bad_input_changes_nothing(self):
        ns = self.namespace("errs.internal", private=True)
        before_ops = len(self.sd.list_operations()["Operations"])
        before_services = self.sd.list_services()["Services"]
        self.assertClientError("NamespaceAlreadyExists", self.sd.create_http_namespace, Name="errs.internal")
        self.assertClientError("InvalidInput", self.sd.create_public_dns_namespace, Name="example.com",
                               message_contains="Public DNS namespaces are not supported")
        self.assertClientError("InvalidInput", self.sd.create_private_dns_namespace, Name="other.internal",
                               Vpc="vpc-0000000000000000f")
        self.assertClientError("InvalidInput", self.sd.create_service, Name="c", NamespaceId=ns,
                               DnsConfig={"RoutingPolicy": "MULTIVALUE", "DnsRecords": [{"Type": "CNAME", "TTL": 5}]})
        self.assertClientError("NamespaceNotFound", self.sd.create_service, Name="c", NamespaceId="ns-nope")
        svc = self.sd.create_service(Name="a", NamespaceId=ns,
                                     DnsConfig={"DnsRecords": [{"Type": "A", "TTL": 5}]})["Service"]
        self.assertClientError("ServiceAlreadyExists", self.sd.create_service, Name="a", NamespaceId=ns,
                               DnsConfig={"DnsRecords": [{"Type": "A", "TTL": 5}]})
        self.assertClientError("InvalidInput", self.sd.register_instance, ServiceId=svc["Id"], InstanceId="x",
                               Attributes={"AWS_INSTANCE_PORT": "80"})
        self.assertClientError("InvalidInput", self.sd.register_instance, ServiceId=svc["Id"], InstanceId="x",
                               Attributes={"AWS_INSTANCE_IPV4": "300.1.1.1"})
        self.assertClientError("InvalidInput", self.sd.register_instance, ServiceId=svc["Id"], InstanceId="bad id",
                               Attributes={"AWS_INSTANCE_IPV4": "10.0.0.1"})
        self.assertClientError("ServiceNotFound", self.sd.register_instance, ServiceId="srv-nope", InstanceId="x",
                               Attributes={})
        self.assertClientError("InstanceNotFound", self.sd.deregister_instance, ServiceId=svc["Id"], InstanceId="x")
        self.assertClientError("InstanceNotFound", self.sd.update_instance_custom_health_status,
                               ServiceId=svc["Id"], InstanceId="x", Status="HEALTHY")
        self.assertClientError("OperationNotFound", self.sd.get_operation, OperationId="nope")
        self.assertClientError("ResourceNotFoundException", self.sd.list_tags_for_resource,
                               ResourceARN=f"arn:aws:servicediscovery:{h.REGION}:{self.account}:service/srv-nope")
        # Nothing of the refused calls was written: no operation, no service, no instance.
        self.assertEqual(len(self.sd.list_operations()["Operations"]), before_ops)
        self.assertEqual({s["Id"] for s in self.sd.list_services()["Services"]},
                         {s["Id"] for s in before_services} | {svc["Id"]})
        self.assertEqual(self.sd.list_instances(ServiceId=svc["Id"])["Instances"], [])

    def test_a_retried_create_answers_the_first_requests_result(self):
        first = self.sd.create_http_namespace(Name="retried", CreatorRequestId="retry-1")["OperationId"]
        self.assertEqual(self.await_operation(first)["Status"], "SUCCESS")
        self.assertEqual(self.sd.create_http_namespace(Name="retried", CreatorRequestId="retry-1")["OperationId"], first)
        self.assertClientError("NamespaceAlreadyExists", self.sd.create_http_namespace, Name="retried",
                               CreatorRequestId="retry-2")
        ns = self.sd.get_operation(OperationId=first)["Operation"]["Targets"]["NAMESPACE"]
        svc = self.sd.create_service(Name="web", NamespaceId=ns, CreatorRequestId="retry-3")["Service"]
        self.assertEqual(self.sd.create_service(Name="web", NamespaceId=ns, CreatorRequestId="retry-3")["Service"]["Id"],
                         svc["Id"])

    def test_custom_health_needs_health_check_custom_config(self):
        ns = self.namespace("health")
        svc = self.sd.create_service(Name="plain", NamespaceId=ns)["Service"]
        op = self.sd.register_instance(ServiceId=svc["Id"], InstanceId="i-1", Attributes={})["OperationId"]
        self.assertEqual(self.await_operation(op)["Status"], "SUCCESS")
        self.assertClientError("CustomHealthNotFound", self.sd.update_instance_custom_health_status,
                               ServiceId=svc["Id"], InstanceId="i-1", Status="HEALTHY")
        self.assertClientError("InvalidInput", self.sd.register_instance, ServiceId=svc["Id"], InstanceId="i-2",
                               Attributes={"AWS_INIT_HEALTH_STATUS": "HEALTHY"})
        found = self.sd.discover_instances(NamespaceName="health", ServiceName="plain", HealthStatus="HEALTHY")
        self.assertEqual([(i["InstanceId"], i["HealthStatus"]) for i in found["Instances"]], [("i-1", "UNKNOWN")])

    def test_accounts_never_see_each_others_namespaces_services_or_instances(self):
        ns = self.namespace("mine.internal", private=True)
        svc = self.sd.create_service(Name="web", NamespaceId=ns,
                                     DnsConfig={"DnsRecords": [{"Type": "A", "TTL": 5}]})["Service"]
        op = self.sd.register_instance(ServiceId=svc["Id"], InstanceId="t-1",
                                       Attributes={"AWS_INSTANCE_IPV4": "172.31.0.20"})["OperationId"]
        self.assertEqual(self.await_operation(op)["Status"], "SUCCESS")
        other_account, key, secret = h.create_account(self.state_dir, None, "other")
        other = sd_client(self.server.endpoint, key, secret)
        self.assertEqual(other.list_namespaces()["Namespaces"], [])
        self.assertEqual(other.list_services()["Services"], [])
        self.assertEqual(other.list_operations()["Operations"], [])
        for fn, kwargs, code in [
            (other.get_namespace, {"Id": ns}, "NamespaceNotFound"),
            (other.get_namespace, {"Id": f"arn:aws:servicediscovery:{h.REGION}:{self.account}:namespace/{ns}"},
             "NamespaceNotFound"),
            (other.get_service, {"Id": svc["Id"]}, "ServiceNotFound"),
            (other.get_operation, {"OperationId": op}, "OperationNotFound"),
            (other.get_instance, {"ServiceId": svc["Id"], "InstanceId": "t-1"}, "ServiceNotFound"),
            (other.list_instances, {"ServiceId": svc["Id"]}, "ServiceNotFound"),
            (other.discover_instances, {"NamespaceName": "mine.internal", "ServiceName": "web"}, "NamespaceNotFound"),
            (other.deregister_instance, {"ServiceId": svc["Id"], "InstanceId": "t-1"}, "ServiceNotFound"),
            (other.delete_service, {"Id": svc["Id"]}, "ServiceNotFound"),
            (other.delete_namespace, {"Id": ns}, "NamespaceNotFound"),
            (other.list_tags_for_resource, {"ResourceARN": svc["Arn"]}, "ResourceNotFoundException"),
            (other.tag_resource, {"ResourceARN": svc["Arn"], "Tags": [{"Key": "k", "Value": "v"}]},
             "ResourceNotFoundException"),
        ]:
            with self.subTest(fn=fn.__name__, kwargs=kwargs):
                self.assertClientError(code, fn, **kwargs)
        # Its own namespace of the same name is its own, in its own (same-id) default VPC's account.
        vpc = h.client("ec2", self.server.endpoint, key, secret).describe_vpcs()["Vpcs"][0]["VpcId"]
        theirs = other.create_private_dns_namespace(Name="mine.internal", Vpc=vpc)["OperationId"]
        self.assertEqual(self.await_operation(theirs, other)["Status"], "SUCCESS")
        self.assertEqual([n["Name"] for n in other.list_namespaces()["Namespaces"]], ["mine.internal"])
        # This account's instance is untouched.
        self.assertEqual(len(self.sd.discover_instances(NamespaceName="mine.internal", ServiceName="web")["Instances"]), 1)
        self.assertNotEqual(other_account, self.account)


class ListServicesByNamespace(h.PaddockTestCase):
    """ECS's ListServicesByNamespace answers from Cloud Map: the ECS services whose serviceRegistries
    name a Cloud Map service of the namespace, in any cluster."""

    def test_lists_the_ecs_services_registered_in_a_namespace(self):
        sd = sd_client(self.server.endpoint, self.key_id, self.secret)
        ec2 = h.client("ec2", self.server.endpoint, self.key_id, self.secret)
        op = sd.create_private_dns_namespace(Name="ecs.internal", Vpc=ec2.describe_vpcs()["Vpcs"][0]["VpcId"])
        deadline = time.monotonic() + 10
        while (got := sd.get_operation(OperationId=op["OperationId"])["Operation"])["Status"] not in ("SUCCESS", "FAIL"):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        ns = got["Targets"]["NAMESPACE"]
        registry = sd.create_service(Name="web", NamespaceId=ns,
                                     DnsConfig={"DnsRecords": [{"Type": "A", "TTL": 10}]})["Service"]["Arn"]
        subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
        td = self.ecs.register_task_definition(
            family="cm-web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "app", "image": "nginx:1"}])["taskDefinition"]["taskDefinitionArn"]
        arns = []
        for cluster, name, registries in [("a", "web", [{"registryArn": registry}]), ("b", "web2", [{"registryArn": registry}]),
                                          ("a", "other", [])]:
            self.ecs.create_cluster(clusterName=cluster)
            s = self.ecs.create_service(cluster=cluster, serviceName=name, taskDefinition=td, desiredCount=0,
                                        launchType="FARGATE", serviceRegistries=registries,
                                        networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet]}})["service"]
            if registries:
                arns.append(s["serviceArn"])
        by_name = self.ecs.list_services_by_namespace(namespace="ecs.internal")["serviceArns"]
        self.assertEqual(sorted(by_name), sorted(arns))
        by_arn = self.ecs.list_services_by_namespace(namespace=f"arn:aws:servicediscovery:{h.REGION}:{self.account}:"
                                                               f"namespace/{ns}")["serviceArns"]
        self.assertEqual(sorted(by_arn), sorted(arns))
        first = self.ecs.list_services_by_namespace(namespace="ecs.internal", maxResults=1)
        self.assertEqual(len(first["serviceArns"]), 1)
        second = self.ecs.list_services_by_namespace(namespace="ecs.internal", maxResults=1,
                                                     nextToken=first["nextToken"])
        self.assertEqual(sorted(first["serviceArns"] + second["serviceArns"]), sorted(arns))
        self.assertClientError("NamespaceNotFoundException", self.ecs.list_services_by_namespace, namespace="nope")
        # Another account's namespace of that name does not exist for this one, and vice versa.
        _, key, secret = h.create_account(self.state_dir, None, "other-ecs")
        other = h.ecs_client(self.server.endpoint, key, secret)
        self.assertClientError("NamespaceNotFoundException", other.list_services_by_namespace, namespace="ecs.internal")


class GoldenShapes(h.unittest.TestCase):
    def test_every_golden_answer_has_botocores_output_shape(self):
        """Each successful golden answer (src/cloudmap/api/testdata) validates strictly against botocore."""
        checked = 0
        for response in sorted((ROOT / "src/cloudmap/api/testdata").glob("*/*.response.json")):
            body = json.loads(response.read_text().replace("${ACCOUNT}", "123456789012"))
            if "__type" in body:
                self.assertEqual(h.validate_error_body(body), [], response)
                continue
            action = response.parent.name
            with self.subTest(case=f"{action}/{response.name}"):
                self.assertEqual(h.validate_output(action, body, service="servicediscovery"), [])
            checked += 1
        self.assertGreaterEqual(checked, 10)


if __name__ == "__main__":
    h.unittest.main()
