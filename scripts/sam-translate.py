#!/usr/bin/env python3
"""Translate a SAM template into the CloudFormation template AWS deploys.

CloudFormation runs the SAM transform (AWS::Serverless-2016-10-31) with
aws-sam-translator, the library this script calls, so the output is what
`sam deploy` would create. Every function's local CodeUri (`.`, which `sam
build` and `sam package` replace by an S3 object) becomes --code-uri.

Usage: sam-translate.py --template template.yaml --code-uri s3://bucket/key \
           --out translated.json [--region us-east-1]
"""
import argparse
import json
import os
import sys

try:
    from samtranslator.translator.arn_generator import ArnGenerator
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError as e:
    sys.exit(f"sam-translate: aws-sam-translator is not importable by {sys.executable}: {e}")


class NoManagedPolicies:
    """heddle's functions name no managed policy, only inline statements;
    the translator asks for the list only when a template names one, and
    then it must fail here rather than reach for AWS."""

    def load(self):
        return {}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--template", required=True)
    p.add_argument("--code-uri", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--region", default="us-east-1")
    args = p.parse_args()
    with open(args.template) as f:
        tpl = yaml_parse(f.read())
    for res in tpl.get("Resources", {}).values():
        if res.get("Type") == "AWS::Serverless::Function":
            res.setdefault("Properties", {})["CodeUri"] = args.code_uri
    # The translator builds ARNs for the region it runs in.
    os.environ["AWS_DEFAULT_REGION"] = args.region
    ArnGenerator.BOTO_SESSION_REGION_NAME = args.region
    out = transform(tpl, {}, NoManagedPolicies())
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
