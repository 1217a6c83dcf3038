#!/usr/bin/env python3
"""Writes docs/api-coverage.md from the adapters' dispatch tables and botocore's models.

ECS: the `handlers_` map in src/ecs/api/ecs_service.cc. STS: StsService::Implements in
src/sts/api/sts_service.cc. IAM: `kActions` in src/iam/api/iam_service.cc. SSM: `kActions` in
src/ssm/api/ssm_service.cc. Secrets Manager, CloudWatch Logs and Cloud Map: `kActions` in their adapters. The models are the
ones botocore (the default python3's) carries.
`--check` exits 1 when the committed file is stale.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DISPATCH = ROOT / "src/ecs/api/ecs_service.cc"
STS_DISPATCH = ROOT / "src/sts/api/sts_service.cc"
IAM_DISPATCH = ROOT / "src/iam/api/iam_service.cc"
SSM_DISPATCH = ROOT / "src/ssm/api/ssm_service.cc"
SM_DISPATCH = ROOT / "src/secretsmanager/api/secrets_manager_service.cc"
LOGS_DISPATCH = ROOT / "src/logs/api/logs_service.cc"
CLOUDMAP_DISPATCH = ROOT / "src/cloudmap/api/cloudmap_service.cc"
OUT = ROOT / "docs/api-coverage.md"


# Why each operation Paddock does not serve yet waits. Every unimplemented operation must have a
# reason here (the generator refuses otherwise), so the page says what it would take.
_DAEMONS = ("ECS Managed Daemons exist only for Amazon ECS Managed Instances capacity providers, which Paddock does not "
            "have; a DAEMON-strategy service (CreateService schedulingStrategy DAEMON) runs one task per instance")
_EXPRESS = ("Express Mode services provision an Application Load Balancer, target groups, certificates and "
            "Auto Scaling policies: Paddock serves none of ELBv2, ACM or Application Auto Scaling")
WAITING = {
    "CreateDaemon": _DAEMONS, "DeleteDaemon": _DAEMONS, "DeleteDaemonTaskDefinition": _DAEMONS,
    "DescribeDaemon": _DAEMONS, "DescribeDaemonDeployments": _DAEMONS, "DescribeDaemonRevisions": _DAEMONS,
    "DescribeDaemonTaskDefinition": _DAEMONS, "ListDaemonDeployments": _DAEMONS,
    "ListDaemonTaskDefinitions": _DAEMONS, "ListDaemons": _DAEMONS, "RegisterDaemonTaskDefinition": _DAEMONS,
    "UpdateDaemon": _DAEMONS,
    "CreateExpressGatewayService": _EXPRESS, "DeleteExpressGatewayService": _EXPRESS,
    "DescribeExpressGatewayService": _EXPRESS, "UpdateExpressGatewayService": _EXPRESS,
    "ExecuteCommand": ("ECS Exec answers an SSM Session Manager session (its websocket data channel and the "
                       "agent's managed SSM agent), which Paddock does not serve; enableExecuteCommand is refused"),
}


_STS_NOT_ECS = "not part of the ECS deployers' slice (research note §1.1)"
STS_WAITING = {
    "AssumeRoleWithSAML": "a SAML identity provider (IAM CreateSAMLProvider), which Paddock does not serve",
    "AssumeRoleWithWebIdentity": ("IAM OpenID Connect providers and verifying tokens against the issuer's keys; "
                                  "deferred (issue 11: only if cheap)"),
    "AssumeRoot": "AWS Organizations' centralized root access: Paddock has no organizations",
    "DecodeAuthorizationMessage": "Paddock's denials carry their reason in clear text, never an encoded message",
    "GetAccessKeyInfo": _STS_NOT_ECS,
    "GetDelegatedAccessToken": _STS_NOT_ECS,
    "GetFederationToken": _STS_NOT_ECS,
    "GetWebIdentityToken": _STS_NOT_ECS,
}


def sts_implemented():
    text = STS_DISPATCH.read_text()
    body = text[text.index("bool StsService::Implements"):]
    body = body[:body.index("\n}\n")]
    return sorted(set(re.findall(r'action == "(\w+)"', body)))


def implemented():
    text = DISPATCH.read_text()
    return sorted(set(re.findall(r'\{"(\w+)",\s*&EcsService::\w+\}', text)))


def model_operations(service="ecs"):
    import botocore.loaders
    import botocore
    model = botocore.loaders.Loader().load_service_model(service, "service-2")
    return sorted(model["operations"]), botocore.__version__


def actions_table(path):
    """The quoted names of a `kActions[] = {...};` table."""
    text = path.read_text()
    table = text[text.index("kActions[] = {"):]
    table = table[:table.index("};")]
    return sorted(set(re.findall(r'"(\w+)"', table)))


# IAM's operations outside issue 11's slice (docs/contracts/iam.md) wait for one reason.
_IAM_WAITING = ("outside the identity slice of issue 11: groups, instance profiles, login profiles, MFA, SAML and "
                "OIDC providers, server and signing certificates, SSH keys, account aliases and password policy, "
                "credential reports, service-specific credentials, organizations features")


def check_known(done, ops, table):
    unknown = sorted(done - set(ops))
    if unknown:
        sys.exit(f"{table} names actions botocore's model lacks: {unknown}")


def coverage(header, done, ops, rows):
    """`header`, the count of `done` among `ops`, then a status row for each of `rows`."""
    lines = header + ["", f"**{len(done)} of {len(ops)} operations implemented.**", "",
                      "| Operation | Status |", "|---|---|"]
    return lines + [f"| {op} | {'implemented' if op in done else '—'} |" for op in rows]


def waiting_for(heading, done, ops, waiting, name):
    """The table of `ops` not `done`, each with its reason in `waiting` (the dict called `name`)."""
    missing = [op for op in ops if op not in done and op not in waiting]
    if missing:
        sys.exit(f"operations without a reason in {name}: {missing}")
    return ["", heading, "", "| Operation | Waits for |", "|---|---|"] + [
        f"| {op} | {waiting[op]} |" for op in ops if op not in done]


# SSM's operations outside Parameter Store (issue 12) wait for one reason.
_SSM_WAITING = ("outside Parameter Store, the part of SSM ECS tasks use (issue 12): Systems Manager's documents, "
                "automation, Run Command, sessions, inventory, patching, OpsCenter, maintenance windows, "
                "associations, resource data sync and the managed-instance agent")


# Secrets Manager's operations not served yet, each with what it waits for.
_SM_ROTATION = "secret rotation (a Lambda function that rotates it): Paddock runs no Lambda"
_SM_REPLICAS = "replicas in other regions: each Paddock region is its own, with no replication between them"
SM_WAITING = {
    "BatchGetSecretValue": "not yet served (issue 12 left it out); GetSecretValue per secret does the same",
    "CancelRotateSecret": _SM_ROTATION,
    "DeleteResourcePolicy": "resource-based policies on secrets: Paddock evaluates no resource-based policies on secrets yet",
    "GetRandomPassword": "not yet served (issue 12 left it out)",
    "GetResourcePolicy": "resource-based policies on secrets: Paddock evaluates no resource-based policies on secrets yet",
    "PutResourcePolicy": "resource-based policies on secrets: Paddock evaluates no resource-based policies on secrets yet",
    "RemoveRegionsFromReplication": _SM_REPLICAS,
    "ReplicateSecretToRegions": _SM_REPLICAS,
    "RotateSecret": _SM_ROTATION,
    "StopReplicationToReplica": _SM_REPLICAS,
    "ValidateResourcePolicy": "resource-based policies on secrets: Paddock evaluates no resource-based policies on secrets yet",
}


def render_with_reasons(title, dispatch, service, model_title, contract, waiting, waiting_name):
    """A service whose every unserved operation has its own reason (`waiting`, the dict called
    `waiting_name`): all its operations, then the unserved ones with theirs."""
    done = set(actions_table(dispatch))
    ops, version = model_operations(service)
    check_known(done, ops, f"{title} kActions")
    lines = coverage([
        "",
        f"# {title} API coverage",
        "",
        f"From `kActions` in `{dispatch.relative_to(ROOT)}` and botocore {version}'s",
        f"{model_title} model (JSON 1.1; behaviour in `docs/contracts/{contract}.md`).",
    ], done, ops, ops)
    lines += waiting_for(f"## {title}: not served yet, and why", done, ops, waiting, waiting_name)
    return "\n".join(lines) + "\n"


def render_secretsmanager():
    return render_with_reasons("Secrets Manager", SM_DISPATCH, "secretsmanager", "Secrets Manager", "secretsmanager",
                               SM_WAITING, "SM_WAITING")


# CloudWatch Logs' operations outside issue 12's slice wait for one reason.
_LOGS_WAITING = ("outside the slice an ECS deployer reads its apps' output with (issue 12): Logs Insights "
                 "queries, subscription and metric filters, export tasks, destinations, "
                 "deliveries, anomaly detection, data protection, account and index policies, integrations")


def render_served_slice(title, dispatch, service, protocol, contract, waiting):
    """A service of which Paddock serves a slice: the served operations of its `kActions` table
    (`dispatch`), then the rest in one line with the one reason they wait for (`waiting`)."""
    done = set(actions_table(dispatch))
    ops, version = model_operations(service)
    check_known(done, ops, f"{title} kActions")
    lines = coverage([
        "",
        f"# {title} API coverage",
        "",
        f"From `kActions` in `{dispatch.relative_to(ROOT)}` and botocore {version}'s {title} model ({protocol};",
        f"behaviour in `docs/contracts/{contract}.md`).",
    ], done, ops, sorted(done))
    rest = [op for op in ops if op not in done]
    lines += ["", f"Not served yet ({len(rest)}), {waiting}: " + ", ".join(rest) + "."]
    return "\n".join(lines) + "\n"


# Cloud Map's operations not served yet, each with what it waits for (issue 13).
_CLOUDMAP_ATTRIBUTES = ("service attributes (key-value pairs on a service, not its instances): not yet served, issue 13 "
                        "left them out; instance attributes are served")
CLOUDMAP_WAITING = {
    "DeleteServiceAttributes": _CLOUDMAP_ATTRIBUTES,
    "GetServiceAttributes": _CLOUDMAP_ATTRIBUTES,
    "UpdateServiceAttributes": _CLOUDMAP_ATTRIBUTES,
    "UpdatePublicDnsNamespace": ("public DNS namespaces (Route 53 public hosted zones): Paddock serves no public DNS, "
                                 "so CreatePublicDnsNamespace is refused with InvalidInput"),
}


def render_cloudmap():
    return render_with_reasons("Cloud Map", CLOUDMAP_DISPATCH, "servicediscovery", "servicediscovery", "cloudmap",
                               CLOUDMAP_WAITING, "CLOUDMAP_WAITING")


def render_ssm():
    return render_served_slice("SSM", SSM_DISPATCH, "ssm", "JSON 1.1", "ssm", _SSM_WAITING)


def render_logs():
    return render_served_slice("CloudWatch Logs", LOGS_DISPATCH, "logs", "JSON 1.1", "logs", _LOGS_WAITING)


def render_iam():
    return render_served_slice("IAM", IAM_DISPATCH, "iam", "Query protocol", "iam", _IAM_WAITING)


def render():
    done = set(implemented())
    ops, version = model_operations()
    check_known(done, ops, "dispatch table")
    lines = coverage([
        "# ECS API coverage",
        "",
        "Generated by `tools/gen_api_coverage.py` from the ECS adapter's dispatch table",
        f"(`src/ecs/api/ecs_service.cc`) and botocore {version}'s ECS model. Do not edit by hand.",
    ], done, ops, ops)
    lines += waiting_for("## Not served yet, and why", done, ops, WAITING, "WAITING")
    lines += render_sts()
    return "\n".join(lines) + "\n" + render_iam() + render_ssm() + render_secretsmanager() + render_logs() + render_cloudmap()


def render_sts():
    done = set(sts_implemented())
    ops, _ = model_operations("sts")
    check_known(done, ops, "StsService")
    lines = coverage([
        "",
        "# STS API coverage",
        "",
        "From `StsService::Implements` (`src/sts/api/sts_service.cc`) and botocore's STS model;",
        "behaviours and their tests: `docs/contracts/sts.md`.",
    ], done, ops, ops)
    return lines + waiting_for("## STS: not served yet, and why", done, ops, STS_WAITING, "STS_WAITING")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="fail if docs/api-coverage.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/api-coverage.md is stale: run tools/gen_api_coverage.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
