package infra

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/motoserver"
)

// policyDocument is an IAM policy as IAM returns it.
type policyDocument struct {
	Statement oneOrMany[statement]
}

type statement struct {
	Sid       string
	Effect    string
	Action    oneOrMany[string]
	Resource  oneOrMany[string]
	Condition map[string]map[string]oneOrMany[string]
}

// oneOrMany reads IAM's "a value or a list of them".
type oneOrMany[T any] []T

func (o *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	var one T
	if err := json.Unmarshal(b, &one); err == nil {
		*o = []T{one}
		return nil
	}
	var many []T
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*o = many
	return nil
}

// globMatch is IAM's matching of actions and ARNs: * any run, ? one
// character; actions case-insensitively.
func globMatch(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	// path.Match treats / specially; ARNs have slashes, so match runes.
	return globRunes([]rune(pattern), []rune(s))
}

func globRunes(p, s []rune) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if globRunes(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// conditionHolds evaluates the condition operators heddle's policies use.
// A key the request does not carry fails the condition, as in IAM.
func conditionHolds(cond map[string]map[string]oneOrMany[string], ctx map[string]string) (bool, error) {
	for op, keys := range cond {
		for key, values := range keys {
			got, ok := ctx[key]
			if !ok {
				return false, nil
			}
			var match bool
			switch op {
			case "StringEquals":
				match = slices.Contains(values, got)
			case "StringLike":
				match = slices.ContainsFunc(values, func(v string) bool { return globMatch(v, got, false) })
			default:
				return false, fmt.Errorf("condition operator %s is not understood by this test", op)
			}
			if !match {
				return false, nil
			}
		}
	}
	return true, nil
}

// allowed says whether the policies allow call (no statement denies, one allows).
func allowed(docs map[string]policyDocument, c Call) (bool, error) {
	allow := false
	for _, doc := range docs {
		for _, st := range doc.Statement {
			if !slices.ContainsFunc(st.Action, func(a string) bool { return globMatch(a, c.Action, true) }) ||
				!slices.ContainsFunc(st.Resource, func(r string) bool { return globMatch(r, c.Resource, false) }) {
				continue
			}
			ok, err := conditionHolds(st.Condition, c.Context)
			if err != nil {
				return false, err
			}
			if !ok {
				continue
			}
			if st.Effect == "Deny" {
				return false, nil
			}
			allow = allow || st.Effect == "Allow"
		}
	}
	return allow, nil
}

// SAM attaches these to every function's role: writing its logs and, with
// Tracing: Active, its X-Ray segments. They are AWS's, not heddle's.
var samManaged = []string{
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
}

// managedPolicies are the ManagedPolicyArns the translated template gives
// the role moto named roleName.
func (d *deployed) managedPolicies(t *testing.T, roleName string) []string {
	t.Helper()
	for _, s := range d.report.Stacks {
		for _, r := range s.Resources {
			if r.Type != "AWS::IAM::Role" || r.Physical != roleName {
				continue
			}
			res := d.translated["Resources"].(map[string]any)[r.Logical].(map[string]any)
			var out []string
			for _, a := range res["Properties"].(map[string]any)["ManagedPolicyArns"].([]any) {
				s, ok := a.(string)
				require.True(t, ok, "%s: a managed policy that is not a plain ARN: %v", r.Logical, a)
				out = append(out, s)
			}
			sort.Strings(out)
			return out
		}
	}
	t.Fatalf("no stack made the role %s", roleName)
	return nil
}

func (d *deployed) rolesAllowCalls(t *testing.T) {
	lc := lambda.NewFromConfig(d.cfg)
	stage := d.params["Stage"]
	vars := map[string]string{
		"${Region}": motoserver.Region, "${Account}": motoserver.Account, "${Stage}": stage,
		"${Table}": d.report.Outputs["TableName"], "${Key}": d.report.Outputs["SecretsKeyArn"],
		"${WorkerFunction}": d.report.Outputs["WorkerFunctionArn"], "${WorkerAlias}": d.report.Outputs["WorkerAliasArn"],
	}
	require.ElementsMatch(t, []string{"api", "worker", "janitor"}, keys(FunctionCalls))
	for short, calls := range FunctionCalls {
		name := "heddle-" + stage + "-" + short
		c, err := lc.GetFunctionConfiguration(t.Context(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
		require.NoError(t, err)
		role, ok := d.report.ReadBack.Roles[aws.ToString(c.Role)]
		require.True(t, ok, "%s's role %s", name, aws.ToString(c.Role))
		require.NotEmpty(t, role.Policies, "%s's role has no policy", name)
		// moto's CloudFormation attaches no managed policy, so the
		// translated template says which the role gets.
		require.Equal(t, samManaged, d.managedPolicies(t, role.Name), "%s's role: managed policies beyond SAM's own", name)

		// Every call heddle makes is allowed.
		used := map[string]bool{}
		for _, call := range calls {
			call.Resource = fill(vars, call.Resource)
			ctx := map[string]string{}
			for k, v := range call.Context {
				ctx[k] = fill(vars, v)
			}
			call.Context = ctx
			ok, err := allowed(role.Policies, call)
			require.NoError(t, err)
			require.True(t, ok, "%s may not %s on %s with %v (by %s)", name, call.Action, call.Resource, call.Context, call.By)
			used[strings.ToLower(call.Action)] = true
		}

		// And nothing more than they need.
		for pname, doc := range role.Policies {
			for _, st := range doc.Statement {
				where := fmt.Sprintf("%s policy %s statement %q", name, pname, st.Sid)
				require.Equal(t, "Allow", st.Effect, where)
				for _, a := range st.Action {
					require.NotContains(t, a, "*", "%s grants a wildcard action %q", where, a)
					require.True(t, used[strings.ToLower(a)], "%s grants %s, which %s never calls (FunctionCalls)", where, a, short)
				}
				for _, r := range st.Resource {
					checkScoped(t, where, st, r, stage, vars)
				}
			}
		}
	}
}

// checkScoped says whether a granted resource is named, or scoped by the
// stage's queue prefix, a condition, or is one IAM cannot scope.
func checkScoped(t *testing.T, where string, st statement, r, stage string, vars map[string]string) {
	t.Helper()
	if !strings.Contains(r, "*") {
		named := []string{
			fill(vars, tableARN), fill(vars, indexARN), vars["${Key}"],
		}
		require.Contains(t, named, r, "%s names %s, which is none of heddle's", where, r)
		return
	}
	if r == "*" {
		for _, a := range st.Action {
			require.True(t, NoResourceScope[a], "%s grants %s on every resource", where, a)
		}
		if slices.Contains(st.Action, "lambda:CreateEventSourceMapping") {
			require.Contains(t, st.Condition["StringEquals"], "lambda:FunctionArn", "%s: CreateEventSourceMapping must be bound to the worker", where)
		}
		return
	}
	prefix := fmt.Sprintf("arn:aws:sqs:%s:%s:heddle-%s-*", motoserver.Region, motoserver.Account, stage)
	if strings.HasPrefix(r, "arn:aws:sqs:") {
		require.Equal(t, prefix, r, "%s: queues are scoped by the stage's prefix", where)
		return
	}
	if len(st.Condition) > 0 {
		return
	}
	require.Equal(t, []string{"ec2:RunInstances"}, []string(st.Action), "%s grants %s with no condition", where, r)
	kind := r[strings.LastIndex(r, ":")+1:]
	require.Contains(t, LaunchCompanions, kind, "%s grants RunInstances on %s with no condition", where, r)
}

func fill(vars map[string]string, s string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The evaluator says no when it should: a wrong resource, a missing or
// wrong condition key, a deny, and an action outside every statement.
func TestPolicyEvaluatorRefuses(t *testing.T) {
	t.Parallel()
	var doc policyDocument
	require.NoError(t, json.Unmarshal([]byte(`{"Statement":[
		{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:r:1:heddle-ci-*"},
		{"Effect":"Allow","Action":["ec2:TerminateInstances"],"Resource":["arn:aws:ec2:*:1:instance/*"],
		 "Condition":{"StringLike":{"ec2:ResourceTag/heddle:cluster":"*"}}},
		{"Effect":"Allow","Action":"lambda:CreateEventSourceMapping","Resource":"*",
		 "Condition":{"StringEquals":{"lambda:FunctionArn":"arn:w:live"}}},
		{"Effect":"Deny","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:r:1:heddle-ci-evil.fifo"}]}`), &doc))
	docs := map[string]policyDocument{"p": doc}
	for _, c := range []struct {
		call Call
		want bool
	}{
		{Call{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:r:1:heddle-ci-acme.fifo"}, true},
		{Call{Action: "SQS:sendmessage", Resource: "arn:aws:sqs:r:1:heddle-ci-acme.fifo"}, true},
		{Call{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:r:1:heddle-prod-acme.fifo"}, false},
		{Call{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:r:1:heddle-ci-evil.fifo"}, false},
		{Call{Action: "sqs:DeleteQueue", Resource: "arn:aws:sqs:r:1:heddle-ci-acme.fifo"}, false},
		{Call{Action: "ec2:TerminateInstances", Resource: "arn:aws:ec2:eu-west-1:1:instance/i-1"}, false},
		{Call{Action: "ec2:TerminateInstances", Resource: "arn:aws:ec2:eu-west-1:1:instance/i-1",
			Context: map[string]string{"ec2:ResourceTag/heddle:cluster": "c-1"}}, true},
		{Call{Action: "lambda:CreateEventSourceMapping", Resource: "*",
			Context: map[string]string{"lambda:FunctionArn": "arn:w:live"}}, true},
		{Call{Action: "lambda:CreateEventSourceMapping", Resource: "*",
			Context: map[string]string{"lambda:FunctionArn": "arn:other"}}, false},
	} {
		got, err := allowed(docs, c.call)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "%+v", c.call)
	}
}
