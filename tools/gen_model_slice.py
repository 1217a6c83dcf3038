#!/usr/bin/env python3
"""Writes the embedded botocore model slices of the JSON services Paddock serves in part: for each
service, the operations in SLICES and every shape their input, output and errors reach (cut as
tools/gen_ec2_model.py cuts EC2's, trimmed of documentation by tools/trim_botocore_model.py), with
the botocore version and the operations under "metadata" -> "paddockSubset". A service's whole
model is far larger (SSM 146 operations, CloudWatch Logs 113): the slice keeps the binary and its
compile small. Each list is what the service's adapter implements (its kActions table).

    tools/gen_model_slice.py                 # rewrite every slice
    tools/gen_model_slice.py ssm logs        # rewrite these
    tools/gen_model_slice.py --check         # exit 1 when a committed slice is not what this writes
"""
import argparse
import json
import pathlib
import sys

from gen_ec2_model import reached_shapes
from trim_botocore_model import trim

ROOT = pathlib.Path(__file__).resolve().parent.parent

# botocore service name -> (the slice's path, the operations it holds).
SLICES = {
    "ssm": ("src/ssm/api/models/ssm-2014-11-06.json", [
        "AddTagsToResource", "DeleteParameter", "DeleteParameters", "DescribeParameters", "GetParameter",
        "GetParameterHistory", "GetParameters", "GetParametersByPath", "LabelParameterVersion",
        "ListTagsForResource", "PutParameter", "RemoveTagsFromResource", "UnlabelParameterVersion",
    ]),
    "secretsmanager": ("src/secretsmanager/api/models/secretsmanager-2017-10-17.json", [
        "CreateSecret", "DeleteSecret", "DescribeSecret", "GetSecretValue", "ListSecretVersionIds",
        "ListSecrets", "PutSecretValue", "RestoreSecret", "TagResource", "UntagResource", "UpdateSecret",
        "UpdateSecretVersionStage",
    ]),
    "logs": ("src/logs/api/models/logs-2014-03-28.json", [
        "CreateLogGroup", "CreateLogStream", "DeleteLogGroup", "DeleteLogStream", "DeleteRetentionPolicy",
        "DescribeLogGroups", "DescribeLogStreams", "FilterLogEvents", "GetLogEvents", "ListTagsForResource",
        "PutLogEvents", "PutRetentionPolicy", "StartLiveTail", "TagResource", "UntagResource",
    ]),
    "servicediscovery": ("src/cloudmap/api/models/servicediscovery-2017-03-14.json", [
        "CreateHttpNamespace", "CreatePrivateDnsNamespace", "CreatePublicDnsNamespace", "CreateService",
        "DeleteNamespace", "DeleteService", "DeregisterInstance", "DiscoverInstances", "DiscoverInstancesRevision",
        "GetInstance", "GetInstancesHealthStatus", "GetNamespace", "GetOperation", "GetService", "ListInstances",
        "ListNamespaces", "ListOperations", "ListServices", "ListTagsForResource", "RegisterInstance", "TagResource",
        "UntagResource", "UpdateHttpNamespace", "UpdateInstanceCustomHealthStatus", "UpdatePrivateDnsNamespace",
        "UpdateService",
    ]),
}


def render(service):
    import botocore
    import botocore.loaders

    _, wanted = SLICES[service]
    model = botocore.loaders.Loader().load_service_model(service, "service-2")
    operations = {op: model["operations"][op] for op in wanted}
    roots = []
    for op in operations.values():
        roots += [op[k]["shape"] for k in ("input", "output") if k in op]
        roots += [e["shape"] for e in op.get("errors", [])]
    names = reached_shapes(model["shapes"], roots)
    metadata = dict(model["metadata"])
    metadata["paddockSubset"] = {"botocoreVersion": botocore.__version__, "generator": "tools/gen_model_slice.py",
                                 "operations": wanted}
    subset = {"version": model.get("version", "2.0"), "metadata": metadata, "operations": operations,
              "shapes": {n: model["shapes"][n] for n in sorted(names)}}
    return json.dumps(trim(subset), separators=(",", ":"), sort_keys=True, ensure_ascii=True) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a committed slice is stale")
    parser.add_argument("services", nargs="*", help=f"of {', '.join(sorted(SLICES))}; default: all")
    args = parser.parse_args()
    unknown = sorted(set(args.services) - set(SLICES))
    if unknown:
        parser.error(f"no slice for {', '.join(unknown)}")
    stale = []
    for service in args.services or sorted(SLICES):
        out = ROOT / SLICES[service][0]
        text = render(service)
        if not args.check:
            out.write_text(text)
        elif not out.exists() or out.read_text() != text:
            stale.append(str(out.relative_to(ROOT)))
    if stale:
        sys.exit(f"stale: {', '.join(stale)}: run tools/gen_model_slice.py")


if __name__ == "__main__":
    main()
