"""IAM through its Query protocol with real clients (boto3, AWS CLI v1): roles, inline and managed
policies with versions, AWS-managed policies, users and their access keys. Every successful
response is checked, from its raw XML, against botocore's output shape (unknown elements, wrong
types and missing required members fail), and every error against IAM's code, HTTP status and
message. Nothing here is about policy enforcement (docs/contracts/iam.md, "Policy evaluation")."""
import datetime
import json
import os
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ET

import paddock_harness as h
import boto3  # noqa: E402
import botocore.session  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

IAM_MODEL = botocore.session.get_session().get_service_model("iam")
NS = "{https://iam.amazonaws.com/doc/2010-05-08/}"

TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                                                 "Action": "sts:AssumeRole"}]}
DOC = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ecs:List*", "Resource": "*"}]}
DOC2 = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["ecs:Describe*"], "Resource": "*"}]}
EXEC_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"


def _validate_xml(elem, shape, path, errors):
    t = shape.type_name
    if t == "structure":
        by_name = {m.serialization.get("name", n): m for n, m in shape.members.items()}
        seen = set()
        for child in elem:
            tag = child.tag.replace(NS, "")
            if tag not in by_name:
                errors.append(f"{path}: unknown element {tag!r} in {shape.name}")
                continue
            seen.add(tag)
            _validate_xml(child, by_name[tag], f"{path}.{tag}", errors)
        for req in shape.required_members:
            name = shape.members[req].serialization.get("name", req)
            if name not in seen:
                errors.append(f"{path}: missing required member {req!r} of {shape.name}")
    elif t == "list":
        for i, child in enumerate(elem):
            if child.tag.replace(NS, "") != "member":
                errors.append(f"{path}: list item is <{child.tag}>, not <member>")
            _validate_xml(child, shape.member, f"{path}[{i}]", errors)
    elif t == "string":
        if len(elem):
            errors.append(f"{path}: string element has children")
        if shape.enum and (elem.text or "") not in shape.enum:
            errors.append(f"{path}: {elem.text!r} not in enum {list(shape.enum)}")
    elif t in ("integer", "long"):
        try:
            int(elem.text)
        except (TypeError, ValueError):
            errors.append(f"{path}: {elem.text!r} is not an integer")
    elif t == "boolean":
        if elem.text not in ("true", "false"):
            errors.append(f"{path}: {elem.text!r} is not a boolean")
    elif t == "timestamp":
        try:
            datetime.datetime.strptime(elem.text, "%Y-%m-%dT%H:%M:%SZ")
        except (TypeError, ValueError):
            errors.append(f"{path}: {elem.text!r} is not an ISO 8601 UTC time")
    else:
        errors.append(f"{path}: validator does not know shape type {t}")


# GetUser without a name, for the root user, answers only UserId, Arn and CreateDate, as IAM does.
ALLOWED_MISSING = {("GetUser", "UserName"), ("GetUser", "Path")}


def validate_iam_xml(operation, body):
    """Violations of the raw XML body against the operation's output shape (empty = valid)."""
    root = ET.fromstring(body)
    errors = []
    if root.tag != f"{NS}{operation}Response":
        return [f"root element is {root.tag}"]
    request_id = root.find(f"{NS}ResponseMetadata/{NS}RequestId")
    if request_id is None or not request_id.text:
        errors.append("no ResponseMetadata/RequestId")
    op = IAM_MODEL.operation_model(operation)
    result = root.find(f"{NS}{operation}Result")
    if op.output_shape is None:
        if result is not None:
            errors.append(f"{operation} has no output but answered a Result")
        return errors
    if result is None:
        return errors + [f"no {operation}Result"]
    _validate_xml(result, op.output_shape, "$", errors)
    return [e for e in errors if not any(f"{m!r}" in e and operation == o for o, m in ALLOWED_MISSING)]


