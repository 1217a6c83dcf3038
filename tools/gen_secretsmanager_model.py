#!/usr/bin/env python3
"""Writes src/secretsmanager/api/models/secretsmanager-2017-10-17.json: the served slice of botocore's Secrets Manager model.

Paddock serves the operations in `OPERATIONS` (those src/secretsmanager/api/secrets_manager_service.cc
implements). The slice holds them and every shape their input, output and errors reach, cut as
tools/gen_ec2_model.py cuts EC2's, trimmed of documentation by tools/trim_botocore_model.py, and
records under "metadata" -> "paddockSubset" the botocore version and the operations.

    tools/gen_secretsmanager_model.py           # rewrite the file
    tools/gen_secretsmanager_model.py --check   # exit 1 when the committed file is not what this writes
"""
import argparse
import json
import pathlib
import sys

from gen_ec2_model import reached_shapes
from trim_botocore_model import trim

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "src/secretsmanager/api/models/secretsmanager-2017-10-17.json"
OPERATIONS = sorted([
    "CreateSecret", "DeleteSecret", "DescribeSecret", "GetSecretValue", "ListSecretVersionIds", "ListSecrets",
    "PutSecretValue", "RestoreSecret", "TagResource", "UntagResource", "UpdateSecret", "UpdateSecretVersionStage",
])


def render():
    import botocore
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("secretsmanager", "service-2")
    operations = {op: model["operations"][op] for op in OPERATIONS}
    roots = []
    for op in operations.values():
        roots += [op[k]["shape"] for k in ("input", "output") if k in op]
        roots += [e["shape"] for e in op.get("errors", [])]
    names = reached_shapes(model["shapes"], roots)
    metadata = dict(model["metadata"])
    metadata["paddockSubset"] = {"botocoreVersion": botocore.__version__,
                                 "generator": "tools/gen_secretsmanager_model.py", "operations": OPERATIONS}
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
            sys.exit(f"{OUT.relative_to(ROOT)} is stale: run tools/gen_secretsmanager_model.py")
        return
    OUT.write_text(text)


if __name__ == "__main__":
    main()
