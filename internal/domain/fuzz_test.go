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

// FuzzDecodeStrictCluster fuzzes decoding and validation of a cluster record,
// resolved template included.
func FuzzDecodeStrictCluster(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c018f3a2b4c00a1b2c3","tenantId":"acme","owner":"bob","name":"web","template":{"name":"web","version":2},` +
			`"resolvedTemplate":{"name":"web","compatibility":{"services":["kv"]},"defaults":{"services":["kv"],"provider":"local"}},` +
			`"provider":"local","services":["kv"],"config":{"port":8080},"status":"ACTIVE","nodeCount":3,` +
			`"createdAt":"2024-05-01T10:00:00Z","expiresAt":"2024-05-02T10:00:00Z","version":4}`,
		`{"id":"","status":"GONE","nodeCount":-1,"services":["a b","a b"],"config":[1],"createdAt":"2024-05-02T10:00:00Z","expiresAt":"2024-05-01T10:00:00Z"}`,
		`{"resolvedTemplate":{"constraints":{"size":{"min":5,"max":2},"services":{"x":{"quantities":{"min":-1}}}},"administration":{"lease":{"initial":"2h","max":"1h"}}}}`,
		`{"resolvedTemplate":null,"config":null,"services":null}`,
		`{"template":"web"}`,
		`{"nodeCount":1e99}`,
		`{"expiresAt":"tomorrow"}`,
		`{"resolvedTemplate":{"extends":{"name":""},"links":[{"label":"","url":"x"}]}}`,
		`{"name":"c","Name":"d"}`,
		`{"colour":"red"}`,
		`{`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, (*Cluster).Validate)
	})
}

// FuzzDecodeStrictTask fuzzes decoding and validation of a task record.
func FuzzDecodeStrictTask(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c1-1000/kv/start","tenantId":"acme","jobId":"j1","clusterId":"c1","nodeId":"c1-1000","service":"kv","action":"start",` +
			`"status":"SUCCEEDED","attempt":1,"maxAttempts":4,"timeout":"1m","dependsOn":["c1-1000/kv/install"],"remaining":0,` +
			`"attempts":[{"attempt":1,"startedAt":"2024-05-01T10:00:00Z","endedAt":"2024-05-01T10:00:01Z","status":"SUCCEEDED","exitCode":0}],"version":3}`,
		`{"id":"join:x","action":"join","join":true,"status":"BLOCKED","dependsOn":["","join:x","a","a"],"remaining":-1}`,
		`{"action":"dance","status":"DONE","attempt":9,"maxAttempts":2,"timeout":"13h","sends":-1}`,
		`{"timeout":"-5s","attempts":[{"attempt":0,"status":"","startedAt":"2024-05-01T10:00:01Z","endedAt":"2024-05-01T10:00:00Z"}]}`,
		`{"params":{"":"x"},"dependents":["x","x"]}`,
		`{"timeout":12}`,
		`{"deadline":"soon"}`,
		`{"attempt":2147483648000000000000}`,
		`{"join":"yes"}`,
		`{"id":"a","unknown":1}`,
		`{"id":"a"} {"id":"b"}`,
		`"task"`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, (*Task).Validate)
	})
}

// FuzzDecodeStrictNodeAndJob fuzzes decoding and validation of node and job
// records with the same bodies: each rejects the other's fields.
func FuzzDecodeStrictNodeAndJob(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c1-1000","clusterId":"c1","num":1000,"hardwareType":"small","imageType":"debian","services":["kv","web"],` +
			`"addresses":{"access_v4":"10.0.0.1","bind_v4":"127.0.0.2"},"status":"ACTIVE","createdAt":"2024-05-01T10:00:00Z"}`,
		`{"num":-1,"services":["web","kv","kv",""],"addresses":{"public":"1.2.3.4","access_v4":"nope","":""},"properties":{"":"x"},"status":"UP"}`,
		`{"id":"j1","tenantId":"acme","clusterId":"c1","operation":"create","status":"SUCCEEDED","taskTotal":3,"taskDone":3,` +
			`"createdAt":"2024-05-01T10:00:00Z","startedAt":"2024-05-01T10:00:01Z","endedAt":"2024-05-01T10:00:02Z"}`,
		`{"operation":"explode","status":"","taskTotal":1,"taskDone":2,"retries":-1,"startedAt":"2024-05-01T10:00:01Z","endedAt":"2024-05-01T10:00:00Z"}`,
		`{"addresses":["10.0.0.1"]}`,
		`{"services":"kv"}`,
		`{}`,
		`nul`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, (*Node).Validate)
		fuzzDecode(t, body, (*Job).Validate)
	})
}