class _XmlCapture:
    def __init__(self):
        self.validated = 0
        self.last = None

    def __call__(self, operation_model, response_dict, **kwargs):
        body = response_dict["body"]
        self.last = (operation_model.name, response_dict["status_code"], body)
        if 200 <= response_dict["status_code"] < 300:
            errs = validate_iam_xml(operation_model.name, body)
            if errs:
                raise h.ShapeViolation(f"{operation_model.name} violates its output shape: {errs[:20]}\n{body[:2000]!r}")
            self.validated += 1
        else:
            root = ET.fromstring(body)
            if root.tag != "ErrorResponse" or root.find("Error/Code") is None or root.find("Error/Type") is None:
                raise h.ShapeViolation(f"error body is not IAM's ErrorResponse: {body[:500]!r}")


def iam_client(endpoint, key_id, secret, region="us-east-1"):
    c = boto3.session.Session().client(
        "iam", endpoint_url=endpoint, region_name=region, aws_access_key_id=key_id, aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}))
    cap = _XmlCapture()
    c.meta.events.register("before-parse.iam.*", cap)
    c.paddock_capture = cap
    return c


class IamTestCase(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.iam = iam_client(cls.server.endpoint, cls.key_id, cls.secret)

    def assertIamError(self, code, status, fn, *args, message=None, **kwargs):
        return self.assertClientError(code, fn, *args, message=message, status=status, **kwargs)

    def new_role(self, name, **extra):
        return self.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST), **extra)["Role"]


