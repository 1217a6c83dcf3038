#!/usr/bin/env python3
"""Writes src/ec2/api/models/ec2-subset.json: the slice of botocore's EC2 model that Paddock serves.

EC2's whole model is several megabytes; Paddock serves a dozen operations (`kActions` in
src/ec2/api/ec2_service.cc). The subset holds those operations and every shape their input,
output and errors reach, without documentation (tools/trim_botocore_model.py's trim), and records
under "metadata" -> "paddockSubset" the botocore version it was cut from and the operations.
ec2/api embeds it (paddock_embed) and decodes EC2's parameters by it (aws::QueryModel::ParseEc2).

    tools/gen_ec2_model.py           # rewrite the file
    tools/gen_ec2_model.py --check   # exit 1 when the committed file is not what this writes

A botocore other than the recorded one fails --check as a stale file: regenerate, review the diff.
"""
import argparse
import json
import pathlib
import re
import sys

from trim_botocore_model import trim

ROOT = pathlib.Path(__file__).resolve().parent.parent
DISPATCH = ROOT / "src/ec2/api/ec2_service.cc"
OUT = ROOT / "src/ec2/api/models/ec2-subset.json"


def served_operations():
    text = DISPATCH.read_text()
    table = text[text.index("kActions[] = {"):]
    table = table[:table.index("};")]
    return sorted(set(re.findall(r'"(\w+)"', table)))


def reached_shapes(shapes, roots):
    """Every shape name reachable from `roots` (members, list members, map keys and values)."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        shape = shapes[name]
        for key in ("member", "key", "value"):
            if key in shape:
                todo.append(shape[key]["shape"])
        todo.extend(m["shape"] for m in shape.get("members", {}).values())
    return seen


def render():
    import botocore
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("ec2", "service-2")
    ops = served_operations()
    missing = [op for op in ops if op not in model["operations"]]
    if missing:
        sys.exit(f"kActions names operations botocore's EC2 model lacks: {missing}")
    operations = {op: model["operations"][op] for op in ops}
    roots = []
    for op in operations.values():
        roots += [op[k]["shape"] for k in ("input", "output") if k in op]
        roots += [e["shape"] for e in op.get("errors", [])]
    names = reached_shapes(model["shapes"], roots)
    metadata = dict(model["metadata"])
    metadata["paddockSubset"] = {"botocoreVersion": botocore.__version__, "generator": "tools/gen_ec2_model.py",
                                 "operations": ops}
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
            print(f"{OUT.relative_to(ROOT)} is stale: run tools/gen_ec2_model.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
