package domain

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecodeStrict(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		body   string
		fields []string // the fields problems are reported at, in order
		codes  []string
	}{
		{name: "valid", body: `{"name":"zk","dependencies":{"runtime":{"requires":["java"]}},"actions":{"start":{"type":"shell","timeout":"5m","retries":2}}}`},
		{name: "unknown top-level field", body: `{"name":"zk","colour":"red"}`, fields: []string{"colour"}, codes: []string{CodeUnknownField}},
		{name: "unknown nested field", body: `{"name":"zk","dependencies":{"runtime":{"needs":["java"]}}}`, fields: []string{"dependencies.runtime.needs"}, codes: []string{CodeUnknownField}},
		{name: "wrong types everywhere", body: `{"name":3,"dependencies":{"provides":"x"},"actions":{"start":{"type":"shell","retries":"two"}}}`,
			fields: []string{"actions.start.retries", "dependencies.provides", "name"}, codes: []string{CodeWrongType, CodeWrongType, CodeWrongType}},
		{name: "bad duration", body: `{"name":"zk","actions":{"start":{"type":"shell","timeout":"soon"}}}`, fields: []string{"actions.start.timeout"}, codes: []string{CodeInvalid}},
		{name: "integer overflow", body: `{"name":"zk","actions":{"start":{"type":"shell","retries":99999999999999999999}}}`, fields: []string{"actions.start.retries"}, codes: []string{CodeOutOfRange}},
		{name: "list index in path", body: `{"name":"zk","links":[{"label":"a","url":"http://x"},{"label":"b","href":"y"}]}`, fields: []string{"links[1].href"}, codes: []string{CodeUnknownField}},
		{name: "malformed", body: `{"name":`, fields: []string{""}, codes: []string{CodeMalformed}},
		{name: "trailing data", body: `{"name":"zk"} {"name":"x"}`, fields: []string{""}, codes: []string{CodeMalformed}},
		{name: "not an object", body: `["zk"]`, fields: []string{""}, codes: []string{CodeWrongType}},
		{name: "null is the zero value", body: `{"name":"zk","dependencies":null}`},
		{name: "null body", body: `null`, fields: []string{""}, codes: []string{CodeWrongType}},
		{name: "null body with blanks", body: " null\n", fields: []string{""}, codes: []string{CodeWrongType}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Service
			err := DecodeStrict([]byte(tt.body), &s)
			if tt.fields == nil {
				require.NoError(t, err)
				return
			}
			var ps Problems
			require.ErrorAs(t, err, &ps)
			var fields, codes []string
			for _, p := range ps {
				fields = append(fields, p.Field)
				codes = append(codes, p.Code)
				require.NotEmpty(t, p.Message)
			}
			require.Equal(t, tt.fields, fields)
			require.Equal(t, tt.codes, codes)
			require.Equal(t, Service{}, s, "a rejected document must leave the target untouched")
		})
	}
}

func TestDecodeStrictFillsEmbeddedSections(t *testing.T) {
	t.Parallel()
	var tmpl ClusterTemplate
	err := DecodeStrict([]byte(`{"name":"hadoop","extends":{"name":"base"},"constraints":{"size":{"min":3},"services":{"zk":{"quantities":{"min":3,"max":5}}}},"administration":{"lease":{"initial":"7d","max":"30d","step":86400000}}}`), &tmpl)
	require.NoError(t, err)
	require.Equal(t, "base", tmpl.Extends.Name)
	require.Equal(t, 3, tmpl.Constraints.Services["zk"].Quantities.Min)
	require.Equal(t, 7*24*time.Hour, tmpl.Administration.Lease.Initial.Std())
	require.Equal(t, 24*time.Hour, tmpl.Administration.Lease.Step.Std(), "a bare number is milliseconds")
}

func TestDurationRoundTrip(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`"7d"`, `"90s"`, `"1h30m0s"`, `"0s"`} {
		var d Duration
		require.NoError(t, json.Unmarshal([]byte(in), &d))
		out, err := json.Marshal(d)
		require.NoError(t, err)
		var again Duration
		require.NoError(t, json.Unmarshal(out, &again))
		require.Equal(t, d, again, in)
	}
	var d Duration
	require.Error(t, json.Unmarshal([]byte(`"-5s"`), &d))
	require.Error(t, json.Unmarshal([]byte(`-5`), &d))
	require.Error(t, json.Unmarshal([]byte(`"3x"`), &d))
}

// FuzzDecodeStrict checks that no document makes decoding or validation panic,
// that an accepted document re-encodes and decodes to the same value, and that
// a rejected one always says why.
func FuzzDecodeStrict(f *testing.F) {
	f.Add(`{"name":"zk","dependencies":{"runtime":{"requires":["java"]}},"actions":{"start":{"type":"shell","timeout":"5m"}}}`)
	f.Add(`{"name":"t","extends":{"name":"p"},"constraints":{"size":{"min":1,"max":3},"layout":{"mustCoexist":[["a","b"]]}}}`)
	f.Add(`{"name":1}`)
	f.Add(`{"a":{"b":[1,2,{"c":null}]}}`)
	f.Add(`{"name":"install","content":"#!/bin/sh\necho 50% > /dev/null","size":3,"sha256":"x"}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, body string) {
		for _, k := range Kinds {
			e := NewEntity(k)
			err := DecodeStrict([]byte(body), e)
			if err != nil {
				var ps Problems
				require.ErrorAs(t, err, &ps)
				require.NotEmpty(t, ps)
				continue
			}
			_ = e.Validate()
			out, err := json.Marshal(e)
			require.NoError(t, err)
			again := NewEntity(k)
			require.NoError(t, DecodeStrict(out, again), "re-decoding %s", out)
			out2, err := json.Marshal(again)
			require.NoError(t, err)
			require.JSONEq(t, string(out), string(out2))
		}
	})
}

func TestDecodeStrictReportsDuplicateKeys(t *testing.T) {
	t.Parallel()
	var tn Tenant
	err := DecodeStrict([]byte(`{"id":"a","workers":"x","workers":1}`), &tn)
	var ps Problems
	require.ErrorAs(t, err, &ps)
	require.Contains(t, ps, Problem{Field: "workers", Code: CodeDuplicate, Message: "is given more than once in this object; keep one"})
	for _, p := range ps {
		require.NotEmpty(t, p.Field)
	}

	var svc Service
	err = DecodeStrict([]byte(`{"name":"kv","actions":{"start":{"type":"shell","fields":{"script":"a","script":"b"}}}}`), &svc)
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "actions.start.fields.script", ps[0].Field)
	require.Equal(t, CodeDuplicate, ps[0].Code)

	// Keys that differ only in case are separate keys to JSON; the walk
	// reports them as it always did, and arrays of objects keep their own sets.
	require.NoError(t, DecodeStrict([]byte(`{"name":"kv","actions":{"start":{"type":"shell","fields":{"a":"1","A":"2"}}}}`), &svc))
}
