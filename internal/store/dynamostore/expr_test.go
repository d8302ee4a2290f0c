package dynamostore

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

func TestItemRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []store.Item{
		{Key: store.Key{PK: "p", SK: "s"}, Version: 1},
		{
			Key: store.Key{PK: "CLUSTER#c", SK: "META"}, Version: 12, Status: "ACTIVE",
			Counters: map[string]int64{"nodes": 40, "debt": -2, "zero": 0},
			Index:    &store.IndexKey{Partition: "LEASE", Sort: "000001700000000"},
			Data:     []byte(`{"a":1}`),
		},
	}
	for _, it := range cases {
		got, err := unmarshalItem(marshalItem(it))
		require.NoError(t, err)
		require.Equal(t, &it, got)
	}
	got, err := unmarshalItem(nil)
	require.NoError(t, err)
	require.Nil(t, got)
}

func TestUnmarshalItemRejectsWrongTypes(t *testing.T) {
	t.Parallel()
	key := map[string]types.AttributeValue{attrPK: str("p"), attrSK: str("s")}
	with := func(name string, v types.AttributeValue) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{name: v}
		for k, v := range key {
			if k != name {
				m[k] = v
			}
		}
		return m
	}
	cases := map[string]map[string]types.AttributeValue{
		"numeric pk":         with(attrPK, num(1)),
		"string version":     with(attrVersion, str("1")),
		"fractional version": with(attrVersion, &types.AttributeValueMemberN{Value: "1.5"}),
		"string body":        with(attrData, str("x")),
		"huge counter":       with(counterPrefix+"n", &types.AttributeValueMemberN{Value: "99999999999999999999"}),
		"no sort key":        {attrPK: str("p")},
	}
	for name, m := range cases {
		_, err := unmarshalItem(m)
		require.Error(t, err, name)
	}
}

// The rendered expressions, with placeholders resolved, so that a change in
// what a condition means to DynamoDB shows up here and not only against an
// emulator.
func TestConditionExpressions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cond store.Condition
		want string
	}{
		{"zero", store.Condition{}, ""},
		{"must exist", store.Condition{MustExist: true}, "attribute_exists(pk)"},
		{"must not exist", store.Condition{MustNotExist: true}, "attribute_not_exists(pk)"},
		{"version", store.Condition{Version: 3}, "attribute_exists(pk) AND v = 3"},
		{"statuses", store.Condition{StatusIn: []string{"A", "B"}}, "attribute_exists(pk) AND (st IN (A, B))"},
		{"empty status", store.Condition{StatusIn: []string{"", "A"}}, "attribute_exists(pk) AND (attribute_not_exists(st) OR st IN (A))"},
		{"only the empty status", store.Condition{StatusIn: []string{""}}, "attribute_exists(pk) AND (attribute_not_exists(st))"},
		{
			"counter floors, in name order", store.Condition{CountersAtLeast: map[string]int64{"b": 0, "a": 2}},
			"attribute_exists(pk) AND c_a >= 2 AND (attribute_not_exists(c_b) OR c_b >= 0)",
		},
	}
	for _, tc := range cases {
		e := newExpr()
		require.Equal(t, tc.want, resolve(e, e.condition(tc.cond)), tc.name)
	}
}

func TestUpdateExpression(t *testing.T) {
	t.Parallel()
	e := newExpr()
	got := e.update(store.Changes{
		Data: []byte{}, Status: ptr("READY"), Add: map[string]int64{"n": -1}, Set: map[string]int64{"m": 4},
		ClearIndex: true,
	})
	require.Equal(t, "SET st = READY, c_m = 4 REMOVE d, gpk, gsk ADD v 1, c_n -1", resolve(e, got))

	e = newExpr()
	require.Equal(t, "ADD v 1", resolve(e, e.update(store.Changes{})), "every write bumps the version")
}

func TestPutGuard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cond  store.Condition
		prior int64
		want  string
	}{
		{store.Condition{}, 0, "attribute_not_exists(pk)"},
		{store.Condition{MustNotExist: true}, 0, ""},
		{store.Condition{}, 4, "v = 4"},
		{store.Condition{Version: 4}, 4, ""},
		{store.Condition{Version: 4}, 5, "v = 5"},
	}
	for _, tc := range cases {
		e := newExpr()
		require.Equal(t, tc.want, resolve(e, e.putGuard(tc.cond, tc.prior)), "%+v on %d", tc.cond, tc.prior)
	}
}

func ptr[T any](v T) *T { return &v }

// resolve substitutes placeholders, longest first so that #n1 does not
// match the start of #n10.
func resolve(e *expr, s string) string {
	var placeholders []string
	values := map[string]string{}
	for p, name := range e.names {
		placeholders, values[p] = append(placeholders, p), name
	}
	for p, v := range e.values {
		placeholders, values[p] = append(placeholders, p), render(v)
	}
	slices.SortFunc(placeholders, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, p := range placeholders {
		pairs = append(pairs, p, values[p])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

func render(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return "?"
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(cursor{Kind: queryCursor, Partition: "p", Sort: "s"}.encode())
	f.Add(cursor{Kind: indexCursor, Partition: "p", Sort: "s", PK: "a", SK: "b"}.encode())
	f.Add("!!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			require.ErrorIs(t, err, store.ErrBadCursor)
			return
		}
		again, err := decodeCursor(c.encode())
		require.NoError(t, err)
		require.Equal(t, c, again)
	})
}
