#!/usr/bin/env python3
"""Writes src/ssm/api/models/ssm-2014-11-06.json: the Parameter Store slice of botocore's SSM model.

SSM's whole model holds 146 operations (~250 KB without documentation); Paddock serves Parameter
Store's (`OPERATIONS` below, a superset of what src/ssm/api/ssm_service.cc implements today). The
slice holds those operations and every shape their input, output and errors reach, cut as
tools/gen_ec2_model.py cuts EC2's, and records under "metadata" -> "paddockSubset" the botocore
version and the operations.

    tools/gen_ssm_model.py           # rewrite the file
    tools/gen_ssm_model.py --check   # exit 1 when the committed file is not what this writes
"""
import argparse
import json
import pathlib
import sys

from gen_ec2_model import reached_shapes
from trim_botocore_model import trim

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "src/ssm/api/models/ssm-2014-11-06.json"
OPERATIONS = sorted([
    "AddTagsToResource", "DeleteParameter", "DeleteParameters", "DescribeParameters", "GetParameter",
    "GetParameterHistory", "GetParameters", "GetParametersByPath", "LabelParameterVersion",
    "ListTagsForResource", "PutParameter", "RemoveTagsFromResource", "UnlabelParameterVersion",
])


def render():
    import botocore
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("ssm", "service-2")
    operations = {op: model["operations"][op] for op in OPERATIONS}
    roots = []
    for op in operations.values():
        roots += [op[k]["shape"] for k in ("input", "output") if k in op]
        roots += [e["shape"] for e in op.get("errors", [])]
    names = reached_shapes(model["shapes"], roots)
    metadata = dict(model["metadata"])
    metadata["paddockSubset"] = {"botocoreVersion": botocore.__version__, "generator": "tools/gen_ssm_model.py",
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
            sys.exit(f"{OUT.relative_to(ROOT)} is stale: run tools/gen_ssm_model.py")
        return
    OUT.write_text(text)


if __name__ == "__main__":
    main()
