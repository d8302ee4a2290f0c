package api

import (
	"fmt"
	"net/http"
)

// MaxCatalogBodyBytes is the largest catalog document POST /v1/catalog
// accepts: 4 MiB, where every other route takes MaxBodyBytes. API Gateway
// takes bodies up to 10 MB, but the API Lambda is invoked synchronously,
// and Lambda refuses an event over 6 MB; API Gateway base64-encodes a
// body whose content type it does not treat as text (4 MiB becomes 5.6 MB),
// and the event carries headers besides. 4 MiB holds a realistic catalog of
// well over 500 entities (catalogtest.Large's 500 come to 0.4 MB, with
// the demo's longer scripts about 1.5 MB); an import of that size is staged
// and published all at once (see catalog.Import).
const MaxCatalogBodyBytes = 4 << 20

// bodyLimit is the largest body rt accepts.
func bodyLimit(rt route) int64 {
	if rt.Method == http.MethodPost && rt.Path == "/v1/catalog" {
		return MaxCatalogBodyBytes
	}
	if rt.Method == http.MethodPost && rt.Path == "/v1/tenant/import" {
		return MaxTenantImportBodyBytes
	}
	return MaxBodyBytes
}

// bodyTooLarge is the sentence of the 413 for a body over limit bytes.
func bodyTooLarge(limit int64) string {
	return fmt.Sprintf("the request body is larger than %s, the most this route accepts; send less "+
		"(a catalog document is accepted up to %s)", mebibytes(limit), mebibytes(MaxCatalogBodyBytes))
}

func mebibytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
