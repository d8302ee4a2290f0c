package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestStaticDemoIsTheDemo: docs/examples/static-demo.yaml is the demo
// catalog's services with the static-pool example, entity for entity, so
// the one-document demo for `make local-aws` never drifts from the demo
// that `make demo` and `make demo-static` run.
func TestStaticDemoIsTheDemo(t *testing.T) {
	t.Parallel()
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal(b, &doc), path)
		return doc
	}
	demo := read("../../docs/examples/static-demo.yaml")
	catalog := read("../../docs/examples/catalog.yaml")
	pool := read("../../docs/examples/static-pool.yaml")

	require.Equal(t, catalog["services"], demo["services"], "static-demo.yaml's services are catalog.yaml's")
	for _, kind := range []string{"providers", "hardwareTypes", "imageTypes", "partialTemplates", "clusterTemplates"} {
		require.Equal(t, pool[kind], demo[kind], "static-demo.yaml's %s are static-pool.yaml's", kind)
	}
	for kind := range demo {
		require.Contains(t, []string{"apiVersion", "services", "providers", "hardwareTypes", "imageTypes", "partialTemplates", "clusterTemplates"}, kind)
	}
	for _, p := range demo["providers"].([]any) {
		require.NotEqual(t, "local", p.(map[string]any)["providerType"], "no local provider: the Lambdas serve static and ec2 only")
	}
}
