"""The default VPC through EC2's Query protocol, as deployers look it up before RunTask: boto3 and
the AWS CLI v1 parse Paddock's XML exactly as they parse EC2's."""
import json
import os
import subprocess
import sys

import paddock_harness as h
from botocore.exceptions import ClientError  # noqa: E402


class DefaultVpc(h.PaddockTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import boto3
        cls.ec2 = boto3.client("ec2", endpoint_url=cls.server.endpoint, region_name=h.REGION,
                               aws_access_key_id=cls.key_id, aws_secret_access_key=cls.secret)

    def test_describe_vpcs(self):
        vpcs = self.ec2.describe_vpcs()["Vpcs"]
        self.assertEqual(len(vpcs), 1)
        vpc = vpcs[0]
        self.assertTrue(vpc["VpcId"].startswith("vpc-"))
        self.assertEqual(vpc["CidrBlock"], "172.31.0.0/16")
        self.assertTrue(vpc["IsDefault"])
        self.assertEqual(vpc["State"], "available")
        self.assertEqual(vpc["OwnerId"], self.account)
        self.assertEqual(self.ec2.describe_vpcs(VpcIds=[vpc["VpcId"]])["Vpcs"][0]["VpcId"], vpc["VpcId"])
        self.assertEqual(self.ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"], vpcs)
        with self.assertRaises(ClientError) as cm:
            self.ec2.describe_vpcs(VpcIds=["vpc-0123456789abcdef0"])
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidVpcID.NotFound")
        self.assertEqual(cm.exception.response["Error"]["Message"], "The vpc ID 'vpc-0123456789abcdef0' does not exist")

    def test_describe_subnets(self):
        vpc_id = self.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        subnets = self.ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
        self.assertEqual(sorted(s["CidrBlock"] for s in subnets), ["172.31.0.0/20", "172.31.16.0/20", "172.31.32.0/20"])
        self.assertEqual(sorted(s["AvailabilityZone"] for s in subnets), ["us-east-1a", "us-east-1b", "us-east-1c"])
        for s in subnets:
            self.assertTrue(s["DefaultForAz"])
            self.assertEqual(s["VpcId"], vpc_id)
            self.assertEqual(s["AvailableIpAddressCount"], 4091)
            self.assertTrue(s["SubnetArn"].endswith(":subnet/" + s["SubnetId"]))
        one = self.ec2.describe_subnets(SubnetIds=[subnets[1]["SubnetId"]])["Subnets"]
        self.assertEqual([s["SubnetId"] for s in one], [subnets[1]["SubnetId"]])
        with self.assertRaises(ClientError) as cm:
            self.ec2.describe_subnets(SubnetIds=["subnet-0123456789abcdef0"])
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidSubnetID.NotFound")

    def test_describe_security_groups(self):
        vpc_id = self.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        groups = self.ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["SecurityGroups"]
        self.assertEqual(len(groups), 1)
        self.assertEqual(groups[0]["GroupName"], "default")
        self.assertEqual(groups[0]["IpPermissionsEgress"][0]["IpRanges"], [{"CidrIp": "0.0.0.0/0"}])
        with self.assertRaises(ClientError) as cm:
            self.ec2.describe_security_groups(GroupIds=["sg-0123456789abcdef0"])
        self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidGroup.NotFound")

    def test_accounts_get_their_own_vpc(self):
        other_account, key, secret = h.create_account(self.state_dir)
        import boto3
        other = boto3.client("ec2", endpoint_url=self.server.endpoint, region_name=h.REGION,
                             aws_access_key_id=key, aws_secret_access_key=secret)
        mine = self.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
        theirs = other.describe_vpcs()["Vpcs"][0]
        self.assertNotEqual(mine, theirs["VpcId"])
        self.assertEqual(theirs["OwnerId"], other_account)
        with self.assertRaises(ClientError):
            other.describe_vpcs(VpcIds=[mine])

    def test_cli_v1_describe_subnets(self):
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_DEFAULT_REGION=h.REGION)
        env.pop("AWS_PROFILE", None)
        r = subprocess.run([sys.executable, "-m", "awscli", "ec2", "describe-subnets", "--endpoint-url",
                            self.server.endpoint, "--output", "json"], capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["Subnets"]), 3)
