package client

import (
	"context"
	"net/http"
)

// ImportCatalog imports a catalog document (YAML with contentType
// application/yaml, or JSON) into the tenant, all or nothing.
func (c *Client) ImportCatalog(ctx context.Context, doc []byte, contentType string) (*ImportResult, error) {
	raw, err := c.Do(ctx, http.MethodPost, "/v1/catalog", nil, doc, contentType)
	if err != nil {
		return nil, err
	}
	if dst, ok := ctx.Value(answerKey{}).(*[]byte); ok && dst != nil {
		*dst = raw
	}
	v, err := Decode[ImportResult](raw)
	return &v, err
}
