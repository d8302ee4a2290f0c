package api

import (
	_ "embed"
	"sync"

	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPIJSON returns the API's OpenAPI 3 document as JSON, converted once.
var OpenAPIJSON = sync.OnceValues(func() ([]byte, error) { return yaml.YAMLToJSON(openapiYAML) })
