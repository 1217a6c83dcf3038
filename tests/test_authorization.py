"""IAM enforcement end to end (docs/contracts/iam.md, "Enforcement"): a real server, real SigV4, boto3
and the AWS CLI v1. An account's root may do everything; an IAM user or a role session only what its
policies allow, with AWS's exact AccessDenied texts, and a denied call changes nothing. PassRole is
checked at RegisterTaskDefinition with `iam:PassedToService`; an explicit Deny beats an Allow;
GetCallerIdentity is always allowed; AssumeRole evaluates the trust policy and the session acts as
the role."""
import json
import os
import subprocess
import threading

import paddock_harness as h
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

TASK_ROLE_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def client(service, endpoint, key_id, secret, token=None, region=h.REGION):
    return boto3.session.Session().client(
        service, endpoint_url=endpoint, region_name=region if service != "iam" else "us-east-1",
        aws_access_key_id=key_id, aws_secret_access_key=secret, aws_session_token=token,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}))


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action, resource="*", **extra):
    return dict({"Effect": "Allow", "Action": action, "Resource": resource}, **extra)


def deny(action, resource="*"):
    return {"Effect": "Deny", "Action": action, "Resource": resource}


class Authorization(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.iam = client("iam", cls.server.endpoint, cls.key_id, cls.secret)

    def user(self, name, *statements):
        """An IAM user with one inline policy of `statements` (none: no policy); its ECS client."""
        self.iam.create_user(UserName=name)
        if statements:
            self.iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=policy(*statements))
        key = self.iam.create_access_key(UserName=name)["AccessKey"]
        self.user_arn = f"arn:aws:iam::{self.account}:user/{name}"
        return key["AccessKeyId"], key["SecretAccessKey"]

    def denial(self, arn, action, resource, explicit=False):
        why = ("with an explicit deny in an identity-based policy" if explicit
               else f"because no identity-based policy allows the {action} action")
        return f"User: {arn} is not authorized to perform: {action} on resource: {resource} {why}"

    def test_root_may_do_everything_and_a_user_only_what_its_policies_allow(self):
        self.ecs.list_clusters()  # root: no policy needed
        kid, secret = self.user("nobody")
        ecs = client("ecs", self.server.endpoint, kid, secret)
        self.assertClientError("AccessDeniedException", ecs.list_clusters,
                               message=self.denial(self.user_arn, "ecs:ListClusters", "*"))
        # A denied create changes nothing.
        self.assertClientError("AccessDeniedException", ecs.create_cluster, clusterName="denied-cluster")
        self.assertEqual(self.ecs.describe_clusters(clusters=["denied-cluster"])["clusters"], [])
        # The policy takes effect at once.
        self.iam.put_user_policy(UserName="nobody", PolicyName="p",
                                 PolicyDocument=policy(allow(["ecs:ListClusters", "ecs:CreateCluster"])))
        ecs.list_clusters()
        ecs.create_cluster(clusterName="allowed-cluster")
        # IAM itself is authorized the same way, in IAM's dialect (AccessDenied, 403).
        iam = client("iam", self.server.endpoint, kid, secret)
        with self.assertRaises(ClientError) as cm:
            iam.create_user(UserName="escalate")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 403)
        self.assertEqual(cm.exception.response["Error"]["Message"],
                         self.denial(self.user_arn, "iam:CreateUser", f"arn:aws:iam::{self.account}:user/escalate"))
        with self.assertRaises(ClientError):
            self.iam.get_user(UserName="escalate")

    def test_an_explicit_deny_beats_an_allow(self):
        kid, secret = self.user("denied", allow("ecs:*"), deny("ecs:DeleteCluster"))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        ecs.create_cluster(clusterName="keep-me")
        arn = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/keep-me"
        self.assertClientError("AccessDeniedException", ecs.delete_cluster, cluster="keep-me",
                               message=self.denial(self.user_arn, "ecs:DeleteCluster", arn, explicit=True))
        self.assertEqual(self.ecs.describe_clusters(clusters=["keep-me"])["clusters"][0]["status"], "ACTIVE")

    def test_iam_calls_are_authorized_on_the_entitys_arn_with_its_path(self):
        # A grant on role/svc/* covers a role under /svc/ and not one at /: the role's own ARN, path
        # included, is the resource (the old server authorized every role as if at "/").
        for name, path in (("svc-app", "/svc/"), ("top-app", "/")):
            self.iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))
        kid, secret = self.user("path-reader", allow("iam:GetRole", f"arn:aws:iam::{self.account}:role/svc/*"))
        iam = client("iam", self.server.endpoint, kid, secret)
        self.assertEqual(iam.get_role(RoleName="svc-app")["Role"]["Path"], "/svc/")
        with self.assertRaises(ClientError) as cm:
            iam.get_role(RoleName="top-app")
        self.assertEqual(cm.exception.response["Error"]["Message"],
                         self.denial(self.user_arn, "iam:GetRole", f"arn:aws:iam::{self.account}:role/top-app"))

    def test_ec2_denies_with_unauthorized_operation(self):
        # EC2's own denial: UnauthorizedOperation, HTTP 403, its prefix and no resource named
        # (docs/contracts/default-vpc.md, "Authorization").
        kid, secret = self.user("ec2-reader", allow("ec2:DescribeVpcs"), deny("ec2:CreateSecurityGroup"))
        ec2 = client("ec2", self.server.endpoint, kid, secret)
        vpc_id = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        prefix = "You are not authorized to perform this operation. "
        self.assertClientError(
            "UnauthorizedOperation", ec2.describe_subnets, status=403,
            message=prefix + f"User: {self.user_arn} is not authorized to perform: ec2:DescribeSubnets "
                             "because no identity-based policy allows the ec2:DescribeSubnets action")
        self.assertClientError(
            "UnauthorizedOperation", ec2.create_security_group, GroupName="denied-group", Description="d",
            VpcId=vpc_id, status=403,
            message=prefix + f"User: {self.user_arn} is not authorized to perform: ec2:CreateSecurityGroup "
                             "with an explicit deny in an identity-based policy")
        # The denied create changed nothing.
        root_ec2 = client("ec2", self.server.endpoint, self.key_id, self.secret)
        self.assertEqual(root_ec2.describe_security_groups(
            Filters=[{"Name": "group-name", "Values": ["denied-group"]}])["SecurityGroups"], [])

    def test_a_cluster_condition_scopes_writes_but_not_tag_resource(self):
        # ADR-0005's grant: writes scoped with ArnEquals ecs:cluster. TagResource carries no
        # ecs:cluster key, so the condition never holds for it, as on AWS.
        cluster = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/scoped"
        self.ecs.create_cluster(clusterName="scoped")
        self.ecs.create_cluster(clusterName="other")
        kid, secret = self.user("scoped", allow(["ecs:ListServices", "ecs:TagResource"],
                                                Condition={"ArnEquals": {"ecs:cluster": cluster}}))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        ecs.list_services(cluster="scoped")
        self.assertClientError("AccessDeniedException", ecs.list_services, cluster="other")
        self.assertClientError("AccessDeniedException", ecs.tag_resource, resourceArn=cluster,
                               tags=[{"key": "k", "value": "v"}])

    def test_pass_role_needs_its_grant_and_the_passed_to_service_condition(self):
        role_arn = self.iam.create_role(RoleName="app-task", AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))[
            "Role"]["Arn"]
        kid, secret = self.user("deployer", allow("ecs:RegisterTaskDefinition"))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        td = h.td_min("passrole", taskRoleArn=role_arn)
        self.assertClientError("AccessDeniedException", ecs.register_task_definition, **td,
                               message=self.denial(self.user_arn, "iam:PassRole", role_arn))
        self.assertEqual(self.ecs.list_task_definitions(familyPrefix="passrole")["taskDefinitionArns"], [])
        # A PassRole grant for another service does not admit it.
        self.iam.put_user_policy(UserName="deployer", PolicyName="p", PolicyDocument=policy(
            allow("ecs:RegisterTaskDefinition"),
            allow("iam:PassRole", role_arn, Condition={"StringEquals": {"iam:PassedToService": "lambda.amazonaws.com"}})))
        self.assertClientError("AccessDeniedException", ecs.register_task_definition, **td,
                               message=self.denial(self.user_arn, "iam:PassRole", role_arn))
        self.iam.put_user_policy(UserName="deployer", PolicyName="p", PolicyDocument=policy(
            allow("ecs:RegisterTaskDefinition"),
            allow("iam:PassRole", role_arn, Condition={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}})))
        got = ecs.register_task_definition(**td)["taskDefinition"]
        self.assertEqual(got["taskRoleArn"], role_arn)

    def test_every_launch_path_checks_pass_role_on_the_revision_it_pinned(self):
        role_arn = self.iam.create_role(RoleName="launch-task", AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))[
            "Role"]["Arn"]
        self.ecs.create_cluster(clusterName="launches")
        self.ecs.register_task_definition(**h.td_min("launched", taskRoleArn=role_arn))  # by root
        kid, secret = self.user("launcher", allow(["ecs:RunTask", "ecs:StartTask", "ecs:CreateService",
                                                   "ecs:UpdateService", "ecs:CreateTaskSet"]))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        denied = self.denial(self.user_arn, "iam:PassRole", role_arn)
        self.assertClientError("AccessDeniedException", ecs.run_task, cluster="launches", taskDefinition="launched",
                               launchType="EC2", message=denied)
        self.assertClientError("AccessDeniedException", ecs.start_task, cluster="launches", taskDefinition="launched",
                               containerInstances=["0123456789abcdef0123456789abcdef"], message=denied)
        self.assertClientError("AccessDeniedException", ecs.create_service, cluster="launches", serviceName="svc",
                               taskDefinition="launched", desiredCount=0, launchType="EC2", message=denied)
        self.assertEqual(self.ecs.list_services(cluster="launches")["serviceArns"], [])
        self.assertEqual(self.ecs.list_tasks(cluster="launches")["taskArns"], [])
        # An update that pins a revision with the role is checked too; one that pins none is not.
        self.ecs.register_task_definition(**h.td_min("plain"))
        self.ecs.create_service(cluster="launches", serviceName="svc", taskDefinition="plain", desiredCount=0,
                                launchType="EC2")
        ecs.update_service(cluster="launches", service="svc", desiredCount=0)
        self.assertClientError("AccessDeniedException", ecs.update_service, cluster="launches", service="svc",
                               taskDefinition="launched", message=denied)
        svc = self.ecs.describe_services(cluster="launches", services=["svc"])["services"][0]
        self.assertTrue(svc["taskDefinition"].endswith("task-definition/plain:1"), svc["taskDefinition"])
        # CreateTaskSet pins a revision as well.
        self.ecs.create_service(cluster="launches", serviceName="ext", desiredCount=0,
                                deploymentController={"type": "EXTERNAL"})
        self.assertClientError("AccessDeniedException", ecs.create_task_set, cluster="launches", service="ext",
                               taskDefinition="launched", launchType="EC2", message=denied)
        # With the grant, the same calls pass the check.
        self.iam.put_user_policy(UserName="launcher", PolicyName="pass", PolicyDocument=policy(
            allow("iam:PassRole", role_arn, Condition={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}})))
        ecs.create_service(cluster="launches", serviceName="svc2", taskDefinition="launched", desiredCount=0,
                           launchType="EC2")
        ecs.update_service(cluster="launches", service="svc", taskDefinition="launched")

    def test_a_register_racing_a_launch_never_slips_another_revisions_role_past_pass_role(self):
        # The seed's bare-family race: the launch must be checked on the revision it pins. The user
        # may pass `ok` only; root keeps registering revisions of one family alternating `ok` and
        # `forbidden` while the user creates services from the bare family.
        trust = json.dumps(TASK_ROLE_TRUST)
        ok = self.iam.create_role(RoleName="race-ok", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
        forbidden = self.iam.create_role(RoleName="race-forbidden", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
        self.ecs.create_cluster(clusterName="race")
        self.ecs.register_task_definition(**h.td_min("racing", taskRoleArn=ok))
        kid, secret = self.user("racer", allow("ecs:CreateService"), allow("iam:PassRole", ok))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        stop = threading.Event()

        def register():
            root = client("ecs", self.server.endpoint, self.key_id, self.secret)
            i = 0
            while not stop.is_set() and i < 200:
                root.register_task_definition(**h.td_min("racing", taskRoleArn=forbidden if i % 2 == 0 else ok))
                i += 1

        registrar = threading.Thread(target=register)
        registrar.start()
        created, refused = [], 0
        try:
            for i in range(40):
                try:
                    svc = ecs.create_service(cluster="race", serviceName=f"s{i}", taskDefinition="racing",
                                             desiredCount=0, launchType="EC2")["service"]
                    created.append(svc["taskDefinition"])
                except ClientError as e:
                    self.assertEqual(e.response["Error"]["Code"], "AccessDeniedException")
                    self.assertEqual(e.response["Error"]["Message"], self.denial(self.user_arn, "iam:PassRole", forbidden))
                    refused += 1
        finally:
            stop.set()
            registrar.join()
        self.assertEqual(len(created) + refused, 40)
        for arn in created:  # every service pinned a revision whose role the user may pass
            td = self.ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"]
            self.assertEqual(td["taskRoleArn"], ok, arn)

    def test_get_caller_identity_is_allowed_even_under_an_explicit_deny(self):
        kid, secret = self.user("deny-all", deny("*"))
        sts = client("sts", self.server.endpoint, kid, secret)
        who = sts.get_caller_identity()
        self.assertEqual(who["Arn"], self.user_arn)
        ecs = client("ecs", self.server.endpoint, kid, secret)
        self.assertClientError("AccessDeniedException", ecs.list_clusters,
                               message=self.denial(self.user_arn, "ecs:ListClusters", "*", explicit=True))

    def test_assume_role_evaluates_the_trust_policy_and_the_session_acts_as_the_role(self):
        kid, secret = self.user("assumer", allow("sts:AssumeRole"))
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": self.user_arn}, "Action": "sts:AssumeRole",
             "Condition": {"StringEquals": {"sts:ExternalId": "ticket-42"}}}]}
        role_arn = self.iam.create_role(RoleName="operator", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        sts = client("sts", self.server.endpoint, kid, secret)
        with self.assertRaises(ClientError) as cm:
            sts.assume_role(RoleArn=role_arn, RoleSessionName="no-external-id")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="s1", ExternalId="ticket-42")["Credentials"]
        role_sts = client("sts", self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                          creds["SessionToken"])
        session_arn = f"arn:aws:sts::{self.account}:assumed-role/operator/s1"
        self.assertEqual(role_sts.get_caller_identity()["Arn"], session_arn)
        role_ecs = client("ecs", self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                          creds["SessionToken"])
        self.assertClientError("AccessDeniedException", role_ecs.list_clusters,
                               message=f"User: {session_arn} is not authorized to perform: ecs:ListClusters on "
                                       "resource: * because no identity-based policy allows the ecs:ListClusters action")
        self.iam.put_role_policy(RoleName="operator", PolicyName="list",
                                 PolicyDocument=policy(allow("ecs:ListClusters")))
        role_ecs.list_clusters()
        # Removing the role's policy takes the grant away from the live session.
        self.iam.delete_role_policy(RoleName="operator", PolicyName="list")
        self.assertClientError("AccessDeniedException", role_ecs.list_clusters)

    def assert_session_narrowed(self, tag, **assume):
        """A role allowing ecs:*, assumed with `assume` (session policies allowing ecs:ListClusters only):
        the session may list clusters and may not create one, for want of a session policy."""
        kid, secret = self.user(f"narrower-{tag}", allow("sts:AssumeRole"))
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{self.account}:root"}, "Action": "sts:AssumeRole"}]}
        role = f"wide-{tag}"
        role_arn = self.iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        self.iam.put_role_policy(RoleName=role, PolicyName="all", PolicyDocument=policy(allow("ecs:*")))
        sts = client("sts", self.server.endpoint, kid, secret)
        creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="narrow", **assume)["Credentials"]
        ecs = client("ecs", self.server.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        ecs.list_clusters()
        cluster = f"narrowed-{tag}"
        self.assertClientError(
            "AccessDeniedException", ecs.create_cluster, clusterName=cluster,
            message=f"User: arn:aws:sts::{self.account}:assumed-role/{role}/narrow is not authorized to perform: "
                    f"ecs:CreateCluster on resource: arn:aws:ecs:{h.REGION}:{self.account}:cluster/{cluster} "
                    "because no session policy allows the ecs:CreateCluster action")

    def test_a_session_policy_only_narrows_the_role(self):
        self.assert_session_narrowed("policy", Policy=policy(allow("ecs:ListClusters")))

    def test_session_policy_arns_narrow_the_role_too(self):
        # AssumeRole's PolicyArns gate the session as its Policy does (they were once recorded and
        # ignored, so the session kept every permission of the role).
        list_only = self.iam.create_policy(PolicyName="list-clusters-only",
                                           PolicyDocument=policy(allow("ecs:ListClusters")))["Policy"]["Arn"]
        self.assert_session_narrowed("arns", PolicyArns=[{"arn": list_only}])

    def test_doors_between_accounts(self):
        """Another account's IAM entities, roles and sessions: what a key of this account can reach."""
        account_b, kid_b, secret_b = h.create_account(self.state_dir, None, "doors-b")
        iam_b = client("iam", self.server.endpoint, kid_b, secret_b)
        iam_b.create_user(UserName="b-only")
        trust_a = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{self.account}:root"}, "Action": "sts:AssumeRole"}]}
        trust_b = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account_b}:root"}, "Action": "sts:AssumeRole"}]}
        open_arn = iam_b.create_role(RoleName="trusts-a", AssumeRolePolicyDocument=json.dumps(trust_a))["Role"]["Arn"]
        iam_b.put_role_policy(RoleName="trusts-a", PolicyName="ecs", PolicyDocument=policy(allow("ecs:ListClusters")))
        closed_arn = iam_b.create_role(RoleName="trusts-b", AssumeRolePolicyDocument=json.dumps(trust_b))["Role"]["Arn"]
        client("ecs", self.server.endpoint, kid_b, secret_b).create_cluster(clusterName="b-cluster")

        # A user's key acts in its own account: B's user is not found, and IAM writes land in A.
        kid, secret = self.user("door-tester", allow("iam:*"), allow("sts:AssumeRole"))
        iam_a_user = client("iam", self.server.endpoint, kid, secret)
        self.assertClientError("NoSuchEntity", iam_a_user.get_user, UserName="b-only", status=404)
        # SimulatePrincipalPolicy on another account's ARN: one answer whether the user exists or not.
        answers = []
        for arn in (f"arn:aws:iam::{account_b}:user/b-only", f"arn:aws:iam::{account_b}:user/no-such-user"):
            with self.assertRaises(ClientError) as cm:
                iam_a_user.simulate_principal_policy(PolicySourceArn=arn, ActionNames=["ecs:ListClusters"])
            err = cm.exception.response["Error"]
            answers.append((err["Code"], err["Message"].replace(arn, "<arn>")))
        self.assertEqual(answers[0], answers[1])
        self.assertEqual(answers[0][0], "InvalidInput")

        # AssumeRole across accounts: B's trust decides, and the caller's own policies must allow it.
        sts = client("sts", self.server.endpoint, kid, secret)
        self.assertClientError("AccessDenied", sts.assume_role, RoleArn=closed_arn, RoleSessionName="s1", status=403,
                               message=f"User: {self.user_arn} is not authorized to perform: sts:AssumeRole on "
                                       f"resource: {closed_arn}")
        no_grant_kid, no_grant_secret = self.user("door-no-grant", allow("ecs:*"))
        self.assertClientError("AccessDenied", client("sts", self.server.endpoint, no_grant_kid, no_grant_secret).assume_role,
                               RoleArn=open_arn, RoleSessionName="s2", status=403,
                               message_contains="because no identity-based policy allows the sts:AssumeRole action")
        creds = sts.assume_role(RoleArn=open_arn, RoleSessionName="visitor")["Credentials"]
        session = (creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        who = client("sts", self.server.endpoint, *session).get_caller_identity()
        self.assertEqual(who["Account"], account_b)
        self.assertEqual(who["Arn"], f"arn:aws:sts::{account_b}:assumed-role/trusts-a/visitor")
        # The session acts in B, as the role: B's clusters, nothing of A's, and only what the role allows.
        ecs_session = client("ecs", self.server.endpoint, *session)
        clusters = ecs_session.list_clusters()["clusterArns"]
        self.assertIn(f"arn:aws:ecs:{h.REGION}:{account_b}:cluster/b-cluster", clusters)
        self.assertFalse([c for c in clusters if f":{self.account}:" in c], clusters)
        self.assertClientError("AccessDeniedException", ecs_session.create_cluster, clusterName="planted")
        self.assertClientError("AccessDenied", client("iam", self.server.endpoint, *session).create_user,
                               UserName="planted", status=403)

    def test_simulate_principal_policy_agrees_with_live_decisions(self):
        kid, secret = self.user("simulated", allow("ecs:*"), deny("ecs:DeleteCluster"),
                                allow("ecs:ListServices", Condition={"StringEquals": {"ecs:cluster": "x"}}))
        self.iam.put_user_policy(UserName="simulated", PolicyName="scoped", PolicyDocument=policy(
            deny("ecs:ListServices"), allow("iam:GetUser")))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        self.ecs.create_cluster(clusterName="sim")
        cluster = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/sim"
        cases = [("ecs:ListClusters", "*", lambda: ecs.list_clusters()),
                 ("ecs:DeleteCluster", cluster, lambda: ecs.delete_cluster(cluster="sim")),
                 ("ecs:ListServices", "*", lambda: ecs.list_services(cluster="sim")),
                 ("ec2:DescribeVpcs", "*", lambda: client("ec2", self.server.endpoint, kid, secret).describe_vpcs())]
        for action, resource, call in cases:
            sim = self.iam.simulate_principal_policy(PolicySourceArn=self.user_arn, ActionNames=[action],
                                                     ResourceArns=[resource])["EvaluationResults"][0]
            try:
                call()
                live = "allowed"
            except ClientError as e:
                self.assertIn(e.response["Error"]["Code"], ("AccessDeniedException", "AccessDenied", "UnauthorizedOperation"))
                live = "explicitDeny" if "explicit deny" in e.response["Error"]["Message"] else "implicitDeny"
            self.assertEqual(sim["EvalDecision"], live, (action, sim))
            self.assertEqual((sim["EvalActionName"], sim["EvalResourceName"]), (action, resource))
            if live != "implicitDeny":
                self.assertTrue(sim["MatchedStatements"], sim)
                self.assertIn(sim["MatchedStatements"][0]["SourcePolicyType"], ("user",))
        # A role's policies are simulated too; an unknown principal is NoSuchEntity.
        self.iam.create_role(RoleName="sim-role", AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))
        self.iam.put_role_policy(RoleName="sim-role", PolicyName="p", PolicyDocument=policy(allow("ecs:ListClusters")))
        got = self.iam.simulate_principal_policy(
            PolicySourceArn=f"arn:aws:iam::{self.account}:role/sim-role",
            ActionNames=["ecs:ListClusters", "ecs:CreateCluster"])["EvaluationResults"]
        self.assertEqual([r["EvalDecision"] for r in got], ["allowed", "implicitDeny"])
        with self.assertRaises(ClientError) as cm:
            self.iam.simulate_principal_policy(PolicySourceArn=f"arn:aws:iam::{self.account}:user/nobody-here",
                                               ActionNames=["ecs:ListClusters"])
        self.assertEqual(cm.exception.response["Error"]["Code"], "NoSuchEntity")

    def test_resource_tags_match_the_callers_principal_tag(self):
        # aws:ResourceTag/team against ${aws:PrincipalTag/team}: the user's own IAM tags, read with
        # its policies; a tag change decides the next call.
        for name, team in (("blue-c", "blue"), ("red-c", "red")):
            self.ecs.create_cluster(clusterName=name, tags=[{"key": "team", "value": team}])
        self.iam.create_user(UserName="teamer", Tags=[{"Key": "team", "Value": "blue"}])
        self.iam.put_user_policy(UserName="teamer", PolicyName="p", PolicyDocument=policy(allow(
            "ecs:DescribeClusters",
            Condition={"StringEquals": {"aws:ResourceTag/team": "${aws:PrincipalTag/team}"}})))
        key = self.iam.create_access_key(UserName="teamer")["AccessKey"]
        arn = f"arn:aws:iam::{self.account}:user/teamer"
        ecs = client("ecs", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        red = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/red-c"
        blue = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/blue-c"
        self.assertEqual(ecs.describe_clusters(clusters=["blue-c"])["clusters"][0]["clusterName"], "blue-c")
        self.assertClientError("AccessDeniedException", ecs.describe_clusters, clusters=["red-c"],
                               message=self.denial(arn, "ecs:DescribeClusters", red))
        # Every cluster named is a question of its own: one denied denies the call.
        self.assertClientError("AccessDeniedException", ecs.describe_clusters, clusters=[blue, "red-c"])
        self.iam.tag_user(UserName="teamer", Tags=[{"Key": "team", "Value": "red"}])
        self.assertEqual(ecs.describe_clusters(clusters=[red])["clusters"][0]["clusterName"], "red-c")
        self.assertClientError("AccessDeniedException", ecs.describe_clusters, clusters=["blue-c"])
        # A tag the resource gains decides the next call too.
        self.ecs.tag_resource(resourceArn=blue, tags=[{"key": "team", "value": "red"}])
        ecs.describe_clusters(clusters=["blue-c"])

    def test_tasks_and_task_sets_take_tags_and_a_tasks_tags_decide_its_questions(self):
        # TagResource, UntagResource and ListTagsForResource serve task and task-set ARNs, and a
        # task's aws:ResourceTag/<k> decides the questions about it (StopTask), as for every ECS
        # resource. No agent runs: the registered instance's tasks stay PROVISIONING.
        total = [{"name": "CPU", "type": "INTEGER", "integerValue": 4096},
                 {"name": "MEMORY", "type": "INTEGER", "integerValue": 8192}]
        self.ecs.create_cluster(clusterName="tagged-tasks")
        self.ecs.register_container_instance(cluster="tagged-tasks", totalResources=total)
        self.ecs.register_task_definition(**h.td_min("tagged"))
        blue, red = (self.ecs.run_task(cluster="tagged-tasks", taskDefinition="tagged", launchType="EC2",
                                       tags=[{"key": "team", "value": team}])["tasks"][0]["taskArn"]
                     for team in ("blue", "red"))
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=blue)["tags"], [{"key": "team", "value": "blue"}])
        self.ecs.tag_resource(resourceArn=red, tags=[{"key": "env", "value": "prod"}])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=red)["tags"],
                         [{"key": "env", "value": "prod"}, {"key": "team", "value": "red"}])
        described = self.ecs.describe_tasks(cluster="tagged-tasks", tasks=[red], include=["TAGS"])["tasks"][0]
        self.assertEqual(described["tags"], [{"key": "env", "value": "prod"}, {"key": "team", "value": "red"}])
        short = red.replace("/tagged-tasks/", "/")
        self.assertClientError("InvalidParameterException", self.ecs.tag_resource, resourceArn=short,
                               tags=[{"key": "k", "value": "v"}],
                               message="Long arn format must be used for tagging operations")
        ghost = red[:red.rfind("/") + 1] + "0" * 32
        self.assertClientError("ResourceNotFoundException", self.ecs.list_tags_for_resource, resourceArn=ghost)

        kid, secret = self.user("task-teamer", allow("ecs:StopTask", Condition={
            "StringEquals": {"aws:ResourceTag/team": "blue"}}))
        ecs = client("ecs", self.server.endpoint, kid, secret)
        self.assertClientError("AccessDeniedException", ecs.stop_task, cluster="tagged-tasks", task=red,
                               message=self.denial(self.user_arn, "ecs:StopTask", red))
        self.assertEqual(self.ecs.describe_tasks(cluster="tagged-tasks", tasks=[red])["tasks"][0]["desiredStatus"],
                         "RUNNING")
        self.assertEqual(ecs.stop_task(cluster="tagged-tasks", task=blue)["task"]["desiredStatus"], "STOPPED")
        # The tag the task gains decides the next call.
        self.ecs.untag_resource(resourceArn=red, tagKeys=["team"])
        self.ecs.tag_resource(resourceArn=red, tags=[{"key": "team", "value": "blue"}])
        self.assertEqual(ecs.stop_task(cluster="tagged-tasks", task=red)["task"]["desiredStatus"], "STOPPED")

        # A task set's tags, by its ARN.
        self.ecs.create_service(cluster="tagged-tasks", serviceName="ext", desiredCount=0,
                                deploymentController={"type": "EXTERNAL"})
        ts = self.ecs.create_task_set(cluster="tagged-tasks", service="ext", taskDefinition="tagged",
                                      launchType="EC2", tags=[{"key": "team", "value": "blue"}])["taskSet"]
        self.ecs.tag_resource(resourceArn=ts["taskSetArn"], tags=[{"key": "env", "value": "prod"}])
        self.ecs.untag_resource(resourceArn=ts["taskSetArn"], tagKeys=["team"])
        self.assertEqual(self.ecs.list_tags_for_resource(resourceArn=ts["taskSetArn"])["tags"],
                         [{"key": "env", "value": "prod"}])
        got = self.ecs.describe_task_sets(cluster="tagged-tasks", service="ext", taskSets=[ts["id"]],
                                          include=["TAGS"])["taskSets"][0]
        self.assertEqual(got["tags"], [{"key": "env", "value": "prod"}])
        self.assertClientError("ResourceNotFoundException", self.ecs.list_tags_for_resource,
                               resourceArn=ts["taskSetArn"][:ts["taskSetArn"].rfind("/") + 1] + "42")

    def test_a_deny_outside_the_loopback_range_spares_local_callers(self):
        # aws:SourceIp is the peer address the server sees (the tests connect from 127.0.0.1).
        kid, secret = self.user("local-only", allow("ecs:ListClusters"), {
            "Effect": "Deny", "Action": "*", "Resource": "*",
            "Condition": {"NotIpAddress": {"aws:SourceIp": "127.0.0.0/8"}}})
        ecs = client("ecs", self.server.endpoint, kid, secret)
        ecs.list_clusters()
        kid, secret = self.user("far-only", allow("ecs:ListClusters"), {
            "Effect": "Deny", "Action": "*", "Resource": "*",
            "Condition": {"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/8", "192.0.2.7"]}}})
        self.assertClientError("AccessDeniedException", client("ecs", self.server.endpoint, kid, secret).list_clusters,
                               message=self.denial(self.user_arn, "ecs:ListClusters", "*", explicit=True))

    def test_requested_region_is_the_credential_scopes_region(self):
        kid, secret = self.user("one-region", allow("ecs:ListClusters",
                                                    Condition={"StringEquals": {"aws:RequestedRegion": h.REGION}}))
        client("ecs", self.server.endpoint, kid, secret).list_clusters()
        self.assertClientError("AccessDeniedException",
                               client("ecs", self.server.endpoint, kid, secret, region="eu-west-1").list_clusters)

    def test_simulation_agrees_with_live_decisions_on_tags_source_ip_and_region(self):
        # The simulator takes aws:ResourceTag, aws:SourceIp and aws:RequestedRegion from
        # ContextEntries (it reads no resource and sees no caller); the principal's tags are its own.
        for name, team in (("sim-blue", "blue"), ("sim-red", "red")):
            self.ecs.create_cluster(clusterName=name, tags=[{"key": "team", "value": team}])
        self.iam.create_user(UserName="sim-teamer", Tags=[{"Key": "team", "Value": "blue"}])
        self.iam.put_user_policy(UserName="sim-teamer", PolicyName="p", PolicyDocument=policy(
            allow("ecs:DescribeClusters", Condition={
                "StringEquals": {"aws:ResourceTag/team": "${aws:PrincipalTag/team}",
                                 "aws:RequestedRegion": h.REGION}}),
            {"Effect": "Deny", "Action": "*", "Resource": "*",
             "Condition": {"NotIpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}))
        key = self.iam.create_access_key(UserName="sim-teamer")["AccessKey"]
        ecs = client("ecs", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        arn = f"arn:aws:iam::{self.account}:user/sim-teamer"
        for name, team in (("sim-blue", "blue"), ("sim-red", "red")):
            cluster = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/{name}"
            try:
                ecs.describe_clusters(clusters=[name])
                live = "allowed"
            except ClientError as e:
                self.assertEqual(e.response["Error"]["Code"], "AccessDeniedException")
                live = "explicitDeny" if "explicit deny" in e.response["Error"]["Message"] else "implicitDeny"
            entries = [{"ContextKeyName": "aws:ResourceTag/team", "ContextKeyValues": [team], "ContextKeyType": "string"},
                       {"ContextKeyName": "aws:SourceIp", "ContextKeyValues": ["127.0.0.1"], "ContextKeyType": "ip"},
                       {"ContextKeyName": "aws:RequestedRegion", "ContextKeyValues": [h.REGION],
                        "ContextKeyType": "string"}]
            sim = self.iam.simulate_principal_policy(PolicySourceArn=arn, ActionNames=["ecs:DescribeClusters"],
                                                     ResourceArns=[cluster], ContextEntries=entries)
            self.assertEqual(sim["EvaluationResults"][0]["EvalDecision"], live, (name, sim))
        self.assertEqual(live, "implicitDeny")  # the red cluster; the blue one was allowed
        # From another address, or for another region, the simulator says what the server would.
        far = self.iam.simulate_principal_policy(
            PolicySourceArn=arn, ActionNames=["ecs:DescribeClusters"],
            ContextEntries=[{"ContextKeyName": "aws:SourceIp", "ContextKeyValues": ["10.0.0.1"],
                             "ContextKeyType": "ip"}])["EvaluationResults"][0]
        self.assertEqual(far["EvalDecision"], "explicitDeny")
        # For the resource "*", the keys the policies read that the simulation lacked (the user's
        # own tag and the source address were there).
        self.assertEqual(far["MissingContextValues"], ["aws:ResourceTag/team", "aws:RequestedRegion"])

    def test_simulate_principal_policy_input_list_caller_arn_and_paging(self):
        self.iam.create_user(UserName="sim-base")
        self.iam.put_user_policy(UserName="sim-base", PolicyName="own", PolicyDocument=policy(
            allow("ecs:DescribeClusters", f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/${{aws:username}}")))
        self.iam.create_user(UserName="sim-bob")
        base = f"arn:aws:iam::{self.account}:user/sim-base"
        bob = f"arn:aws:iam::{self.account}:user/sim-bob"
        clusters = [f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/{n}" for n in ("sim-base", "sim-bob")]

        def decisions(**kwargs):
            got = self.iam.simulate_principal_policy(PolicySourceArn=base, ActionNames=["ecs:DescribeClusters"],
                                                     ResourceArns=clusters, **kwargs)["EvaluationResults"]
            return [r["EvalDecision"] for r in got]
        self.assertEqual(decisions(), ["allowed", "implicitDeny"])
        # CallerArn: Bob calls with sim-base's policies, so ${aws:username} is Bob's name.
        self.assertEqual(decisions(CallerArn=bob), ["implicitDeny", "allowed"])
        # PolicyInputList: evaluated with the user's own policies, reported as AWS names them.
        got = self.iam.simulate_principal_policy(
            PolicySourceArn=base, ActionNames=["ecs:CreateCluster", "ecs:DeleteCluster"],
            PolicyInputList=[policy(allow("ecs:CreateCluster")), policy(deny("ecs:*"))])["EvaluationResults"]
        self.assertEqual([r["EvalDecision"] for r in got], ["explicitDeny", "explicitDeny"])
        got = self.iam.simulate_principal_policy(
            PolicySourceArn=base, ActionNames=["ecs:CreateCluster"],
            PolicyInputList=[policy(allow("ecs:CreateCluster"))])["EvaluationResults"][0]
        self.assertEqual(got["EvalDecision"], "allowed")
        self.assertEqual([(m["SourcePolicyId"], m["SourcePolicyType"]) for m in got["MatchedStatements"]],
                         [("PolicyInputList.1", "IAM Policy")])
        # Errors, as IAM answers them.
        role = self.iam.create_role(RoleName="sim-caller-role",
                                    AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))["Role"]["Arn"]
        for caller, code in ((role, "InvalidInput"),
                             (f"arn:aws:sts::{self.account}:assumed-role/sim-caller-role/s", "InvalidInput"),
                             (f"arn:aws:iam::{self.account}:user/no-such-caller", "NoSuchEntity")):
            with self.assertRaises(ClientError) as cm:
                decisions(CallerArn=caller)
            self.assertEqual(cm.exception.response["Error"]["Code"], code, caller)
        with self.assertRaises(ClientError) as cm:
            decisions(PolicyInputList=["{\"Statement\": 5}"])
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidInput")
        # MaxItems/Marker page the (action, resource) pairs in order; botocore's paginator works.
        actions = ["ecs:DescribeClusters", "ecs:ListClusters", "ecs:DeleteCluster"]
        first = self.iam.simulate_principal_policy(PolicySourceArn=base, ActionNames=actions, ResourceArns=clusters,
                                                   MaxItems=4)
        self.assertTrue(first["IsTruncated"])
        self.assertEqual(len(first["EvaluationResults"]), 4)
        rest = self.iam.simulate_principal_policy(PolicySourceArn=base, ActionNames=actions, ResourceArns=clusters,
                                                  MaxItems=4, Marker=first["Marker"])
        self.assertFalse(rest["IsTruncated"])
        pairs = [(r["EvalActionName"], r["EvalResourceName"])
                 for page in (first, rest) for r in page["EvaluationResults"]]
        self.assertEqual(pairs, [(a, c) for a in actions for c in clusters])
        paged = [r["EvalResourceName"] for page in self.iam.get_paginator("simulate_principal_policy").paginate(
            PolicySourceArn=base, ActionNames=actions, ResourceArns=clusters, PaginationConfig={"PageSize": 1})
            for r in page["EvaluationResults"]]
        self.assertEqual(len(paged), 6)
        with self.assertRaises(ClientError) as cm:
            self.iam.simulate_principal_policy(PolicySourceArn=base, ActionNames=actions, Marker="nope")
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidInput")

    def resource_policy(self, *statements):
        return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})

    def test_simulate_principal_policy_with_a_resource_policy_same_and_cross_account(self):
        # A user with no identity policy, and a resource-based policy naming it.
        self.iam.create_user(UserName="sim-rp")
        user = f"arn:aws:iam::{self.account}:user/sim-rp"
        bucket = "arn:aws:s3:::sim-bucket/key"
        grant = {"Effect": "Allow", "Principal": {"AWS": user}, "Action": "s3:GetObject", "Resource": bucket}

        def result(**kwargs):
            return self.iam.simulate_principal_policy(PolicySourceArn=user, ActionNames=["s3:GetObject"],
                                                      ResourceArns=[bucket], **kwargs)["EvaluationResults"][0]
        self.assertEqual(result()["EvalDecision"], "implicitDeny")
        # Same account: the resource policy naming the user grants on its own.
        got = result(ResourcePolicy=self.resource_policy(grant))
        self.assertEqual(got["EvalDecision"], "allowed")
        self.assertEqual([(m["SourcePolicyId"], m["SourcePolicyType"]) for m in got["MatchedStatements"]],
                         [("ResourcePolicy", "resource")])
        self.assertEqual(result(ResourcePolicy=self.resource_policy(grant),
                                ResourceOwner=f"arn:aws:iam::{self.account}:root")["EvalDecision"], "allowed")
        # Another account owns the resource: the identity side must allow too.
        other = "arn:aws:iam::210987654321:root"
        self.assertEqual(result(ResourcePolicy=self.resource_policy(grant), ResourceOwner=other)["EvalDecision"],
                         "implicitDeny")
        self.assertEqual(result(ResourcePolicy=self.resource_policy(grant), ResourceOwner=other,
                                PolicyInputList=[policy(allow("s3:GetObject"))])["EvalDecision"], "allowed")
        # An explicit Deny in the resource policy wins over the identity side's Allow.
        got = result(ResourcePolicy=self.resource_policy(grant, dict(grant, Effect="Deny")),
                     PolicyInputList=[policy(allow("s3:*"))])
        self.assertEqual(got["EvalDecision"], "explicitDeny")
        self.assertIn(("ResourcePolicy", "resource"),
                      [(m["SourcePolicyId"], m["SourcePolicyType"]) for m in got["MatchedStatements"]])
        # CallerArn with a resource policy: the caller is the one the policy must name.
        self.iam.create_user(UserName="sim-rp-caller")
        caller = f"arn:aws:iam::{self.account}:user/sim-rp-caller"
        self.assertEqual(result(ResourcePolicy=self.resource_policy(grant), CallerArn=caller)["EvalDecision"],
                         "implicitDeny")
        named = dict(grant, Principal={"AWS": caller})
        self.assertEqual(result(ResourcePolicy=self.resource_policy(named), CallerArn=caller)["EvalDecision"],
                         "allowed")
        # A role's simulation with a resource policy needs a CallerArn (AWS's rule).
        role = self.iam.create_role(RoleName="sim-rp-role",
                                    AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))["Role"]["Arn"]
        self.assertClientError(
            "InvalidInput", self.iam.simulate_principal_policy, PolicySourceArn=role, ActionNames=["s3:GetObject"],
            ResourcePolicy=self.resource_policy(grant),
            message="CallerArn is required if you include a ResourcePolicy and the PolicySourceArn is not the ARN "
                    "for an IAM user.")
        # Bad input: an unparsable resource policy, one without a Principal, a bad ResourceOwner and
        # ResourceHandlingOption.
        self.assertClientError("InvalidInput", result, ResourcePolicy="{not json",
                               message="ResourcePolicy: This policy contains invalid Json")
        self.assertClientError("InvalidInput", result, ResourcePolicy=policy(allow("s3:GetObject")),
                               message="ResourcePolicy: Missing required field Principal")
        # AWS takes the owner only as an account's root ARN (its text for a bare ID, sic).
        for owner in ("210987654321", "arn:aws:iam::210987654321:user/x", "arn:aws:iam::abc:root"):
            self.assertClientError("InvalidInput", result, ResourcePolicy=self.resource_policy(grant),
                                   ResourceOwner=owner, message=f"'{owner}' is not a valid as a Resource Owner.")
        # A resource that is not an ARN: AWS's text.
        self.assertClientError("InvalidInput", self.iam.simulate_principal_policy, PolicySourceArn=user,
                               ActionNames=["kms:Decrypt"], ResourceArns=[bucket, "14a050d4-021e"],
                               message="ResourceNames are not in a valid ARN format: 14a050d4-021e.")
        self.assertClientError("InvalidInput", self.iam.simulate_custom_policy, PolicyInputList=[policy(deny("x:y"))],
                               ActionNames=["kms:Decrypt"], ResourceArns=["key/1"],
                               message="ResourceNames are not in a valid ARN format: key/1.")
        self.assertEqual(result(ResourceHandlingOption="EC2-VPC-EBS")["EvalDecision"], "implicitDeny")
        self.assertClientError("InvalidInput", result, ResourceHandlingOption="EC2-Classic-EBS",
                               message_contains="Invalid ResourceHandlingOption: EC2-Classic-EBS.")

    def test_simulation_resource_specific_results_and_boundary_input(self):
        self.iam.create_user(UserName="sim-rsr")
        self.iam.put_user_policy(UserName="sim-rsr", PolicyName="p", PolicyDocument=policy(
            allow("ecs:DescribeClusters", Condition={"StringEquals": {"aws:ResourceTag/team": "blue"}}),
            allow("ecs:ListClusters")))
        user = f"arn:aws:iam::{self.account}:user/sim-rsr"
        clusters = [f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/{n}" for n in ("rsr-a", "rsr-b")]
        got = self.iam.simulate_principal_policy(PolicySourceArn=user, ActionNames=["ecs:DescribeClusters"],
                                                 ResourceArns=clusters)["EvaluationResults"]
        # Each named resource has its own result, with the keys its evaluation lacked.
        self.assertEqual([[(r["EvalResourceName"], r["EvalResourceDecision"], r["MissingContextValues"])
                           for r in e["ResourceSpecificResults"]] for e in got],
                         [[(c, "implicitDeny", ["aws:ResourceTag/team"])] for c in clusters])
        self.assertEqual([e["MissingContextValues"] for e in got], [[], []])
        # The resource "*" has none (its missing keys are the result's own).
        star = self.iam.simulate_principal_policy(PolicySourceArn=user,
                                                  ActionNames=["ecs:ListClusters"])["EvaluationResults"][0]
        self.assertNotIn("ResourceSpecificResults", star)
        # PermissionsBoundaryPolicyInputList replaces the entity's boundary for the simulation.
        got = self.iam.simulate_principal_policy(
            PolicySourceArn=user, ActionNames=["ecs:ListClusters"], ResourceArns=clusters[:1],
            PermissionsBoundaryPolicyInputList=[policy(allow("ecs:Describe*"))])["EvaluationResults"][0]
        self.assertEqual(got["EvalDecision"], "implicitDeny")
        self.assertEqual(got["PermissionsBoundaryDecisionDetail"], {"AllowedByPermissionsBoundary": False})
        specific = got["ResourceSpecificResults"][0]
        self.assertEqual((specific["EvalResourceDecision"], specific["PermissionsBoundaryDecisionDetail"]),
                         ("implicitDeny", {"AllowedByPermissionsBoundary": False}))
        got = self.iam.simulate_principal_policy(
            PolicySourceArn=user, ActionNames=["ecs:ListClusters"],
            PermissionsBoundaryPolicyInputList=[policy(allow("ecs:List*"))])["EvaluationResults"][0]
        self.assertEqual(got["EvalDecision"], "allowed")
        self.assertEqual(got["PermissionsBoundaryDecisionDetail"], {"AllowedByPermissionsBoundary": True})
        self.assertClientError("InvalidInput", self.iam.simulate_principal_policy, PolicySourceArn=user,
                               ActionNames=["ecs:ListClusters"], PermissionsBoundaryPolicyInputList=["[]"],
                               message_contains="PermissionsBoundaryPolicyInputList.1: ")

    def test_simulate_custom_policy_agrees_with_the_principal_simulation(self):
        documents = [policy(allow("ecs:*"), deny("ecs:DeleteCluster"),
                            allow("ecs:ListServices", Condition={"StringEquals": {"ecs:cluster": "x"}}))]
        self.iam.create_user(UserName="sim-custom")
        self.iam.put_user_policy(UserName="sim-custom", PolicyName="p", PolicyDocument=documents[0])
        user = f"arn:aws:iam::{self.account}:user/sim-custom"
        cluster = f"arn:aws:ecs:{h.REGION}:{self.account}:cluster/c"
        actions = ["ecs:ListClusters", "ecs:DeleteCluster", "ecs:ListServices", "ec2:DescribeVpcs"]
        principal = self.iam.simulate_principal_policy(PolicySourceArn=user, ActionNames=actions,
                                                       ResourceArns=["*", cluster])["EvaluationResults"]
        custom = self.iam.simulate_custom_policy(PolicyInputList=documents, ActionNames=actions,
                                                 ResourceArns=["*", cluster])["EvaluationResults"]
        self.assertEqual([(r["EvalActionName"], r["EvalResourceName"], r["EvalDecision"]) for r in custom],
                         [(r["EvalActionName"], r["EvalResourceName"], r["EvalDecision"]) for r in principal])
        self.assertEqual([r["EvalDecision"] for r in custom[::2]],
                         ["allowed", "explicitDeny", "allowed", "implicitDeny"])
        self.assertEqual(custom[0]["MatchedStatements"][0]["SourcePolicyId"], "PolicyInputList.1")
        self.assertEqual(custom[4]["MissingContextValues"], ["ecs:cluster"])
        # A resource policy needs a caller; with one, it grants in the same account.
        grant = {"Effect": "Allow", "Principal": {"AWS": user}, "Action": "s3:GetObject", "Resource": "*"}
        self.assertClientError("InvalidInput", self.iam.simulate_custom_policy, PolicyInputList=[policy(deny("x:y"))],
                               ActionNames=["s3:GetObject"], ResourcePolicy=self.resource_policy(grant),
                               message="CallerArn is required if you include a ResourcePolicy.")
        got = self.iam.simulate_custom_policy(PolicyInputList=[policy(deny("x:y"))], ActionNames=["s3:GetObject"],
                                              ResourcePolicy=self.resource_policy(grant), CallerArn=user)
        self.assertEqual(got["EvaluationResults"][0]["EvalDecision"], "allowed")
        self.assertClientError("InvalidInput", self.iam.simulate_custom_policy, PolicyInputList=["{not json"],
                               ActionNames=["s3:GetObject"], message="PolicyInputList.1: This policy contains invalid Json")
        # Its own action: a user needs iam:SimulateCustomPolicy.
        key = self.iam.create_access_key(UserName="sim-custom")["AccessKey"]
        iam = client("iam", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        self.assertClientError("AccessDenied", iam.simulate_custom_policy, PolicyInputList=documents,
                               ActionNames=actions, status=403,
                               message=f"User: {user} is not authorized to perform: iam:SimulateCustomPolicy on "
                                       "resource: * because no identity-based policy allows the "
                                       "iam:SimulateCustomPolicy action")

    def test_context_keys_for_principal_and_custom_policies(self):
        self.iam.create_user(UserName="sim-keys")
        self.iam.put_user_policy(UserName="sim-keys", PolicyName="p", PolicyDocument=policy(
            allow("ecs:DescribeClusters", f"arn:aws:ecs:*:*:cluster/${{aws:username}}",
                  Condition={"StringEquals": {"aws:ResourceTag/Team": "blue", "aws:requestedregion": "x"}})))
        user = f"arn:aws:iam::{self.account}:user/sim-keys"
        extra = policy(allow("s3:GetObject", Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"},
                                                        "StringLike": {"aws:ResourceTag/team": "b*"}}))
        got = self.iam.get_context_keys_for_principal_policy(PolicySourceArn=user, PolicyInputList=[extra])
        self.assertEqual(sorted(got["ContextKeyNames"]),
                         sorted(["aws:ResourceTag/Team", "aws:requestedregion", "aws:username", "aws:SourceIp"]))
        self.assertEqual(self.iam.get_context_keys_for_custom_policy(PolicyInputList=[extra])["ContextKeyNames"],
                         ["aws:SourceIp", "aws:ResourceTag/team"])
        # A role with no policy reads no key.
        role = self.iam.create_role(RoleName="sim-keys-role",
                                    AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))["Role"]["Arn"]
        self.assertEqual(self.iam.get_context_keys_for_principal_policy(PolicySourceArn=role).get("ContextKeyNames", []),
                         [])
        self.assertClientError("NoSuchEntity", self.iam.get_context_keys_for_principal_policy,
                               PolicySourceArn=f"arn:aws:iam::{self.account}:user/no-such-keys", status=404)
        self.assertClientError("InvalidInput", self.iam.get_context_keys_for_principal_policy,
                               PolicySourceArn=f"arn:aws:sts::{self.account}:assumed-role/r/s",
                               message=f"Invalid Entity Arn: arn:aws:sts::{self.account}:assumed-role/r/s does not "
                                       "clearly define entity type and name.")
        self.assertClientError("InvalidInput", self.iam.get_context_keys_for_custom_policy,
                               PolicyInputList=["{not json"], message="PolicyInputList.1: This policy contains invalid Json")

    def test_a_trust_policy_sees_the_callers_tags_and_address(self):
        # The trust question's context is built where every call's is: the caller's IAM tags and
        # the address it calls from reach the role's trust policy.
        trust = {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": self.account}, "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:PrincipalTag/team": "blue"},
                          "IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}]}
        role_arn = self.iam.create_role(RoleName="blue-door", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        keys = {}
        for name, team in (("door-blue", "blue"), ("door-red", "red")):
            self.iam.create_user(UserName=name, Tags=[{"Key": "team", "Value": team}])
            self.iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=policy(allow("sts:AssumeRole", role_arn)))
            key = self.iam.create_access_key(UserName=name)["AccessKey"]
            keys[team] = client("sts", self.server.endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        got = keys["blue"].assume_role(RoleArn=role_arn, RoleSessionName="door")
        self.assertTrue(got["AssumedRoleUser"]["Arn"].endswith(":assumed-role/blue-door/door"))
        self.assertClientError("AccessDenied", keys["red"].assume_role, RoleArn=role_arn, RoleSessionName="door",
                               status=403, message=f"User: arn:aws:iam::{self.account}:user/door-red is not "
                                                   f"authorized to perform: sts:AssumeRole on resource: {role_arn}")

    def cli(self, cli, kid, secret, *args):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=kid, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION=h.REGION,
                   AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        for k in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(k, None)
        return subprocess.run([*cli, "--endpoint-url", self.server.endpoint, *args],
                              env=env, capture_output=True, text=True, timeout=120)

    def test_cli_v1_gets_the_exact_denial(self):
        kid, secret = self.user("cli-user")
        out = self.cli(["aws"], kid, secret, "ecs", "list-clusters")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("AccessDeniedException", out.stderr)
        self.assertIn(self.denial(self.user_arn, "ecs:ListClusters", "*"), out.stderr)

    def test_cli_v2_gets_the_exact_pass_role_denial_and_the_condition_admits_it(self):
        if not os.path.exists("/usr/bin/aws"):
            self.skipTest("no AWS CLI v2 at /usr/bin/aws")
        role_arn = self.iam.create_role(RoleName="cli2-task", AssumeRolePolicyDocument=json.dumps(TASK_ROLE_TRUST))[
            "Role"]["Arn"]
        kid, secret = self.user("cli2-deployer", allow("ecs:RegisterTaskDefinition"))
        containers = json.dumps(h.td_min("x")["containerDefinitions"])
        args = ("ecs", "register-task-definition", "--family", "cli2", "--task-role-arn", role_arn,
                "--container-definitions", containers)
        out = self.cli(["/usr/bin/aws"], kid, secret, *args)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("AccessDeniedException", out.stderr)
        self.assertIn(self.denial(self.user_arn, "iam:PassRole", role_arn), out.stderr)
        self.iam.put_user_policy(UserName="cli2-deployer", PolicyName="p", PolicyDocument=policy(
            allow("ecs:RegisterTaskDefinition"),
            allow("iam:PassRole", role_arn, Condition={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}})))
        out = self.cli(["/usr/bin/aws"], kid, secret, *args, "--output", "json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["taskDefinition"]["taskRoleArn"], role_arn)


class AcceptAnyCredentials(h.PaddockTestCase):
    SERVER_ARGS = ("--accept-any-credentials",)

    def test_the_emulator_mode_authorizes_nothing(self):
        ecs = client("ecs", self.server.endpoint, "AKIAANYTHINGATALL000", "whatever")
        ecs.create_cluster(clusterName="anyone")


if __name__ == "__main__":
    import unittest
    unittest.main()
