#!/usr/bin/env python3
"""Rewrites src/iam/aws_managed_policies.json from AWS's published policy records.

The records are what IAM's ListPolicies and GetPolicyVersion return, as github.com/zoph-io/IAMTrail
and github.com/zoph-io/MAMIP keep them: `policies-list.json` (ids, paths, default versions, dates)
and `policies/<Name>` (the default version's Document, VersionId, CreateDate). The data file keeps
its own order and descriptions (checked against AWS's managed-policy reference pages, which the
records lack); everything else comes from the records, and each written document is read back and
compared with its record (json.loads equality) before the file is replaced.

    tools/gen_aws_managed_policies.py --list IAMTrail/policies-list.json \\
        --records IAMTrail/policies [--records MAMIP/policies ...] [--check]

With several --records directories, the record with the highest version number wins (a later
snapshot of the same policy); a default version newer than the list's is accepted and said.
"""
import argparse
import datetime
import json
import pathlib
import sys

DATA = pathlib.Path(__file__).resolve().parent.parent / "src" / "iam" / "aws_managed_policies.json"
COMMENT = ("AWS-managed policies every account sees by ARN (iam::AwsManagedPolicies): AWS's documents, default "
           "version ids, ids and dates as ListPolicies/GetPolicyVersion publish them. Written by "
           "tools/gen_aws_managed_policies.py; docs/contracts/iam.md (\"Documents\") names the sources.")


def epoch(stamp):
    return int(datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())


def version_number(version_id):
    return int(version_id.lstrip("v"))


def newest_record(name, record_dirs):
    best = None
    for d in record_dirs:
        path = pathlib.Path(d) / name
        if not path.exists():
            continue
        version = json.loads(path.read_text())["PolicyVersion"]
        if best is None or version_number(version["VersionId"]) > version_number(best["VersionId"]):
            best = version
    if best is None:
        sys.exit(f"no record of {name}")
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", required=True, help="policies-list.json (ListPolicies Scope=AWS)")
    parser.add_argument("--records", action="append", required=True, help="a directory of GetPolicyVersion records")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if the data file differs")
    args = parser.parse_args()

    listed = {p["PolicyName"]: p for p in json.loads(pathlib.Path(args.list).read_text())["Policies"]}
    current = json.loads(DATA.read_text())
    out = []
    for old in current["policies"]:
        name = old["name"]
        meta = listed[name]
        version = newest_record(name, args.records)
        if version["VersionId"] != meta["DefaultVersionId"]:
            if version_number(version["VersionId"]) < version_number(meta["DefaultVersionId"]):
                sys.exit(f"{name}: the records' {version['VersionId']} is older than the list's {meta['DefaultVersionId']}")
            print(f"{name}: {version['VersionId']} ({version['CreateDate']}) is newer than the list's "
                  f"{meta['DefaultVersionId']}", file=sys.stderr)
        out.append({
            "name": name,
            "path": meta["Path"],
            "id": meta["PolicyId"],
            "defaultVersion": version["VersionId"],
            "createDate": epoch(meta["CreateDate"]),
            # A policy's UpdateDate is its default version's CreateDate (so for a version newer than the list).
            "updateDate": epoch(version["CreateDate"]),
            "description": old["description"],
            "document": version["Document"],
        })
    text = json.dumps({"_comment": COMMENT, "policies": out}, indent=1, ensure_ascii=False) + "\n"

    written = json.loads(text)["policies"]
    for entry in written:
        if entry["document"] != newest_record(entry["name"], args.records)["Document"]:
            sys.exit(f"{entry['name']}: the written document differs from its record")
    if args.check:
        same = DATA.read_text() == text
        print("up to date" if same else f"{DATA} differs from the records", file=sys.stderr)
        sys.exit(0 if same else 1)
    DATA.write_text(text)
    for entry in written:
        print(f"{entry['name']} {entry['defaultVersion']}", file=sys.stderr)


if __name__ == "__main__":
    main()
