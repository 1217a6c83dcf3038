"""Security groups through boto3's `ec2` client against a real server (docs/contracts/security-group.md):
every action, AWS's error codes and texts, every response validated strictly against botocore's
output shape from the raw XML, accounts that cannot see or reference each other's groups, the AWS
CLI; then tasks: RunTask with a missing group refused, a group in use by a task cannot be deleted,
and two accounts' tasks holding the same address (each VPC has its own pools)."""

import json
import os
import sqlite3
import struct
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402
import boto3  # noqa: E402
import botocore.session  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
import task_harness as th  # noqa: E402
from task_harness import skip_reason  # noqa: E402

EC2_MODEL = botocore.session.get_session().get_service_model("ec2")


# ----------------------------------------------------------------------------------------------
# strict validation of EC2's XML against botocore's output shapes


def _tag(el):
    return el.tag.split("}", 1)[-1]


def _xml_members(shape):
    return {m.serialization.get("name", name): m for name, m in shape.members.items()}


def _validate(el, shape, path, errors):
    t = shape.type_name
    text = (el.text or "").strip()
    if t == "structure":
        members = _xml_members(shape)
        if text:
            errors.append(f"{path}: text {text!r} in structure {shape.name}")
        for child in el:
            name = _tag(child)
            if name not in members:
                errors.append(f"{path}: unknown element <{name}> in {shape.name}")
                continue
            _validate(child, members[name], f"{path}.{name}", errors)
    elif t == "list":
        item = shape.member.serialization.get("name", "member")
        for i, child in enumerate(el):
            if _tag(child) != item:
                errors.append(f"{path}[{i}]: <{_tag(child)}> where the list {shape.name} has <{item}>")
            _validate(child, shape.member, f"{path}[{i}]", errors)
    else:
        if len(el):
            errors.append(f"{path}: elements inside scalar {shape.name}")
        if t == "string":
            if shape.enum and text not in shape.enum:
                errors.append(f"{path}: {text!r} not in enum {shape.name}")
        elif t in ("integer", "long"):
            try:
                int(text)
            except ValueError:
                errors.append(f"{path}: {text!r} is not an integer ({shape.name})")
        elif t == "boolean":
            if text not in ("true", "false"):
                errors.append(f"{path}: {text!r} is not a boolean ({shape.name})")


def validate_ec2_output(operation, body):
    """Violations of `operation`'s output shape in a raw EC2 XML body (empty: valid)."""
    errors = []
    root = ET.fromstring(body)
    if _tag(root) != operation + "Response":
        errors.append(f"root <{_tag(root)}>, expected <{operation}Response>")
    if root.tag != "{http://ec2.amazonaws.com/doc/2016-11-15/}" + operation + "Response":
        errors.append(f"root namespace: {root.tag}")
    shape = EC2_MODEL.operation_model(operation).output_shape
    members = _xml_members(shape) if shape is not None else {}
    if not any(_tag(c) == "requestId" for c in root):
        errors.append("no requestId")
    for child in root:
        name = _tag(child)
        if name == "requestId":
            continue
        if name not in members:
            errors.append(f"$: unknown element <{name}> in {operation}Response")
            continue
        _validate(child, members[name], f"$.{name}", errors)
    return errors


def validate_ec2_error(body):
    """EC2's error form: <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>."""
    root = ET.fromstring(body)
    errors = []
    if root.tag != "Response":
        errors.append(f"error root <{root.tag}>")
    codes = root.findall("./Errors/Error/Code")
    if len(codes) != 1 or not (codes[0].text or "").strip():
        errors.append("no Errors/Error/Code")
    if root.find("./Errors/Error/Message") is None:
        errors.append("no Errors/Error/Message")
    if root.find("./RequestID") is None:
        errors.append("no RequestID")
    return errors


