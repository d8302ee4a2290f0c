package infra

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sdkService maps the AWS SDK packages heddle calls to IAM's service prefix.
var sdkService = map[string]string{
	"github.com/aws/aws-sdk-go-v2/service/dynamodb": "dynamodb",
	"github.com/aws/aws-sdk-go-v2/service/sqs":      "sqs",
	"github.com/aws/aws-sdk-go-v2/service/kms":      "kms",
	"github.com/aws/aws-sdk-go-v2/service/lambda":   "lambda",
	"github.com/aws/aws-sdk-go-v2/service/ec2":      "ec2",
}

// authorizedAs is the action IAM checks for an operation whose name is not
// only its own action: batches by their single form, a transaction by the
// item actions inside it, a create by the tags it sets too.
var authorizedAs = map[string][]string{
	"sqs:SendMessageBatch":             {"sqs:SendMessage"},
	"sqs:ChangeMessageVisibilityBatch": {"sqs:ChangeMessageVisibility"},
	"sqs:DeleteMessageBatch":           {"sqs:DeleteMessage"},
	"dynamodb:TransactWriteItems":      {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"},
	"dynamodb:TransactGetItems":        {"dynamodb:GetItem"},
	// Tagging on create (TagSpecifications) is authorized as CreateTags
	// with ec2:CreateAction.
	"ec2:RunInstances":  {"ec2:RunInstances", "ec2:CreateTags"},
	"ec2:ImportKeyPair": {"ec2:ImportKeyPair", "ec2:CreateTags"},
}

// notInAWS are operations the functions' code links but never makes in a
// deployment: dynamostore.CreateTable makes the table for tests, make
// local-aws and the LocalStack hook; in AWS template.yaml makes it.
var notInAWS = map[string]string{
	"dynamodb:CreateTable":      "dynamostore.CreateTable: tests and local tooling",
	"dynamodb:DescribeTable":    "dynamostore.CreateTable: tests and local tooling",
	"dynamodb:UpdateTimeToLive": "dynamostore.CreateTable: tests and local tooling",
}

// linkedOperations lists the AWS operations the code of a function's
// packages builds a request for (a composite literal of an SDK *Input).
func linkedOperations(t *testing.T, fn string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}|{{join .GoFiles \",\"}}{{end}}",
		"./functions/"+fn)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list ./functions/%s: %v: %s", fn, err, exit.Stderr)
	}
	require.NoError(t, err)
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	ops := map[string]bool{}
	fset := token.NewFileSet()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dir, files, _ := strings.Cut(line, "|")
		if !strings.HasPrefix(dir, root+string(filepath.Separator)) || files == "" {
			continue // another module: the SDK itself
		}
		for _, name := range strings.Split(files, ",") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			require.NoError(t, err)
			aliases := map[string]string{}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				svc, ok := sdkService[path]
				if !ok {
					continue
				}
				alias := filepath.Base(path)
				if imp.Name != nil {
					alias = imp.Name.Name
				}
				aliases[alias] = svc
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				sel, ok := lit.Type.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if svc, known := aliases[x.Name]; ok && known && strings.HasSuffix(sel.Sel.Name, "Input") {
					ops[svc+":"+strings.TrimSuffix(sel.Sel.Name, "Input")] = true
				}
				return true
			})
		}
	}
	return ops
}

// FunctionCalls holds against the code: every AWS operation a function's
// packages can make is authorized by a call the table lists for some
// function (or is one the functions never make in AWS), and every call the
// table lists for a function is one its code can make (or the event source
// mapping's polling, which uses the worker's role). A call added to the
// code without the table (and so without a grant) fails here.
func TestFunctionCallsCoverTheCode(t *testing.T) {
	t.Parallel()
	listed := map[string]bool{}
	for _, calls := range FunctionCalls {
		for _, c := range calls {
			listed[c.Action] = true
		}
	}
	for fn, calls := range FunctionCalls {
		ops := linkedOperations(t, fn)
		require.NotEmpty(t, ops, "found no AWS call in %s's code", fn)
		can := map[string]bool{}
		for op := range ops {
			actions, ok := authorizedAs[op]
			if !ok {
				actions = []string{op}
			}
			for _, a := range actions {
				can[a] = true
			}
			if _, why := notInAWS[op]; why {
				continue
			}
			covered := false
			for _, a := range actions {
				covered = covered || listed[a]
			}
			require.True(t, covered, "%s's code can make %s, which infra.FunctionCalls lists for no function", fn, op)
		}
		for _, c := range calls {
			require.True(t, can[c.Action] || strings.Contains(c.By, "event source mapping"),
				"infra.FunctionCalls lists %s for %s (by %s), which its code cannot make", c.Action, fn, c.By)
		}
	}
}
