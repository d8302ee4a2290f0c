package domain

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireLocatedProblems checks a rejection from DecodeStrict: it is Problems,
// each with a code and a message, and each names the field it concerns unless
// the root itself is malformed (not JSON, several values, not an object), in
// which case that is the only problem.
func requireLocatedProblems(t *testing.T, err error) {
	t.Helper()
	var ps Problems
	require.ErrorAs(t, err, &ps)
	require.NotEmpty(t, ps)
	for _, p := range ps {
		require.NotEmpty(t, p.Code, "%+v", p)
		require.NotEmpty(t, p.Message, "%+v", p)
		if p.Field == "" {
			require.True(t, slices.Contains([]string{CodeMalformed, CodeWrongType}, p.Code),
				"a problem without a field must be about the root: %+v", p)
			require.Len(t, ps, 1, "a malformed root is the only problem: %v", ps)
		}
	}
}

// requireValidationFields checks that every validation problem names a field.
func requireValidationFields(t *testing.T, ps Problems) {
	t.Helper()
	for _, p := range ps {
		require.NotEmpty(t, p.Field, "%+v", p)
		require.NotEmpty(t, p.Code, "%+v", p)
		require.NotEmpty(t, p.Message, "%+v", p)
	}
}

// fuzzDecode decodes body into a fresh T, and when that is
// accepted, validates it and checks that it re-encodes to a document that
// decodes to the same value.
func fuzzDecode[T any](t *testing.T, body []byte, validate func(*T) Problems) {
	var v T
	if err := DecodeStrict(body, &v); err != nil {
		requireLocatedProblems(t, err)
		var zero T
		require.Equal(t, zero, v, "a rejected document leaves the target untouched")
		return
	}
	requireValidationFields(t, validate(&v))
	out, err := json.Marshal(&v)
	require.NoError(t, err)
	var again T
	require.NoError(t, DecodeStrict(out, &again), "re-decoding %s", out)
	out2, err := json.Marshal(&again)
	require.NoError(t, err)
	require.JSONEq(t, string(out), string(out2))
}

// FuzzDecodeStrictTenant fuzzes decoding and validation of a tenant, the body
// of POST and PUT /v1/tenants.
func FuzzDecodeStrictTenant(f *testing.F) {
	for _, seed := range []string{
		`{"id":"acme","workers":2,"maxClusters":5,"maxNodes":50}`,
		`{"id":"acme","description":"d","createdAt":"2024-05-01T10:00:00Z","version":3}`,
		`{"id":"acme","createdAt":"yesterday"}`,
		`{"id":"acme","createdAt":17}`,
		`{"id":"no spaces","workers":5000,"maxClusters":-1,"maxNodes":-1}`,
		`{"ID":"acme","Workers":"two"}`,
		`{"id":"acme","colour":"red"}`,
		`{"":""}`,
		`{"id":null,"workers":null}`,
		`{"workers":1e3,"maxNodes":99999999999999999999}`,
		`{"id":`,
		`{} {}`,
		`["acme"]`,
		`"acme"`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, (*Tenant).Validate)
	})
}

// FuzzDecodeStrictUser fuzzes decoding and validation of a user, the body of
// POST /v1/users.
func FuzzDecodeStrictUser(f *testing.F) {
	for _, seed := range []string{
		`{"name":"bob","role":"user"}`,
		`{"tenantId":"acme","name":"alice","role":"admin","createdAt":"2024-05-01T10:00:00+02:00","version":1}`,
		`{"name":"eve","role":"root"}`,
		`{"name":"","role":""}`,
		`{"name":["bob"],"role":{"x":1}}`,
		`{"name":"bob","roles":["user"]}`,
		`{"name":"bob","":{"":1}}`,
		`{"Name":"bob","ROLE":"user"}`,
		`{"name":"bob","version":1.5}`,
		`{"name":"bob"`,
		`[]`,
		`true`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, (*User).Validate)
	})
}
