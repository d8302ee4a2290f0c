package infra

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// repoRoot is where template.yaml, the Makefile and functions/ are.
const repoRoot = ".."

// templates are the CloudFormation templates every generic check covers.
var templates = []string{
	filepath.Join(repoRoot, "template.yaml"),
	"fargate.yaml",
}

// pseudoParameters are CloudFormation's own names, which !Ref and !Sub may use.
var pseudoParameters = []string{
	"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
	"AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix",
}

// cfnTemplate is a parsed template: its sections as YAML nodes, tags kept.
type cfnTemplate struct {
	path       string
	root       *yaml.Node
	parameters map[string]*yaml.Node
	resources  map[string]*yaml.Node
	conditions map[string]*yaml.Node
	globals    *yaml.Node // SAM's Globals.Function, or nil
}

func load(t *testing.T, path string) *cfnTemplate {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(raw, &doc), path)
	require.Equal(t, yaml.DocumentNode, doc.Kind, path)
	root := doc.Content[0]
	require.Equal(t, yaml.MappingNode, root.Kind, "%s: the template is not a mapping", path)
	tpl := &cfnTemplate{
		path:       path,
		root:       root,
		parameters: entries(get(root, "Parameters")),
		resources:  entries(get(root, "Resources")),
		conditions: entries(get(root, "Conditions")),
		globals:    get(get(root, "Globals"), "Function"),
	}
	require.NotEmpty(t, tpl.resources, "%s has no resources", path)
	return tpl
}

// get returns the value of key in mapping n, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func entries(n *yaml.Node) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n == nil || n.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = n.Content[i+1]
	}
	return out
}

// scalars returns the plain strings of a scalar or a sequence of scalars.
func scalars(n *yaml.Node) []string {
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.ScalarNode:
		return []string{n.Value}
	case n.Kind == yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode {
				out = append(out, c.Value)
			}
		}
		return out
	}
	return nil
}

// intrinsic reports whether n carries a CloudFormation tag (!Ref, !Sub...),
// as opposed to YAML's own (!!str, !!int...).
func intrinsic(n *yaml.Node) bool {
	return strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!")
}

// plain reports whether n is a scalar written as it is, not an intrinsic.
func plain(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && !intrinsic(n) }

func resourceType(r *yaml.Node) string {
	if ty := get(r, "Type"); ty != nil {
		return ty.Value
	}
	return ""
}

// walk calls fn on n and every node below it, with the mapping keys that
// lead there.
func walk(n *yaml.Node, path []string, fn func(n *yaml.Node, path []string)) {
	if n == nil {
		return
	}
	fn(n, path)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], append(slices.Clip(path), n.Content[i].Value), fn)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, path, fn)
		}
	}
}

// functions returns the template's Lambda functions by logical id.
func (tpl *cfnTemplate) functions() map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for id, r := range tpl.resources {
		if ty := resourceType(r); ty == "AWS::Serverless::Function" || ty == "AWS::Lambda::Function" {
			out[id] = r
		}
	}
	return out
}

// property is a function's property, or SAM's global one when it has none.
func (tpl *cfnTemplate) property(fn *yaml.Node, key string) *yaml.Node {
	if v := get(get(fn, "Properties"), key); v != nil {
		return v
	}
	return get(tpl.globals, key)
}

// functionDir is the functions/ directory of a function's code: ApiFunction
// is functions/api.
func functionDir(logicalID string) string {
	return filepath.Join("functions", strings.ToLower(strings.TrimSuffix(logicalID, "Function")))
}