class Roles(IamTestCase):
    def test_role_lifecycle(self):
        role = self.new_role("app-role", Path="/svc/", Description="the app", MaxSessionDuration=7200,
                             Tags=[{"Key": "team", "Value": "core"}])
        self.assertRegex(role["RoleId"], r"^AROA[A-Z0-9]{17}$")
        self.assertEqual(role["Arn"], f"arn:aws:iam::{self.account}:role/svc/app-role")
        # botocore decodes the URL-encoded document into a dict.
        self.assertEqual(role["AssumeRolePolicyDocument"], TRUST)
        got = self.iam.get_role(RoleName="app-role")["Role"]
        self.assertEqual(got["MaxSessionDuration"], 7200)
        self.assertEqual(got["Description"], "the app")
        self.assertEqual(got["Tags"], [{"Key": "team", "Value": "core"}])
        self.iam.update_role(RoleName="app-role", Description="new", MaxSessionDuration=3600)
        ec2_trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        self.iam.update_assume_role_policy(RoleName="app-role", PolicyDocument=json.dumps(ec2_trust))
        got = self.iam.get_role(RoleName="app-role")["Role"]
        self.assertEqual((got["Description"], got["MaxSessionDuration"], got["AssumeRolePolicyDocument"]),
                         ("new", 3600, ec2_trust))
        self.iam.tag_role(RoleName="app-role", Tags=[{"Key": "env", "Value": "dev"}])
        self.iam.untag_role(RoleName="app-role", TagKeys=["team"])
        self.assertEqual(self.iam.list_role_tags(RoleName="app-role")["Tags"], [{"Key": "env", "Value": "dev"}])
        self.iam.delete_role(RoleName="app-role")
        self.assertIamError("NoSuchEntity", 404, self.iam.get_role, RoleName="app-role",
                            message="The role with name app-role cannot be found.")
        self.assertGreater(self.iam.paddock_capture.validated, 8)

    def test_role_errors(self):
        self.new_role("dup-role")
        self.assertIamError("EntityAlreadyExists", 409, self.new_role, "DUP-role",
                            message="Role with name DUP-role already exists.")
        self.assertIamError("MalformedPolicyDocument", 400, self.iam.create_role, RoleName="bad-doc",
                            AssumeRolePolicyDocument="{not json", message="This policy contains invalid Json")
        self.assertIamError("ValidationError", 400, self.iam.create_role, RoleName="bad name!",
                            AssumeRolePolicyDocument=json.dumps(TRUST),
                            message="1 validation error detected: Value 'bad name!' at 'roleName' failed to satisfy "
                                    "constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+")
        self.assertIamError("ValidationError", 400, self.new_role, "long-session", MaxSessionDuration=50000)
        self.assertIamError("ValidationError", 400, self.new_role, "bad-path", Path="nope")
        # More than 50 tags in one request breaks the model's list length; 50 in all, the quota.
        self.assertIamError("ValidationError", 400, self.new_role, "many-tags",
                            Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(51)])
        self.new_role("tagged", Tags=[{"Key": f"a{i}", "Value": "v"} for i in range(30)])
        self.assertIamError("LimitExceeded", 409, self.iam.tag_role, RoleName="tagged",
                            Tags=[{"Key": f"b{i}", "Value": "v"} for i in range(30)],
                            message="Cannot exceed quota for TagsPerRole: 50.")

    def test_delete_role_conflicts(self):
        self.new_role("busy-role")
        self.iam.attach_role_policy(RoleName="busy-role", PolicyArn=EXEC_POLICY)
        self.assertIamError("DeleteConflict", 409, self.iam.delete_role, RoleName="busy-role",
                            message="Cannot delete entity, must detach all policies first.")
        self.iam.detach_role_policy(RoleName="busy-role", PolicyArn=EXEC_POLICY)
        self.iam.put_role_policy(RoleName="busy-role", PolicyName="inline", PolicyDocument=json.dumps(DOC))
        self.assertIamError("DeleteConflict", 409, self.iam.delete_role, RoleName="busy-role",
                            message="Cannot delete entity, must delete policies first.")
        self.iam.delete_role_policy(RoleName="busy-role", PolicyName="inline")
        self.iam.delete_role(RoleName="busy-role")

    def test_list_roles_pages(self):
        for i in range(5):
            self.new_role(f"page-{i}", Path="/paged/")
        first = self.iam.list_roles(PathPrefix="/paged/", MaxItems=2)
        self.assertTrue(first["IsTruncated"])
        names = [r["RoleName"] for r in first["Roles"]]
        marker = first["Marker"]
        while marker:
            page = self.iam.list_roles(PathPrefix="/paged/", MaxItems=2, Marker=marker)
            names += [r["RoleName"] for r in page["Roles"]]
            marker = page.get("Marker")
        self.assertEqual(names, [f"page-{i}" for i in range(5)])
        every = [r["RoleName"] for r in self.iam.get_paginator("list_roles").paginate(PathPrefix="/paged/",
                                                                                       PaginationConfig={"PageSize": 3})
                 .build_full_result()["Roles"]]
        self.assertEqual(every, names)

    def test_any_region_reaches_the_same_iam(self):
        self.new_role("global-role")
        other = iam_client(self.server.endpoint, self.key_id, self.secret, region="eu-west-1")
        self.assertEqual(other.get_role(RoleName="global-role")["Role"]["RoleName"], "global-role")

    def test_service_linked_role(self):
        role = self.iam.create_service_linked_role(AWSServiceName="ecs.amazonaws.com")["Role"]
        self.assertEqual(role["RoleName"], "AWSServiceRoleForECS")
        self.assertEqual(role["Path"], "/aws-service-role/ecs.amazonaws.com/")
        self.assertIamError("InvalidInput", 400, self.iam.create_service_linked_role, AWSServiceName="ecs.amazonaws.com",
                            message="Service role name AWSServiceRoleForECS has been taken in this account, please try "
                                    "a different suffix.")

    def test_roles_are_per_account(self):
        self.new_role("mine-only")
        _, key, secret = h.create_account(self.state_dir)
        other = iam_client(self.server.endpoint, key, secret)
        self.assertIamError("NoSuchEntity", 404, other.get_role, RoleName="mine-only")


