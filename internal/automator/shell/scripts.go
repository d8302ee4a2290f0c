package shell

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heddle-io/heddle/internal/domain"
)

// Scripts gives the automator the tenants' script resources (catalog kind
// "scripts"; *catalog.Catalog implements it). Version 0 asks for the latest
// live version; a numbered version is returned as long as it was ever
// written, since versions never change. The cluster service pins every
// script_resource to a version when it plans a cluster, so version 0 only
// reaches here from specs written before it did.
type Scripts interface {
	Script(ctx context.Context, tenant, name string, version int) (*domain.Script, error)
}

// parseVersion reads a script_version field: empty is 0 (the latest).
func parseVersion(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a version number (1, 2, ...)", v)
	}
	return n, nil
}