// TestFunctionsHaveCode: every function's code is a functions/<name>/main.go,
// and SAM reaches it: with BuildMethod makefile, the Makefile in CodeUri has
// a build-<LogicalId> target that builds ./functions/<name> into
// $(ARTIFACTS_DIR)/bootstrap; otherwise CodeUri is functions/<name> itself.
func TestFunctionsHaveCode(t *testing.T) {
	t.Parallel()
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))
	fns := tpl.functions()
	require.NotEmpty(t, fns)
	for id, fn := range fns {
		dir := functionDir(id)
		require.FileExists(t, filepath.Join(repoRoot, dir, "main.go"), "%s: its code should be %s/main.go", id, dir)

		codeURI := tpl.property(fn, "CodeUri")
		require.NotNil(t, codeURI, "%s has no CodeUri", id)
		require.True(t, plain(codeURI), "%s: CodeUri should be a path", id)
		codeDir := filepath.Join(filepath.Dir(tpl.path), codeURI.Value)
		require.DirExists(t, codeDir, "%s: CodeUri", id)

		method := ""
		if m := get(get(fn, "Metadata"), "BuildMethod"); m != nil {
			method = m.Value
		}
		switch method {
		case "makefile":
			recipe := makeRecipe(t, filepath.Join(codeDir, "Makefile"), "build-"+id)
			require.NotEmpty(t, recipe, "%s: the Makefile in %s needs a build-%s target (sam build runs it)", id, codeURI.Value, id)
			require.Contains(t, recipe, "./"+filepath.ToSlash(dir), "%s: build-%s should build ./%s", id, id, dir)
			require.Contains(t, recipe, "$(ARTIFACTS_DIR)/bootstrap", "%s: build-%s should write $(ARTIFACTS_DIR)/bootstrap", id, id)
			require.Contains(t, recipe, "lambda.norpc", "%s: build-%s should build with -tags lambda.norpc", id, id)
		default:
			abs, err := filepath.Abs(codeDir)
			require.NoError(t, err)
			want, err := filepath.Abs(filepath.Join(repoRoot, dir))
			require.NoError(t, err)
			require.Equal(t, want, abs, "%s: without a makefile build, CodeUri should be %s", id, dir)
		}
	}
}

// makeRecipe returns the recipe lines of target in makefile, joined, or "".
func makeRecipe(t *testing.T, makefile, target string) string {
	t.Helper()
	f, err := os.Open(makefile)
	require.NoError(t, err)
	defer f.Close()
	var recipe []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, strings.TrimSpace(line))
		case in && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#"):
			in = false
		}
	}
	require.NoError(t, sc.Err())
	return strings.Join(recipe, "\n")
}

// buildFlags are those of TestFunctionsCompile's go build: make lambda's
// tag, and -race when the tests run with it (race_test.go).
var buildFlags = []string{"-tags", "lambda.norpc"}

// TestFunctionsCompile builds every function's package as `make lambda`
// does (with the tag that drops the RPC shim), for this machine's platform
// and with the tests' own flags, so that it reuses the packages the tests
// compiled: it links, and little else. `make lambda` checks linux/arm64.
func TestFunctionsCompile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("compiles the functions; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))
	var pkgs []string
	for id := range tpl.functions() {
		pkgs = append(pkgs, "./"+filepath.ToSlash(functionDir(id)))
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		args := append([]string{"build"}, buildFlags...)
		cmd := exec.Command(goTool, append(args, "-o", os.DevNull, pkg)...)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s:\n%s", pkg, out)
	}
}

// TestFunctionsRunOnGraviton: every function runs the provided.al2023
// runtime on arm64 with the bootstrap binary, set on the function or in
// SAM's Globals.
func TestFunctionsRunOnGraviton(t *testing.T) {
	t.Parallel()
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))
	for id, fn := range tpl.functions() {
		runtime := tpl.property(fn, "Runtime")
		require.NotNil(t, runtime, "%s has no Runtime", id)
		require.Equal(t, "provided.al2023", runtime.Value, id)
		require.Equal(t, []string{"arm64"}, scalars(tpl.property(fn, "Architectures")), "%s: Architectures", id)
		handler := tpl.property(fn, "Handler")
		require.NotNil(t, handler, "%s has no Handler", id)
		require.Equal(t, "bootstrap", handler.Value, id)
	}
}

