package api

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzQueryParams holds the central query check to its promise on every
// route of the table: what it lets through parses and holds only declared
// parameters, each once, with a value the handlers read without error;
// what it refuses is a 400 whose every problem names the query, or a
// parameter that was given (or a required one that was not) as
// query.<name>.
func FuzzQueryParams(f *testing.F) {
	routes := (&Server{}).routes()
	for i, rt := range routes {
		f.Add(uint16(i), "dryrun=true")
		f.Add(uint16(i), "")
		for name, rule := range rulesFor(rt).query {
			f.Add(uint16(i), name+"=")
			f.Add(uint16(i), name+"=1")
			f.Add(uint16(i), name+"=true&"+name+"=false")
			f.Add(uint16(i), url.QueryEscape(name)+"=-99999999999999999999")
			for _, v := range rule.enum {
				f.Add(uint16(i), name+"="+url.QueryEscape(v))
			}
		}
	}
	f.Add(uint16(0), "a=%zz&b=;c")
	f.Fuzz(func(t *testing.T, i uint16, raw string) {
		rt := routes[int(i)%len(routes)]
		rules := rulesFor(rt)
		q, parseErr := url.ParseQuery(raw)
		err := rules.checkRawQuery(raw)
		if parseErr != nil {
			require.Error(t, err, "an unreadable query is refused")
			require.Equal(t, "query", describe(err).Details[0].Field)
			return
		}
		if err == nil {
			for name, values := range q {
				rule, ok := rules.query[name]
				require.True(t, ok, "%s %s let %q through", rt.Method, rt.Path, name)
				require.Len(t, values, 1)
				requireReadable(t, rule, values[0])
			}
			for name, rule := range rules.query {
				if rule.required {
					require.NotEmpty(t, q.Get(name), "required %s", name)
				}
			}
			return
		}
		var ae *apiError
		require.True(t, errors.As(err, &ae), "%T", err)
		require.Equal(t, http.StatusBadRequest, ae.status)
		require.Equal(t, CodeInvalidParameter, ae.code)
		require.NotEmpty(t, ae.details)
		for _, p := range ae.details {
			name, ok := strings.CutPrefix(p.Field, "query.")
			require.True(t, ok, "%q names a query parameter", p.Field)
			_, given := q[name]
			require.True(t, given || rules.query[name].required, "%q was given or is required", name)
			require.NotEmpty(t, p.Code)
			require.NotEmpty(t, p.Message)
			require.Contains(t, ae.message, p.Field)
		}
	})
}

// requireReadable checks v reads as the handlers read a parameter of rule:
// strconv for numbers and booleans, RFC 3339 for times, one of the enum.
func requireReadable(t *testing.T, rule paramRule, v string) {
	t.Helper()
	if v == "" {
		require.NotEqual(t, "boolean", rule.typ, "an empty boolean is refused")
		return
	}
	switch rule.typ {
	case "integer":
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		if rule.min != nil {
			require.GreaterOrEqual(t, float64(n), *rule.min)
		}
		if rule.max != nil {
			require.LessOrEqual(t, float64(n), *rule.max)
		}
	case "boolean":
		_, err := strconv.ParseBool(v)
		require.NoError(t, err)
	case "string":
		if len(rule.enum) > 0 {
			require.True(t, slices.Contains(rule.enum, v), "%q is one of %v", v, rule.enum)
		}
		if rule.maxLength != nil {
			require.LessOrEqual(t, len(v), *rule.maxLength)
		}
		if rule.format == "date-time" {
			_, err := time.Parse(time.RFC3339, v)
			require.NoError(t, err)
		}
	}
}
