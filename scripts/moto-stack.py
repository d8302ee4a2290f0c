#!/usr/bin/env python3
"""Deploy a translated CloudFormation template (scripts/sam-translate.py's
output) into moto_server, and report what was made, as JSON on stdout.

moto's CloudFormation implements a subset of resource types, and 5.2.1
fails the whole stack (a 500) on a resource that references one it lacks:
AWS::Lambda::Alias, AWS::Lambda::EventInvokeConfig, AWS::CodeDeploy::*,
AWS::Scheduler::Schedule, AWS::ApiGatewayV2::* and AWS::CloudWatch::Alarm
among the ones heddle's template uses. So the template is deployed in
layers, in dependency order: every resource of a type moto's CloudFormation
implements goes into a CloudFormation stack (one per layer, named
<stack>-<n>), and every other resource is created through its own service's
API in moto (the call CloudFormation makes for it), with its properties
resolved from what earlier layers made. Each stack exports, as outputs, the
Ref and GetAtt values later layers use; a reference across layers becomes
that value. Nothing is faked: a resource either exists in moto, created by
moto's CloudFormation or by its service API, or the deploy fails.

Where moto's CloudFormation models misbehave, the input is given the form
CloudFormation also accepts, or the resource is made through its API:
AWS::Lambda::Version (its Ref is the logical id and GetAtt Version fails:
PublishVersion instead), AWS::KMS::Key (the key policy as JSON text, or
DescribeKey fails), Number parameters (passed as numbers, environment
variables as strings, as CloudFormation's schemas convert them).

After the deploy it reads back, through the services' APIs, the roles and
their policies, alarms, schedules, deployment groups, HTTP APIs and SNS
topics, for the caller to check references against what moto holds.

Usage: moto-stack.py --endpoint URL --template t.json --stack NAME \
           --code-bucket B --code-key K --code-file functions.zip \
           [--param Key=Value ...] [--topic-param Param=TopicName ...]
"""
import argparse
import ast
import json
import re
import sys
import time
import urllib.parse

try:
    import boto3
    from moto.cloudformation.parsing import NULL_MODELS, get_model_map
except ImportError as e:
    sys.exit(f"moto-stack: moto and boto3 are not importable by {sys.executable}: {e}")

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account


def client(endpoint, name):
    return boto3.client(
        name, endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id="moto", aws_secret_access_key="moto")


def call(endpoint, service, op, params):
    """One API call, with the resolved properties' strings turned into the
    types the operation takes (template parameters are strings; CloudFormation
    converts them the same way)."""
    c = client(endpoint, service)
    model = c.meta.service_model.operation_model(
        next(n for n in c.meta.service_model.operation_names
             if c.meta.method_to_api_mapping.get(op) == n))
    return getattr(c, op)(**coerce(model.input_shape, params))


def coerce(shape, v):
    if shape is None:
        return v
    t = shape.type_name
    if t == "structure" and isinstance(v, dict):
        return {k: coerce(shape.members.get(k), x) for k, x in v.items()}
    if t == "list" and isinstance(v, list):
        return [coerce(shape.member, x) for x in v]
    if t == "map" and isinstance(v, dict):
        return {k: coerce(shape.value, x) for k, x in v.items()}
    if isinstance(v, str):
        if t in ("integer", "long"):
            return int(v)
        if t in ("double", "float"):
            return float(v)
        if t == "boolean":
            return v == "true"
    if t == "string" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return v


def policy_document(doc):
    """boto3 decodes the documents IAM returns; moto's CloudFormation
    stores an inline role policy as Python's repr of the dict (single
    quotes, True), which boto3 hands back as a string."""
    if not isinstance(doc, str):
        return doc
    doc = urllib.parse.unquote(doc)
    try:
        return json.loads(doc)
    except ValueError:
        return ast.literal_eval(doc)


def refs(node, out):
    """Collect the logical ids node references (Ref, GetAtt, ${} in Sub)."""
    if isinstance(node, dict):
        if "Ref" in node and len(node) == 1:
            out.add(node["Ref"])
        elif "Fn::GetAtt" in node and len(node) == 1:
            out.add(node["Fn::GetAtt"][0])
        elif "Fn::Sub" in node and len(node) == 1:
            s = node["Fn::Sub"]
            text, extra = (s, {}) if isinstance(s, str) else (s[0], s[1])
            for v in re.findall(r"\$\{([^}!]+)\}", text):
                if v not in extra:
                    out.add(v.split(".")[0])
            refs(extra, out)
        else:
            for v in node.values():
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)
    return out