// subVariable matches ${Name} and ${Name.Attr} in a !Sub string; ${!x} is
// a literal.
var subVariable = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// TestReferencesResolve: every !Ref, !GetAtt, variable of !Sub and
// condition name (long forms included) names something the template
// declares, or a pseudo parameter.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	for _, path := range templates {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			tpl := load(t, path)
			var problems []string
			refs := 0
			for id, r := range tpl.resources {
				if c := get(r, "Condition"); c != nil {
					refs++
					problems = append(problems, tpl.checkCondition(id, c.Value)...)
				}
			}
			// Parameters and Conditions' own names hold no references to
			// check but their bodies may; Globals and Outputs too.
			for _, section := range []string{"Conditions", "Globals", "Resources", "Outputs"} {
				walk(get(tpl.root, section), []string{section}, func(n *yaml.Node, at []string) {
					for _, ref := range references(n) {
						refs++
						problems = append(problems, tpl.checkReference(strings.Join(at, "."), ref)...)
					}
				})
			}
			require.Empty(t, problems)
			require.Positive(t, refs, "no reference found: is the walk blind?")
		})
	}
}

// reference is one name an intrinsic function uses.
type reference struct {
	kind string // "Ref", "GetAtt", "Sub", "Condition"
	name string // for GetAtt and Sub's A.B, the resource
	// locals are the variables a long !Sub defines itself.
	locals map[string]bool
}

// references returns the names the intrinsic at n uses (none if n is not
// one), in short (!Ref x) and long ({Ref: x}) form.
func references(n *yaml.Node) []reference {
	var out []reference
	switch n.Tag {
	case "!Ref":
		out = append(out, reference{kind: "Ref", name: n.Value})
	case "!GetAtt":
		out = append(out, getAtt(n))
	case "!Sub":
		out = append(out, sub(n)...)
	case "!If":
		if n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
			out = append(out, reference{kind: "Condition", name: n.Content[0].Value})
		}
	case "!Condition":
		out = append(out, reference{kind: "Condition", name: n.Value})
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		v := n.Content[1]
		switch n.Content[0].Value {
		case "Ref":
			out = append(out, reference{kind: "Ref", name: v.Value})
		case "Fn::GetAtt":
			out = append(out, getAtt(v))
		case "Fn::Sub":
			out = append(out, sub(v)...)
		case "Fn::If":
			if v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
				out = append(out, reference{kind: "Condition", name: v.Content[0].Value})
			}
		}
	}
	return out
}

func getAtt(n *yaml.Node) reference {
	if n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
		return reference{kind: "GetAtt", name: n.Content[0].Value}
	}
	name, _, _ := strings.Cut(n.Value, ".")
	return reference{kind: "GetAtt", name: name}
}

func sub(n *yaml.Node) []reference {
	text, locals := n.Value, map[string]bool{}
	if n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
		text = n.Content[0].Value
		if len(n.Content) > 1 {
			for k := range entries(n.Content[1]) {
				locals[k] = true
			}
		}
	}
	var out []reference
	for _, m := range subVariable.FindAllStringSubmatch(text, -1) {
		name := m[1]
		if !strings.HasPrefix(name, "AWS::") {
			name, _, _ = strings.Cut(name, ".")
		}
		out = append(out, reference{kind: "Sub", name: name, locals: locals})
	}
	return out
}

func (tpl *cfnTemplate) checkReference(where string, ref reference) []string {
	switch ref.kind {
	case "Condition":
		return tpl.checkCondition(where, ref.name)
	case "GetAtt":
		if _, ok := tpl.resources[ref.name]; !ok {
			return []string{fmt.Sprintf("%s: !GetAtt names %q, which is no resource", where, ref.name)}
		}
		return nil
	}
	if ref.locals[ref.name] || slices.Contains(pseudoParameters, ref.name) {
		return nil
	}
	if _, ok := tpl.resources[ref.name]; ok {
		return nil
	}
	if tpl.samAlias(ref.name) {
		return nil
	}
	if _, ok := tpl.parameters[ref.name]; ok && ref.kind != "GetAtt" {
		return nil
	}
	return []string{fmt.Sprintf("%s: %s names %q, which is no parameter, resource or pseudo parameter", where, ref.kind, ref.name)}
}

func (tpl *cfnTemplate) checkCondition(where, name string) []string {
	if _, ok := tpl.conditions[name]; !ok {
		return []string{fmt.Sprintf("%s: condition %q is not declared", where, name)}
	}
	return nil
}