class ManagedPolicies(IamTestCase):
    def test_policy_versions(self):
        p = self.iam.create_policy(PolicyName="read-ecs", PolicyDocument=json.dumps(DOC), Description="d")["Policy"]
        self.assertRegex(p["PolicyId"], r"^ANPA[A-Z0-9]{17}$")
        self.assertEqual(p["Arn"], f"arn:aws:iam::{self.account}:policy/read-ecs")
        self.assertEqual((p["DefaultVersionId"], p["AttachmentCount"], p["IsAttachable"]), ("v1", 0, True))
        arn = p["Arn"]
        v2 = self.iam.create_policy_version(PolicyArn=arn, PolicyDocument=json.dumps(DOC2), SetAsDefault=True)
        self.assertEqual(v2["PolicyVersion"]["VersionId"], "v2")
        got = self.iam.get_policy_version(PolicyArn=arn, VersionId="v2")["PolicyVersion"]
        self.assertEqual(got["Document"], DOC2)
        self.assertTrue(got["IsDefaultVersion"])
        for _ in range(3):
            self.iam.create_policy_version(PolicyArn=arn, PolicyDocument=json.dumps(DOC))
        self.assertIamError("LimitExceeded", 409, self.iam.create_policy_version, PolicyArn=arn,
                            PolicyDocument=json.dumps(DOC))
        versions = [v["VersionId"] for v in self.iam.list_policy_versions(PolicyArn=arn)["Versions"]]
        self.assertEqual(versions, ["v5", "v4", "v3", "v2", "v1"])
        self.assertIamError("DeleteConflict", 409, self.iam.delete_policy_version, PolicyArn=arn, VersionId="v2",
                            message="Cannot delete the default version of a policy.")
        self.iam.set_default_policy_version(PolicyArn=arn, VersionId="v5")
        self.assertEqual(self.iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"], "v5")
        self.assertIamError("DeleteConflict", 409, self.iam.delete_policy, PolicyArn=arn)
        for v in ("v1", "v2", "v3", "v4"):
            self.iam.delete_policy_version(PolicyArn=arn, VersionId=v)
        self.iam.delete_policy(PolicyArn=arn)
        self.assertIamError("NoSuchEntity", 404, self.iam.get_policy, PolicyArn=arn)

    def test_attachments_count_and_block_delete(self):
        arn = self.iam.create_policy(PolicyName="attached-one", PolicyDocument=json.dumps(DOC))["Policy"]["Arn"]
        self.new_role("attach-role")
        self.iam.attach_role_policy(RoleName="attach-role", PolicyArn=arn)
        self.iam.attach_role_policy(RoleName="attach-role", PolicyArn=EXEC_POLICY)
        self.assertEqual(self.iam.get_policy(PolicyArn=arn)["Policy"]["AttachmentCount"], 1)
        attached = self.iam.list_attached_role_policies(RoleName="attach-role")["AttachedPolicies"]
        self.assertEqual(sorted(a["PolicyArn"] for a in attached), sorted([arn, EXEC_POLICY]))
        self.assertIamError("DeleteConflict", 409, self.iam.delete_policy, PolicyArn=arn,
                            message="Cannot delete a policy attached to entities.")
        only = self.iam.list_policies(OnlyAttached=True)["Policies"]
        self.assertIn(arn, [p["Arn"] for p in only])
        self.assertIn(EXEC_POLICY, [p["Arn"] for p in only])
        self.iam.detach_role_policy(RoleName="attach-role", PolicyArn=arn)
        self.assertIamError("NoSuchEntity", 404, self.iam.detach_role_policy, RoleName="attach-role", PolicyArn=arn)
        self.assertIamError("NoSuchEntity", 404, self.iam.attach_role_policy, RoleName="attach-role",
                            PolicyArn=f"arn:aws:iam::{self.account}:policy/none",
                            message=f"Policy arn:aws:iam::{self.account}:policy/none does not exist or is not attachable.")

    def test_aws_managed_policies(self):
        for arn in ("arn:aws:iam::aws:policy/AdministratorAccess", "arn:aws:iam::aws:policy/ReadOnlyAccess", EXEC_POLICY,
                    "arn:aws:iam::aws:policy/service-role/AmazonEC2ContainerServiceRole",
                    "arn:aws:iam::aws:policy/AmazonECS_FullAccess", "arn:aws:iam::aws:policy/AmazonSSMReadOnlyAccess",
                    "arn:aws:iam::aws:policy/SecretsManagerReadWrite", "arn:aws:iam::aws:policy/CloudWatchLogsFullAccess",
                    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly"):
            p = self.iam.get_policy(PolicyArn=arn)["Policy"]
            doc = self.iam.get_policy_version(PolicyArn=arn, VersionId=p["DefaultVersionId"])["PolicyVersion"]["Document"]
            self.assertEqual(doc["Version"], "2012-10-17", arn)
        # AWS's documents whole (docs/contracts/iam.md, "Documents"), URL-encoded in the XML as IAM's are.
        catalogue = {p["name"]: p for p in json.load(open(os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "src", "iam", "aws_managed_policies.json")))["policies"]}

        def actions(doc):
            return [a for st in doc["Statement"] for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])]

        for name, version, updated, statements, count in (
                ("ReadOnlyAccess", "v188", "2026-07-21T18:42:30", 3, 2914),
                ("AmazonECS_FullAccess", "v21", "2024-08-13T19:39:37", 9, 127),
                ("SecretsManagerReadWrite", "v6", "2026-08-25T23:37:10", 5, 31)):
            arn = f"arn:aws:iam::aws:policy/{name}"
            p = self.iam.get_policy(PolicyArn=arn)["Policy"]
            self.assertEqual((p["DefaultVersionId"], p["UpdateDate"].strftime("%Y-%m-%dT%H:%M:%S")), (version, updated))
            got = self.iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]
            raw = ET.fromstring(self.iam.paddock_capture.last[2]).find(f"{NS}GetPolicyVersionResult/{NS}PolicyVersion/{NS}Document").text
            self.assertTrue(raw.startswith("%7B"), raw[:40])
            self.assertEqual(json.loads(urllib.parse.unquote(raw)), catalogue[name]["document"])
            self.assertEqual(got["Document"], catalogue[name]["document"])
            self.assertEqual((len(got["Document"]["Statement"]), len(actions(got["Document"]))), (statements, count), name)
        read_only = self.iam.get_policy_version(PolicyArn="arn:aws:iam::aws:policy/ReadOnlyAccess", VersionId="v188")
        self.assertTrue({"ecs:Describe*", "ecs:List*", "ssm:Get*", "sts:GetCallerIdentity"} <= set(
            actions(read_only["PolicyVersion"]["Document"])))
        ecs = self.iam.get_policy_version(PolicyArn="arn:aws:iam::aws:policy/AmazonECS_FullAccess",
                                          VersionId="v21")["PolicyVersion"]["Document"]
        self.assertIn({"Sid": "TasksPassRolePolicy", "Effect": "Allow", "Action": "iam:PassRole", "Resource": ["*"],
                       "Condition": {"StringLike": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}}, ecs["Statement"])
        doc = self.iam.get_policy_version(PolicyArn=EXEC_POLICY, VersionId="v1")["PolicyVersion"]["Document"]
        self.assertEqual(sorted(doc["Statement"][0]["Action"]),
                         sorted(["ecr:GetAuthorizationToken", "ecr:BatchCheckLayerAvailability",
                                 "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage", "logs:CreateLogStream",
                                 "logs:PutLogEvents"]))
        aws = [p["PolicyName"] for p in self.iam.list_policies(Scope="AWS", MaxItems=1000)["Policies"]]
        self.assertIn("AdministratorAccess", aws)
        local = self.iam.list_policies(Scope="Local")["Policies"]
        self.assertFalse(any(p["Arn"].startswith("arn:aws:iam::aws:") for p in local))
        self.assertIamError("AccessDenied", 403, self.iam.create_policy_version, PolicyArn=EXEC_POLICY,
                            PolicyDocument=json.dumps(DOC))
        self.assertIamError("AccessDenied", 403, self.iam.delete_policy, PolicyArn=EXEC_POLICY)

    def test_permissions_boundaries(self):
        arn = self.iam.create_policy(PolicyName="boundary-one", PolicyDocument=json.dumps(DOC))["Policy"]["Arn"]
        self.new_role("bounded-role", PermissionsBoundary=arn)
        got = self.iam.get_role(RoleName="bounded-role")["Role"]
        self.assertEqual(got["PermissionsBoundary"], {"PermissionsBoundaryType": "PermissionsBoundaryPolicy", "PermissionsBoundaryArn": arn})
        self.assertEqual(self.iam.get_policy(PolicyArn=arn)["Policy"]["PermissionsBoundaryUsageCount"], 1)
        self.assertIamError("DeleteConflict", 409, self.iam.delete_policy, PolicyArn=arn)
        self.iam.delete_role_permissions_boundary(RoleName="bounded-role")
        self.assertNotIn("PermissionsBoundary", self.iam.get_role(RoleName="bounded-role")["Role"])
        self.iam.create_user(UserName="bounded-user")
        self.iam.put_user_permissions_boundary(UserName="bounded-user", PermissionsBoundary=EXEC_POLICY)
        self.assertEqual(self.iam.get_user(UserName="bounded-user")["User"]["PermissionsBoundary"]["PermissionsBoundaryArn"],
                         EXEC_POLICY)
        self.iam.put_role_permissions_boundary(RoleName="bounded-role", PermissionsBoundary=arn)
        self.iam.delete_role(RoleName="bounded-role")
        self.assertEqual(self.iam.get_policy(PolicyArn=arn)["Policy"]["PermissionsBoundaryUsageCount"], 0)
        self.iam.delete_policy(PolicyArn=arn)

    def test_malformed_policy_document(self):
        self.assertIamError("MalformedPolicyDocument", 400, self.iam.create_policy, PolicyName="broken",
                            PolicyDocument="[1, 2", message="This policy contains invalid Json")
        # The grammar is checked when the document is written, with AWS's texts; nothing is made.
        with_principal = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "ecs:*", "Resource": "*"}]}
        self.assertIamError("MalformedPolicyDocument", 400, self.iam.create_policy, PolicyName="broken",
                            PolicyDocument=json.dumps(with_principal),
                            message="Policy document should not specify a principal.")
        self.assertIamError("MalformedPolicyDocument", 400, self.iam.create_role, RoleName="broken",
                            AssumeRolePolicyDocument=json.dumps(
                                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole"}]}),
                            message="Missing required field Principal")
        names = [p["PolicyName"] for p in self.iam.list_policies(Scope="Local")["Policies"]]
        self.assertNotIn("broken", names)
        self.assertNotIn("broken", [r["RoleName"] for r in self.iam.list_roles()["Roles"]])


class InlinePolicies(IamTestCase):
    def test_role_and_user_inline_policies(self):
        self.new_role("inline-role")
        self.iam.create_user(UserName="inline-user")
        for kind, name in (("role", "inline-role"), ("user", "inline-user")):
            put = getattr(self.iam, f"put_{kind}_policy")
            get = getattr(self.iam, f"get_{kind}_policy")
            lst = getattr(self.iam, f"list_{kind}_policies")
            delete = getattr(self.iam, f"delete_{kind}_policy")
            key = "RoleName" if kind == "role" else "UserName"
            put(**{key: name}, PolicyName="p1", PolicyDocument=json.dumps(DOC))
            put(**{key: name}, PolicyName="p2", PolicyDocument=json.dumps(DOC2))
            got = get(**{key: name}, PolicyName="p2")
            self.assertEqual((got[key], got["PolicyName"], got["PolicyDocument"]), (name, "p2", DOC2))
            self.assertEqual(lst(**{key: name})["PolicyNames"], ["p1", "p2"])
            delete(**{key: name}, PolicyName="p1")
            self.assertIamError("NoSuchEntity", 404, get, **{key: name}, PolicyName="p1",
                                message=f"The {kind} policy with name p1 cannot be found.")
            self.assertIamError("MalformedPolicyDocument", 400, put, **{key: name}, PolicyName="bad",
                                PolicyDocument="nope")

    def test_cli_v1_reads_a_role_policy(self):
        self._cli_reads_a_role_policy([sys.executable, "-m", "awscli"], "cli-role")

    def test_cli_v2_reads_a_role_policy(self):
        if not os.path.exists("/usr/bin/aws"):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        self._cli_reads_a_role_policy(["/usr/bin/aws"], "cli2-role")

    def _cli_reads_a_role_policy(self, cli, role):
        self.new_role(role)
        self.iam.put_role_policy(RoleName=role, PolicyName="p", PolicyDocument=json.dumps(DOC))
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION)
        env.pop("AWS_PROFILE", None)
        for args, check in ((["get-role-policy", "--role-name", role, "--policy-name", "p"],
                             lambda out: self.assertEqual(out["PolicyDocument"], DOC)),
                            (["get-role", "--role-name", role],
                             lambda out: self.assertEqual(out["Role"]["AssumeRolePolicyDocument"], TRUST)),
                            (["list-roles", "--path-prefix", "/"],
                             lambda out: self.assertIn(role, [r["RoleName"] for r in out["Roles"]]))):
            r = subprocess.run([*cli, "iam", *args, "--endpoint-url", self.server.endpoint, "--output", "json"],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            check(json.loads(r.stdout))


class UsersAndKeys(IamTestCase):
    def test_user_lifecycle(self):
        u = self.iam.create_user(UserName="ci-user", Path="/ci/", Tags=[{"Key": "k", "Value": "v"}])["User"]
        self.assertRegex(u["UserId"], r"^AIDA[A-Z0-9]{17}$")
        self.assertEqual(u["Arn"], f"arn:aws:iam::{self.account}:user/ci/ci-user")
        self.assertEqual(self.iam.get_user(UserName="ci-user")["User"]["Tags"], [{"Key": "k", "Value": "v"}])
        self.assertIn("ci-user", [x["UserName"] for x in self.iam.list_users(PathPrefix="/ci/")["Users"]])
        self.iam.tag_user(UserName="ci-user", Tags=[{"Key": "k2", "Value": "v2"}])
        self.iam.untag_user(UserName="ci-user", TagKeys=["k"])
        self.assertEqual(self.iam.list_user_tags(UserName="ci-user")["Tags"], [{"Key": "k2", "Value": "v2"}])
        self.assertIamError("EntityAlreadyExists", 409, self.iam.create_user, UserName="CI-USER",
                            message="User with name CI-USER already exists.")
        self.iam.attach_user_policy(UserName="ci-user", PolicyArn=EXEC_POLICY)
        self.assertEqual([p["PolicyArn"] for p in self.iam.list_attached_user_policies(UserName="ci-user")["AttachedPolicies"]],
                         [EXEC_POLICY])
        self.assertIamError("DeleteConflict", 409, self.iam.delete_user, UserName="ci-user",
                            message="Cannot delete entity, must detach all policies first.")
        self.iam.detach_user_policy(UserName="ci-user", PolicyArn=EXEC_POLICY)
        self.iam.delete_user(UserName="ci-user")
        self.assertIamError("NoSuchEntity", 404, self.iam.get_user, UserName="ci-user",
                            message="The user with name ci-user cannot be found.")

    def test_get_user_without_name_is_the_caller(self):
        root = self.iam.get_user()["User"]
        self.assertEqual((root["UserId"], root["Arn"]), (self.account, f"arn:aws:iam::{self.account}:root"))
        self.iam.create_user(UserName="whoami")
        # A user may manage itself once a policy says so (the policy variable names the caller).
        self.iam.put_user_policy(UserName="whoami", PolicyName="self", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["iam:GetUser", "iam:CreateAccessKey"],
                           "Resource": "arn:aws:iam::*:user/${aws:username}"}]}))
        key = self.iam.create_access_key(UserName="whoami")["AccessKey"]
        as_user = iam_client(self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        me = as_user.get_user()["User"]
        self.assertEqual(me["UserName"], "whoami")
        # A user's CreateAccessKey without a name acts for the user.
        self.assertEqual(as_user.create_access_key()["AccessKey"]["UserName"], "whoami")

    def test_user_key_authenticates_until_inactive_or_deleted(self):
        self.iam.create_user(UserName="key-user")
        key = self.iam.create_access_key(UserName="key-user")["AccessKey"]
        self.assertRegex(key["AccessKeyId"], r"^AKIA[A-Z2-7]{16}$")
        self.assertEqual((key["UserName"], key["Status"]), ("key-user", "Active"))
        self.iam.put_user_policy(UserName="key-user", PolicyName="list", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "ecs:ListClusters", "Resource": "*"}]}))
        ecs = h.ecs_client(self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        ecs.list_clusters()  # authenticates as the user, whose policy allows it
        self.iam.create_access_key(UserName="key-user")
        self.assertIamError("LimitExceeded", 409, self.iam.create_access_key, UserName="key-user",
                            message="Cannot exceed quota for AccessKeysPerUser: 2")
        listed = self.iam.list_access_keys(UserName="key-user")["AccessKeyMetadata"]
        self.assertEqual(len(listed), 2)
        self.iam.update_access_key(UserName="key-user", AccessKeyId=key["AccessKeyId"], Status="Inactive")
        self.assertEqual({k["AccessKeyId"]: k["Status"] for k in self.iam.list_access_keys(UserName="key-user")
                          ["AccessKeyMetadata"]}[key["AccessKeyId"]], "Inactive")
        self.assertClientError("UnrecognizedClientException", ecs.list_clusters,
                               message="The security token included in the request is invalid.")
        as_user = iam_client(self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        self.assertIamError("InvalidClientTokenId", 403, as_user.get_user,
                            message="The security token included in the request is invalid.")
        self.iam.update_access_key(UserName="key-user", AccessKeyId=key["AccessKeyId"], Status="Active")
        ecs.list_clusters()
        self.assertIamError("DeleteConflict", 409, self.iam.delete_user, UserName="key-user",
                            message="Cannot delete entity, must delete access keys first.")
        for k in self.iam.list_access_keys(UserName="key-user")["AccessKeyMetadata"]:
            self.iam.delete_access_key(UserName="key-user", AccessKeyId=k["AccessKeyId"])
        self.assertClientError("UnrecognizedClientException", ecs.list_clusters)
        self.assertIamError("NoSuchEntity", 404, self.iam.delete_access_key, UserName="key-user",
                            AccessKeyId=key["AccessKeyId"],
                            message=f"The Access Key with id {key['AccessKeyId']} cannot be found.")
        self.iam.delete_user_policy(UserName="key-user", PolicyName="list")
        self.iam.delete_user(UserName="key-user")

    def test_another_users_key_is_out_of_reach(self):
        self.iam.create_user(UserName="owner-a")
        self.iam.create_user(UserName="owner-b")
        key = self.iam.create_access_key(UserName="owner-a")["AccessKey"]
        self.assertIamError("NoSuchEntity", 404, self.iam.update_access_key, UserName="owner-b",
                            AccessKeyId=key["AccessKeyId"], Status="Inactive")
        _, other_key, other_secret = h.create_account(self.state_dir)
        other = iam_client(self.server.endpoint, other_key, other_secret)
        self.assertIamError("NoSuchEntity", 404, other.delete_access_key, AccessKeyId=key["AccessKeyId"])


class AccountDeletion(IamTestCase):
    def test_delete_account_reaps_iam_and_users_keys(self):
        acct = "%012d" % (int.from_bytes(os.urandom(6), "big") % 10 ** 12)
        _, kid, sec = h.create_account(self.state_dir, acct, "doomed")
        doomed = iam_client(self.server.endpoint, kid, sec)
        doomed.create_role(RoleName="doomed-role", AssumeRolePolicyDocument=json.dumps(TRUST))
        doomed.attach_role_policy(RoleName="doomed-role", PolicyArn=EXEC_POLICY)
        arn = doomed.create_policy(PolicyName="doomed-policy", PolicyDocument=json.dumps(DOC))["Policy"]["Arn"]
        doomed.create_user(UserName="doomed-user")
        doomed.put_user_policy(UserName="doomed-user", PolicyName="p", PolicyDocument=json.dumps(DOC))
        user_key = doomed.create_access_key(UserName="doomed-user")["AccessKey"]
        user_ecs = h.ecs_client(self.server.endpoint, user_key["AccessKeyId"], user_key["SecretAccessKey"])
        user_ecs.list_clusters()
        self.new_role("bystander-role")

        h.admin(self.state_dir, "delete-account", "--account", acct)
        # Deleting waits out the key cache's lifetime first: the user's key is refused at once after.
        self.assertClientError("UnrecognizedClientException", user_ecs.list_clusters)
        # The same account id again: nothing of the old one remains.
        _, kid, sec = h.create_account(self.state_dir, acct, "reborn")
        reborn = iam_client(self.server.endpoint, kid, sec)
        self.assertEqual(reborn.list_roles()["Roles"], [])
        self.assertEqual(reborn.list_users()["Users"], [])
        self.assertEqual(reborn.list_policies(Scope="Local")["Policies"], [])
        self.assertIamError("NoSuchEntity", 404, reborn.get_policy, PolicyArn=arn)
        self.assertEqual(self.iam.get_role(RoleName="bystander-role")["Role"]["RoleName"], "bystander-role")


if __name__ == "__main__":
    import unittest
    unittest.main()
