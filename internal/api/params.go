package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

// The one place where a request's query and the top-level fields of its body
// are held to what openapi.yaml says of its route. The document is the
// contract clients are written against, so it is also the rule: a query
// parameter the route does not declare is refused (a typo, or a parameter the
// caller expects to mean something, like dryRun on a route that has none,
// must not silently do something else), and so is a declared one whose value
// breaks its schema (enum, minimum and maximum, maxLength, format, a boolean
// that is not true or false) or one given twice. wrap applies the rules of
// its route before any handler runs, so a new route cannot forget them; a
// route the document does not describe stops New (and every test with it).
//
// Problems name the parameter as query.<name>, as the Idempotency-Key
// header's do header.Idempotency-Key; a body's missing required field is
// named by its path in the body, as every other problem of a body is.

// paramRule is what the document says of one query parameter.
type paramRule struct {
	name      string
	required  bool
	typ       string // "string", "integer" or "boolean"
	enum      []string
	min, max  *float64
	maxLength *int
	format    string // "date-time" is checked
}

// operationRules are one route's rules.
type operationRules struct {
	method, path string
	query        map[string]paramRule
	names        []string // the query parameters, sorted, for messages
	bodyRequired []string // the body's required top-level fields
}

// The subset of OpenAPI 3.0 that the rules are read from.
type (
	oaDocument struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]oaParameter `json:"parameters"`
			Schemas    map[string]*oaSchema   `json:"schemas"`
		} `json:"components"`
	}
	oaParameter struct {
		Ref      string    `json:"$ref"`
		Name     string    `json:"name"`
		In       string    `json:"in"`
		Required bool      `json:"required"`
		Schema   *oaSchema `json:"schema"`
	}
	oaSchema struct {
		Ref       string      `json:"$ref"`
		Type      string      `json:"type"`
		Enum      []any       `json:"enum"`
		Minimum   *float64    `json:"minimum"`
		Maximum   *float64    `json:"maximum"`
		MaxLength *int        `json:"maxLength"`
		Format    string      `json:"format"`
		Required  []string    `json:"required"`
		AllOf     []*oaSchema `json:"allOf"`
	}
	oaOperation struct {
		Parameters  []oaParameter `json:"parameters"`
		RequestBody *struct {
			Content map[string]struct {
				Schema *oaSchema `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	}
)

// documentedRules reads every operation's rules from the embedded document,
// once, keyed by "METHOD /path".
var documentedRules = sync.OnceValues(func() (map[string]*operationRules, error) {
	raw, err := OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	var doc oaDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	out := map[string]*operationRules{}
	for path, item := range doc.Paths {
		var shared []oaParameter
		if p, ok := item["parameters"]; ok {
			if err := json.Unmarshal(p, &shared); err != nil {
				return nil, fmt.Errorf("openapi.yaml: %s parameters: %w", path, err)
			}
		}
		for key, body := range item {
			method := strings.ToUpper(key)
			switch method {
			case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
			default:
				continue
			}
			var op oaOperation
			if err := json.Unmarshal(body, &op); err != nil {
				return nil, fmt.Errorf("openapi.yaml: %s %s: %w", method, path, err)
			}
			rules, err := doc.rulesOf(method, path, append(slices.Clone(shared), op.Parameters...), op)
			if err != nil {
				return nil, fmt.Errorf("openapi.yaml: %s %s: %w", method, path, err)
			}
			out[method+" "+path] = rules
		}
	}
	return out, nil
})

// rulesOf builds one operation's rules; an operation's parameter overrides
// the path's of the same name, as OpenAPI says.
func (doc *oaDocument) rulesOf(method, path string, params []oaParameter, op oaOperation) (*operationRules, error) {
	rules := &operationRules{method: method, path: path, query: map[string]paramRule{}}
	for _, p := range params {
		if p.Ref != "" {
			name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
			resolved, found := doc.Components.Parameters[name]
			if !ok || !found {
				return nil, fmt.Errorf("parameter %s is not in the document", p.Ref)
			}
			p = resolved
		}
		if p.In != "query" {
			continue
		}
		s, err := doc.resolve(p.Schema)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		rule := paramRule{name: p.Name, required: p.Required, typ: s.Type, min: s.Minimum, max: s.Maximum,
			maxLength: s.MaxLength, format: s.Format}
		switch rule.typ {
		case "string", "integer", "boolean":
		default:
			return nil, fmt.Errorf("parameter %s: type %q is not one the API checks; give it string, integer or boolean", p.Name, rule.typ)
		}
		for _, v := range s.Enum {
			rule.enum = append(rule.enum, fmt.Sprint(v))
		}
		rules.query[p.Name] = rule
	}
	for name := range rules.query {
		rules.names = append(rules.names, name)
	}
	slices.Sort(rules.names)
	if op.RequestBody != nil {
		if c, ok := op.RequestBody.Content["application/json"]; ok {
			req, err := doc.requiredOf(c.Schema)
			if err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
			rules.bodyRequired = req
		}
	}
	return rules, nil
}

// resolve follows a schema's $ref into components/schemas.
func (doc *oaDocument) resolve(s *oaSchema) (*oaSchema, error) {
	for depth := 0; s != nil && s.Ref != ""; depth++ {
		name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
		next, found := doc.Components.Schemas[name]
		if !ok || !found || depth > 10 {
			return nil, fmt.Errorf("schema %s is not in the document", s.Ref)
		}
		s = next
	}
	if s == nil {
		return &oaSchema{}, nil
	}
	return s, nil
}

// requiredOf lists the required top-level fields of a body schema,
// through $ref and allOf (whose parts all apply).
func (doc *oaDocument) requiredOf(s *oaSchema) ([]string, error) {
	s, err := doc.resolve(s)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(s.Required)
	for _, part := range s.AllOf {
		req, err := doc.requiredOf(part)
		if err != nil {
			return nil, err
		}
		out = append(out, req...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// rulesFor returns a route's rules; a route the document does not describe
// is a bug of this package, found by the first New of any test.
func rulesFor(rt route) *operationRules {
	all, err := documentedRules()
	if err != nil {
		panic(err)
	}
	rules, ok := all[rt.Method+" "+rt.Path]
	if !ok {
		panic(fmt.Sprintf("api: route %s %s is not in openapi.yaml; document it (its parameters are the only ones it accepts)", rt.Method, rt.Path))
	}
	return rules
}

// checkRawQuery holds a request's query, as sent, to the route's
// parameters. A query that does not parse is refused as a whole: url's
// parser drops the pairs it cannot read (a bad escape, a ';'), and what it
// dropped could be the very parameter the caller meant.
func (o *operationRules) checkRawQuery(raw string) error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return badParam("query", fmt.Sprintf("cannot be read (%v); separate parameters with & and write a literal %% as %%25", err))
	}
	return o.checkQuery(q)
}

// checkQuery holds q to the route's query parameters: every problem found,
// each on query.<name>, or nil.
func (o *operationRules) checkQuery(q url.Values) error {
	var problems []domain.Problem
	add := func(name, code, format string, args ...any) {
		problems = append(problems, domain.Problem{Field: "query." + name, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	given := make([]string, 0, len(q))
	for name := range q {
		given = append(given, name)
	}
	slices.Sort(given)
	for _, name := range given {
		values := q[name]
		rule, ok := o.query[name]
		switch {
		case !ok:
			add(name, domain.CodeUnknownField, "is not a parameter of %s %s; %s", o.method, o.path, o.takes())
		case len(values) > 1:
			add(name, domain.CodeDuplicate, "is given %d times; give it once", len(values))
		default:
			if code, msg := rule.check(values[0]); msg != "" {
				add(name, code, "%s", msg)
			}
		}
	}
	for _, name := range o.names {
		if rule := o.query[name]; rule.required && q.Get(name) == "" {
			add(name, domain.CodeRequired, "is required")
		}
	}
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Field + ": " + p.Message
	}
	return &apiError{status: http.StatusBadRequest, code: CodeInvalidParameter, message: strings.Join(msgs, "; "), details: problems}
}

// clusterNotFoundFirst answers a refused query on a route of a cluster the
// caller may not see with 404, as the cluster routes' handlers answer their
// own refusals (notFoundFirst). The refusal depends on the query alone, so
// it would tell nothing of the cluster; answering alike keeps the rule of
// those routes one rule. Other routes answer the 400 whatever their ids.
func (s *Server) clusterNotFoundFirst(r *http.Request, rt route, p access.Principal, bad error) error {
	if s.clusters == nil || !strings.Contains(rt.Path, "{cluster}") {
		return bad
	}
	id, err := pathID(r, "cluster")
	if err != nil {
		return err
	}
	return notFoundFirst(r, s.clusters, p, id, bad)
}

// takes says which query parameters the route has.
func (o *operationRules) takes() string {
	if len(o.names) == 0 {
		return "it takes no query parameters"
	}
	return "it takes " + strings.Join(o.names, ", ")
}

// check returns what is wrong with v and its problem code, or "". An
// empty value means the parameter's default, as the handlers read it, but
// for a boolean: a bare ?dryRun reads as "yes" to a person and as "no" to
// strconv, so it is refused rather than guessed.
func (r paramRule) check(v string) (code, msg string) {
	if v == "" {
		if r.typ == "boolean" {
			return domain.CodeInvalid, "is empty; give true or false"
		}
		return "", ""
	}
	switch r.typ {
	case "boolean":
		if _, err := strconv.ParseBool(v); err != nil {
			return domain.CodeInvalid, fmt.Sprintf("%q is not true or false", truncate(v))
		}
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && !isRangeError(err) {
			return domain.CodeInvalid, fmt.Sprintf("%q is not a whole number%s", truncate(v), r.rangeText())
		}
		if err != nil || (r.min != nil && float64(n) < *r.min) || (r.max != nil && float64(n) > *r.max) {
			return domain.CodeOutOfRange, fmt.Sprintf("%q is out of range; use a whole number%s", truncate(v), r.rangeText())
		}
	case "string":
		if r.maxLength != nil && len(v) > *r.maxLength {
			return domain.CodeOutOfRange, fmt.Sprintf("is longer than %d characters", *r.maxLength)
		}
		if len(r.enum) > 0 && !slices.Contains(r.enum, v) {
			return domain.CodeInvalid, fmt.Sprintf("%q is not one of %s", truncate(v), strings.Join(r.enum, ", "))
		}
		if r.format == "date-time" {
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				return domain.CodeInvalid, fmt.Sprintf("%q is not a time; write it as RFC 3339, e.g. 2026-11-24T00:00:00Z", truncate(v))
			}
		}
	}
	return "", ""
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange //nolint:errorlint // strconv returns the sentinel as is
}

// rangeText is " from 1 to 500", " of at least 1" or "".
func (r paramRule) rangeText() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch {
	case r.min != nil && r.max != nil:
		return " from " + f(*r.min) + " to " + f(*r.max)
	case r.min != nil:
		return " of at least " + f(*r.min)
	case r.max != nil:
		return " of at most " + f(*r.max)
	}
	return ""
}

// truncate keeps a quoted value in a message short.
func truncate(v string) string {
	if len(v) > 64 {
		return v[:64] + "..."
	}
	return v
}

// bodyRulesKey carries the route's required body fields from wrap to
// decode and readBody, which every handler reads its body with.
type bodyRulesKey struct{}

func withBodyRules(r *http.Request, o *operationRules) *http.Request {
	if len(o.bodyRequired) == 0 {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), bodyRulesKey{}, o.bodyRequired))
}

// missingFields lists, for r's route, the required top-level fields that
// body, a JSON object, lacks or gives as null (which the decoder would read
// as the zero value: a required managedBy sent as null would clear it). A
// body that is not a JSON object is left to the decoder to describe. Keys
// match case-insensitively, as the decoder matches them.
func missingFields(r *http.Request, body []byte) domain.Problems {
	required, _ := r.Context().Value(bodyRulesKey{}).([]string)
	if len(required) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil
	}
	var out domain.Problems
	for _, name := range required {
		present := false
		for k, v := range obj {
			if strings.EqualFold(k, name) && string(bytes.TrimSpace(v)) != "null" {
				present = true
				break
			}
		}
		if !present {
			out = append(out, domain.Problem{Field: name, Code: domain.CodeRequired, Message: "is required"})
		}
	}
	return out
}