// TestNoWildcardGrants: no policy statement in the templates allows every
// action, or every action of a service ("s3:*"), on every resource; none
// allows NotAction or NotResource; and a resource policy (a KMS key policy)
// that names every principal carries a condition. A key policy's
// "Resource": "*" is the key itself, so its administrators' "kms:*" passes.
func TestNoWildcardGrants(t *testing.T) {
	t.Parallel()
	for _, path := range templates {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			tpl := load(t, path)
			var problems []string
			statements := 0
			for id, r := range tpl.resources {
				walk(r, []string{id}, func(n *yaml.Node, at []string) {
					if n.Kind != yaml.MappingNode || get(n, "Effect") == nil ||
						(get(n, "Action") == nil && get(n, "NotAction") == nil) {
						return
					}
					statements++
					problems = append(problems, checkStatement(strings.Join(at, "."), n, slices.Contains(at, "AssumeRolePolicyDocument"))...)
				})
			}
			require.Empty(t, problems)
			require.Positive(t, statements, "no policy statement found: is the walk blind?")
		})
	}
}

func checkStatement(where string, st *yaml.Node, trust bool) []string {
	if get(st, "Effect").Value != "Allow" {
		return nil
	}
	if sid := get(st, "Sid"); sid != nil {
		where += "[" + sid.Value + "]"
	}
	var problems []string
	if get(st, "NotAction") != nil || get(st, "NotResource") != nil {
		problems = append(problems, where+": NotAction and NotResource allow more than they name")
	}
	actions := scalars(get(st, "Action"))
	principal := get(st, "Principal")
	if trust {
		for _, a := range actions {
			if !strings.HasPrefix(a, "sts:AssumeRole") {
				problems = append(problems, fmt.Sprintf("%s: a trust policy allows %q", where, a))
			}
		}
		return problems
	}
	if principal != nil {
		// A resource policy: "*" as the resource is the resource itself.
		everyone := principal.Value == "*"
		for _, v := range entries(principal) {
			everyone = everyone || slices.Contains(scalars(v), "*")
		}
		if everyone && get(st, "Condition") == nil {
			problems = append(problems, where+": a resource policy allows every principal without a condition")
		}
		if slices.Contains(actions, "*") {
			problems = append(problems, where+": a resource policy allows every action")
		}
		return problems
	}
	resources := get(st, "Resource")
	if resources == nil {
		return append(problems, where+": an identity policy statement without Resource")
	}
	if !slices.Contains(scalars(resources), "*") {
		return problems
	}
	for _, a := range actions {
		if a == "*" || strings.HasSuffix(a, ":*") {
			problems = append(problems, fmt.Sprintf("%s: allows %q on every resource", where, a))
		}
	}
	return problems
}

