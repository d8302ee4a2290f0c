package infra

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/motoserver"
)

// stackParams are template.yaml's parameters as infra/README.md documents
// them (the stage, the worker's timeout, the request limits, the deploy
// type), with the optional ones set so that their conditional resources
// are deployed too: the OIDC authorizer's route and the alarms' topic.
// The values differ from the defaults, so that each is seen to arrive.
var stackParams = map[string]string{
	"Stage":                   "ci",
	"WorkerTimeout":           "600",
	"ApiThrottleRate":         "50",
	"ApiThrottleBurst":        "80",
	"TenantRequestsPerMinute": "600",
	"AuthFailuresPerMinute":   "5",
	"DeploymentType":          "Canary10Percent5Minutes",
	"OidcIssuer":              "https://idp.example.com/realms/acme",
	"OidcAudience":            "heddle",
}

// stackReport is scripts/moto-stack.py's answer.
type stackReport struct {
	Stacks []struct {
		Name      string `json:"name"`
		Status    string `json:"status"`
		Reason    string `json:"reason"`
		Resources []struct {
			Logical  string `json:"logical"`
			Type     string `json:"type"`
			Status   string `json:"status"`
			Physical string `json:"physical"`
		} `json:"resources"`
	} `json:"stacks"`
	Direct []struct {
		Logical  string `json:"logical"`
		Type     string `json:"type"`
		Physical string `json:"physical"`
	} `json:"direct"`
	Outputs          map[string]string `json:"outputs"`
	UnsupportedTypes []string          `json:"unsupported_types"`
	ReadBack         struct {
		Roles map[string]struct {
			Name     string                    `json:"name"`
			Policies map[string]policyDocument `json:"policies"`
			Attached []string                  `json:"attached"`
		} `json:"roles"`
		Alarms map[string]struct {
			Actions   []string `json:"actions"`
			OKActions []string `json:"ok_actions"`
		} `json:"alarms"`
		Schedules map[string]struct {
			Target, Role, Expression, State string
		} `json:"schedules"`
		DeploymentGroups map[string]struct {
			Application, Role string
		} `json:"deployment_groups"`
		APIs map[string]struct {
			Routes map[string]struct {
				Target, Authorizer, URI string
			} `json:"routes"`
			Stages      map[string]map[string]float64 `json:"stages"`
			Authorizers map[string]struct {
				Audience []string
				Issuer   string
			} `json:"authorizers"`
		} `json:"apis"`
		Topics []string `json:"topics"`
	} `json:"read_back"`
}

// deployed is one deployment of template.yaml on a moto_server of its own.
type deployed struct {
	moto       *motoserver.Server
	cfg        aws.Config
	translated map[string]any
	report     stackReport
	// params are the parameters' values the stack got: those passed, and
	// the template's defaults for the others.
	params map[string]string
	// topic says whether the alarms' topic (AlarmTopicArn) was made.
	topic bool
}