class Deployer:
    def __init__(self, endpoint, tpl, stack, params):
        self.endpoint = endpoint
        self.tpl = tpl
        self.stack = stack
        self.params = params
        # moto's own model for AWS::Lambda::Version answers Ref with the
        # logical id and fails GetAtt Version (which the alias needs), so
        # it is published through the Lambda API like the types moto's
        # CloudFormation lacks.
        self.supported = (set(get_model_map()) | set(NULL_MODELS)) - {"AWS::Lambda::Version"}
        self.values = {}  # "X" (Ref) or "X.Attr" (GetAtt) -> value
        self.report = {"stacks": [], "direct": [], "outputs": {}, "unsupported_types": []}
        for name, p in tpl.get("Parameters", {}).items():
            v = str(params.get(name, p.get("Default", "")))
            # CloudFormation hands a Number parameter to a resource as a
            # number (moto's CloudFormation too, for its own parameters).
            if p.get("Type") == "Number":
                v = float(v) if "." in v else int(v)
            self.values[name] = v
        self.values.update({
            "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": stack,
        })
        self.conditions = {}
        for name in tpl.get("Conditions", {}):
            self.conditions[name] = self.cond(tpl["Conditions"][name])

    def cond(self, node):
        if isinstance(node, dict):
            if "Condition" in node:
                return self.cond(self.tpl["Conditions"][node["Condition"]])
            if "Fn::Equals" in node:
                a, b = node["Fn::Equals"]
                return str(self.resolve(a)) == str(self.resolve(b))
            if "Fn::Not" in node:
                return not self.cond(node["Fn::Not"][0])
            if "Fn::And" in node:
                return all(self.cond(c) for c in node["Fn::And"])
            if "Fn::Or" in node:
                return any(self.cond(c) for c in node["Fn::Or"])
        raise SystemExit(f"moto-stack: condition {node!r} is not understood")

    NO_VALUE = object()

    def resolve(self, node, keep=frozenset()):
        """Replace intrinsics by values; references to ids in keep (the
        current stack's own resources) stay for CloudFormation to resolve."""
        if isinstance(node, dict):
            if len(node) == 1:
                (k, v), = node.items()
                if k == "Ref":
                    if v == "AWS::NoValue":
                        return self.NO_VALUE
                    if v in keep or (keep and v.startswith("AWS::")):
                        return node
                    return self.values[v]
                if k == "Fn::GetAtt":
                    if v[0] in keep:
                        return node
                    return self.values[v[0] + "." + v[1]]
                if k == "Fn::If":
                    c, a, b = v
                    return self.resolve(a if self.conditions[c] else b, keep)
                if k == "Fn::Sub":
                    text, extra = (v, {}) if isinstance(v, str) else (v[0], v[1])
                    extra = {n: self.resolve(e, keep) for n, e in extra.items()}
                    inner = False

                    def sub(m):
                        nonlocal inner
                        name = m.group(1)
                        if name in extra and not isinstance(extra[name], dict):
                            return str(extra[name])
                        if name.split(".")[0] in keep or (keep and name.startswith("AWS::")) or name in extra:
                            inner = True
                            return m.group(0)
                        return str(self.values[name])
                    out = re.sub(r"\$\{([^}!]+)\}", sub, text)
                    if inner:
                        left = {n: e for n, e in extra.items() if isinstance(e, dict)}
                        return {"Fn::Sub": [out, left] if left else out}
                    return out
                if k == "Fn::Join":
                    parts = [self.resolve(p, keep) for p in v[1]]
                    return v[0].join(str(p) for p in parts)
                if k.startswith("Fn::") and k not in ("Fn::Base64",):
                    raise SystemExit(f"moto-stack: {k} is not understood")
            out = {}
            for k, v in node.items():
                r = self.resolve(v, keep)
                if r is not self.NO_VALUE:
                    out[k] = r
            return out
        if isinstance(node, list):
            return [r for r in (self.resolve(v, keep) for v in node) if r is not self.NO_VALUE]
        return node

    def needed_attrs(self):
        """Every GetAtt any resource or output of the template uses."""
        need = {}

        def walk(n):
            if isinstance(n, dict):
                if "Fn::GetAtt" in n and len(n) == 1:
                    need.setdefault(n["Fn::GetAtt"][0], set()).add(n["Fn::GetAtt"][1])
                elif "Fn::Sub" in n and len(n) == 1:
                    s = n["Fn::Sub"]
                    text = s if isinstance(s, str) else s[0]
                    for v in re.findall(r"\$\{([^}!]+)\}", text):
                        if "." in v:
                            a, b = v.split(".", 1)
                            need.setdefault(a, set()).add(b)
                    if not isinstance(s, str):
                        walk(s[1])
                else:
                    for v in n.values():
                        walk(v)
            elif isinstance(n, list):
                for v in n:
                    walk(v)
        walk(self.tpl.get("Resources", {}))
        walk(self.tpl.get("Outputs", {}))
        return need

    def deploy(self):
        res = {k: v for k, v in self.tpl["Resources"].items()
               if "Condition" not in v or self.conditions[v["Condition"]]}
        deps = {k: (refs(v.get("Properties", {}), set()) | set(v.get("DependsOn", []) if isinstance(v.get("DependsOn", []), list) else [v["DependsOn"]])) & set(res)
                for k, v in res.items()}
        attrs = self.needed_attrs()
        done = set()
        layer = 0
        self.report["unsupported_types"] = sorted({v["Type"] for v in res.values() if v["Type"] not in self.supported})
        while len(done) < len(res):
            progress = False
            # The resources moto's CloudFormation makes, whose references
            # are all made (or are in this same stack).
            batch = set()
            while True:
                more = {k for k in res if k not in done and k not in batch
                        and res[k]["Type"] in self.supported and deps[k] <= done | batch}
                if not more:
                    break
                batch |= more
            if batch:
                layer += 1
                self.create_stack(f"{self.stack}-{layer}", {k: res[k] for k in batch}, attrs)
                done |= batch
                progress = True
            for k in sorted(res):
                if k not in done and res[k]["Type"] not in self.supported and deps[k] <= done:
                    self.create_direct(k, res[k])
                    done.add(k)
                    progress = True
            if not progress:
                left = sorted(set(res) - done)
                raise SystemExit(f"moto-stack: no progress; left {left}")
        self.read_back()
        for name, out in self.tpl.get("Outputs", {}).items():
            if "Condition" in out and not self.conditions[out["Condition"]]:
                continue
            self.report["outputs"][name] = self.resolve(out["Value"])
        return self.report

    def read_back(self):
        """What moto now holds, read through the services' APIs (not from
        what was asked), for the caller to check references against."""
        ep = self.endpoint
        rb = {"roles": {}, "alarms": {}, "schedules": {}, "deployment_groups": {}, "apis": {}}
        iam = client(ep, "iam")
        for role in iam.list_roles()["Roles"]:
            pols = {}
            for pn in iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"]:
                doc = iam.get_role_policy(RoleName=role["RoleName"], PolicyName=pn)["PolicyDocument"]
                pols[pn] = policy_document(doc)
            attached = [a["PolicyArn"] for a in
                        iam.list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"]]
            rb["roles"][role["Arn"]] = {"name": role["RoleName"], "trust": role["AssumeRolePolicyDocument"],
                                        "policies": pols, "attached": attached}
        for a in client(ep, "cloudwatch").describe_alarms()["MetricAlarms"]:
            rb["alarms"][a["AlarmName"]] = {"arn": a["AlarmArn"], "actions": a.get("AlarmActions", []),
                                            "ok_actions": a.get("OKActions", [])}
        sch = client(ep, "scheduler")
        for x in sch.list_schedules()["Schedules"]:
            g = sch.get_schedule(Name=x["Name"])
            rb["schedules"][x["Name"]] = {"target": g["Target"]["Arn"], "role": g["Target"]["RoleArn"],
                                          "expression": g["ScheduleExpression"], "state": g["State"]}
        cd = client(ep, "codedeploy")
        for app in cd.list_applications()["applications"]:
            for dg in cd.list_deployment_groups(applicationName=app)["deploymentGroups"]:
                g = cd.get_deployment_group(applicationName=app, deploymentGroupName=dg)["deploymentGroupInfo"]
                rb["deployment_groups"][dg] = {
                    "application": app, "role": g.get("serviceRoleArn", ""),
                    "alarms": [a["name"] for a in g.get("alarmConfiguration", {}).get("alarms", [])]}
        gw = client(ep, "apigatewayv2")
        for api in gw.get_apis()["Items"]:
            ints = {i["IntegrationId"]: i.get("IntegrationUri", "") for i in gw.get_integrations(ApiId=api["ApiId"])["Items"]}
            routes = {r["RouteKey"]: {"target": r.get("Target", ""), "authorizer": r.get("AuthorizerId", ""),
                                      "uri": ints.get(r.get("Target", "").removeprefix("integrations/"), "")}
                      for r in gw.get_routes(ApiId=api["ApiId"])["Items"]}
            stages = {st["StageName"]: st.get("DefaultRouteSettings", {})
                      for st in gw.get_stages(ApiId=api["ApiId"])["Items"]}
            # moto has GetAuthorizer but not GetAuthorizers: the routes name them.
            auths = {r["authorizer"]: gw.get_authorizer(ApiId=api["ApiId"], AuthorizerId=r["authorizer"]).get("JwtConfiguration", {})
                     for r in routes.values() if r["authorizer"]}
            rb["apis"][api["ApiId"]] = {"routes": routes, "stages": stages, "authorizers": auths}
        rb["topics"] = [x["TopicArn"] for x in client(ep, "sns").list_topics()["Topics"]]
        self.report["read_back"] = rb

    def create_stack(self, name, resources, attrs):
        keep = frozenset(resources)
        body = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {}, "Outputs": {}}
        for k, v in resources.items():
            r = {"Type": v["Type"]}
            for f in ("Properties", "DependsOn", "DeletionPolicy", "UpdateReplacePolicy", "Metadata"):
                if f in v:
                    r[f] = v[f]
            if "DependsOn" in r:
                d = r["DependsOn"] if isinstance(r["DependsOn"], list) else [r["DependsOn"]]
                d = [x for x in d if x in keep]
                if d:
                    r["DependsOn"] = d
                else:
                    del r["DependsOn"]
            r["Properties"] = self.resolve(r.get("Properties", {}), keep)
            if v["Type"] == "AWS::KMS::Key" and "KeyPolicy" in r["Properties"]:
                # CloudFormation takes the key policy as an object or as
                # its JSON text; moto's model stores what it is given and
                # DescribeKey then fails (a 500) unless it is the text.
                r["Properties"]["KeyPolicy"] = json.dumps(self.resolve(v["Properties"]["KeyPolicy"]))
            if v["Type"] == "AWS::Lambda::Function":
                # An environment variable is a string whatever made it, as
                # CloudFormation's schema for the type converts it.
                env = r["Properties"].get("Environment", {}).get("Variables", {})
                for ek, ev in env.items():
                    if isinstance(ev, (int, float)) and not isinstance(ev, bool):
                        env[ek] = str(ev)
            body["Resources"][k] = r
            body["Outputs"][f"Ref{k}"] = {"Value": {"Ref": k}}
            for a in sorted(attrs.get(k, ())):
                body["Outputs"][f"Att{k}{a.replace('.', '')}"] = {"Value": {"Fn::GetAtt": [k, a]}}
        cf = client(self.endpoint, "cloudformation")
        cf.create_stack(StackName=name, TemplateBody=json.dumps(body),
                        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"])
        for _ in range(600):
            s = cf.describe_stacks(StackName=name)["Stacks"][0]
            if not s["StackStatus"].endswith("_IN_PROGRESS"):
                break
            time.sleep(0.1)
        outs = {o["OutputKey"]: o["OutputValue"] for o in s.get("Outputs", [])}
        for k in resources:
            self.values[k] = outs.get(f"Ref{k}")
            for a in attrs.get(k, ()):
                self.values[f"{k}.{a}"] = outs.get(f"Att{k}{a.replace('.', '')}")
        rs = cf.describe_stack_resources(StackName=name)["StackResources"]
        self.report["stacks"].append({
            "name": name, "status": s["StackStatus"], "reason": s.get("StackStatusReason", ""),
            "resources": [{"logical": r["LogicalResourceId"], "type": r["ResourceType"],
                           "status": r["ResourceStatus"], "physical": r.get("PhysicalResourceId", "")}
                          for r in rs],
            "outputs": outs,
        })

    def create_direct(self, logical, r):
        """Create one resource of a type moto's CloudFormation lacks through
        its service's API, as CloudFormation would."""
        t = r["Type"]
        p = self.resolve(r.get("Properties", {}))
        gen = f"{self.stack}-{logical}"[:64]
        ref, atts = None, {}
        if t == "AWS::Lambda::Version":
            out = call(self.endpoint, "lambda", "publish_version", p)
            ref, atts = out["FunctionArn"], {"Version": out["Version"]}
        elif t == "AWS::Lambda::Alias":
            out = call(self.endpoint, "lambda", "create_alias", p)
            ref, atts = out["AliasArn"], {"AliasArn": out["AliasArn"]}
        elif t == "AWS::Lambda::EventInvokeConfig":
            out = call(self.endpoint, "lambda", "put_function_event_invoke_config", p)
            ref = out["FunctionArn"]
        elif t == "AWS::CodeDeploy::Application":
            cd = client(self.endpoint, "codedeploy")
            cd.create_application(applicationName=p.get("ApplicationName", gen),
                                  computePlatform=p["ComputePlatform"])
            ref = p.get("ApplicationName", gen)
        elif t == "AWS::CodeDeploy::DeploymentGroup":
            cd = client(self.endpoint, "codedeploy")
            ac = p.get("AlarmConfiguration", {})
            ar = p.get("AutoRollbackConfiguration", {})
            ds = p.get("DeploymentStyle", {})
            name = p.get("DeploymentGroupName", gen)
            cd.create_deployment_group(
                applicationName=p["ApplicationName"], deploymentGroupName=name,
                deploymentConfigName=p["DeploymentConfigName"], serviceRoleArn=p["ServiceRoleArn"],
                alarmConfiguration={"enabled": ac.get("Enabled", False),
                                    "alarms": [{"name": a["Name"]} for a in ac.get("Alarms", [])]},
                autoRollbackConfiguration={"enabled": ar.get("Enabled", False), "events": ar.get("Events", [])},
                deploymentStyle={"deploymentType": ds.get("DeploymentType"),
                                 "deploymentOption": ds.get("DeploymentOption")})
            ref = name
        elif t == "AWS::Scheduler::Schedule":
            out = call(self.endpoint, "scheduler", "create_schedule", p)
            ref, atts = p["Name"], {"Arn": out["ScheduleArn"]}
        elif t == "AWS::ApiGatewayV2::Api":
            gw = client(self.endpoint, "apigatewayv2")
            if "Body" in p:
                # moto implements ReimportApi but not ImportApi: an empty
                # HTTP API, then its OpenAPI body (routes and integrations).
                out = gw.create_api(Name=p["Body"]["info"]["title"], ProtocolType="HTTP")
                out = gw.reimport_api(ApiId=out["ApiId"], Body=json.dumps(p["Body"]))
            else:
                out = call(self.endpoint, "apigatewayv2", "create_api", p)
            ref, atts = out["ApiId"], {"ApiEndpoint": out.get("ApiEndpoint", "")}
        elif t == "AWS::ApiGatewayV2::Stage":
            out = call(self.endpoint, "apigatewayv2", "create_stage", p)
            ref = out["StageName"]
        elif t == "AWS::ApiGatewayV2::Authorizer":
            out = call(self.endpoint, "apigatewayv2", "create_authorizer", p)
            ref = out["AuthorizerId"]
        elif t == "AWS::ApiGatewayV2::Integration":
            out = call(self.endpoint, "apigatewayv2", "create_integration", p)
            ref = out["IntegrationId"]
        elif t == "AWS::ApiGatewayV2::Route":
            out = call(self.endpoint, "apigatewayv2", "create_route", p)
            ref = out["RouteId"]
        elif t == "AWS::CloudWatch::Alarm":
            name = p.pop("AlarmName", gen)
            call(self.endpoint, "cloudwatch", "put_metric_alarm", dict(p, AlarmName=name))
            cw = client(self.endpoint, "cloudwatch")
            arn = cw.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["AlarmArn"]
            ref, atts = name, {"Arn": arn}
        else:
            raise SystemExit(f"moto-stack: {logical} is a {t}, which neither moto's CloudFormation "
                             "nor this script creates")
        self.values[logical] = ref
        for a, v in atts.items():
            self.values[f"{logical}.{a}"] = v
        self.report["direct"].append({"logical": logical, "type": t, "physical": ref})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--stack", required=True)
    ap.add_argument("--code-bucket", required=True)
    ap.add_argument("--code-key", required=True)
    ap.add_argument("--code-file", required=True, help="the functions' code package to upload")
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--topic-param", action="append", default=[],
                    help="PARAM=NAME: make the SNS topic NAME first and pass its ARN as PARAM")
    args = ap.parse_args()
    params = dict(p.split("=", 1) for p in args.param)
    for tp in args.topic_param:
        param, name = tp.split("=", 1)
        params[param] = client(args.endpoint, "sns").create_topic(Name=name)["TopicArn"]
    with open(args.template) as f:
        tpl = json.load(f)
    s3 = client(args.endpoint, "s3")
    s3.create_bucket(Bucket=args.code_bucket)
    with open(args.code_file, "rb") as f:
        s3.put_object(Bucket=args.code_bucket, Key=args.code_key, Body=f.read())
    report = Deployer(args.endpoint, tpl, args.stack, params).deploy()
    json.dump(report, sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
