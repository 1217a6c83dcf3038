#!/usr/bin/env python3
"""Writes a botocore service model without its documentation, as compact JSON.

Paddock embeds these trimmed models (src/<service>/api/models/) to validate requests exactly as AWS's own
API models describe them. An overlay (tools/model_overlays/<service>.json) adds or replaces whole
shapes that AWS has shipped since the machine's botocore: its "shapes" are copied from a newer
botocore's model (named in its "_source"), trimmed the same way.

    tools/trim_botocore_model.py ecs --overlay tools/model_overlays/ecs.json \
        -o src/ecs/api/models/ecs-2014-11-13.json
"""
import argparse
import json
import sys

import botocore.loaders

_DROP = {"documentation", "documentationUrl", "examples"}


def trim(node):
    if isinstance(node, dict):
        return {k: trim(v) for k, v in node.items() if k not in _DROP}
    if isinstance(node, list):
        return [trim(v) for v in node]
    return node


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("service", help="botocore service name, e.g. ecs")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument("--overlay", help="a JSON file whose \"shapes\" replace or add the model's shapes")
    args = parser.parse_args()
    model = botocore.loaders.Loader().load_service_model(args.service, "service-2")
    if args.overlay:
        with open(args.overlay, encoding="utf-8") as f:
            model["shapes"].update(json.load(f)["shapes"])
    text = json.dumps(trim(model), separators=(",", ":"), sort_keys=True, ensure_ascii=True)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
            f.write("\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