// deployOnMoto translates template.yaml with aws-sam-translator (the SAM
// transform CloudFormation runs) and creates it in moto with
// scripts/moto-stack.py.
func deployOnMoto(t *testing.T, params map[string]string, topic bool) *deployed {
	t.Helper()
	py := motoserver.RequirePython(t)
	srv := motoserver.StartForTest(t)
	dir := t.TempDir()
	ctx := context.Background()

	translated := filepath.Join(dir, "translated.json")
	out, err := exec.CommandContext(ctx, py, filepath.Join(repoRoot, "scripts", "sam-translate.py"),
		"--template", filepath.Join(repoRoot, "template.yaml"),
		"--code-uri", "s3://heddle-code/functions.zip", "--out", translated).CombinedOutput()
	require.NoError(t, err, "sam-translate.py: %s", out)
	var tpl map[string]any
	raw, err := os.ReadFile(translated)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &tpl))

	// moto's Lambda control plane stores the package and never runs it;
	// a bootstrap that says so is all it needs.
	code := filepath.Join(dir, "functions.zip")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("bootstrap")
	require.NoError(t, err)
	_, err = w.Write([]byte("#!/bin/sh\necho 'heddle: the functions are built by make lambda' >&2\nexit 1\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(code, buf.Bytes(), 0o600))

	args := []string{filepath.Join(repoRoot, "scripts", "moto-stack.py"),
		"--endpoint", srv.URL, "--template", translated, "--stack", "heddle-" + params["Stage"],
		"--code-bucket", "heddle-code", "--code-key", "functions.zip", "--code-file", code}
	if topic {
		args = append(args, "--topic-param", "AlarmTopicArn=heddle-alarms")
	}
	for k, v := range params {
		args = append(args, "--param", k+"="+v)
	}
	cmd := exec.CommandContext(ctx, py, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rep, err := cmd.Output()
	require.NoError(t, err, "moto-stack.py: %s", stderr.String())
	d := &deployed{moto: srv, cfg: srv.AWSConfig(), translated: tpl, params: map[string]string{}, topic: topic}
	require.NoError(t, json.Unmarshal(rep, &d.report))
	for name, p := range tpl["Parameters"].(map[string]any) {
		if def, ok := p.(map[string]any)["Default"]; ok {
			d.params[name] = fmt.Sprint(def)
		}
	}
	for k, v := range params {
		d.params[k] = v
	}
	return d
}

// condition evaluates one of the translated template's conditions, which
// are all of the form Fn::Not [Fn::Equals [Ref Param, ""]]: set or not.
func (d *deployed) condition(t *testing.T, name string) bool {
	t.Helper()
	if name == "HasAlarmTopic" {
		return d.topic // its parameter's value is the topic moto-stack.py made
	}
	c := d.translated["Conditions"].(map[string]any)[name].(map[string]any)
	eq := c["Fn::Not"].([]any)[0].(map[string]any)["Fn::Equals"].([]any)
	param := eq[0].(map[string]any)["Ref"].(string)
	require.Equal(t, "", eq[1], "condition %s is not Not(Equals(Ref, \"\"))", name)
	return d.params[param] != ""
}

// TestStackOnMoto deploys template.yaml as translated by the SAM transform
// into moto and checks what a deploy to AWS would otherwise show first:
// every resource is made, every output names something that exists, and
// every function's environment names resources that exist; once with the
// parameters infra/README.md documents (and the optional ones set), once
// with the template's defaults. RolesAllowHeddlesCalls holds the deployed
// roles against heddle's calls.
func TestStackOnMoto(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		params map[string]string
		topic  bool
	}{
		{"Documented", stackParams, true},
		// The template's defaults: no OIDC route, no alarm topic.
		{"Defaults", map[string]string{"Stage": "dflt"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := deployOnMoto(t, c.params, c.topic)
			t.Run("EveryResourceCreated", d.everyResourceCreated)
			t.Run("OutputsResolve", d.outputsResolve)
			t.Run("FunctionEnvironmentsNameWhatExists", d.environmentsResolve)
			t.Run("WiringNamesWhatExists", d.wiringResolves)
			t.Run("RolesAllowHeddlesCalls", d.rolesAllowCalls)
		})
	}
}

func (d *deployed) everyResourceCreated(t *testing.T) {
	made := map[string]string{} // logical id -> how
	for _, s := range d.report.Stacks {
		require.Equal(t, "CREATE_COMPLETE", s.Status, "stack %s: %s", s.Name, s.Reason)
		for _, r := range s.Resources {
			require.Equal(t, "CREATE_COMPLETE", r.Status, "%s (%s) in %s", r.Logical, r.Type, s.Name)
			require.NotContains(t, made, r.Logical, "%s made twice", r.Logical)
			made[r.Logical] = "cloudformation"
		}
	}
	for _, r := range d.report.Direct {
		require.NotEmpty(t, r.Physical, "%s (%s) has no physical id", r.Logical, r.Type)
		require.NotContains(t, made, r.Logical, "%s made twice", r.Logical)
		made[r.Logical] = "api"
	}
	// Every resource the translated template has for these parameters
	// is there, and no other.
	want := []string{}
	for id, r := range d.translated["Resources"].(map[string]any) {
		if c, ok := r.(map[string]any)["Condition"].(string); ok && !d.condition(t, c) {
			continue
		}
		want = append(want, id)
	}
	sort.Strings(want)
	got := []string{}
	for id := range made {
		got = append(got, id)
	}
	sort.Strings(got)
	require.Equal(t, want, got)
	require.GreaterOrEqual(t, len(d.report.Stacks[0].Resources), 5, "moto's CloudFormation made almost nothing")
	t.Logf("%d resources: %d by moto's CloudFormation in %d layered stacks, %d through their services' APIs (types: %s)",
		len(made), len(made)-len(d.report.Direct), len(d.report.Stacks), len(d.report.Direct), strings.Join(d.report.UnsupportedTypes, ", "))
}

// unresolved matches what an intrinsic left unresolved would leave.
var unresolved = regexp.MustCompile(`\$\{|Fn::|\{"Ref"|^\s*$`)

func (d *deployed) outputsResolve(t *testing.T) {
	ctx := context.Background()
	outs := d.report.Outputs
	for name, o := range d.translated["Outputs"].(map[string]any) {
		v, ok := outs[name]
		if c, conditional := o.(map[string]any)["Condition"].(string); conditional && !d.condition(t, c) {
			require.False(t, ok, "output %s is there though its condition %s is false", name, c)
			continue
		}
		require.True(t, ok, "output %s is missing", name)
		require.False(t, unresolved.MatchString(v), "output %s = %q", name, v)
	}
	stage := d.params["Stage"]
	require.Equal(t, "heddle-"+stage+"-", outs["QueuePrefix"])

	_, err := dynamodb.NewFromConfig(d.cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(outs["TableName"])})
	require.NoError(t, err, "TableName")
	key, err := kms.NewFromConfig(d.cfg).DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(outs["SecretsKeyArn"])})
	require.NoError(t, err, "SecretsKeyArn")
	require.Equal(t, outs["SecretsKeyArn"], aws.ToString(key.KeyMetadata.Arn))
	// The alias the functions and the template's docs name resolves to it.
	byAlias, err := kms.NewFromConfig(d.cfg).DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String("alias/heddle-" + stage)})
	require.NoError(t, err, "alias/heddle-%s", stage)
	require.Equal(t, outs["SecretsKeyArn"], aws.ToString(byAlias.KeyMetadata.Arn))

	lc := lambda.NewFromConfig(d.cfg)
	fn, err := lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(outs["WorkerFunctionArn"])})
	require.NoError(t, err, "WorkerFunctionArn")
	require.Equal(t, outs["WorkerFunctionArn"], aws.ToString(fn.Configuration.FunctionArn))
	requireAlias(t, lc, outs["WorkerAliasArn"])
	_, err = lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(outs["JanitorFunctionName"])})
	require.NoError(t, err, "JanitorFunctionName")

	require.Contains(t, d.report.ReadBack.Alarms, outs["DeadLetterAlarmName"])
	urls := []string{outs["ApiUrl"]}
	if u, ok := outs["OidcApiUrl"]; ok {
		urls = append(urls, strings.TrimSuffix(u, "/oidc"))
	}
	for _, u := range urls {
		id, ok := strings.CutPrefix(u, "https://")
		require.True(t, ok, u)
		id, _, _ = strings.Cut(id, ".execute-api.")
		require.Contains(t, d.report.ReadBack.APIs, id, "%s names no API", u)
	}
}

