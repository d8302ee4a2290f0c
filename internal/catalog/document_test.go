package catalog

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// FuzzDecodeDocument checks that no document (JSON or YAML) panics the
// decoder, that a rejected one always says why, and that an accepted one
// survives a marshal/decode round trip in both formats.
func FuzzDecodeDocument(f *testing.F) {
	example, err := os.ReadFile("../../docs/examples/catalog.yaml")
	require.NoError(f, err)
	f.Add(example)
	f.Add([]byte(`{"apiVersion":"heddle/v1","services":[{"name":"kv"}]}`))
	f.Add([]byte("apiVersion: heddle/v1\nservices:\n- name: a\n  actions: {start: {type: shell}}\n"))
	f.Add([]byte("a: &x [*x]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDocument(data)
		if err != nil {
			var ps domain.Problems
			require.ErrorAs(t, err, &ps)
			require.NotEmpty(t, ps)
			return
		}
		for _, asYAML := range []bool{false, true} {
			out, err := MarshalDocument(d, asYAML)
			require.NoError(t, err)
			again, err := DecodeDocument(out)
			require.NoError(t, err, "%s", out)
			require.Equal(t, d, again)
		}
	})
}