class _Ec2Capture:
    def __init__(self):
        self.validated = 0

    def __call__(self, operation_model, response_dict, **kwargs):
        op, status, body = operation_model.name, response_dict["status_code"], response_dict["body"]
        errors = validate_ec2_output(op, body) if 200 <= status < 300 else validate_ec2_error(body)
        if errors:
            raise h.ShapeViolation(f"{op} ({status}) violates botocore's shape:\n  " + "\n  ".join(errors[:20]) +
                                   f"\nraw body: {body[:2000]!r}")
        self.validated += 1


def ec2_client(endpoint, key_id, secret, validate_params=True):
    c = boto3.session.Session().client(
        "ec2", endpoint_url=endpoint, region_name=h.REGION, aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, parameter_validation=validate_params))
    cap = _Ec2Capture()
    c.meta.events.register("before-parse.ec2.*", cap)
    c.paddock_capture = cap
    return c


def tcp(port, cidr, description=None):
    rng = {"CidrIp": cidr}
    if description:
        rng["Description"] = description
    return {"IpProtocol": "tcp", "FromPort": port, "ToPort": port, "IpRanges": [rng]}


class ValidatorSelfTest(unittest.TestCase):
    """The XML validator really is strict (otherwise every 'validated' response proves nothing)."""

    def test_catches_violations(self):
        ns = 'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
        good = (f'<DeleteSecurityGroupResponse {ns}><requestId>r</requestId><return>true</return>'
                '<groupId>sg-1</groupId></DeleteSecurityGroupResponse>')
        self.assertEqual(validate_ec2_output("DeleteSecurityGroup", good), [])
        self.assertTrue(validate_ec2_output("DeleteSecurityGroup", good.replace("<return>true", "<return>yes")))
        self.assertTrue(validate_ec2_output("DeleteSecurityGroup", good.replace("<groupId>", "<groupid>")
                                            .replace("</groupId>", "</groupid>")))
        self.assertTrue(validate_ec2_output("CreateSecurityGroup", good.replace("DeleteSecurityGroup", "CreateSecurityGroup")))
        listy = (f'<DescribeSecurityGroupsResponse {ns}><requestId>r</requestId><securityGroupInfo><member>'
                 '<groupId>sg-1</groupId></member></securityGroupInfo></DescribeSecurityGroupsResponse>')
        self.assertTrue(validate_ec2_output("DescribeSecurityGroups", listy))


# ----------------------------------------------------------------------------------------------
# the API


