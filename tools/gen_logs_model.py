#!/usr/bin/env python3
"""Writes src/logs/api/models/logs-2014-03-28.json: the slice of botocore's CloudWatch Logs model that Paddock serves.

CloudWatch Logs' whole model holds 113 operations; Paddock serves log groups, streams, events,
retention and tags (`OPERATIONS` below, what src/logs/api/logs_service.cc implements). The slice holds
those operations and every shape their input, output and errors reach, cut as tools/gen_ec2_model.py
cuts EC2's, and records under "metadata" -> "paddockSubset" the botocore version and the operations.

    tools/gen_logs_model.py           # rewrite the file
    tools/gen_logs_model.py --check   # exit 1 when the committed file is not what this writes
"""
import argparse
import json
import pathlib
import sys

from gen_ec2_model import reached_shapes
from trim_botocore_model import trim

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "src/logs/api/models/logs-2014-03-28.json"
OPERATIONS = sorted([
    "CreateLogGroup", "CreateLogStream", "DeleteLogGroup", "DeleteLogStream", "DeleteRetentionPolicy",
    "DescribeLogGroups", "DescribeLogStreams", "FilterLogEvents", "GetLogEvents", "ListTagsForResource",
    "PutLogEvents", "PutRetentionPolicy", "TagResource", "UntagResource",
])


def render():
    import botocore
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("logs", "service-2")
    operations = {op: model["operations"][op] for op in OPERATIONS}
    roots = []
    for op in operations.values():
        roots += [op[k]["shape"] for k in ("input", "output") if k in op]
        roots += [e["shape"] for e in op.get("errors", [])]
    names = reached_shapes(model["shapes"], roots)
    metadata = dict(model["metadata"])
    metadata["paddockSubset"] = {"botocoreVersion": botocore.__version__, "generator": "tools/gen_logs_model.py",
                                 "operations": OPERATIONS}
    subset = {"version": model.get("version", "2.0"), "metadata": metadata, "operations": operations,
              "shapes": {n: model["shapes"][n] for n in sorted(names)}}
    return json.dumps(trim(subset), separators=(",", ":"), sort_keys=True, ensure_ascii=True) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"fail if {OUT.relative_to(ROOT)} is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            sys.exit(f"{OUT.relative_to(ROOT)} is stale: run tools/gen_logs_model.py")
        return
    OUT.write_text(text)


if __name__ == "__main__":
    main()
