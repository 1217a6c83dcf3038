"""Writes the golden cases of ECS's agent actions (python3 gen_agent_actions.py <testdata dir>):
SubmitTaskStateChange, SubmitContainerStateChange, SubmitAttachmentStateChanges and
DiscoverPollEndpoint. The answers are built from docs/contracts/container-instance.md (agent rows)
and docs/agent-protocol.md. Cases with a real task live in ecs/api/agent_actions_test.cc (task ids
are random). The golden fixture's DiscoverPollEndpoint URL is http://127.0.0.1:4566.
"""
import json, os, sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ACCT = "123456789012"; R = "us-east-1"; OTHER = "210987654321"; ROOT = f"arn:aws:iam::{ACCT}:root"
TASK = "0123456789abcdef0123456789abcdef"
ACK = {"acknowledgment": "ACK"}
URL = "http://127.0.0.1:4566"


def err(t, m): return {"__type": t, "message": m}
def cc(n="prod"): return {"action": "CreateCluster", "request": {"clusterName": n}}


def case(action, name, request, response, setup=None):
    d = os.path.join(OUT, action)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".request.json"), "w") as f: json.dump(request, f)
    with open(os.path.join(d, name + ".response.json"), "w") as f: json.dump(response, f)
    if setup is not None:
        with open(os.path.join(d, name + ".setup.json"), "w") as f: json.dump(setup, f)


def denied(action, arn):
    return err("AccessDeniedException",
               f"User: {ROOT} is not authorized to perform: ecs:{action} on resource: {arn} because no "
               f"resource-based policy allows the ecs:{action} action")


for action in ("SubmitTaskStateChange", "SubmitContainerStateChange"):
    extra = {"status": "RUNNING"} if action == "SubmitTaskStateChange" else {"containerName": "web", "status": "RUNNING"}
    case(action, "missing_task", dict({"cluster": "prod"}, **extra), err("InvalidParameterException", "task is required."),
         [cc()])
    case(action, "unknown_task", dict({"cluster": "prod", "task": TASK}, **extra),
         err("InvalidParameterException", "The referenced task was not found."), [cc()])
    case(action, "unknown_cluster", dict({"cluster": "nope", "task": TASK}, **extra),
         err("ClusterNotFoundException", "Cluster not found."), [cc()])
    other = f"arn:aws:ecs:{R}:{OTHER}:task/prod/{TASK}"
    case(action, "other_account_task", dict({"cluster": "prod", "task": other}, **extra), denied(action, other), [cc()])

ATT = f"arn:aws:ecs:{R}:{ACCT}:attachment/0b0e7c9a-7b63-4c0e-9f43-3f1b2d1c0a11"
case("SubmitAttachmentStateChanges", "acknowledged",
     {"cluster": "prod", "attachments": [{"attachmentArn": ATT, "status": "ATTACHED"}]}, ACK, [cc()])
case("SubmitAttachmentStateChanges", "unknown_cluster",
     {"cluster": "nope", "attachments": [{"attachmentArn": ATT, "status": "ATTACHED"}]},
     err("ClusterNotFoundException", "Cluster not found."), [cc()])
other_att = ATT.replace(ACCT, OTHER)
case("SubmitAttachmentStateChanges", "other_account_attachment",
     {"cluster": "prod", "attachments": [{"attachmentArn": other_att, "status": "ATTACHED"}]},
     denied("SubmitAttachmentStateChanges", other_att), [cc()])
case("SubmitAttachmentStateChanges", "not_an_attachment_arn",
     {"cluster": "prod", "attachments": [{"attachmentArn": "eni-0123", "status": "ATTACHED"}]},
     err("InvalidParameterException", "Invalid attachment ARN: eni-0123"), [cc()])
case("SubmitAttachmentStateChanges", "empty_attachments", {"cluster": "prod", "attachments": []},
     err("InvalidParameterException", "Attachments cannot be empty."), [cc()])

ENDPOINTS = {"endpoint": URL, "telemetryEndpoint": URL, "serviceConnectEndpoint": URL}
case("DiscoverPollEndpoint", "no_arguments", {}, ENDPOINTS)
case("DiscoverPollEndpoint", "with_instance",
     {"cluster": "prod", "containerInstance": f"arn:aws:ecs:{R}:{ACCT}:container-instance/prod/{'0' * 31}1"}, ENDPOINTS)
other_ci = f"arn:aws:ecs:{R}:{OTHER}:container-instance/prod/{'0' * 31}1"
case("DiscoverPollEndpoint", "other_account_instance", {"cluster": "prod", "containerInstance": other_ci},
     denied("DiscoverPollEndpoint", other_ci))