// requireAlias checks that arn is a function's alias that exists, pointing
// at a published version (not $LATEST).
func requireAlias(t *testing.T, lc *lambda.Client, arn string) {
	t.Helper()
	name, alias, ok := cutQualifier(arn)
	require.True(t, ok, "%q is not an alias ARN", arn)
	a, err := lc.GetAlias(context.Background(), &lambda.GetAliasInput{FunctionName: aws.String(name), Name: aws.String(alias)})
	require.NoError(t, err, "alias %s", arn)
	require.Equal(t, arn, aws.ToString(a.AliasArn))
	require.NotEqual(t, "$LATEST", aws.ToString(a.FunctionVersion), "alias %s points at $LATEST", arn)
	_, err = lc.GetFunction(context.Background(), &lambda.GetFunctionInput{FunctionName: aws.String(name), Qualifier: a.FunctionVersion})
	require.NoError(t, err, "alias %s's version %s", arn, aws.ToString(a.FunctionVersion))
}

// cutQualifier splits arn:aws:lambda:r:a:function:name:qualifier.
func cutQualifier(arn string) (function, qualifier string, ok bool) {
	parts := strings.Split(arn, ":")
	if len(parts) != 8 || parts[2] != "lambda" || parts[5] != "function" {
		return "", "", false
	}
	return strings.Join(parts[:7], ":"), parts[7], true
}

