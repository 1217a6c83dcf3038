#!/usr/bin/env python3
"""The task-definition boundary (issue 18; seed gaps 5 and 8; docs/contracts/task-definition.md):
outside ecs/taskdef, nothing reads a task-definition document; and no owner reads another's API
rendering (DescribeClusters, DescribeServices, DescribeContainerInstances) for its own decisions. The control plane's launch paths
(services, task sets, the scheduler, tasks, placement) read a revision only through the owner's
typed projection, taskdef::LaunchView; DescribeTaskDefinition's rendering (taskdef::Described)
goes only to the ECS API adapter, which hands it to the client.

Allowed to read a definition document, each for its reason:
- src/ecs/taskdef/: the owner.
- src/agent/ (the node agent and the agent protocol's server side): the agent's launch document,
  LaunchView::definition handed on as the agent protocol's wire form (docs/agent-protocol.md).
- src/cli/execution_resources.cc and src/cli/log_shipping.cc: the control plane answering an
  agent's GetExecutionResources and ShipLogs for a task, from that task's launch document.
- src/edge/ecs_source.cc: the edge is an ECS API client, as Traefik's ECS provider is: it reads
  DescribeTaskDefinition answers over HTTP.
- src/deploy/render.cc: the deploy controller is an ECS API client too: it writes the
  RegisterTaskDefinition request it sends over HTTP, and never reads a stored record.

Run by ctest (`taskdef_boundary_check`); `--self-test` proves each rule fails on a violation.

    python3 tools/check_taskdef_boundary.py SRC_DIR
    python3 tools/check_taskdef_boundary.py --self-test
"""
import os
import re
import sys
import tempfile

OWNER = "ecs/taskdef/"
DOCUMENT_READERS = (OWNER, "agent/", "cli/execution_resources.cc", "cli/log_shipping.cc", "edge/ecs_source.cc",
                    "deploy/render.cc")
RENDERING_READERS = (OWNER, "ecs/api/ecs_service.cc")

RULES = [
    # (what, pattern, the paths allowed)
    ("names the containers of a task-definition document", re.compile(r'"containerDefinitions"'), DOCUMENT_READERS),
    ("parses a definition document", re.compile(r"(json::parse|ParseRecordObject)\(\s*[\w.>-]*definition\b"),
     DOCUMENT_READERS),
    ("reads DescribeTaskDefinition's rendering", re.compile(r"\btaskdef::Described\b|\bDescribed\s+\w+\s*=\s*"
                                                            r"[\w.>-]*task_definitions\w*(\.|->)Describe\("),
     RENDERING_READERS),
    ("calls TaskDefinitions::Describe", re.compile(r"task_definitions\w*(\.|->)Describe\("), RENDERING_READERS),
    # The same rule for the other owners whose launch facts others need (the audit).
    ("reads DescribeClusters' rendering (use Clusters::Facts)", re.compile(r"clusters\w*(\.|->)Describe\("),
     ("ecs/cluster/", "ecs/api/")),
    ("reads DescribeServices' rendering", re.compile(r"\bservices\w*(\.|->)Describe\("), ("ecs/service/", "ecs/api/")),
    ("reads DescribeContainerInstances' rendering", re.compile(r"instances\w*(\.|->)Describe\("),
     ("ecs/instance/", "ecs/api/")),
]


def checked(rel):
    """Production sources only: tests, benches and test helpers may build documents."""
    if not rel.endswith((".cc", ".h")):
        return False
    base = os.path.basename(rel)
    return not (base.endswith(("_test.cc", "_bench.cc")) or "/testing/" in f"/{rel}" or "/testdata/" in f"/{rel}")


def violations(src):
    out = []
    for root, _, files in os.walk(src):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            if not checked(rel):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for what, pattern, allowed in RULES:
                if rel.startswith(allowed):
                    continue
                for m in pattern.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    out.append(f"src/{rel}:{line}: {what} outside ecs/taskdef: ask the owner for a typed "
                               f"projection (taskdef::LaunchView) instead")
    return sorted(set(out))


def self_test():
    """Each rule, broken once in a scratch tree, is reported; the allowed places are not."""
    cases = {
        "ecs/service/bad1.cc": 'auto c = def.find("containerDefinitions");\n',
        "sched/bad2.cc": "json::value v = json::parse(view.definition, ec);\n",
        "ecs/task/bad3.cc": "ASSIGN_OR_RETURN(taskdef::Described d, task_definitions_.Describe(scope, ref, false));\n",
        "ecs/service/bad4.cc": "auto d = task_definitions_.Describe(scope, ref, false);\n",
        "ecs/service/bad5.cc": "ASSIGN_OR_RETURN(auto d, clusters_.Describe(scope, {name}, {}));\n",
        "ecs/taskdef/fine.cc": 'auto c = td.find("containerDefinitions"); auto d = json::parse(l.definition);\n',
        "agent/fine.cc": "json::value def = json::parse(spec_.definition, ec);\n",
        "ecs/api/ecs_service.cc": "ASSIGN_OR_RETURN(taskdef::Described d, owners_.task_definitions->Describe(s, r, t));\n",
        "ecs/service/services_test.cc": 'json::parse(R"({"containerDefinitions":[]})");\n',
    }
    with tempfile.TemporaryDirectory() as src:
        for rel, text in cases.items():
            os.makedirs(os.path.join(src, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(src, rel), "w") as f:
                f.write(text)
        found = violations(src)
    flagged = {v.split(":", 1)[0].removeprefix("src/") for v in found}
    want = {"ecs/service/bad1.cc", "sched/bad2.cc", "ecs/task/bad3.cc", "ecs/service/bad4.cc", "ecs/service/bad5.cc"}
    if flagged != want:
        print(f"self-test failed: flagged {sorted(flagged)}, want {sorted(want)}\n" + "\n".join(found))
        return 1
    print(f"self-test: {len(found)} violations found in {len(want)} bad files, none in the allowed ones")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1:
        print(__doc__)
        return 2
    found = violations(argv[0])
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} read(s) of a task-definition document outside its owner (tools/check_taskdef_boundary.py)")
        return 1
    print("no task-definition document is read outside ecs/taskdef but where check_taskdef_boundary.py allows it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