class SecurityGroupApi(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ec2 = ec2_client(cls.server.endpoint, cls.key_id, cls.secret)
        cls.vpc_id = cls.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        cls.other_account, key, secret = h.create_account(cls.state_dir)
        cls.other = ec2_client(cls.server.endpoint, key, secret)

    def assertEc2Error(self, code, fn, message=None, **kwargs):
        with self.assertRaises(ClientError) as cm:
            fn(**kwargs)
        err = cm.exception.response["Error"]
        self.assertEqual(err["Code"], code, cm.exception.response)
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400)
        if message is not None:
            self.assertEqual(err["Message"], message)
        return err

    def create(self, name, client=None, **kw):
        return (client or self.ec2).create_security_group(GroupName=name, Description=f"for {name}", **kw)["GroupId"]

    def describe(self, group_id, client=None):
        return (client or self.ec2).describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]

    def test_create_describe_delete(self):
        r = self.ec2.create_security_group(
            GroupName="api-web", Description="web tier", VpcId=self.vpc_id,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": [{"Key": "team", "Value": "core"}]}])
        gid = r["GroupId"]
        self.assertRegex(gid, r"^sg-[0-9a-f]{17}$")
        self.assertEqual(r["SecurityGroupArn"], f"arn:aws:ec2:{h.REGION}:{self.account}:security-group/{gid}")
        self.assertEqual(r["Tags"], [{"Key": "team", "Value": "core"}])
        g = self.describe(gid)
        self.assertEqual((g["GroupName"], g["Description"], g["VpcId"], g["OwnerId"]),
                         ("api-web", "web tier", self.vpc_id, self.account))
        self.assertEqual(g["IpPermissions"], [])  # a new group: nothing in
        self.assertEqual(g["IpPermissionsEgress"], [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}],
                                                     "Ipv6Ranges": [], "PrefixListIds": [], "UserIdGroupPairs": []}])
        self.assertEqual(g["Tags"], [{"Key": "team", "Value": "core"}])
        by_filter = self.ec2.describe_security_groups(Filters=[
            {"Name": "group-name", "Values": ["api-w*"]}, {"Name": "vpc-id", "Values": [self.vpc_id]},
            {"Name": "tag:team", "Values": ["core"]}])["SecurityGroups"]
        self.assertEqual([x["GroupId"] for x in by_filter], [gid])
        self.assertEqual(self.ec2.describe_security_groups(GroupNames=["api-web"])["SecurityGroups"][0]["GroupId"], gid)
        self.assertEc2Error("InvalidGroup.Duplicate", self.ec2.create_security_group, GroupName="api-web",
                            Description="again",
                            message=f"The security group 'api-web' already exists for VPC '{self.vpc_id}'")
        self.assertEqual(self.ec2.delete_security_group(GroupName="api-web")["GroupId"], gid)
        self.assertEc2Error("InvalidGroup.NotFound", self.ec2.describe_security_groups, GroupIds=[gid],
                            message=f"The security group '{gid}' does not exist")
        self.assertEc2Error("InvalidGroup.NotFound", self.ec2.delete_security_group, GroupId=gid)
        self.assertGreater(self.ec2.paddock_capture.validated, 5)

    def test_default_group(self):
        d = self.ec2.describe_security_groups(GroupNames=["default"])["SecurityGroups"][0]
        self.assertEqual(d["Description"], "default VPC security group")
        self.assertEqual(d["IpPermissions"], [{"IpProtocol": "-1", "IpRanges": [], "Ipv6Ranges": [], "PrefixListIds": [],
                                               "UserIdGroupPairs": [{"UserId": self.account, "GroupId": d["GroupId"]}]}])
        self.assertEc2Error("CannotDelete", self.ec2.delete_security_group, GroupId=d["GroupId"],
                            message=f'the specified group: "{d["GroupId"]}" name: "default" cannot be deleted by a user')
        self.assertEc2Error("InvalidGroup.Reserved", self.ec2.create_security_group, GroupName="default", Description="x")
        # Its rules can change, like any group's; put them back after.
        rules = self.ec2.describe_security_group_rules(
            Filters=[{"Name": "group-id", "Values": [d["GroupId"]]}])["SecurityGroupRules"]
        self.assertEqual(sorted(r["IsEgress"] for r in rules), [False, True])
        ingress = next(r for r in rules if not r["IsEgress"])
        self.assertEqual(ingress["ReferencedGroupInfo"]["GroupId"], d["GroupId"])
        self.assertEqual((ingress["IpProtocol"], ingress["FromPort"], ingress["ToPort"]), ("-1", -1, -1))
        r = self.ec2.revoke_security_group_ingress(GroupId=d["GroupId"], SecurityGroupRuleIds=[ingress["SecurityGroupRuleId"]])
        self.assertTrue(r["Return"])
        self.assertEqual(self.describe(d["GroupId"])["IpPermissions"], [])
        self.ec2.authorize_security_group_ingress(GroupId=d["GroupId"], IpPermissions=[
            {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": d["GroupId"]}]}])
        self.assertEqual(self.describe(d["GroupId"])["IpPermissions"], d["IpPermissions"])

    def test_rules_in_and_out(self):
        web, lb = self.create("rules-web"), self.create("rules-lb")
        r = self.ec2.authorize_security_group_ingress(GroupId=web, IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80,
             "IpRanges": [{"CidrIp": "10.0.0.0/8", "Description": "lan"}, {"CidrIp": "192.168.0.0/16"}]},
            {"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8090, "UserIdGroupPairs": [{"GroupId": lb, "Description": "lb"}]},
            {"IpProtocol": "icmp", "FromPort": 8, "ToPort": -1, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
            TagSpecifications=[{"ResourceType": "security-group-rule", "Tags": [{"Key": "why", "Value": "test"}]}])
        self.assertTrue(r["Return"])
        added = r["SecurityGroupRules"]
        self.assertEqual(len(added), 4)
        self.assertEqual(len({x["SecurityGroupRuleId"] for x in added}), 4)
        for x in added:
            self.assertRegex(x["SecurityGroupRuleId"], r"^sgr-[0-9a-f]{17}$")
            self.assertEqual((x["GroupId"], x["GroupOwnerId"], x["IsEgress"]), (web, self.account, False))
            self.assertEqual(x["Tags"], [{"Key": "why", "Value": "test"}])
            self.assertTrue(x["SecurityGroupRuleArn"].endswith(":security-group-rule/" + x["SecurityGroupRuleId"]))
        self.assertEqual(added[2]["ReferencedGroupInfo"], {"GroupId": lb, "UserId": self.account})
        # The legacy flat parameters.
        self.ec2.authorize_security_group_ingress(GroupId=web, IpProtocol="udp", FromPort=53, ToPort=53, CidrIp="10.0.0.0/8")
        g = self.describe(web)
        perms = {(p["IpProtocol"], p.get("FromPort"), p.get("ToPort")): p for p in g["IpPermissions"]}
        self.assertEqual(perms[("tcp", 80, 80)]["IpRanges"], [{"CidrIp": "10.0.0.0/8", "Description": "lan"},
                                                              {"CidrIp": "192.168.0.0/16"}])
        self.assertEqual(perms[("tcp", 8080, 8090)]["UserIdGroupPairs"],
                         [{"Description": "lb", "UserId": self.account, "GroupId": lb}])
        self.assertIn(("icmp", 8, -1), perms)
        self.assertIn(("udp", 53, 53), perms)
        # Egress.
        self.ec2.authorize_security_group_egress(GroupId=web, IpPermissions=[tcp(5432, "10.1.0.0/16")])
        self.ec2.revoke_security_group_egress(GroupId=web, IpPermissions=[
            {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
        self.assertEqual(self.describe(web)["IpPermissionsEgress"],
                         [{"IpProtocol": "tcp", "FromPort": 5432, "ToPort": 5432, "IpRanges": [{"CidrIp": "10.1.0.0/16"}],
                           "Ipv6Ranges": [], "PrefixListIds": [], "UserIdGroupPairs": []}])
        # DescribeSecurityGroupRules: by group, by id, pages.
        rules = self.ec2.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [web]}])["SecurityGroupRules"]
        self.assertEqual(len(rules), 6)
        one = self.ec2.describe_security_group_rules(SecurityGroupRuleIds=[added[0]["SecurityGroupRuleId"]])
        self.assertEqual(one["SecurityGroupRules"][0]["CidrIpv4"], "10.0.0.0/8")
        self.assertEqual(one["SecurityGroupRules"][0]["Description"], "lan")
        seen, token, pages = [], None, 0
        while True:
            kw = {"Filters": [{"Name": "group-id", "Values": [web]}], "MaxResults": 5}
            if token:
                kw["NextToken"] = token
            page = self.ec2.describe_security_group_rules(**kw)
            seen += [x["SecurityGroupRuleId"] for x in page["SecurityGroupRules"]]
            pages += 1
            token = page.get("NextToken")
            if not token:
                break
        self.assertEqual((pages, sorted(seen)), (2, sorted(x["SecurityGroupRuleId"] for x in rules)))
        # Revoke by rule id and by properties; a permission that matches nothing is answered, in a
        # default VPC, instead of failing.
        r = self.ec2.revoke_security_group_ingress(GroupId=web, SecurityGroupRuleIds=[added[0]["SecurityGroupRuleId"]])
        self.assertEqual([x["SecurityGroupRuleId"] for x in r["RevokedSecurityGroupRules"]], [added[0]["SecurityGroupRuleId"]])
        r = self.ec2.revoke_security_group_ingress(GroupId=web, IpPermissions=[tcp(80, "192.168.0.0/16"), tcp(81, "1.0.0.0/8")])
        self.assertFalse(r["Return"])
        self.assertEqual(len(r["RevokedSecurityGroupRules"]), 1)
        self.assertEqual(r["UnknownIpPermissions"], [{"IpProtocol": "tcp", "FromPort": 81, "ToPort": 81,
                                                      "IpRanges": [{"CidrIp": "1.0.0.0/8"}], "Ipv6Ranges": [],
                                                      "PrefixListIds": [], "UserIdGroupPairs": []}])
        self.assertEc2Error("InvalidSecurityGroupRuleId.NotFound", self.ec2.revoke_security_group_ingress, GroupId=web,
                            SecurityGroupRuleIds=["sgr-0123456789abcdef0"])
        # lb is referenced by web's rule: it cannot go until the rule does.
        self.assertEc2Error("DependencyViolation", self.ec2.delete_security_group, GroupId=lb,
                            message=f"resource {lb} has a dependent object")
        self.ec2.revoke_security_group_ingress(GroupId=web, SecurityGroupRuleIds=[added[2]["SecurityGroupRuleId"]])
        self.ec2.delete_security_group(GroupId=lb)
        self.ec2.delete_security_group(GroupId=web)

    def test_errors(self):
        gid = self.create("errors")
        auth = self.ec2.authorize_security_group_ingress
        auth(GroupId=gid, IpPermissions=[tcp(22, "10.0.0.0/8")])
        self.assertEc2Error("InvalidPermission.Duplicate", auth, GroupId=gid, IpPermissions=[tcp(22, "10.0.0.0/8")],
                            message='the specified rule "peer: 10.0.0.0/8, TCP, from port: 22, to port: 22, ALLOW" '
                                    'already exists')
        self.assertEc2Error("InvalidParameterValue", auth, GroupId=gid,
                            IpPermissions=[{"IpProtocol": "bogus", "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}],
                            message="Invalid value 'bogus' for IP protocol. Unknown protocol.")
        self.assertEc2Error("InvalidParameterValue", auth, GroupId=gid, IpPermissions=[tcp(22, "10.0.0.0/33")],
                            message="CIDR block 10.0.0.0/33 is malformed")
        self.assertEc2Error("InvalidParameterValue", auth, GroupId=gid,
                            IpPermissions=[{"IpProtocol": "tcp", "FromPort": 1, "ToPort": 70000,
                                            "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}],
                            message="TCP/UDP (to) port (70000) out of range")
        self.assertEc2Error("InvalidGroup.NotFound", auth, GroupId=gid,
                            IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": "sg-0123456789abcdef0"}]}],
                            message="The security group 'sg-0123456789abcdef0' does not exist")
        self.assertEc2Error("InvalidGroupId.Malformed", self.ec2.describe_security_groups, GroupIds=["sg-123"])
        self.assertEc2Error("InvalidGroup.NotFound", self.ec2.describe_security_groups, GroupNames=["nope"],
                            message=f"The security group 'nope' does not exist in default VPC '{self.vpc_id}'")
        self.assertEc2Error("InvalidParameterValue", self.ec2.create_security_group, GroupName="sg-web", Description="x")
        self.assertEc2Error("InvalidVpcID.NotFound", self.ec2.create_security_group, GroupName="x", Description="x",
                            VpcId="vpc-0123456789abcdef0")
        self.assertEc2Error("InvalidParameterValue", self.ec2.describe_security_groups,
                            Filters=[{"Name": "color", "Values": ["red"]}], message="The filter 'color' is invalid")
        self.assertEc2Error("InvalidSecurityGroupRuleId.NotFound", self.ec2.describe_security_group_rules,
                            SecurityGroupRuleIds=["sgr-0123456789abcdef0"])
        self.assertEc2Error("DryRunOperation", self.ec2.create_security_group, GroupName="dry", Description="x", DryRun=True)
        # 60 inbound rules per group: one request that would make 61 adds none.
        many = [tcp(1000 + i, "10.0.0.0/8") for i in range(60)]
        self.assertEc2Error("RulesPerSecurityGroupLimitExceeded", auth, GroupId=gid, IpPermissions=many,
                            message="The maximum number of rules per security group has been reached.")
        self.assertEqual(len(self.describe(gid)["IpPermissions"]), 1)
        # What boto3 would refuse to send, sent anyway.
        raw = ec2_client(self.server.endpoint, self.key_id, self.secret, validate_params=False)
        self.assertEc2Error("MissingParameter", raw.create_security_group, GroupName="x", Description="",
                            message="The request must contain the parameter GroupDescription")
        self.assertEc2Error("MissingParameter", raw.delete_security_group)
        self.assertEc2Error("InvalidParameterValue", raw.describe_security_groups, MaxResults=1)

    def test_accounts_cannot_see_or_reference_each_others_groups(self):
        mine = self.create("iso-mine")
        theirs = self.create("iso-theirs", client=self.other)
        other_vpc = self.other.describe_vpcs()["Vpcs"][0]["VpcId"]
        self.assertNotEqual(other_vpc, self.vpc_id)
        names = [g["GroupName"] for g in self.other.describe_security_groups()["SecurityGroups"]]
        self.assertIn("iso-theirs", names)
        self.assertNotIn("iso-mine", names)
        for fn, kw in [(self.other.describe_security_groups, {"GroupIds": [mine]}),
                       (self.other.delete_security_group, {"GroupId": mine}),
                       (self.other.authorize_security_group_ingress, {"GroupId": mine, "IpPermissions": [tcp(1, "1.0.0.0/8")]}),
                       (self.other.authorize_security_group_ingress, {"GroupId": theirs, "IpPermissions": [
                           {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": mine, "UserId": self.account}]}]}),
                       (self.other.describe_security_group_rules, {"Filters": [{"Name": "group-id", "Values": [mine]}]})]:
            if fn == self.other.describe_security_group_rules:
                self.assertEqual(fn(**kw)["SecurityGroupRules"], [])
                continue
            err = self.assertEc2Error("InvalidGroup.NotFound", fn, **kw)
            self.assertIn(mine, err["Message"])
        # The same name in another VPC is another group.
        self.create("iso-mine", client=self.other)
        self.assertEqual(len(self.ec2.describe_security_groups(GroupNames=["iso-mine"])["SecurityGroups"]), 1)

    def test_cli_v1(self):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION)
        env.pop("AWS_PROFILE", None)

        def aws(*args):
            r = subprocess.run([sys.executable, "-m", "awscli", "ec2", *args, "--endpoint-url", self.server.endpoint,
                                "--output", "json"], capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            return json.loads(r.stdout) if r.stdout.strip() else {}

        gid = aws("create-security-group", "--group-name", "cli-web", "--description", "from the cli")["GroupId"]
        aws("authorize-security-group-ingress", "--group-id", gid, "--protocol", "tcp", "--port", "443",
            "--cidr", "0.0.0.0/0")
        g = aws("describe-security-groups", "--group-ids", gid)["SecurityGroups"][0]
        self.assertEqual(g["IpPermissions"][0]["FromPort"], 443)
        aws("delete-security-group", "--group-id", gid)


# ----------------------------------------------------------------------------------------------
# tasks


def _key_str(s):
    """store/key.h: a string with 0x00 escaped, terminated by 0x00 0x01."""
    return s.encode().replace(b"\x00", b"\x00\xff") + b"\x00\x01"


def _ip_int(ip):
    return struct.unpack(">I", bytes(int(x) for x in ip.split(".")))[0]


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
class TaskSecurityGroups(h.PaddockTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        th.httpd_image(cls.state_dir, cls.tmp, "busybox:sg", "sg\n")
        cls.other_account, cls.other_key, cls.other_secret = h.create_account(cls.state_dir)
        cls.connect()

    @classmethod
    def connect(cls):
        cls.ecs = h.ecs_client(cls.server.endpoint, cls.key_id, cls.secret)
        cls.ec2 = ec2_client(cls.server.endpoint, cls.key_id, cls.secret)
        cls.other_ecs = h.ecs_client(cls.server.endpoint, cls.other_key, cls.other_secret)
        cls.other_ec2 = ec2_client(cls.server.endpoint, cls.other_key, cls.other_secret)

    def setUp(self):
        self.running = []  # (ecs client, arn): stopped at the end, so no container outlives the test
        self.addCleanup(self.stop_all)

    def stop_all(self):
        for ecs, arn in self.running:
            try:
                ecs.stop_task(cluster="sg", task=arn)
                th.wait_for_status(self, ecs, "sg", arn, "STOPPED", 30, self.server.log_tail)
            except Exception:  # noqa: BLE001 - best effort: the server may be gone already
                pass

    def run_task(self, ecs, ec2, groups=None):
        ecs.create_cluster(clusterName="sg")
        td = ecs.register_task_definition(
            family="sg-web", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:sg", "essential": True, "stopTimeout": 2}],
        )["taskDefinition"]["taskDefinitionArn"]
        subnet = sorted(ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]["SubnetId"]
        awsvpc = {"subnets": [subnet]}
        if groups is not None:
            awsvpc["securityGroups"] = groups
        r = ecs.run_task(cluster="sg", taskDefinition=td, launchType="FARGATE",
                         networkConfiguration={"awsvpcConfiguration": awsvpc})
        self.assertEqual(r["failures"], [])
        task = r["tasks"][0]
        self.running.append((ecs, task["taskArn"]))
        return task

    def test_run_task_with_a_missing_group_is_refused(self):
        ecs, ec2 = self.ecs, self.ec2
        ecs.create_cluster(clusterName="sg")
        theirs = self.other_ec2.create_security_group(GroupName="theirs", Description="x")["GroupId"]
        for missing in ("sg-0123456789abcdef0", theirs):
            with self.assertRaises(ClientError) as cm:
                self.run_task(ecs, ec2, [missing])
            err = cm.exception.response["Error"]
            self.assertEqual(err["Code"], "InvalidParameterException")
            self.assertEqual(err["Message"], f"Error retrieving security group information for [{missing}]: "
                                             f"The security group '{missing}' does not exist (ECS)")
        self.assertEqual(ecs.list_tasks(cluster="sg")["taskArns"], [])

    def test_a_group_in_use_by_a_task_cannot_be_deleted(self):
        gid = self.ec2.create_security_group(GroupName="in-use", Description="x")["GroupId"]
        task = self.run_task(self.ecs, self.ec2, [gid])
        self.assertEqual(self.ec2.describe_security_groups(GroupIds=[gid])["SecurityGroups"][0]["GroupName"], "in-use")
        with self.assertRaises(ClientError) as cm:
            self.ec2.delete_security_group(GroupId=gid)
        self.assertEqual(cm.exception.response["Error"]["Code"], "DependencyViolation")
        self.ecs.stop_task(cluster="sg", task=task["taskArn"])
        th.wait_for_status(self, self.ecs, "sg", task["taskArn"], "STOPPED", 30, self.server.log_tail)
        self.ec2.delete_security_group(GroupId=gid)  # its address and membership went with the task

    def test_two_accounts_tasks_can_hold_the_same_address(self):
        cls = type(self)
        mine = self.run_task(self.ecs, self.ec2)
        ip = th.task_ip(mine)
        theirs_subnet = sorted(self.other_ec2.describe_subnets()["Subnets"], key=lambda s: s["CidrBlock"])[0]
        self.assertEqual(theirs_subnet["CidrBlock"], "172.31.0.0/20")
        # With the server stopped, make every other address of 172.31.0.0/20 held elsewhere on the
        # node (a third VPC's rows) and the other account's next-fit start just before `ip`: its
        # next task has no address unique on the node, and takes `ip` from its own pool.
        cls.server.stop()
        db = sqlite3.connect(os.path.join(self.state_dir, "paddock.db"))
        first, last = _ip_int("172.31.0.4"), _ip_int("172.31.15.254")
        rows = [(struct.pack(">Q", a) + _key_str("999999999999") + _key_str(h.REGION), b"")
                for a in range(first, last + 1) if a != _ip_int(ip)]
        with db:
            db.executemany("INSERT OR REPLACE INTO t_node_addresses(k, v) VALUES (?, ?)", rows)
            db.execute("INSERT OR REPLACE INTO t_vpc_address_pools(k, v) VALUES (?, ?)",
                       (_key_str(self.other_account) + _key_str(h.REGION) + _key_str(theirs_subnet["SubnetId"]),
                        f"{_ip_int(ip) - 1} 0".encode()))
        db.close()
        cls.server.start()
        cls.connect()
        self.running = [(self.ecs, arn) for _, arn in self.running]
        theirs = self.run_task(self.other_ecs, self.other_ec2)
        self.assertEqual(th.task_ip(theirs), ip)
        described = self.ecs.describe_tasks(cluster="sg", tasks=[mine["taskArn"]])["tasks"][0]
        self.assertEqual(th.task_ip(described), ip)
        self.assertNotEqual(mine["taskArn"].split(":")[4], theirs["taskArn"].split(":")[4])


@unittest.skipIf(skip_reason() is not None, skip_reason() or "")
@unittest.skipIf(not os.environ.get("PADDOCK_OLD_BIN"),
                 "set PADDOCK_OLD_BIN to a paddock built before schema 7 (node-wide address pools)")
class LegacyStateUpgrade(unittest.TestCase):
    """A state directory written by a Paddock before per-VPC pools keeps working: its running task
    keeps its address (re-adopted), the address counts in its VPC's pool, a new task gets another
    one, and stopping the old task releases it."""

    def test_old_state_directory(self):
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="paddock-sg-upgrade-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        # Everything before the upgrade with the old binary: a newer one would write schema 7.
        old_bin, real = os.environ["PADDOCK_OLD_BIN"], h.paddock_bin
        h.paddock_bin = lambda: old_bin
        try:
            account, key, secret = h.create_account(state)
            th.httpd_image(state, tmp, "busybox:old", "old\n")
            old = h.Server(state).start()
        finally:
            h.paddock_bin = real
        ecs = h.ecs_client(old.endpoint, key, secret)
        ec2 = boto3.client("ec2", endpoint_url=old.endpoint, region_name=h.REGION, aws_access_key_id=key,
                           aws_secret_access_key=secret)
        subnet = sorted(ec2.describe_subnets()["Subnets"], key=lambda x: x["CidrBlock"])[0]["SubnetId"]
        ecs.create_cluster(clusterName="up")
        td = ecs.register_task_definition(
            family="up", networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256", memory="512",
            containerDefinitions=[{"name": "web", "image": "busybox:old", "stopTimeout": 2}])["taskDefinition"]
        net = {"awsvpcConfiguration": {"subnets": [subnet]}}
        first = ecs.run_task(cluster="up", taskDefinition="up", launchType="FARGATE", networkConfiguration=net)["tasks"][0]
        th.wait_for_status(self, ecs, "up", first["taskArn"], "RUNNING", 30, old.log_tail)
        old.stop()  # the task keeps running, for the new server's agent to re-adopt

        new = h.Server(state).start()
        self.addCleanup(new.stop)
        ecs = h.ecs_client(new.endpoint, key, secret)
        ec2 = ec2_client(new.endpoint, key, secret)
        ip = th.task_ip(ecs.describe_tasks(cluster="up", tasks=[first["taskArn"]])["tasks"][0])
        self.assertEqual(ip, th.task_ip(first))
        count = lambda: next(x for x in ec2.describe_subnets()["Subnets"] if x["SubnetId"] == subnet)["AvailableIpAddressCount"]
        self.assertEqual(count(), 4090)
        second = ecs.run_task(cluster="up", taskDefinition=td["taskDefinitionArn"], launchType="FARGATE",
                              networkConfiguration=net)["tasks"][0]
        self.assertNotEqual(th.task_ip(second), ip)
        for arn in (first["taskArn"], second["taskArn"]):
            ecs.stop_task(cluster="up", task=arn)
            th.wait_for_status(self, ecs, "up", arn, "STOPPED", 30, new.log_tail)
        self.assertEqual(count(), 4091)


if __name__ == "__main__":
    unittest.main()