func (d *deployed) environmentsResolve(t *testing.T) {
	ctx := context.Background()
	lc := lambda.NewFromConfig(d.cfg)
	ddb := dynamodb.NewFromConfig(d.cfg)
	kc := kms.NewFromConfig(d.cfg)
	stage := d.params["Stage"]
	for _, short := range []string{"api", "worker", "janitor"} {
		name := "heddle-" + stage + "-" + short
		c, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
		require.NoError(t, err, name)
		require.Equal(t, "provided.al2023", string(c.Runtime), name)
		// Not its architecture: moto's CloudFormation ignores
		// Architectures (TestFunctionsRunOnGraviton reads the template).
		require.NotNil(t, c.Environment, name)
		env := c.Environment.Variables
		for k, v := range env {
			require.False(t, unresolved.MatchString(v) && k != "HEDDLE_BOOTSTRAP_KEY", "%s: %s=%q", name, k, v)
		}
		// The role exists, with the policies the template gives it.
		require.Contains(t, d.report.ReadBack.Roles, aws.ToString(c.Role), "%s's role", name)

		_, err = ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env["HEDDLE_TABLE"])})
		require.NoError(t, err, "%s: HEDDLE_TABLE=%s", name, env["HEDDLE_TABLE"])
		_, err = kc.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(env["HEDDLE_KMS_KEY_ID"])})
		require.NoError(t, err, "%s: HEDDLE_KMS_KEY_ID=%s", name, env["HEDDLE_KMS_KEY_ID"])
		require.Equal(t, d.report.Outputs["QueuePrefix"], env["HEDDLE_QUEUE_PREFIX"], name)
		require.Equal(t, d.params["WorkerTimeout"], env["HEDDLE_WORKER_TIMEOUT"], name)
		if short == "api" {
			// Onboarding maps the tenants' queues to the worker's alias.
			requireAlias(t, lc, env["HEDDLE_WORKER_FUNCTION"])
			require.Equal(t, d.report.Outputs["WorkerAliasArn"], env["HEDDLE_WORKER_FUNCTION"])
			require.Equal(t, d.params["TenantRequestsPerMinute"], env["HEDDLE_TENANT_REQUESTS_PER_MINUTE"])
			require.Equal(t, d.params["AuthFailuresPerMinute"], env["HEDDLE_AUTH_FAILURES_PER_MINUTE"])
		}
		// Every heddle function is invoked through its alias live.
		requireAlias(t, lc, aws.ToString(c.FunctionArn)+":live")
	}
}

func (d *deployed) wiringResolves(t *testing.T) {
	lc := lambda.NewFromConfig(d.cfg)
	stage := d.params["Stage"]
	rb := d.report.ReadBack
	apiAlias := fmt.Sprintf("arn:aws:lambda:%s:%s:function:heddle-%s-api:live", motoserver.Region, motoserver.Account, stage)
	requireAlias(t, lc, apiAlias)

	// The janitor's schedule invokes the janitor's alias with a role that exists.
	s, ok := rb.Schedules["heddle-"+stage+"-janitor"]
	require.True(t, ok, "no janitor schedule")
	requireAlias(t, lc, s.Target)
	require.Contains(t, s.Target, "heddle-"+stage+"-janitor:live")
	require.Contains(t, rb.Roles, s.Role)
	require.Equal(t, "rate(1 minute)", s.Expression)
	require.Equal(t, "ENABLED", s.State)

	// Every route of the HTTP API reaches the api function through its
	// alias, so that a deploy shifts (and a rollback takes back) all of
	// them; the OIDC route carries the JWT authorizer.
	require.Len(t, rb.APIs, 1)
	for id, api := range rb.APIs {
		routes := 2 // the catch-all and the root
		if d.params["OidcIssuer"] != "" {
			routes++ // and the OIDC route
		}
		require.Len(t, api.Routes, routes, "API %s", id)
		for key, r := range api.Routes {
			require.Contains(t, r.URI, apiAlias, "API %s route %q invokes %q, not the api function's alias", id, key, r.URI)
			if strings.Contains(key, "/oidc/") {
				require.NotEmpty(t, r.Authorizer, "route %q has no authorizer", key)
				a := api.Authorizers[r.Authorizer]
				require.Equal(t, d.params["OidcIssuer"], a.Issuer)
				require.Equal(t, []string{d.params["OidcAudience"]}, a.Audience)
			}
		}
		st, ok := api.Stages["$default"]
		require.True(t, ok, "API %s has no $default stage", id)
		require.Equal(t, d.params["ApiThrottleRate"], strconv.FormatFloat(st["ThrottlingRateLimit"], 'f', -1, 64))
		require.Equal(t, d.params["ApiThrottleBurst"], strconv.FormatFloat(st["ThrottlingBurstLimit"], 'f', -1, 64))
	}

	// Every alarm tells the topic, which exists; or none without one.
	if d.topic {
		require.Len(t, rb.Topics, 1)
	} else {
		require.Empty(t, rb.Topics)
	}
	require.Len(t, rb.Alarms, 4)
	for name, a := range rb.Alarms {
		require.Equal(t, rb.Topics, a.Actions, "alarm %s", name)
		require.Equal(t, rb.Topics, a.OKActions, "alarm %s", name)
	}
	// Every function's deployment group deploys with a role that exists.
	require.Len(t, rb.DeploymentGroups, 3)
	for name, g := range rb.DeploymentGroups {
		require.Contains(t, rb.Roles, g.Role, "deployment group %s", name)
	}
}