// TestWildcardCheckCatches: the statement check flags what it should, so a
// template that passes TestNoWildcardGrants passes for the right reason.
func TestWildcardCheckCatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		yaml    string
		trust   bool
		problem string
	}{
		{"every action", `{Effect: Allow, Action: "*", Resource: "*"}`, false, `allows "*" on every resource`},
		{"a service's every action", `{Effect: Allow, Action: [sqs:SendMessage, "dynamodb:*"], Resource: ["*"]}`, false, `allows "dynamodb:*"`},
		{"NotAction", `{Effect: Allow, NotAction: iam:*, Resource: "arn:aws:s3:::b"}`, false, "NotAction"},
		{"everyone, no condition", `{Effect: Allow, Principal: {AWS: "*"}, Action: kms:Decrypt, Resource: "*"}`, false, "every principal"},
		{"trust policy", `{Effect: Allow, Principal: {Service: x}, Action: "iam:PassRole"}`, true, "trust policy allows"},
		{"no resource", `{Effect: Allow, Action: sqs:SendMessage}`, false, "without Resource"},
		{"scoped wildcard", `{Effect: Allow, Action: "sqs:*", Resource: "arn:aws:sqs:eu-west-1:1:heddle-*"}`, false, ""},
		{"specific action on every resource", `{Effect: Allow, Action: ec2:DescribeInstances, Resource: "*"}`, false, ""},
		{"key administrators", `{Effect: Allow, Principal: {AWS: "arn:aws:iam::1:root"}, Action: "kms:*", Resource: "*"}`, false, ""},
		{"deny", `{Effect: Deny, Action: "*", Resource: "*"}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tt.yaml), &doc))
			problems := checkStatement("st", doc.Content[0], tt.trust)
			if tt.problem == "" {
				require.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1)
			require.Contains(t, problems[0], tt.problem)
		})
	}
}

// TestReferenceCheckCatches: the reference check finds names nobody
// declared in every form.
func TestReferenceCheckCatches(t *testing.T) {
	t.Parallel()
	tpl := &cfnTemplate{
		parameters: map[string]*yaml.Node{"Stage": nil},
		resources:  map[string]*yaml.Node{"Table": nil},
		conditions: map[string]*yaml.Node{"HasKey": nil},
	}
	tests := []struct {
		yaml string
		bad  []string
	}{
		{`!Ref Stage`, nil},
		{`!Ref AWS::Region`, nil},
		{`!Ref Stgae`, []string{"Stgae"}},
		{`!GetAtt Table.Arn`, nil},
		{`!GetAtt [Tabel, Arn]`, []string{"Tabel"}},
		{`!GetAtt Stage.Arn`, []string{"Stage"}},
		{`!Sub "arn:${AWS::Partition}:x:${Table.Arn}/${Stage}-${!Literal}"`, nil},
		{`!Sub "${Missing}-${Other.Arn}"`, []string{"Missing", "Other"}},
		{`!Sub ["${Local}-${Stage}", {Local: x}]`, nil},
		{`{"Fn::Sub": "${Nope}"}`, []string{"Nope"}},
		{`{Ref: Nowhere}`, []string{"Nowhere"}},
		{`!If [HasKey, a, b]`, nil},
		{`!If [HasKye, a, b]`, []string{"HasKye"}},
	}
	for _, tt := range tests {
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte(tt.yaml), &doc), tt.yaml)
		var problems []string
		for _, ref := range references(doc.Content[0]) {
			problems = append(problems, tpl.checkReference("x", ref)...)
		}
		require.Len(t, problems, len(tt.bad), "%s: %v", tt.yaml, problems)
		for i, name := range tt.bad {
			require.Contains(t, problems[i], fmt.Sprintf("%q", name), tt.yaml)
		}
	}
}

// capturedCreateTable is the CreateTable request dynamostore.CreateTable
// sends.
type capturedCreateTable struct {
	AttributeDefinitions   []map[string]string `json:"AttributeDefinitions" yaml:"AttributeDefinitions"`
	KeySchema              []map[string]string `json:"KeySchema" yaml:"KeySchema"`
	BillingMode            string              `json:"BillingMode" yaml:"BillingMode"`
	GlobalSecondaryIndexes []struct {
		IndexName  string              `json:"IndexName" yaml:"IndexName"`
		KeySchema  []map[string]string `json:"KeySchema" yaml:"KeySchema"`
		Projection map[string]string   `json:"Projection" yaml:"Projection"`
	} `json:"GlobalSecondaryIndexes" yaml:"GlobalSecondaryIndexes"`
}

// captureDoer keeps the request body and fails the call.
type captureDoer struct{ body []byte }

var errCaptured = errors.New("captured")

func (c *captureDoer) Do(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	c.body = b
	return nil, errCaptured
}

// dynamostoreTable returns the table layout dynamostore.CreateTable asks
// DynamoDB for, captured before it leaves the process.
func dynamostoreTable(t *testing.T) capturedCreateTable {
	t.Helper()
	doer := &captureDoer{}
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://dynamodb.invalid"),
		Credentials:  credentials.NewStaticCredentialsProvider("x", "x", ""),
		HTTPClient:   doer,
		Retryer:      aws.NopRetryer{},
	})
	err := dynamostore.CreateTable(context.Background(), client, "heddle-test")
	require.ErrorIs(t, err, errCaptured)
	var want capturedCreateTable
	require.NoError(t, json.Unmarshal(doer.body, &want))
	require.NotEmpty(t, want.KeySchema)
	return want
}

// TestTableMatchesDynamostore: the template's table has the keys, the
// attributes and the index internal/store/dynamostore creates and queries,
// with encryption and point-in-time recovery; the LocalStack init hook
// creates the same table.
func TestTableMatchesDynamostore(t *testing.T) {
	t.Parallel()
	want := dynamostoreTable(t)
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))

	var tables []*yaml.Node
	for _, r := range tpl.resources {
		if resourceType(r) == "AWS::DynamoDB::Table" {
			tables = append(tables, get(r, "Properties"))
		}
	}
	require.Len(t, tables, 1, "one table: heddle keeps everything in one")
	props := tables[0]
	decode := func(key string, v any) {
		t.Helper()
		n := get(props, key)
		require.NotNil(t, n, "the table has no %s", key)
		require.NoError(t, n.Decode(v), key)
	}
	var got capturedCreateTable
	decode("AttributeDefinitions", &got.AttributeDefinitions)
	decode("KeySchema", &got.KeySchema)
	decode("BillingMode", &got.BillingMode)
	decode("GlobalSecondaryIndexes", &got.GlobalSecondaryIndexes)
	require.ElementsMatch(t, want.AttributeDefinitions, got.AttributeDefinitions)
	require.Equal(t, want.KeySchema, got.KeySchema)
	require.Equal(t, want.BillingMode, got.BillingMode)
	require.Equal(t, want.GlobalSecondaryIndexes, got.GlobalSecondaryIndexes)

	var pitr struct {
		PointInTimeRecoveryEnabled bool `yaml:"PointInTimeRecoveryEnabled"`
	}
	decode("PointInTimeRecoverySpecification", &pitr)
	require.True(t, pitr.PointInTimeRecoveryEnabled, "point-in-time recovery")
	sse := get(props, "SSESpecification")
	require.NotNil(t, sse)
	require.Equal(t, "true", get(sse, "SSEEnabled").Value)
	require.Equal(t, "KMS", get(sse, "SSEType").Value)
	require.NotNil(t, get(sse, "KMSMasterKeyId"), "encrypted with heddle's own key")

	var ttl struct {
		AttributeName string `yaml:"AttributeName"`
		Enabled       bool   `yaml:"Enabled"`
	}
	decode("TimeToLiveSpecification", &ttl)
	require.True(t, ttl.Enabled, "items expire")
	require.Equal(t, dynamostore.TTLAttribute, ttl.AttributeName, "the time-to-live attribute is dynamostore's")

	hook, err := os.ReadFile(filepath.Join(repoRoot, "localstack", "init", "ready.d", "10-heddle-table.sh"))
	require.NoError(t, err)
	require.Contains(t, string(hook), "Enabled=true,AttributeName="+dynamostore.TTLAttribute)
	for _, a := range want.AttributeDefinitions {
		require.Contains(t, string(hook), fmt.Sprintf("AttributeName=%s,AttributeType=%s", a["AttributeName"], a["AttributeType"]))
	}
	for _, k := range want.KeySchema {
		require.Contains(t, string(hook), fmt.Sprintf("AttributeName=%s,KeyType=%s", k["AttributeName"], k["KeyType"]))
	}
	for _, ix := range want.GlobalSecondaryIndexes {
		require.Contains(t, string(hook), "IndexName="+ix.IndexName)
		for _, k := range ix.KeySchema {
			require.Contains(t, string(hook), fmt.Sprintf("{AttributeName=%s,KeyType=%s}", k["AttributeName"], k["KeyType"]))
		}
		require.Contains(t, string(hook), "ProjectionType="+ix.Projection["ProjectionType"])
	}
}

// TestJanitorSchedule: an EventBridge Scheduler schedule invokes the
// janitor function every minute, through a role that may invoke only it.
func TestJanitorSchedule(t *testing.T) {
	t.Parallel()
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))
	var found bool
	for id, r := range tpl.resources {
		if resourceType(r) != "AWS::Scheduler::Schedule" {
			continue
		}
		props := get(r, "Properties")
		target := get(props, "Target")
		if ref := references(get(target, "Arn")); len(ref) == 1 && (ref[0].name == "JanitorFunction" || ref[0].name == "JanitorFunctionAliaslive") {
			found = true
			require.Equal(t, "rate(1 minute)", get(props, "ScheduleExpression").Value, id)
			input := get(target, "Input")
			require.NotNil(t, input, "%s: the janitor gets an EventBridge-shaped event", id)
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(input.Value), &ev), "%s: Input is JSON", id)
			require.Contains(t, ev, "time")
			role := references(get(target, "RoleArn"))
			require.Len(t, role, 1, id)
			require.Equal(t, "AWS::IAM::Role", resourceType(tpl.resources[role[0].name]))
		}
	}
	require.True(t, found, "no schedule targets the janitor")
}

// samAlias reports whether name is the alias SAM makes for a function with
// AutoPublishAlias ("<function>Alias<alias>"), which templates may !Ref.
func (tpl *cfnTemplate) samAlias(name string) bool {
	for id, r := range tpl.resources {
		if resourceType(r) != "AWS::Serverless::Function" {
			continue
		}
		alias := get(get(r, "Properties"), "AutoPublishAlias")
		if alias == nil {
			alias = get(tpl.globals, "AutoPublishAlias")
		}
		if alias != nil && name == id+"Alias"+alias.Value {
			return true
		}
	}
	return false
}

// TestDeploysShiftGradually: every function publishes versions behind the
// alias "live", which a deploy moves by the DeploymentType parameter (a
// canary by default) and rolls back on alarms the template declares; the
// janitor's schedule invokes the alias.
func TestDeploysShiftGradually(t *testing.T) {
	t.Parallel()
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))
	require.Equal(t, "live", get(tpl.globals, "AutoPublishAlias").Value)
	pref := get(tpl.globals, "DeploymentPreference")
	require.NotNil(t, pref)
	typ := references(get(pref, "Type"))
	require.Len(t, typ, 1)
	param := tpl.parameters[typ[0].name]
	require.NotNil(t, param, "the deployment type is a parameter")
	require.True(t, strings.HasPrefix(get(param, "Default").Value, "Canary"), "a canary by default")
	alarms := get(pref, "Alarms")
	require.NotNil(t, alarms)
	require.GreaterOrEqual(t, len(alarms.Content), 2)
	for _, a := range alarms.Content {
		refs := references(a)
		require.Len(t, refs, 1)
		require.Equal(t, "AWS::CloudWatch::Alarm", resourceType(tpl.resources[refs[0].name]), refs[0].name)
	}
	for id, r := range tpl.resources {
		if resourceType(r) == "AWS::Serverless::Function" {
			require.Nil(t, get(get(r, "Properties"), "AutoPublishAlias"), "%s follows the global alias", id)
		}
	}
	schedule := get(get(tpl.resources["JanitorSchedule"], "Properties"), "Target")
	require.Equal(t, "JanitorFunctionAliaslive", references(get(schedule, "Arn"))[0].name, "the schedule invokes the janitor's alias")
	// The tenants' mappings, which onboarding makes to HEDDLE_WORKER_FUNCTION,
	// invoke the worker's alias: a rollback takes the worker back too.
	api := get(tpl.resources["ApiFunction"], "Properties")
	worker := get(get(get(api, "Environment"), "Variables"), "HEDDLE_WORKER_FUNCTION")
	require.Equal(t, []reference{{kind: "Ref", name: "WorkerFunctionAliaslive"}}, references(worker), "the mappings invoke the worker's alias")
}

// TestNoLoopbackWebhooksInAWS: HEDDLE_WEBHOOKS_ALLOW_LOOPBACK lets webhooks
// reach this machine's loopback receivers under `make local-aws`; in AWS a
// loopback address is the Lambda's own host, so no stack may set it.
func TestNoLoopbackWebhooksInAWS(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"template.yaml", "infra/fargate.yaml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, name))
		require.NoError(t, err)
		require.NotContains(t, string(b), "HEDDLE_WEBHOOKS_ALLOW_LOOPBACK", name)
	}
}
