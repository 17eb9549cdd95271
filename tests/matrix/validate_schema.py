#!/usr/bin/env python3
"""Validate luacore-inspect --json reports against doc/luacore-inspect.schema.json.

usage: validate_schema.py SCHEMA REPORT.json...
Also checks that the schema rejects a broken copy of the first report, so
this check cannot pass by accepting everything.  Exit 0 if all valid."""
import copy
import json
import sys

import jsonschema


def main(argv):
    schema = json.load(open(argv[0]))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    first = None
    for path in argv[1:]:
        doc = json.load(open(path))
        first = first or doc
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        if errors:
            bad += 1
            print(f"{path}: {len(errors)} schema errors")
            for e in errors[:5]:
                print(f"    at /{'/'.join(map(str, e.path))}: {e.message[:200]}")
    if first is not None:
        broken = copy.deepcopy(first)
        broken["threads"].append({"tid": "not a number"})
        if validator.is_valid(broken):
            print("the schema accepts a thread whose tid is a string")
            bad += 1
    print(f"schema: {len(argv) - 1 - bad} of {len(argv) - 1} reports valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
